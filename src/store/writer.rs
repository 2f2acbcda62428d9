//! The single writer: one thread owns every write transaction. It takes the
//! first queued job, drains whatever else is queued (up to `MAX_BATCH`), runs
//! them all in one transaction, commits once (one fsync), then acknowledges
//! each job and publishes the events they appended. Nothing is acknowledged
//! or published before its commit.
//!
//! A job that fails leaves no trace: the transaction is aborted, the failing
//! job gets its error, and the rest of the batch is re-run in a fresh
//! transaction. Jobs may therefore run more than once and must derive every
//! write from their inputs and what they read.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use redb::{Database, Durability, ReadableTable, Table, WriteTransaction};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::codec;
use super::event::{EventRecord, NewEvent};
use super::schema::{self, Index, Keyed};
use super::tables;
use super::StoreError;

/// The most jobs one commit carries.
pub const MAX_BATCH: usize = 4096;

pub(crate) type JobResult = Result<Box<dyn Any + Send>, StoreError>;
pub(crate) type JobFn = Box<dyn FnMut(&mut WriteCtx<'_>) -> JobResult + Send>;

pub(crate) enum Command {
    Job {
        run: JobFn,
        reply: oneshot::Sender<JobResult>,
    },
    /// Stop after the jobs already queued; reply once the writer has let go
    /// of the database.
    Close { reply: oneshot::Sender<()> },
}

/// What a write job sees: every table opened in the batch's transaction,
/// plus the event sequencer.
pub struct WriteCtx<'t> {
    agents: Table<'t, &'static str, &'static [u8]>,
    events: Table<'t, (&'static str, u64), &'static [u8]>,
    events_by_kind: Table<'t, (&'static str, &'static str, u64), ()>,
    queue_pending: Table<'t, (&'static str, u8, u64), &'static str>,
    counters: Table<'t, (&'static str, &'static str), u64>,
    keyed: Vec<Table<'t, (&'static str, &'static str), &'static [u8]>>,
    indexes: Vec<Table<'t, (&'static str, &'static str), ()>>,
    committed_seqs: &'t HashMap<String, u64>,
    batch_seqs: HashMap<String, u64>,
    appended: Vec<Arc<EventRecord>>,
    now_ms: i64,
    now_ts: String,
}

/// A record's stored bytes: its JSON, compressed when that is smaller
/// (`codec`).
fn encode(table: &'static str, value: &impl Serialize) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value)
        .map(codec::pack)
        .map_err(|e| StoreError::Encode {
            table,
            detail: e.to_string(),
        })
}

impl<'t> WriteCtx<'t> {
    fn open(
        txn: &'t WriteTransaction,
        committed_seqs: &'t HashMap<String, u64>,
    ) -> Result<Self, StoreError> {
        let now_ms = crate::now_ms();
        let mut keyed = Vec::with_capacity(Keyed::ALL.len());
        for k in Keyed::ALL {
            keyed.push(txn.open_table(k.definition())?);
        }
        let mut indexes = Vec::with_capacity(Index::ALL.len());
        for i in Index::ALL {
            indexes.push(txn.open_table(i.definition())?);
        }
        Ok(WriteCtx {
            agents: txn.open_table(schema::AGENTS)?,
            events: txn.open_table(schema::EVENTS)?,
            events_by_kind: txn.open_table(schema::EVENTS_BY_KIND)?,
            queue_pending: txn.open_table(schema::QUEUE_PENDING)?,
            counters: txn.open_table(schema::COUNTERS)?,
            keyed,
            indexes,
            committed_seqs,
            batch_seqs: HashMap::new(),
            appended: Vec::new(),
            now_ms,
            now_ts: crate::format_ts(now_ms),
        })
    }

    /// Wall-clock time of this batch (epoch ms), shared by its jobs.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// `now_ms` as an RFC 3339 timestamp (formatted once per batch).
    pub fn now_ts(&self) -> String {
        self.now_ts.clone()
    }

    // ---- events -------------------------------------------------------

