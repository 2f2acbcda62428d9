//! `RuntimeHost`: the handle every feature holds. The store, the
//! configuration, each agent's wake and actor registry, submit, idle
//! tracking and shutdown. What starts and recovers the runtime and what an
//! actor runs live in `lifecycle.rs`, which reaches every feature; the
//! operations live by concern beside it: `runtime::operator` (prompts,
//! control, work items, tasks), `agents`, `approvals`, `workspace`,
//! `triggers`, `waiting`, and the turn in `runtime::turn`. Every operation
//! is a store transaction that records its events, followed by a wake of
//! the agent's actor; the actor (`actor.rs`) builds the scheduler
//! projection, decides, records the decision and executes it. Nothing here
//! polls: actors sleep until woken or until their next timer deadline.

pub use crate::protocol::views::{ControlAction, ControlOutcome, WakeHintOutcome};

mod actor;
mod agent_view;
pub mod cancel;
mod fate;
pub use fate::CommandsFate;
pub mod client;
pub mod dispatch;
mod lifecycle;
pub mod mcp;
mod quiet;
pub(crate) use quiet::release_free_heap;
pub mod run_once;
mod status;
pub mod upkeep;
pub mod watch;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, Notify};

use cancel::{CancelReason, TurnCancel};

use super::admission::Admitted;
use super::command_tasks::CommandTasks;
use super::provider::Provider;
use super::RuntimeError;
use crate::model::agent::AgentRecord;
use crate::model::message::AdmissionRequest;
use crate::store::Store;

/// Chooses the provider for an agent's next turn (its model override, else
/// the runtime default and fallbacks).
pub type ProviderSource = Arc<dyn Fn(&AgentRecord) -> Arc<dyn Provider> + Send + Sync>;

#[derive(Clone)]
pub struct HostConfig {
    /// Task output files and agent homes live under here.
    pub data_dir: PathBuf,
    pub provider: ProviderSource,
    /// Time between TERM and KILL when a task is stopped.
    pub stop_grace: Duration,
    /// A turn that needs more provider rounds than this fails.
    pub max_rounds: u32,
    /// When a long turn is reminded of its work item's progress
    /// (`HOLON_WORK_ITEM_STALE_REMINDER_*`).
    pub stale_reminder: crate::runtime::context::stale::StaleConfig,
    /// How this runtime presents itself in `runtime.status`.
    pub info: RuntimeInfo,
    /// The config file to watch for changes, and how to apply them.
    pub config_watch: Option<watch::ConfigWatch>,
    /// Which existing agents get an actor at start.
    pub actors: run_once::ActorScope,
    /// Which environment variables command tasks see.
    pub exec_env: super::exec_env::ExecEnvPolicy,
    /// How much command output re-enters the model.
    pub tool_output: super::tools::budget::ToolOutputBudget,
    /// The approval policy of workspaces without their own (`[policy]`).
    pub policy: crate::model::approval::ApprovalPolicy,
    /// The default agent's id (`main` unless configured).
    pub default_agent: String,
    /// The user's home, for user-scope skills and `~/.agents/templates`
    /// (`HOLON_USER_DIR`, else `$HOME`); never written.
    pub user_home: Option<PathBuf>,
    /// Delegation bounds (`[agents]`).
    pub agent_limits: crate::runtime::agents::limits::AgentLimits,
    /// Holon's directories besides `data_dir` (config, run, logs): never
    /// writable from a sandboxed command.
    pub holon_dirs: Vec<PathBuf>,
    /// Path unix sockets sandboxed commands may reach (`[policy]
    /// unix_sockets`).
    pub unix_sockets: Vec<PathBuf>,
    /// Refuse model commands when the kernel cannot sandbox them
    /// (`[policy] sandbox_required`).
    pub sandbox_required: bool,
    /// Rotated store backups (`[store] backup_every_hours`, `backup_keep`).
    pub backups: upkeep::BackupSchedule,
    /// Days of history kept (`[store] retain_days`; `None`: everything,
    /// and no scheduled prune).
    pub retain_days: Option<u32>,
    /// Prices: the catalog and `[pricing."PROVIDER/MODEL"]`.
    pub pricing: super::provider::catalog::Pricing,
    /// Every agent's daily budget unless it has its own (`[budget]`).
    pub budget: crate::model::agent::Budget,
    /// The MCP servers the operator configured (`[mcp_servers]`).
    pub mcp_servers: Vec<crate::runtime::mcp::ServerConfig>,
    /// The share of the prompt budget MCP tools' definitions may take
    /// whole; past it they are found with ToolSearch (`[mcp]
    /// tool_budget_share`).
    pub mcp_tool_share: f64,
    /// The operator's hooks (`[[hooks.EVENT]]`).
    pub hooks: crate::runtime::hooks::Hooks,
    /// The reviewer of approval requests (`[policy] reviewer` and what
    /// goes with it).
    pub reviewer: crate::runtime::approvals::review::ReviewerConfig,
    /// Holon's own program, which holds each command task so it can
    /// outlive the runtime (`None`: commands are the runtime's children).
    pub holder: Option<PathBuf>,
    /// What becomes of running commands: reattached at start or not, left
    /// running or stopped at shutdown.
    pub commands: CommandsFate,
    /// How long a turn that asked for approval waits for the answer
    /// before it ends (`[policy] approval_wait_secs`; zero: it ends at
    /// once, and the answer starts a turn of its own).
    pub approval_wait: Duration,
}

