//! Attach over ssh: `holon attach ssh://HOST/HOME` runs the operator's
//! ssh (here a stand-in named by `HOLON_SSH`, as `GIT_SSH` is tested: it
//! drops the destination and runs the far command on this machine) to
//! start `holon attach --stdio` under another home. The console works as
//! when local, survives a cut link by reconnecting, and a refused or
//! hostile address is explained plainly without running anything.

use std::path::{Path, PathBuf};

use super::pty::Console;
use super::support::{poll, stderr, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

/// A runtime of its own, as on another machine; stopped when dropped.
pub(super) struct Far(pub(super) Home);

impl Far {
    pub(super) fn start() -> Far {
        let far = Far(Home::new());
        far.ok(&["--detach"]);
        far
    }
}

impl std::ops::Deref for Far {
    type Target = Home;
    fn deref(&self) -> &Home {
        &self.0
    }
}

impl Drop for Far {
    fn drop(&mut self) {
        let _ = self.0.run(&["daemon", "stop"]);
    }
}

/// A stand-in for ssh in `dir`: it records each start (its pid, then the
/// destination) in `dir/ssh.log`, skips ssh's options, and runs the far
/// command here with `holon` on its PATH. Its pid becomes the far
/// `holon attach --stdio` (each step execs), so killing it cuts the link.
pub(super) fn fake_ssh(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = Path::new(env!("CARGO_BIN_EXE_holon"));
    let bin_dir = bin.parent().map(Path::display).map(|d| d.to_string());
    let script = format!(
        r#"#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    -T) shift ;;
    -o|-p|-l) shift 2 ;;
    *) break ;;
  esac
done
echo "$$ $1" >> '{log}'
shift
PATH='{bin}':"$PATH"
export PATH
exec sh -c "exec $*"
"#,
        log = dir.join("ssh.log").display(),
        bin = bin_dir.unwrap_or_default(),
    );
    let path = dir.join("fake-ssh");
    ok(std::fs::write(&path, script));
    ok(std::fs::set_permissions(
        &path,
        std::fs::Permissions::from_mode(0o755),
    ));
    path
}

/// A console on `near` that knows `far` as the remote `build`, reached
/// through the ssh program `ssh`, once it is attached.
pub(super) fn console_knowing_build(near: &Home, far: &Home, ssh: &Path, cols: u16) -> Console {
    let url = format!("ssh://build-box{}", far.path().display());
    near.ok(&["remotes", "add", "build", &url]);
    let ssh_arg = ssh.display().to_string();
    let env = [("HOLON_SSH", ssh_arg.as_str())];
    let c = Console::start(near.path(), &["attach"], cols, 40, &env);
    c.wait_until("attached", |s| s.contains("streaming"));
    c
}

/// Each start the stand-in recorded: (pid, destination).
fn starts(dir: &Path) -> Vec<(i32, String)> {
    let log = std::fs::read_to_string(dir.join("ssh.log")).unwrap_or_default();
    log.lines()
        .filter_map(|l| {
            let (pid, dest) = l.split_once(' ')?;
            Some((pid.parse().ok()?, dest.to_owned()))
        })
        .collect()
}

#[test]
fn a_console_over_ssh_works_as_local_and_survives_a_cut_link() {
    let far = Far::start();
    far.ok(&["send", "sent on the far side marker-s1"]);
    let near = Home::new();
    let ssh = fake_ssh(near.path());
    let target = format!("ssh://ana@build-box:2222{}", far.path().display());
    let ssh_arg = ssh.display().to_string();
    let mut c = Console::start(
        near.path(),
        &["attach", &target],
        120,
        40,
        &[("HOLON_SSH", &ssh_arg)],
    );
    c.wait_until("attached", |s| s.contains("streaming"));
    c.wait_for("marker-s1");
    let first = starts(near.path());
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].1, "ana@build-box");

    // Cut the link: the far bridge dies as a dropped connection would.
    // SAFETY: the stand-in this test started (now the far bridge).
    unsafe { libc::kill(first[0].0, libc::SIGKILL) };
    c.wait_until("reconnecting", |s| s.contains("reconnecting in"));
    far.ok(&["send", "sent while the link was down marker-s2"]);
    c.wait_for("marker-s2");
    assert!(starts(near.path()).len() >= 2, "ssh ran again");

    // A prompt typed over the new link reaches the far runtime once.
    c.type_text("typed over ssh marker-s3");
    c.enter();
    c.wait_for("› typed over ssh marker-s3");
    poll("the prompt reached the far runtime", || {
        let events = far.ok(&["events", "--json", "--limit", "2000"]);
        (events.matches("typed over ssh marker-s3").count() > 0).then_some(())
    });
    let screen = c.contents();
    assert_eq!(screen.matches("marker-s1").count(), 1, "{screen}");

    // The far runtime restarts: its bridge ends with its socket, and the
    // console finds the new one.
    far.ok(&["daemon", "restart"]);
    far.ok(&["send", "after the far restart marker-s4"]);
    c.wait_for("marker-s4");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    // The far runtime noticed only a client leaving: it runs on.
    far.ok(&["status"]);
}

