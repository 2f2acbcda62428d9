//! What each request is answered with. `Response` pairs every `Request`
//! variant with its answer type and the domain that answers it (`answers!`
//! below is the table); the structs here are the answers that are not
//! records of their own.

use serde::{Deserialize, Serialize};

use super::api::{Admitted, AgentSummary, ControlOutcome, EventRecord, Request};
use super::error::ApiError;

/// How busy the runtime is (daemon lifecycle contract).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityState {
    #[default]
    Idle,
    Waiting,
    Processing,
}

/// Idle with no counts by default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub state: ActivityState,
    pub active_agent_count: u64,
    pub processing_agent_count: u64,
    pub waiting_agent_count: u64,
    pub active_task_count: u64,
    /// Agents inside a model turn now.
    #[serde(default)]
    pub running_turn_count: u64,
    /// Every agent's actor has done what it could with what is recorded
    /// (nothing left to decide or run until something new arrives): what
    /// a script, or a test, waits for before saying nothing more happens.
    #[serde(default)]
    pub settled: bool,
}

/// `agent.transcript`: the newest entries, oldest first, and whether
/// older ones were left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptPage {
    pub agent_id: String,
    pub entries: Vec<crate::model::transcript::TranscriptEntry>,
    pub more: bool,
}

/// `runtime.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStatus {
    pub holon: String,
    pub version: String,
    /// This protocol's revision (`protocol::REVISION`); a client refuses a
    /// runtime with another one, naming both. 0: a runtime too old to say.
    #[serde(default)]
    pub protocol: u32,
    pub pid: u32,
    pub mode: String,
    pub home: Option<String>,
    pub store: String,
    pub socket_path: Option<String>,
    pub started_at: String,
    pub uptime_ms: u64,
    pub activity: Activity,
    /// The model a turn uses when the agent has no override (this
    /// runtime's configuration, not the asking client's); none configured
    /// is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// At most 50 listed agents' summaries, the busiest first (the default
    /// agent among them); `agent_count` counts them all, `agents.list`
    /// pages through them.
    pub agents: Vec<AgentSummary>,
    /// Listed agents (public, not archived) in all.
    #[serde(default)]
    pub agent_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<serde_json::Value>,
    /// Why the store's last write failed (disk full, I/O error), while
    /// writes keep failing; absent when the store is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_failure: Option<String>,
    /// The HTTP listener (trigger ingress, remote attach): where it is
    /// bound, or why it is down.
    #[serde(default)]
    pub http: crate::model::trigger::IngressStatus,
    /// The effective configuration this runtime started with, hashed, so
    /// `daemon start` can tell whether a restart is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_fingerprint: Option<String>,
    /// Tool calls waiting for the operator, across agents.
    #[serde(default)]
    pub pending_approvals: u64,
}

/// `agent.state`: a coherent bootstrap before following events from
/// `last_event_seq + 1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    pub agent: AgentSummary,
    pub last_event_seq: u64,
    /// Why the agent is or is not done; `null` when it cannot be read.
    pub closure: Option<crate::model::decision::ClosureDecision>,
    /// Open work items, then recently completed ones.
    pub work_items: Vec<WorkItemEntry>,
    /// Active tasks, then recently ended ones.
    pub tasks: Vec<crate::model::task::TaskRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_decision: Option<EventRecord>,
    pub display_mode: crate::model::agent::DisplayMode,
}

/// A work item in `agent.state`: the record, and the start of its plan
/// artifact when it has one (the record's fields and these side by side).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemEntry {
    #[serde(flatten)]
    pub record: crate::model::work::WorkItemRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_preview: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_preview_complete: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_path: Option<String>,
}

/// `runtime.shutdown`: the runtime begins to stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShutdownAck {
    pub shutting_down: bool,
    /// Commands this shutdown leaves running under their holders (a
    /// daemon's); the next runtime reattaches them.
    #[serde(default)]
    pub commands_left_running: usize,
}

/// `agent.model`: the agent after the change, and the override it had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelChanged {
    pub agent: AgentSummary,
    #[serde(default)]
    pub previous_model_override: Option<String>,
}

