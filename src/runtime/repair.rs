//! Rebuilding the runtime's indexes from the records they index, after
//! `holon store salvage` copied what it could of a damaged store: an index
//! row whose record was lost would point at nothing, and a record whose
//! index row was lost would never be scheduled. Each index is set to
//! exactly what its records say:
//!
//! - the dequeue order (`queue_pending`) and `idx_dequeued`: queue entries
//!   `Queued` and `Dequeued`;
//! - `idx_open_work_items`: work items still open;
//! - `idx_active_tasks`: tasks not finished;
//! - `idx_active_timers`: timers still active;
//! - `idx_open_approvals`: approvals still pending.
//!
//! `idx_child_tasks` and `idx_tick_keys` record history no record holds
//! and are kept as salvaged.

use std::collections::BTreeSet;

use crate::model::approval::{ApprovalRecord, ApprovalStatus};
use crate::model::message::QueueEntryStatus;
use crate::model::waiting::{TimerRecord, TimerStatus};
use crate::model::work::{WorkItemRecord, WorkItemState};
use crate::runtime::queue::QueueEntry;
use crate::runtime::tasks::TaskRecord;
use crate::store::{Index, Keyed, Store, StoreError, WriteCtx};

/// Index rows added or removed, and records that could not be read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    pub changed: u64,
    pub problems: Vec<String>,
}

/// Rebuild every derivable index of every agent in one commit.
pub async fn rebuild_indexes(store: &Store) -> Result<Rebuilt, StoreError> {
    store
        .write(|tx| {
            let mut out = Rebuilt::default();
            for agent in tx.agent_ids()? {
                rebuild_agent(tx, &agent, &mut out)?;
            }
            Ok(out)
        })
        .await
}

/// The records of `which`, or `None` and a problem when they do not all
/// decode: the index is then left as salvaged rather than emptied.
fn records<T: serde::de::DeserializeOwned>(
    tx: &WriteCtx<'_>,
    which: Keyed,
    agent: &str,
    out: &mut Rebuilt,
) -> Option<Vec<T>> {
    tx.list(which, agent)
        .map_err(|e| {
            out.problems.push(format!(
                "agent {agent}: its {} could not all be read, so their index was left as \
                 salvaged: {e}",
                which.name()
            ));
        })
        .ok()
}

/// Make `index` for `agent` hold exactly `want`.
fn set_index(
    tx: &mut WriteCtx<'_>,
    index: Index,
    agent: &str,
    want: BTreeSet<String>,
    out: &mut Rebuilt,
) -> Result<(), StoreError> {
    let have: BTreeSet<String> = tx.index_list(index, agent)?.into_iter().collect();
    for extra in have.difference(&want) {
        tx.index_remove(index, agent, extra)?;
        out.changed += 1;
    }
    for missing in want.difference(&have) {
        tx.index_insert(index, agent, missing)?;
        out.changed += 1;
    }
    Ok(())
}

/// Set `index` to the ids of the `which` records that `member` admits;
/// left as salvaged when the records cannot all be read.
fn index_from<T: serde::de::DeserializeOwned>(
    tx: &mut WriteCtx<'_>,
    agent: &str,
    (which, index): (Keyed, Index),
    member: impl Fn(&T) -> Option<String>,
    out: &mut Rebuilt,
) -> Result<(), StoreError> {
    match records::<T>(tx, which, agent, out) {
        Some(all) => set_index(
            tx,
            index,
            agent,
            all.iter().filter_map(member).collect(),
            out,
        ),
        None => Ok(()),
    }
}

fn rebuild_agent(tx: &mut WriteCtx<'_>, agent: &str, out: &mut Rebuilt) -> Result<(), StoreError> {
    if let Some(entries) = records::<QueueEntry>(tx, Keyed::QueueEntries, agent, out) {
        rebuild_queue(tx, agent, &entries, out)?;
    }
    let open_work = |w: &WorkItemRecord| (w.state == WorkItemState::Open).then(|| w.id.clone());
    index_from(
        tx,
        agent,
        (Keyed::WorkItems, Index::OpenWorkItems),
        open_work,
        out,
    )?;
    let active_task = |t: &TaskRecord| (!t.status.is_terminal()).then(|| t.id.clone());
    index_from(
        tx,
        agent,
        (Keyed::Tasks, Index::ActiveTasks),
        active_task,
        out,
    )?;
    let active_timer = |t: &TimerRecord| (t.status == TimerStatus::Active).then(|| t.id.clone());
    index_from(
        tx,
        agent,
        (Keyed::Timers, Index::ActiveTimers),
        active_timer,
        out,
    )?;
    let pending = |a: &ApprovalRecord| (a.status == ApprovalStatus::Pending).then(|| a.id.clone());
    index_from(
        tx,
        agent,
        (Keyed::Approvals, Index::OpenApprovals),
        pending,
        out,
    )
}

