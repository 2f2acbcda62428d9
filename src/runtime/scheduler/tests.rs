//! Pure scheduler tests. `World` builds typed records and projects them;
//! `gating` covers stop/pause/turn gating, message selection, replay
//! classification and the continuation hand-off; `work_queue` covers
//! readiness, waits and tick idempotency.

mod gating;
mod work_queue;

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::model::agent::AgentRecord;
use crate::model::decision::TurnTerminalKind;
use crate::model::message::{MessageBody, MessageEnvelope, MessageKind, MessageOrigin, Priority};
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::waiting::TimerRecord;
use crate::model::waiting::TimerStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingScope;
use crate::model::work::{PlanStatus, WorkItemRecord, WorkItemState};
use crate::runtime::queue::QueueEntry;

pub(super) struct World {
    pub(super) agent: AgentRecord,
    pub(super) messages: Vec<MessageEnvelope>,
    pub(super) entries: Vec<QueueEntry>,
    pub(super) work: Vec<WorkItemRecord>,
    pub(super) tasks: Vec<TaskRecord>,
    pub(super) intents: Vec<WaitingIntentRecord>,
    pub(super) timers: Vec<TimerRecord>,
    pub(super) tools: Vec<ToolExecutionRef>,
    pub(super) keys: BTreeSet<String>,
    pub(super) last_turn: Option<TurnTerminalKind>,
}

pub(super) const NOW: i64 = 1_000_000;

pub(super) fn envelope(id: &str, kind: MessageKind, text: &str) -> MessageEnvelope {
    let origin = match kind {
        MessageKind::OperatorPrompt | MessageKind::Control => {
            MessageOrigin::Operator { actor_id: None }
        }
        MessageKind::TaskResult | MessageKind::TaskStatus => MessageOrigin::Task {
            task_id: "t".into(),
        },
        MessageKind::TimerTick => MessageOrigin::Timer {
            timer_id: "tm".into(),
        },
        MessageKind::ChannelEvent
        | MessageKind::WebhookEvent
        | MessageKind::CallbackEvent
        | MessageKind::SystemTick
        | MessageKind::BriefAck
        | MessageKind::BriefResult
        | MessageKind::InternalFollowup => MessageOrigin::System {
            subsystem: "test".into(),
        },
    };
    MessageEnvelope {
        id: id.into(),
        agent_id: "a".into(),
        created_at: String::new(),
        kind,
        trust: origin.default_trust(),
        authority_class: origin.authority_class(),
        origin,
        priority: Priority::Normal,
        trigger_kind: kind.trigger_kind(),
        work_item_id: None,
        task_id: None,
        source_refs: BTreeMap::new(),
        body: MessageBody::Text { text: text.into() },
        metadata: None,
        delivery_surface: None,
        admission_context: None,
        correlation_id: None,
        causation_id: None,
    }
}

impl World {
    pub(super) fn new() -> Self {
        World {
            agent: AgentRecord::new("a", String::new()),
            messages: Vec::new(),
            entries: Vec::new(),
            work: Vec::new(),
            tasks: Vec::new(),
            intents: Vec::new(),
            timers: Vec::new(),
            tools: Vec::new(),
            keys: BTreeSet::new(),
            last_turn: None,
        }
    }

    pub(super) fn msg(
        &mut self,
        id: &str,
        kind: MessageKind,
        pri: Priority,
        st: QueueEntryStatus,
    ) -> &mut MessageEnvelope {
        let seq = self.entries.len() as u64 + 1;
        self.entries.push(QueueEntry {
            message_id: id.into(),
            agent_id: "a".into(),
            priority: pri,
            status: st,
            admission_seq: seq,
            enqueued_at: String::new(),
            updated_at: String::new(),
            admitted_seq: None,
        });
        let mut env = envelope(id, kind, "hello");
        env.priority = pri;
        self.messages.push(env);
        let last = self.messages.len() - 1;
        &mut self.messages[last]
    }

    pub(super) fn prompt(&mut self, id: &str) {
        self.msg(
            id,
            MessageKind::OperatorPrompt,
            Priority::Normal,
            QueueEntryStatus::Queued,
        );
    }

