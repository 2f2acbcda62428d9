//! Who is on the other end of a control connection. The socket's mode
//! (0600 in a 0700 directory) keeps other users out; this keeps out the
//! operator's own uid when it speaks for a sandboxed command. Every
//! command Holon sandboxes runs with `no_new_privs` and a seccomp filter,
//! and (where the kernel allows) in a user namespace of its own; a peer
//! with either mark is refused, whatever it sends. Both are read from
//! `/proc/PID`: `status` is readable for any process, and the user
//! namespace's link for any dumpable one (Holon's own clients are not
//! dumpable, and share the server's namespace anyway). A peer that is
//! gone, or not visible from the server's process namespace, is refused
//! too: the check fails closed. This is the third layer: the sandbox's
//! kernel rules already refuse path unix sockets and hide the socket's
//! directory.

use tokio::net::UnixStream;

/// `Ok` when the peer may use the control plane; else why not, in words
/// for the refusal line.
pub fn admitted(stream: &UnixStream) -> Result<(), String> {
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("refused: cannot tell who connected ({e})"))?;
    let pid = cred
        .pid()
        .filter(|p| *p > 0)
        .ok_or("refused: the peer's process is not visible to the runtime")?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("refused: cannot read the peer's status ({e})"))?;
    if confined(&status) {
        return Err(
            "refused: the peer runs under a seccomp filter with no_new_privs (a sandboxed \
             command); the control plane is the operator's alone"
                .to_owned(),
        );
    }
    same_user_namespace(pid)
}

/// Whether `/proc/PID/status` says the process is confined as Holon
/// confines a command: `no_new_privs` and a seccomp filter.
fn confined(status: &str) -> bool {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    field("NoNewPrivs:") == Some("1") && field("Seccomp:") == Some("2")
}

/// Whether process `pid` shares this process's user namespace. A link
/// the server may not read (a process that is not dumpable: Holon's own
/// clients) says nothing either way.
fn same_user_namespace(pid: i32) -> Result<(), String> {
    let ours = std::fs::read_link("/proc/self/ns/user")
        .map_err(|e| format!("refused: cannot read the runtime's user namespace ({e})"))?;
    let theirs = match std::fs::read_link(format!("/proc/{pid}/ns/user")) {
        Ok(theirs) => theirs,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(()),
        Err(e) => {
            return Err(format!(
                "refused: cannot read the peer's user namespace ({e})"
            ))
        }
    };
    match ours == theirs {
        true => Ok(()),
        false => Err(
            "refused: the peer runs in another user namespace (a sandboxed command); the \
             control plane is the operator's alone"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_admitted_and_a_missing_one_is_not() {
        assert_eq!(same_user_namespace(std::process::id() as i32), Ok(()));
        // Past pid_max (at most 2^22): never a live process.
        let gone = same_user_namespace(i32::MAX).unwrap_err();
        assert!(gone.contains("cannot read the peer"), "{gone}");
    }

    #[test]
    fn no_new_privs_with_a_seccomp_filter_is_a_sandboxed_command() {
        let status = |nnp: u8, seccomp: u8| {
            format!("Name:\tsh\nUid:\t1000\nNoNewPrivs:\t{nnp}\nSeccomp:\t{seccomp}\nSeccomp_filters:\t1\n")
        };
        assert!(confined(&status(1, 2)));
        assert!(!confined(&status(0, 0)));
        assert!(!confined(&status(1, 0)));
        assert!(!confined(&status(0, 2)));
        assert!(!confined("Name:\tholon\n"));
    }
}
