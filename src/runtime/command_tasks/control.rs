//! Acting on running and recorded command tasks: writing to a task's
//! stdin, stopping one (TERM, then KILL after the grace period), recovering
//! tasks after a restart, and, at shutdown, stopping them all or leaving
//! held ones running for the next runtime.

use super::*;
use crate::runtime::process_identity::Liveness;

impl CommandTasks {
    /// Write to a task's stdin.
    pub async fn input(
        &self,
        agent_id: &str,
        task_id: &str,
        text: &str,
    ) -> Result<TaskInputReceipt, RuntimeError> {
        let supervised = {
            let mut live = self.live();
            live.get_mut(task_id)
                .filter(|l| l.agent_id == agent_id)
                .map(|l| (l.stdin.take(), l.input.clone(), l.tty))
        };
        let (stdin, fifo, tty) = match supervised {
            Some(s) => s,
            // A held command this runtime leaves alone still reads its pipe.
            None => match self.held_record(agent_id, task_id)? {
                Some(h) if h.running.is_some() => (None, h.paths.input, h.tty),
                _ => (None, None, false),
            },
        };
        // A terminal command reads its input from its terminal.
        let target = if tty { "tty" } else { "stdin" };
        let receipt = |accepted: bool, bytes: usize, summary: String| TaskInputReceipt {
            task_id: task_id.to_owned(),
            accepted_input: accepted,
            input_target: target.into(),
            bytes_written: bytes,
            summary_text: summary,
        };
        if let Some(fifo) = fifo {
            return Ok(write_fifo(&fifo, text).await.map_or_else(
                |e| receipt(false, 0, format!("{target} closed: {e}")),
                |()| {
                    receipt(
                        true,
                        text.len(),
                        format!("wrote {} bytes to {target}", text.len()),
                    )
                },
            ));
        }
        let Some(mut stdin) = stdin else {
            return Ok(receipt(
                false,
                0,
                "task is not running or was not started accepting input".into(),
            ));
        };
        let result = async {
            stdin.write_all(text.as_bytes()).await?;
            stdin.flush().await
        }
        .await;
        if let Some(l) = self.live().get_mut(task_id) {
            l.stdin = Some(stdin);
        }
        Ok(match result {
            Ok(()) => receipt(
                true,
                text.len(),
                format!("wrote {} bytes to stdin", text.len()),
            ),
            Err(e) => receipt(false, 0, format!("stdin closed: {e}")),
        })
    }

    /// Stop a task: TERM its process group, KILL after `grace`.
    pub async fn stop(
        &self,
        agent_id: &str,
        task_id: &str,
        grace: Duration,
    ) -> Result<TaskRecord, RuntimeError> {
        let target = {
            let mut live = self.live();
            live.get_mut(task_id)
                .filter(|l| l.agent_id == agent_id)
                .map(|l| {
                    l.stop_requested = Some("stopped by request");
                    (l.pid, l.identity.clone(), l.kill_signal())
                })
        };
        let held = match target {
            Some(_) => None,
            None => self.held_record(agent_id, task_id)?,
        };
        match (target, held) {
            (Some((pid, identity, kill)), _) => {
                self.transition(agent_id, task_id, TaskTransition::RequestCancel)
                    .await?;
                self.signal_stop(task_id, pid, identity, kill, grace);
            }
            // Held by a holder this runtime left alone: asked to stop
            // through it; the runtime that supervises it next records it.
            // This runtime may end before a timer would fire (a one-shot
            // command): the grace is waited out here.
            (
                None,
                Some(HeldRecord {
                    running: Some(identity),
                    ..
                }),
            ) => {
                self.transition(agent_id, task_id, TaskTransition::RequestCancel)
                    .await?;
                identity.signal_group(libc::SIGTERM);
                let deadline = Instant::now() + grace;
                let running = || identity.liveness() == Liveness::Running;
                while running() && Instant::now() < deadline {
                    tokio::time::sleep(GROUP_POLL).await;
                }
                if running() {
                    identity.signal_group(libc::SIGUSR1);
                }
            }
            // A held task whose holder ended while no supervisor watched
            // it: settled from what its holder recorded.
            (None, Some(h)) => {
                let ending = held_end(&h.paths, None, grace).await;
                self.settle(agent_id, task_id, &h.output, ending, Some(&h.paths), None)
                    .await;
            }
            (None, None) => {
                // Not supervised here (already finished, or from before a
                // restart): finishing is all that is left to do.
                let finish = TaskTransition::Finish {
                    status: TaskStatus::Cancelled,
                    summary: Some("stopped by request (no live process)".into()),
                    detail: TaskDetail::default(),
                };
                self.transition(agent_id, task_id, finish).await?;
            }
        }
        let rx = self.store.read()?;
        rx.get::<TaskRecord>(Keyed::Tasks, agent_id, task_id)?
            .ok_or_else(|| RuntimeError::UnknownTask {
                task_id: task_id.to_owned(),
            })
    }