/// The dequeue order and `idx_dequeued` from the queue entries.
fn rebuild_queue(
    tx: &mut WriteCtx<'_>,
    agent: &str,
    entries: &[QueueEntry],
    out: &mut Rebuilt,
) -> Result<(), StoreError> {
    let dequeued = entries
        .iter()
        .filter(|e| e.status == QueueEntryStatus::Dequeued)
        .map(|e| e.message_id.clone())
        .collect();
    set_index(tx, Index::Dequeued, agent, dequeued, out)?;
    let pending: BTreeSet<(u8, u64, String)> = entries
        .iter()
        .filter(|e| e.status == QueueEntryStatus::Queued)
        .map(|e| (e.priority.band(), e.admission_seq, e.message_id.clone()))
        .collect();
    let have: BTreeSet<(u8, u64, String)> = tx.queue_pending(agent)?.into_iter().collect();
    for (band, seq, _) in have.difference(&pending) {
        tx.queue_remove(agent, *band, *seq)?;
        out.changed += 1;
    }
    for (band, seq, id) in pending.difference(&have) {
        tx.queue_push(agent, *band, *seq, id)?;
        out.changed += 1;
    }
    Ok(())
}

/// What a salvage lost, found and recorded, before the indexes are
/// rebuilt: per agent, the events its ledger no longer holds between
/// where it starts and its last sequence, and the queue entries whose
/// message (its `message_admitted` event) is gone, which are dropped. An
/// agent with a loss gets a `history_lost` event and the ranges on its
/// record, so the salvaged store verifies sound with its losses known.
/// Returns what was recorded, per agent.
pub async fn record_losses(
    store: &Store,
    source: &str,
) -> Result<Vec<(String, crate::model::retention::HistoryLost)>, StoreError> {
    use crate::model::retention::{gaps, subtract, HistoryLost, LostRange};
    const PAGE: usize = 5_000;
    let rx = store.read()?;
    let mut found = Vec::new();
    let agents: Vec<serde_json::Value> = rx.agents()?;
    for record in &agents {
        let Some(agent) = record["id"].as_str() else {
            continue;
        };
        let entries: Vec<QueueEntry> = rx.list(Keyed::QueueEntries, agent).unwrap_or_default();
        // Events lost at the very end of a ledger leave no gap: the next
        // event takes the next number after the last one kept, so they
        // are not recorded (a queue entry naming one is still dropped).
        let (start, last) = (rx.ledger_start(agent)?, rx.last_seq(agent)?);
        let mut present = BTreeSet::new();
        let mut next = start;
        while next <= last {
            let page = rx.events(agent, next, PAGE)?;
            let Some(end) = page.last().map(|e| e.event_seq) else {
                break;
            };
            present.extend(page.iter().map(|e| e.event_seq));
            next = end + 1;
        }
        // A loss recorded before (a store salvaged twice) is not new.
        let known: Vec<LostRange> =
            serde_json::from_value(record["lost_events"].clone()).unwrap_or_default();
        let ranges = subtract(&gaps(start, last, present.iter().copied()), &known);
        let dropped: Vec<String> = entries
            .iter()
            .filter(|e| {
                e.admitted_seq
                    .is_some_and(|seq| seq >= start && !present.contains(&seq))
            })
            .map(|e| e.message_id.clone())
            .collect();
        if !ranges.is_empty() || !dropped.is_empty() {
            let lost = HistoryLost {
                ranges,
                dropped_queue_entries: dropped,
                source: source.to_owned(),
            };
            found.push((agent.to_owned(), lost));
        }
    }
    drop(rx);
    let recorded = found.clone();
    store
        .write(move |tx| {
            use crate::protocol::events::{new_event, Event};
            for (agent, lost) in &found {
                for id in &lost.dropped_queue_entries {
                    tx.remove(Keyed::QueueEntries, agent, id)?;
                }
                if let Some(mut rec) = tx.get_agent::<crate::runtime::agent::AgentRecord>(agent)? {
                    rec.lost_events.extend(lost.ranges.iter().copied());
                    tx.put_agent(agent, &rec)?;
                }
                let provenance = crate::store::Provenance {
                    source: Some("salvage".into()),
                    ..crate::store::Provenance::default()
                };
                tx.append_event(new_event(
                    agent,
                    provenance,
                    Event::HistoryLost(lost.clone()),
                ))?;
            }
            Ok(())
        })
        .await?;
    Ok(recorded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::message::Priority;
    use crate::store::StoreOptions;

    #[tokio::test]
    async fn indexes_are_set_to_what_the_records_say() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
        store
            .write(|tx| {
                tx.put_agent("a", &serde_json::json!({ "id": "a" }))?;
                let entry = QueueEntry {
                    message_id: "msg_1".into(),
                    agent_id: "a".into(),
                    priority: Priority::Normal,
                    status: QueueEntryStatus::Queued,
                    admission_seq: 7,
                    enqueued_at: tx.now_ts(),
                    updated_at: tx.now_ts(),
                    admitted_seq: Some(1),
                };
                // A queued entry the dequeue order lost, and an index row
                // whose task was lost.
                tx.put(Keyed::QueueEntries, "a", "msg_1", &entry)?;
                tx.index_insert(Index::ActiveTasks, "a", "task_gone")
            })
            .await
            .unwrap();
        let rebuilt = rebuild_indexes(&store).await.unwrap();
        assert_eq!(rebuilt.changed, 2, "{rebuilt:?}");
        assert!(rebuilt.problems.is_empty(), "{rebuilt:?}");
        let rx = store.read().unwrap();
        assert_eq!(
            rx.queue_pending("a").unwrap(),
            [(Priority::Normal.band(), 7, "msg_1".to_owned())]
        );
        assert!(rx.index_list(Index::ActiveTasks, "a").unwrap().is_empty());
        drop(rx);
        // Already right: nothing changes.
        assert_eq!(rebuild_indexes(&store).await.unwrap().changed, 0);
    }
}
