//! The holder: a small process of Holon's own (`holon __hold`) that runs
//! one command task so the command can outlive its runtime. The runtime
//! starts it in a session of its own with the task's output file as its
//! stdout and stderr, and hands it the task's spec through the start gate
//! (fd 3) once the task is on record; end of file there without a spec
//! means the record was never written, and nothing runs. The holder
//! starts `SHELL [-l] -c CMD` in a process group of its own (a sandboxed
//! command: a session of its own), records the command's identity, waits
//! for it, and writes its exit durably (a file beside the output, renamed
//! into place after an fsync) before it exits itself. Signals it gets are
//! passed to the command's group (`SIGUSR1` as `SIGKILL`, since a holder
//! that is killed records nothing). A runtime that restarts finds the
//! holder by its recorded identity, or its exit record when it is gone.

use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::terminal::{self, Pty};
use crate::model::process::ProcessIdentity;
use crate::runtime::sandbox::{Plan, Support};

/// The first argument that makes `holon` a holder.
pub const HOLD_ARG: &str = "__hold";

/// How long output still in a terminal is copied once its command ended.
const TERMINAL_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// How long stderr still in the tee's pipe is waited for once its command
/// ended, at most (`Tee::finish` stops as soon as the pipe is drained).
const STDERR_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The exit code of a holder that got no spec: nothing ran.
pub const NOT_STARTED: u8 = 125;

/// What a holder is to run, sent through the start gate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HoldSpec {
    pub cmd: String,
    #[serde(default)]
    pub launch: super::Launch,
    pub workdir: PathBuf,
    pub paths: HeldPaths,
    /// The sandbox plan and what the kernel supports (`None`: unconfined).
    pub sandbox: Option<(Plan, Support)>,
}

/// The files beside a held task's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldPaths {
    /// Where the holder records the command's exit.
    pub exit: PathBuf,
    /// Where the holder records the command's own identity.
    pub command: PathBuf,
    /// The named pipe that is the command's stdin (`accepts_input`).
    pub input: Option<PathBuf>,
    /// Where the stderr tee keeps the tail of the command's stderr (a
    /// command without a terminal; older records have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<PathBuf>,
}

impl HeldPaths {
    /// The files of `task_id`, whose output is `output`.
    pub fn beside(output: &Path, accepts_input: bool) -> HeldPaths {
        HeldPaths {
            exit: output.with_extension("exit"),
            command: output.with_extension("pid"),
            input: accepts_input.then(|| output.with_extension("in")),
            stderr: Some(output.with_extension("err")),
        }
    }