    /// TERM now, then `kill` after `grace` unless the task was settled
    /// meanwhile (signals go through the recorded identity, so a process
    /// that is gone or replaced is never reached).
    pub(super) fn signal_stop(
        &self,
        task_id: &str,
        pid: i32,
        identity: Option<ProcessIdentity>,
        kill: i32,
        grace: Duration,
    ) {
        signal_live(pid, identity.as_ref(), libc::SIGTERM);
        let this = self.clone();
        let id = task_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            if this.live().contains_key(&id) {
                signal_live(pid, identity.as_ref(), kill);
            }
        });
    }

    /// A held task that has not ended, as it was recorded (one read).
    fn held_record(
        &self,
        agent_id: &str,
        task_id: &str,
    ) -> Result<Option<HeldRecord>, RuntimeError> {
        let task: Option<TaskRecord> = self.store.read()?.get(Keyed::Tasks, agent_id, task_id)?;
        let Some(d) = task
            .filter(|t| !t.status.is_terminal())
            .map(|t| t.detail)
            .filter(|d| d.held == Some(true))
        else {
            return Ok(None);
        };
        let Some(output) = d.output_path.map(PathBuf::from) else {
            return Ok(None);
        };
        Ok(Some(HeldRecord {
            running: d
                .process_identity
                .filter(|i| i.liveness() == Liveness::Running),
            paths: HeldPaths::beside(&output, d.accepts_input == Some(true)),
            output,
            tty: d.tty == Some(true),
        }))
    }

    /// After a restart: a held task is supervised again, or settled from
    /// how its holder recorded its end (`held`). An unheld task left
    /// non-terminal cannot be supervised any more: terminate its process
    /// group if it is still alive (so nothing runs untracked) and record it
    /// `interrupted`. Queue results that were never queued. Returns the ids
    /// interrupted.
    pub async fn recover(
        &self,
        agent_id: &str,
        grace: Duration,
        reattach: bool,
    ) -> Result<Vec<String>, RuntimeError> {
        let tasks: Vec<TaskRecord> = self.store.read()?.list(Keyed::Tasks, agent_id)?;
        let mut interrupted = Vec::new();
        for task in tasks {
            if task.status.is_terminal() {
                self.queue_result(agent_id, &task.id).await?;
                continue;
            }
            // A child's supervision survives restarts: the child has its
            // own actor (reconciled by the host).
            if task.kind == super::TaskKind::ChildAgentTask {
                continue;
            }
            let identity = task.detail.process_identity.clone();
            let output = task.detail.output_path.as_deref().map(PathBuf::from);
            let held = task.detail.held == Some(true);
            if let (true, Some(output)) = (held, output.clone()) {
                self.recover_held(&task, identity, output, grace, reattach)
                    .await?;
                continue;
            }
            let _ = std::fs::remove_dir_all(self.tmp_dir(&task.id));
            let summary = match identity {
                Some(id) => terminate_recovered(&id, grace).await,
                None => {
                    "interrupted: a runtime restart ended its supervision; no process identity \
                     was recorded, so nothing was signalled"
                }
            };
            let (preview, bytes, truncated) = output
                .map(|p| read_tail(&p, PREVIEW_BYTES))
                .unwrap_or_default();
            let finish = TaskTransition::Finish {
                status: TaskStatus::Interrupted,
                summary: Some(summary.to_owned()),
                detail: TaskDetail {
                    output_preview: Some(preview),
                    output_bytes: Some(bytes),
                    output_truncated: Some(truncated),
                    ..TaskDetail::default()
                },
            };
            self.transition(agent_id, &task.id, finish).await?;
            self.queue_result(agent_id, &task.id).await?;
            interrupted.push(task.id);
        }
        Ok(interrupted)
    }

    /// Runtime shutdown: stop every supervised task (TERM, then KILL after
    /// `grace` for groups that ignore it) and wait, bounded, until each
    /// one's terminal state is recorded (`cancelled`, "stopped: the runtime
    /// shut down"). Nothing is left running unseen.
    pub async fn stop_all(&self, grace: Duration) {
        let targets: Vec<(i32, Option<ProcessIdentity>, i32)> = {
            let mut live = self.live();
            self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
            live.values_mut()
                .map(|l| {
                    l.stop_requested = Some(SHUTDOWN_SUMMARY);
                    (l.pid, l.identity.clone(), l.kill_signal())
                })
                .collect()
        };
        if targets.is_empty() {
            return;
        }
        for (pid, identity, _) in &targets {
            signal_live(*pid, identity.as_ref(), libc::SIGTERM);
        }
        let settled = |limit: Duration| {
            let supervising = Arc::clone(&self.supervising);
            async move {
                let deadline = Instant::now() + limit;
                while supervising.load(std::sync::atomic::Ordering::SeqCst) > 0
                    && Instant::now() < deadline
                {
                    tokio::time::sleep(GROUP_POLL).await;
                }
                supervising.load(std::sync::atomic::Ordering::SeqCst) == 0
            }
        };
        if settled(grace).await {
            return;
        }
        for (pid, identity, kill) in &targets {
            signal_live(*pid, identity.as_ref(), *kill);
        }
        if !settled(Duration::from_secs(5)).await {
            tracing::warn!("some command tasks did not settle before shutdown finished");
        }
    }

    /// Runtime shutdown that leaves commands running under their holders
    /// (the next runtime reattaches them); no new command starts. Without
    /// a holder nothing can outlive the runtime: then this is `stop_all`.
    /// Returns how many were left running.
    pub async fn release_all(&self, grace: Duration) -> usize {
        if self.holder.is_none() {
            self.stop_all(grace).await;
            return 0;
        }
        let left = self.held_count();
        let _live = self.live();
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        left
    }

    /// Running commands held by a holder (they can outlive the runtime).
    pub fn held_count(&self) -> usize {
        self.live()
            .values()
            .filter(|l| l.held && l.stop_requested.is_none())
            .count()
    }

    /// `(agent, task)` of every live supervised process no stop was asked
    /// for yet.
    pub fn running(&self) -> Vec<(String, String)> {
        self.live()
            .iter()
            .filter(|(_, l)| l.stop_requested.is_none())
            .map(|(id, l)| (l.agent_id.clone(), id.clone()))
            .collect()
    }

    /// Task ids of this agent with a live supervised process.
    pub fn live_ids(&self, agent_id: &str) -> Vec<String> {
        self.live()
            .iter()
            .filter(|(_, l)| l.agent_id == agent_id)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// Write to a held task's stdin, its named pipe (the command holds it
/// open for reading).
async fn write_fifo(path: &Path, text: &str) -> std::io::Result<()> {
    let write = async {
        let mut pipe = tokio::net::unix::pipe::OpenOptions::new().open_sender(path)?;
        pipe.write_all(text.as_bytes()).await?;
        pipe.flush().await
    };
    // A command that stopped reading leaves its pipe full: say so.
    tokio::time::timeout(INPUT_TIMEOUT, write)
        .await
        .unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "its input is full: the command is not reading it",
            ))
        })
}

/// How long a write to a held task's input may wait for room.
const INPUT_TIMEOUT: Duration = Duration::from_secs(5);

/// A held task that has not ended, as recorded: its holder (when it still
/// runs under its recorded identity), its output and holder files, and
/// whether it is on a terminal.
struct HeldRecord {
    running: Option<ProcessIdentity>,
    output: PathBuf,
    paths: HeldPaths,
    tty: bool,
}
