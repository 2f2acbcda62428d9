//! The engine: agents, admission, the queue, the scheduler contract, work
//! items, tasks and waits. It knows nothing of terminals or sockets; clients
//! reach it through `api` types. Every state change goes through the store as
//! one transaction that also appends the events it caused.

pub mod admission;
pub mod agent;
pub mod agents;
pub mod approvals;
pub mod budget;
pub mod closure;
pub mod command_tasks;
pub mod context;
pub mod continuation;
pub mod control;
pub mod exec_env;
pub mod fixture;
pub mod handle;
pub mod hooks;
pub mod host;
pub mod inspect;
#[cfg(test)]
mod layering_tests;
pub mod mcp;
pub mod operator;
pub mod pages;
pub mod posture;
pub mod process_identity;
pub mod projection;
pub mod proposal;
pub mod provider;
pub mod queue;
pub mod recall;
pub mod repair;
pub mod retention;
pub mod sandbox;
pub mod scheduler;
pub mod tasks;
pub mod tools;
pub mod transcript;
pub mod triggers;
pub mod turn;
pub mod waiting;
pub mod work_ops;
pub mod workspace;

use crate::protocol::{ApiError, ErrorCode};
use crate::store::StoreError;

/// Errors of runtime operations, worded for the operator.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("{0}")]
    InvalidAgentId(String),
    #[error("no agent `{agent_id}`; list agents with `holon status`")]
    UnknownAgent { agent_id: String },
    #[error(
        "agent `{agent_id}` is {status}: it accepts no new messages until resumed \
         (`/resume` in the console); wake does not cross stopped"
    )]
    AgentStopped {
        agent_id: String,
        status: &'static str,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("no task `{task_id}` for this agent")]
    UnknownTask { task_id: String },
    #[error(
        "no approval `{approval_id}` for this agent; `holon approvals` lists the pending ones"
    )]
    UnknownApproval { approval_id: String },
    #[error("approval `{approval_id}` was already answered: {status}")]
    ApprovalAnswered {
        approval_id: String,
        status: &'static str,
    },
    #[error(transparent)]
    WorkItem(crate::model::work::WorkItemError),
    #[error(transparent)]
    Workspace(workspace::WorkspaceError),
    #[error("{what}: {message}")]
    Io { what: String, message: String },
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for RuntimeError {
    fn from(e: StoreError) -> Self {
        // A job that rejected its input carries a runtime error inside.
        match e {
            StoreError::Rejected(inner) => match inner.downcast::<RuntimeError>() {
                Ok(runtime) => *runtime,
                Err(other) => RuntimeError::Store(StoreError::Rejected(other)),
            },
            other => RuntimeError::Store(other),
        }
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> ApiError {
        use RuntimeError as E;
        let code = match &e {
            E::InvalidAgentId(_) | E::Invalid(_) => ErrorCode::InvalidParams,
            E::UnknownAgent { .. } | E::UnknownTask { .. } | E::UnknownApproval { .. } => {
                ErrorCode::NotFound
            }
            E::ApprovalAnswered { .. } => ErrorCode::Conflict,
            E::AgentStopped { .. } => ErrorCode::AgentStopped,
            E::WorkItem(w) => match w {
                crate::model::work::WorkItemError::Unknown(_) => ErrorCode::NotFound,
                crate::model::work::WorkItemError::Completed(_) => ErrorCode::Conflict,
                crate::model::work::WorkItemError::EmptyObjective => ErrorCode::InvalidParams,
            },
            E::Workspace(w) => {
                use crate::runtime::workspace::WorkspaceError as W;
                match w {
                    W::Unknown { .. } => ErrorCode::NotFound,
                    W::DetachActive { .. } => ErrorCode::Conflict,
                    W::Git(crate::runtime::workspace::git::GitError::Failed { .. }) => {
                        ErrorCode::Internal
                    }
                    W::Missing { .. }
                    | W::NotADirectory { .. }
                    | W::NotReadable { .. }
                    | W::Target
                    | W::DetachHome
                    | W::HomeIsolated
                    | W::NestedIsolated { .. }
                    | W::GitSinceAttached { .. }
                    | W::Refused { .. }
                    | W::Unapproved { .. }
                    | W::AnchorGone { .. }
                    | W::Git(_) => ErrorCode::InvalidParams,
                }
            }
            E::Io { .. } | E::Store(_) => ErrorCode::Storage,
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        ApiError::from(RuntimeError::from(e))
    }
}
