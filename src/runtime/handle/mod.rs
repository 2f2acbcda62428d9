//! `RuntimeHost`: the handle every feature holds. The store, the
//! configuration, each agent's wake and actor registry, submit, idle
//! tracking, the shutdown signal and stopping the actors, and the
//! features' running state as parts it does not name. It is not the top
//! of the runtime: what starts, recovers and shuts it down and what an
//! actor runs live in `host/` (its
//! `lifecycle.rs` reaches every feature), given to the handle at start;
//! the operations live by concern beside it: `runtime::operator`
//! (prompts, control, work items, tasks), `agents`, `approvals`,
//! `workspace`, `triggers`, `waiting`, and the turn in `runtime::turn`.
//! Every operation is a store transaction that records its events,
//! followed by a wake of the agent's actor; the actor (`host/actor.rs`)
//! builds the scheduler projection, decides, records the decision and
//! executes it. Nothing here polls: actors sleep until woken or until
//! their next timer deadline.

pub mod cancel;
mod config;
mod fate;
pub use config::{
    ActorScope, BackupSchedule, ConfigReloader, ConfigWatch, HostConfig, ProviderSource, Reloaded,
    RuntimeInfo, DEFAULT_APPROVAL_WAIT, STOP_GRACE,
};
pub use fate::CommandsFate;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, Notify};

use crate::protocol::payloads::CancelReason;
use cancel::TurnCancel;

use super::RuntimeError;
use crate::model::message::AdmissionRequest;
use crate::protocol::views::Admitted;
use crate::store::Store;

/// What loads each agent's guidance and watches it, and the config
/// file, for changes (`host::watch`): held by what it does, so the handle
/// needs nothing of how.
pub(crate) trait GuidanceWatcher: Send + Sync {
    /// Watch the agent's home and its active workspace's anchor; called
    /// again when the workspace changes. Idempotent.
    fn watch_agent(&self, agent_id: &str, home: &Path, anchor: &Path);
    /// The agent ended (archived): its directories are let go once no
    /// other agent needs them.
    fn unwatch_agent(&self, agent_id: &str);
    /// Stop watching and wait for the watcher (after the shutdown signal).
    fn stop(&self) -> crate::model::BoxFuture<'_, ()>;
}

/// Transient, not durable: progress that clients may show while it happens
/// (assistant text streaming in). Durable facts always arrive as events.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveUpdate {
    AssistantDelta {
        agent_id: String,
        run_id: String,
        /// The run's provider attempt this text belongs to (from 1): when
        /// it changes, the answer starts over.
        attempt: u32,
        text: String,
    },
    /// A provider attempt of a running turn failed and the chain retries
    /// it or moves to the next model; `attempt` is the run's number of
    /// the attempt that failed (its text is not the answer).
    ProviderRetry {
        agent_id: String,
        run_id: String,
        attempt: u32,
        notice: crate::model::attempt::RetryNotice,
    },
    /// An MCP server's progress on a call of a running turn.
    ToolProgress {
        agent_id: String,
        run_id: String,
        call_id: String,
        progress: crate::model::mcp::McpProgress,
    },
}

/// How an actor is woken, and whether it has settled every wake: each
/// `ring` counts, and the actor records the count it had read when a step
/// ended with nothing left to do. It is idle while the two agree, so a
/// wake that arrives while it decides keeps it busy (no lost wake-up).
pub(crate) struct ActorWake {
    notify: Notify,
    rung: AtomicU64,
    settled: AtomicU64,
}

impl ActorWake {
    /// A new actor has its recovery to do: busy until its first wait.
    fn new() -> ActorWake {
        ActorWake {
            notify: Notify::new(),
            rung: AtomicU64::new(1),
            settled: AtomicU64::new(0),
        }
    }

