//! Process identity: a pid alone does not name a process. After a reboot,
//! in a new pid namespace, or just after enough time, the same number
//! belongs to someone else, and signalling it would hurt a stranger. So
//! Holon records a process as (pid, start time in clock ticks since boot
//! from `/proc/<pid>/stat`, boot id from `/proc/sys/kernel/random/boot_id`)
//! and signals only when all three still match. A record without them
//! (written before this existed) is never signalled. The record itself is
//! the model's (`model::process::ProcessIdentity`).

use crate::model::process::ProcessIdentity;

/// Whether this process's child `pid` has exited, without reaping it (so
/// its pid, and the process group it leads, stay its own until it is).
pub fn child_has_exited(pid: u32) -> bool {
    // SAFETY: waitid with WNOWAIT only reads the child's state into
    // `info`, which is zeroed first; nothing is reaped.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let found = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        found == 0 && info.si_pid() != 0
    }
}

/// What a recorded identity says about the system now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// The same process is still running.
    Running,
    /// No process has that pid (or it is a zombie: it has stopped).
    Gone,
    /// The pid belongs to another process now (or the machine rebooted):
    /// it must not be signalled.
    Reused,
}

/// The running kernel's boot id.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// State letter and start ticks from a `/proc/<pid>/stat` line. The command
/// name may hold spaces and parentheses, so fields are counted after the
/// last `)`: state is field 3, start time field 22.
pub fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

fn stat_of(pid: i32) -> Option<(char, u64)> {
    if pid <= 0 {
        return None;
    }
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

impl ProcessIdentity {
    /// The identity of a live process, read now (right after spawning it).
    pub fn of(pid: i32) -> Option<ProcessIdentity> {
        let (_, start_ticks) = stat_of(pid)?;
        Some(ProcessIdentity {
            pid,
            start_ticks,
            boot_id: boot_id()?,
        })
    }

    /// Whether the recorded process still runs, is gone, or its pid now
    /// names someone else.
    pub fn liveness(&self) -> Liveness {
        if boot_id().as_deref() != Some(self.boot_id.as_str()) {
            // Another boot: whatever has this pid now is not ours.
            return match stat_of(self.pid) {
                Some(_) => Liveness::Reused,
                None => Liveness::Gone,
            };
        }
        match stat_of(self.pid) {
            None => Liveness::Gone,
            Some((state, _)) if state == 'Z' || state == 'X' => Liveness::Gone,
            Some((_, start)) if start == self.start_ticks => Liveness::Running,
            Some(_) => Liveness::Reused,
        }
    }

    /// Signal the process group this process leads, only while it is still
    /// the same process. Returns whether a signal was sent.
    pub fn signal_group(&self, signal: i32) -> bool {
        if self.liveness() != Liveness::Running {
            return false;
        }
        // SAFETY: plain syscall on a process group we started and just
        // identified; the negative pid addresses the group it leads.
        unsafe { libc::kill(-self.pid, signal) == 0 }
    }

    /// Signal this process itself, only while it is still the same process.
    pub fn signal(&self, signal: i32) -> bool {
        if self.liveness() != Liveness::Running {
            return false;
        }
        // SAFETY: as above, on the process itself.
        unsafe { libc::kill(self.pid, signal) == 0 }
    }

    /// Whether the identity was recorded during this boot.
    pub fn same_boot(&self) -> bool {
        boot_id().as_deref() == Some(self.boot_id.as_str())
    }

    /// Whether any process of the group this process led is still running
    /// (zombies, which have stopped, do not count). A group id is not handed
    /// out again while the group has members, so while this is true the
    /// group is still ours.
    pub fn group_running(&self) -> bool {
        // Another boot's group ids mean nothing now.
        self.same_boot() && group_running(self.pid)
    }

    /// KILL the group this process led, which was identified earlier and
    /// still has running members.
    pub fn kill_group(&self) {
        if self.group_running() {
            // SAFETY: the group id cannot have been reused while it has
            // members (checked just above).
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
            }
        }
    }
}

/// Whether a process with group id `pgid` is running (not a zombie).
fn group_running(pgid: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let running = f.first().is_some_and(|s| *s != "Z" && *s != "X");
            running && f.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (we ird) (name)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
        assert_eq!(parse_stat(line), Some(('S', 987654)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1 2"), None);
    }

    #[test]
    fn a_live_process_matches_and_a_different_start_time_is_reused() {
        let me =
            ProcessIdentity::of(std::process::id() as i32).expect("no identity for this process");
        assert_eq!(me.liveness(), Liveness::Running);
        let impostor = ProcessIdentity {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert_eq!(impostor.liveness(), Liveness::Reused);
        assert!(!impostor.signal(0), "a reused pid is never signalled");
        let other_boot = ProcessIdentity {
            boot_id: "not-this-boot".into(),
            ..me.clone()
        };
        assert_eq!(other_boot.liveness(), Liveness::Reused);
        let gone = ProcessIdentity {
            pid: i32::MAX - 7,
            ..me
        };
        assert_eq!(gone.liveness(), Liveness::Gone);
    }
}
