//! One run of one hook: `/bin/sh -c COMMAND` with the input on stdin, in
//! the kernel sandbox by default (writing only beneath its own state
//! directory, `<data>/hooks/<name>`, Holon's own directories hidden, its
//! control socket unreachable), with an environment by allow-list, its
//! output bounded, and a time limit after which it is killed with
//! everything it started. When it exits, whatever it left running in its
//! process group is killed too: a hook is one run, never a daemon.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::decide::{Exit, Finished};
use super::input::HookInput;
use crate::runtime::settings::hooks::HookSpec;

/// What a hook may keep of its stdout (a decision) and its stderr (a
/// reason); the rest is read and dropped.
pub const STDOUT_LIMIT: usize = 64 * 1024;
pub const STDERR_LIMIT: usize = 16 * 1024;

/// Variables every hook gets from Holon's environment; anything else only
/// when the hook's `env` names it.
const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "USER", "LOGNAME", "TZ"];

/// How the runtime runs hooks.
#[derive(Debug, Clone)]
pub struct Runner {
    /// Where each hook's state directory is made (`<data>/hooks`).
    pub root: PathBuf,
    /// Holon's directories: hidden from a sandboxed hook, never writable.
    pub holon_dirs: Vec<PathBuf>,
    /// `[policy] sandbox_required`: refuse to run a hook unconfined on a
    /// kernel that cannot sandbox it (a hook with `sandbox = "off"` is the
    /// operator's explicit choice and runs).
    pub sandbox_required: bool,
}

/// How one run went, beside its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub finished: Finished,
    /// Whether the kernel confined it.
    pub sandboxed: bool,
    pub duration_ms: u64,
    /// Bytes it wrote to stdout and stderr, kept or not.
    pub output_bytes: u64,
}

/// The variables a hook starts with (pure): the base set and those its
/// `env` names, from `vars`, then Holon's own.
pub fn hook_env(
    hook: &HookSpec,
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    state: &Path,
    tmp: &Path,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut out: Vec<(std::ffi::OsString, std::ffi::OsString)> = vars
        .into_iter()
        .filter(|(k, _)| {
            k.to_str().is_some_and(|k| {
                (BASE_ENV.contains(&k) || hook.env.iter().any(|e| e == k))
                    && !k.starts_with("HOLON_")
            })
        })
        .collect();
    out.extend([
        ("HOLON_HOOK_EVENT".into(), hook.event.as_str().into()),
        ("HOLON_HOOK_NAME".into(), hook.name.clone().into()),
        ("HOLON_HOOK_STATE_DIR".into(), state.as_os_str().to_owned()),
        ("TMPDIR".into(), tmp.as_os_str().to_owned()),
    ]);
    out
}

impl Runner {
    /// Run `hook` once with `input`, in its state directory, with the
    /// network `network` unless the hook says (the default policy's now).
    pub async fn run(&self, hook: &HookSpec, input: &HookInput, network: bool) -> Ran {
        let t0 = Instant::now();
        let mut sandboxed = false;
        let scratch = Scratch::make(&self.root);
        let started = match &scratch {
            Ok(scratch) => self.spawn(hook, &scratch.0, network, &mut sandboxed),
            Err(e) => Err(format!("cannot make its scratch directory: {e}")),
        };
        let (finished, output_bytes) = match started {
            Err(why) => (
                Finished {
                    exit: Exit::NotStarted(why),
                    stdout: Vec::new(),
                    stderr: Vec::new(),
                },
                0,
            ),
            Ok(child) => finish(child, input.to_bytes(), hook.timeout).await,
        };
        drop(scratch);
        Ran {
            finished,
            sandboxed,
            duration_ms: t0.elapsed().as_millis() as u64,
            output_bytes,
        }
    }

