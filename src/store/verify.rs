//! Offline verification: `holon store verify [PATH]`. The storage engine's
//! own integrity check (its B-trees and checksums), then Holon's: every
//! agent's ledger runs from 1 without a gap to its last sequence, and every
//! event (row or sealed block) decodes. It needs the file to itself, like
//! compaction, and changes nothing.

use std::path::{Path, PathBuf};

use redb::ReadableDatabase;
use serde::Serialize;

use super::{open_database, ReadCtx, StoreError, DEFAULT_CACHE_MIB};

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

/// Verify the store at `path`.
pub fn verify(path: &Path) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport {
        path: path.to_path_buf(),
        ..VerifyReport::default()
    };
    // Held until the checks end: redb 4 closes a database when it is
    // dropped, read transactions and all.
    let mut opened = None;
    let rx = match open_database(path, DEFAULT_CACHE_MIB * 1024 * 1024) {
        Ok(db) => {
            let db = opened.insert(db);
            match db.check_integrity() {
                Ok(true) => {}
                Ok(false) => report
                    .problems
                    .push("the storage engine repaired damage while checking it".into()),
                Err(e) => report
                    .problems
                    .push(format!("the storage engine's integrity check failed: {e}")),
            }
            ReadCtx {
                txn: db.begin_read()?,
                _db: None,
            }
        }
        // A file that cannot be written is checked read-only: Holon's own
        // checks run; the engine's needs write access.
        Err(StoreError::Io { source, .. }) if super::read_only_io(&source) => {
            let why = source.to_string();
            let store = super::Store::open_read_only(path, &why)?;
            report.notes.push(format!(
                "the store is read-only ({why}): the storage engine's own integrity check needs \
                 write access and was skipped"
            ));
            store.read()?
        }
        Err(e) => return Err(e),
    };
    let agents: Vec<serde_json::Value> = rx.agents()?;
    report.agents = agents.len() as u64;
    for agent in &agents {
        let Some(id) = agent["id"].as_str() else {
            report.problems.push("an agent record without an id".into());
            continue;
        };
        ledger(&rx, id, &mut report);
    }
    Ok(report)
}

/// One agent's ledger: contiguous from 1 to its last sequence, every event
/// decoding.
fn ledger(rx: &ReadCtx, agent: &str, report: &mut VerifyReport) {
    let last = match rx.last_seq(agent) {
        Ok(n) => n,
        Err(e) => {
            report.problems.push(format!(
                "agent {agent}: its last sequence cannot be read: {e}"
            ));
            return;
        }
    };
    let mut next = 1u64;
    while next <= last {
        let page = match rx.events(agent, next, PAGE) {
            Ok(p) => p,
            Err(e) => {
                report.problems.push(format!(
                    "agent {agent}: events from {next} cannot be read: {e}"
                ));
                return;
            }
        };
        if page.is_empty() {
            report.problems.push(format!(
                "agent {agent}: events {next} to {last} are missing"
            ));
            return;
        }
        for e in &page {
            if e.event_seq != next {
                report.problems.push(format!(
                    "agent {agent}: events {next} to {} are missing",
                    e.event_seq - 1
                ));
            }
            next = e.event_seq + 1;
            report.events += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Provenance, Store, StoreOptions};

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
}
