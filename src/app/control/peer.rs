//! Who is on the other end of a control connection. The socket's mode
//! (0600 in a 0700 directory) keeps other users out; this keeps out the
//! operator's own uid when it speaks for a sandboxed command. Every
//! command Holon sandboxes runs in a user namespace of its own, so a peer
//! whose user namespace is not the server's is refused, whatever it
//! sends. A peer whose namespace cannot be read (it is gone already, or
//! in a process namespace the server cannot see) is refused too: the
//! check fails closed. This is the second layer: the sandbox's kernel
//! rules already refuse path unix sockets and hide the socket's
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
    same_user_namespace(pid)
}

/// Whether process `pid` shares this process's user namespace.
fn same_user_namespace(pid: i32) -> Result<(), String> {
    let ours = std::fs::read_link("/proc/self/ns/user")
        .map_err(|e| format!("refused: cannot read the runtime's user namespace ({e})"))?;
    let theirs = std::fs::read_link(format!("/proc/{pid}/ns/user"))
        .map_err(|e| format!("refused: cannot read the peer's user namespace ({e})"))?;
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
}
