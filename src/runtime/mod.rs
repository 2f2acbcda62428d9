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
pub mod guidance;
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
pub mod settings;
pub mod tasks;
pub(crate) mod tool_outcome;
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
    Workspace(WorkspaceError),
    #[error("{what}: {message}")]
    Io { what: String, message: String },
    #[error(transparent)]
    Store(StoreError),
}

/// Why a workspace operation was refused (the workspace folder and the
/// approvals that gate a move alike).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path} does not exist")]
    Missing { path: String },
    #[error("{path} is not a directory")]
    NotADirectory { path: String },
    #[error("{path} is not readable: {reason}")]
    NotReadable { path: String, reason: String },
    #[error("no workspace `{workspace_id}` is attached to this agent; `holon workspace list` shows them")]
    Unknown { workspace_id: String },
    #[error("give exactly one of `path` or `workspace_id`")]
    Target,
    #[error("`{workspace_id}` is the active workspace: switch first (`holon workspace use agent_home`), then detach it")]
    DetachActive { workspace_id: String },
    #[error("agent_home is the built-in fallback workspace; it cannot be detached")]
    DetachHome,
    #[error("agent_home has no isolated mode; use it directly")]
    HomeIsolated,
    #[error("the workspace anchor {anchor} no longer exists")]
    AnchorGone { anchor: String },
    #[error("refused: {why}; no agent works there")]
    Refused { why: String },
    #[error("{}", unapproved(root, *never))]
    Unapproved { root: String, never: bool },
    #[error("{anchor} was not a git repository when it was attached, so its `.git` may be a command's: Holon makes no isolated worktree of it; attach it again (`holon workspace detach ID`, then `attach`) if the repository is yours")]
    GitSinceAttached { anchor: String },
    #[error("{anchor} is a repository inside {outer}, whose files a command can write: Holon makes no isolated worktree of it (its git would trust what a command wrote); work in it directly")]
    NestedIsolated { anchor: String, outer: String },
    #[error(transparent)]
    Git(#[from] GitError),
}

fn unapproved(root: &str, never: bool) -> String {
    match never {
        true => format!(
            "refused: {root} is not an attached workspace, and this workspace's approval mode is \
             `never`, so no one is asked to let the sandbox's writable root move there; ask the \
             operator to attach it (`holon workspace add PATH`)"
        ),
        false => format!(
            "not moved: {root} is not an attached workspace and the operator has not approved \
             this move (or the directory changed since they did); call UseWorkspace again and \
             the operator is asked"
        ),
    }
}

/// Why a git operation failed, in words an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    #[error("`git` is not installed or not on PATH; isolated mode needs git ({0})")]
    NotInstalled(String),
    #[error("{path} is not inside a git repository; isolated mode needs one")]
    NotARepository { path: String },
    #[error("the repository at {path} has no commits yet; isolated mode needs a HEAD to branch from (make a first commit)")]
    NoCommits { path: String },
    #[error("git {args} failed in {dir}: {stderr}")]
    Failed {
        args: String,
        dir: String,
        stderr: String,
    },
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
                use WorkspaceError as W;
                match w {
                    W::Unknown { .. } => ErrorCode::NotFound,
                    W::DetachActive { .. } => ErrorCode::Conflict,
                    W::Git(GitError::Failed { .. }) => ErrorCode::Internal,
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
