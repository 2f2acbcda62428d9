//! Command tasks: real processes. Each runs `SHELL [-l] -c CMD` (default
//! `/bin/sh`, on a pseudo-terminal when asked) in its own
//! process group with stdout and stderr appended to one output file under
//! the data directory (so output survives us). Where Holon knows its own
//! program, the shell runs under a holder (`holder`): a process in its own
//! session that records the command's exit durably, so the command
//! outlives a runtime that stops or dies, and the next runtime reattaches
//! to it (`held`). A supervisor awaits the end, persists the terminal
//! record through `TaskTransition`, and only after that commit queues the
//! task result for model re-entry (when asked). Stop sends TERM, then KILL
//! after a grace period. On restart, a held task whose holder still runs
//! is supervised again; one whose holder ended is settled from its exit
//! record, or failed when it left none; an unheld task (no holder) becomes
//! `interrupted`. Terminal results that were never queued are queued.

use crate::model::task::TaskInputReceipt;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use crate::protocol::events::{self as ev, new_event, Event};
mod control;
mod ending;
mod held;
pub mod holder;
mod process;
mod records;
mod spawn;
pub mod tee;
pub(crate) mod terminal;

use super::tasks::{TaskTransition, TransitionOutcome};
use super::RuntimeError;
use crate::model::event::Provenance;
use crate::model::process::ProcessIdentity;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::task::{CommandOrigin, TaskDetail, TaskKind};
use crate::store::{Index, Keyed, Store, StoreError, WriteCtx};
use ending::{direct_ending, held_end};
use holder::HeldPaths;
use process::{make_fifo, signal_live, terminate_recovered, StartGate, GROUP_POLL};
pub use records::read_tail;
pub(crate) use records::{queue_result_in, transition_in};
use spawn::Spawned;

/// Bytes of output kept in a task's preview (the tail of its output).
pub const PREVIEW_BYTES: u64 = 16 * 1024;

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandSpec {
    pub cmd: String,
    pub workdir: PathBuf,
    #[serde(default)]
    pub accepts_input: bool,
    /// How the command is run: its shell, as a login shell, on a terminal.
    #[serde(default)]
    pub launch: Launch,
    /// The sandbox a model command runs in (`None`: unconfined).
    #[serde(skip)]
    pub sandbox: Option<super::sandbox::Confine>,
}

impl CommandSpec {
    /// What its task's record says of it when created: what runs, how,
    /// where its output goes, and who asked.
    fn created_detail(&self, origin: &TaskOrigin, output: &Path, held: bool) -> TaskDetail {
        let sandbox = self.sandbox.as_ref();
        TaskDetail {
            cmd: Some(self.cmd.clone()),
            workdir: Some(self.workdir.display().to_string()),
            accepts_input: Some(self.accepts_input),
            shell: Some(self.launch.shell.display().to_string()),
            login: Some(self.launch.login),
            tty: Some(self.launch.tty),
            output_path: Some(output.display().to_string()),
            terminal_reentry: Some(false),
            // A held command without a terminal keeps its stderr's tail
            // apart too (the holder's tee).
            stderr_path: (held && !self.launch.tty)
                .then(|| output.with_extension("err").display().to_string()),
            origin: Some(match origin {
                TaskOrigin::Operator => CommandOrigin::Operator,
                TaskOrigin::Agent { .. } => CommandOrigin::Agent,
            }),
            sandbox: Some(sandbox.map_or("off", |c| c.mode.as_str()).to_owned()),
            network: Some(sandbox.map_or("on", |c| c.network.as_str()).to_owned()),
            ..TaskDetail::default()
        }
    }
}

/// How a command is run: `SHELL [-l] -c CMD`, on a pseudo-terminal of its
/// own when `tty`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    pub shell: PathBuf,
    #[serde(default)]
    pub login: bool,
    #[serde(default)]
    pub tty: bool,
}

impl Default for Launch {
    fn default() -> Launch {
        Launch {
            shell: PathBuf::from(DEFAULT_SHELL),
            login: false,
            tty: false,
        }
    }
}

/// The shell a command runs in unless it names another.
pub const DEFAULT_SHELL: &str = "/bin/sh";

impl Launch {
    /// The shell's arguments before the command: `[-l] -c`.
    pub fn shell_args(&self) -> &'static [&'static str] {
        match self.login {
            true => &["-l", "-c"],
            false => &["-c"],
        }
    }
}

/// Who started the task, which decides whether its result re-enters the
/// model (`terminal_reentry`).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOrigin {
    /// `!CMD` from the operator: shown to the operator, never re-entered.
    Operator,
    /// Started by the agent (ExecCommand). Its terminal result re-enters the
    /// model as a `task_result` message only once promoted (`promote`):
    /// a command that finishes within its yield time is answered inline.
    Agent {
        parent_message_id: Option<String>,
        work_item_id: Option<String>,
    },
}

