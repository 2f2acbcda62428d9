//! The process side of command tasks: the start gate that keeps a command
//! from running before its record is durable, signalling a supervised
//! group through its recorded identity, and what restart recovery does to a
//! group a dead runtime left behind (TERM, then KILL, and the truth about
//! which was needed).

use std::time::{Duration, Instant};

use crate::model::process::ProcessIdentity;
use crate::runtime::process_identity::Liveness;

/// Signal a supervised task's process group: through its identity when
/// one was recorded (never a stranger that took the pid over), else by pid
/// while the child is still held un-reaped by its supervisor.
pub(super) fn signal_live(pid: i32, identity: Option<&ProcessIdentity>, signal: i32) {
    match identity {
        Some(id) => {
            id.signal_group(signal);
        }
        None if pid > 0 => {
            // SAFETY: plain syscall; the negative pid addresses the task's
            // own process group, which it leads (process_group(0)).
            unsafe {
                libc::kill(-pid, signal);
            }
        }
        None => {}
    }
}

/// The write end of a pipe a new task's process waits on before it execs
/// its command. Opening it (writing its payload: a line for a shell, the
/// spec for a holder) lets the command run; dropping it unopened (the task
/// record could not be written, or the runtime died) makes the child exit
/// without running anything. So no command runs that is not on record.
pub(super) struct StartGate {
    pub(super) fd: i32,
    pub(super) payload: Vec<u8>,
}

/// A private named pipe (a held task's stdin).
pub(super) fn make_fifo(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("a path with a NUL byte"))?;
    // SAFETY: a plain system call on a path we own.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl StartGate {
    /// A close-on-exec pipe: (read end, write end).
    pub(super) fn pipe() -> std::io::Result<(i32, i32)> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 fills the two descriptors it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((fds[0], fds[1]))
    }

    /// In the child, between fork and exec: the gate's read end becomes fd 3
    /// and survives exec; the write end is closed (a child holding it would
    /// never see the end of file). Only async-signal-safe calls.
    ///
    /// # Safety
    /// Call only in a freshly forked child (`pre_exec`).
    pub(super) unsafe fn child_side(read: i32, write: i32) -> std::io::Result<()> {
        libc::close(write);
        let ok = if read == 3 {
            // dup2 onto itself would keep close-on-exec: clear it instead.
            libc::fcntl(3, libc::F_SETFD, 0) == 0
        } else {
            libc::dup2(read, 3) >= 0
        };
        if ok {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Write the payload (all of it: a holder reads to the end of file)
    /// and close.
    pub(super) fn open(self) {
        let mut rest: &[u8] = &self.payload;
        while !rest.is_empty() {
            // SAFETY: writing to our own pipe; drop closes it.
            let n = unsafe { libc::write(self.fd, rest.as_ptr().cast(), rest.len()) };
            match n {
                n if n > 0 => rest = &rest[n as usize..],
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                // The child is gone: its supervisor records why.
                _ => break,
            }
        }
    }
}

impl Drop for StartGate {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this gate owns, once.
        unsafe {
            libc::close(self.fd);
        }
    }
}

/// How often recovery looks whether a terminated group is gone.
pub(super) const GROUP_POLL: Duration = Duration::from_millis(25);

/// After a restart, end a task's process group if (and only if) its
/// recorded identity still matches: TERM, then KILL after `grace` for a
/// group that ignores TERM. Returns the truth for the task's summary.
pub(super) async fn terminate_recovered(id: &ProcessIdentity, grace: Duration) -> &'static str {
    match id.liveness() {
        Liveness::Gone if !id.group_running() => {
            "interrupted: its process is gone after a runtime restart"
        }
        Liveness::Reused => {
            "interrupted: after a runtime restart its pid belongs to another process (or the \
             machine restarted); that process was left alone"
        }
        Liveness::Gone | Liveness::Running => {
            id.signal_group(libc::SIGTERM);
            let deadline = Instant::now() + grace;
            while id.group_running() && Instant::now() < deadline {
                tokio::time::sleep(GROUP_POLL).await;
            }
            if !id.group_running() {
                return "interrupted: a runtime restart ended its supervision; its process group \
                        was terminated (SIGTERM)";
            }
            id.kill_group();
            let deadline = Instant::now() + Duration::from_secs(2);
            while id.group_running() && Instant::now() < deadline {
                tokio::time::sleep(GROUP_POLL).await;
            }
            "interrupted: a runtime restart ended its supervision; its process group ignored \
             SIGTERM and was killed (SIGKILL)"
        }
    }
}

#[cfg(test)]
mod gate_tests {
    use super::StartGate;

    /// A task's shell runs its command only after the gate opens; a gate
    /// dropped unopened (record not written, runtime dead) runs nothing.
    #[test]
    fn the_command_runs_only_through_an_opened_gate() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let run = |open: bool| {
            let marker = dir.path().join(format!("ran-{open}"));
            let (read, write) = StartGate::pipe().unwrap();
            let script = format!(
                "read _ <&3 || exit 125; exec 3<&-\ntouch {}",
                marker.display()
            );
            let mut cmd = std::process::Command::new("/bin/sh");
            cmd.arg("-c").arg(script);
            // SAFETY: child_side runs only async-signal-safe calls.
            unsafe {
                cmd.pre_exec(move || StartGate::child_side(read, write));
            }
            let mut child = cmd.spawn().unwrap();
            // SAFETY: the parent keeps only the write end.
            unsafe {
                libc::close(read);
            }
            let gate = StartGate {
                fd: write,
                payload: b"go\n".to_vec(),
            };
            if open {
                gate.open();
            } else {
                drop(gate);
            }
            let status = child.wait().unwrap();
            (status.code(), marker.exists())
        };
        assert_eq!(run(true), (Some(0), true));
        assert_eq!(
            run(false),
            (Some(125), false),
            "nothing ran without a record"
        );
    }
}