    /// Its state directory, made if missing (0700), and checked to be
    /// where it should be: beneath the hooks' root as the file system
    /// resolves both.
    fn state_dir(&self, hook: &HookSpec) -> Result<PathBuf, String> {
        use std::os::unix::fs::DirBuilderExt;
        let state = hook.state_dir(&self.root);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&state)
            .map_err(|e| format!("cannot make its directory {}: {e}", state.display()))?;
        let (root, canon) = (self.root.canonicalize(), state.canonicalize());
        match (root, canon) {
            (Ok(root), Ok(canon)) if canon.starts_with(&root) && canon != root => Ok(canon),
            _ => Err(format!(
                "its directory {} is not beneath {}: refused",
                state.display(),
                self.root.display()
            )),
        }
    }

    fn spawn(
        &self,
        hook: &HookSpec,
        tmp: &Path,
        network: bool,
        sandboxed: &mut bool,
    ) -> Result<tokio::process::Child, String> {
        use std::os::unix::process::CommandExt;
        let state = self.state_dir(hook)?;
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(&hook.command)
            .env_clear()
            .envs(hook_env(hook, std::env::vars_os(), &state, tmp))
            // Never the agent's workspace, which the model writes: a
            // relative command or a per-directory config there would be
            // the model's. The input names the workspace.
            .current_dir(&state)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        match self.prepare(hook, &state, tmp, network)? {
            Some(prepared) => {
                *sandboxed = true;
                // SAFETY: the sandbox's raw system calls are all that run
                // in the child between fork and exec (it gives the child
                // a session, so a process group, of its own).
                unsafe {
                    cmd.pre_exec(move || prepared.apply());
                }
            }
            None => {
                // SAFETY: setsid is async-signal-safe. A session of its
                // own: its own process group, and no controlling
                // terminal (the console's) to write to or type into.
                unsafe {
                    cmd.pre_exec(|| match libc::setsid() {
                        -1 => Err(std::io::Error::last_os_error()),
                        _ => Ok(()),
                    });
                }
            }
        }
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.kill_on_drop(true);
        cmd.spawn()
            .map_err(|e| format!("cannot start /bin/sh: {e}"))
    }

    /// The sandbox ready to apply, or `None` when the hook runs unconfined
    /// (`sandbox = "off"`, or a kernel that cannot, unless refused). It
    /// reads what its user can, but Holon's own paths, and writes only
    /// beneath its state directory and its scratch directory.
    fn prepare(
        &self,
        hook: &HookSpec,
        state: &Path,
        tmp: &Path,
        network: bool,
    ) -> Result<Option<crate::runtime::sandbox::Prepared>, String> {
        use crate::model::sandbox::{NetworkAccess, SandboxMode};
        use crate::runtime::sandbox::{prepare, Confine, Support};
        if !hook.sandboxed {
            return Ok(None);
        }
        if let Some(why) = &Support::probe().missing {
            if hook.from_repository {
                return Err(format!(
                    "the kernel cannot sandbox it ({why}), and a repository's hook never runs \
                     unconfined"
                ));
            }
            if self.sandbox_required {
                return Err(format!(
                    "the kernel cannot sandbox it ({why}) and [policy] sandbox_required is set; \
                     set sandbox = \"off\" on the hook to run it unconfined"
                ));
            }
            return Ok(None);
        }
        let network = match hook.network.unwrap_or(network) {
            true => NetworkAccess::On,
            false => NetworkAccess::Off,
        };
        let confine = Confine {
            mode: SandboxMode::ReadOnly,
            network,
            execution_root: state.to_path_buf(),
            agent_home: state.to_path_buf(),
            unix_sockets: Vec::new(),
            root_pin: None,
            extra_writable: vec![state.to_path_buf()],
        };
        prepare(&confine, tmp, &tmp.join(OUTPUT), &self.holon_dirs, state)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

/// The sandbox's one writable file (nothing writes it: the pipes carry
/// the output), in the scratch directory.
const OUTPUT: &str = ".output";

/// One run's scratch directory (its `TMPDIR`), made fresh beneath
/// `<root>/.runs`, which no hook may write (hook names never start with
/// a dot): nothing a hook left behind in an earlier run, a link least of
/// all, is followed when the next one's sandbox is made. Removed when
/// dropped, without following links.
struct Scratch(PathBuf);

impl Scratch {
    fn make(root: &Path) -> std::io::Result<Scratch> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let runs = root.join(".runs");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&runs)?;
        let dir = runs.join(crate::new_id("run"));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let scratch = Scratch(dir);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(scratch.0.join(OUTPUT))?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Feed the input, read both streams (bounded), and wait for the leader
/// to exit or the time limit; then kill its process group (what it left
/// running, or all of it at the limit) while the leader is unreaped, so
/// the group is still its own, and reap it.
async fn finish(
    mut child: tokio::process::Child,
    input: Vec<u8>,
    limit: Duration,
) -> (Finished, u64) {
    let feed = child.stdin.take().map(|mut stdin| {
        tokio::spawn(async move {
            // A hook that reads nothing closes the pipe: not an error.
            let _ = stdin.write_all(&input).await;
            // Closed when dropped: the hook reads its end.
            drop(stdin);
        })
    });
    let out = child
        .stdout
        .take()
        .map(|s| tokio::spawn(bounded(s, STDOUT_LIMIT)));
    let err = child
        .stderr
        .take()
        .map(|s| tokio::spawn(bounded(s, STDERR_LIMIT)));
    let mut group = Group(child.id().map(|p| p as i32));
    let exited = match group.0 {
        Some(pid) => leader_exited(pid, limit).await,
        None => true,
    };
    group.kill();
    let status = child.wait().await;
    // Reaped: its id is no longer ours to signal.
    group.0 = None;
    if let Some(feed) = feed {
        feed.abort();
    }
    // Every writer of the pipes is gone with the group, unless something
    // left it (a new session): what it wrote by then is enough.
    let collect = |h: Option<tokio::task::JoinHandle<(Vec<u8>, u64)>>| async move {
        match h {
            None => (Vec::new(), 0),
            Some(h) => {
                let abort = h.abort_handle();
                match tokio::time::timeout(Duration::from_secs(1), h).await {
                    Ok(Ok(got)) => got,
                    _ => {
                        abort.abort();
                        (Vec::new(), 0)
                    }
                }
            }
        }
    };
    let ((stdout, n_out), (stderr, n_err)) = tokio::join!(collect(out), collect(err));
    let exit = match (exited, status) {
        (false, _) => Exit::TimedOut(limit.as_secs()),
        (true, Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(sig)) => Exit::Signal(sig),
                (None, None) => Exit::Code(-1),
            }
        }
        (true, Err(e)) => Exit::NotStarted(format!("lost track of it: {e}")),
    };
    (
        Finished {
            exit,
            stdout,
            stderr,
        },
        n_out + n_err,
    )
}