#[test]
fn the_plain_client_reaches_the_far_home_and_names_a_missing_runtime() {
    let far = Far::start();
    let near = Home::new();
    let ssh = fake_ssh(near.path());
    let target = format!("ssh://build-box{}", far.path().display());
    let out = ok(near
        .cmd()
        .env("HOLON_SSH", &ssh)
        .args(["attach", &target, "--plain"])
        .stdin(std::process::Stdio::null())
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("attached to main ({target})")),
        "{said}"
    );

    // A far home with no runtime: the far side's own words come back.
    let empty = Home::new();
    let target = format!("ssh://build-box{}", empty.path().display());
    let out = ok(near
        .cmd()
        .env("HOLON_SSH", &ssh)
        .args(["attach", &target, "--plain"])
        .stdin(std::process::Stdio::null())
        .output());
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("on build-box: no Holon runtime answers"), "{e}");
    assert!(e.contains("holon --detach"), "{e}");
}

/// Write a stand-in ssh that only says `words` on stderr and exits `code`.
fn refusing_ssh(dir: &Path, words: &str, code: i32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(format!("ssh-{code}"));
    let script = format!(
        "#!/bin/sh\necho ran >> '{}'\ncat >&2 <<'EOF'\n{words}\nEOF\nexit {code}\n",
        dir.join("ran").display()
    );
    ok(std::fs::write(&path, script));
    ok(std::fs::set_permissions(
        &path,
        std::fs::Permissions::from_mode(0o755),
    ));
    path
}