    pub(crate) fn ring(&self) {
        self.rung.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// The count a step starts from.
    pub(crate) fn seen(&self) -> u64 {
        self.rung.load(Ordering::SeqCst)
    }

    /// The step that started at `seen` left nothing to do.
    pub(crate) fn settle(&self, seen: u64) {
        self.settled.store(seen, Ordering::SeqCst);
    }

    fn is_idle(&self) -> bool {
        self.settled.load(Ordering::SeqCst) == self.rung.load(Ordering::SeqCst)
    }

    pub(crate) async fn notified(&self) {
        self.notify.notified().await
    }
}

pub(crate) struct Actor {
    wake: Arc<ActorWake>,
    pub(crate) cancel: Arc<TurnCancel>,
    join: Option<tokio::task::JoinHandle<()>>,
}

pub(crate) struct HostInner {
    pub(crate) store: Store,
    pub(crate) config: HostConfig,
    /// The actors, shutdown and idle signals: the handle's own.
    pub(crate) core: Core,
    /// Each agent's guidance files and the config file, watched
    /// (`host::watch`).
    pub(crate) guidance_watch: Box<dyn GuidanceWatcher>,
    /// Serialises workspace operations (no two worktrees for one request).
    pub(crate) workspace_lock: tokio::sync::Mutex<()>,
    pub(crate) live: broadcast::Sender<LiveUpdate>,
    pub(crate) started_at_ms: i64,
    /// No new model turn starts (`hold_turns`): a console handing the
    /// runtime to a daemon waits for the running ones to end.
    pub(crate) turns_held: AtomicBool,
    /// Where this process's HTTP listener stands (set by its owner).
    pub(crate) ingress: Mutex<crate::model::trigger::IngressStatus>,
    /// One store backup at a time (`host::upkeep`).
    pub(crate) backup_lock: tokio::sync::Mutex<()>,
    /// One prune at a time (`host::upkeep`).
    pub(crate) prune_lock: tokio::sync::Mutex<()>,
    /// The policy of every workspace without its own: `[policy]`, or the
    /// operator's `holon policy` kept in the store (`approvals::policies`).
    pub(crate) default_policy: std::sync::RwLock<crate::model::approval::DefaultPolicy>,
    /// One default-policy change at a time, so the store and the copy
    /// above agree in order.
    pub(crate) default_policy_change: tokio::sync::Mutex<()>,
    /// What features keep here (the command tasks, the MCP servers, the
    /// hooks, the reviewer), each reached through its feature's accessor.
    pub(crate) parts: Parts,
}

impl HostInner {
    /// A feature's part (`Parts::get`).
    pub(crate) fn part<T: std::any::Any + Send + Sync>(&self) -> &T {
        self.parts.get()
    }
}

/// The features' running state, each held by its type: the handle names
/// none of them. Every part is given at start (`host::lifecycle`), so
/// each feature's accessor finds its own.
#[derive(Default)]
pub(crate) struct Parts(HashMap<std::any::TypeId, Box<dyn std::any::Any + Send + Sync>>);

impl Parts {
    /// Keep `part`; a second of the same type replaces the first.
    pub(crate) fn insert<T: std::any::Any + Send + Sync>(&mut self, part: T) {
        self.0.insert(std::any::TypeId::of::<T>(), Box::new(part));
    }

