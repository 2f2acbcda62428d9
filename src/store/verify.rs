//! Offline verification: `holon store verify [PATH]`. The storage engine's
//! own integrity check (its B-trees and checksums), then Holon's: every
//! agent's ledger runs from 1 without a gap to its last sequence, every
//! event (row or sealed block) decodes, and every index row, dequeue-order
//! entry and queue entry points at something that exists. It needs the
//! file to itself, like compaction, and never writes it: the checks run on
//! a private copy beside it (which opening may repair or migrate), or on a
//! read-only open where no copy can be written.
//!
//! The engine may panic on a damaged page rather than return an error:
//! every call into it here is isolated (`guarded`), and what stopped it
//! becomes a problem of the report, naming what was being read. A report
//! always comes back; only a file that cannot be read at all, or copied,
//! is an error.

use std::path::{Path, PathBuf};

use redb::ReadableDatabase;
use serde::Serialize;

use super::{open_database, Index, Keyed, ReadCtx, StoreError, DEFAULT_CACHE_MIB};

/// What verification found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub path: PathBuf,
    pub agents: u64,
    pub events: u64,
    /// Each problem, in words; empty when the store is sound.
    pub problems: Vec<String>,
    /// What could not be checked, and why (not problems).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl VerifyReport {
    pub fn sound(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Events read per page while walking a ledger.
const PAGE: usize = 5_000;

/// Run `f`, which reads a file that may be damaged: a panic in the
/// storage engine comes back as its message, printed nowhere.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    super::open::quietly(f).map_err(|m| format!("the storage engine stopped on damage: {m}"))
}

/// [`guarded`] for a call that may also fail: its error and a panic
/// alike come back as the words to report.
fn read<T, E: std::fmt::Display>(f: impl FnOnce() -> Result<T, E>) -> Result<T, String> {
    guarded(f)?.map_err(|e| e.to_string())
}

