//! Retention: removing the oldest part of each agent's history that
//! nothing current needs (`holon store prune`, `store.prune`, `[store]
//! retain_days`).
//!
//! What may go is decided here, from the records (the store only cuts):
//! - ledger events written before the cutoff, by whole sealed blocks,
//!   oldest first, stopping before the first event still needed: the
//!   admission of a message still queued or in flight, the latest brief,
//!   and everything since the oldest open work item, open wait, active
//!   timer, live task or child, and pending approval was created;
//! - transcript entries before the cutoff and behind the compaction
//!   boundary (what the model no longer reads verbatim; its summary stays
//!   in the context episodes);
//! - tool executions written before that same floor (so of settled
//!   messages only);
//! - settled queue entries whose `message_admitted` event was cut.
//!
//! Context episodes, current-state records and memory files are never
//! pruned. Each agent is pruned in its own write transactions (at most
//! `UNITS_PER_JOB` blocks each), each recording `store_pruned`: a prune
//! killed half-way leaves every agent either as it was or cut at a block
//! boundary with its event, and a rerun goes on from there.

use std::time::Instant;

use crate::model::agent::AgentRecord;
use crate::model::approval::ApprovalRecord;
use crate::model::event::Provenance;
use crate::model::retention::{AgentPruned, PruneBy, PruneReport};
use crate::model::task::TaskRecord;
use crate::model::waiting::{TimerRecord, WaitingIntentRecord, WaitingIntentStatus};
use crate::model::work::WorkItemRecord;
use crate::protocol::events::{new_event, Event};
use crate::runtime::queue::QueueEntry;
use crate::runtime::scheduler::parse_ts_ms;
use crate::store::prune::CutStop;
use crate::store::{Index, Keyed, Store, StoreError, WriteCtx};

/// Ledger units (sealed blocks) one write job cuts at most; a larger
/// backlog takes several jobs, so no commit holds the writer for long.
pub const UNITS_PER_JOB: usize = 2048;

/// Transcript entries, tool executions or queue entries one job removes
/// at most, of each.
pub const RECORDS_PER_JOB: usize = 8192;

/// The longest retention accepted, in days (about 100 years).
pub const MAX_DAYS: u32 = 36_500;

const DAY_MS: i64 = 86_400_000;

/// The cutoff for "older than `days` days" at `now_ms`.
pub fn cutoff_ms(now_ms: i64, days: u32) -> i64 {
    now_ms.saturating_sub(i64::from(days) * DAY_MS)
}

/// The smallest id with `prefix` minted at or after `ms`: every id
/// minted before `ms` sorts below it.
fn id_floor(prefix: &str, ms: i64) -> String {
    format!("{prefix}_{:012x}", ms.max(0))
}

/// The oldest thing still needed, as a time and a sequence, and what set
/// each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floor {
    /// Nothing written at or after this (epoch ms) goes.
    pub time_ms: i64,
    /// No event at or after this `event_seq` goes.
    pub seq: u64,
    /// What set the time floor, when it is not the cutoff itself.
    pub time_by: Option<String>,
    /// What set the sequence floor.
    pub seq_by: Option<String>,
}

impl Floor {
    pub fn new(cutoff_ms: i64) -> Floor {
        Floor {
            time_ms: cutoff_ms,
            seq: u64::MAX,
            time_by: None,
            seq_by: None,
        }
    }

    /// Something created at `ts` is still needed (an unreadable time
    /// holds everything: it is never guessed).
    pub fn hold_since(&mut self, ts: &str, what: impl FnOnce() -> String) {
        let ms = parse_ts_ms(ts).unwrap_or(i64::MIN);
        if ms < self.time_ms {
            self.time_ms = ms;
            self.time_by = Some(what());
        }
    }

    /// Event `seq` is still needed.
    pub fn hold_seq(&mut self, seq: u64, what: impl FnOnce() -> String) {
        if seq < self.seq {
            self.seq = seq;
            self.seq_by = Some(what());
        }
    }

    /// What ended a cut, in words (`None`: the cutoff itself, or nothing).
    pub fn held_by(&self, stop: Option<CutStop>) -> Option<String> {
        match stop? {
            CutStop::Kept => self.seq_by.clone(),
            CutStop::Young => self.time_by.clone(),
            CutStop::Newest => Some("the agent's newest events".to_owned()),
            CutStop::Unreadable => {
                Some("an event that does not decode (see the log; `holon store verify`)".to_owned())
            }
            CutStop::Batch | CutStop::End => None,
        }
    }
}

