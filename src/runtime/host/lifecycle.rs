//! The lifecycle: start-up and recovery, what each agent's actor runs, and
//! shutting down (each feature's part stopped in order).
//! It reaches every feature (workspaces, approvals, children, the turn
//! through the actor), which is why it lives apart from the handle
//! (`runtime::handle`) that those features use.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::broadcast;

use super::{actor, quiet, upkeep, watch};
use crate::model::agent::AgentRecord;
use crate::model::approval::{DefaultPolicy, DefaultPolicySource};
use crate::model::event::Provenance;
use crate::model::ids::validate_agent_id;
use crate::model::sandbox::{NetworkAccess, SandboxMode};
use crate::model::task::TaskRecord;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::admission::ensure_agent;
use crate::runtime::approvals::DEFAULT_POLICY;
use crate::runtime::command_tasks::CommandTasks;
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::handle::{
    ActorWake, CommandsFate, Core, HostConfig, HostInner, Parts, RuntimeHost,
};
use crate::runtime::RuntimeError;
use crate::store::{Keyed, Store};

impl RuntimeHost {
    /// Recover every agent from the store (turn flags, interrupted tasks,
    /// never-queued task results) and start one actor per agent.
    pub async fn start(store: Store, config: HostConfig) -> Result<RuntimeHost, RuntimeError> {
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let (live, _) = broadcast::channel(1024);
        let default_policy = default_policy_at_start(&store, &config)?;
        let output_dir = config.data_dir.join("tasks");
        let mut holon_dirs = config.holon_dirs.clone();
        holon_dirs.push(config.data_dir.clone());
        // Hidden from commands (no writable root lies beneath them).
        holon_dirs.push(config.data_dir.join("backups"));
        crate::runtime::sandbox::set_holon_paths(&holon_dirs);
        let inner = Arc::new_cyclic(|weak: &Weak<HostInner>| {
            let guidance_watch = watch::GuidanceWatch::start(
                weak.clone(),
                config.config_watch.clone(),
                shutdown.subscribe(),
            );
            let hooks = hook_host(weak, &config, &holon_dirs, &store);
            let weak = weak.clone();
            let wake: crate::runtime::command_tasks::WakeFn = Arc::new(move |agent_id: &str| {
                if let Some(inner) = weak.upgrade() {
                    inner.wake(agent_id);
                }
            });
            let reviewer =
                crate::runtime::approvals::reviewer_state::Reviewer::new(config.reviewer.clone());
            let mcp = crate::runtime::mcp::Hub::new(
                config.mcp_servers.clone(),
                &config.data_dir,
                holon_dirs.clone(),
            );
            let mut parts = Parts::default();
            parts.insert(CommandTasks::new(
                store.clone(),
                output_dir,
                config.exec_env.clone(),
                holon_dirs,
                wake,
                config.holder.clone(),
            ));
            parts.insert(mcp);
            parts.insert(McpReports::default());
            parts.insert(hooks);
            parts.insert(reviewer);
            HostInner {
                store,
                config,
                core: Core::new(shutdown, run_actor),
                guidance_watch: Box::new(guidance_watch),
                workspace_lock: tokio::sync::Mutex::new(()),
                live,
                started_at_ms: crate::now_ms(),
                turns_held: AtomicBool::new(false),
                ingress: Mutex::default(),
                backup_lock: tokio::sync::Mutex::new(()),
                prune_lock: tokio::sync::Mutex::new(()),
                default_policy: std::sync::RwLock::new(default_policy),
                default_policy_change: tokio::sync::Mutex::new(()),
                parts,
            }
        });
        let recording =
            crate::runtime::mcp::ops::record_reports(inner.store.clone(), inner.mcp().reports());
        inner.part::<McpReports>().set(tokio::spawn(recording));
        inner
            .mcp()
            .set_approvals(&crate::runtime::mcp::ops::approvals_in(&inner.store)?);
        inner
            .mcp()
            .set_disabled(&crate::runtime::mcp::ops::disabled_in(&inner.store)?);
        // A console's own runtime keeps the console's code mapped: the
        // operator is still there when the runtime goes quiet.
        let release = match inner.config.info.mode.as_str() {
            "embedded" => quiet::release_free_heap,
            _ => quiet::release_idle_memory,
        };
        tokio::spawn(quiet::run(
            inner.quiet_signal(),
            inner.shutdown_signal(),
            release,
        ));
        inner.hooks().start();
        let host = RuntimeHost { inner };
        if let Some(every) = host.inner.config.backups.every {
            tokio::spawn(upkeep::schedule_backups(
                Arc::downgrade(&host.inner),
                every,
                host.inner.shutdown_signal(),
            ));
        }
        host.prepare_default_agent().await;
        host.recover_all().await?;
        host.reconcile_children().await?;
        let agents: Vec<AgentRecord> = host.inner.store.read()?.agents()?;
        for agent in agents.iter().filter(|a| a.archived_at.is_none()) {
            if host.inner.config.actors.includes(&agent.id) {
                host.spawn_actor(&agent.id);
            }
        }
        // Requests left pending with no review (or a verdict not acted
        // on) by the last runtime.
        host.resume_reviews();
        // After recovery: the first pass never competes with start-up.
        if host.inner.config.retain_days.is_some() {
            tokio::spawn(upkeep::schedule_prunes(
                Arc::downgrade(&host.inner),
                host.inner.shutdown_signal(),
            ));
        }
        Ok(host)
    }

