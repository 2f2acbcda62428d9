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

fn rebuild_agent(tx: &mut WriteCtx<'_>, agent: &str, out: &mut Rebuilt) -> Result<(), StoreError> {
    if let Some(entries) = records::<QueueEntry>(tx, Keyed::QueueEntries, agent, out) {
        rebuild_queue(tx, agent, &entries, out)?;
    }
    if let Some(work) = records::<WorkItemRecord>(tx, Keyed::WorkItems, agent, out) {
        let open = work
            .into_iter()
            .filter(|w| w.state == WorkItemState::Open)
            .map(|w| w.id)
            .collect();
        set_index(tx, Index::OpenWorkItems, agent, open, out)?;
    }
    if let Some(tasks) = records::<TaskRecord>(tx, Keyed::Tasks, agent, out) {
        let active = tasks
            .into_iter()
            .filter(|t| !t.status.is_terminal())
            .map(|t| t.id)
            .collect();
        set_index(tx, Index::ActiveTasks, agent, active, out)?;
    }
    if let Some(timers) = records::<TimerRecord>(tx, Keyed::Timers, agent, out) {
        let active = timers
            .into_iter()
            .filter(|t| t.status == TimerStatus::Active)
            .map(|t| t.id)
            .collect();
        set_index(tx, Index::ActiveTimers, agent, active, out)?;
    }
    if let Some(approvals) = records::<ApprovalRecord>(tx, Keyed::Approvals, agent, out) {
        let open = approvals
            .into_iter()
            .filter(|a| a.status == ApprovalStatus::Pending)
            .map(|a| a.id)
            .collect();
        set_index(tx, Index::OpenApprovals, agent, open, out)?;
    }
    Ok(())
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