/// What current state still needs of the agent's history.
fn floor_of(tx: &WriteCtx<'_>, agent_id: &str, cutoff_ms: i64) -> Result<Floor, StoreError> {
    let mut floor = Floor::new(cutoff_ms);
    // Messages still queued (the head of each band is its oldest) or in
    // flight: their envelopes are their admission events.
    let mut live: Vec<String> = tx
        .queue_heads(agent_id)?
        .into_iter()
        .map(|(_, _, id)| id)
        .collect();
    live.extend(tx.index_list(Index::Dequeued, agent_id)?);
    for id in live {
        if let Some(entry) = tx.get::<QueueEntry>(Keyed::QueueEntries, agent_id, &id)? {
            let what = || format!("message {id} is still queued or in flight");
            if let Some(seq) = entry.admitted_seq {
                floor.hold_seq(seq, what);
            }
            floor.hold_since(&entry.enqueued_at, what);
        }
    }
    if let Some(brief) = tx
        .events_of_kind_latest(agent_id, "brief_created", 1)?
        .pop()
    {
        floor.hold_seq(brief.event_seq, || "the latest brief".to_owned());
    }
    for id in tx.index_list(Index::OpenWorkItems, agent_id)? {
        if let Some(w) = tx.get::<WorkItemRecord>(Keyed::WorkItems, agent_id, &id)? {
            floor.hold_since(&w.created_at, || format!("work item {id} is open"));
        }
    }
    for id in tx.index_list(Index::ActiveTasks, agent_id)? {
        if let Some(t) = tx.get::<TaskRecord>(Keyed::Tasks, agent_id, &id)? {
            floor.hold_since(&t.created_at, || format!("task {id} is live"));
        }
    }
    for id in tx.index_list(Index::ActiveTimers, agent_id)? {
        if let Some(t) = tx.get::<TimerRecord>(Keyed::Timers, agent_id, &id)? {
            floor.hold_since(&t.created_at, || format!("timer {id} is active"));
        }
    }
    for id in tx.index_list(Index::OpenApprovals, agent_id)? {
        if let Some(a) = tx.get::<ApprovalRecord>(Keyed::Approvals, agent_id, &id)? {
            floor.hold_since(&a.requested_at, || format!("approval {id} is open"));
        }
    }
    for w in tx.list::<WaitingIntentRecord>(Keyed::WaitingIntents, agent_id)? {
        if w.status == WaitingIntentStatus::Active {
            floor.hold_since(&w.created_at, || format!("wait {} is open", w.id));
        }
    }
    Ok(floor)
}

/// Where an agent's prune goes on: whether another job has more to do,
/// and the queue entry its walk of settled entries resumes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resume {
    pub more: bool,
    pub queue_from: String,
}

