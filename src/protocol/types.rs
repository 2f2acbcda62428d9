//! The records and enums that travel in requests, answers and event
//! payloads, as the protocol names them. The model (`crate::model`)
//! defines them; clients (the console, the presentation layer) name them
//! from here, never from the engine's modules.

pub use crate::model::agent::{
    AgentIdentity, AgentKind, AgentOwnership, AgentRecord, AgentStatus, AgentVisibility,
    ProfilePreset,
};
pub use crate::model::approval::{Approval, ApprovalPolicy};
pub use crate::model::approval::{ApprovalRecord, ApprovalStatus};
pub use crate::model::context::{SummarySource, WindowSource};
pub use crate::model::decision::{ClosureDecision, TurnTerminalKind};
pub use crate::model::decision::{DecisionReason, SchedulerDecisionKind};
pub use crate::model::event::Provenance;
pub use crate::model::message::{
    MessageBody, MessageEnvelope, MessageKind, MessageOrigin, Priority, TriggerKind,
};
pub use crate::model::skill::{LoadReason, SkillScope, SkillState, SkillView};
pub use crate::model::task::TaskInputReceipt;
pub use crate::model::task::{TaskKind, TaskRecord, TaskStatus};
pub use crate::model::trigger::{
    DeliveryMeta, IngressState, IngressStatus, TriggerDescriptor, TriggerStatus,
};
pub use crate::model::usage::{ConversationItem, FailureArtifact, TokenUsage};
pub use crate::model::waiting::{TimerRecord, WaitingIntentRecord, WaitingIntentStatus};
pub use crate::model::work::{PlanStatus, TodoItem, WorkItemRecord, WorkItemState};
pub use crate::model::workspace::PolicySource;
pub use crate::model::workspace::{
    ExecutionSnapshot, UseOutcome, UseWorkspace, WorkspaceBinding, WorkspaceEntry, WorkspaceList,
    WorkspaceMode, WorktreeSession, AGENT_HOME_ID,
};
pub use crate::protocol::views::ChildSupervision;
pub use crate::protocol::views::PromptPreview;
pub use crate::protocol::views::WakeHintOutcome;
pub use crate::protocol::views::{AgentSummary, ContextView};
pub use crate::protocol::views::{CreateWorkItem, UpdateWorkItem, WorkItemSource};
pub use crate::protocol::views::{DeliveryReceipt, RecentDelivery, TriggerView};
