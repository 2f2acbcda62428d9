//! Injected I/O faults, for the store's anchor test and `holon debug bench
//! faults`: a redb storage backend over a real file that fails (or tears:
//! writes half, then fails) its Nth write, sync or length change, once.
//! A sweep runs the same scripted workload once per fault point and checks
//! the promise: every acknowledged write is in the store exactly once
//! after the fault and a clean reopen, and nothing is there that was never
//! submitted.

use std::collections::BTreeMap;
use std::io;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use redb::{BackendError, StorageBackend};
use serde_json::json;

use super::{Store, StoreError, StoreOptions};
use crate::model::event::NewEvent;
use crate::model::event::Provenance;

/// Which operation fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Write,
    Sync,
    SetLen,
}

/// One fault: the `at`th operation of kind `op` (counted from 1 over the
/// whole run, reopenings included) fails; `tear` writes half of it first.
#[derive(Debug)]
pub struct Fault {
    op: Op,
    at: u64,
    tear: bool,
    seen: [AtomicU64; 3],
}

impl Fault {
    pub fn new(op: Op, at: u64, tear: bool) -> Arc<Fault> {
        Arc::new(Fault {
            op,
            at,
            tear,
            seen: Default::default(),
        })
    }

    /// A run that never fails, counting operations.
    pub fn none() -> Arc<Fault> {
        Fault::new(Op::Write, 0, false)
    }

    /// How many operations of `op` ran.
    pub fn count(&self, op: Op) -> u64 {
        self.seen[op as usize].load(Ordering::SeqCst)
    }

    /// Whether this operation is the one that fails.
    fn strikes(&self, op: Op) -> bool {
        let n = self.seen[op as usize].fetch_add(1, Ordering::SeqCst) + 1;
        op == self.op && n == self.at
    }
}

fn injected() -> io::Error {
    io::Error::other("injected I/O fault")
}

/// A file backend whose one planned operation fails.
#[derive(Debug)]
pub struct FaultyBackend {
    file: redb::backends::FileBackend,
    fault: Arc<Fault>,
}

impl StorageBackend for FaultyBackend {
    fn len(&self) -> Result<u64, io::Error> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.file.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        if self.fault.strikes(Op::SetLen) {
            return Err(injected());
        }
        self.file.set_len(len)
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        if self.fault.strikes(Op::Sync) {
            return Err(injected());
        }
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        if self.fault.strikes(Op::Write) {
            if self.fault.tear {
                let _ = self.file.write(offset, &data[..data.len() / 2]);
            }
            return Err(injected());
        }
        self.file.write(offset, data)
    }

    fn close(&self) -> Result<(), io::Error> {
        self.file.close()
    }

    // The file's own locks, so a faulty store still refuses a second
    // opener exactly as the real one does.
    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}

/// Open the store at `path` through a faulty backend (the writer reopens
/// it the same way after the fault).
pub fn open_faulty(path: &Path, fault: &Arc<Fault>) -> Result<Store, StoreError> {
    let (path_buf, fault) = (path.to_path_buf(), Arc::clone(fault));
    let opener: super::Opener = Arc::new(move || {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path_buf)
            .map_err(|source| StoreError::Io {
                path: path_buf.clone(),
                source,
            })?;
        let file = redb::backends::FileBackend::new(file).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
                path: path_buf.clone(),
            },
            other => StoreError::Storage(other.to_string()),
        })?;
        let backend = FaultyBackend {
            file,
            fault: Arc::clone(&fault),
        };
        redb::Database::builder()
            .set_cache_size(1 << 20)
            .create_with_backend(backend)
            .map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
                    path: path_buf.clone(),
                },
                other => StoreError::Storage(other.to_string()),
            })
    });
    Store::open_with(path, opener, StoreOptions::default())
}

/// What one faulted run found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub acknowledged: usize,
    /// Writes that got an error (the fault struck them).
    pub refused: usize,
    pub lost: usize,
    pub duplicated: usize,
    pub invented: usize,
    /// The store could not be reopened cleanly (said, not silent).
    pub unopenable: Option<String>,
}