/// Verify the store at `path`.
pub fn verify(path: &Path) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport {
        path: path.to_path_buf(),
        ..VerifyReport::default()
    };
    // The file itself is never opened for writing (that would repair or
    // migrate it): the checks run on a private copy beside it, or, where
    // none can be written, on a read-only open without the engine's check.
    let scratch = path.with_file_name(format!(
        ".{}.verify-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("store"),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&scratch);
    let copied = super::files::copy_private(path, &scratch).map(drop);
    let result = match copied {
        Ok(()) => check_copy(&scratch, &mut report),
        Err(e) if super::read_only_io(&e) => check_read_only(path, &e.to_string(), &mut report),
        Err(source) => Err(StoreError::Io {
            path: path.to_path_buf(),
            source,
        }),
    };
    for leftover in [
        scratch.clone(),
        PathBuf::from(format!("{}.redb2", scratch.display())),
    ] {
        let _ = std::fs::remove_file(leftover);
    }
    result?;
    Ok(report)
}

/// The engine's integrity check and Holon's, on the copy at `scratch`
/// (which opening may repair or migrate: it is ours to change).
fn check_copy(scratch: &Path, report: &mut VerifyReport) -> Result<(), StoreError> {
    let opened = guarded(|| open_database(scratch, DEFAULT_CACHE_MIB * 1024 * 1024));
    let mut db = match opened {
        Ok(Ok(db)) => db,
        Ok(Err(StoreError::Corrupt { detail, .. })) => {
            report.problems.push(format!(
                "the file cannot be opened as a store: its header, or the pages it points to, \
                 are damaged, or it is not a Holon store ({detail})"
            ));
            return Ok(());
        }
        Ok(Err(e)) => {
            report
                .problems
                .push(format!("the file cannot be opened as a store: {e}"));
            return Ok(());
        }
        Err(why) => {
            report
                .problems
                .push(format!("the file cannot be opened as a store: {why}"));
            return Ok(());
        }
    };
    match read(|| db.check_integrity()) {
        Ok(true) => {}
        Ok(false) => report
            .problems
            .push("the storage engine found damage in its own structures".into()),
        Err(why) => report.problems.push(format!(
            "the storage engine's integrity check failed: {why}"
        )),
    }
    let txn = match read(|| db.begin_read()) {
        Ok(txn) => txn,
        Err(why) => {
            report
                .problems
                .push(format!("no read of the store could begin: {why}"));
            return Ok(());
        }
    };
    let rx = ReadCtx { txn, _db: None };
    holon_checks(&rx, report)
}

/// Holon's checks on a read-only open of `path`.
fn check_read_only(path: &Path, why: &str, report: &mut VerifyReport) -> Result<(), StoreError> {
    let store = super::Store::open_read_only(path, why)?;
    report.notes.push(format!(
        "the store is read-only here ({why}): no private copy could be written beside it, so \
         the storage engine's own integrity check was skipped"
    ));
    let rx = store.read()?;
    holon_checks(&rx, report)
}

/// Every agent's ledger and references, each read isolated: damage met
/// in one agent's records is reported and the others are still checked.
fn holon_checks(rx: &ReadCtx, report: &mut VerifyReport) -> Result<(), StoreError> {
    let agents: Vec<serde_json::Value> = match read(|| rx.agents()) {
        Ok(a) => a,
        Err(why) => {
            report
                .problems
                .push(format!("the agents table cannot be read: {why}"));
            return Ok(());
        }
    };
    report.agents = agents.len() as u64;
    for agent in &agents {
        let Some(id) = agent["id"].as_str() else {
            report.problems.push("an agent record without an id".into());
            continue;
        };
        // A salvage's recorded losses are known, not damage.
        let lost: Vec<crate::model::retention::LostRange> =
            serde_json::from_value(agent["lost_events"].clone()).unwrap_or_default();
        if let Err(why) = guarded(|| ledger(rx, id, &lost, report)) {
            report.problems.push(format!(
                "agent {id}: its ledger cannot be read to the end: {why}"
            ));
        }
        if let Err(why) = guarded(|| references(rx, id, report)) {
            report.problems.push(format!(
                "agent {id}: its queue, work items, tasks or indexes cannot be read: {why}"
            ));
        }
    }
    Ok(())
}

/// One agent's ledger: contiguous from where it starts (1, or where
/// retention cut it) to its last sequence, every event decoding.
fn ledger(
    rx: &ReadCtx,
    agent: &str,
    lost: &[crate::model::retention::LostRange],
    report: &mut VerifyReport,
) {
    // A gap every event of which a salvage recorded as lost is a note;
    // any other is a problem.
    let gap = |from: u64, to: u64, report: &mut VerifyReport| {
        let known = crate::model::retention::covered(lost, from, to);
        match known {
            true => report.notes.push(format!(
                "agent {agent}: events {from} to {to} were lost in a salvage (recorded)"
            )),
            false => report
                .problems
                .push(format!("agent {agent}: events {from} to {to} are missing")),
        }
    };
    let last = match rx.last_seq(agent) {
        Ok(n) => n,
        Err(e) => {
            report.problems.push(format!(
                "agent {agent}: its last sequence cannot be read: {e}"
            ));
            return;
        }
    };
    let mut next = match rx.ledger_start(agent) {
        Ok(n) => n,
        Err(e) => {
            report.problems.push(format!(
                "agent {agent}: where its ledger starts cannot be read: {e}"
            ));
            return;
        }
    };
    if next > last.saturating_add(1) {
        report.problems.push(format!(
            "agent {agent}: its ledger is recorded as starting at {next}, after its last event {last}"
        ));
        return;
    }
    while next <= last {
        let page = match read(|| rx.events(agent, next, PAGE)) {
            Ok(p) => p,
            Err(why) => {
                report.problems.push(format!(
                    "agent {agent}: events {next} to {last} cannot be read: {why}"
                ));
                return;
            }
        };
        if page.is_empty() {
            gap(next, last, report);
            return;
        }
        for e in &page {
            if e.event_seq != next {
                gap(next, e.event_seq - 1, report);
            }
            next = e.event_seq + 1;
            report.events += 1;
        }
    }
}

/// The record table each membership index points into.
fn indexed(index: Index) -> Keyed {
    match index {
        Index::Dequeued => Keyed::QueueEntries,
        Index::OpenWorkItems => Keyed::WorkItems,
        Index::ActiveTasks | Index::ChildTasks => Keyed::Tasks,
        Index::ActiveTimers => Keyed::Timers,
        Index::OpenApprovals => Keyed::Approvals,
        // Keys of processed ticks: no record behind them.
        Index::TickKeys => Keyed::Messages,
    }
}

/// One agent's references: every index row names a record that exists,
/// every message in the dequeue order has its queue entry, and every queue
/// entry's `message_admitted` event is in the ledger.
fn references(rx: &ReadCtx, agent: &str, report: &mut VerifyReport) {
    let mut problem = |p: String| report.problems.push(format!("agent {agent}: {p}"));
    for index in Index::ALL {
        if index == Index::TickKeys {
            continue;
        }
        let target = indexed(index);
        let ids = match rx.index_list(index, agent) {
            Ok(ids) => ids,
            Err(e) => {
                problem(format!("{} cannot be read: {e}", index.name()));
                continue;
            }
        };
        for id in ids {
            match rx.get::<serde_json::Value>(target, agent, &id) {
                Ok(Some(_)) => {}
                Ok(None) => problem(format!(
                    "{} names {id}, which {} does not hold",
                    index.name(),
                    target.name()
                )),
                Err(e) => problem(format!("{}/{id} cannot be read: {e}", target.name())),
            }
        }
    }
    match rx.queue_pending(agent) {
        Ok(pending) => {
            for (_, _, id) in pending {
                if !matches!(
                    rx.get::<serde_json::Value>(Keyed::QueueEntries, agent, &id),
                    Ok(Some(_))
                ) {
                    problem(format!(
                        "the dequeue order names {id}, which has no queue entry"
                    ));
                }
            }
        }
        Err(e) => problem(format!("the dequeue order cannot be read: {e}")),
    }
    let entries: Vec<serde_json::Value> = match rx.list(Keyed::QueueEntries, agent) {
        Ok(e) => e,
        Err(e) => {
            problem(format!("queue entries cannot be read: {e}"));
            return;
        }
    };
    // A settled entry whose admission retention pruned is history, not
    // damage (a prune removes such entries a job's share at a time); one
    // still queued or in flight must have its admission.
    let start = rx.ledger_start(agent).unwrap_or(1);
    let settled = |e: &serde_json::Value| {
        matches!(
            e["status"].as_str(),
            Some("processed" | "aborted" | "interjected" | "dropped")
        )
    };
    let seqs: Vec<(String, u64)> = entries
        .iter()
        .filter_map(|e| {
            let seq = e["admitted_seq"].as_u64()?;
            if seq < start && settled(e) {
                return None;
            }
            Some((e["message_id"].as_str()?.to_owned(), seq))
        })
        .collect();
    let wanted: Vec<u64> = seqs.iter().map(|(_, s)| *s).collect();
    match rx.events_at(agent, &wanted) {
        Ok(found) => {
            for ((id, seq), event) in seqs.iter().zip(found) {
                match event {
                    Some(e) if e.kind == "message_admitted" => {}
                    Some(e) => problem(format!(
                        "the queue entry of {id} points at event {seq}, a {} event",
                        e.kind
                    )),
                    None => problem(format!(
                        "the queue entry of {id} points at event {seq}, which is missing"
                    )),
                }
            }
        }
        Err(e) => problem(format!("admission events cannot be read: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::Provenance;
    use crate::store::{Store, StoreOptions};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sound_store_verifies_and_a_gap_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        store
            .write(|tx| {
                tx.put_agent("main", &serde_json::json!({ "id": "main" }))?;
                for n in 0..10u64 {
                    tx.append_event(crate::model::event::NewEvent {
                        agent_id: "main".into(),
                        kind: "note",
                        provenance: Provenance::default(),
                        payload: serde_json::json!({ "n": n }),
                    })?;
                }
                Ok(())
            })
            .await
            .unwrap();
        store.close().await.unwrap();
        let report = verify(&path).unwrap();
        assert!(report.sound(), "{report:?}");
        assert_eq!((report.agents, report.events), (1, 10));
        // Remove event 4 behind Holon's back: the gap is named.
        {
            let db = redb::Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(crate::store::schema::EVENTS).unwrap();
                assert!(t.remove(("main", 4u64)).unwrap().is_some());
            }
            txn.commit().unwrap();
        }
        let report = verify(&path).unwrap();
        assert!(!report.sound());
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.contains("events 4 to 4 are missing")),
            "{report:?}"
        );
    }

    /// Index rows and queue entries that point at nothing are named.
    #[tokio::test]
    async fn dangling_references_are_named() {
        use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
        use crate::runtime::admission::{admit, ensure_agent};
        use redb::ReadableTable as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        ensure_agent(&store, "main").await.unwrap();
        for n in 0..3 {
            let prompt = AdmissionRequest::operator_prompt(
                "main",
                &format!("prompt {n}"),
                Priority::Normal,
                DeliverySurface::CliPrompt,
            );
            admit(&store, prompt).await.unwrap();
        }
        store.close().await.unwrap();
        assert!(verify(&path).unwrap().sound());
        // Behind Holon's back: a queued message's entry goes, and an index
        // row names a task that never existed.
        let gone = {
            let db = redb::Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            let gone = {
                let mut t = txn.open_table(Keyed::QueueEntries.definition()).unwrap();
                let key = {
                    let first = t.iter().unwrap().next().unwrap().unwrap();
                    first.0.value().1.to_owned()
                };
                t.remove(("main", key.as_str())).unwrap();
                key
            };
            txn.open_table(Index::ActiveTasks.definition())
                .unwrap()
                .insert(("main", "task_ghost"), ())
                .unwrap();
            txn.commit().unwrap();
            gone
        };
        let report = verify(&path).unwrap();
        assert!(!report.sound());
        let text = report.problems.join("\n");
        assert!(
            text.contains(&format!(
                "the dequeue order names {gone}, which has no queue entry"
            )),
            "{text}"
        );
        assert!(
            text.contains("idx_active_tasks names task_ghost, which tasks does not hold"),
            "{text}"
        );
    }
}
