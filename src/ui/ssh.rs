//! Reaching a runtime on another machine over the operator's own `ssh`:
//! `ssh://[user@]host[:port][/path/to/holon/home]` runs `ssh` (or the
//! program `HOLON_SSH` names, as `GIT_SSH` does) to start `holon attach
//! --stdio` on the far side, which bridges that runtime's control socket
//! over its stdin and stdout. The child's pipes are carried over a socket
//! pair into the same `SocketClient` as a local socket, so requests,
//! subscriptions and resume-from-cursor behave exactly as they do here.
//! Keys, agents, `~/.ssh/config`, jump hosts and `known_hosts` are ssh's:
//! Holon opens no listener and copies no token.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::process::{Child, Command};

use super::client::SocketClient;

/// Where an `ssh://` address points.
#[derive(Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// The far side's Holon home (`--home`); `~/…` is under the far
    /// user's home directory.
    pub home: Option<String>,
}

impl SshTarget {
    /// Parse `ssh://[user@]host[:port][/path]`. A user or host that could
    /// be read as an option by ssh (a leading `-`), or holds whitespace or
    /// control characters, is refused: the address may come from a file
    /// someone else wrote.
    pub fn parse(address: &str) -> Result<SshTarget, String> {
        let rest = address
            .trim()
            .strip_prefix("ssh://")
            .ok_or_else(|| format!("`{address}` is not an ssh:// address"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (host, port) = split_port(hostport).map_err(|m| format!("`{address}`: {m}"))?;
        let user = match user {
            Some(u) if !name_ok(u) => {
                return Err(format!(
                    "`{address}`: `{u}` is not a user name ssh can take"
                ))
            }
            Some(u) => Some(u.to_owned()),
            None => None,
        };
        if !name_ok(&host) {
            return Err(format!("`{address}` names no host ssh can take"));
        }
        let home = match path {
            None | Some("/") => None,
            // Only what no far shell (sh, bash, zsh, fish) reads as more
            // than a path, even quoted.
            Some(p) if !p.chars().all(path_char_ok) => {
                return Err(format!(
                    "`{address}`: the home path may hold only letters, digits, spaces and . _ - + @ ~ /"
                ))
            }
            // `/~/x` is `~/x` on the far side, as git reads it.
            Some(p) => Some(match p.strip_prefix("/~") {
                Some(under) if under.is_empty() || under.starts_with('/') => format!("~{under}"),
                _ => p.trim_end_matches('/').to_owned(),
            }),
        };
        Ok(SshTarget {
            user,
            host,
            port,
            home,
        })
    }

    /// The address as given back to the operator (never a secret in it).
    pub fn describe(&self) -> String {
        let user = self
            .user
            .as_deref()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        let host = match self.host.contains(':') {
            true => format!("[{}]", self.host),
            false => self.host.clone(),
        };
        let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        let home = match &self.home {
            Some(h) if h.starts_with('~') => format!("/{h}"),
            Some(h) => h.clone(),
            None => String::new(),
        };
        format!("ssh://{user}{host}{port}{home}")
    }

    /// The command the far side's shell runs: `holon attach --stdio`, with
    /// the home quoted for that shell (a `~` prefix left to expand).
    pub fn remote_command(&self) -> String {
        let mut command = "holon attach --stdio".to_owned();
        if let Some(home) = &self.home {
            command.push_str(" --home ");
            match home.strip_prefix("~/") {
                Some(under) => {
                    command.push_str("~/");
                    command.push_str(&sh_quote(under));
                }
                None if home == "~" => command.push('~'),
                None => command.push_str(&sh_quote(home)),
            }
        }
        command
    }

    /// The ssh program and its arguments. `interactive`: ssh may ask at
    /// the terminal (a passphrase, a new host key) — only before the
    /// console takes the screen; a reconnect runs in batch mode.
    pub fn command(&self, interactive: bool) -> Command {
        self.command_with(&ssh_program(), interactive)
    }

    /// `command`, run by `program` instead of `HOLON_SSH` or `ssh`.
    pub fn command_with(&self, program: &std::ffi::OsStr, interactive: bool) -> Command {
        let openssh = std::path::Path::new(program)
            .file_name()
            .is_some_and(|n| n == "ssh");
        let mut cmd = Command::new(program);
        // No terminal on the far side: the bridge carries bytes, not keys.
        cmd.arg("-T");
        if openssh {
            // A link that died without closing is found within a minute.
            cmd.args([
                "-o",
                "ServerAliveInterval=15",
                "-o",
                "ServerAliveCountMax=3",
            ]);
            if !interactive {
                cmd.args(["-o", "BatchMode=yes"]);
            }
        }
        if let Some(port) = self.port {
            cmd.args(["-p", &port.to_string()]);
        }
        let destination = match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        };
        cmd.arg(destination).arg(self.remote_command());
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }
}

/// The program that plays ssh: `HOLON_SSH` when set, else `ssh`.
fn ssh_program() -> std::ffi::OsString {
    std::env::var_os("HOLON_SSH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "ssh".into())
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_port(hostport: &str) -> Result<(String, Option<u16>), String> {
    let parse_port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("`{p}` is not a port"))
    };
    if let Some(v6) = hostport.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or("an unclosed `[`")?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host.to_owned(), Some(parse_port(p)?))),
            None if after.is_empty() => Ok((host.to_owned(), None)),
            None => Err(format!("`{after}` after the address")),
        };
    }
    match hostport.rsplit_once(':') {
        Some((host, p)) => Ok((host.to_owned(), Some(parse_port(p)?))),
        None => Ok((hostport.to_owned(), None)),
    }
}

