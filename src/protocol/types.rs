//! The records and enums that travel in requests, answers and event
//! payloads, as the protocol names them. The runtime owns their
//! definitions; clients (the console, the presentation layer) name them
//! from here, never from the engine's modules.

pub use crate::runtime::agent::{
    AgentIdentity, AgentKind, AgentOwnership, AgentRecord, AgentStatus, AgentVisibility,
    ProfilePreset,
};
pub use crate::runtime::approvals::{ApprovalRecord, ApprovalStatus};
pub use crate::runtime::closure::{ClosureDecision, TurnTerminalKind};
pub use crate::runtime::command_tasks::TaskInputReceipt;
pub use crate::runtime::context::{SummarySource, WindowSource};
pub use crate::runtime::envelope::{
    MessageBody, MessageEnvelope, MessageKind, MessageOrigin, Priority, TriggerKind,
};
pub use crate::runtime::host::child_ops::ChildSupervision;
pub use crate::runtime::host::prompt::PromptPreview;
pub use crate::runtime::host::trigger_ops::{DeliveryReceipt, RecentDelivery, TriggerView};
pub use crate::runtime::host::WakeHintOutcome;
pub use crate::runtime::inspect::{AgentSummary, ContextView};
pub use crate::runtime::policy::{Approval, ApprovalPolicy};
pub use crate::runtime::provider::{ConversationItem, FailureArtifact, TokenUsage};
pub use crate::runtime::scheduler::{DecisionReason, SchedulerDecisionKind};
pub use crate::runtime::skills::{LoadReason, SkillScope, SkillState, SkillView};
pub use crate::runtime::tasks::{TaskKind, TaskRecord, TaskStatus};
pub use crate::runtime::triggers::{
    DeliveryMeta, IngressState, IngressStatus, TriggerDescriptor, TriggerStatus,
};
pub use crate::runtime::waiting::{TimerRecord, WaitingIntentRecord, WaitingIntentStatus};
pub use crate::runtime::work_items::{PlanStatus, TodoItem, WorkItemRecord, WorkItemState};
pub use crate::runtime::work_ops::{CreateWorkItem, UpdateWorkItem, WorkItemSource};
pub use crate::runtime::workspace::PolicySource;
pub use crate::runtime::workspace::{
    ExecutionSnapshot, UseOutcome, UseWorkspace, WorkspaceBinding, WorkspaceEntry, WorkspaceList,
    WorkspaceMode, WorktreeSession, AGENT_HOME_ID,
};
pub use crate::store::Provenance;