    /// The last `event_seq` assigned to an agent, including this batch.
    pub fn last_seq(&self, agent_id: &str) -> Result<u64, StoreError> {
        if let Some(s) = self.batch_seqs.get(agent_id) {
            return Ok(*s);
        }
        if let Some(s) = self.committed_seqs.get(agent_id) {
            return Ok(*s);
        }
        tables::last_seq(&self.events, agent_id)
    }

    /// Append an event with the agent's next `event_seq`. It is published
    /// to subscribers only after the batch commits.
    pub fn append_event(&mut self, event: NewEvent) -> Result<u64, StoreError> {
        let seq = self.last_seq(&event.agent_id)? + 1;
        let record = EventRecord {
            event_seq: seq,
            id: crate::new_id("evt"),
            ts: self.now_ts(),
            kind: event.kind.to_owned(),
            agent_id: event.agent_id,
            provenance: event.provenance,
            payload: event.payload,
        };
        let bytes = encode("events", &record)?;
        self.events
            .insert((record.agent_id.as_str(), seq), bytes.as_slice())?;
        self.events_by_kind
            .insert((record.agent_id.as_str(), record.kind.as_str(), seq), ())?;
        match self.batch_seqs.get_mut(record.agent_id.as_str()) {
            Some(s) => *s = seq,
            None => {
                self.batch_seqs.insert(record.agent_id.clone(), seq);
            }
        }
        self.appended.push(Arc::new(record));
        Ok(seq)
    }

    // ---- agents -------------------------------------------------------

    pub fn get_agent<T: DeserializeOwned>(&self, agent_id: &str) -> Result<Option<T>, StoreError> {
        match self.agents.get(agent_id)? {
            Some(v) => tables::decode("agents", || agent_id.to_owned(), v.value()).map(Some),
            None => Ok(None),
        }
    }

    pub fn put_agent(&mut self, agent_id: &str, record: &impl Serialize) -> Result<(), StoreError> {
        let bytes = encode("agents", record)?;
        self.agents.insert(agent_id, bytes.as_slice())?;
        Ok(())
    }

    pub fn agent_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for row in self.agents.iter()? {
            out.push(row?.0.value().to_owned());
        }
        Ok(out)
    }

    // ---- keyed records ------------------------------------------------

    pub fn get<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
        id: &str,
    ) -> Result<Option<T>, StoreError> {
        tables::get_keyed(&self.keyed[which.index()], which, agent_id, id)
    }

    pub fn put(
        &mut self,
        which: Keyed,
        agent_id: &str,
        id: &str,
        record: &impl Serialize,
    ) -> Result<(), StoreError> {
        let bytes = encode(which.name(), record)?;
        self.keyed[which.index()].insert((agent_id, id), bytes.as_slice())?;
        Ok(())
    }

    pub fn list<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
    ) -> Result<Vec<T>, StoreError> {
        tables::list_keyed(&self.keyed[which.index()], which, agent_id)
    }

    pub fn remove(&mut self, which: Keyed, agent_id: &str, id: &str) -> Result<bool, StoreError> {
        Ok(self.keyed[which.index()].remove((agent_id, id))?.is_some())
    }

    // ---- membership indexes -------------------------------------------

    pub fn index_insert(
        &mut self,
        index: Index,
        agent_id: &str,
        id: &str,
    ) -> Result<(), StoreError> {
        self.indexes[index.index()].insert((agent_id, id), ())?;
        Ok(())
    }

    pub fn index_remove(
        &mut self,
        index: Index,
        agent_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self.indexes[index.index()]
            .remove((agent_id, id))?
            .is_some())
    }

    pub fn index_contains(
        &self,
        index: Index,
        agent_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self.indexes[index.index()].get((agent_id, id))?.is_some())
    }

    pub fn index_list(&self, index: Index, agent_id: &str) -> Result<Vec<String>, StoreError> {
        tables::index_list(&self.indexes[index.index()], agent_id)
    }

    /// The newest `limit` events of one kind, oldest first (this
    /// transaction's own appends included).
    pub fn events_of_kind_latest(
        &self,
        agent_id: &str,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<EventRecord>, StoreError> {
        tables::events_by_kind_latest(&self.events_by_kind, &self.events, agent_id, kind, limit)
    }

    // ---- queue index and counters -------------------------------------

    /// Add a `Queued` message to the agent's dequeue order.
    pub fn queue_push(
        &mut self,
        agent_id: &str,
        band: u8,
        seq: u64,
        message_id: &str,
    ) -> Result<(), StoreError> {
        self.queue_pending
            .insert((agent_id, band, seq), message_id)?;
        Ok(())
    }

    /// Remove a message from the dequeue order (it left `Queued`).
    pub fn queue_remove(&mut self, agent_id: &str, band: u8, seq: u64) -> Result<bool, StoreError> {
        Ok(self.queue_pending.remove((agent_id, band, seq))?.is_some())
    }

    /// The agent's `Queued` messages in dequeue order: (band, seq, id).
    pub fn queue_pending(&self, agent_id: &str) -> Result<Vec<(u8, u64, String)>, StoreError> {
        tables::queue_pending(&self.queue_pending, agent_id)
    }

    /// Increment and return a per-agent counter (first value is 1).
    pub fn next_counter(&mut self, agent_id: &str, name: &str) -> Result<u64, StoreError> {
        let current = self
            .counters
            .get((agent_id, name))?
            .map(|v| v.value())
            .unwrap_or(0);
        let next = current + 1;
        self.counters.insert((agent_id, name), next)?;
        Ok(next)
    }
}

