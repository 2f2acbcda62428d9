//! What consoles, scripts and the control socket ask of a runtime: the
//! requests (one serde enum whose `method`/`params` tagging is exactly the
//! JSON-RPC 2.0 request shape, so the socket carries these types
//! unchanged), their id rules, the served method names and the error codes.
//! Answers are in `answers`, the client interface in `client`.

use serde::{Deserialize, Serialize};

pub use crate::model::agent::DisplayMode;
pub use crate::model::event::EventRecord;
pub use crate::model::BoxFuture;
pub use crate::protocol::views::Admitted;
pub use crate::protocol::views::AgentSummary;
pub use crate::protocol::views::{ControlAction, ControlOutcome, WakeHintOutcome};

use crate::model::message::Priority;
use crate::protocol::views::{CreateWorkItem, UpdateWorkItem};

/// Every request, tagged as JSON-RPC `method` + `params`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum Request {
    #[serde(rename = "runtime.status")]
    RuntimeStatus,
    #[serde(rename = "runtime.shutdown")]
    RuntimeShutdown,
    /// Listed agents (public, not archived) in id order, a page at a
    /// time: after `cursor`, whose id contains `query`, at most `limit`
    /// (default 100, at most 1,000).
    #[serde(rename = "agents.list")]
    AgentsList {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
    },
    #[serde(rename = "agent.create")]
    /// Create a public named agent from a template (`holon-default` when
    /// absent); refused when the id exists.
    AgentCreate {
        agent_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        template: Option<String>,
    },
    /// Archive an agent: it stops, leaves the listings, keeps its records.
    #[serde(rename = "agent.archive")]
    AgentArchive { agent_id: String },
    /// The skills an agent's prompt lists, with their activation state.
    #[serde(rename = "skills.list")]
    SkillsList { agent_id: String },
    #[serde(rename = "agent.status")]
    AgentStatus { agent_id: String },
    #[serde(rename = "agent.state")]
    AgentState { agent_id: String },
    /// The prompt frame the agent's next turn would send, section by
    /// section with token estimates, and its compaction state.
    #[serde(rename = "agent.prompt")]
    AgentPrompt { agent_id: String },
    /// The agent's newest transcript entries (what the model was given,
    /// what it said and called, each tool's result, runtime failures with
    /// their provider attempts), oldest first: at most `limit` (default
    /// 50, at most 1,000). Images are named, their data left out.
    #[serde(rename = "agent.transcript")]
    AgentTranscript {
        agent_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<usize>,
    },
    #[serde(rename = "prompt.submit")]
    PromptSubmit {
        agent_id: String,
        text: String,
        #[serde(default)]
        priority: Priority,
        /// A client's id for this request: a retry with the same id is
        /// admitted once and answered with the first admission.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
    },
    #[serde(rename = "work_item.create")]
    WorkItemCreate {
        agent_id: String,
        #[serde(flatten)]
        item: CreateWorkItem,
        /// As for `prompt.submit`: a retry creates no second work item.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
    },
    #[serde(rename = "work_item.pick")]
    WorkItemPick {
        agent_id: String,
        work_item_id: String,
    },
    #[serde(rename = "work_item.update")]
    WorkItemUpdate {
        agent_id: String,
        #[serde(flatten)]
        update: UpdateWorkItem,
    },
    #[serde(rename = "work_item.complete")]
    WorkItemComplete {
        agent_id: String,
        work_item_id: String,
        #[serde(default)]
        note: Option<String>,
    },
    #[serde(rename = "task.run")]
    TaskRun { agent_id: String, cmd: String },
    #[serde(rename = "task.status")]
    TaskStatus { agent_id: String, task_id: String },
    #[serde(rename = "task.output")]
    TaskOutput {
        agent_id: String,
        task_id: String,
        #[serde(default)]
        max_bytes: Option<u64>,
    },
    #[serde(rename = "task.input")]
    TaskInput {
        agent_id: String,
        task_id: String,
        input: String,
    },
    #[serde(rename = "task.stop")]
    TaskStop { agent_id: String, task_id: String },
    #[serde(rename = "control")]
    Control {
        agent_id: String,
        action: ControlAction,
    },
    #[serde(rename = "agent.display")]
    AgentDisplay {
        agent_id: String,
        mode: crate::model::agent::DisplayMode,
    },
    /// Set the agent's own daily budget (over the runtime's `[budget]`):
    /// given limits are set, others kept; `clear` first removes both.
    #[serde(rename = "agent.budget")]
    AgentBudget {
        agent_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        daily_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        daily_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        clear: bool,
    },
    #[serde(rename = "agent.model")]
    AgentModel {
        agent_id: String,
        /// `provider/model`; null returns to the runtime default.
        #[serde(default)]
        model: Option<String>,
        /// `minimal | low | medium | high`, or `default` for the configured
        /// effort; absent leaves it as it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<crate::model::usage::EffortChoice>,
    },
    /// The agent's attached workspaces, the active one and its snapshot.
    #[serde(rename = "workspace.list")]
    WorkspaceList { agent_id: String },
    /// The files under the agent's execution root (a remote console's `@`
    /// picker).
    #[serde(rename = "workspace.files")]
    WorkspaceFiles { agent_id: String },
    /// Attach a directory (its git top-level inside a repository) without
    /// making it active.
    #[serde(rename = "workspace.attach")]
    WorkspaceAttach { agent_id: String, path: String },
    /// Make a workspace active: exactly one of `path` or `workspace_id`,
    /// `mode` direct (default) or isolated (a managed git worktree).
    #[serde(rename = "workspace.use")]
    WorkspaceUse {
        agent_id: String,
        #[serde(flatten)]
        target: crate::model::workspace::UseWorkspace,
    },
    /// Remove a binding (never the active one, never a directory).
    #[serde(rename = "workspace.detach")]
    WorkspaceDetach {
        agent_id: String,
        workspace_id: String,
    },
    /// The agent's external trigger (issued on first ask), its URL, recent
    /// deliveries and open external waits.
    #[serde(rename = "trigger.show")]
    TriggerShow { agent_id: String },
    /// Replace the trigger URL (the old one stops working at once).
    #[serde(rename = "trigger.rotate")]
    TriggerRotate { agent_id: String },
    /// Revoke the trigger URL; no new one until `trigger.rotate`.
    #[serde(rename = "trigger.revoke")]
    TriggerRevoke { agent_id: String },
    /// Deliver through the agent's trigger as an external system would
    /// (a wake hint with this provenance, never a message).
    #[serde(rename = "trigger.deliver")]
    TriggerDeliver {
        agent_id: String,
        #[serde(flatten)]
        meta: crate::model::trigger::DeliveryMeta,
    },
    /// Pending approvals (with `include_answered`, the recent answered
    /// ones too), of one agent or of every agent.
    #[serde(rename = "approvals.list")]
    ApprovalsList {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        #[serde(default)]
        include_answered: bool,
    },
    /// Approve a pending call and run it; `always` extends the workspace's
    /// allow-list. The first answer wins; a second gets -32003.
    #[serde(rename = "approval.approve")]
    ApprovalApprove {
        approval_id: String,
        /// Which agent's (found from the id when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        #[serde(default)]
        always: bool,
    },
    /// Deny a pending call; the agent is told, with `note`.
    #[serde(rename = "approval.deny")]
    ApprovalDeny {
        approval_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Set a workspace's approval policy (`agent_home` included); absent
    /// fields keep their value, `reset` returns it to the runtime's.
    #[serde(rename = "workspace.policy")]
    WorkspacePolicy {
        agent_id: String,
        workspace_id: String,
        #[serde(flatten)]
        change: crate::model::approval::PolicyChange,
    },
    /// The runtime's default policy (every workspace without its own);
    /// with fields, a change to it kept over config `[policy]` until
    /// `reset`.
    #[serde(rename = "runtime.policy")]
    RuntimePolicy {
        #[serde(flatten)]
        change: crate::model::approval::PolicyChange,
    },
    #[serde(rename = "events.page")]
    EventsPage {
        agent_id: String,
        #[serde(default = "one")]
        from_seq: u64,
        #[serde(default = "page_limit")]
        limit: usize,
        #[serde(default)]
        kind: Option<String>,
    },
    /// Write a consistent copy of the store into `backups/` beside it (a
    /// read snapshot: admissions go on meanwhile), removing the oldest
    /// rotated copies beyond `[store] backup_keep`; with `copy`, into
    /// `backups/copies/` outside the rotation, for the client to move
    /// where its operator asked.
    #[serde(rename = "store.backup")]
    StoreBackup {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        copy: bool,
    },
    /// Remove, per agent, the history older than `older_than_days` (or
    /// `[store] retain_days`) that nothing current needs; `dry_run` only
    /// says what would go.
    #[serde(rename = "store.prune")]
    StorePrune {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        older_than_days: Option<u32>,
        #[serde(default)]
        dry_run: bool,
    },
    /// The MCP servers: state, tools offered and left out; `workspace`
    /// (a directory) reads its `.mcp.json` first.
    #[serde(rename = "mcp.list")]
    McpList {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace: Option<String>,
    },
    /// Approve server `name` of `workspace`'s `.mcp.json` to start, with
    /// the command line the file gives it now.
    /// With `command_line`, refused unless the file still says exactly
    /// that (what the operator was shown).
    #[serde(rename = "mcp.approve")]
    McpApprove {
        name: String,
        workspace: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command_line: Option<String>,
    },
    /// Disable server `name` (of `workspace`'s `.mcp.json`, else the
    /// config file's), stopping it; `disabled: false` enables it again.
    #[serde(rename = "mcp.disable")]
    McpDisable {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace: Option<String>,
        #[serde(default = "yes")]
        disabled: bool,
    },
    /// What `workspace`'s repository proposes (`kind`: its reviewer
    /// policy, `.holon/policy.md`, or its hooks, `.holon/hooks.toml`) and
    /// whether the operator approved that text.
    #[serde(rename = "proposal.show")]
    ProposalShow {
        workspace: String,
        kind: crate::model::proposal::ProposalKind,
    },
    /// Approve `workspace`'s proposal of `kind` for the text with SHA-256
    /// `digest` (refused unless the file has exactly that text now and it
    /// can be used), or with `approved: false` withdraw the approval.
    #[serde(rename = "proposal.adopt")]
    ProposalAdopt {
        workspace: String,
        kind: crate::model::proposal::ProposalKind,
        digest: String,
        #[serde(default = "yes")]
        approved: bool,
    },
}

