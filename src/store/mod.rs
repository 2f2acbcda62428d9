//! The durable store: one redb file holding current-state tables and
//! append-only ledgers (see `schema`). All writes go through the single
//! writer (`writer`), which group-commits queued jobs and acknowledges each
//! only after its commit; events are published to subscribers only after
//! commit. Readers use their own read transactions and never block the
//! writer. The store knows keys and JSON, not agents: record shapes belong
//! to the runtime.

pub mod backup;
pub(crate) mod codec;
pub mod compact;
pub mod copy;
mod error;
pub mod files;
mod id_time;
pub mod verify;

#[cfg(any(test, feature = "bench"))]
pub mod fault;
mod kind_index;
mod ledger;
mod migrate;
mod open;
pub mod prune;
pub mod salvage;
mod scan;
pub mod schema;
mod seal;
mod tables;
mod write_ctx;
mod writer;

/// Opens the database (again).
pub(crate) type Opener = Arc<dyn Fn() -> Result<redb::Database, StoreError> + Send + Sync>;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable};
use serde::de::DeserializeOwned;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::model::event::EventRecord;
pub use error::{read_only_io, recovery, StoreError};
pub use schema::{Index, Keyed, SCHEMA_VERSION};
pub use write_ctx::WriteCtx;
pub use writer::MAX_BATCH;

pub use migrate::Migrated;
use open::{init_schema, open_database};
use writer::{Command, JobFn, Writer};

type LedgerTable = redb::ReadOnlyTable<(&'static str, u64), &'static [u8]>;

/// How a store is opened.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// `Immediate` (the default) fsyncs every commit. `None` exists only
    /// for benchmarks that isolate the writer's own overhead.
    pub durability: Durability,
    /// Record redb's allocator state at every commit so that opening after
    /// a crash does not walk the whole file. Off by default: the state is
    /// ~1 MiB for a region, so every commit would write (and fsync) ~1 MiB
    /// more, grow the file by those pages and take several times as long;
    /// a store that was not closed cleanly is repaired on its next open
    /// instead (1.3 s for a 1.08 GB store here), with a warning.
    pub quick_repair: bool,
    /// Capacity of the in-process event broadcast; a subscriber further
    /// behind than this is told it lagged and resumes from the ledger.
    pub event_buffer: usize,
    /// Capacity of the writer's job queue.
    pub queue_capacity: usize,
    /// redb's page cache, in bytes. redb's own default (1 GiB) lets a
    /// long-lived daemon grow without bound as the file grows; the ledger
    /// is read by range scans near its tail, so a small cache serves it.
    pub cache_bytes: usize,
}

/// The default page cache: `[store] cache_mib` in config.toml overrides it.
pub const DEFAULT_CACHE_MIB: usize = 16;

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durability: Durability::Immediate,
            quick_repair: false,
            event_buffer: 8192,
            queue_capacity: 16_384,
            cache_bytes: DEFAULT_CACHE_MIB * 1024 * 1024,
        }
    }
}

/// A handle to an open store. Cheap to clone; the file stays open (and
/// locked against other processes) until every handle is dropped or
/// `close` is called.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// The open database, shared by readers and the writer. The writer swaps
/// it for a freshly opened one after an I/O failure (redb refuses every
/// write after one until the file is reopened). `None` once closed.
pub(crate) type SharedDb = Arc<std::sync::RwLock<Option<Arc<Database>>>>;

struct Inner {
    db: SharedDb,
    /// The writer's last commit failure, while it lasts (`health`).
    failure: Arc<std::sync::Mutex<Option<String>>>,
    /// The writer's attempts to heal since the store opened
    /// (`heal_attempts`).
    heal_attempts: Arc<std::sync::atomic::AtomicU64>,
    path: PathBuf,
    /// `None` only while dropping.
    jobs: Option<mpsc::Sender<Command>>,
    events: broadcast::Sender<Arc<EventRecord>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Set when the store was opened read-only (`open_read_only`): reads
    /// come from it, and every write is refused saying why.
    read_only: Option<(Arc<redb::ReadOnlyDatabase>, String)>,
}

