//! How a command task ended, and settling it: the terminal record (with
//! the tail of its output) committed first, then its result queued for the
//! agent when it re-enters, then the holder's files and the sandbox's
//! temporary directory removed. A task is settled once, by whichever
//! supervisor saw it end (the one that started it, or the one a restarted
//! runtime reattached); a second settle changes nothing.

use super::*;
use holder::ExitRecord;

/// How a task's process ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ending {
    /// The command exited, or a signal ended it.
    Exited {
        exit_status: Option<i32>,
        signal: Option<i32>,
        duration_ms: u64,
    },
    /// It never ran (its spawn, or its sandbox's setup, failed; or its
    /// runtime never recorded it): why.
    NotStarted(String),
    /// Its end could not be seen: why.
    Unknown(String),
}

/// The ending of a command that was the runtime's own child.
pub(super) fn direct_ending(
    status: std::io::Result<std::process::ExitStatus>,
    ran: Duration,
) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => Ending::Exited {
            exit_status: s.code(),
            signal: s.signal(),
            duration_ms: ran.as_millis() as u64,
        },
        Err(e) => Ending::Unknown(format!("lost the process: {e}")),
    }
}

/// The ending of a held command: its exit record, or why there is none
/// (`holder`: the holder's own status, when it was our child). A holder
/// that ended without a record was killed: its command's group is ended
/// if it still runs, so nothing runs untracked.
pub(super) async fn held_end(
    paths: &HeldPaths,
    holder: Option<std::io::Result<std::process::ExitStatus>>,
    grace: Duration,
) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    if let Some(record) = holder::read_exit(&paths.exit) {
        return recorded(record);
    }
    let status = holder.and_then(Result::ok);
    if status.is_some_and(|s| s.code() == Some(i32::from(holder::NOT_STARTED))) {
        return Ending::NotStarted("not started: its runtime did not record it".to_owned());
    }
    let how = match status.and_then(|s| s.signal()) {
        Some(sig) => format!("its holder was killed (signal {sig})"),
        None => "its holder is gone".to_owned(),
    };
    Ending::Unknown(lost(paths, &how, grace).await)
}

/// Why a held task whose holder is gone left no exit record, after ending
/// its command's group if that still runs as the holder recorded it.
async fn lost(paths: &HeldPaths, how: &str, grace: Duration) -> String {
    let command: Option<ProcessIdentity> = std::fs::read(&paths.command)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let Some(command) = command else {
        return format!(
            "{how} and recorded neither the command nor how it ended (it was killed, or the \
             machine restarted)"
        );
    };
    let ended = terminate_recovered(&command, grace).await;
    format!(
        "{how} without recording how the command ended (it was killed, or the machine \
         restarted); {}",
        ended.trim_start_matches("interrupted: ")
    )
}

/// What a holder's exit record says.
pub(super) fn recorded(record: ExitRecord) -> Ending {
    match record.error {
        Some(why) => Ending::NotStarted(why),
        None => Ending::Exited {
            exit_status: record.exit_status,
            signal: record.signal,
            duration_ms: record.duration_ms,
        },
    }
}

/// The terminal status and summary of an ending (`stopped`: the summary
/// of a stop Holon asked for).
pub(super) fn outcome(ending: &Ending, stopped: Option<&str>) -> (TaskStatus, String) {
    if let Some(summary) = stopped {
        return (TaskStatus::Cancelled, summary.to_owned());
    }
    match ending {
        Ending::Exited {
            exit_status: Some(0),
            ..
        } => (TaskStatus::Completed, "exit status 0".to_owned()),
        Ending::Exited {
            exit_status: Some(c),
            ..
        } => (TaskStatus::Failed, format!("exit status {c}")),
        Ending::Exited { signal, .. } => (
            TaskStatus::Failed,
            format!("killed by signal {}", signal.unwrap_or(0)),
        ),
        Ending::NotStarted(why) | Ending::Unknown(why) => (TaskStatus::Failed, why.clone()),
    }
}