fn yes() -> bool {
    true
}

/// A workspace directory named by a client: absolute, and without `..`.
fn workspace_dir(path: &str) -> Result<(), ApiError> {
    let p = std::path::Path::new(path);
    let upward = p
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    match p.is_absolute() && !upward {
        true => Ok(()),
        false => Err(ApiError::new(
            ErrorCode::InvalidParams,
            "workspace must be an absolute path without `..`",
        )),
    }
}

impl Request {
    /// The error of a request handed to an answerer of another domain: a
    /// routing slip in the runtime, never the client's fault.
    pub(crate) fn misrouted(&self) -> ApiError {
        ApiError::new(
            ErrorCode::Internal,
            format!("`{}` reached an answerer of another domain", self.method()),
        )
    }

    /// Every id the request carries, checked against the documented rules
    /// before anything is read, created or written. Exhaustive: a new
    /// request fails to compile until its ids are considered. A table by
    /// design: one arm per request.
    pub fn validate_ids(&self) -> Result<(), ApiError> {
        use crate::model::ids::{validate, IdKind};
        let check = |kind, id: &str| {
            validate(kind, id).map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))
        };
        match self {
            Request::RuntimeStatus
            | Request::RuntimeShutdown
            | Request::AgentsList {
                cursor: None,
                query: None,
                ..
            }
            | Request::RuntimePolicy { .. }
            | Request::StoreBackup { .. }
            | Request::StorePrune { .. }
            | Request::McpList { workspace: None } => Ok(()),
            Request::McpList {
                workspace: Some(workspace),
            } => workspace_dir(workspace),
            Request::McpApprove {
                name, workspace, ..
            } => {
                crate::model::mcp::check_server_name(name)
                    .map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))?;
                workspace_dir(workspace)
            }
            Request::McpDisable {
                name, workspace, ..
            } => {
                crate::model::mcp::check_server_name(name)
                    .map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))?;
                workspace.as_deref().map_or(Ok(()), workspace_dir)
            }
            Request::ProposalShow { workspace, .. } => workspace_dir(workspace),
            Request::ProposalAdopt {
                workspace, digest, ..
            } => {
                let hex = digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit());
                match hex {
                    true => workspace_dir(workspace),
                    false => Err(ApiError::new(
                        ErrorCode::InvalidParams,
                        "digest must be a SHA-256 in hex (64 characters)",
                    )),
                }
            }
            Request::AgentsList { cursor, query, .. } => {
                if let Some(c) = cursor {
                    check(IdKind::Agent, c)?;
                }
                match query {
                    Some(q) if q.chars().count() > 200 => Err(ApiError::new(
                        ErrorCode::InvalidParams,
                        "query is longer than 200 characters",
                    )),
                    _ => Ok(()),
                }
            }
            Request::ApprovalsList { agent_id, .. } => match agent_id {
                Some(a) => check(IdKind::Agent, a),
                None => Ok(()),
            },
            Request::ApprovalApprove {
                approval_id,
                agent_id,
                ..
            }
            | Request::ApprovalDeny {
                approval_id,
                agent_id,
                ..
            } => {
                if let Some(a) = agent_id {
                    check(IdKind::Agent, a)?;
                }
                check(IdKind::Approval, approval_id)
            }
            Request::WorkspacePolicy {
                agent_id,
                workspace_id,
                ..
            } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::Workspace, workspace_id)
            }
            Request::PromptSubmit {
                agent_id,
                request_id,
                ..
            }
            | Request::WorkItemCreate {
                agent_id,
                request_id,
                ..
            } => {
                check(IdKind::Agent, agent_id)?;
                match request_id {
                    Some(r) => check(IdKind::Request, r),
                    None => Ok(()),
                }
            }
            Request::AgentCreate { agent_id, .. }
            | Request::AgentArchive { agent_id }
            | Request::SkillsList { agent_id }
            | Request::AgentStatus { agent_id }
            | Request::AgentState { agent_id }
            | Request::AgentPrompt { agent_id }
            | Request::AgentTranscript { agent_id, .. }
            | Request::TaskRun { agent_id, .. }
            | Request::Control { agent_id, .. }
            | Request::AgentDisplay { agent_id, .. }
            | Request::AgentBudget { agent_id, .. }
            | Request::WorkspaceList { agent_id }
            | Request::WorkspaceFiles { agent_id }
            | Request::TriggerShow { agent_id }
            | Request::TriggerRotate { agent_id }
            | Request::TriggerRevoke { agent_id }
            | Request::TriggerDeliver { agent_id, .. }
            | Request::WorkspaceAttach { agent_id, .. } => check(IdKind::Agent, agent_id),
            Request::EventsPage { agent_id, kind, .. } => {
                check(IdKind::Agent, agent_id)?;
                match kind.as_deref() {
                    Some(k) if crate::protocol::events::EventKind::parse(k).is_none() => {
                        Err(ApiError::new(
                            ErrorCode::InvalidParams,
                            format!(
                                "`{}` is not an event kind (docs/events.md lists them)",
                                k.escape_debug()
                            ),
                        ))
                    }
                    _ => Ok(()),
                }
            }
            Request::AgentModel {
                agent_id, model, ..
            } => {
                check(IdKind::Agent, agent_id)?;
                match model {
                    Some(m) => crate::model::ids::check_model_ref(m)
                        .map(|_| ())
                        .map_err(|e| ApiError::new(ErrorCode::InvalidParams, e)),
                    None => Ok(()),
                }
            }
            Request::WorkspaceUse { agent_id, target } => {
                check(IdKind::Agent, agent_id)?;
                match &target.workspace_id {
                    Some(w) => check(IdKind::Workspace, w),
                    None => Ok(()),
                }
            }
            Request::WorkspaceDetach {
                agent_id,
                workspace_id,
            } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::Workspace, workspace_id)
            }
            Request::WorkItemPick {
                agent_id,
                work_item_id,
            }
            | Request::WorkItemComplete {
                agent_id,
                work_item_id,
                ..
            } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::WorkItem, work_item_id)
            }
            Request::WorkItemUpdate { agent_id, update } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::WorkItem, &update.work_item_id)
            }
            Request::TaskStatus { agent_id, task_id }
            | Request::TaskOutput {
                agent_id, task_id, ..
            }
            | Request::TaskInput {
                agent_id, task_id, ..
            }
            | Request::TaskStop { agent_id, task_id } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::Task, task_id)
            }
        }
    }
}

