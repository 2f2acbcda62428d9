//! The runtime event kinds and their typed payloads. Every durable state
//! change appends one or more events in the same store transaction; clients
//! are projections of these. Names are the seeds' vocabulary in snake_case.
//!
//! Each kind is in one family of the table below: what it is about (the
//! agent, the queue, a turn, a task, ...). `Event::family` gives an event
//! as its `Family`, which carries the kind and its payload typed in that
//! family's own enum. The readers of payloads (`refs`, the presentation's
//! table and words) match every kind. The console's surfaces (the
//! conversation, the projection, the transcript) match on the family with
//! no `_` arm: where one treats a whole family alike it names the family,
//! where it treats its kinds apart it names each kind of it. So a new kind
//! fails to compile wherever its family is looked into, and a new family
//! on every surface, until each has decided what it does with it.

use serde::{Deserialize, Serialize};

pub use super::payloads::*;

macro_rules! event_kinds {
    ($(
        $(#[$fdoc:meta])*
        $family:ident($fenum:ident) {
            $($variant:ident($payload:ty) => $name:literal),+ $(,)?
        }
    )+) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum EventKind { $($($variant,)+)+ }

        impl EventKind {
            pub const ALL: &'static [EventKind] = &[$($(EventKind::$variant,)+)+];

            pub fn as_str(self) -> &'static str {
                match self { $($(EventKind::$variant => $name,)+)+ }
            }

            pub fn parse(s: &str) -> Option<EventKind> {
                match s { $($($name => Some(EventKind::$variant),)+)+ _ => None }
            }
        }

        /// An event's payload, typed by its kind. The engine builds events
        /// from these; clients match on them exhaustively, or on their
        /// `family`. A kind this build does not know (a newer runtime's)
        /// reads as `Unknown`, a payload that does not fit its kind's type
        /// as `Unreadable`: both are shown as trace, never a crash.
        #[derive(Debug, Clone, PartialEq)]
        #[allow(clippy::large_enum_variant)] // built once per event, moved rarely
        pub enum Event {
            $($($variant($payload),)+)+
            Unknown { kind: String },
            Unreadable { kind: EventKind, error: String },
        }

        /// An event by what it is about: its family, and in it the kind
        /// with its payload (see the module's comment).
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum Family<'a> {
            $($(#[$fdoc])* $family($fenum<'a>),)+
            /// An event this build cannot read: a kind it does not know, or
            /// a payload that does not fit its kind.
            Unreadable,
        }

        $(
            $(#[$fdoc])*
            #[derive(Debug, Clone, Copy, PartialEq)]
            pub enum $fenum<'a> { $($variant(&'a $payload),)+ }
        )+

        impl Event {
            /// The payload of a stored event, read without copying the
            /// JSON tree.
            pub fn decode(kind: &str, payload: &serde_json::Value) -> Event {
                match EventKind::parse(kind) {
                    $($(Some(EventKind::$variant) => match <$payload>::deserialize(payload) {
                        Ok(p) => Event::$variant(p),
                        Err(e) => Event::Unreadable {
                            kind: EventKind::$variant,
                            error: e.to_string(),
                        },
                    },)+)+
                    None => Event::Unknown { kind: kind.to_owned() },
                }
            }

            /// The kind, when this build knows it.
            pub fn kind(&self) -> Option<EventKind> {
                match self {
                    $($(Event::$variant(_) => Some(EventKind::$variant),)+)+
                    Event::Unknown { .. } => None,
                    Event::Unreadable { kind, .. } => Some(*kind),
                }
            }

            /// What this event is about: its family, and in it its kind and
            /// payload.
            pub fn family(&self) -> Family<'_> {
                match self {
                    $($(Event::$variant(p) => Family::$family($fenum::$variant(p)),)+)+
                    Event::Unknown { .. } | Event::Unreadable { .. } => Family::Unreadable,
                }
            }

            /// The payload as stored (keys sorted, as `serde_json::Value`
            /// keeps them).
            pub fn payload(&self) -> serde_json::Value {
                let v = match self {
                    $($(Event::$variant(p) => serde_json::to_value(p),)+)+
                    Event::Unknown { .. } | Event::Unreadable { .. } => Ok(serde_json::Value::Null),
                };
                // Plain records with string keys: serialising cannot fail.
                v.unwrap_or(serde_json::Value::Null)
            }
        }
    };
}

/// The task and the message an event is about, where its payload names
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refs<'a> {
    pub task_id: Option<&'a str>,
    pub message_id: Option<&'a str>,
}