/// Runs on its own thread until every sender is gone or `Close` arrives.
pub(crate) struct Writer {
    pub db: super::SharedDb,
    pub path: std::path::PathBuf,
    pub cache_bytes: usize,
    /// Shared with `Store::health`.
    pub failure: Arc<std::sync::Mutex<Option<String>>>,
    /// A commit failed with an I/O error: redb refuses every later write
    /// until the database is reopened, so the next batch reopens it first.
    pub broken: bool,
    pub rx: mpsc::Receiver<Command>,
    pub events: broadcast::Sender<Arc<EventRecord>>,
    pub durability: Durability,
    pub quick_repair: bool,
    /// Last committed `event_seq` per agent, so batches need not look it up.
    pub seqs: HashMap<String, u64>,
}

struct Pending {
    run: JobFn,
    reply: oneshot::Sender<JobResult>,
}

impl Writer {
    pub fn run(mut self) {
        let mut close_reply = None;
        while let Some(cmd) = self.rx.blocking_recv() {
            let mut batch = Vec::new();
            match cmd {
                Command::Job { run, reply } => batch.push(Pending { run, reply }),
                Command::Close { reply } => {
                    close_reply = Some(reply);
                }
            }
            while close_reply.is_none() && batch.len() < MAX_BATCH {
                match self.rx.try_recv() {
                    Ok(Command::Job { run, reply }) => batch.push(Pending { run, reply }),
                    Ok(Command::Close { reply }) => close_reply = Some(reply),
                    Err(_) => break,
                }
            }
            if !batch.is_empty() {
                self.commit_batch(batch);
            }
            if close_reply.is_some() {
                // Finish everything queued before the close request.
                while let Ok(cmd) = self.rx.try_recv() {
                    match cmd {
                        Command::Job { run, reply } => {
                            self.commit_batch(vec![Pending { run, reply }])
                        }
                        Command::Close { reply } => {
                            let _ = reply.send(());
                        }
                    }
                }
                break;
            }
        }
        let Writer { db, .. } = self;
        drop(db);
        if let Some(reply) = close_reply {
            let _ = reply.send(());
        }
    }