/// The process group a hook leads, while its leader is unreaped (so the
/// group id is still its own): killed whole when the run is given up
/// (the time limit, a cancelled turn, a runtime that stops waiting).
struct Group(Option<i32>);

impl Group {
    fn kill(&self) {
        if let Some(pid) = self.0 {
            // SAFETY: the group this unreaped child leads (its own session
            // from the start): its id cannot have been reused.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Read `stream` to its end, keeping the first `limit` bytes; the count
/// of all of them.
async fn bounded(mut stream: impl AsyncRead + Unpin, limit: usize) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut total = 0u64;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, total),
            Ok(n) => {
                total += n as u64;
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Whether the child `pid` exits within `limit`, without reaping it: by a
/// pidfd where the kernel has them (woken at its exit), else by looking
/// every few milliseconds.
async fn leader_exited(pid: i32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    #[cfg(target_os = "linux")]
    if let Some(fd) = pidfd(pid) {
        // SAFETY: an open descriptor the AsyncFd owns for as long as it
        // lives (an OwnedFd always names the same one).
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        };
        if let Ok(fd) = registered {
            return tokio::time::timeout_at(deadline, fd.readable())
                .await
                .is_ok()
                || crate::runtime::process_identity::child_has_exited(pid as u32);
        }
    }
    loop {
        if crate::runtime::process_identity::child_has_exited(pid as u32) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[cfg(target_os = "linux")]
fn pidfd(pid: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new
    // descriptor, which is owned from here.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