/// Whether a task's output is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalStatus {
    /// The task ended: this is all of its output (within the cap).
    Success,
    /// Still running: more may follow.
    NotReady,
}

/// `task.output`: the tail of a task's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskOutput {
    pub task: crate::model::task::TaskRecord,
    pub output: String,
    pub output_bytes: u64,
    pub truncated: bool,
    pub retrieval_status: RetrievalStatus,
}

/// `agents.list`: one page of listed agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentsPage {
    pub agents: Vec<AgentSummary>,
    /// The `cursor` of the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Agents matching the query in all pages.
    pub total: u64,
}

/// `events.page`: events from `from_seq`, where the next page starts,
/// and the agent's newest event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventsPage {
    pub events: Vec<EventRecord>,
    pub next_seq: u64,
    pub last_event_seq: u64,
    /// Set when the page was asked from below where the ledger starts
    /// now: events before this seq were pruned by retention (never a
    /// gap that looks like loss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pruned_before: Option<u64>,
    /// Ranges of this page's span that a salvage recorded as lost: the
    /// gaps in it are known losses, not damage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<crate::model::retention::LostRange>,
}

impl EventsPage {
    /// `pruned_before` for a page asked from `from_seq` of a ledger that
    /// starts at `ledger_start`.
    pub fn pruned_marker(from_seq: u64, ledger_start: u64) -> Option<u64> {
        (ledger_start > 1 && from_seq < ledger_start).then_some(ledger_start)
    }
}

/// Which part of the runtime answers a request (`Request::domain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Read from the store alone, answered the same with a runtime or
    /// without one (`runtime::pages::answer_reads`).
    StoreRead,
    /// A `runtime.policy` or `workspace.policy` that changes nothing: read
    /// from the store alone too, once a change under way has settled.
    PolicyRead,
    /// The runtime's own: its status, shutdown, the store's backup and
    /// prune.
    Runtime,
    Agents,
    Workspace,
    /// Approvals, the policies they follow, and repositories' proposals.
    Approvals,
    Triggers,
    /// What the operator asks of an agent: prompts, work items, tasks,
    /// control.
    Operator,
    Mcp,
}

impl Domain {
    /// Whether a one-shot command can answer it from the store, without
    /// starting a runtime.
    pub fn reads_store_only(self) -> bool {
        match self {
            Domain::StoreRead | Domain::PolicyRead => true,
            Domain::Runtime
            | Domain::Agents
            | Domain::Workspace
            | Domain::Approvals
            | Domain::Triggers
            | Domain::Operator
            | Domain::Mcp => false,
        }
    }
}

macro_rules! answers {
    ($($variant:ident($method:literal, $domain:ident) => $answer:ty),+ $(,)?) => {
        /// Every method served, for "method not found" versus "invalid
        /// params": each request's, from the table of answers (a test holds
        /// each name to the request's own), then the subscription pair.
        pub const METHODS: &[&str] = &[$($method,)+ "events.subscribe", "events.unsubscribe"];

        impl Request {
            /// The JSON-RPC method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Request::$variant { .. } => $method,)+
                }
            }

            /// Who answers it: its domain in the table, except that a
            /// policy request that changes nothing is a read.
            pub fn domain(&self) -> Domain {
                match self {
                    Request::RuntimePolicy { change } if change.is_empty() => Domain::PolicyRead,
                    Request::WorkspacePolicy { change, .. } if change.is_empty() => {
                        Domain::PolicyRead
                    }
                    $(Request::$variant { .. } => Domain::$domain,)+
                }
            }
        }

        /// The answer to every request, typed: each method paired with its
        /// result. Serialises as the bare result (the wire is unchanged).
        #[derive(Debug, Clone, Serialize)]
        #[serde(untagged)]
        #[allow(clippy::large_enum_variant)] // built once per answer
        pub enum Response {
            $($variant($answer),)+
        }

        impl Response {
            /// Read `value` as the answer to `request`.
            pub fn decode(request: &Request, value: &serde_json::Value) -> Result<Response, ApiError> {
                let read = match request {
                    $(Request::$variant { .. } => <$answer>::deserialize(value).map(Response::$variant),)+
                };
                read.map_err(|e| {
                    ApiError::decode(format!("unexpected answer to `{}`: {e}", request.method()))
                })
            }

            fn unexpected(&self) -> ApiError {
                ApiError::decode(format!(
                    "unexpected answer from the runtime (the answer to {})",
                    self.variant()
                ))
            }

            /// The request variant this answers, by name.
            pub fn variant(&self) -> &'static str {
                match self {
                    $(Response::$variant(_) => stringify!($variant),)+
                }
            }

            /// The answer, borrowed as the type `T` it carries; an answer
            /// of another type is a decoding failure (`Failure::Decode`).
            pub fn get<T: 'static>(&self) -> Result<&T, ApiError> {
                let got = match self {
                    $(Response::$variant(answer) => (answer as &dyn std::any::Any).downcast_ref::<T>(),)+
                };
                got.ok_or_else(|| self.unexpected())
            }

            /// The answer as the type `T` it carries, whichever method it
            /// answers (several answer with an `AgentSummary`); an answer
            /// of another type is a decoding failure.
            pub fn take<T: 'static>(self) -> Result<T, ApiError> {
                let unexpected = self.unexpected();
                match self {
                    $(Response::$variant(answer) => {
                        let any: Box<dyn std::any::Any> = Box::new(answer);
                        any.downcast::<T>().map(|t| *t).map_err(|_| unexpected)
                    })+
                }
            }

            /// Whether this is the kind of answer `request` gets.
            pub fn answers(&self, request: &Request) -> bool {
                match (self, request) {
                    $((Response::$variant(_), Request::$variant { .. }) => true,)+
                    _ => false,
                }
            }
        }
    };
}

