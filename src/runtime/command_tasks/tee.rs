//! The stderr tee: a small process of Holon's own (`holon __tee TAIL`)
//! that a holder starts beside a command without a terminal. The
//! command's stderr is a pipe to the tee, which copies every byte to its
//! own stdout (the task's output file, opened for appending, so the
//! combined output keeps both streams) and keeps the last `TAIL_MAX`
//! bytes of stderr alone in `TAIL` (written in place by rename when a
//! burst ends, at most `FLUSH_EVERY` apart while it flows, and at the end).
//! It lives, in a process group of its own and deaf to a stop's signals,
//! until the last writer of the pipe closes it: a process the command left
//! running in the background keeps its stderr, and is never cut off by a
//! closed pipe when its command (and the holder) ended. Stdout goes
//! straight to the output file, so a stderr line may land there a moment
//! after stdout written just after it.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The first argument that makes `holon` a stderr tee.
pub const TEE_ARG: &str = "__tee";

/// The stderr kept apart, at most.
pub const TAIL_MAX: usize = 64 * 1024;

/// How often the tail file is written while stderr flows.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// The last `max` bytes written to it.
#[derive(Debug, Default)]
pub(super) struct Tail {
    bytes: Vec<u8>,
    max: usize,
}

impl Tail {
    pub fn new(max: usize) -> Tail {
        Tail {
            bytes: Vec::new(),
            max,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.max {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&chunk[chunk.len() - self.max..]);
            return;
        }
        let over = (self.bytes.len() + chunk.len()).saturating_sub(self.max);
        self.bytes.drain(..over);
        self.bytes.extend_from_slice(chunk);
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Write the tail whole: a reader sees the old one or the new one. Private
/// like the output file, whatever the umask the tee runs with (the
/// operator's, which its command inherits).
fn save(path: &Path, tail: &Tail) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("err.tmp");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(tail.bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// Whether stdin has input (or its end) within `ms` (-1: wait for it).
fn readable(ms: i32) -> bool {
    let mut fd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, ours, for the call's length.
    let n = unsafe { libc::poll(&mut fd, 1, ms) };
    // An error (EINTR among them) reads on: the read says what it is.
    n != 0
}

/// The tee's whole life (`holon __tee TAIL`): stdin to stdout, and the
/// tail of it to `TAIL`.
pub fn run() -> ExitCode {
    // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"holon-tee".as_ptr(), 0, 0, 0);
    }
    // A stop is the command's business, not the tee's (it has a process
    // group of its own, and ignores what a stop sends): a command that
    // winds down still has its stderr read, and the tee ends at end of
    // file, when the last process holding that stderr closed it.
    // SAFETY: plain signal dispositions.
    unsafe {
        for signal in [
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGTERM,
            libc::SIGUSR1,
            libc::SIGPIPE,
        ] {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
    let Some(path) = std::env::args_os().nth(2).map(std::path::PathBuf::from) else {
        eprintln!("holon: __tee needs the path of its tail file");
        return ExitCode::FAILURE;
    };
    let mut tail = Tail::new(TAIL_MAX);
    let (mut input, mut output) = (std::io::stdin().lock(), std::io::stdout().lock());
    let mut buf = vec![0u8; 16 * 1024];
    // When the tail was last written, and whether it has changed since.
    let mut saved: Option<Instant> = None;
    let mut dirty = false;
    loop {
        // Wait for input; with a change not yet written, no longer than
        // until it is due.
        let wait = match (dirty, saved) {
            (true, Some(at)) => FLUSH_EVERY.saturating_sub(at.elapsed()).as_millis() as i32,
            (true, None) => 0,
            (false, _) => -1,
        };
        if !readable(wait) {
            save(&path, &tail);
            (saved, dirty) = (Some(Instant::now()), false);
            continue;
        }
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                // The output file first: the combined stream must not
                // lose what the tail keeps.
                let _ = output.write_all(&buf[..n]);
                let _ = output.flush();
                tail.push(&buf[..n]);
                dirty = true;
                // Written at once when nothing more is waiting (the end of
                // a burst, a command's last words); at most every
                // `FLUSH_EVERY` while stderr keeps flowing.
                if !readable(0) || saved.is_none_or(|at| at.elapsed() >= FLUSH_EVERY) {
                    save(&path, &tail);
                    (saved, dirty) = (Some(Instant::now()), false);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    // A command that wrote nothing to stderr leaves no tail file.
    if dirty {
        save(&path, &tail);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes_whatever_the_chunks() {
        let mut t = Tail::new(8);
        t.push(b"abc");
        t.push(b"defgh");
        assert_eq!(t.bytes(), b"abcdefgh");
        t.push(b"ij");
        assert_eq!(t.bytes(), b"cdefghij");
        t.push(b"0123456789");
        assert_eq!(
            t.bytes(),
            b"23456789",
            "a chunk past the bound keeps its end"
        );
        t.push(b"");
        assert_eq!(t.bytes(), b"23456789");
    }
}
