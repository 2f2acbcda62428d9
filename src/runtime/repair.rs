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
use crate::model::task::TaskRecord;
use crate::model::waiting::{TimerRecord, TimerStatus};
use crate::model::work::{WorkItemRecord, WorkItemState};
use crate::runtime::queue::QueueEntry;
use crate::store::{Index, Keyed, Store, StoreError, WriteCtx};

/// The keyed table a record found on a page of a damaged store belongs to,
/// from its content (what `holon store salvage` hands the store's page
/// scan): the record must decode as the table's type and name the key's id
/// (and agent, where it names one). Where more than one table's type would
/// take it, the id's prefix decides; where none does, it is no record.
pub fn classify_record(agent: &str, id: &str, json: &[u8]) -> Option<Keyed> {
    use serde::de::DeserializeOwned;
    fn fits<T: DeserializeOwned>(json: &[u8], ok: impl Fn(&T) -> bool) -> bool {
        serde_json::from_slice::<T>(json).is_ok_and(|r| ok(&r))
    }
    // `method:request_id`: an answered client request, whatever its answer.
    if id.contains(':') {
        return serde_json::from_slice::<serde::de::IgnoredAny>(json)
            .is_ok()
            .then_some(Keyed::ClientRequests);
    }
    let candidates = [
        (
            Keyed::QueueEntries,
            fits::<QueueEntry>(json, |r| r.message_id == id && r.agent_id == agent),
        ),
        (
            Keyed::Messages,
            fits::<crate::model::message::MessageEnvelope>(json, |r| {
                r.id == id && r.agent_id == agent
            }),
        ),
        (
            Keyed::WorkItems,
            fits::<WorkItemRecord>(json, |r| r.id == id && r.agent_id == agent),
        ),
        (
            Keyed::Tasks,
            fits::<TaskRecord>(json, |r| r.id == id && r.agent_id == agent),
        ),
        (
            Keyed::WaitingIntents,
            fits::<crate::model::waiting::WaitingIntentRecord>(json, |r| {
                r.id == id && r.agent_id == agent
            }),
        ),
        (
            Keyed::Timers,
            fits::<TimerRecord>(json, |r| r.id == id && r.agent_id == agent),
        ),
        (
            Keyed::Transcript,
            fits::<crate::model::transcript::TranscriptEntry>(json, |r| {
                r.id == id && r.agent_id == agent
            }),
        ),
        (
            Keyed::ContextEpisodes,
            fits::<crate::model::context::ContextEpisode>(json, |r| r.id == id),
        ),
        (
            Keyed::ExternalTriggers,
            fits::<crate::runtime::triggers::ExternalTriggerRecord>(json, |r| {
                r.descriptor.external_trigger_id == id
            }),
        ),
        (
            Keyed::Approvals,
            fits::<ApprovalRecord>(json, |r| r.id == id && r.agent_id == agent),
        ),
        (
            Keyed::ToolExecutions,
            fits::<serde_json::Value>(json, |r| {
                r["id"] == id && r["tool_name"].is_string() && r["call_id"].is_string()
            }),
        ),
    ];
    let mut fitting = candidates.iter().filter(|(_, fits)| *fits).map(|(k, _)| *k);
    let first = fitting.next()?;
    let rest: Vec<Keyed> = fitting.collect();
    if rest.is_empty() {
        return Some(first);
    }
    let prefix = |k: Keyed| match k {
        Keyed::WorkItems => "work_",
        Keyed::Tasks => "task_",
        Keyed::WaitingIntents => "wait_",
        Keyed::Timers => "timer_",
        Keyed::Transcript => "tr_",
        Keyed::ToolExecutions => "tool_",
        Keyed::ContextEpisodes => "ep_",
        Keyed::ExternalTriggers => "trg_",
        Keyed::Approvals => "apr_",
        _ => "msg_",
    };
    let mut by_prefix = std::iter::once(first)
        .chain(rest)
        .filter(|k| id.starts_with(prefix(*k)));
    match (by_prefix.next(), by_prefix.next()) {
        (Some(k), None) => Some(k),
        _ => None,
    }
}

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
    // An agent whose record was lost while its history was not: the
    // record is made anew (with the defaults), so its history is seen.
    let orphans: BTreeSet<String> = {
        let rx = store.read()?;
        let agents: Vec<serde_json::Value> = rx.agents()?;
        let known: BTreeSet<&str> = agents.iter().filter_map(|a| a["id"].as_str()).collect();
        let ledger = rx.ledger_agents()?;
        ledger
            .into_iter()
            .filter(|a| !known.contains(a.as_str()))
            .collect()
    };
    if !orphans.is_empty() {
        let made = orphans.clone();
        store
            .write(move |tx| {
                for agent in &made {
                    let created = tx.now_ts();
                    let mut record = crate::model::agent::AgentRecord::new(agent, created);
                    // What it was allowed to do is lost with its record: it
                    // waits for the operator to look before it runs again.
                    record.status = crate::model::agent::AgentStatus::Paused;
                    tx.put_agent(agent, &record)?;
                }
                Ok(())
            })
            .await?;
    }
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
        let agent_record_lost = orphans.contains(agent);
        if !ranges.is_empty() || !dropped.is_empty() || agent_record_lost {
            let lost = HistoryLost {
                ranges,
                dropped_queue_entries: dropped,
                source: source.to_owned(),
                agent_record_lost,
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
                if let Some(mut rec) = tx.get_agent::<crate::model::agent::AgentRecord>(agent)? {
                    rec.lost_events.extend(lost.ranges.iter().copied());
                    tx.put_agent(agent, &rec)?;
                }
                let provenance = crate::model::event::Provenance {
                    source: Some("salvage".into()),
                    ..crate::model::event::Provenance::default()
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

    /// A salvage that found an agent's history but not its record: the
    /// record is made anew and the event says so.
    #[tokio::test]
    async fn an_agent_whose_record_was_lost_is_made_anew() {
        use crate::protocol::events::{new_event, Event};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
        store
            .write(|tx| {
                for _ in 0..3 {
                    let note = Event::HistoryLost(crate::model::retention::HistoryLost::default());
                    tx.append_event(new_event("orphan", Default::default(), note))?;
                }
                Ok(())
            })
            .await
            .unwrap();
        assert!(store
            .read()
            .unwrap()
            .agent::<serde_json::Value>("orphan")
            .unwrap()
            .is_none());
        let lost = record_losses(&store, "salvage of x").await.unwrap();
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert!(lost[0].1.agent_record_lost);
        let rx = store.read().unwrap();
        let record: crate::model::agent::AgentRecord = rx.agent("orphan").unwrap().unwrap();
        assert_eq!(record.id, "orphan");
        assert_eq!(record.status, crate::model::agent::AgentStatus::Paused);
        let events = rx.events("orphan", 0, 100).unwrap();
        assert_eq!(events.len(), 4);
        assert_eq!(events[3].payload["agent_record_lost"], true);
        drop(rx);
        // Salvaged again: nothing new to say.
        assert!(record_losses(&store, "salvage of x")
            .await
            .unwrap()
            .is_empty());
    }

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
