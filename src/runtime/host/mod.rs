//! `RuntimeHost`: the agent registry with one actor task per agent, and the
//! runtime operations clients call (submit, control, work items, tasks;
//! wake hints, timers and waiting intents live in `waiting_ops.rs`). Every operation is a store
//! transaction that records its events, followed by a wake of the agent's
//! actor; the actor (`actor.rs`) builds the scheduler projection, decides,
//! records the decision and executes it. Nothing here polls: actors sleep
//! until woken or until their next timer deadline.

mod actor;
pub mod cancel;
mod context_ops;
pub mod dispatch;
pub mod frame;
pub mod projection;
pub mod prompt;
pub mod run_once;
pub mod turn;
mod turn_context;
mod turn_end;
mod turn_tools;
mod waiting_ops;
pub mod watch;
pub mod workspace_ops;
mod workspace_view;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, Notify};

use cancel::{CancelReason, TurnCancel};

use super::admission::{ensure_agent, Admitted};
use super::agent::{AgentRecord, AgentStatus};
use super::command_tasks::{CommandSpec, CommandTasks, TaskOrigin};
use super::envelope::AdmissionRequest;
use super::provider::Provider;
use super::tasks::TaskRecord;
use super::work_items::WorkItemRecord;
use super::work_ops::{self, CreateWorkItem, UpdateWorkItem, WorkItemSource};
use super::RuntimeError;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::store::{Provenance, Store, StoreError};

/// The agent record inside a write job, or the job's `UnknownAgent`
/// rejection (nothing of the job is written).
pub(crate) fn agent_in(
    tx: &crate::store::WriteCtx<'_>,
    agent_id: &str,
) -> Result<AgentRecord, StoreError> {
    tx.get_agent(agent_id)?.ok_or_else(|| {
        StoreError::rejected(RuntimeError::UnknownAgent {
            agent_id: agent_id.to_owned(),
        })
    })
}

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
    /// How this runtime presents itself in `runtime.status`.
    pub info: RuntimeInfo,
    /// The config file to watch for changes, and how to apply them.
    pub config_watch: Option<watch::ConfigWatch>,
    /// Which existing agents get an actor at start.
    pub actors: run_once::ActorScope,
    /// Which environment variables command tasks see.
    pub exec_env: super::exec_env::ExecEnvPolicy,
    /// How much command output re-enters the model.
    pub tool_output: super::tools::ToolOutputBudget,
}

/// Identity facts for `runtime.status`.
#[derive(Debug, Clone, Default)]
pub struct RuntimeInfo {
    /// `embedded` (inside a console), `daemon` or `foreground`.
    pub mode: String,
    pub home: Option<String>,
    pub socket_path: Option<String>,
}