fn one() -> u64 {
    1
}

fn page_limit() -> usize {
    500
}

/// The largest page a single `events.page` returns.
pub const MAX_PAGE: usize = 5000;

/// Stable error codes: JSON-RPC's own plus the application's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "i64", try_from = "i64")]
pub enum ErrorCode {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    /// -32001: no such agent, task or work item.
    NotFound,
    /// -32002: the agent is stopped; resume it first.
    AgentStopped,
    /// -32003: the request conflicts with current state.
    Conflict,
    /// -32004: the store failed (disk full, I/O error).
    Storage,
    /// -32005: the runtime is shutting down.
    ShuttingDown,
    /// -32006: the server is at its connection limit, or closed an idle
    /// connection.
    Busy,
    /// -32007: the peer is a command Holon sandboxed (another user
    /// namespace): the control plane is out of its reach.
    Forbidden,
}

impl From<ErrorCode> for i64 {
    fn from(c: ErrorCode) -> i64 {
        match c {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::Internal => -32603,
            ErrorCode::NotFound => -32001,
            ErrorCode::AgentStopped => -32002,
            ErrorCode::Conflict => -32003,
            ErrorCode::Storage => -32004,
            ErrorCode::ShuttingDown => -32005,
            ErrorCode::Busy => -32006,
            ErrorCode::Forbidden => -32007,
        }
    }
}