/// One job's prune of one agent: what it cut (or would, `dry_run`), and
/// where the next job goes on (`queue_from`: "" the first time).
pub fn prune_agent_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    cutoff_ms: i64,
    dry_run: bool,
    by: PruneBy,
    queue_from: &str,
) -> Result<(AgentPruned, Resume), StoreError> {
    let floor = floor_of(tx, agent_id, cutoff_ms)?;
    let older_than = crate::format_ts(cutoff_ms);
    let cut = tx.cut_ledger(
        agent_id,
        floor.seq,
        &crate::format_ts(floor.time_ms),
        UNITS_PER_JOB,
        !dry_run,
    )?;
    let mut more = cut.stop == Some(CutStop::Batch);
    let ledger_start = match (dry_run, cut.is_empty()) {
        (false, _) | (true, true) => tx.ledger_start(agent_id)?,
        (true, false) => cut.to_seq + 1,
    };
    let mut pruned = AgentPruned {
        agent_id: agent_id.to_owned(),
        older_than,
        from_seq: cut.from_seq,
        to_seq: cut.to_seq,
        ledger_start,
        events: cut.events,
        blocks: cut.blocks,
        rows: cut.rows,
        bytes: cut.bytes,
        held_by: floor.held_by(cut.stop),
        by,
        ..AgentPruned::default()
    };

    // The transcript behind the compaction boundary, before the cutoff.
    let agent: Option<AgentRecord> = tx.get_agent(agent_id)?;
    if let Some(boundary) = agent.and_then(|a| a.context.compacted_through) {
        let before = boundary.min(id_floor("tr", floor.time_ms));
        let old = tx.ids_before(Keyed::Transcript, agent_id, &before, RECORDS_PER_JOB)?;
        more |= old.len() >= RECORDS_PER_JOB;
        for (id, bytes) in old {
            if !dry_run {
                tx.remove(Keyed::Transcript, agent_id, &id)?;
            }
            pruned.transcript_entries += 1;
            pruned.bytes += bytes;
        }
    }

    // Tool executions before the floor: every message still queued or in
    // flight was admitted after it, so these are of settled messages.
    let old = tx.ids_before(
        Keyed::ToolExecutions,
        agent_id,
        &id_floor("tool", floor.time_ms),
        RECORDS_PER_JOB,
    )?;
    more |= old.len() >= RECORDS_PER_JOB;
    for (id, bytes) in old {
        if !dry_run {
            tx.remove(Keyed::ToolExecutions, agent_id, &id)?;
        }
        pruned.tool_executions += 1;
        pruned.bytes += bytes;
    }

    // Settled queue entries whose admission event is gone: they could
    // only ever answer "missing" now. Entries sort by message id, about
    // admission order (concurrent submitters may interleave, and messages
    // still queued are kept wherever they sort), so the walk goes on past
    // kept ones to the end, a job's share at a time.
    let entries = tx.ids_between(
        Keyed::QueueEntries,
        agent_id,
        queue_from,
        "\u{10FFFF}",
        RECORDS_PER_JOB,
    )?;
    let older_than_ts = crate::format_ts(floor.time_ms);
    let full = entries.len() >= RECORDS_PER_JOB;
    // Ids hold no NUL: just after the last one read.
    let last = entries.last().map(|(id, _)| format!("{id}\u{0}"));
    let mut removed = 0usize;
    for (id, bytes) in entries {
        let Some(entry) = tx.get::<QueueEntry>(Keyed::QueueEntries, agent_id, &id)? else {
            continue;
        };
        let gone = match entry.admitted_seq {
            Some(seq) => seq < ledger_start,
            // An entry from before envelopes were events: its envelope is
            // a `messages` row, which goes with it.
            None => entry.enqueued_at < older_than_ts,
        };
        if entry.status.replays_on_restart() || !gone {
            continue;
        }
        removed += 1;
        if !dry_run {
            tx.remove(Keyed::QueueEntries, agent_id, &id)?;
            if entry.admitted_seq.is_none() {
                tx.remove(Keyed::Messages, agent_id, &id)?;
            }
        }
        pruned.queue_entries += 1;
        pruned.bytes += bytes;
    }

    if !dry_run && pruned.removed_any() {
        tx.append_event(new_event(
            agent_id,
            Provenance {
                source: Some(match by {
                    PruneBy::Operator => "operator".to_owned(),
                    PruneBy::RetainDays => "runtime".to_owned(),
                }),
                ..Provenance::default()
            },
            Event::StorePruned(pruned.clone()),
        ))?;
    }
    // A full window with something removed: the next job walks on from
    // where this one stopped. Ids are minted in admission order, so once a
    // window removes nothing, what follows was admitted later still.
    // While the cut itself goes on, entries already passed may still lose
    // their admission event: the walk starts over until the cut is done.
    let cut_goes_on = cut.stop == Some(CutStop::Batch);
    let walk_on = last.filter(|_| full && removed > 0 && !cut_goes_on);
    // Another job when this one cut a full share (each cuts at least one,
    // so the cuts end) or the walk of the queue entries goes on.
    let resume = Resume {
        more: (more && pruned.removed_any()) || walk_on.is_some(),
        queue_from: walk_on.unwrap_or_default(),
    };
    Ok((pruned, resume))
}

/// Sum one agent's jobs into its report.
fn add(total: &mut AgentPruned, part: AgentPruned) {
    if total.agent_id.is_empty() {
        *total = part;
        return;
    }
    if total.events == 0 {
        total.from_seq = part.from_seq;
    }
    if part.events > 0 {
        total.to_seq = part.to_seq;
    }
    total.ledger_start = part.ledger_start;
    total.events += part.events;
    total.blocks += part.blocks;
    total.rows += part.rows;
    total.transcript_entries += part.transcript_entries;
    total.tool_executions += part.tool_executions;
    total.queue_entries += part.queue_entries;
    total.bytes += part.bytes;
    total.held_by = part.held_by;
}