    fn commit_batch(&mut self, mut batch: Vec<Pending>) {
        loop {
            if batch.is_empty() {
                return;
            }
            match self.try_batch(&mut batch) {
                Attempt::Committed {
                    results,
                    appended,
                    seqs,
                } => {
                    self.seqs.extend(seqs);
                    if !self.broken {
                        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
                        if failure.is_some() {
                            tracing::info!("store writes succeed again");
                            *failure = None;
                        }
                    }
                    for (job, result) in batch.into_iter().zip(results) {
                        let _ = job.reply.send(Ok(result));
                    }
                    // No subscribers is fine: the ledger is the record.
                    if self.events.receiver_count() > 0 {
                        for event in appended {
                            let _ = self.events.send(event);
                        }
                    }
                    return;
                }
                Attempt::JobFailed { index, error } => {
                    let job = batch.remove(index);
                    let _ = job.reply.send(Err(error));
                }
                Attempt::Failed(error) => {
                    tracing::error!(%error, jobs = batch.len(), "store commit failed");
                    let message = match &error {
                        StoreError::Storage(m) => m.clone(),
                        other => other.to_string(),
                    };
                    // Whatever failed, the next batch starts from a freshly
                    // opened file (redb asks for it after an I/O error), and
                    // re-reads sequences.
                    self.broken = true;
                    self.seqs.clear();
                    *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(message.clone());
                    for job in batch {
                        let _ = job.reply.send(Err(StoreError::Storage(message.clone())));
                    }
                    return;
                }
            }
        }
    }

    /// After a failed commit: close the database (waiting briefly for
    /// readers to let go) and open the file again, which runs redb's repair.
    fn reopen(&mut self) -> Result<(), StoreError> {
        // (Already empty when an earlier reopen failed: open it again.)
        let old = self.db.write().unwrap_or_else(|p| p.into_inner()).take();
        drop(old);
        let mut last = None;
        for _ in 0..50 {
            match super::open_database(&self.path, self.cache_bytes) {
                Ok(db) => {
                    *self.db.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(db));
                    self.broken = false;
                    return Ok(());
                }
                // A reader still holds the old file open: wait for it.
                Err(e @ StoreError::Locked { .. }) => {
                    last = Some(e);
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        Err(last.unwrap_or(StoreError::Closed))
    }

    fn current_db(&self) -> Result<Arc<Database>, StoreError> {
        self.db
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(StoreError::Closed)
    }

    fn try_batch(&mut self, batch: &mut [Pending]) -> Attempt {
        if self.broken {
            if let Err(e) = self.reopen() {
                return Attempt::Failed(e);
            }
        }
        let db = match self.current_db() {
            Ok(db) => db,
            Err(e) => return Attempt::Failed(e),
        };
        let mut txn = match db.begin_write() {
            Ok(t) => t,
            Err(e) => return Attempt::Failed(e.into()),
        };
        txn.set_durability(self.durability);
        txn.set_quick_repair(self.quick_repair);
        let outcome = {
            let mut ctx = match WriteCtx::open(&txn, &self.seqs) {
                Ok(c) => c,
                Err(e) => return Attempt::Failed(e),
            };
            let mut results = Vec::with_capacity(batch.len());
            let mut failed = None;
            for (index, job) in batch.iter_mut().enumerate() {
                match (job.run)(&mut ctx) {
                    Ok(v) => results.push(v),
                    Err(error) => {
                        failed = Some((index, error));
                        break;
                    }
                }
            }
            match failed {
                Some((index, error)) => Err((index, error)),
                None => Ok((
                    results,
                    std::mem::take(&mut ctx.appended),
                    std::mem::take(&mut ctx.batch_seqs),
                )),
            }
        };
        match outcome {
            Err((index, error)) => {
                if let Err(e) = txn.abort() {
                    return Attempt::Failed(e.into());
                }
                Attempt::JobFailed { index, error }
            }
            Ok((results, appended, seqs)) => match txn.commit() {
                Ok(()) => Attempt::Committed {
                    results,
                    appended,
                    seqs,
                },
                Err(e) => {
                    // A failed commit may have left cached sequences ahead
                    // of the file; forget them and re-read on next use.
                    self.seqs.clear();
                    Attempt::Failed(e.into())
                }
            },
        }
    }
}

enum Attempt {
    Committed {
        results: Vec<Box<dyn Any + Send>>,
        appended: Vec<Arc<EventRecord>>,
        seqs: HashMap<String, u64>,
    },
    JobFailed {
        index: usize,
        error: StoreError,
    },
    Failed(StoreError),
}