fn path_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '@' | '~' | '/' | ' ')
}

/// A user or host ssh reads as such and nothing else.
fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '%'))
}

/// `s` single-quoted for a POSIX shell.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What ssh and the far side last wrote to stderr: kept (the last 8 KiB)
/// to explain a connection that failed.
#[derive(Clone, Default)]
struct Stderr(Arc<Mutex<Vec<u8>>>);

const STDERR_KEPT: usize = 8 * 1024;

impl Stderr {
    fn push(&self, bytes: &[u8]) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.extend_from_slice(bytes);
        let over = kept.len().saturating_sub(STDERR_KEPT);
        kept.drain(..over);
    }

    fn text(&self) -> String {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    }
}

/// Start ssh and carry its pipes into a `SocketClient`. The child is
/// killed when the client is dropped or the link ends. A failure to reach
/// a runtime is explained from what ssh and the far side said.
pub async fn connect(target: &SshTarget, interactive: bool) -> std::io::Result<SocketClient> {
    connect_via(target, &ssh_program(), interactive).await
}

/// `connect`, with `program` playing ssh (a benchmark's stand-in).
pub async fn connect_via(
    target: &SshTarget,
    program: &std::ffi::OsStr,
    interactive: bool,
) -> std::io::Result<SocketClient> {
    let mut child = target
        .command_with(program, interactive)
        .spawn()
        .map_err(|e| {
            std::io::Error::other(format!("cannot run `{}`: {e}", program.to_string_lossy()))
        })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("ssh started without its pipes"));
    };
    let said = Stderr::default();
    tokio::spawn(keep_stderr(stderr, said.clone()));
    let (ours, theirs) = UnixStream::pair()?;
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(pump(child, stdin, stdout, ours, exit_tx));
    let client = SocketClient::over(theirs, PathBuf::from(target.describe()))?;
    match first_answer(&client, interactive).await {
        Ok(()) => Ok(client),
        Err(e) => {
            drop(client);
            // The child's status, once it ended (it is killed if not).
            let code = tokio::time::timeout(std::time::Duration::from_secs(2), exit_rx)
                .await
                .ok()
                .and_then(Result::ok)
                .flatten();
            // Give the stderr reader a moment to take the last words.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            Err(std::io::Error::other(explain(
                target,
                code,
                &said.text(),
                &e,
            )))
        }
    }
}

/// The far side answers a status request (proving the bridge reached a
/// runtime) within the time ssh takes to connect. Interactive, ssh may be
/// asking at the terminal (a passphrase, a new host key): it is given the
/// time the operator takes (Ctrl+C ends it).
async fn first_answer(client: &SocketClient, interactive: bool) -> Result<(), String> {
    use crate::protocol::{Request, RuntimeClient};
    let asked = client.call_raw(Request::RuntimeStatus);
    let within = match interactive {
        true => std::time::Duration::from_secs(24 * 3600),
        false => std::time::Duration::from_secs(30),
    };
    match tokio::time::timeout(within, asked).await {
        Err(_) => Err(format!("no answer within {} s", within.as_secs())),
        Ok(Err(e)) => Err(e.message),
        Ok(Ok(_)) => Ok(()),
    }
}

async fn keep_stderr(mut stderr: tokio::process::ChildStderr, said: Stderr) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        said.push(&buf[..n]);
        tracing::debug!(said = %String::from_utf8_lossy(&buf[..n]).trim_end(), "ssh");
    }
}

