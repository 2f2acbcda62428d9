//! What each request is answered with. `Response` pairs every `Request`
//! variant with its answer type (`answers!` below is the table); the
//! structs here are the answers that are not records of their own.

use serde::{Deserialize, Serialize};

use super::api::{
    Admitted, AgentSummary, ApiError, ControlOutcome, ErrorCode, EventRecord, Request,
};

/// How busy the runtime is (daemon lifecycle contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityState {
    Idle,
    Waiting,
    Processing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub state: ActivityState,
    pub active_agent_count: u64,
    pub processing_agent_count: u64,
    pub waiting_agent_count: u64,
    pub active_task_count: u64,
}

/// `runtime.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStatus {
    pub holon: String,
    pub version: String,
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
    pub agents: Vec<AgentSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<serde_json::Value>,
    /// Why the store's last write failed (disk full, I/O error), while
    /// writes keep failing; absent when the store is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_failure: Option<String>,
    /// The HTTP listener (trigger ingress, remote attach): where it is
    /// bound, or why it is down.
    #[serde(default)]
    pub http: crate::runtime::triggers::IngressStatus,
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
    pub closure: serde_json::Value,
    pub work_items: Vec<serde_json::Value>,
    pub tasks: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_decision: Option<EventRecord>,
    pub display_mode: crate::runtime::agent::DisplayMode,
}

/// `runtime.shutdown`: the runtime begins to stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShutdownAck {
    pub shutting_down: bool,
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
    pub task: crate::runtime::tasks::TaskRecord,
    pub output: String,
    pub output_bytes: u64,
    pub truncated: bool,
    pub retrieval_status: RetrievalStatus,
}

/// `events.page`: events from `from_seq`, where the next page starts,
/// and the agent's newest event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventsPage {
    pub events: Vec<EventRecord>,
    pub next_seq: u64,
    pub last_event_seq: u64,
}

macro_rules! answers {
    ($($variant:ident => $answer:ty),+ $(,)?) => {
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
                    ApiError::new(
                        ErrorCode::Internal,
                        format!("unexpected answer to `{}`: {e}", request.method()),
                    )
                })
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
    RuntimeStatus => RuntimeStatus,
    RuntimeShutdown => ShutdownAck,
    AgentsList => Vec<AgentSummary>,
    AgentCreate => AgentSummary,
    AgentArchive => AgentSummary,
    SkillsList => Vec<crate::runtime::skills::SkillView>,
    AgentStatus => AgentSummary,
    AgentState => AgentState,
    AgentPrompt => crate::runtime::host::prompt::PromptPreview,
    PromptSubmit => Admitted,
    WorkItemCreate => crate::runtime::work_items::WorkItemRecord,
    WorkItemPick => crate::runtime::work_items::WorkItemRecord,
    WorkItemUpdate => crate::runtime::work_items::WorkItemRecord,
    WorkItemComplete => crate::runtime::work_items::WorkItemRecord,
    TaskRun => crate::runtime::tasks::TaskRecord,
    TaskStatus => crate::runtime::tasks::TaskRecord,
    TaskOutput => TaskOutput,
    TaskInput => crate::runtime::command_tasks::TaskInputReceipt,
    TaskStop => crate::runtime::tasks::TaskRecord,
    Control => ControlOutcome,
    AgentDisplay => AgentSummary,
    AgentModel => ModelChanged,
    WorkspaceList => crate::runtime::workspace::WorkspaceList,
    WorkspaceAttach => crate::runtime::workspace::WorkspaceBinding,
    WorkspaceUse => crate::runtime::workspace::UseOutcome,
    WorkspaceDetach => crate::runtime::workspace::WorkspaceBinding,
    TriggerShow => crate::runtime::host::trigger_ops::TriggerView,
    TriggerRotate => crate::runtime::host::trigger_ops::TriggerView,
    TriggerRevoke => crate::runtime::host::trigger_ops::TriggerView,
    TriggerDeliver => crate::runtime::host::trigger_ops::DeliveryReceipt,
    ApprovalsList => Vec<crate::runtime::approvals::ApprovalRecord>,
    ApprovalApprove => crate::runtime::approvals::ApprovalRecord,
    ApprovalDeny => crate::runtime::approvals::ApprovalRecord,
    WorkspacePolicy => crate::protocol::payloads::WorkspacePolicyChanged,
    EventsPage => EventsPage,
}
