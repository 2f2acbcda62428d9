//! Starting a command task's process: under a holder when Holon knows
//! its own program (the command then outlives the runtime), else as the
//! runtime's own child; its sandbox planned, its start gate made, and its
//! supervisor, which records how it ended.

use super::*;

/// A process just started for a task.
pub(super) struct Spawned {
    pub(super) pid: i32,
    pub(super) identity: Option<ProcessIdentity>,
    pub(super) gate: StartGate,
    /// Shutting down since: the gate stays closed.
    pub(super) closing: bool,
    pub(super) held: bool,
}

/// `s` as one word for `sh`: single-quoted, each `'` closed, escaped and
/// reopened.
pub(super) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl CommandTasks {
    /// The command's own temporary directory (made private) and its
    /// sandbox's plan.
    fn confine(
        &self,
        c: &crate::runtime::sandbox::Confine,
        task_id: &str,
        output: &Path,
    ) -> std::io::Result<(PathBuf, crate::runtime::sandbox::Plan)> {
        use std::os::unix::fs::DirBuilderExt;
        let tmp = self.tmp_dir(task_id);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&tmp)?;
        let plan = crate::runtime::sandbox::plan_command(c, &tmp, output, &self.holon_dirs)?;
        Ok((tmp, plan))
    }

    /// Holon's own directories: never writable from the sandbox.
    pub fn holon_dirs(&self) -> Vec<PathBuf> {
        self.holon_dirs.to_vec()
    }

    /// A sandboxed command's own temporary directory.
    pub(super) fn tmp_dir(&self, task_id: &str) -> PathBuf {
        // Agent ids never start with a dot: no agent's folder is this one.
        self.output_dir.join(".tmp").join(task_id)
    }

    /// Start the task's process: under a holder when Holon knows its own
    /// program (the command then outlives the runtime), else as the
    /// runtime's own child. Its supervisor records how it ended.
    pub(super) fn spawn(
        &self,
        agent_id: &str,
        task_id: &str,
        spec: &CommandSpec,
        output: &Path,
    ) -> std::io::Result<Spawned> {
        if spec.launch.tty && self.holder.is_none() {
            return Err(std::io::Error::other(
                "a terminal (tty) needs Holon's own program to hold the command, and this \
                 runtime was started without it",
            ));
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(output)?;
        let err = out.try_clone()?;
        let confined = match &spec.sandbox {
            Some(c) => Some(self.confine(c, task_id, output)?),
            None => None,
        };
        let held = self
            .holder
            .as_ref()
            .map(|_| HeldPaths::beside(output, spec.accepts_input));
        let input = held_stdin(held.as_ref())?;
        let (gate_read, gate_write) = StartGate::pipe()?;
        let mut cmd = self.command(spec, held.as_ref(), input);
        // A sandboxed command gets an allow-list of Holon's environment;
        // an unconfined one all of it but its credentials (exec_env).
        let vars = match confined.is_some() {
            true => self.env.filter_sandboxed(std::env::vars_os()),
            false => self.env.filter(std::env::vars_os()),
        };
        cmd.env_clear()
            .envs(vars)
            .current_dir(&spec.workdir)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .kill_on_drop(false);
        // A direct command's own process group (TERM and KILL reach all of
        // it); a sandboxed one gets a session of its own instead (`setsid`
        // in the sandbox). A holder takes a session of its own and gives
        // its command a group (or session) of its own the same way.
        if confined.is_none() && held.is_none() {
            cmd.process_group(0);
        }
        let mask = crate::runtime::exec_env::operator_umask();
        let fd_limit = crate::runtime::exec_env::original_fd_limit();
        let (payload, prepared) = gate_payload(&mut cmd, spec, held.as_ref(), confined)?;
        let holds = held.is_some();
        // SAFETY: only async-signal-safe calls (umask, setrlimit, setsid,
        // close, dup2, and the sandbox's raw system calls) run in the child
        // between fork and exec.
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
                if holds && libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
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
        let gate = StartGate {
            fd: gate_write,
            payload,
        };
        let mut child = spawned?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        // Read while the child is held un-reaped: the pid is still ours.
        let identity = ProcessIdentity::of(pid);
        let closing = self.register(
            task_id,
            LiveTask {
                agent_id: agent_id.to_owned(),
                pid,
                identity: identity.clone(),
                stdin: child.stdin.take(),
                stop_requested: None,
                input: held.as_ref().and_then(|h| h.input.clone()),
                held: holds,
                tty: spec.launch.tty,
            },
        );
        // Shutting down: the caller closes the gate unopened (once the
        // record exists), so nothing runs and the supervisor records why.
        let this = self.clone();
        let (agent_id, task_id, output) = (
            agent_id.to_owned(),
            task_id.to_owned(),
            output.to_path_buf(),
        );
        let started = Instant::now();
        let paths = held.clone();
        self.supervise(async move {
            let status = child.wait().await;
            let ending = match &paths {
                Some(paths) => {
                    held_end(paths, Some(status), crate::runtime::handle::STOP_GRACE).await
                }
                None => direct_ending(status, started.elapsed()),
            };
            this.settle(&agent_id, &task_id, &output, ending, paths.as_ref(), None)
                .await;
        });
        Ok(Spawned {
            pid,
            identity,
            gate,
            closing,
            held: holds,
        })
    }

    /// The process to start: the holder (given the path of its exit
    /// record and the command's stdin), or `/bin/sh`, which waits at the
    /// start gate (fd 3) before it runs the command.
    fn command(
        &self,
        spec: &CommandSpec,
        held: Option<&HeldPaths>,
        input: Stdio,
    ) -> tokio::process::Command {
        match &self.holder {
            Some(holder) => {
                let mut cmd = tokio::process::Command::new(holder.as_path());
                let exit = held.map(|h| h.exit.clone()).unwrap_or_default();
                cmd.arg0("holon-hold")
                    .arg(holder::HOLD_ARG)
                    .arg(exit)
                    .stdin(input);
                cmd
            }
            None => {
                let mut cmd = tokio::process::Command::new("/bin/sh");
                // The shell waits at the gate (fd 3) before it runs the
                // command; end of file there means the record was never
                // written: exit 125.
                let script = match spec.launch == Launch::default() {
                    true => format!("read _ <&3 || exit 125; exec 3<&-\n{}", spec.cmd),
                    false => format!(
                        "read _ <&3 || exit 125; exec 3<&-\nexec {} {} {}",
                        sh_quote(&spec.launch.shell.to_string_lossy()),
                        spec.launch.shell_args().join(" "),
                        sh_quote(&spec.cmd)
                    ),
                };
                cmd.arg("-c").arg(script).stdin(if spec.accepts_input {
                    Stdio::piped()
                } else {
                    Stdio::null()
                });
                cmd
            }
        }
    }

    /// Put a live task on the books. Checked under the lock `stop_all`
    /// takes: a command is either seen and stopped by it, or never runs
    /// (true: shutting down, close its gate unopened).
    pub(super) fn register(&self, task_id: &str, mut task: LiveTask) -> bool {
        let mut live = self.live();
        let closing = self.closed.load(std::sync::atomic::Ordering::SeqCst);
        if closing {
            task.stop_requested = Some(SHUTDOWN_SUMMARY);
        }
        live.insert(task_id.to_owned(), task);
        closing
    }

    /// Run a task's supervisor, counted until its record is settled.
    pub(super) fn supervise(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let supervising = Arc::clone(&self.supervising);
        supervising.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::spawn(async move {
            work.await;
            supervising.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        });
    }
}

