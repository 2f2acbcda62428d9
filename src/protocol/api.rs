//! What consoles, scripts and the control socket ask of a runtime: the
//! requests (one serde enum whose `method`/`params` tagging is exactly the
//! JSON-RPC 2.0 request shape, so the socket carries these types
//! unchanged). Their ids are checked in `validate`, the error codes are in
//! `error`, the answers and the served method names in `answers`, the
//! client interface in `client`.

use serde::{Deserialize, Serialize};

pub use crate::model::agent::DisplayMode;
pub use crate::model::event::EventRecord;
pub use crate::model::BoxFuture;
pub use crate::protocol::views::Admitted;
pub use crate::protocol::views::AgentSummary;
pub use crate::protocol::views::{ControlAction, ControlOutcome, WakeHintOutcome};

use crate::model::message::Priority;
use crate::protocol::views::{CreateWorkItem, UpdateWorkItem};

use super::error::{ApiError, ErrorCode};

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

impl Request {
    /// The error of a request handed to an answerer of another domain: a
    /// routing slip in the runtime, never the client's fault.
    pub(crate) fn misrouted(&self) -> ApiError {
        ApiError::new(
            ErrorCode::Internal,
            format!("`{}` reached an answerer of another domain", self.method()),
        )
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
}