/// Make the agent's memory index match its sources again after a cut:
/// the briefs the ledger no longer holds (their `brief_created` events are
/// before where it now starts) leave the index too, so a search neither
/// finds what retention forgot nor slows with it. An index not made yet
/// has nothing to forget; one mid-sync is rebuilt from the ledger at its
/// next open, so it is left alone. A failure is logged; the index is
/// disposable and rebuilt from its sources on its next open if damaged.
async fn forget_pruned_briefs(store: &Store, data_dir: &std::path::Path, agent_id: &str) {
    let home = crate::runtime::agent::home_dir(data_dir, agent_id);
    let (store, id) = (store.clone(), agent_id.to_owned());
    let done = tokio::task::spawn_blocking(move || -> Result<u64, String> {
        let start = store
            .read()
            .and_then(|rx| rx.ledger_start(&id))
            .map_err(|e| e.to_string())?;
        match crate::runtime::recall::index::Index::open_existing(&home) {
            Some(mut index) => index.forget_briefs_before(start),
            None => Ok(0),
        }
    })
    .await;
    match done {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!(agent_id, error = %e, "memory index kept pruned briefs"),
        Err(e) => tracing::warn!(agent_id, error = %e, "memory index update stopped"),
    }
}

/// Prune every agent of the store through its writer (the runtime's, or
/// an offline open's): one agent after another, in jobs of bounded size.
/// With `data_dir`, each agent's memory index then forgets the briefs that
/// went (`forget_pruned_briefs`).
pub async fn prune_store(
    store: &Store,
    data_dir: Option<&std::path::Path>,
    cutoff_ms: i64,
    dry_run: bool,
    by: PruneBy,
) -> Result<PruneReport, StoreError> {
    let started = Instant::now();
    let ids = store.write(|tx| tx.agent_ids()).await?;
    let mut report = PruneReport {
        older_than: crate::format_ts(cutoff_ms),
        dry_run,
        agents_seen: ids.len() as u64,
        ..PruneReport::default()
    };
    for agent_id in ids {
        let mut total = AgentPruned::default();
        let mut queue_from = String::new();
        loop {
            let id = agent_id.clone();
            let (part, resume) = store
                .write(move |tx| prune_agent_in(tx, &id, cutoff_ms, dry_run, by, &queue_from))
                .await?;
            add(&mut total, part);
            queue_from = resume.queue_from;
            // A dry run removes nothing, so its next job would see the
            // same: one job's worth is what it reports.
            if !resume.more || dry_run {
                break;
            }
        }
        // Also when this run cut nothing: a prune killed between its last
        // cut and this step left briefs the ledger no longer holds.
        if let (Some(dir), false, true) = (data_dir, dry_run, total.ledger_start > 1) {
            forget_pruned_briefs(store, dir, &agent_id).await;
        }
        if total.removed_any() {
            report.events += total.events;
            report.bytes += total.bytes;
            report.agents.push(total);
        }
    }
    report.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_minted_before_a_time_sort_below_its_floor() {
        let id = "tr_0193abcdef0178a2b3c4d5e6f708192a";
        let ms = 0x0193abcdef01;
        assert!(id < id_floor("tr", ms + 1).as_str());
        assert!(id >= id_floor("tr", ms).as_str());
        let minted = crate::new_id("tr");
        assert!(minted.as_str() < id_floor("tr", crate::now_ms() + 1).as_str());
    }

    #[test]
    fn the_floor_is_the_oldest_thing_still_needed_and_names_what_held_the_cut() {
        let mut f = Floor::new(1_000_000);
        f.hold_since("1970-01-01T00:16:40.000Z", || "a later one".into());
        assert_eq!(f.time_by, None, "after the cutoff: holds nothing more");
        assert_eq!(f.held_by(Some(CutStop::Young)), None, "the cutoff itself");
        f.hold_since("1970-01-01T00:00:10.000Z", || "work item w1 is open".into());
        assert_eq!(f.time_ms, 10_000);
        f.hold_seq(42, || "the latest brief".into());
        assert_eq!(f.seq, 42);
        assert_eq!(
            f.held_by(Some(CutStop::Young)).as_deref(),
            Some("work item w1 is open")
        );
        assert_eq!(
            f.held_by(Some(CutStop::Kept)).as_deref(),
            Some("the latest brief")
        );
        assert_eq!(f.held_by(Some(CutStop::Batch)), None);
        f.hold_since("garbage", || "an unreadable time".into());
        assert_eq!(f.time_ms, i64::MIN, "an unreadable time holds everything");
    }

    #[test]
    fn a_cutoff_is_days_before_now_and_never_wraps() {
        assert_eq!(cutoff_ms(10 * DAY_MS, 3), 7 * DAY_MS);
        assert_eq!(cutoff_ms(i64::MIN + 5, MAX_DAYS), i64::MIN);
    }
}