    /// The part of type `T`. Every part is given at start, before any
    /// feature runs: a missing one is a runtime built wrong, not a state
    /// to recover from.
    pub(crate) fn get<T: std::any::Any + Send + Sync>(&self) -> &T {
        self.0
            .get(&std::any::TypeId::of::<T>())
            .and_then(|p| p.downcast_ref::<T>())
            .unwrap_or_else(|| {
                panic!(
                    "the runtime was started without its {}",
                    std::any::type_name::<T>()
                )
            })
    }
}

/// What only the handle touches: the actors' registry, the shutdown and
/// idle signals, and what an actor runs.
pub(crate) struct Core {
    actors: Mutex<HashMap<String, Actor>>,
    shutdown: tokio::sync::watch::Sender<bool>,
    /// Raised by `runtime.shutdown`; the process mode owning the host waits
    /// on it.
    shutdown_requested: Notify,
    shutdown_flag: AtomicBool,
    /// Told by each actor that has nothing left to do, after each request
    /// a client's connection served, and when a subscriber goes (`quiet`).
    went_idle: Arc<Notify>,
    /// Every waiter is told whenever an actor settles (`until_idle`).
    went_idle_any: Notify,
    /// What an agent's actor runs (`lifecycle`): given at start, so this
    /// handle, which every feature uses, never depends on the turn.
    actor_body: ActorBody,
}

impl Core {
    /// No actor yet; `shutdown` is sent `true` when the runtime stops.
    pub(crate) fn new(shutdown: tokio::sync::watch::Sender<bool>, actor_body: ActorBody) -> Core {
        Core {
            actors: Mutex::new(HashMap::new()),
            shutdown,
            shutdown_requested: Notify::new(),
            shutdown_flag: AtomicBool::new(false),
            went_idle: Arc::new(Notify::new()),
            went_idle_any: Notify::new(),
            actor_body,
        }
    }
}

/// Starts an agent's actor task.
pub(crate) type ActorBody =
    fn(&Arc<HostInner>, &str, Arc<ActorWake>, Arc<TurnCancel>) -> tokio::task::JoinHandle<()>;

/// A running runtime. Cheap to clone.
#[derive(Clone)]
pub struct RuntimeHost {
    pub(crate) inner: Arc<HostInner>,
}

pub(crate) fn io_err(what: String) -> impl FnOnce(std::io::Error) -> RuntimeError {
    move |e| RuntimeError::Io {
        what,
        message: e.to_string(),
    }
}

impl HostInner {
    /// The policy of every workspace without its own, as it stands now.
    pub(crate) fn default_policy(&self) -> crate::model::approval::ApprovalPolicy {
        self.default_policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .policy
            .clone()
    }

    pub(crate) fn actors(&self) -> std::sync::MutexGuard<'_, HashMap<String, Actor>> {
        self.core.actors.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves to `true` once the runtime stops.
    pub(crate) fn shutdown_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.core.shutdown.subscribe()
    }

    /// What is told when the runtime may have gone quiet (`quiet`).
    pub(crate) fn quiet_signal(&self) -> Arc<Notify> {
        Arc::clone(&self.core.went_idle)
    }

    /// An actor has settled every wake it was given (`until_idle`).
    pub(crate) fn actor_settled(&self) {
        self.core.went_idle.notify_one();
        self.core.went_idle_any.notify_waiters();
    }

    /// A client's request was served: work done, the runtime may be quiet.
    pub(crate) fn request_served(&self) {
        self.core.went_idle.notify_one();
    }

    /// An archived agent's actor ends: its registration and its guidance
    /// watch go (a thousand children archived over a year would otherwise
    /// each keep an idle actor until the next restart).
    pub(crate) fn retire_actor(&self, agent_id: &str) {
        // Dropping the join handle detaches the task, which is ending.
        drop(self.actors().remove(agent_id));
        self.guidance_watch.unwatch_agent(agent_id);
        tracing::debug!(agent_id, "archived: its actor ended");
    }

    pub(crate) fn wake(&self, agent_id: &str) {
        if let Some(a) = self.actors().get(agent_id) {
            a.wake.ring();
        }
    }

    pub(crate) fn ingress(&self) -> crate::model::trigger::IngressStatus {
        self.ingress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn agent_home(&self, agent_id: &str) -> PathBuf {
        super::agent::home_dir(&self.config.data_dir, agent_id)
    }
}

impl RuntimeHost {
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn subscribe_live(&self) -> broadcast::Receiver<LiveUpdate> {
        self.inner.live.subscribe()
    }

    /// Give the agent an actor unless it has one. What the actor runs is
    /// the lifecycle's `actor_body`.
    pub(crate) fn spawn_actor(&self, agent_id: &str) {
        let mut actors = self.inner.actors();
        if actors.contains_key(agent_id) {
            return;
        }
        let wake = Arc::new(ActorWake::new());
        let cancel = Arc::new(TurnCancel::default());
        let join = (self.inner.core.actor_body)(
            &self.inner,
            agent_id,
            Arc::clone(&wake),
            Arc::clone(&cancel),
        );
        actors.insert(
            agent_id.to_owned(),
            Actor {
                wake,
                cancel,
                join: Some(join),
            },
        );
    }

    pub fn wake(&self, agent_id: &str) {
        self.inner.wake(agent_id);
    }

