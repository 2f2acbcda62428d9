//! Shared helpers: a temporary HOLON_HOME and the real `holon` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}")),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn store_file(&self) -> PathBuf {
        self.path().join("data").join("holon.redb")
    }

    /// `holon` with this home and no inherited Holon settings.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_holon"));
        c.env("HOLON_HOME", self.path());
        // Never the test process's directory (the repository itself):
        // runs and consoles bind to the directory they start in.
        c.current_dir(self.path());
        for var in ["HOLON_AGENT_ID", "HOLON_MODEL", "HOLON_LOG", "RUST_LOG"] {
            c.env_remove(var);
        }
        // Each test runtime's HTTP listener on a free port (tests run in
        // parallel; the default is one fixed port).
        c.env("HOLON_LISTEN", "127.0.0.1:0");
        // User-scope skills and templates from this home, never the
        // machine's `~`.
        c.env("HOLON_USER_DIR", self.path().join("user"));
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running holon {args:?}: {e}"))
    }

    /// Run with a reader that has gone before the command writes (as
    /// `holon ... | head` once `head` has read enough).
    pub fn run_reader_gone(&self, args: &[&str]) -> Output {
        let mut child = self
            .cmd()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("running holon {args:?}: {e}"));
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    }

    /// Run and require success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "holon {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// `cmd`'s output, once it exits before `limit`: a guard for what it must
/// not wait for (set it well below that), not a speed bound. Killed and
/// failed with `why` past it. Its output is read once it exited: for
/// commands that print less than a pipe holds, and leave no process
/// behind holding their output.
pub fn output_within(mut cmd: Command, limit: std::time::Duration, why: &str) -> Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().ok().flatten().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{why}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("reading {cmd:?}: {e}"))
}

/// An HTTP client for a test's requests, with the process's TLS provider
/// installed as the runtime installs it (reqwest refuses to build one
/// otherwise, and a test run alone has nothing else that installs it).
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn json_lines(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// Stops the home's daemon when dropped, so a failing test leaves no
/// runtime behind.
pub struct Daemon<'a>(pub &'a Home);

impl Drop for Daemon<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["daemon", "stop"]);
    }
}

/// Wait until the home's runtime says every agent has done all it can
/// (`activity.settled`): what a test asserting that nothing more happens
/// waits for, instead of sleeping.
pub fn settled(home: &Home) {
    poll("the runtime to settle", || {
        let out = home.run(&["daemon", "status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        (v["status"]["activity"]["settled"] == true).then_some(())
    });
}

/// Every event reads back as its kind's typed payload (never `Unknown` or
/// `Unreadable`), and the typed payload encodes to exactly the stored JSON:
/// the wire is what the protocol's types say. With
/// `HOLON_UPDATE_EVENT_FIXTURES=1`, the first event of each kind not yet
/// there is written to `tests/fixtures/events/<kind>.json`: the golden
/// samples a unit test keeps the types to.
pub fn assert_typed(events: &[holon::protocol::EventRecord]) {
    use holon::protocol::events::Event;
    let update = std::env::var_os("HOLON_UPDATE_EVENT_FIXTURES").is_some();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/events");
    for e in events {
        if e.kind == "debug_append" {
            continue;
        }
        let typed = e.event();
        if let Event::Unknown { .. } | Event::Unreadable { .. } = typed {
            panic!(
                "event {} ({}) does not read as its type: {typed:?}",
                e.event_seq, e.kind
            );
        }
        assert_eq!(
            typed.payload(),
            e.payload,
            "{} re-encodes differently than it was stored",
            e.kind
        );
        let file = dir.join(format!("{}.json", e.kind));
        if update && !file.exists() {
            let _ = std::fs::create_dir_all(&dir);
            let text = serde_json::to_string_pretty(e).unwrap_or_default();
            std::fs::write(&file, text + "\n").unwrap();
        }
    }
}

/// `assert_typed` over the `holon events --json` lines of `agent`.
pub fn assert_typed_lines(home: &Home, agent: &str) {
    let lines = json_lines(&home.ok(&["events", "--agent", agent, "--json", "--limit", "100000"]));
    let events: Vec<holon::protocol::EventRecord> = lines
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap_or_else(|e| panic!("not an event record: {e}")))
        .collect();
    assert_typed(&events);
}

/// Wait (bounded, 20 s) until `f` gives a value.
pub fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The pid a home's daemon recorded.
pub fn daemon_pid(home: &Home) -> i32 {
    let text = std::fs::read_to_string(home.path().join("run/daemon.pid")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    v["pid"].as_i64().unwrap_or(0) as i32
}

/// Whether `pid` is a live process (not gone, not a zombie).
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| !r.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

/// SIGKILL the daemon `pid` a test started, and wait until it is gone.
pub fn kill_daemon(pid: i32) {
    // SAFETY: signalling the daemon process the calling test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    poll("the killed daemon to be gone", || {
        (!running(pid)).then_some(())
    });
}

/// A held command's own pid, as its holder recorded it beside the task's
/// output.
pub fn command_pid(task: &holon::model::task::TaskRecord) -> i32 {
    let output = task.detail.output_path.clone().expect("no output path");
    let file = Path::new(&output).with_extension("pid");
    let identity: serde_json::Value = poll("the command's identity", || {
        std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    });
    identity["pid"].as_i64().expect("no pid") as i32
}

/// Whether process `pid` ignores `signal` (its `SigIgn` mask).
pub fn ignores(pid: i32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}