struct LiveTask {
    agent_id: String,
    pid: i32,
    /// What proves `pid` is still this task's process (None only where
    /// `/proc` cannot be read; the child handle is held meanwhile).
    identity: Option<ProcessIdentity>,
    stdin: Option<ChildStdin>,
    /// Set when Holon stopped it: the summary its record gets.
    stop_requested: Option<&'static str>,
    /// A held task's stdin (a named pipe), when it accepts input.
    input: Option<PathBuf>,
    /// Run under a holder: `pid` is the holder's, which passes signals on
    /// (SIGUSR1 standing for SIGKILL).
    held: bool,
    /// On a terminal of its own (its input goes to the terminal).
    tty: bool,
}

impl LiveTask {
    /// The signal that kills it outright.
    fn kill_signal(&self) -> i32 {
        match self.held {
            true => libc::SIGUSR1,
            false => libc::SIGKILL,
        }
    }
}

/// Wakes an agent's actor after something it may care about changed.
pub type WakeFn = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Clone)]
pub struct CommandTasks {
    store: Store,
    output_dir: PathBuf,
    /// Supervisors still running (until each task's terminal state is
    /// persisted), so shutdown can wait for the records.
    supervising: Arc<std::sync::atomic::AtomicUsize>,
    env: Arc<super::exec_env::ExecEnvPolicy>,
    /// Holon's own directories, never writable from a sandboxed command.
    holon_dirs: Arc<Vec<PathBuf>>,
    live: Arc<Mutex<HashMap<String, LiveTask>>>,
    /// Set (under the `live` lock) when shutdown begins: a command spawned
    /// from then on never passes its start gate.
    closed: Arc<std::sync::atomic::AtomicBool>,
    wake: WakeFn,
    /// Holon's own program, which holds commands (`None`: commands are the
    /// runtime's own children and end with it).
    holder: Option<Arc<PathBuf>>,
}

/// The summary of a task stopped because its runtime shut down.
const SHUTDOWN_SUMMARY: &str = "stopped: the runtime shut down";

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> RuntimeError {
    move |e| RuntimeError::Io {
        what,
        message: e.to_string(),
    }
}