/// How long a turn waits for an approval's answer unless configured: the
/// five minutes a provider's prompt cache commonly lasts, past which going
/// on costs what a new turn would.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(300);

/// Identity facts for `runtime.status`.
#[derive(Debug, Clone, Default)]
pub struct RuntimeInfo {
    /// `embedded` (inside a console), `daemon` or `foreground`.
    pub mode: String,
    pub home: Option<String>,
    pub socket_path: Option<String>,
    /// The effective-config fingerprint the owning process started with.
    pub config_fingerprint: Option<String>,
}

impl HostConfig {
    pub fn new(data_dir: PathBuf, provider: ProviderSource) -> HostConfig {
        HostConfig {
            data_dir,
            provider,
            stop_grace: super::command_tasks::STOP_GRACE,
            max_rounds: 40,
            stale_reminder: crate::runtime::context::stale::StaleConfig::default(),
            info: RuntimeInfo {
                mode: "embedded".into(),
                home: None,
                socket_path: None,
                config_fingerprint: None,
            },
            config_watch: None,
            exec_env: super::exec_env::ExecEnvPolicy::default(),
            tool_output: super::tools::budget::ToolOutputBudget::default(),
            policy: crate::model::approval::ApprovalPolicy::default(),
            actors: run_once::ActorScope::All,
            default_agent: "main".into(),
            user_home: None,
            agent_limits: crate::runtime::agents::limits::AgentLimits::default(),
            holon_dirs: Vec::new(),
            unix_sockets: Vec::new(),
            sandbox_required: false,
            backups: upkeep::BackupSchedule::default(),
            retain_days: None,
            pricing: Default::default(),
            budget: Default::default(),
            mcp_servers: Vec::new(),
            mcp_tool_share: crate::runtime::tools::offer::DEFAULT_SHARE,
            hooks: Default::default(),
            reviewer: Default::default(),
            holder: None,
            commands: CommandsFate::StopAtExit,
            approval_wait: DEFAULT_APPROVAL_WAIT,
        }
    }
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
    pub(crate) tasks: CommandTasks,
    actors: Mutex<HashMap<String, Actor>>,
    shutdown: tokio::sync::watch::Sender<bool>,
    pub(crate) guidance_watch: watch::GuidanceWatch,
    /// Serialises workspace operations (no two worktrees for one request).
    pub(crate) workspace_lock: tokio::sync::Mutex<()>,
    pub(crate) live: broadcast::Sender<LiveUpdate>,
    pub(crate) started_at_ms: i64,
    /// Raised by `runtime.shutdown`; the process mode owning the host waits
    /// on it.
    shutdown_requested: Notify,
    shutdown_flag: AtomicBool,
    /// No new model turn starts (`hold_turns`): a console handing the
    /// runtime to a daemon waits for the running ones to end.
    pub(crate) turns_held: AtomicBool,
    /// Where this process's HTTP listener stands (set by its owner).
    pub(crate) ingress: Mutex<crate::model::trigger::IngressStatus>,
    /// Told by each actor that has nothing left to do, after each request
    /// a client's connection served, and when a subscriber goes (`quiet`).
    went_idle: Arc<Notify>,
    /// Every waiter is told whenever an actor settles (`until_idle`).
    went_idle_any: Notify,
    /// One store backup at a time (`backups`).
    pub(crate) backup_lock: tokio::sync::Mutex<()>,
    /// One prune at a time (`pruning`).
    pub(crate) prune_lock: tokio::sync::Mutex<()>,
    /// What an agent's actor runs (`lifecycle`): given at start, so this
    /// handle, which every feature uses, never depends on the turn.
    actor_body: ActorBody,
    /// The policy of every workspace without its own: `[policy]`, or the
    /// operator's `holon policy` kept in the store (`approvals::ops`).
    pub(crate) default_policy: std::sync::RwLock<crate::model::approval::DefaultPolicy>,
    /// One default-policy change at a time, so the store and the copy
    /// above agree in order.
    pub(crate) default_policy_change: tokio::sync::Mutex<()>,
    /// The MCP servers (`[mcp_servers]`), started on first need.
    pub(crate) mcp: crate::runtime::mcp::Hub,
    /// What records the servers' changes (`mcp::record_reports`): ended
    /// and awaited at shutdown, after the servers' last stop.
    pub(crate) mcp_reports: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The operator's hooks and how they run (`runtime::hooks`).
    pub(crate) hooks: Arc<crate::runtime::hooks::dispatch::HookHost>,
    /// The reviewer of approval requests (`approvals::reviewer`).
    pub(crate) reviewer: crate::runtime::approvals::reviewer_state::Reviewer,
}