/// A held task's stdin is a named pipe, opened for reading and writing:
/// it has a reader from the start (input written early waits in it), and
/// the command never sees the end of its input between two writes (a
/// writer comes and goes with each one).
fn held_stdin(held: Option<&HeldPaths>) -> std::io::Result<Stdio> {
    match held.and_then(|h| h.input.as_ref()) {
        Some(fifo) => {
            make_fifo(fifo)?;
            let pipe = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(fifo)?;
            Ok(Stdio::from(pipe))
        }
        None => Ok(Stdio::null()),
    }
}

/// What the start gate passes on: to a holder, the command as it is to
/// hold it (its sandbox among it); to `/bin/sh`, the word to go, with a
/// sandbox prepared here to apply between fork and exec. A sandboxed
/// command's `TMPDIR` is its own directory.
fn gate_payload(
    cmd: &mut tokio::process::Command,
    spec: &CommandSpec,
    held: Option<&HeldPaths>,
    confined: Option<(PathBuf, crate::runtime::sandbox::Plan)>,
) -> std::io::Result<(Vec<u8>, Option<crate::runtime::sandbox::Prepared>)> {
    let (payload, prepared) = match (held, confined) {
        (Some(paths), confined) => {
            let sandbox = confined.map(|(tmp, plan)| {
                cmd.env("TMPDIR", &tmp);
                (plan, crate::runtime::sandbox::Support::probe().clone())
            });
            let spec = holder::HoldSpec {
                cmd: spec.cmd.clone(),
                launch: spec.launch.clone(),
                workdir: spec.workdir.clone(),
                paths: paths.clone(),
                sandbox,
            };
            (
                serde_json::to_vec(&spec).map_err(std::io::Error::other)?,
                None,
            )
        }
        (None, Some((tmp, plan))) => {
            cmd.env("TMPDIR", &tmp);
            let prepared = crate::runtime::sandbox::ready(
                &plan,
                crate::runtime::sandbox::Support::probe(),
                &spec.workdir,
            )?;
            (b"go\n".to_vec(), Some(prepared))
        }
        (None, None) => (b"go\n".to_vec(), None),
    };
    Ok((payload, prepared))
}
