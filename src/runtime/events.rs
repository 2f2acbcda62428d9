//! The runtime event kinds. Every durable state change appends one or more
//! events in the same store transaction; clients are projections of these.
//! Names are the seeds' vocabulary in snake_case. Matching on `EventKind` is
//! exhaustive everywhere, so a new kind fails to compile until each surface
//! decides how to present it.

use serde::{Deserialize, Serialize};

macro_rules! event_kinds {
    ($($variant:ident => $name:literal),+ $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum EventKind { $($variant),+ }

        impl EventKind {
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $(EventKind::$variant => $name),+ }
            }

            pub fn parse(s: &str) -> Option<EventKind> {
                match s { $($name => Some(EventKind::$variant),)+ _ => None }
            }
        }
    };
}

event_kinds! {
    AgentCreated => "agent_created",
    AgentStateChanged => "agent_state_changed",
    ControlApplied => "control_applied",
    MessageAdmitted => "message_admitted",
    MessageRejected => "message_rejected",
    MessageProcessingStarted => "message_processing_started",
    MessageProcessed => "message_processed",
    MessageAborted => "message_aborted",
    MessageDropped => "message_dropped",
    MessageInterjected => "message_interjected",
    SchedulerDecision => "scheduler_decision",
    SystemTickEmitted => "system_tick_emitted",
    TurnStarted => "turn_started",
    ProviderRoundCompleted => "provider_round_completed",
    AssistantRoundRecorded => "assistant_round_recorded",
    ToolStarted => "tool_started",
    ToolExecuted => "tool_executed",
    WorkspaceAttached => "workspace_attached",
    WorkspaceUsed => "workspace_used",
    WorkspaceDetached => "workspace_detached",
    WorkspaceMissing => "workspace_missing",
    WorktreeCreated => "worktree_created",
    WorktreeRemoved => "worktree_removed",
    WorktreeRetained => "worktree_retained",
    ContextCompacted => "context_compacted",
    TurnCheckpoint => "turn_checkpoint",
    TurnTerminal => "turn_terminal",
    BriefCreated => "brief_created",
    WorkItemCreated => "work_item_created",
    WorkItemPicked => "work_item_picked",
    WorkItemUpdated => "work_item_updated",
    WorkItemCompleted => "work_item_completed",
    WorkItemRecheckDue => "work_item_recheck_due",
    TaskCreated => "task_created",
    TaskStatusChanged => "task_status_changed",
    TaskOutput => "task_output",
    TaskResultQueued => "task_result_queued",
    WaitingIntentCreated => "waiting_intent_created",
    WaitingIntentTriggered => "waiting_intent_triggered",
    WaitingIntentCancelled => "waiting_intent_cancelled",
    TimerCreated => "timer_created",
    TimerFired => "timer_fired",
    TimerCancelled => "timer_cancelled",
    WakeHintSubmitted => "wake_hint_submitted",
    WakeHintCoalesced => "wake_hint_coalesced",
    WakeHintIgnored => "wake_hint_ignored",
    RuntimeStarted => "runtime_started",
    RuntimeStopped => "runtime_stopped",
    RuntimeError => "runtime_error",
    ConfigReloaded => "config_reloaded",
    DisplayModeChanged => "display_mode_changed",
    ModelOverrideChanged => "model_override_changed",
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(*kind));
            let json = serde_json::to_string(kind).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert_eq!(EventKind::parse("no_such_kind"), None);
    }
}
