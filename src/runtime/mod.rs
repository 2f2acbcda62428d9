//! The engine: agents, admission, the queue, the scheduler contract, work
//! items, tasks and waits. It knows nothing of terminals or sockets; clients
//! reach it through `api` types. Every state change goes through the store as
//! one transaction that also appends the events it caused.

pub mod admission;
pub mod agent;
pub mod approvals;
pub mod closure;
pub mod command_tasks;
pub mod context;
pub mod continuation;
pub mod envelope;
pub mod exec_env;
pub mod fixture;
pub mod host;
pub mod ids;
pub mod inspect;
pub mod policy;
pub mod posture;
pub mod process_identity;
pub mod provider;
pub mod queue;
pub mod recall;
pub mod scheduler;
pub mod skills;
pub mod tasks;
pub mod templates;
pub mod tools;
pub mod transcript;
pub mod triggers;
pub mod waiting;
pub mod work_items;
pub mod work_ops;
pub mod workspace;

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
    WorkItem(work_ops::WorkItemError),
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
