//! Who is on the other end of a control connection. The socket's mode
//! (0600 in a 0700 directory) keeps other users out; this keeps out the
//! operator's own uid when it speaks for a sandboxed command. Every
//! command Holon sandboxes runs with `no_new_privs` and a seccomp filter
//! stacked on whatever the runtime runs under, and (where the kernel
//! allows) in a user namespace of its own; a peer with either mark is
//! refused, whatever it sends. Both are read from
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
    let ours = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if confined_past(&status, &ours) {
        return Err(
            "refused: the peer runs under a seccomp filter with no_new_privs (a sandboxed \
             command); the control plane is the operator's alone"
                .to_owned(),
        );
    }
    same_user_namespace(pid)
}

/// Whether `/proc/PID/status` (`peer`) says the process is confined as
/// Holon confines a command, beyond what the server itself runs under
/// (`ours`): `no_new_privs` with more seccomp filters than the server
/// has. A sandboxed command's filter is stacked on whatever the runtime
/// ran under (a container's profile, a hardened unit), so the operator's
/// own CLI beside the runtime, under the same profile, has no more
/// filters than it and is not refused. A kernel that does not count
/// filters (before 5.9) is read by mode alone: a filtered peer of an
/// unfiltered server.
fn confined_past(peer: &str, ours: &str) -> bool {
    let field = |status: &str, name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    if field(peer, "NoNewPrivs:") != Some(1) || field(peer, "Seccomp:") != Some(2) {
        return false;
    }
    match (
        field(peer, "Seccomp_filters:"),
        field(ours, "Seccomp_filters:"),
    ) {
        (Some(theirs), Some(mine)) => theirs > mine,
        _ => field(ours, "Seccomp:") != Some(2),
    }
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
    fn a_peer_filtered_past_the_server_is_a_sandboxed_command() {
        let status = |nnp: u8, mode: u8, filters: Option<u8>| {
            let count = filters.map_or(String::new(), |n| format!("Seccomp_filters:\t{n}\n"));
            format!("Name:\tsh\nNoNewPrivs:\t{nnp}\nSeccomp:\t{mode}\n{count}")
        };
        let server = status(0, 0, Some(0));
        assert!(confined_past(&status(1, 2, Some(1)), &server));
        assert!(!confined_past(&status(0, 0, Some(0)), &server));
        assert!(!confined_past(&status(1, 0, Some(0)), &server));
        assert!(!confined_past(&status(0, 2, Some(1)), &server));
        // In a container whose profile both run under: the operator's CLI
        // has the runtime's one filter; a command has one more.
        let contained = status(1, 2, Some(1));
        assert!(!confined_past(&status(1, 2, Some(1)), &contained));
        assert!(confined_past(&status(1, 2, Some(2)), &contained));
        // A kernel that counts no filters: by mode.
        assert!(confined_past(&status(1, 2, None), &status(0, 0, None)));
        assert!(!confined_past(&status(1, 2, None), &status(1, 2, None)));
        assert!(!confined_past("Name:\tholon\n", &server));
    }
}