    /// Remove them (once the task's terminal record is committed); the
    /// stderr tail stays beside the output, as its artifact.
    pub fn remove(&self) {
        for p in [Some(&self.exit), Some(&self.command), self.input.as_ref()]
            .into_iter()
            .flatten()
        {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// How the command ended, as its holder saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitRecord {
    pub exit_status: Option<i32>,
    pub signal: Option<i32>,
    pub duration_ms: u64,
    /// Why the command could not be started (then nothing ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ExitRecord {
    /// A command that never ran, and why.
    pub fn not_started(why: String) -> ExitRecord {
        ExitRecord {
            exit_status: None,
            signal: None,
            duration_ms: 0,
            error: Some(why),
        }
    }
}

/// Read a holder's exit record (`None`: not written, or unreadable).
pub fn read_exit(path: &Path) -> Option<ExitRecord> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The command's process group (0 until it started).
static GROUP: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived before the command started.
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn relay(signal: libc::c_int) {
    // SAFETY: errno is thread-local; it is put back as it was, so the
    // interrupted code never sees the handler's.
    let errno = unsafe { *libc::__errno_location() };
    let to = match signal {
        libc::SIGUSR1 => libc::SIGKILL,
        other => other,
    };
    let group = GROUP.load(Ordering::SeqCst);
    if group > 0 {
        // SAFETY: kill is async-signal-safe; the group is the command's.
        unsafe {
            libc::kill(-group, to);
        }
    } else {
        PENDING.swap(to, Ordering::SeqCst);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Pass TERM, INT, HUP and QUIT to the command's group, and USR1 as KILL.
/// Handlers (not `SIG_IGN`) go back to their defaults in the command at
/// exec, so the command's own signals are untouched.
fn install_relay() {
    for signal in [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
    ] {
        // SAFETY: a plain sigaction with a handler that only makes
        // async-signal-safe calls.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = relay as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The holder's whole life (`holon __hold EXIT_PATH`).
pub fn run() -> ExitCode {
    // Its own name (`ps`, `killall holon` leave it be): `holon-hold`.
    // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"holon-hold".as_ptr(), 0, 0, 0);
    }
    let exit_path = std::env::args_os().nth(2).map(PathBuf::from);
    let mut spec = Vec::new();
    {
        use std::os::fd::FromRawFd;
        // SAFETY: fd 3 is the gate's read end the runtime gave us; a
        // holder started by hand has none, and the read fails.
        let mut gate = unsafe { std::fs::File::from_raw_fd(3) };
        let _ = gate.read_to_end(&mut spec);
    }
    let spec = match serde_json::from_slice::<HoldSpec>(&spec) {
        Ok(spec) => spec,
        Err(e) => {
            // Nothing ran; the record says why, so the next runtime does
            // not take this for a holder that was killed.
            let why = match spec.is_empty() {
                true => "not started: its runtime did not record it".to_owned(),
                false => format!("not started: its holder could not read what to run ({e})"),
            };
            eprintln!("holon: {why}");
            if let Some(path) = exit_path {
                let _ = record_exit(&path, &ExitRecord::not_started(why));
            }
            return ExitCode::from(NOT_STARTED);
        }
    };
    install_relay();
    let started = Instant::now();
    let record = match start(&spec) {
        Ok((mut child, pty, tee)) => {
            let pid = child.id() as i32;
            // A terminal's output is copied to the output file, the task's
            // input to the terminal.
            let copying = pty.as_ref().and_then(|p| {
                match spec.paths.input.is_some() {
                    true => {
                        let _ = p.copy_in();
                    }
                    false => p.end_input(),
                }
                p.copy_out().ok()
            });
            GROUP.swap(pid, Ordering::SeqCst);
            let pending = PENDING.swap(0, Ordering::SeqCst);
            if pending != 0 {
                // SAFETY: the command's own group.
                unsafe {
                    libc::kill(-pid, pending);
                }
            }
            if let Some(identity) = ProcessIdentity::of(pid) {
                if let Ok(json) = serde_json::to_vec(&identity) {
                    let _ = write_durably(&spec.paths.command, &json);
                }
            }
            if pty.is_none() {
                // The command holds its input now; the holder lets go of
                // it, so a command that closes its stdin closes the pipe.
                quit_stdin();
            }
            use std::os::unix::process::ExitStatusExt;
            let (exit_status, signal, error) = match child.wait() {
                Ok(s) => (s.code(), s.signal(), None),
                Err(e) => (None, None, Some(format!("lost the command: {e}"))),
            };
            // Its group id may name another group from now on.
            GROUP.swap(0, Ordering::SeqCst);
            // Until the terminal or stderr is closed everywhere, but not
            // for ever: a background process may keep it open.
            let deadline = Instant::now() + TERMINAL_DRAIN;
            if let Some(tee) = tee {
                tee.finish(Instant::now() + STDERR_DRAIN);
            }
            if let Some(copy) = copying {
                while !copy.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
            ExitRecord {
                exit_status,
                signal,
                duration_ms: started.elapsed().as_millis() as u64,
                error,
            }
        }
        Err(e) => {
            eprintln!("holon: could not start the command: {e}");
            ExitRecord::not_started(format!("could not start the command: {e}"))
        }
    };
    match record_exit(&spec.paths.exit, &record) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("holon: could not record the command's exit: {e}");
            ExitCode::FAILURE
        }
    }
}

fn record_exit(path: &Path, record: &ExitRecord) -> std::io::Result<()> {
    let json = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    write_durably(path, &json)
}

/// Point the holder's stdin at `/dev/null`.
fn quit_stdin() {
    if let Ok(null) = std::fs::File::open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto our own stdin.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
        }
    }
}

/// Start the command: its own process group (or, sandboxed, its own
/// session), with the holder's stdin, stdout and stderr.
fn start(spec: &HoldSpec) -> std::io::Result<(std::process::Child, Option<Pty>, Option<Tee>)> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(&spec.launch.shell);
    // stdin is the holder's own: the task's named pipe, or nothing.
    cmd.args(spec.launch.shell_args())
        .arg(&spec.cmd)
        .current_dir(&spec.workdir);
    let tty = spec.launch.tty;
    let mut pty = match tty {
        true => {
            let pty = Pty::open()?;
            cmd.stdin(pty.stdio()?)
                .stdout(pty.stdio()?)
                .stderr(pty.stdio()?);
            Some(pty)
        }
        false => None,
    };
    // Without a terminal, stderr goes through the tee: into the output
    // file with stdout, and its tail apart.
    let tee = match (&pty, &spec.paths.stderr) {
        (None, Some(tail)) => match Tee::start(tail) {
            Ok((tee, write)) => {
                cmd.stderr(write);
                Some(tee)
            }
            Err(e) => {
                eprintln!("holon: stderr stays with stdout (no tee: {e})");
                None
            }
        },
        _ => None,
    };
    let prepared = match &spec.sandbox {
        Some((plan, support)) => {
            // Its terminal may be opened again by name (`/dev/tty`, the
            // `/dev/pts` entry): a prompt for a password, an editor.
            let mut plan = plan.clone();
            if let Some(p) = &pty {
                plan.writable_files.push(p.path()?);
                plan.writable_files.push(PathBuf::from("/dev/tty"));
            }
            Some(crate::runtime::sandbox::ready(
                &plan,
                support,
                &spec.workdir,
            )?)
        }
        None if tty => None,
        None => {
            cmd.process_group(0);
            None
        }
    };
    // SAFETY: only raw system calls run between fork and exec: the
    // sandbox's (a session of its own first), else `setsid` for a
    // terminal's session, then the terminal made the controlling one.
    unsafe {
        cmd.pre_exec(move || {
            match &prepared {
                Some(p) => p.apply()?,
                None if tty && libc::setsid() < 0 => return Err(std::io::Error::last_os_error()),
                None => {}
            }
            match tty {
                true => terminal::take_terminal(),
                false => Ok(()),
            }
        });
    }
    let child = cmd.spawn()?;
    // The command's side now lives only in the command: the holder's copy
    // goes (with `cmd`), so the copies end when the command's side is
    // closed.
    drop(cmd);
    if let Some(p) = &mut pty {
        p.terminal = None;
    }
    Ok((child, pty, tee))
}

/// The stderr tee of a running command, and the holder's own copy of the
/// pipe's read end (to see whether stderr is still waiting in it).
pub(super) struct Tee(std::process::Child, std::io::PipeReader);

impl Tee {
    /// Start `holon __tee TAIL` (this very program) reading a new pipe,
    /// writing to the holder's own stderr (the output file); the write
    /// end is for the command.
    fn start(tail: &Path) -> std::io::Result<(Tee, std::process::Stdio)> {
        use std::os::unix::process::CommandExt;
        let (read, write) = std::io::pipe()?;
        let watch = read.try_clone()?;
        let out = std::io::stderr().as_fd().try_clone_to_owned()?;
        let child = std::process::Command::new("/proc/self/exe")
            .arg0("holon-tee")
            .arg(super::tee::TEE_ARG)
            .arg(tail)
            .stdin(read)
            .stdout(out)
            .stderr(std::process::Stdio::null())
            // A stop signals the holder's group: not the tee's.
            .process_group(0)
            .spawn()?;
        Ok((Tee(child, watch), write.into()))
    }

