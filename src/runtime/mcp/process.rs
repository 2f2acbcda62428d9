//! A stdio server's process, as Holon keeps it: its environment (the
//! minimal base plus what its config names), the sandbox it starts in,
//! its stderr kept in a bounded log, and its end, which takes its whole
//! process group while the leader is unreaped (so the group is still its
//! own).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// A server's stderr log is rotated past this (one old file kept).
const LOG_LIMIT: u64 = 1024 * 1024;

/// A stdio server's process, leader of its own process group: dropped
/// (a failed start, a lost connection, the runtime going away) it takes
/// the whole group with it, while the leader is unreaped and so still
/// names that group.
pub(super) struct ServerProcess(pub(super) tokio::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            // SAFETY: killpg sends a signal to the group this process
            // leads (spawned with its own group or session); not reaped,
            // so the id is still its own.
            unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
        }
    }
}

/// Start a stdio server: only `env` in its environment, its stdio piped,
/// in its own process group, or in the sandbox `prepared` (which gives it
/// a session of its own and its `TMPDIR`).
pub(super) fn spawn(
    command: &str,
    args: &[String],
    env: BTreeMap<std::ffi::OsString, std::ffi::OsString>,
    cwd: Option<&std::path::Path>,
    prepared: Option<(crate::runtime::sandbox::Prepared, PathBuf)>,
) -> Result<ServerProcess, String> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    match prepared {
        Some((p, tmp)) => {
            // Where the sandbox lets it write its scratch files.
            cmd.env("TMPDIR", tmp);
            // SAFETY: the sandbox's raw system calls are all that run in
            // the child between fork and exec.
            unsafe {
                cmd.pre_exec(move || p.apply());
            }
        }
        None => {
            cmd.process_group(0);
        }
    }
    cmd.spawn()
        .map(ServerProcess)
        .map_err(|e| format!("cannot start `{command}`: {e}"))
}

/// How the runtime confines the stdio servers it starts: the default
/// policy's sandbox mode and network, each server writing only beneath
/// its own directory (`<data>/mcp/<name>`) and its temporary directory.
#[derive(Debug, Clone)]
pub struct Sandboxing {
    pub mode: crate::model::sandbox::SandboxMode,
    pub network: crate::model::sandbox::NetworkAccess,
    /// `[policy] sandbox_required`: refuse to start a server unconfined.
    pub required: bool,
    /// Where each server's own directory is made.
    pub root: PathBuf,
    /// Holon's directories: never writable.
    pub holon_dirs: Vec<PathBuf>,
}

impl Sandboxing {
    /// The same, with `policy`'s mode and network where it sets them (a
    /// workspace's own policy, for its `.mcp.json` servers).
    pub fn under(&self, policy: Option<&crate::model::approval::ApprovalPolicy>) -> Sandboxing {
        let mut s = self.clone();
        if let Some(p) = policy {
            s.mode = p.sandbox.unwrap_or(s.mode);
            s.network = p.network.unwrap_or(s.network);
        }
        s
    }