impl Event {
    /// What this event's payload says it is about (exhaustive: a new kind
    /// must say which ids it carries).
    pub fn refs(&self) -> Refs<'_> {
        use Event as E;
        let (task_id, message_id) = match self {
            E::TaskCreated(p) => (Some(p.task.id.as_str()), None),
            E::TaskStatusChanged(p) => (Some(p.task_id.as_str()), None),
            E::TaskResultQueued(p) => (Some(p.task_id.as_str()), Some(p.message_id.as_str())),
            E::TaskReattached(p) => (Some(p.task_id.as_str()), None),
            E::TaskOutput(p) => (p.task_id.as_deref(), None),
            E::SchedulerDecision(p) => (
                p.decision.task_id.as_deref(),
                p.decision.message_id.as_deref(),
            ),
            E::BriefCreated(p) => (
                p.brief.related_task_id.as_deref(),
                Some(p.brief.related_message_id.as_str()),
            ),
            E::MessageAdmitted(p) => (None, Some(p.message.id.as_str())),
            E::MessageRejected(p) => (None, Some(p.message_id.as_str())),
            E::MessageProcessingStarted(p) => (None, Some(p.message_id.as_str())),
            E::MessageProcessed(p)
            | E::MessageAborted(p)
            | E::MessageDropped(p)
            | E::MessageInterjected(p) => (None, Some(p.message_id.as_str())),
            E::SystemTickEmitted(p) => (None, Some(p.message_id.as_str())),
            E::TurnStarted(p) => (None, Some(p.message_id.as_str())),
            E::TurnAwaitingApproval(p) => (None, Some(p.message_id.as_str())),
            E::TurnTerminal(p) => (None, Some(p.message_id.as_str())),
            E::ApprovalRequested(p)
            | E::ApprovalReviewed(p)
            | E::ApprovalGranted(p)
            | E::ApprovalDenied(p) => (None, Some(p.approval.message_id.as_str())),
            E::AgentCreated(_)
            | E::AgentArchived(_)
            | E::SkillActivated(_)
            | E::AgentStateChanged(_)
            | E::ControlApplied(_)
            | E::BudgetExceeded(_)
            | E::AgentBudgetChanged(_)
            | E::ProviderRoundCompleted(_)
            | E::TurnContextBuilt(_)
            | E::AssistantRoundRecorded(_)
            | E::ToolStarted(_)
            | E::ToolExecuted(_)
            | E::WorkspaceAttached(_)
            | E::WorkspaceUsed(_)
            | E::WorkspaceDetached(_)
            | E::WorkspaceMissing(_)
            | E::WorktreeCreated(_)
            | E::WorktreeRemoved(_)
            | E::WorktreeRetained(_)
            | E::ContextCompactionStarted(_)
            | E::ContextCompacted(_)
            | E::TurnCheckpoint(_)
            | E::WorkItemCreated(_)
            | E::WorkItemPicked(_)
            | E::WorkItemUpdated(_)
            | E::WorkItemCompleted(_)
            | E::WorkItemRecheckDue(_)
            | E::WaitingIntentCreated(_)
            | E::WaitingIntentTriggered(_)
            | E::WaitingIntentCancelled(_)
            | E::TimerCreated(_)
            | E::TimerFired(_)
            | E::TimerCancelled(_)
            | E::WakeHintSubmitted(_)
            | E::WakeHintCoalesced(_)
            | E::WakeHintIgnored(_)
            | E::ExternalTriggerProvisioned(_)
            | E::ExternalTriggerRotated(_)
            | E::ExternalTriggerRevoked(_)
            | E::ExternalTriggerDelivered(_)
            | E::WorkspacePolicyChanged(_)
            | E::DefaultPolicyChanged(_)
            | E::McpServerApproved(_)
            | E::ProposalApproved(_)
            | E::McpServerReviewed(_)
            | E::McpServerSwitched(_)
            | E::McpServerStarted(_)
            | E::McpServerFailed(_)
            | E::McpServerStopped(_)
            | E::StorePruned(_)
            | E::HistoryLost(_)
            | E::RuntimeStarted(_)
            | E::RuntimeStopped(_)
            | E::RuntimeError(_)
            | E::ConfigReloaded(_)
            | E::HookRan(_)
            | E::DisplayModeChanged(_)
            | E::ModelOverrideChanged(_)
            | E::Unknown { .. }
            | E::Unreadable { .. } => (None, None),
        };
        Refs {
            task_id,
            message_id,
        }
    }

    /// The task this event is about, where its payload names one.
    pub fn task_id(&self) -> Option<&str> {
        self.refs().task_id
    }

    /// The message this event is about, where its payload names one.
    pub fn message_id(&self) -> Option<&str> {
        self.refs().message_id
    }
}