    /// Recover every agent that needs it: archived agents run nothing, so
    /// only one with tasks left open (a killed runtime) is recovered; the
    /// rest gain no event at every start. Agents recover independently:
    /// many at once, so the writer commits their records and
    /// `runtime_started` events together instead of one commit (and one
    /// fsync) per agent.
    async fn recover_all(&self) -> Result<(), RuntimeError> {
        use futures_util::stream::{self, StreamExt, TryStreamExt};
        let rx = self.inner.store.read()?;
        let mut recovering = Vec::new();
        for agent in rx.agents::<AgentRecord>()? {
            let open_tasks = !rx
                .index_list(crate::store::Index::ActiveTasks, &agent.id)?
                .is_empty();
            if agent.archived_at.is_none() || open_tasks {
                recovering.push(agent.id);
            }
        }
        drop(rx);
        stream::iter(recovering)
            .map(|id| async move { self.recover_agent(&id).await })
            .buffer_unordered(RECOVER_AT_ONCE)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
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
                let run = agent.current_run_id.take().filter(|_| was_running);
                let awaits = std::mem::take(&mut agent.turn_awaits);
                agent.turn_in_progress = false;
                agent.status = agent.status.at_rest();
                // Session-active skills come back `restored`; the
                // interrupted turn's turn-active ones are dropped.
                crate::runtime::agents::skills::restore(&mut agent.skills);
                tx.put_agent(&id, &agent)?;
                let mut dequeued = tx.index_list(crate::store::Index::Dequeued, &id)?;
                // A turn cut off while it waited for an approval it asked
                // is settled, not replayed: its rounds are recorded and the
                // answer will come as a message.
                if let Some(run) = run.as_deref().filter(|_| !awaits.is_empty()) {
                    let parked =
                        crate::runtime::turn::join::parked_in(tx, &id, run, &awaits, &dequeued)?;
                    dequeued.retain(|m| Some(m) != parked.as_ref());
                }
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
        self.recover_approvals(agent_id).await?;
        let interrupted = self
            .inner
            .tasks()
            .recover(
                agent_id,
                self.inner.config.stop_grace,
                self.inner.config.commands.reattaches(),
            )
            .await?;
        if !interrupted.is_empty() {
            tracing::warn!(agent_id, ?interrupted, "tasks interrupted by restart");
        }
        Ok(())
    }

    /// The agent (created when missing: the default agent as `default`,
    /// any other from `holon-default` as a named agent) with its actor
    /// started.
    pub async fn create_agent(&self, agent_id: &str) -> Result<AgentRecord, RuntimeError> {
        validate_agent_id(agent_id).map_err(RuntimeError::InvalidAgentId)?;
        if let Some(existing) = self.inner.store.read()?.agent::<AgentRecord>(agent_id)? {
            // An archived agent runs nothing: no actor, as at start-up.
            if existing.archived_at.is_none() {
                self.spawn_actor(agent_id);
            }
            return Ok(existing);
        }
        if agent_id == self.inner.config.default_agent {
            let record = ensure_agent(&self.inner.store, agent_id).await?;
            self.spawn_actor(agent_id);
            return Ok(record);
        }
        let req = crate::runtime::agents::ops::NewAgent {
            agent_id: agent_id.to_owned(),
            ..Default::default()
        };
        self.create_named_agent(req).await
    }
}

/// Agents recovered at once at start (their writes share commits).
const RECOVER_AT_ONCE: usize = 64;

/// An agent's actor: its guidance files watched from its workspace anchor
/// (the agent home when it has none), then its loop (`actor::run`).
fn run_actor(
    inner: &Arc<HostInner>,
    agent_id: &str,
    wake: Arc<ActorWake>,
    cancel: Arc<TurnCancel>,
) -> tokio::task::JoinHandle<()> {
    let home = inner.agent_home(agent_id);
    let anchor = inner
        .execution_of(agent_id)
        .map(|s| PathBuf::from(s.workspace_anchor))
        .unwrap_or_else(|_| home.clone());
    inner.guidance_watch.watch_agent(agent_id, &home, &anchor);
    tokio::spawn(actor::run(
        Arc::clone(inner),
        agent_id.to_owned(),
        wake,
        cancel,
        inner.shutdown_signal(),
    ))
}