impl Inner {
    fn jobs(&self) -> Result<&mpsc::Sender<Command>, StoreError> {
        if let Some((_, why)) = &self.read_only {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
                why: why.clone(),
            });
        }
        self.jobs.as_ref().ok_or(StoreError::Closed)
    }
}

/// Dropping the last handle finishes queued writes and waits for the writer
/// to let go of the database, so the file is released when drop returns
/// (a restart or hand-over can open it at once).
impl Drop for Inner {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take() {
            if writer.join().is_err() {
                tracing::error!("the store writer thread panicked");
            }
        }
    }
}

impl Store {
    /// Open (or create) the store file at `path`.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // An existing empty file is a store that lost its contents (a failed
        // copy, a truncation), not a fresh start: taking it as new would
        // silently drop everything it held.
        if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: "the file is empty (0 bytes)".into(),
            });
        }
        let opener: Opener = {
            let (path, cache) = (path.to_path_buf(), options.cache_bytes);
            Arc::new(move || open_database(&path, cache))
        };
        Store::open_with(path, opener, options)
    }

    /// Open the store through `opener` (a file, or in tests a backend that
    /// injects faults), which the writer also uses to reopen it after a
    /// failure.
    pub(crate) fn open_with(
        path: &Path,
        opener: Opener,
        options: StoreOptions,
    ) -> Result<Store, StoreError> {
        // A store this call creates and fails to finish (a full disk, an
        // I/O error while writing its first header) is removed again, so
        // it is not taken for a damaged one later.
        let fresh = !path.exists();
        let opened = opener().and_then(|db| init_schema(&db, path).map(|()| db));
        let db = match opened {
            Ok(db) => db,
            Err(e) => {
                // Never when another process holds it: that one made it.
                if fresh && !matches!(e, StoreError::Locked { .. }) {
                    let _ = std::fs::remove_file(path);
                }
                return Err(e);
            }
        };
        let db: SharedDb = Arc::new(std::sync::RwLock::new(Some(Arc::new(db))));
        let failure: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
        let heal_attempts: Arc<std::sync::atomic::AtomicU64> = Arc::default();
        let (jobs, rx) = mpsc::channel(options.queue_capacity.max(1));
        let (events, _) = broadcast::channel(options.event_buffer.max(16));
        let writer = Writer {
            db: Arc::clone(&db),
            opener,
            failure: Arc::clone(&failure),
            heal_attempts: Arc::clone(&heal_attempts),
            broken: false,
            rx,
            events: events.clone(),
            durability: options.durability,
            quick_repair: options.quick_repair,
            seqs: HashMap::new(),
        };
        let writer = std::thread::Builder::new()
            .name("holon-store-writer".into())
            .spawn(move || writer.run())
            .map_err(|source| StoreError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Store {
            inner: Arc::new(Inner {
                db,
                failure,
                heal_attempts,
                path: path.to_path_buf(),
                jobs: Some(jobs),
                events,
                writer: Some(writer),
                read_only: None,
            }),
        })
    }

    /// Why the store is read-only, when it was opened so.
    pub fn read_only(&self) -> Option<&str> {
        self.inner.read_only.as_ref().map(|(_, why)| why.as_str())
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Run `job` inside a write transaction and wait for its durable commit.
    /// The job may run more than once (when another job in its batch fails)
    /// and must derive every write from its inputs and what it reads.
    pub async fn write<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteCtx<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let (command, rx) = make_job(job);
        self.inner
            .jobs()?
            .send(command)
            .await
            .map_err(|_| StoreError::Closed)?;
        unbox(rx.await.map_err(|_| StoreError::Closed)?)
    }

    /// `write` for callers outside an async context. Must not be called
    /// from inside a tokio runtime thread.
    pub fn write_blocking<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteCtx<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let (command, rx) = make_job(job);
        self.inner
            .jobs()?
            .blocking_send(command)
            .map_err(|_| StoreError::Closed)?;
        unbox(rx.blocking_recv().map_err(|_| StoreError::Closed)?)
    }

    /// Start a consistent read snapshot.
    pub fn read(&self) -> Result<ReadCtx, StoreError> {
        if let Some((db, _)) = &self.inner.read_only {
            return Ok(ReadCtx {
                txn: db.begin_read()?,
                _db: None,
            });
        }
        let db = self
            .inner
            .db
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(StoreError::Closed)?;
        Ok(ReadCtx {
            txn: db.begin_read()?,
            _db: Some(db),
        })
    }

    /// `None` while writes succeed; else why the last commit failed (disk
    /// full, I/O error). The writer retries by itself: the next write that
    /// succeeds clears it.
    pub fn health(&self) -> Option<String> {
        self.inner
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many times the writer has tried to heal a standing failure
    /// since the store opened (each a reopen if needed and a probe write).
    pub fn heal_attempts(&self) -> u64 {
        self.inner
            .heal_attempts
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Events committed from now on, in commit order. A receiver that falls
    /// behind gets `Lagged` and must resume from the ledger by `event_seq`.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<EventRecord>> {
        self.inner.events.subscribe()
    }

    /// Finish the queued writes, stop the writer and release the file, even
    /// if other handles still exist: from then on they get `Closed`. The
    /// file lock goes with the last read transaction still in flight (reads
    /// are short). A hand-over to another process relies on this.
    pub async fn close(self) -> Result<(), StoreError> {
        if self.inner.read_only.is_some() {
            return Ok(());
        }
        let (reply, rx) = oneshot::channel();
        if self
            .inner
            .jobs()?
            .send(Command::Close { reply })
            .await
            .is_ok()
        {
            let _ = rx.await;
        }
        let db = self
            .inner
            .db
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        drop(db);
        Ok(())
    }
}