    /// Refuse `writable` roots that overlap Holon's own directories (its
    /// data, config, run and log directories, the store): a server may
    /// be given a place to keep its data, never Holon's. Compared as
    /// written and as the file system resolves them (a root not made yet
    /// by its nearest existing directory, so a link on its way is
    /// followed before anything is made).
    fn check_writable(&self, writable: &[PathBuf]) -> Result<(), String> {
        let mut own: Vec<PathBuf> = self.holon_dirs.clone();
        own.extend(self.root.parent().map(std::path::Path::to_path_buf));
        let resolved = |p: &std::path::Path| vec![p.to_path_buf(), resolve_existing(p)];
        for w in writable {
            for w in resolved(w) {
                for h in own.iter().flat_map(|h| resolved(h)) {
                    if w.starts_with(&h) || h.starts_with(&w) {
                        return Err(format!(
                            "writable {} overlaps Holon's own {}: refused",
                            w.display(),
                            h.display()
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The sandbox ready to apply to the process of the server in `slot`
    /// (its own directory below the root), or `None`
    /// when it runs unconfined (`sandbox = "off"`, mode `off`, or a
    /// kernel that cannot, unless that is refused).
    pub(super) fn prepare(
        &self,
        slot: &str,
        cwd: Option<&std::path::Path>,
        writable: &[PathBuf],
    ) -> Result<Option<(crate::runtime::sandbox::Prepared, PathBuf)>, String> {
        use crate::model::sandbox::SandboxMode;
        use crate::runtime::sandbox::{prepare, Confine, Support};
        if self.mode == SandboxMode::Off {
            return Ok(None);
        }
        if let Some(why) = &Support::probe().missing {
            if self.required {
                return Err(format!(
                    "the kernel cannot sandbox it ({why}) and [policy] sandbox_required is set; \
                     set sandbox = \"off\" for this server to run it unconfined"
                ));
            }
            tracing::warn!(server = %slot, %why, "MCP server runs unconfined");
            return Ok(None);
        }
        self.check_writable(writable)?;
        let dir = self.root.join(slot);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot make its directory {}: {e}", dir.display()))?;
        // Its TMPDIR and the sandbox's one writable file, made fresh for
        // each start outside what it may write: nothing it left in its
        // own directory (a link least of all) is followed here.
        let tmp = scratch(&self.root, slot)
            .map_err(|e| format!("cannot make its scratch directory: {e}"))?;
        let output = tmp.join(".output");
        let confine = Confine {
            mode: self.mode,
            network: self.network,
            execution_root: dir.clone(),
            agent_home: dir,
            unix_sockets: Vec::new(),
            root_pin: None,
            extra_writable: writable.to_vec(),
        };
        // Where it starts: its configured directory, else the runtime's
        // own (as an unconfined server does); entered again by its
        // absolute path once the sandbox's mounts are made.
        let here = || std::env::current_dir().map_err(|e| format!("no working directory: {e}"));
        let workdir = match cwd {
            Some(dir) if dir.is_absolute() => dir.to_path_buf(),
            Some(dir) => here()?.join(dir),
            None => here()?,
        };
        prepare(&confine, &tmp, &output, &self.holon_dirs, &workdir)
            .map(|p| Some((p, tmp)))
            .map_err(|e| e.to_string())
    }
}

/// A fresh scratch directory for server `slot`'s process: beneath
/// `<root>/.runs` (no server's name starts with a dot, so none may write
/// there), its earlier ones removed (without following links), with an
/// empty `.output` made there and never opened through a link.
fn scratch(root: &std::path::Path, slot: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let runs = root.join(".runs");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&runs)?;
    // A project server's slot is `project-TAG/NAME`: one level here.
    let prefix = format!("{}.", slot.replace('/', "+"));
    for old in std::fs::read_dir(&runs)?.flatten() {
        if old.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
    let dir = runs.join(format!("{prefix}{}", crate::new_id("run")));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(".output"))?;
    Ok(dir)
}

/// `path` as the file system resolves it: its longest existing ancestor
/// made canonical, the rest appended as written.
fn resolve_existing(path: &std::path::Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// End a server whose connection is lost, and say why it was lost: it
/// exited (given a moment to), or it was alive and not answering. Either
/// way its process group is killed while its leader is unreaped (so the
/// group is still its own), then the leader is reaped.
pub(super) async fn ended(child: Option<&mut ServerProcess>) -> String {
    let Some(ServerProcess(child)) = child else {
        return "the connection to the server is closed".into();
    };
    let Some(pid) = child.id() else {
        return "the server exited".into();
    };
    let mut exited = false;
    for _ in 0..30 {
        if crate::runtime::process_identity::child_has_exited(pid) {
            exited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // SAFETY: the group the unreaped leader leads; a zombie leader keeps
    // it from being reused, and kill does not touch its exit status.
    unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
    let status = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    match (exited, status) {
        (true, Ok(Ok(status))) => format!("the server exited ({status})"),
        (true, _) => "the server exited".into(),
        (false, _) => "the server stopped answering and was stopped".into(),
    }
}

/// Variables every stdio server gets from Holon's environment; nothing
/// else reaches it unless the server's config names it.
const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "TERM"];

/// A server's environment (pure): the minimal base and the named
/// passthrough variables from Holon's own, then the config's `env`.
pub fn server_env(
    env: &BTreeMap<String, String>,
    passthrough: &[String],
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> BTreeMap<std::ffi::OsString, std::ffi::OsString> {
    let mut out: BTreeMap<std::ffi::OsString, std::ffi::OsString> = vars
        .into_iter()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| BASE_ENV.contains(&k) || passthrough.iter().any(|p| p == k))
        })
        .collect();
    for (k, v) in env {
        out.insert(k.into(), v.into());
    }
    out
}

/// Copy a server's stderr into its log, rotating it past `LOG_LIMIT`.
/// Lines are cut at 4 KiB as they are read (a line without end costs no
/// more), and the pipe is drained to its end whatever happens to the log,
/// so a full disk never stalls or kills the server.
pub(super) async fn keep_log(stderr: tokio::process::ChildStderr, path: PathBuf) {
    use tokio::io::AsyncReadExt;
    const LINE: u64 = 4096;
    let open = |p: &PathBuf| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map(tokio::fs::File::from_std)
            .ok()
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut file = open(&path);
    let mut size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader).take(LINE).read_until(b'\n', &mut line).await;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if size > LOG_LIMIT {
            let _ = std::fs::rename(&path, path.with_extension("log.1"));
            file = open(&path);
            size = 0;
        }
        let text = String::from_utf8_lossy(&line);
        size += text.len() as u64;
        if let Some(f) = file.as_mut() {
            if f.write_all(text.as_bytes()).await.is_err() {
                // Go on draining; write again after the next rotation.
                file = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_see_only_the_base_and_what_they_are_given() {
        let vars = [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("GITHUB_TOKEN", "t"),
            ("OPENAI_API_KEY", "k"),
            ("EDITOR", "vi"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let env = BTreeMap::from([("API_BASE".to_owned(), "http://x".to_owned())]);
        let got = server_env(&env, &["GITHUB_TOKEN".to_owned()], vars);
        let names: Vec<String> = got
            .keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["API_BASE", "GITHUB_TOKEN", "HOME", "PATH"]);
    }
}