/// Starts an agent's actor task.
type ActorBody =
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
        self.actors.lock().unwrap_or_else(|p| p.into_inner())
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
        let join = (self.inner.actor_body)(
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
            let changed = self.inner.went_idle_any.notified();
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

    /// How many commands a shutdown now would leave running for the next
    /// runtime (none unless tasks outlive this one).
    pub fn commands_outliving(&self) -> usize {
        match self.inner.config.commands == CommandsFate::Outlive {
            true => self.inner.tasks.held_count(),
            false => 0,
        }
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
        self.inner.shutdown_flag.store(true, Ordering::SeqCst);
        self.inner.shutdown_requested.notify_waiters();
    }

    /// Resolves once `request_shutdown` was called.
    pub async fn shutdown_requested(&self) {
        loop {
            let notified = self.inner.shutdown_requested.notified();
            if self.inner.shutdown_flag.load(Ordering::SeqCst) {
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

    pub fn tasks(&self) -> &CommandTasks {
        &self.inner.tasks
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

    /// Stop every actor (a turn in flight is cancelled at once; its message
    /// replays on the next start). Then, when tasks outlive the runtime,
    /// leave held commands running for the next one; else stop every
    /// running command task (TERM, then KILL after the grace) and wait
    /// until their terminal states are recorded.
    pub async fn shutdown(&self) {
        let outlive = self.inner.config.commands == CommandsFate::Outlive;
        self.shutdown_with(outlive).await
    }

    /// `shutdown`, saying whether held commands are left running for the
    /// next runtime (a console that detaches hands them to its daemon).
    pub async fn shutdown_with(&self, tasks_outlive: bool) {
        let _ = self.inner.shutdown.send(true);
        // No reviewer answers a request (and runs its call) from here on.
        self.inner.reviewer.stop().await;
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
        let grace = self.inner.config.stop_grace;
        match tasks_outlive {
            true => {
                let left = self.inner.tasks.release_all(grace).await;
                if left > 0 {
                    tracing::info!(left, "command tasks left running for the next runtime");
                }
            }
            false => self.inner.tasks.stop_all(grace).await,
        }
        self.inner.guidance_watch.stop().await;
        self.inner.mcp.stop().await;
        // The servers' stops are recorded before the store is let go.
        self.inner.mcp.close_reports();
        let recording = self
            .inner
            .mcp_reports
            .lock()
            .ok()
            .and_then(|mut r| r.take());
        if let Some(recording) = recording {
            let _ = recording.await;
        }
        // The hooks of what was committed until now, before the store goes.
        self.inner.hooks.stop().await;
    }
}