impl TryFrom<i64> for ErrorCode {
    type Error = String;
    fn try_from(v: i64) -> Result<Self, String> {
        Ok(match v {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::Internal,
            -32001 => ErrorCode::NotFound,
            -32002 => ErrorCode::AgentStopped,
            -32003 => ErrorCode::Conflict,
            -32004 => ErrorCode::Storage,
            -32005 => ErrorCode::ShuttingDown,
            -32006 => ErrorCode::Busy,
            -32007 => ErrorCode::Forbidden,
            other => return Err(format!("unknown error code {other}")),
        })
    }
}

/// Where a failed call failed, as the client saw it. Never on the wire:
/// the server's errors are `Server` wherever they are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Failure {
    /// The runtime answered with this error.
    #[default]
    Server,
    /// The request or its answer did not get through (the connection
    /// closed, a write failed).
    Transport,
    /// An answer arrived that is not the method's answer type.
    Decode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip)]
    pub failure: Failure,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            failure: Failure::Server,
        }
    }

    /// The request or its answer did not get through.
    pub fn transport(message: impl Into<String>) -> ApiError {
        ApiError {
            failure: Failure::Transport,
            ..ApiError::new(ErrorCode::Internal, message)
        }
    }

    /// The answer is not what the method answers with.
    pub fn decode(message: impl Into<String>) -> ApiError {
        ApiError {
            failure: Failure::Decode,
            ..ApiError::new(ErrorCode::Internal, message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::METHODS;

    #[test]
    fn mcp_workspaces_are_absolute_and_never_climb() {
        let list = |w: &str| {
            Request::McpList {
                workspace: Some(w.into()),
            }
            .validate_ids()
            .is_ok()
        };
        assert!(list("/home/me/project"));
        assert!(!list("project"));
        assert!(!list("/home/me/../../etc"));
        let approve = |name: &str, w: &str| {
            Request::McpApprove {
                name: name.into(),
                workspace: w.into(),
                command_line: None,
            }
            .validate_ids()
            .is_ok()
        };
        assert!(approve("files", "/repo"));
        assert!(!approve("a__b", "/repo"));
        assert!(!approve("files", "../repo"));
    }

    #[test]
    fn event_kinds_and_model_refs_are_checked_before_anything_is_read() {
        let page = |kind: Option<&str>| Request::EventsPage {
            agent_id: "main".into(),
            from_seq: 1,
            limit: 10,
            kind: kind.map(str::to_owned),
        };
        assert!(page(None).validate_ids().is_ok());
        assert!(page(Some("turn_terminal")).validate_ids().is_ok());
        let e = page(Some("no_such_kind")).validate_ids().unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert!(e.message.contains("no_such_kind"), "{}", e.message);
        let model = |m: Option<&str>| Request::AgentModel {
            agent_id: "main".into(),
            model: m.map(str::to_owned),
            reasoning_effort: None,
        };
        assert!(model(None).validate_ids().is_ok());
        assert!(model(Some("ollama/qwen3:8b")).validate_ids().is_ok());
        let e = model(Some("../../etc/passwd")).validate_ids().unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
    }

    #[test]
    fn requests_are_json_rpc_method_and_params() {
        let r = Request::PromptSubmit {
            agent_id: "main".into(),
            text: "hi".into(),
            priority: Priority::Next,
            request_id: None,
        };
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(v["method"], "prompt.submit");
        assert_eq!(v["params"]["text"], "hi");
        let back: Request = serde_json::from_value(serde_json::json!({
            "method": "events.page", "params": {"agent_id": "main"}
        }))
        .unwrap_or(Request::RuntimeStatus);
        assert_eq!(
            back,
            Request::EventsPage {
                agent_id: "main".into(),
                from_seq: 1,
                limit: 500,
                kind: None
            }
        );
        // Methods whose params are all optional take empty ones (the
        // control server supplies them when a request has none).
        let bare: Request =
            serde_json::from_value(serde_json::json!({"method": "agents.list", "params": {}}))
                .unwrap_or(Request::RuntimeStatus);
        assert_eq!(
            bare,
            Request::AgentsList {
                limit: None,
                cursor: None,
                query: None
            }
        );
        let unit: Request = serde_json::from_value(serde_json::json!({"method": "runtime.status"}))
            .unwrap_or(Request::AgentsList {
                limit: None,
                cursor: None,
                query: None,
            });
        assert_eq!(unit, Request::RuntimeStatus);
    }

    #[test]
    fn every_request_method_is_listed() {
        let samples = [
            Request::RuntimeStatus,
            Request::RuntimeShutdown,
            Request::AgentsList {
                limit: None,
                cursor: None,
                query: None,
            },
            Request::AgentCreate {
                agent_id: "a".into(),
                template: None,
            },
            Request::AgentPrompt {
                agent_id: "a".into(),
            },
            Request::Control {
                agent_id: "a".into(),
                action: ControlAction::Pause,
            },
        ];
        for r in samples {
            let v = serde_json::to_value(&r).unwrap_or_default();
            let m = v["method"].as_str().unwrap_or_default().to_owned();
            assert!(METHODS.contains(&m.as_str()), "{m}");
        }
    }

    #[test]
    fn the_served_methods_are_exactly_the_requests_and_the_subscription_pair() {
        // serde names every variant in its "unknown variant" error: the
        // complete list of request methods, without samples to keep up.
        let err = serde_json::from_value::<Request>(serde_json::json!({ "method": "no.such" }))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let expected = err.split("expected one of").nth(1).unwrap_or_default();
        let mut requests: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        assert!(requests.len() > 20, "{err}");
        requests.extend(["events.subscribe", "events.unsubscribe"]);
        requests.sort_unstable();
        let mut served = METHODS.to_vec();
        served.sort_unstable();
        assert_eq!(served, requests);
    }

    /// docs/protocol.md documents exactly the methods served: each `###`
    /// heading under "Methods" names methods, `a.b / c` meaning `a.b` and
    /// `a.c`.
    #[test]
    fn protocol_md_documents_every_method_and_no_other() {
        let doc = include_str!("../../docs/protocol.md");
        let methods_at = doc.find("\n## Methods").unwrap_or(doc.len());
        let mut documented = std::collections::BTreeSet::new();
        for heading in doc[methods_at..]
            .lines()
            .filter_map(|l| l.strip_prefix("### "))
        {
            let parts: Vec<&str> = heading.split(" / ").map(|p| p.trim_matches('`')).collect();
            let name_like = |p: &str| {
                !p.is_empty()
                    && p.split('.').count() <= 2
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.')
            };
            if !parts.iter().all(|p| name_like(p)) {
                continue;
            }
            let mut prefix = "";
            for p in parts {
                match p.split_once('.') {
                    Some((family, _)) => {
                        prefix = family;
                        documented.insert(p.to_owned());
                    }
                    None if prefix.is_empty() => {
                        documented.insert(p.to_owned());
                    }
                    None => {
                        documented.insert(format!("{prefix}.{p}"));
                    }
                }
            }
        }
        let served: std::collections::BTreeSet<String> =
            METHODS.iter().map(|m| m.to_string()).collect();
        let missing: Vec<_> = served.difference(&documented).collect();
        let unknown: Vec<_> = documented.difference(&served).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "not documented: {missing:?}; documented but not served: {unknown:?}"
        );
    }

    #[test]
    fn error_codes_round_trip() {
        for c in [
            ErrorCode::ParseError,
            ErrorCode::InvalidParams,
            ErrorCode::NotFound,
            ErrorCode::ShuttingDown,
        ] {
            let n: i64 = c.into();
            assert_eq!(ErrorCode::try_from(n), Ok(c));
        }
    }
}