#[test]
fn refusals_are_explained_and_a_hostile_address_runs_nothing() {
    let near = Home::new();
    let cases = [
        (
            "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
             @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n\
             Host key verification failed.",
            255,
            "its host key is not the one known_hosts holds",
        ),
        (
            "error: unexpected argument '--stdio' found",
            2,
            "older than this one",
        ),
        ("sh: 1: holon: not found", 127, "no `holon` on the PATH"),
    ];
    for (words, code, expect) in cases {
        let ssh = refusing_ssh(near.path(), words, code);
        let out = near
            .cmd()
            .env("HOLON_SSH", &ssh)
            .args(["attach", "ssh://build-box", "--plain"])
            .stdin(std::process::Stdio::null())
            .output();
        let out = ok(out);
        assert!(!out.status.success());
        let e = stderr(&out);
        assert!(e.contains(expect), "{code}: {e}");
        assert!(e.contains("cannot attach to ssh://build-box"), "{e}");
    }
    // An address ssh would read as an option never reaches ssh.
    let _ = std::fs::remove_file(near.path().join("ran"));
    let ssh = refusing_ssh(near.path(), "", 0);
    for hostile in [
        "ssh://-oProxyCommand=touch%20owned",
        "ssh://-oProxyCommand=x@host",
    ] {
        let out = ok(near
            .cmd()
            .env("HOLON_SSH", &ssh)
            .args(["attach", hostile, "--plain"])
            .output());
        assert!(!out.status.success(), "{hostile}");
        assert!(!near.path().join("ran").exists(), "{hostile} ran ssh");
    }
    // ssh carries the connection: no token file is taken.
    let out = near.run(&["attach", "ssh://box", "--token-file", "/x"]);
    assert!(
        stderr(&out).contains("takes no --token-file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn remotes_are_kept_in_config_reached_by_name_and_glanced_together() {
    let far = Far::start();
    let near = Home::new();
    let ssh = fake_ssh(near.path());
    let config = near.path().join("config/config.toml");
    ok(std::fs::create_dir_all(near.path().join("config")));
    ok(std::fs::write(
        &config,
        "# kept as written\n[console]\nmouse = false\n",
    ));
    let url = format!("ssh://build-box{}", far.path().display());
    near.ok(&["remotes", "add", "build", &url]);
    // A host that never answers: glanced as unreachable, not waited on.
    near.ok(&["remotes", "add", "gone", "ssh://gone-box/x"]);
    let written = ok(std::fs::read_to_string(&config));
    assert!(
        written.starts_with("# kept as written\n[console]\nmouse = false\n"),
        "{written}"
    );
    let refused = near.run(&["remotes", "add", "build", "ssh://other"]);
    assert!(
        stderr(&refused).contains("--replace"),
        "{}",
        stderr(&refused)
    );
    let refused = near.run(&["remotes", "add", "gpu", "wss://gpu:7464"]);
    assert!(
        stderr(&refused).contains("--fingerprint"),
        "{}",
        stderr(&refused)
    );
    let listed = near.ok(&["remotes", "list"]);
    assert!(
        listed.contains("build") && listed.contains(&url),
        "{listed}"
    );

    // `holon attach NAME` reaches it as its address would.
    let out = ok(near
        .cmd()
        .env("HOLON_SSH", &ssh)
        .args(["attach", "build", "--plain"])
        .stdin(std::process::Stdio::null())
        .output());
    assert!(out.status.success(), "{}", stderr(&out));

    // Every runtime at a glance: the far one answers, this machine has
    // none running, the silent one is said as unreachable.
    let hang = near.path().join("hang-ssh");
    ok(std::fs::write(
        &hang,
        format!(
            "#!/bin/sh\ncase \"$*\" in *gone-box*) exec sleep 30 ;; esac\nexec '{}' \"$@\"\n",
            ssh.display()
        ),
    ));
    {
        use std::os::unix::fs::PermissionsExt;
        ok(std::fs::set_permissions(
            &hang,
            std::fs::Permissions::from_mode(0o755),
        ));
    }
    let mut status = near.cmd();
    status
        .env("HOLON_SSH", &hang)
        .args(["status", "--all", "--json"]);
    // The hung remote's ssh would sit 30 s: the status does not wait for it.
    let limit = std::time::Duration::from_secs(15);
    let out = super::support::output_within(status, limit, "status waited for the hung remote");
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = ok(serde_json::from_slice(&out.stdout));
    let row = |name: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(row("build")["seen"]["agents"], 1, "{rows}");
    assert_eq!(row("local")["error"], "not running", "{rows}");
    let gone = row("gone")["error"].as_str().unwrap_or_default().to_owned();
    assert!(gone.contains("no answer within 5 s"), "{rows}");

    near.ok(&["remotes", "remove", "build"]);
    near.ok(&["remotes", "remove", "gone"]);
    let refused = near.run(&["remotes", "remove", "build"]);
    assert!(
        stderr(&refused).contains("no remote named"),
        "{}",
        stderr(&refused)
    );
    let written = ok(std::fs::read_to_string(&config));
    assert_eq!(
        written.trim_end(),
        "# kept as written\n[console]\nmouse = false"
    );
}

#[test]
fn one_console_lists_and_switches_between_runtimes() {
    let far = Far::start();
    far.ok(&["send", "on the far machine marker-far"]);
    let near = Far::start();
    near.ok(&["send", "on this machine marker-near"]);
    let ssh = fake_ssh(near.path());
    let mut c = console_knowing_build(&near, &far, &ssh, 120);
    c.wait_for("marker-near");
    c.type_text("/runtime");
    c.enter();
    c.wait_for("Runtimes (/runtime NAME switches)");
    c.wait_until("build at a glance", |s| {
        s.lines()
            .any(|l| l.contains("build") && l.contains("1 agent"))
    });
    c.type_text("/runtime build");
    c.enter();
    c.wait_for("Now showing build");
    c.wait_for("marker-far");
    c.wait_for("build/main");
    c.type_text("typed on the far runtime marker-typed");
    c.enter();
    poll("the prompt reached the far runtime", || {
        far.ok(&["events", "--json", "--limit", "2000"])
            .contains("marker-typed")
            .then_some(())
    });
    let here = near.ok(&["events", "--json", "--limit", "2000"]);
    assert!(
        !here.contains("marker-typed"),
        "it went to the runtime shown"
    );
    c.type_text("/runtime local");
    c.enter();
    c.wait_for("Now showing local");
    c.wait_for("marker-near");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

/// A console that runs this machine's runtime in its own process quits
/// that runtime, not the one it shows: from a remote, /quit goes home
/// first, and the far runtime runs on.
#[test]
fn an_embedded_console_quits_from_home_whatever_it_shows() {
    let far = Far::start();
    far.ok(&["send", "on the far machine marker-far2"]);
    let near = Home::new();
    let ssh = fake_ssh(near.path());
    let url = format!("ssh://build-box{}", far.path().display());
    near.ok(&["remotes", "add", "build", &url]);
    let ssh_arg = ssh.display().to_string();
    let mut c = Console::start(near.path(), &[], 120, 40, &[("HOLON_SSH", &ssh_arg)]);
    c.wait_until("embedded", |s| s.contains("embedded"));
    c.type_text("/runtime build");
    c.enter();
    c.wait_for("marker-far2");
    c.type_text("/quit");
    c.enter();
    c.wait_for("Now showing local");
    c.wait_for("/quit again to go on");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    let status = far.ok(&["status"]);
    assert!(!status.is_empty());
    super::support::poll("the far runtime still answers", || {
        far.run(&["daemon", "status"])
            .status
            .success()
            .then_some(())
    });
}