/// An event of a kind this build knows, ready to append.
pub fn new_event(
    agent_id: impl Into<String>,
    provenance: crate::model::event::Provenance,
    event: Event,
) -> crate::model::event::NewEvent {
    let kind = event.kind().map_or("unknown", EventKind::as_str);
    crate::model::event::NewEvent {
        agent_id: agent_id.into(),
        kind,
        provenance,
        payload: event.payload(),
    }
}

impl crate::model::event::EventRecord {
    /// This record's payload, typed.
    pub fn event(&self) -> Event {
        Event::decode(&self.kind, &self.payload)
    }
}

use super::payloads as p;

event_kinds! {
    /// The agent itself: created, archived, its control posture, skills,
    /// budget, display mode and model.
    Agent(AgentEvent) {
        AgentCreated(p::AgentCreated) => "agent_created",
        AgentStateChanged(p::AgentStateChanged) => "agent_state_changed",
        AgentArchived(p::AgentArchived) => "agent_archived",
        SkillActivated(p::SkillActivated) => "skill_activated",
        ControlApplied(p::ControlApplied) => "control_applied",
        BudgetExceeded(p::BudgetExceeded) => "budget_exceeded",
        AgentBudgetChanged(p::AgentBudgetChanged) => "agent_budget_changed",
        DisplayModeChanged(p::DisplayModeChanged) => "display_mode_changed",
        ModelOverrideChanged(p::ModelOverrideChanged) => "model_override_changed",
    }
    /// The queue: a message admitted, refused, taken up and settled.
    Message(MessageEvent) {
        MessageAdmitted(p::MessageAdmitted) => "message_admitted",
        MessageRejected(p::MessageRejected) => "message_rejected",
        MessageProcessingStarted(p::MessageProcessingStarted) => "message_processing_started",
        MessageProcessed(p::MessageSettled) => "message_processed",
        MessageAborted(p::MessageSettled) => "message_aborted",
        MessageDropped(p::MessageSettled) => "message_dropped",
        MessageInterjected(p::MessageSettled) => "message_interjected",
    }
    /// The scheduler's decisions and the ticks it queues.
    Scheduler(SchedulerEvent) {
        SchedulerDecision(p::SchedulerDecisionMade) => "scheduler_decision",
        SystemTickEmitted(p::SystemTickEmitted) => "system_tick_emitted",
    }
    /// A model turn: its start, context, provider rounds, compaction,
    /// checkpoints, wait for the operator, end or failure.
    Turn(TurnEvent) {
        TurnStarted(p::TurnStarted) => "turn_started",
        TurnContextBuilt(p::TurnContextBuilt) => "turn_context_built",
        ProviderRoundCompleted(p::ProviderRoundCompleted) => "provider_round_completed",
        AssistantRoundRecorded(p::AssistantRoundRecorded) => "assistant_round_recorded",
        ContextCompactionStarted(p::ContextCompactionStarted) => "context_compaction_started",
        ContextCompacted(p::ContextCompacted) => "context_compacted",
        TurnCheckpoint(p::TurnCheckpoint) => "turn_checkpoint",
        TurnAwaitingApproval(p::TurnAwaitingApproval) => "turn_awaiting_approval",
        TurnTerminal(p::TurnTerminal) => "turn_terminal",
        RuntimeError(p::RuntimeErrorRecorded) => "runtime_error",
    }
    /// A tool call starting and its result.
    Tool(ToolEvent) {
        ToolStarted(p::ToolStarted) => "tool_started",
        ToolExecuted(p::ToolExecuted) => "tool_executed",
    }
    /// Workspaces bound and used, and managed worktrees.
    Workspace(WorkspaceEvent) {
        WorkspaceAttached(p::WorkspaceAttached) => "workspace_attached",
        WorkspaceUsed(p::WorkspaceUsed) => "workspace_used",
        WorkspaceDetached(p::WorkspaceDetached) => "workspace_detached",
        WorkspaceMissing(p::WorkspaceMissing) => "workspace_missing",
        WorktreeCreated(p::WorktreeCreated) => "worktree_created",
        WorktreeRemoved(p::WorktreeRemoved) => "worktree_removed",
        WorktreeRetained(p::WorktreeRetained) => "worktree_retained",
    }
    /// A brief for the operator.
    Brief(BriefEvent) {
        BriefCreated(p::BriefCreated) => "brief_created",
    }
    /// Work items.
    WorkItem(WorkItemEvent) {
        WorkItemCreated(p::WorkItemCreated) => "work_item_created",
        WorkItemPicked(p::WorkItemPicked) => "work_item_picked",
        WorkItemUpdated(p::WorkItemUpdated) => "work_item_updated",
        WorkItemCompleted(p::WorkItemCompleted) => "work_item_completed",
        WorkItemRecheckDue(p::WorkItemRecheckDue) => "work_item_recheck_due",
    }
    /// Background tasks.
    Task(TaskEvent) {
        TaskCreated(p::TaskCreated) => "task_created",
        TaskStatusChanged(p::TaskStatusChanged) => "task_status_changed",
        TaskOutput(p::TaskOutput) => "task_output",
        TaskResultQueued(p::TaskResultQueued) => "task_result_queued",
        TaskReattached(p::TaskReattached) => "task_reattached",
    }
    /// What the agent waits on: waiting intents and timers.
    Wait(WaitEvent) {
        WaitingIntentCreated(p::WaitingIntentChanged) => "waiting_intent_created",
        WaitingIntentTriggered(p::WaitingIntentChanged) => "waiting_intent_triggered",
        WaitingIntentCancelled(p::WaitingIntentChanged) => "waiting_intent_cancelled",
        TimerCreated(p::TimerCreated) => "timer_created",
        TimerFired(p::TimerEnded) => "timer_fired",
        TimerCancelled(p::TimerEnded) => "timer_cancelled",
    }
    /// What reaches the agent from outside: external triggers and wake
    /// hints.
    Trigger(TriggerEvent) {
        WakeHintSubmitted(p::WakeHint) => "wake_hint_submitted",
        WakeHintCoalesced(p::WakeHint) => "wake_hint_coalesced",
        WakeHintIgnored(p::WakeHint) => "wake_hint_ignored",
        ExternalTriggerProvisioned(p::TriggerChanged) => "external_trigger_provisioned",
        ExternalTriggerRotated(p::TriggerChanged) => "external_trigger_rotated",
        ExternalTriggerRevoked(p::TriggerChanged) => "external_trigger_revoked",
        ExternalTriggerDelivered(p::TriggerDelivered) => "external_trigger_delivered",
    }
    /// An approval asked, reviewed and answered.
    Approval(ApprovalEvent) {
        ApprovalRequested(p::ApprovalChanged) => "approval_requested",
        ApprovalReviewed(p::ApprovalChanged) => "approval_reviewed",
        ApprovalGranted(p::ApprovalChanged) => "approval_granted",
        ApprovalDenied(p::ApprovalChanged) => "approval_denied",
    }
    /// The workspace and default policies, and the operator's approval of
    /// what a repository proposes for itself (a reviewer policy, hooks).
    Policy(PolicyEvent) {
        WorkspacePolicyChanged(p::WorkspacePolicyChanged) => "workspace_policy_changed",
        DefaultPolicyChanged(p::DefaultPolicy) => "default_policy_changed",
        ProposalApproved(crate::model::proposal::ProposalApproval) => "proposal_approved",
    }
    /// MCP servers: approved, reviewed, switched, started, failed, stopped.
    Mcp(McpEvent) {
        McpServerApproved(crate::model::mcp::McpApproval) => "mcp_server_approved",
        McpServerReviewed(crate::model::review::McpServerReview) => "mcp_server_reviewed",
        McpServerSwitched(crate::model::mcp::McpSwitch) => "mcp_server_switched",
        McpServerStarted(crate::model::mcp::McpServerStarted) => "mcp_server_started",
        McpServerFailed(crate::model::mcp::McpServerFailed) => "mcp_server_failed",
        McpServerStopped(crate::model::mcp::McpServerStopped) => "mcp_server_stopped",
    }
    /// The runtime: started and stopped, configuration, hooks, retention
    /// and history lost.
    Runtime(RuntimeEvent) {
        StorePruned(p::AgentPruned) => "store_pruned",
        HistoryLost(p::HistoryLost) => "history_lost",
        RuntimeStarted(p::RuntimeStarted) => "runtime_started",
        RuntimeStopped(p::RuntimeStopped) => "runtime_stopped",
        ConfigReloaded(p::ConfigReloaded) => "config_reloaded",
        HookRan(p::HookRan) => "hook_ran",
    }
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

    #[test]
    fn an_event_is_of_its_kinds_family_unless_unreadable() {
        let payload = serde_json::json!({ "message_id": "m1", "from": "queued", "queue_status": "processed" });
        let settled = Event::decode("message_processed", &payload);
        assert!(matches!(
            settled.family(),
            Family::Message(MessageEvent::MessageProcessed(p)) if p.message_id == "m1"
        ));
        let unreadable = Event::decode("message_processed", &serde_json::json!([1]));
        assert!(matches!(unreadable, Event::Unreadable { .. }));
        assert_eq!(
            unreadable.family(),
            Family::Unreadable,
            "its payload cannot be read"
        );
        assert_eq!(
            Event::decode("no_such_kind", &payload).family(),
            Family::Unreadable
        );
    }

    /// Kinds no flow of the test suite records yet, so no golden sample
    /// exists: the reserved kinds, and kinds only reachable through APIs
    /// the suite does not drive end to end. A new sample must shrink this.
    const NOT_SAMPLED: &[EventKind] = &[
        EventKind::MessageDropped,
        EventKind::TaskOutput,
        EventKind::TimerCancelled,
        EventKind::RuntimeStopped,
        EventKind::WorkItemRecheckDue,
    ];

    /// The golden samples in tests/fixtures/events (one real event per
    /// kind, written by the integration suite with
    /// HOLON_UPDATE_EVENT_FIXTURES=1): each reads as its typed payload and
    /// encodes back to exactly the same JSON, so a renamed or retyped
    /// field shows up here and in the fixture's diff.
    #[test]
    fn golden_samples_read_typed_and_encode_back_unchanged() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/events");
        let mut sampled = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let record: crate::model::event::EventRecord =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let typed = record.event();
            let kind = typed
                .kind()
                .unwrap_or_else(|| panic!("{}: unknown kind {}", path.display(), record.kind));
            assert!(
                !matches!(typed, Event::Unreadable { .. }),
                "{}: {typed:?}",
                path.display()
            );
            assert_eq!(typed.payload(), record.payload, "{}", path.display());
            assert_eq!(
                path.file_stem().and_then(|s| s.to_str()),
                Some(kind.as_str())
            );
            sampled.push(kind);
        }
        for kind in EventKind::ALL {
            let has = sampled.contains(kind);
            let exempt = NOT_SAMPLED.contains(kind);
            assert!(has || exempt, "no golden sample of {kind}");
            assert!(
                !(has && exempt),
                "{kind} has a sample now: drop it from NOT_SAMPLED"
            );
        }
    }

    /// docs/events.md names every field of every sampled payload on its
    /// kind's row, so the page cannot drift from the types.
    #[test]
    fn the_events_page_names_every_payload_field() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("docs/events.md")).unwrap();
        let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with("| `")).collect();
        let mut missing = Vec::new();
        for entry in std::fs::read_dir(root.join("tests/fixtures/events"))
            .into_iter()
            .flatten()
        {
            let Ok(entry) = entry else { continue };
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let Ok(record) = serde_json::from_str::<crate::model::event::EventRecord>(&text) else {
                continue;
            };
            let tag = format!("`{}`", record.kind);
            let Some(row) = rows
                .iter()
                .find(|r| r.split('|').nth(1).is_some_and(|c| c.contains(&tag)))
            else {
                missing.push(format!("{}: no row", record.kind));
                continue;
            };
            for key in record
                .payload
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys())
            {
                if !row.contains(&format!("`{key}`")) {
                    missing.push(format!("{}.{key}", record.kind));
                }
            }
        }
        missing.sort();
        assert!(
            missing.is_empty(),
            "docs/events.md does not name: {missing:#?}"
        );
    }

    #[test]
    fn an_unknown_kind_and_a_misfit_payload_are_told_apart_and_never_panic() {
        let unknown = Event::decode("made_by_a_newer_runtime", &serde_json::json!({ "x": 1 }));
        assert_eq!(
            unknown,
            Event::Unknown {
                kind: "made_by_a_newer_runtime".into()
            }
        );
        let misfit = Event::decode("turn_started", &serde_json::json!({ "run_id": 7 }));
        assert!(matches!(
            misfit,
            Event::Unreadable {
                kind: EventKind::TurnStarted,
                ..
            }
        ));
        assert_eq!(misfit.kind(), Some(EventKind::TurnStarted));
    }
}
