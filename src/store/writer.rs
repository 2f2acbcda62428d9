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

use redb::{Database, Durability};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::write_ctx::WriteCtx;
use super::StoreError;
use crate::model::event::EventRecord;

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

/// Runs on its own thread until every sender is gone or `Close` arrives.
pub(crate) struct Writer {
    pub db: super::SharedDb,
    /// Opens the file again (after a failure).
    pub opener: super::Opener,
    /// Shared with `Store::health`.
    pub failure: Arc<std::sync::Mutex<Option<String>>>,
    /// Shared with `Store::heal_attempts`.
    pub heal_attempts: Arc<std::sync::atomic::AtomicU64>,
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

/// While a commit failure stands, the writer tries to heal after
/// `HEAL_FIRST`, then backs off (doubling) to at most `HEAL_MOST`; it looks
/// for work every `POLL_WHILE_FAILING` meanwhile.
const HEAL_FIRST: std::time::Duration = std::time::Duration::from_millis(250);
const HEAL_MOST: std::time::Duration = std::time::Duration::from_secs(4);
const POLL_WHILE_FAILING: std::time::Duration = std::time::Duration::from_millis(25);
/// What a healing attempt writes: enough that a still-full disk fails it.
const HEAL_PROBE_BYTES: usize = 64 * 1024;

impl Writer {
    /// The next command: waited for while writes succeed; while they fail,
    /// looked for between attempts to heal (reopen the file and commit an
    /// empty transaction), so freeing space heals the store within a
    /// quarter second with no request needed — reads included, which see
    /// the reopened file.
    fn next_command(&mut self) -> Option<Command> {
        let mut last_heal = std::time::Instant::now();
        let mut wait = HEAL_FIRST;
        loop {
            if !self.failing() {
                return self.rx.blocking_recv();
            }
            match self.rx.try_recv() {
                Ok(cmd) => return Some(cmd),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => {}
            }
            if last_heal.elapsed() >= wait {
                self.heal();
                last_heal = std::time::Instant::now();
                wait = (wait * 2).min(HEAL_MOST);
            } else {
                std::thread::sleep(POLL_WHILE_FAILING);
            }
        }
    }

    fn failing(&self) -> bool {
        self.broken
            || self
                .failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
    }

    /// Try once: reopen the file if a failure left it unusable, then commit
    /// an empty transaction; success clears the failure.
    fn heal(&mut self) {
        self.heal_attempts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.broken && self.reopen().is_err() {
            return;
        }
        let Ok(db) = self.current_db() else { return };
        // A real write (a probe record, overwritten each time), so a disk
        // that is still full fails it.
        let committed = db.begin_write().map(|mut txn| {
            // Only a shared-writer mode refuses a durability; the store
            // opens exclusive, so this cannot fail.
            let _ = txn.set_durability(self.durability);
            txn.set_quick_repair(self.quick_repair);
            let probe = vec![0u8; HEAL_PROBE_BYTES];
            let wrote = match txn.open_table(super::schema::META) {
                Ok(mut meta) => meta
                    .insert("heal_probe", probe.as_slice())
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match wrote {
                Ok(()) => txn.commit().map_err(|e| e.to_string()),
                Err(e) => Err(e),
            }
        });
        match committed {
            Ok(Ok(())) => {
                tracing::info!("store writes succeed again");
                *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
            _ => self.broken = true,
        }
    }

    pub fn run(mut self) {
        let mut close_reply = None;
        while let Some(cmd) = self.next_command() {
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
            match (self.opener)() {
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
        if let Err(e) = txn.set_durability(self.durability) {
            return Attempt::Failed(e.into());
        }
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
            if failed.is_none() {
                if let Err(error) = ctx.seal_ledgers().and_then(|()| ctx.keep_id_time()) {
                    return Attempt::Failed(error);
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