/// The scripted workload: `writes` admissions-like appends over three
/// agents, each one transaction, some sharing a commit.
async fn workload(store: &Store, writes: u64) -> Vec<u64> {
    let mut acked = Vec::new();
    let mut pending = tokio::task::JoinSet::new();
    for n in 0..writes {
        let s = store.clone();
        pending.spawn(async move {
            let e = NewEvent {
                agent_id: format!("agent{}", n % 3),
                kind: "note",
                provenance: Provenance::default(),
                payload: json!({ "n": n, "pad": "x".repeat(((n % 7) * 900) as usize) }),
            };
            s.write(move |tx| tx.append_event(e.clone()))
                .await
                .map(|_| n)
        });
        // A few at a time: group commits happen, as under load.
        if pending.len() >= 4 {
            if let Some(Ok(Ok(n))) = pending.join_next().await {
                acked.push(n);
            }
        }
    }
    while let Some(r) = pending.join_next().await {
        if let Ok(Ok(n)) = r {
            acked.push(n);
        }
    }
    acked
}

/// Run the workload with `fault`, then reopen the file cleanly and check it.
pub async fn run_once(dir: &Path, fault: &Arc<Fault>, writes: u64) -> Outcome {
    let path = dir.join("s.redb");
    let acked = match open_faulty(&path, fault) {
        Ok(store) => {
            let acked = workload(&store, writes).await;
            let _ = store.close().await;
            acked
        }
        // The fault struck while creating the file: nothing acknowledged.
        Err(_) => Vec::new(),
    };
    let mut out = Outcome {
        acknowledged: acked.len(),
        refused: writes as usize - acked.len(),
        ..Outcome::default()
    };
    let store = match Store::open(&path, StoreOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            out.lost = acked.len();
            out.unopenable = Some(e.to_string());
            return out;
        }
    };
    let mut present: BTreeMap<u64, usize> = BTreeMap::new();
    for agent in ["agent0", "agent1", "agent2"] {
        let events = store
            .read()
            .and_then(|r| r.events(agent, 1, writes as usize + 10))
            .unwrap_or_default();
        for e in events {
            match e.payload["n"].as_u64() {
                Some(n) if n < writes => *present.entry(n).or_default() += 1,
                _ => out.invented += 1,
            }
        }
    }
    out.duplicated = present.values().filter(|c| **c > 1).count();
    out.lost = acked.iter().filter(|n| !present.contains_key(n)).count();
    let _ = store.close().await;
    out
}

/// The fault points to try: every `step`th operation of each kind over
/// what a clean run performs, torn and not for writes.
pub async fn sweep(base: &Path, writes: u64, step: u64) -> (usize, Outcome) {
    let clean = Fault::none();
    let dir = base.join("clean");
    std::fs::create_dir_all(&dir).ok();
    let _ = run_once(&dir, &clean, writes).await;
    let mut plans = Vec::new();
    for (op, tears) in [
        (Op::Write, &[false, true][..]),
        (Op::Sync, &[false][..]),
        (Op::SetLen, &[false][..]),
    ] {
        let total = clean.count(op);
        for at in (1..=total).step_by(step.max(1) as usize) {
            for tear in tears {
                plans.push((op, at, *tear));
            }
        }
    }
    let mut worst = Outcome::default();
    for (i, (op, at, tear)) in plans.iter().enumerate() {
        let dir = base.join(format!("run{i}"));
        std::fs::create_dir_all(&dir).ok();
        let fault = Fault::new(*op, *at, *tear);
        let out = run_once(&dir, &fault, writes).await;
        worst.lost += out.lost;
        worst.duplicated += out.duplicated;
        worst.invented += out.invented;
        worst.acknowledged += out.acknowledged;
        worst.refused += out.refused;
        if worst.unopenable.is_none() {
            worst.unopenable = out.unopenable.map(|e| format!("{op:?} #{at}: {e}"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    (plans.len(), worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The anchors test: an I/O fault at every point of a scripted run
    /// (each write, torn or not, each sync, each length change, in steps)
    /// loses, duplicates and invents nothing the store acknowledged, and
    /// the store always reopens.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_fault_loses_duplicates_or_invents_an_acknowledged_write() {
        let dir = tempfile::tempdir().unwrap();
        let (tried, found) = sweep(dir.path(), 24, 3).await;
        assert!(tried > 20, "only {tried} fault points");
        assert_eq!(found.unopenable, None);
        assert_eq!((found.lost, found.duplicated, found.invented), (0, 0, 0));
        assert!(found.acknowledged > 0);
        assert!(found.refused > 0, "no fault ever struck a write");
        eprintln!("{tried} fault points: {found:?}");
    }
}