    /// Whether the agent has an actor here (an archived one has none).
    pub fn has_actor(&self, agent_id: &str) -> bool {
        self.inner.actors().contains_key(agent_id)
    }

    /// Resolves when every agent's actor has settled every wake it was
    /// given: nothing is deciding, running a turn or about to. What waits
    /// on the outside (a timer, a task still running, a model that has not
    /// been asked) is not work: tests wait here instead of sleeping, and
    /// bound the wait with a timeout where "does not hang" is the point.
    pub async fn until_idle(&self) {
        loop {
            let changed = self.inner.core.went_idle_any.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.settled() {
                return;
            }
            changed.await;
        }
    }

    /// Whether every actor is idle now (`until_idle` would return).
    pub fn settled(&self) -> bool {
        self.inner.actors().values().all(|a| a.wake.is_idle())
    }

    /// Start no new model turn from now on (the running ones go on, and
    /// queued work stays queued, durable, for the next runtime). Used
    /// before handing the store to another process, so a turn is never
    /// cut off and paid for twice.
    pub fn hold_turns(&self) {
        self.inner.turns_held.store(true, Ordering::SeqCst);
    }

    /// Ask the owner of this runtime to shut it down (the socket's
    /// `runtime.shutdown`).
    pub fn request_shutdown(&self) {
        self.inner.core.shutdown_flag.store(true, Ordering::SeqCst);
        self.inner.core.shutdown_requested.notify_waiters();
    }

    /// Resolves once `request_shutdown` was called.
    pub async fn shutdown_requested(&self) {
        loop {
            let notified = self.inner.core.shutdown_requested.notified();
            if self.inner.core.shutdown_flag.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Admit a message and wake its agent.
    pub async fn submit(&self, req: AdmissionRequest) -> Result<Admitted, RuntimeError> {
        self.submit_once(req, None).await
    }

    /// `submit`, admitted once per client `request_id`.
    pub async fn submit_once(
        &self,
        req: AdmissionRequest,
        request_id: Option<String>,
    ) -> Result<Admitted, RuntimeError> {
        let agent_id = req.agent_id.clone();
        let admitted = super::admission::admit_once(&self.inner.store, req, request_id).await?;
        self.wake(&agent_id);
        Ok(admitted)
    }

    pub(crate) fn from_inner(inner: &Arc<HostInner>) -> RuntimeHost {
        RuntimeHost {
            inner: Arc::clone(inner),
        }
    }

    /// Cancel the agent's running turn now (an in-flight provider request
    /// is dropped). A no-op when no turn runs: the request is forgotten
    /// when the next turn starts.
    pub(crate) fn cancel_turn(&self, agent_id: &str, reason: CancelReason) {
        if let Some(a) = self.inner.actors().get(agent_id) {
            a.cancel.request(reason);
            a.wake.ring();
        }
    }

    /// Nothing new starts from now on: every waiter on the shutdown
    /// signal (watchers, schedules, actors) is told.
    pub(crate) fn signal_shutdown(&self) {
        let _ = self.inner.core.shutdown.send(true);
    }

    /// Stop every actor and wait for each: a turn in flight is cancelled
    /// at once (its message replays on the next start).
    pub(crate) async fn stop_actors(&self) {
        let joins: Vec<_> = {
            let mut actors = self.inner.actors();
            actors
                .values_mut()
                .map(|a| {
                    a.cancel.request(CancelReason::RuntimeShutdown);
                    a.wake.ring();
                    a.join.take()
                })
                .collect()
        };
        for j in joins.into_iter().flatten() {
            let _ = j.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Parts;

    struct Servers(u32);
    struct Hooks(&'static str);

    #[test]
    fn a_part_is_found_by_its_type_and_a_missing_one_is_named() {
        let mut parts = Parts::default();
        parts.insert(Servers(1));
        parts.insert(Servers(2));
        assert_eq!(parts.get::<Servers>().0, 2, "the second replaced the first");
        let missing =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parts.get::<Hooks>().0));
        let message = missing
            .err()
            .and_then(|p| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(
            message.contains("without its") && message.contains("Hooks"),
            "{message}"
        );
    }
}
