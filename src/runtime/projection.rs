//! Building the live `SchedulerProjection` from the store. Reads current
//! state only — the dequeue index, the dequeued, open-work-item,
//! active-task and active-timer indexes, the candidate tick keys — so a decision costs the
//! same whether the agent has ten events or ten million.

use crate::model::approval::ApprovalRecord;
use std::collections::BTreeSet;

use crate::model::agent::AgentRecord;
use crate::model::decision::SystemTickReason;
use crate::model::message::MessageEnvelope;
use crate::model::task::TaskRecord;
use crate::model::waiting::TimerRecord;
use crate::model::waiting::TimerStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::work::WorkItemRecord;
use crate::runtime::queue::QueueEntry;
use crate::runtime::scheduler::{
    wake_hint_tick_key, work_queue_tick_key, ProjectionInputs, QueuedMessage, SchedulerProjection,
    ToolExecutionRef,
};
use crate::store::{Index, Keyed, ReadCtx, StoreError};

/// The agent record with its projection.
pub struct LiveProjection {
    pub agent: AgentRecord,
    pub projection: SchedulerProjection,
    pub work_items: Vec<WorkItemRecord>,
    pub timers: Vec<TimerRecord>,
}

impl LiveProjection {
    /// How long until the next timer, work-item recheck or budget resume
    /// is due (clock time), if any.
    pub(crate) fn next_deadline(&self, now_ms: i64) -> Option<std::time::Duration> {
        let timers = self
            .timers
            .iter()
            .filter(|t| t.status == TimerStatus::Active)
            .map(|t| t.fire_at_ms);
        let rechecks = self.work_items.iter().filter_map(recheck_at_ms);
        let budget = crate::runtime::budget::resumes_at_ms(&self.agent, now_ms);
        timers.chain(rechecks).chain(budget).min().map(|at| {
            std::time::Duration::from_millis(u64::try_from(at.saturating_sub(now_ms)).unwrap_or(0))
        })
    }
}

/// When a blocked work item is due to be looked at again.
pub(crate) fn recheck_at_ms(w: &WorkItemRecord) -> Option<i64> {
    if w.blocked_by.is_none() || w.recheck_consumed_at.is_some() {
        return None;
    }
    w.recheck_at
        .as_deref()
        .and_then(crate::runtime::scheduler::parse_ts_ms)
}

/// Queued messages read in full for a decision (the rest are counted). A
/// decision takes the first (the queue is kept in dequeue order); the
/// others only name pending interjections in its evidence (a running turn
/// reads its interjections from the queue itself). Each is decoded from
/// its admission event, so a long head costs every decision of an agent
/// with a deep queue (a hundred busy agents with full queues spent a fifth
/// of their runtime's time here at 256).
pub const QUEUE_HEAD: usize = 32;

fn load_ids<T: serde::de::DeserializeOwned>(
    rx: &ReadCtx,
    which: Keyed,
    agent_id: &str,
    ids: &[String],
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(r) = rx.get(which, agent_id, id)? {
            out.push(r);
        }
    }
    Ok(out)
}

/// The envelopes of these entries' messages, from their `message_admitted`
/// events (read together, so a run of them shares its blocks) or, for
/// entries older than that, from the `messages` table.
pub(crate) fn envelopes_of(
    rx: &ReadCtx,
    agent_id: &str,
    entries: &[QueueEntry],
) -> Result<Vec<MessageEnvelope>, StoreError> {
    let seqs: Vec<u64> = entries.iter().filter_map(|e| e.admitted_seq).collect();
    let mut events = rx.events_at(agent_id, &seqs)?.into_iter();
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let found = crate::runtime::queue::envelope_of(
            entry,
            |_| Ok(events.next().flatten()),
            || rx.get(Keyed::Messages, agent_id, &entry.message_id),
        )?;
        out.extend(found);
    }
    Ok(out)
}

/// A recorded tool execution (ledger row).
#[derive(Debug, Clone, serde::Deserialize)]
struct ToolRow {
    id: String,
    #[serde(default)]
    message_id: Option<String>,
}

/// The tool-execution key just below every execution recorded since the
/// oldest of `message_ids` was admitted (`tool_<its millisecond>`): ids are
/// `prefix_<UUIDv7 hex>`, which sort by creation time. `None` (read them
/// all) when an id has another shape.
fn executions_since(message_ids: &[String]) -> Option<String> {
    let millis = |id: &String| {
        let hex = id.strip_prefix("msg_")?;
        (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| hex[..12].to_owned())
    };
    let stamps: Option<Vec<String>> = message_ids.iter().map(millis).collect();
    stamps?.into_iter().min().map(|ms| format!("tool_{ms}"))
}

