//! Command tasks: real child processes. Each runs `sh -c CMD` in its own
//! process group with stdout and stderr appended to one output file under
//! the data directory (so output survives us), stdin piped only when the
//! task was created accepting input. A supervisor awaits the exit, persists
//! the terminal record through `TaskTransition`, and only after that commit
//! queues the task result for model re-entry (when asked). Stop sends TERM
//! to the group, then KILL after a grace period. On restart, tasks whose
//! process is gone (or that we can no longer supervise) become
//! `interrupted`, and terminal results that were never queued are queued.

pub use crate::model::task::TaskInputReceipt;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use crate::protocol::events::{self as ev, new_event, Event};
mod control;
mod process;
mod records;

use super::process_identity::ProcessIdentity;
use super::tasks::{
    TaskKind, TaskRecord, TaskStatus, TaskTransition, TransitionOutcome, WaitPolicy,
};
use super::RuntimeError;
use crate::store::{Index, Keyed, Provenance, Store, StoreError, WriteCtx};
use process::{signal_live, terminate_recovered, StartGate, GROUP_POLL};
pub use records::read_tail;
pub(crate) use records::{queue_result_in, transition_in};

/// Bytes of output kept in a task's preview (the tail of its output).
pub const PREVIEW_BYTES: u64 = 16 * 1024;
/// Time between TERM and KILL when stopping a task.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandSpec {
    pub cmd: String,
    pub workdir: PathBuf,
    #[serde(default)]
    pub accepts_input: bool,
    /// The sandbox a model command runs in (`None`: unconfined).
    #[serde(skip)]
    pub sandbox: Option<super::sandbox::Confine>,
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
    ) -> CommandTasks {
        // Temporary directories of commands a previous runtime ran (their
        // processes are ended by recovery).
        let _ = std::fs::remove_dir_all(output_dir.join(".tmp"));
        CommandTasks {
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
            let sandbox = spec.sandbox.as_ref();
            let detail = json!({
                "cmd": spec.cmd, "workdir": spec.workdir, "accepts_input": spec.accepts_input,
                "output_path": output_path, "terminal_reentry": false,
                "origin": match origin { TaskOrigin::Operator => "operator", TaskOrigin::Agent { .. } => "agent" },
                "sandbox": sandbox.map_or("off", |c| c.mode.as_str()),
                "network": sandbox.map_or("on", |c| c.network.as_str()),
            });
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
                    detail: Some(detail.clone()),
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
            Ok((pid, identity, gate, closing)) => {
                let start = TaskTransition::Start {
                    detail: Some(json!({
                        "pid": pid, "started_at_ms": crate::now_ms(), "process_identity": identity,
                    })),
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
                let finish = TaskTransition::Finish {
                    status: TaskStatus::Failed,
                    summary: Some(format!("could not start `{}`: {e}", spec.cmd)),
                    detail: Some(json!({ "spawn_error": e.to_string() })),
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

    /// The command's own temporary directory (made private) and its
    /// sandbox made ready to apply.
    fn confine(
        &self,
        c: &super::sandbox::Confine,
        task_id: &str,
        output: &Path,
    ) -> std::io::Result<(PathBuf, super::sandbox::Prepared)> {
        use std::os::unix::fs::DirBuilderExt;
        let tmp = self.tmp_dir(task_id);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&tmp)?;
        let prepared = super::sandbox::prepare(c, &tmp, output, &self.holon_dirs)?;
        Ok((tmp, prepared))
    }

    /// Holon's own directories: never writable from the sandbox.
    pub fn holon_dirs(&self) -> Vec<PathBuf> {
        self.holon_dirs.to_vec()
    }

    /// A sandboxed command's own temporary directory.
    fn tmp_dir(&self, task_id: &str) -> PathBuf {
        // Agent ids never start with a dot: no agent's folder is this one.
        self.output_dir.join(".tmp").join(task_id)
    }

    fn spawn(
        &self,
        agent_id: &str,
        task_id: &str,
        spec: &CommandSpec,
        output: &Path,
    ) -> std::io::Result<(i32, Option<ProcessIdentity>, StartGate, bool)> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(output)?;
        let err = out.try_clone()?;
        let confined = match &spec.sandbox {
            Some(c) => Some(self.confine(c, task_id, output)?),
            None => None,
        };
        let (gate_read, gate_write) = StartGate::pipe()?;
        let mut cmd = tokio::process::Command::new("/bin/sh");
        // The shell waits at the gate (fd 3) before it runs the command;
        // end of file there means the record was never written: exit 125.
        let script = format!("read _ <&3 || exit 125; exec 3<&-\n{}", spec.cmd);
        // Holon's environment without its credentials (exec_env).
        cmd.env_clear()
            .envs(self.env.filter(std::env::vars_os()))
            .arg("-c")
            .arg(script)
            .current_dir(&spec.workdir)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .stdin(if spec.accepts_input {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .kill_on_drop(false);
        // Its own process group (TERM and KILL reach all of it); a
        // sandboxed command gets a session of its own instead (`setsid` in
        // the sandbox: a group too, and no controlling terminal).
        if confined.is_none() {
            cmd.process_group(0);
        }
        let mask = super::exec_env::operator_umask();
        let fd_limit = super::exec_env::original_fd_limit();
        let prepared = match confined {
            Some((tmp, prepared)) => {
                cmd.env("TMPDIR", &tmp);
                Some(prepared)
            }
            None => None,
        };
        // SAFETY: only async-signal-safe calls (umask, setrlimit, close,
        // dup2, and the sandbox's raw system calls) run in the child between
        // fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(mask) = mask {
                    libc::umask(mask);
                }
                if let Some(soft) = fd_limit {
                    let mut lim = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                        lim.rlim_cur = soft.min(lim.rlim_max);
                        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                    }
                }
                StartGate::child_side(gate_read, gate_write)?;
                match &prepared {
                    Some(p) => p.apply(),
                    None => Ok(()),
                }
            });
        }
        let spawned = cmd.spawn();
        // SAFETY: the child has its own copy; the parent keeps only the
        // write end.
        unsafe {
            libc::close(gate_read);
        }
        let gate = StartGate { fd: gate_write };
        let mut child = spawned?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        // Read while the child is held un-reaped: the pid is still ours.
        let identity = ProcessIdentity::of(pid);
        let stdin = child.stdin.take();
        let closing = {
            let mut live = self.live();
            // Checked under the lock stop_all takes: a command is either
            // seen and stopped by it, or never runs.
            let closing = self.closed.load(std::sync::atomic::Ordering::SeqCst);
            live.insert(
                task_id.to_owned(),
                LiveTask {
                    agent_id: agent_id.to_owned(),
                    pid,
                    identity: identity.clone(),
                    stdin,
                    stop_requested: closing.then_some(SHUTDOWN_SUMMARY),
                },
            );
            closing
        };
        // Shutting down: the caller closes the gate unopened (once the
        // record exists), so the shell exits 125 before running anything
        // and the supervisor records why.
        let this = self.clone();
        let (agent_id, task_id, output) = (
            agent_id.to_owned(),
            task_id.to_owned(),
            output.to_path_buf(),
        );
        let started = Instant::now();
        let supervising = Arc::clone(&self.supervising);
        supervising.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::spawn(async move {
            let status = child.wait().await;
            let duration_ms = started.elapsed().as_millis() as u64;
            let stop_requested = this.live().remove(&task_id).and_then(|l| l.stop_requested);
            // A sandboxed command's temporary files go with it.
            let _ = std::fs::remove_dir_all(this.tmp_dir(&task_id));
            let (preview, bytes, truncated) = read_tail(&output, PREVIEW_BYTES);
            use std::os::unix::process::ExitStatusExt;
            let (status, summary, exit_status, signal) = match status {
                Ok(s) => match (s.code(), s.signal()) {
                    (_, _) if stop_requested.is_some() => (
                        TaskStatus::Cancelled,
                        stop_requested.unwrap_or_default().to_owned(),
                        s.code(),
                        s.signal(),
                    ),
                    (Some(0), _) => (
                        TaskStatus::Completed,
                        "exit status 0".to_owned(),
                        Some(0),
                        None,
                    ),
                    (Some(c), _) => (
                        TaskStatus::Failed,
                        format!("exit status {c}"),
                        Some(c),
                        None,
                    ),
                    (None, sig) => (
                        TaskStatus::Failed,
                        format!("killed by signal {}", sig.unwrap_or(0)),
                        None,
                        sig,
                    ),
                },
                Err(e) => (
                    TaskStatus::Failed,
                    format!("lost the process: {e}"),
                    None,
                    None,
                ),
            };
            let detail = json!({
                "exit_status": exit_status, "signal": signal, "duration_ms": duration_ms,
                "output_preview": preview, "output_bytes": bytes, "output_truncated": truncated,
            });
            let finish = TaskTransition::Finish {
                status,
                summary: Some(summary),
                detail: Some(detail),
            };
            if let Err(e) = this.transition(&agent_id, &task_id, finish).await {
                tracing::error!(%task_id, error = %e, "could not persist task terminal state");
            } else if let Err(e) = this.queue_result(&agent_id, &task_id).await {
                tracing::error!(%task_id, error = %e, "could not queue task result");
            }
            (this.wake)(&agent_id);
            supervising.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        });
        Ok((pid, identity, gate, closing))
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
                let mut detail = task.detail.clone().unwrap_or_else(|| json!({}));
                if let Some(obj) = detail.as_object_mut() {
                    obj.insert("terminal_reentry".into(), json!(true));
                }
                task.detail = Some(detail);
                tx.put(Keyed::Tasks, &a, &t, &task)?;
                queue_result_in(tx, &a, &t)?;
                Ok(())
            })
            .await?;
        (self.wake)(agent_id);
        Ok(())
    }
}