    /// Bytes waiting in the pipe, not yet read by the tee.
    fn waiting(&self) -> i32 {
        use std::os::fd::AsRawFd;
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int; the descriptor is our own.
        match unsafe { libc::ioctl(self.1.as_raw_fd(), libc::FIONREAD, &mut n) } {
            0 => n,
            _ => 0,
        }
    }

    /// Wait until the tee copied what the command left: it ended (every
    /// writer closed stderr: the usual case, within a millisecond or two),
    /// or the pipe has stayed empty for `QUIET` (a background process
    /// keeps stderr open, and keeps its tee, which then ends on its own;
    /// an empty pipe alone does not say the tee wrote what it read, so the
    /// wait is long enough for a tee the machine was slow to run); never
    /// past `deadline`.
    fn finish(mut self, deadline: Instant) {
        const QUIET: std::time::Duration = std::time::Duration::from_millis(50);
        let mut quiet_since: Option<Instant> = None;
        while Instant::now() < deadline {
            if !matches!(self.0.try_wait(), Ok(None)) {
                return;
            }
            match self.waiting() {
                0 => {
                    let since = *quiet_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= QUIET {
                        return;
                    }
                }
                _ => quiet_since = None,
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

use crate::durable::write as write_durably;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_files_sit_beside_its_output() {
        let p = HeldPaths::beside(Path::new("/d/main/task_1.log"), true);
        assert_eq!(p.exit, Path::new("/d/main/task_1.exit"));
        assert_eq!(p.command, Path::new("/d/main/task_1.pid"));
        assert_eq!(p.input.as_deref(), Some(Path::new("/d/main/task_1.in")));
        assert_eq!(HeldPaths::beside(Path::new("/x.log"), false).input, None);
    }

    #[test]
    fn an_exit_record_is_whole_or_absent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.exit");
        assert_eq!(read_exit(&path), None);
        std::fs::write(&path, b"{\"exit_status\": 3, \"sig").unwrap();
        assert_eq!(read_exit(&path), None, "a torn record reads as none");
        let record = ExitRecord {
            exit_status: Some(3),
            signal: None,
            duration_ms: 12,
            error: None,
        };
        write_durably(&path, &serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(read_exit(&path), Some(record));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            left,
            [std::ffi::OsString::from("t.exit")],
            "no temporary file left"
        );
    }
}