impl CommandTasks {
    /// Record how a task ended (once), queue its result, wake its agent.
    pub(super) async fn settle(
        &self,
        agent_id: &str,
        task_id: &str,
        output: &Path,
        ending: Ending,
        held: Option<&HeldPaths>,
        requested: Option<&'static str>,
    ) {
        // Still on the books until its end is committed: a stop that comes
        // meanwhile finds it supervised, and does not record an end of its
        // own over this one.
        let stopped = self
            .live()
            .get(task_id)
            .and_then(|l| l.stop_requested)
            .or(requested);
        // A sandboxed command's temporary files go with it.
        let _ = std::fs::remove_dir_all(self.tmp_dir(task_id));
        let (preview, bytes, truncated) = read_tail(output, PREVIEW_BYTES);
        let (status, summary) = outcome(&ending, stopped);
        let (exit_status, signal, duration_ms) = match &ending {
            Ending::Exited {
                exit_status,
                signal,
                duration_ms,
            } => (*exit_status, *signal, Some(*duration_ms)),
            Ending::NotStarted(_) | Ending::Unknown(_) => (None, None, None),
        };
        let detail = TaskDetail {
            exit_status: exit_status.map(i64::from),
            signal,
            duration_ms,
            output_preview: Some(preview),
            output_bytes: Some(bytes),
            output_truncated: Some(truncated),
            spawn_error: match &ending {
                Ending::NotStarted(why) => Some(why.to_string()),
                Ending::Exited { .. } | Ending::Unknown(_) => None,
            },
            ..TaskDetail::default()
        };
        let finish = TaskTransition::Finish {
            status,
            summary: Some(summary),
            detail,
        };
        let committed = self.transition(agent_id, task_id, finish).await;
        self.live().remove(task_id);
        match committed {
            Err(e) => {
                tracing::error!(%task_id, error = %e, "could not persist task terminal state");
            }
            Ok(_) => {
                if let Err(e) = self.queue_result(agent_id, task_id).await {
                    tracing::error!(%task_id, error = %e, "could not queue task result");
                }
                // Only now: a runtime that died before the commit reads the
                // exit record again.
                if let Some(paths) = held {
                    paths.remove();
                }
            }
        }
        (self.wake)(agent_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: Option<i32>, signal: Option<i32>) -> Ending {
        Ending::Exited {
            exit_status: code,
            signal,
            duration_ms: 5,
        }
    }

    #[test]
    fn an_ending_decides_the_status_unless_holon_stopped_it() {
        assert_eq!(
            outcome(&exited(Some(0), None), None),
            (TaskStatus::Completed, "exit status 0".into())
        );
        assert_eq!(
            outcome(&exited(Some(2), None), None),
            (TaskStatus::Failed, "exit status 2".into())
        );
        assert_eq!(
            outcome(&exited(None, Some(9)), None),
            (TaskStatus::Failed, "killed by signal 9".into())
        );
        assert_eq!(
            outcome(&Ending::Unknown("gone".into()), None),
            (TaskStatus::Failed, "gone".into())
        );
        assert_eq!(
            outcome(&exited(Some(0), None), Some("stopped by request")),
            (TaskStatus::Cancelled, "stopped by request".into())
        );
    }

    #[tokio::test]
    async fn a_held_command_ends_as_its_record_says_or_says_why_there_is_none() {
        use std::os::unix::process::ExitStatusExt;
        let dir = tempfile::tempdir().unwrap();
        let paths = HeldPaths::beside(&dir.path().join("t.log"), false);
        let status = |raw: i32| Some(Ok(std::process::ExitStatus::from_raw(raw)));
        let grace = Duration::from_millis(10);
        let none = held_end(&paths, status(125 << 8), grace).await;
        assert_eq!(
            none,
            Ending::NotStarted("not started: its runtime did not record it".into())
        );
        let killed = held_end(&paths, status(9), grace).await;
        assert!(
            matches!(&killed, Ending::Unknown(w) if w.contains("killed (signal 9)")),
            "{killed:?}"
        );
        let gone = held_end(&paths, None, grace).await;
        assert!(
            matches!(&gone, Ending::Unknown(w) if w.starts_with("its holder is gone")),
            "{gone:?}"
        );
        let record = ExitRecord {
            exit_status: Some(4),
            signal: None,
            duration_ms: 70,
            error: None,
        };
        crate::durable::write(&paths.exit, &serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(held_end(&paths, status(0), grace).await, exited_with(4, 70));
        let failed = ExitRecord {
            error: Some("could not start the command: no such directory".into()),
            ..record
        };
        assert_eq!(
            recorded(failed),
            Ending::NotStarted("could not start the command: no such directory".into())
        );
    }

    fn exited_with(code: i32, ms: u64) -> Ending {
        Ending::Exited {
            exit_status: Some(code),
            signal: None,
            duration_ms: ms,
        }
    }
}