answers! {
    RuntimeStatus("runtime.status", Runtime) => RuntimeStatus,
    RuntimeShutdown("runtime.shutdown", Runtime) => ShutdownAck,
    AgentsList("agents.list", StoreRead) => AgentsPage,
    AgentCreate("agent.create", Agents) => AgentSummary,
    AgentArchive("agent.archive", Agents) => AgentSummary,
    SkillsList("skills.list", StoreRead) => Vec<crate::model::skill::SkillView>,
    AgentStatus("agent.status", StoreRead) => AgentSummary,
    AgentState("agent.state", Agents) => AgentState,
    AgentPrompt("agent.prompt", Agents) => crate::protocol::views::PromptPreview,
    AgentTranscript("agent.transcript", StoreRead) => TranscriptPage,
    PromptSubmit("prompt.submit", Operator) => Admitted,
    WorkItemCreate("work_item.create", Operator) => crate::model::work::WorkItemRecord,
    WorkItemPick("work_item.pick", Operator) => crate::model::work::WorkItemRecord,
    WorkItemUpdate("work_item.update", Operator) => crate::model::work::WorkItemRecord,
    WorkItemComplete("work_item.complete", Operator) => crate::model::work::WorkItemRecord,
    TaskRun("task.run", Operator) => crate::model::task::TaskRecord,
    TaskStatus("task.status", Operator) => crate::model::task::TaskRecord,
    TaskOutput("task.output", Operator) => TaskOutput,
    TaskInput("task.input", Operator) => crate::model::task::TaskInputReceipt,
    TaskStop("task.stop", Operator) => crate::model::task::TaskRecord,
    Control("control", Operator) => ControlOutcome,
    AgentDisplay("agent.display", Agents) => AgentSummary,
    AgentModel("agent.model", Agents) => ModelChanged,
    AgentBudget("agent.budget", Agents) => crate::protocol::views::BudgetAnswer,
    WorkspaceList("workspace.list", StoreRead) => crate::model::workspace::WorkspaceList,
    WorkspaceFiles("workspace.files", Workspace) => crate::protocol::views::FileList,
    WorkspaceAttach("workspace.attach", Workspace) => crate::model::workspace::WorkspaceBinding,
    WorkspaceUse("workspace.use", Workspace) => crate::model::workspace::UseOutcome,
    WorkspaceDetach("workspace.detach", Workspace) => crate::model::workspace::WorkspaceBinding,
    TriggerShow("trigger.show", Triggers) => crate::protocol::views::TriggerView,
    TriggerRotate("trigger.rotate", Triggers) => crate::protocol::views::TriggerView,
    TriggerRevoke("trigger.revoke", Triggers) => crate::protocol::views::TriggerView,
    TriggerDeliver("trigger.deliver", Triggers) => crate::protocol::views::DeliveryReceipt,
    ApprovalsList("approvals.list", StoreRead) => Vec<crate::model::approval::ApprovalRecord>,
    ApprovalApprove("approval.approve", Approvals) => crate::model::approval::ApprovalRecord,
    ApprovalDeny("approval.deny", Approvals) => crate::model::approval::ApprovalRecord,
    WorkspacePolicy("workspace.policy", Approvals) => crate::protocol::payloads::WorkspacePolicyChanged,
    RuntimePolicy("runtime.policy", Approvals) => crate::model::approval::DefaultPolicy,
    EventsPage("events.page", StoreRead) => EventsPage,
    StoreBackup("store.backup", Runtime) => crate::model::backup::BackupReport,
    StorePrune("store.prune", Runtime) => crate::model::retention::PruneReport,
    McpList("mcp.list", Mcp) => Vec<crate::model::mcp::McpServerInfo>,
    McpApprove("mcp.approve", Mcp) => crate::model::mcp::McpApproval,
    McpDisable("mcp.disable", Mcp) => crate::model::mcp::McpSwitch,
    ProposalShow("proposal.show", Approvals) => crate::model::proposal::Proposal,
    ProposalAdopt("proposal.adopt", Approvals) => crate::model::proposal::ProposalApproval,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::Failure;

    #[test]
    fn a_policy_request_that_changes_nothing_is_a_read() {
        use crate::model::approval::PolicyChange;
        let read = Request::RuntimePolicy {
            change: PolicyChange::default(),
        };
        assert_eq!(read.domain(), Domain::PolicyRead);
        assert!(read.domain().reads_store_only());
        let change = Request::RuntimePolicy {
            change: PolicyChange {
                allow_commands: vec!["cargo test".into()],
                ..PolicyChange::default()
            },
        };
        assert_eq!(change.domain(), Domain::Approvals);
        assert!(!change.domain().reads_store_only());
        let workspace = |change| Request::WorkspacePolicy {
            agent_id: "main".into(),
            workspace_id: "ws".into(),
            change,
        };
        assert_eq!(
            workspace(PolicyChange::default()).domain(),
            Domain::PolicyRead
        );
        let widened = PolicyChange {
            allow_paths: vec!["/srv".into()],
            ..PolicyChange::default()
        };
        assert_eq!(workspace(widened).domain(), Domain::Approvals);
        assert_eq!(Request::RuntimeStatus.domain(), Domain::Runtime);
    }

    #[test]
    fn an_answer_of_the_wrong_shape_is_a_decode_failure() {
        let request = Request::RuntimeShutdown;
        let good = Response::decode(&request, &json!({ "shutting_down": true }));
        assert!(matches!(
            good,
            Ok(Response::RuntimeShutdown(ShutdownAck {
                shutting_down: true,
                commands_left_running: 0,
            }))
        ));
        let bad = Response::decode(&request, &json!({ "shutting": "soon" }));
        let e = bad
            .err()
            .map(|e| (e.failure, e.message.contains("runtime.shutdown")));
        assert_eq!(e, Some((Failure::Decode, true)));
    }

    #[test]
    fn an_answer_is_read_as_the_type_it_carries() {
        let ack = Response::RuntimeShutdown(ShutdownAck {
            shutting_down: true,
            commands_left_running: 0,
        });
        assert_eq!(
            ack.get::<ShutdownAck>().ok().map(|a| a.shutting_down),
            Some(true)
        );
        assert!(ack.get::<RuntimeStatus>().is_err());
        assert_eq!(ack.variant(), "RuntimeShutdown");
        let refused = ack.clone().take::<RuntimeStatus>().err();
        let refused = refused.map(|e| (e.failure, e.message.contains("RuntimeShutdown")));
        assert_eq!(refused, Some((crate::protocol::Failure::Decode, true)));
        assert!(ack.take::<ShutdownAck>().is_ok_and(|a| a.shutting_down));
    }
}