/// The operator's default policy (`holon policy`) where set, else the
/// configuration's; said once, at start, when the kernel cannot sandbox
/// what it asks to (the snapshot and the status line keep saying it).
fn default_policy_at_start(
    store: &Store,
    config: &HostConfig,
) -> Result<DefaultPolicy, RuntimeError> {
    let support = crate::runtime::sandbox::Support::probe();
    let default_policy = match store.read()?.setting(DEFAULT_POLICY)? {
        Some(policy) => DefaultPolicy {
            policy,
            source: DefaultPolicySource::Operator,
        },
        None => DefaultPolicy {
            policy: config.policy.clone(),
            source: DefaultPolicySource::Config,
        },
    };
    if let (Some(why), true) = (
        &support.missing,
        default_policy.policy.sandbox != Some(SandboxMode::Off),
    ) {
        // Once, at start: the snapshot and the status line keep saying it.
        match config.sandbox_required {
            true => tracing::warn!(
                "the kernel cannot sandbox commands ({why}); `sandbox_required` is set, so \
                 model commands are refused"
            ),
            false => tracing::warn!(
                "the kernel cannot sandbox commands ({why}); model commands run unconfined, \
                 as your user (set `[policy] sandbox_required = true` to refuse them instead)"
            ),
        }
    }
    Ok(default_policy)
}

/// The operator's hooks, each run in a sandbox of its own; where an agent
/// is and whether the network is open are asked of the runtime when a
/// hook runs.
fn hook_host(
    weak: &Weak<HostInner>,
    config: &HostConfig,
    holon_dirs: &[PathBuf],
    store: &Store,
) -> Arc<crate::runtime::hooks::dispatch::HookHost> {
    let (hosting, networking) = (weak.clone(), weak.clone());
    Arc::new(crate::runtime::hooks::dispatch::HookHost::new(
        config.hooks.clone(),
        crate::runtime::hooks::run::Runner {
            root: config.data_dir.join("hooks"),
            holon_dirs: holon_dirs.to_vec(),
            sandbox_required: config.sandbox_required,
        },
        store.clone(),
        Box::new(move |agent_id: &str| {
            let host = hosting.upgrade()?;
            let s = host.execution_of(agent_id).ok()?;
            let home = s.workspace_id == crate::model::workspace::AGENT_HOME_ID;
            Some(crate::runtime::hooks::dispatch::AgentPlace {
                anchor: (!home).then_some(s.workspace_anchor),
                execution_root: s.execution_root,
            })
        }),
        Box::new(move || {
            let host = networking.upgrade();
            host.is_some_and(|h| h.default_policy().network == Some(NetworkAccess::On))
        }),
    ))
}

impl RuntimeHost {
    /// Stop every actor (a turn in flight is cancelled at once; its message
    /// replays on the next start). Then, when tasks outlive the runtime,
    /// leave held commands running for the next one; else stop every
    /// running command task (TERM, then KILL after the grace) and wait
    /// until their terminal states are recorded.
    pub async fn shutdown(&self) {
        let outlive = self.inner.config.commands == CommandsFate::Outlive;
        self.shutdown_with(outlive).await
    }

    /// How many commands a shutdown now would leave running for the next
    /// runtime (none unless tasks outlive this one).
    pub fn commands_outliving(&self) -> usize {
        match self.inner.config.commands == CommandsFate::Outlive {
            true => self.inner.tasks().held_count(),
            false => 0,
        }
    }

    /// The commands a shutdown now would stop, still running (none when
    /// they outlive this runtime): their task records.
    pub fn commands_shutdown_stops(&self) -> Vec<TaskRecord> {
        if self.inner.config.commands == CommandsFate::Outlive {
            return Vec::new();
        }
        let Ok(rx) = self.inner.store.read() else {
            return Vec::new();
        };
        let mut tasks: Vec<TaskRecord> = self
            .inner
            .tasks()
            .running()
            .into_iter()
            .filter_map(|(agent, id)| rx.get(Keyed::Tasks, &agent, &id).ok().flatten())
            .collect();
        tasks.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        tasks
    }

    /// `shutdown`, saying whether held commands are left running for the
    /// next runtime (a console that detaches hands them to its daemon).
    pub async fn shutdown_with(&self, tasks_outlive: bool) {
        self.signal_shutdown();
        // No reviewer answers a request (and runs its call) from here on.
        self.inner.reviewer().stop().await;
        self.stop_actors().await;
        let grace = self.inner.config.stop_grace;
        match tasks_outlive {
            true => {
                let left = self.inner.tasks().release_all(grace).await;
                if left > 0 {
                    tracing::info!(left, "command tasks left running for the next runtime");
                }
            }
            false => self.inner.tasks().stop_all(grace).await,
        }
        self.inner.guidance_watch.stop().await;
        self.inner.mcp().stop().await;
        // The servers' stops are recorded before the store is let go.
        self.inner.mcp().close_reports();
        let recording = self.inner.part::<McpReports>().take();
        if let Some(recording) = recording {
            let _ = recording.await;
        }
        // The hooks of what was committed until now, before the store goes.
        self.inner.hooks().stop().await;
    }
}

/// What records the MCP servers' changes (`mcp::ops::record_reports`): ended
/// and awaited at shutdown, after the servers' last stop.
#[derive(Default)]
pub(crate) struct McpReports(Mutex<Option<tokio::task::JoinHandle<()>>>);

impl McpReports {
    fn set(&self, recording: tokio::task::JoinHandle<()>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(recording);
        }
    }

    fn take(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.0.lock().ok().and_then(|mut r| r.take())
    }
}