impl HostConfig {
    pub fn new(data_dir: PathBuf, provider: ProviderSource) -> HostConfig {
        HostConfig {
            data_dir,
            provider,
            stop_grace: super::command_tasks::STOP_GRACE,
            max_rounds: 40,
            info: RuntimeInfo {
                mode: "embedded".into(),
                home: None,
                socket_path: None,
            },
            config_watch: None,
            exec_env: super::exec_env::ExecEnvPolicy::default(),
            tool_output: super::tools::ToolOutputBudget::default(),
            actors: run_once::ActorScope::All,
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
        text: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    Pause,
    Resume,
    Stop,
    Wake,
    /// Abort the turn in progress at its next safe point.
    Abort,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlOutcome {
    pub agent_id: String,
    pub action: ControlAction,
    pub from: AgentStatus,
    pub to: AgentStatus,
    pub note: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeHintOutcome {
    Submitted,
    Coalesced,
    Ignored,
}

struct Actor {
    wake: Arc<Notify>,
    cancel: Arc<TurnCancel>,
    join: Option<tokio::task::JoinHandle<()>>,
}

pub(crate) struct HostInner {
    pub(crate) store: Store,
    pub(crate) config: HostConfig,
    pub(crate) tasks: CommandTasks,
    actors: Mutex<HashMap<String, Actor>>,
    shutdown: tokio::sync::watch::Sender<bool>,
    guidance_watch: watch::GuidanceWatch,
    /// Serialises workspace operations (no two worktrees for one request).
    workspace_lock: tokio::sync::Mutex<()>,
    pub(crate) live: broadcast::Sender<LiveUpdate>,
    pub(crate) started_at_ms: i64,
    /// Raised by `runtime.shutdown`; the process mode owning the host waits
    /// on it.
    shutdown_requested: Notify,
    shutdown_flag: AtomicBool,
}

/// A running runtime. Cheap to clone.
#[derive(Clone)]
pub struct RuntimeHost {
    inner: Arc<HostInner>,
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> RuntimeError {
    move |e| RuntimeError::Io {
        what,
        message: e.to_string(),
    }
}

impl HostInner {
    fn actors(&self) -> std::sync::MutexGuard<'_, HashMap<String, Actor>> {
        self.actors.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn wake(&self, agent_id: &str) {
        if let Some(a) = self.actors().get(agent_id) {
            a.wake.notify_one();
        }
    }

    pub(crate) fn agent_home(&self, agent_id: &str) -> PathBuf {
        super::agent::home_dir(&self.config.data_dir, agent_id)
    }
}

impl RuntimeHost {
    /// Recover every agent from the store (turn flags, interrupted tasks,
    /// never-queued task results) and start one actor per agent.
    pub async fn start(store: Store, config: HostConfig) -> Result<RuntimeHost, RuntimeError> {
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let (live, _) = broadcast::channel(1024);
        let output_dir = config.data_dir.join("tasks");
        let inner = Arc::new_cyclic(|weak: &Weak<HostInner>| {
            let guidance_watch = watch::GuidanceWatch::start(
                weak.clone(),
                config.config_watch.clone(),
                shutdown.subscribe(),
            );
            let weak = weak.clone();
            let wake: super::command_tasks::WakeFn = Arc::new(move |agent_id: &str| {
                if let Some(inner) = weak.upgrade() {
                    inner.wake(agent_id);
                }
            });
            HostInner {
                tasks: CommandTasks::new(store.clone(), output_dir, config.exec_env.clone(), wake),
                store,
                config,
                actors: Mutex::new(HashMap::new()),
                shutdown,
                guidance_watch,
                workspace_lock: tokio::sync::Mutex::new(()),
                live,
                started_at_ms: crate::now_ms(),
                shutdown_requested: Notify::new(),
                shutdown_flag: AtomicBool::new(false),
            }
        });
        let host = RuntimeHost { inner };
        let agents: Vec<AgentRecord> = host.inner.store.read()?.agents()?;
        for agent in agents {
            host.recover_agent(&agent.id).await?;
            if host.inner.config.actors.includes(&agent.id) {
                host.spawn_actor(&agent.id);
            }
        }
        Ok(host)
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn subscribe_live(&self) -> broadcast::Receiver<LiveUpdate> {
        self.inner.live.subscribe()
    }

    async fn recover_agent(&self, agent_id: &str) -> Result<(), RuntimeError> {
        let id = agent_id.to_owned();
        self.inner
            .store
            .write(move |tx| {
                let Some(mut agent) = tx.get_agent::<AgentRecord>(&id)? else {
                    return Ok(());
                };
                let was_running = agent.turn_in_progress;
                let from = agent.status;
                agent.turn_in_progress = false;
                agent.current_run_id = None;
                agent.status = agent.status.at_rest();
                tx.put_agent(&id, &agent)?;
                let dequeued = tx.index_list(crate::store::Index::Dequeued, &id)?;
                let started = ev::RuntimeStarted {
                    status_before: from,
                    status: agent.status,
                    turn_was_in_progress: was_running,
                    replay_message_ids: dequeued,
                };
                tx.append_event(new_event(
                    &id,
                    Provenance::default(),
                    Event::RuntimeStarted(started),
                ))?;
                Ok(())
            })
            .await?;
        self.recover_workspace(agent_id).await?;
        let interrupted = self
            .inner
            .tasks
            .recover(agent_id, self.inner.config.stop_grace)
            .await?;
        if !interrupted.is_empty() {
            tracing::warn!(agent_id, ?interrupted, "tasks interrupted by restart");
        }
        Ok(())
    }

    fn spawn_actor(&self, agent_id: &str) {
        let mut actors = self.inner.actors();
        if actors.contains_key(agent_id) {
            return;
        }
        let home = self.inner.agent_home(agent_id);
        let anchor = self
            .inner
            .execution_of(agent_id)
            .map(|s| PathBuf::from(s.workspace_anchor))
            .unwrap_or_else(|_| home.clone());
        self.inner
            .guidance_watch
            .watch_agent(agent_id, &home, &anchor);
        let wake = Arc::new(Notify::new());
        let cancel = Arc::new(TurnCancel::default());
        let join = tokio::spawn(actor::run(
            Arc::clone(&self.inner),
            agent_id.to_owned(),
            Arc::clone(&wake),
            Arc::clone(&cancel),
            self.inner.shutdown.subscribe(),
        ));
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

    /// Create an agent (or return the existing one) and start its actor.
    pub async fn create_agent(&self, agent_id: &str) -> Result<AgentRecord, RuntimeError> {
        let record = ensure_agent(&self.inner.store, agent_id).await?;
        self.spawn_actor(agent_id);
        Ok(record)
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

    pub async fn control(
        &self,
        agent_id: &str,
        action: ControlAction,
    ) -> Result<ControlOutcome, RuntimeError> {
        let current: AgentRecord = self.inner.store.read()?.agent(agent_id)?.ok_or_else(|| {
            RuntimeError::UnknownAgent {
                agent_id: agent_id.to_owned(),
            }
        })?;
        match action {
            ControlAction::Wake => {
                if current.status == AgentStatus::Stopped {
                    return Err(RuntimeError::AgentStopped {
                        agent_id: agent_id.to_owned(),
                        status: AgentStatus::Stopped.as_str(),
                    });
                }
                let outcome = self
                    .wake_hint(agent_id, "operator wake", Some("operator".into()), None)
                    .await?;
                return Ok(ControlOutcome {
                    agent_id: agent_id.to_owned(),
                    action,
                    from: current.status,
                    to: current.status,
                    note: format!("wake hint {}", wire(&outcome)),
                });
            }
            ControlAction::Abort => {
                if !current.turn_in_progress {
                    return Err(RuntimeError::Invalid(
                        "no turn is in progress to abort".into(),
                    ));
                }
                // Recorded (control_applied) below, then the turn is
                // cancelled.
            }
            ControlAction::Pause | ControlAction::Resume | ControlAction::Stop => {}
        }
        let id = agent_id.to_owned();
        let outcome = self
            .inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = agent_in(tx, &id)?;
                let from = agent.status;
                let (to, note) = match action {
                    ControlAction::Pause if from == AgentStatus::Stopped => {
                        return Err(StoreError::rejected(RuntimeError::Invalid(
                            "the agent is stopped; resume it before pausing".into(),
                        )))
                    }
                    ControlAction::Pause => (
                        AgentStatus::Paused,
                        "admitted input waits and no new model turn starts until resumed; tasks keep running",
                    ),
                    ControlAction::Resume => match from {
                        AgentStatus::Paused | AgentStatus::Stopped => {
                            (AgentStatus::AwakeIdle, "admitted input runs again")
                        }
                        AgentStatus::Booting
                        | AgentStatus::AwakeIdle
                        | AgentStatus::AwakeRunning
                        | AgentStatus::AwaitingTask
                        | AgentStatus::Asleep => (from, "already running"),
                    },
                    ControlAction::Stop => (
                        AgentStatus::Stopped,
                        "new prompts are refused until resumed; a running turn is cancelled",
                    ),
                    ControlAction::Abort => (
                        from,
                        "the turn stops now: an in-flight model request is dropped and no \
                         further tool starts",
                    ),
                    ControlAction::Wake => (from, ""),
                };
                agent.status = to;
                tx.put_agent(&id, &agent)?;
                let provenance = Provenance {
                    origin: Some("operator".into()),
                    ..Provenance::default()
                };
                let applied = ev::ControlApplied {
                    action,
                    from,
                    to,
                    note: note.to_owned(),
                };
                tx.append_event(new_event(&id, provenance, Event::ControlApplied(applied)))?;
                Ok(ControlOutcome {
                    agent_id: id.clone(),
                    action,
                    from,
                    to,
                    note: note.to_owned(),
                })
            })
            .await?;
        let cancel = match action {
            ControlAction::Stop => Some(CancelReason::AgentStopped),
            ControlAction::Abort => Some(CancelReason::OperatorAbort),
            ControlAction::Pause | ControlAction::Resume | ControlAction::Wake => None,
        };
        if let Some(reason) = cancel {
            if let Some(a) = self.inner.actors().get(agent_id) {
                a.cancel.request(reason);
            }
        }
        self.wake(agent_id);
        Ok(outcome)
    }

    /// Remember the console's display mode for this agent (survives
    /// restarts); records `display_mode_changed`.
    pub async fn set_display_mode(
        &self,
        agent_id: &str,
        mode: super::agent::DisplayMode,
    ) -> Result<AgentRecord, RuntimeError> {
        let id = agent_id.to_owned();
        Ok(self
            .inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = agent_in(tx, &id)?;
                let from = agent.display_mode;
                agent.display_mode = mode;
                tx.put_agent(&id, &agent)?;
                let changed = ev::DisplayModeChanged { from, to: mode };
                tx.append_event(new_event(
                    &id,
                    Provenance::default(),
                    Event::DisplayModeChanged(changed),
                ))?;
                Ok(agent)
            })
            .await?)
    }

    // ---- work items (operator / control plane) --------------------------

    pub async fn create_work_item(
        &self,
        agent_id: &str,
        req: CreateWorkItem,
    ) -> Result<WorkItemRecord, RuntimeError> {
        self.create_work_item_once(agent_id, req, None).await
    }

    /// `create_work_item`, once per client `request_id`.
    pub async fn create_work_item_once(
        &self,
        agent_id: &str,
        req: CreateWorkItem,
        request_id: Option<String>,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r = work_ops::create_once(
            &self.inner.store,
            &self.inner.agent_home(agent_id),
            agent_id,
            req,
            WorkItemSource::Operator,
            request_id,
        )
        .await?;
        self.wake(agent_id);
        Ok(r)
    }

    pub async fn pick_work_item(
        &self,
        agent_id: &str,
        work_item_id: &str,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r = work_ops::pick(
            &self.inner.store,
            agent_id,
            work_item_id,
            WorkItemSource::Operator,
        )
        .await?;
        self.wake(agent_id);
        Ok(r)
    }

    pub async fn update_work_item(
        &self,
        agent_id: &str,
        req: UpdateWorkItem,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r =
            work_ops::update(&self.inner.store, agent_id, req, WorkItemSource::Operator).await?;
        self.wake(agent_id);
        Ok(r)
    }

    pub async fn complete_work_item(
        &self,
        agent_id: &str,
        work_item_id: &str,
        note: Option<String>,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r = work_ops::complete(
            &self.inner.store,
            agent_id,
            work_item_id,
            note,
            WorkItemSource::Operator,
        )
        .await?;
        self.wake(agent_id);
        Ok(r)
    }

    // ---- tasks ------------------------------------------------------------

    /// `!CMD` from the operator: a command task in the agent's current
    /// directory (its active workspace's cwd), shown to the operator, not
    /// re-entered into the model.
    pub async fn run_operator_command(
        &self,
        agent_id: &str,
        cmd: &str,
    ) -> Result<TaskRecord, RuntimeError> {
        let workdir = PathBuf::from(self.inner.execution_of(agent_id)?.cwd);
        std::fs::create_dir_all(&workdir)
            .map_err(io_err(format!("creating {}", workdir.display())))?;
        // The operator can answer a prompt it asks (the tasks overlay's
        // input line, `task.input`); stop it if it waits for nothing.
        let spec = CommandSpec {
            cmd: cmd.to_owned(),
            workdir,
            accepts_input: true,
        };
        self.inner
            .tasks
            .start(agent_id, spec, TaskOrigin::Operator)
            .await
    }

    pub async fn start_command_task(
        &self,
        agent_id: &str,
        spec: CommandSpec,
        origin: TaskOrigin,
    ) -> Result<TaskRecord, RuntimeError> {
        self.inner.tasks.start(agent_id, spec, origin).await
    }

    pub async fn stop_task(
        &self,
        agent_id: &str,
        task_id: &str,
    ) -> Result<TaskRecord, RuntimeError> {
        self.inner
            .tasks
            .stop(agent_id, task_id, self.inner.config.stop_grace)
            .await
    }

    pub async fn task_input(
        &self,
        agent_id: &str,
        task_id: &str,
        text: &str,
    ) -> Result<super::command_tasks::TaskInputReceipt, RuntimeError> {
        self.inner.tasks.input(agent_id, task_id, text).await
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
            a.wake.notify_one();
        }
    }

    /// Stop every actor (a turn in flight is cancelled at once; its message
    /// replays on the next start), then stop every running command task
    /// (TERM, then KILL after the grace) and wait until their terminal
    /// states are recorded.
    pub async fn shutdown(&self) {
        let _ = self.inner.shutdown.send(true);
        let joins: Vec<_> = {
            let mut actors = self.inner.actors();
            actors
                .values_mut()
                .map(|a| {
                    a.cancel.request(CancelReason::RuntimeShutdown);
                    a.wake.notify_one();
                    a.join.take()
                })
                .collect()
        };
        for j in joins.into_iter().flatten() {
            let _ = j.await;
        }
        self.inner
            .tasks
            .stop_all(self.inner.config.stop_grace)
            .await;
        self.inner.guidance_watch.stop().await;
    }
}

fn wire<T: Serialize>(v: &T) -> String {
    crate::protocol::wire_name(v).unwrap_or_default()
}