    pub(super) fn work(&mut self, id: &str, revision: u64) -> &mut WorkItemRecord {
        self.work.push(WorkItemRecord {
            id: id.into(),
            agent_id: "a".into(),
            workspace_id: "agent_home".into(),
            objective: format!("objective {id}"),
            state: WorkItemState::Open,
            plan_status: PlanStatus::Ready,
            todo_list: Vec::new(),
            blocked_by: None,
            recheck_at: None,
            recheck_consumed_at: None,
            result_summary: None,
            revision,
            created_at: String::new(),
            updated_at: String::new(),
        });
        let last = self.work.len() - 1;
        &mut self.work[last]
    }

    pub(super) fn current(&mut self, id: &str, revision: u64) -> &mut WorkItemRecord {
        self.agent.current_work_item_id = Some(id.into());
        self.work(id, revision)
    }

    pub(super) fn task(
        &mut self,
        id: &str,
        status: TaskStatus,
        policy: WaitPolicy,
        item: Option<&str>,
    ) -> &mut TaskRecord {
        self.tasks.push(TaskRecord {
            id: id.into(),
            agent_id: "a".into(),
            kind: TaskKind::CommandTask,
            status,
            wait_policy: policy,
            work_item_id: item.map(str::to_owned),
            parent_message_id: None,
            summary: None,
            detail: Default::default(),
            created_at: String::new(),
            updated_at: String::new(),
            failure_artifact: None,
        });
        let last = self.tasks.len() - 1;
        &mut self.tasks[last]
    }

    pub(super) fn intent(&mut self, id: &str, item: Option<&str>) {
        self.intents.push(WaitingIntentRecord {
            id: id.into(),
            agent_id: "a".into(),
            status: WaitingIntentStatus::Active,
            scope: if item.is_some() {
                WaitingScope::WorkItem
            } else {
                WaitingScope::Agent
            },
            work_item_id: item.map(str::to_owned),
            source: Some("ci".into()),
            description: None,
            external_ref: None,
            external_trigger_id: None,
            trigger_count: 0,
            created_at: String::new(),
            updated_at: String::new(),
        });
    }

    pub(super) fn timer(&mut self, id: &str, fire_at_ms: i64, item: Option<&str>) {
        self.timers.push(TimerRecord {
            id: id.into(),
            agent_id: "a".into(),
            status: TimerStatus::Active,
            fire_at_ms,
            work_item_id: item.map(str::to_owned),
            reason: None,
            created_at: String::new(),
            updated_at: String::new(),
        });
    }

    pub(super) fn wake_hint(&mut self, generation: u64) {
        self.agent.pending_wake_hint = Some(PendingWakeHint {
            reason: "ci changed".into(),
            source: Some("ci".into()),
            waiting_intent_id: None,
            generation,
            coalesced_count: 0,
            received_at: String::new(),
            origin: Default::default(),
        });
    }

    pub(super) fn projection(&self) -> SchedulerProjection {
        let queue: Vec<QueuedMessage<'_>> = self
            .entries
            .iter()
            .zip(&self.messages)
            .map(|(entry, envelope)| QueuedMessage { entry, envelope })
            .collect();
        SchedulerProjection::build(
            ProjectionInputs {
                agent: &self.agent,
                queue: &queue,
                work_items: &self.work,
                tasks: &self.tasks,
                waiting_intents: &self.intents,
                timers: &self.timers,
                tool_executions: &self.tools,
                emitted_tick_keys: &self.keys,
                last_turn_terminal: self.last_turn,
                runtime_error: None,
                pending_approvals: &[],
                queued_beyond: &[],
            },
            NOW,
        )
    }

    pub(super) fn decide(&self) -> SchedulerDecision {
        decide(&self.projection(), SchedulerInput::Idle)
    }
}

pub(super) fn has(d: &SchedulerDecision, fact: &str) -> bool {
    d.evidence.iter().any(|e| e == fact)
}

/// A world with something for every rule: queued input, wake hint,
/// runnable current work, a blocking task, waits and timers.
pub(super) fn busy_world() -> World {
    let mut w = World::new();
    w.prompt("m1");
    w.wake_hint(1);
    w.current("w1", 1);
    w.work("w2", 1);
    w.task("t_block", TaskStatus::Running, WaitPolicy::Blocking, None);
    w.intent("i1", None);
    w.timer("tm1", NOW + 10, None);
    w
}