/// Carry bytes between the child's pipes and our end of the pair until
/// either side ends, then end the child and report how it exited.
async fn pump(
    mut child: Child,
    mut stdin: tokio::process::ChildStdin,
    mut stdout: tokio::process::ChildStdout,
    ours: UnixStream,
    exit: tokio::sync::oneshot::Sender<Option<i32>>,
) {
    let (mut read, mut write) = ours.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut read, &mut stdin).await;
        let _ = stdin.shutdown().await;
    };
    let down = async {
        let _ = tokio::io::copy(&mut stdout, &mut write).await;
        let _ = write.shutdown().await;
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
    // Give ssh a moment to leave by itself (it says why on stderr), then
    // ask it to (SIGTERM lets it put the terminal back if it was asking),
    // then end it.
    let moment = std::time::Duration::from_millis(500);
    let mut code = None;
    for ask in [true, false] {
        if let Ok(Ok(status)) = tokio::time::timeout(moment, child.wait()).await {
            code = status.code();
            break;
        }
        match (ask, child.id().and_then(|p| i32::try_from(p).ok())) {
            // SAFETY: our own child, not yet reaped (so its id is still ours).
            (true, Some(pid)) => unsafe {
                libc::kill(pid, libc::SIGTERM);
            },
            _ => {
                let _ = child.start_kill();
            }
        }
    }
    if code.is_none() {
        code = child.wait().await.ok().and_then(|s| s.code());
    }
    let _ = exit.send(code);
}

/// Why an ssh connection reached no runtime, in the operator's terms,
/// with ssh's own last words.
fn explain(target: &SshTarget, code: Option<i32>, stderr: &str, error: &str) -> String {
    let host = &target.host;
    // What the far side said reaches the operator's terminal: none of its
    // escape sequences do.
    let stderr: String = stderr
        .chars()
        .map(|c| match c.is_control() && c != '\n' {
            true => ' ',
            false => c,
        })
        .collect();
    let last: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("@@@"))
        .collect();
    let tail = last[last.len().saturating_sub(4)..].join(" / ");
    let said = match tail.is_empty() {
        true => String::new(),
        false => format!(" (it said: {tail})"),
    };
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("host identification has changed")
        || lower.contains("host key verification failed")
    {
        return format!(
            "ssh refused {host}: its host key is not the one known_hosts holds for it. \
             If the machine was reinstalled, check its new key and update ~/.ssh/known_hosts; \
             otherwise someone may be in the middle{said}"
        );
    }
    if lower.contains("unexpected argument '--stdio'")
        || lower.contains("unrecognized subcommand 'attach'")
    {
        return format!(
            "the holon on {host} is older than this one ({}) and has no `attach --stdio`: \
             update it there{said}",
            env!("CARGO_PKG_VERSION")
        );
    }
    if code == Some(127) || lower.contains("holon: command not found") {
        return format!(
            "{host} has no `holon` on the PATH its ssh commands get: install it there, or \
             put its directory on that PATH (a non-interactive shell's){said}"
        );
    }
    if let Some(line) = last.iter().rev().find(|l| l.starts_with("holon: ")) {
        let line = line
            .trim_start_matches("holon: ")
            .trim_start_matches("error: ");
        return format!("on {host}: {line}");
    }
    match code {
        Some(255) => format!("ssh could not reach {host}{said}"),
        Some(c) => format!("ssh to {host} ended (exit {c}) before a runtime answered{said}"),
        None => format!("no runtime answered over ssh to {host}: {error}{said}"),
    }
}

/// `holon attach --stdio`: the far end of the bridge. Carry stdin to the
/// control socket and the socket to stdout until either ends; the runtime
/// sees one client come and go.
pub async fn serve_stdio(socket: &std::path::Path) -> std::io::Result<()> {
    let stream = UnixStream::connect(socket).await.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "no Holon runtime answers on {}: {e}; start one there with `holon --detach`",
                socket.display()
            ),
        )
    })?;
    let (mut read, mut write) = stream.into_split();
    let (mut stdin, mut stdout) = (tokio::io::stdin(), tokio::io::stdout());
    let up = async {
        let _ = tokio::io::copy(&mut stdin, &mut write).await;
    };
    let down = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if stdout.write_all(&buf[..n]).await.is_err() || stdout.flush().await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
    Ok(())
}

#[cfg(test)]
#[path = "ssh_tests.rs"]
mod tests;