pub fn load(
    rx: &ReadCtx,
    agent_id: &str,
    now_ms: i64,
) -> Result<Option<LiveProjection>, StoreError> {
    let Some(agent) = rx.agent::<AgentRecord>(agent_id)? else {
        return Ok(None);
    };
    let dequeued = rx.index_list(Index::Dequeued, agent_id)?;
    let mut ids: Vec<String> = dequeued.clone();
    // The queue's head in dequeue order is read in full; the rest only by
    // id (a paused agent may hold tens of thousands).
    let mut queued: Vec<String> = rx
        .queue_pending(agent_id)?
        .into_iter()
        .map(|(_, _, id)| id)
        .collect();
    let beyond = queued.split_off(queued.len().min(QUEUE_HEAD));
    ids.extend(queued);
    let entries: Vec<QueueEntry> = load_ids(rx, Keyed::QueueEntries, agent_id, &ids)?;
    let envelopes = envelopes_of(rx, agent_id, &entries)?;
    // By id, not by search: a deep queue (thousands waiting while the
    // agent is paused) must not make each decision quadratic.
    let by_id: std::collections::HashMap<&str, &MessageEnvelope> =
        envelopes.iter().map(|e| (e.id.as_str(), e)).collect();
    let queue: Vec<QueuedMessage<'_>> = entries
        .iter()
        .filter_map(|entry| {
            by_id
                .get(entry.message_id.as_str())
                .map(|envelope| QueuedMessage { entry, envelope })
        })
        .collect();
    let open_ids = rx.index_list(Index::OpenWorkItems, agent_id)?;
    let work_items: Vec<WorkItemRecord> = load_ids(rx, Keyed::WorkItems, agent_id, &open_ids)?;
    let task_ids = rx.index_list(Index::ActiveTasks, agent_id)?;
    let tasks: Vec<TaskRecord> = load_ids(rx, Keyed::Tasks, agent_id, &task_ids)?;
    let intents: Vec<WaitingIntentRecord> = rx.list(Keyed::WaitingIntents, agent_id)?;
    // Active timers, plus any timer a pending message came from (the
    // trigger's own wait, which the scheduler matches it against).
    let mut timer_ids = rx.index_list(Index::ActiveTimers, agent_id)?;
    for env in &envelopes {
        if let Some(id) = env.timer_id() {
            if !timer_ids.contains(&id) {
                timer_ids.push(id);
            }
        }
    }
    let timers: Vec<TimerRecord> = load_ids(rx, Keyed::Timers, agent_id, &timer_ids)?;
    let tool_executions: Vec<ToolExecutionRef> = if dequeued.is_empty() {
        Vec::new()
    } else {
        // Only the executions recorded since the oldest message in flight
        // was admitted: ids are time-ordered, so the read does not grow
        // with the agent's history.
        let since = executions_since(&dequeued);
        rx.list_recent_after::<ToolRow>(
            Keyed::ToolExecutions,
            agent_id,
            since.as_deref(),
            usize::MAX,
        )?
        .0
        .into_iter()
        .filter(|t| t.message_id.as_ref().is_some_and(|m| dequeued.contains(m)))
        .map(|t| ToolExecutionRef {
            id: t.id,
            message_id: t.message_id,
        })
        .collect()
    };
    let mut emitted = BTreeSet::new();
    let mut candidates: Vec<String> = Vec::new();
    for w in &work_items {
        for reason in [
            SystemTickReason::ContinueActive,
            SystemTickReason::QueuedAvailable,
        ] {
            candidates.push(work_queue_tick_key(reason, &w.id, w.revision));
        }
    }
    if let Some(hint) = &agent.pending_wake_hint {
        candidates.push(wake_hint_tick_key(hint));
    }
    for key in candidates {
        if rx.index_contains(Index::TickKeys, agent_id, &key)? {
            emitted.insert(key);
        }
    }
    // Pending, or granted with the call still running: either way the
    // agent waits for its outcome (no work-queue tick starts a turn that
    // would not see it).
    let approval_ids = rx.index_list(Index::OpenApprovals, agent_id)?;
    let approvals: Vec<ApprovalRecord> = load_ids(rx, Keyed::Approvals, agent_id, &approval_ids)?;
    let projection = SchedulerProjection::build(
        ProjectionInputs {
            agent: &agent,
            queue: &queue,
            work_items: &work_items,
            tasks: &tasks,
            waiting_intents: &intents,
            timers: &timers,
            tool_executions: &tool_executions,
            emitted_tick_keys: &emitted,
            last_turn_terminal: agent.last_turn_terminal,
            runtime_error: agent.runtime_error.as_deref(),
            pending_approvals: &approvals,
            queued_beyond: &beyond,
        },
        now_ms,
    );
    Ok(Some(LiveProjection {
        agent,
        projection,
        work_items,
        timers,
    }))
}

#[cfg(test)]
mod tests {
    use super::executions_since;

    #[test]
    fn executions_are_read_from_the_oldest_message_in_flight() {
        let older = crate::new_id("msg");
        std::thread::sleep(std::time::Duration::from_millis(3));
        let newer = crate::new_id("msg");
        let tool = crate::new_id("tool");
        let since = executions_since(&[newer.clone(), older.clone()]).unwrap_or_default();
        assert_eq!(since, format!("tool_{}", &older[4..16]));
        // A tool execution recorded after both sorts above the bound, one
        // recorded before the oldest below it.
        assert!(tool.as_str() > since.as_str());
        assert!(format!("tool_{}", "0".repeat(32)).as_str() < since.as_str());
        // An id of another shape: read them all.
        assert_eq!(executions_since(&[older, "replayed-1".into()]), None);
    }
}