fn make_job<T, F>(mut job: F) -> (Command, oneshot::Receiver<writer::JobResult>)
where
    T: Send + 'static,
    F: FnMut(&mut WriteCtx<'_>) -> Result<T, StoreError> + Send + 'static,
{
    let run: JobFn =
        Box::new(move |ctx| job(ctx).map(|v| Box::new(v) as Box<dyn std::any::Any + Send>));
    let (reply, rx) = oneshot::channel();
    (Command::Job { run, reply }, rx)
}

fn unbox<T: 'static>(result: writer::JobResult) -> Result<T, StoreError> {
    let boxed = result?;
    boxed
        .downcast::<T>()
        .map(|b| *b)
        .map_err(|_| StoreError::Storage("internal error: write reply of unexpected type".into()))
}

/// A consistent snapshot of the store.
pub struct ReadCtx {
    txn: ReadTransaction,
    /// The database the snapshot reads: redb 4 closes a database when its
    /// last handle goes, read transactions and all, so a snapshot keeps
    /// its own (a close or a reopen after a failure waits for it).
    _db: Option<Arc<Database>>,
}

impl ReadCtx {
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        let meta = self.txn.open_table(schema::META)?;
        let v = meta.get("schema_version")?;
        Ok(v.and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
            .map(u32::from_le_bytes)
            .unwrap_or(0))
    }

    /// A runtime-wide setting (`WriteCtx::put_setting`), or `None`.
    pub fn setting<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StoreError> {
        let meta = self.txn.open_table(schema::META)?;
        let key = write_ctx::setting_key(name);
        match meta.get(key.as_str())? {
            Some(v) => tables::decode("meta", || key.clone(), v.value()).map(Some),
            None => Ok(None),
        }
    }

    pub fn agent<T: DeserializeOwned>(&self, agent_id: &str) -> Result<Option<T>, StoreError> {
        let t = self.txn.open_table(schema::AGENTS)?;
        match t.get(agent_id)? {
            Some(v) => tables::decode("agents", || agent_id.to_owned(), v.value()).map(Some),
            None => Ok(None),
        }
    }

    pub fn agents<T: DeserializeOwned>(&self) -> Result<Vec<T>, StoreError> {
        let t = self.txn.open_table(schema::AGENTS)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (k, v) = row?;
            out.push(tables::decode(
                "agents",
                || k.value().to_owned(),
                v.value(),
            )?);
        }
        Ok(out)
    }

    /// The event ledger's two tables: rows and sealed blocks (`ledger`).
    /// Every agent the ledger holds events of, whether or not its record
    /// is there (after a salvage it may not be). One seek per agent.
    pub fn ledger_agents(&self) -> Result<std::collections::BTreeSet<String>, StoreError> {
        let (rows, blocks) = self.ledger()?;
        let mut out = std::collections::BTreeSet::new();
        for table in [&rows, &blocks] {
            let mut cursor: Option<String> = None;
            loop {
                let key = match &cursor {
                    None => table.first()?.map(|(k, _)| k),
                    Some(agent) => table
                        .range((agent.as_str(), u64::MAX)..)?
                        .map(|r| r.map(|(k, _)| k))
                        .find(|k| k.as_ref().map_or(true, |k| k.value().0 != agent.as_str()))
                        .transpose()?,
                };
                let Some(k) = key else { break };
                let agent = k.value().0.to_owned();
                out.insert(agent.clone());
                cursor = Some(agent);
            }
        }
        Ok(out)
    }

    fn ledger(&self) -> Result<(LedgerTable, LedgerTable), StoreError> {
        Ok((
            self.txn.open_table(schema::EVENTS)?,
            self.txn.open_table(schema::EVENT_BLOCKS)?,
        ))
    }

    /// The agent's last `event_seq` (its event count, retention aside).
    /// O(log n).
    pub fn last_seq(&self, agent_id: &str) -> Result<u64, StoreError> {
        let (rows, blocks) = self.ledger()?;
        tables::last_seq(&rows, &blocks, agent_id)
    }

    /// A per-agent counter (0 when never counted).
    pub fn counter(&self, agent_id: &str, name: &str) -> Result<u64, StoreError> {
        let counters = self.txn.open_table(schema::COUNTERS)?;
        Ok(counters.get((agent_id, name))?.map_or(0, |v| v.value()))
    }

    /// The first `event_seq` the agent's ledger still holds: 1, or where
    /// retention cut it.
    pub fn ledger_start(&self, agent_id: &str) -> Result<u64, StoreError> {
        let counters = self.txn.open_table(schema::COUNTERS)?;
        prune::pruned_before(&counters, agent_id)
    }

    /// Up to `limit` events with `event_seq >= from_seq`, in order.
    pub fn events(
        &self,
        agent_id: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let (rows, blocks) = self.ledger()?;
        tables::events_page(&rows, &blocks, agent_id, from_seq, limit)
    }

    /// As `events`, each event's stored JSON as it is (`(event_seq,
    /// bytes)`), for splicing into a response without decoding.
    pub fn events_raw(
        &self,
        agent_id: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let (rows, blocks) = self.ledger()?;
        tables::events_page_raw(&rows, &blocks, agent_id, from_seq, limit)
    }

    /// The events at these `event_seq`s, in the order asked (`None` where
    /// the agent has no such event).
    pub fn events_at(
        &self,
        agent_id: &str,
        seqs: &[u64],
    ) -> Result<Vec<Option<EventRecord>>, StoreError> {
        let (rows, blocks) = self.ledger()?;
        tables::events_at(&rows, &blocks, agent_id, seqs)
    }

    /// The newest `limit` events before `before_seq`, oldest first.
    pub fn events_before(
        &self,
        agent_id: &str,
        before_seq: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let (rows, blocks) = self.ledger()?;
        tables::events_page_before(&rows, &blocks, agent_id, before_seq, limit)
    }

    /// Up to `limit` events of one kind with `event_seq >= from_seq`.
    pub fn events_of_kind(
        &self,
        agent_id: &str,
        kind: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let index = self.txn.open_table(schema::EVENT_KINDS)?;
        let (rows, blocks) = self.ledger()?;
        tables::events_by_kind_page(&index, &rows, &blocks, agent_id, kind, from_seq, limit)
    }

    /// The newest `limit` events of one kind, oldest first.
    pub fn events_of_kind_latest(
        &self,
        agent_id: &str,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let index = self.txn.open_table(schema::EVENT_KINDS)?;
        let (rows, blocks) = self.ledger()?;
        tables::events_by_kind_latest(&index, &rows, &blocks, agent_id, kind, limit)
    }

    pub fn get<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
        id: &str,
    ) -> Result<Option<T>, StoreError> {
        let t = self.txn.open_table(which.definition())?;
        tables::get_keyed(&t, which, agent_id, id)
    }

    pub fn list<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
    ) -> Result<Vec<T>, StoreError> {
        let t = self.txn.open_table(which.definition())?;
        tables::list_keyed(&t, which, agent_id)
    }

    /// The newest `limit` records of one agent, oldest first.
    pub fn list_recent<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
        limit: usize,
    ) -> Result<Vec<T>, StoreError> {
        let t = self.txn.open_table(which.definition())?;
        tables::list_keyed_recent(&t, which, agent_id, limit)
    }

    /// The newest `limit` records with ids after `after`, oldest first,
    /// and whether older ones (still after `after`) were left out.
    pub fn list_recent_after<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<T>, bool), StoreError> {
        let t = self.txn.open_table(which.definition())?;
        tables::list_keyed_recent_after(&t, which, agent_id, after, limit)
    }

    pub fn count(&self, which: Keyed, agent_id: &str) -> Result<u64, StoreError> {
        let t = self.txn.open_table(which.definition())?;
        tables::count_keyed(&t, agent_id)
    }

    /// Whether the agent has any record in the table. O(log n).
    pub fn has_any(&self, which: Keyed, agent_id: &str) -> Result<bool, StoreError> {
        let t = self.txn.open_table(which.definition())?;
        let mut range = t.range((agent_id, "")..=(agent_id, "\u{10FFFF}"))?;
        Ok(range.next().transpose()?.is_some())
    }

    /// The agent's `Queued` messages in dequeue order: (band, seq, id).
    pub fn queue_pending(&self, agent_id: &str) -> Result<Vec<(u8, u64, String)>, StoreError> {
        let t = self.txn.open_table(schema::QUEUE_PENDING)?;
        tables::queue_pending(&t, agent_id)
    }

    pub fn index_list(&self, index: Index, agent_id: &str) -> Result<Vec<String>, StoreError> {
        let t = self.txn.open_table(index.definition())?;
        tables::index_list(&t, agent_id)
    }

    /// How many entries each agent has in a membership index, in one pass
    /// (the indexes hold current state, so this stays small).
    pub fn index_counts(&self, index: Index) -> Result<HashMap<String, u64>, StoreError> {
        let t = self.txn.open_table(index.definition())?;
        let mut out: HashMap<String, u64> = HashMap::new();
        for row in t.iter()? {
            let (k, _) = row?;
            *out.entry(k.value().0.to_owned()).or_default() += 1;
        }
        Ok(out)
    }

    pub fn index_contains(
        &self,
        index: Index,
        agent_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let t = self.txn.open_table(index.definition())?;
        Ok(t.get((agent_id, id))?.is_some())
    }
}

#[cfg(test)]
mod index_tests;
#[cfg(test)]
mod ledger_tests;
#[cfg(test)]
mod tests;