impl CommandTasks {
    pub fn new(
        store: Store,
        output_dir: PathBuf,
        env: super::exec_env::ExecEnvPolicy,
        holon_dirs: Vec<PathBuf>,
        wake: WakeFn,
        holder: Option<PathBuf>,
    ) -> CommandTasks {
        CommandTasks {
            holder: holder.map(Arc::new),
            store,
            output_dir,
            env: Arc::new(env),
            holon_dirs: Arc::new(holon_dirs),
            supervising: Arc::default(),
            live: Arc::default(),
            closed: Arc::default(),
            wake,
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, LiveTask>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start a command task and return its record (running, or failed when
    /// the process could not be spawned).
    pub async fn start(
        &self,
        agent_id: &str,
        spec: CommandSpec,
        origin: TaskOrigin,
    ) -> Result<TaskRecord, RuntimeError> {
        let task_id = crate::new_id("task");
        let dir = self.output_dir.join(agent_id);
        std::fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
        let output_path = dir.join(format!("{task_id}.log"));
        let (parent_message_id, work_item_id) = match &origin {
            TaskOrigin::Operator => (None, None),
            TaskOrigin::Agent {
                parent_message_id,
                work_item_id,
            } => (parent_message_id.clone(), work_item_id.clone()),
        };
        // The task's record, written in the same commit as its first
        // transition (one fsync before the command may run).
        let record_in = {
            let (agent_id, task_id) = (agent_id.to_owned(), task_id.clone());
            let detail = spec.created_detail(&origin, &output_path, self.holder.is_some());
            let cmd = spec.cmd.clone();
            move |tx: &mut WriteCtx<'_>| -> Result<TaskRecord, StoreError> {
                tx.get_agent::<serde_json::Value>(&agent_id)?
                    .ok_or_else(|| {
                        StoreError::rejected(RuntimeError::UnknownAgent {
                            agent_id: agent_id.clone(),
                        })
                    })?;
                let now = tx.now_ts();
                let record = TaskRecord {
                    id: task_id.clone(),
                    agent_id: agent_id.clone(),
                    kind: TaskKind::CommandTask,
                    status: TaskStatus::Queued,
                    wait_policy: WaitPolicy::Background,
                    work_item_id: work_item_id.clone(),
                    parent_message_id: parent_message_id.clone(),
                    summary: Some(cmd.clone()),
                    detail: detail.clone(),
                    created_at: now.clone(),
                    updated_at: now,
                    failure_artifact: None,
                };
                tx.put(Keyed::Tasks, &agent_id, &task_id, &record)?;
                tx.index_insert(Index::ActiveTasks, &agent_id, &task_id)?;
                let provenance = Provenance {
                    task_id: Some(task_id.clone()),
                    work_item_id: work_item_id.clone(),
                    message_id: parent_message_id.clone(),
                    ..Provenance::default()
                };
                let created = ev::TaskCreated {
                    task: record.clone(),
                };
                tx.append_event(new_event(
                    &agent_id,
                    provenance,
                    Event::TaskCreated(created),
                ))?;
                Ok(record)
            }
        };
        let (a, t) = (agent_id.to_owned(), task_id.clone());
        let record = match self.spawn(agent_id, &task_id, &spec, &output_path) {
            Ok(Spawned {
                pid,
                identity,
                gate,
                closing,
                held,
            }) => {
                let start = TaskTransition::Start {
                    detail: TaskDetail {
                        pid: Some(pid),
                        started_at_ms: Some(crate::now_ms()),
                        process_identity: identity,
                        held: Some(held),
                        ..TaskDetail::default()
                    },
                };
                // The command runs only once its process is on record: if
                // this write fails (or Holon dies first) the gate closes
                // unopened and the child exits without running anything.
                let record = self
                    .store
                    .write(move |tx| {
                        let record = record_in(tx)?;
                        transition_in(tx, &a, &t, start.clone())?;
                        Ok(record)
                    })
                    .await?;
                // Shutting down since the spawn: close the gate unopened
                // (exit 125), now that there is a record to say why.
                match closing {
                    true => drop(gate),
                    false => gate.open(),
                }
                record
            }
            Err(e) => {
                // Nothing ran: the named pipe and temporary directory made
                // for it go.
                if self.holder.is_some() {
                    HeldPaths::beside(&output_path, spec.accepts_input).remove();
                }
                let _ = std::fs::remove_dir_all(self.tmp_dir(&task_id));
                let finish = TaskTransition::Finish {
                    status: TaskStatus::Failed,
                    summary: Some(format!("could not start `{}`: {e}", spec.cmd)),
                    detail: TaskDetail {
                        spawn_error: Some(e.to_string()),
                        ..TaskDetail::default()
                    },
                };
                let record = self
                    .store
                    .write(move |tx| {
                        let record = record_in(tx)?;
                        transition_in(tx, &a, &t, finish.clone())?;
                        Ok(record)
                    })
                    .await?;
                self.queue_result(agent_id, &task_id).await?;
                record
            }
        };
        let rx = self.store.read()?;
        let record = rx
            .get::<TaskRecord>(Keyed::Tasks, agent_id, &task_id)?
            .unwrap_or(record);
        Ok(record)
    }

    pub async fn transition(
        &self,
        agent_id: &str,
        task_id: &str,
        t: TaskTransition,
    ) -> Result<TransitionOutcome, RuntimeError> {
        let (agent_id, task_id) = (agent_id.to_owned(), task_id.to_owned());
        let outcome = self
            .store
            .write(move |tx| transition_in(tx, &agent_id, &task_id, t.clone()))
            .await?;
        if let TransitionOutcome::Ignored { current, reason } = &outcome {
            tracing::debug!(?current, reason, "task transition ignored");
        }
        Ok(outcome)
    }

    /// Queue the result of a terminal re-entry task (after its terminal
    /// record committed).
    pub async fn queue_result(
        &self,
        agent_id: &str,
        task_id: &str,
    ) -> Result<Option<String>, RuntimeError> {
        let (a, t) = (agent_id.to_owned(), task_id.to_owned());
        Ok(self
            .store
            .write(move |tx| queue_result_in(tx, &a, &t))
            .await?)
    }

    /// Promote an agent task to managed execution: its terminal result will
    /// re-enter the model. If it already finished, the result is queued in
    /// the same transaction, so no result is lost to the race.
    pub async fn promote(&self, agent_id: &str, task_id: &str) -> Result<(), RuntimeError> {
        let (a, t) = (agent_id.to_owned(), task_id.to_owned());
        self.store
            .write(move |tx| {
                let Some(mut task) = tx.get::<TaskRecord>(Keyed::Tasks, &a, &t)? else {
                    return Err(StoreError::rejected(RuntimeError::UnknownTask {
                        task_id: t.clone(),
                    }));
                };
                task.detail.terminal_reentry = Some(true);
                tx.put(Keyed::Tasks, &a, &t, &task)?;
                queue_result_in(tx, &a, &t)?;
                Ok(())
            })
            .await?;
        (self.wake)(agent_id);
        Ok(())
    }
}

impl crate::runtime::handle::HostInner {
    /// The command tasks: started, supervised, stopped, reattached.
    pub(crate) fn tasks(&self) -> &CommandTasks {
        self.part()
    }
}

impl crate::runtime::handle::RuntimeHost {
    pub fn tasks(&self) -> &CommandTasks {
        self.inner.tasks()
    }
}
