//! The sandbox through the real binary and a scripted local model: model
//! commands confined by the kernel (writes, git hooks, children of
//! children, the network), ApplyPatch agreeing, the policy lifting it, an
//! escape that waits as a durable approval across a kill -9 and runs once,
//! `never` refusing escapes, and a kernel that cannot sandbox.

use std::net::TcpListener;
use std::path::Path;

use serde_json::{json, Value};

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{daemon_pid, poll, stderr, Daemon, Home};
use super::workspaces::{git, provider_env, repo};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

fn sandbox_here() -> bool {
    holon::runtime::sandbox::tests_can_sandbox()
}

fn config(home: &Home, policy: &str) {
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        format!("[policy]\n{policy}"),
    ));
}

fn exec(id: &str, cmd: &str) -> (String, String, String) {
    let args = json!({ "cmd": cmd }).to_string();
    (id.to_owned(), "ExecCommand".to_owned(), args)
}

/// One `holon run` in `dir` whose model makes `calls`, then ends; the
/// requests the model saw.
async fn run_in(
    home: &Home,
    dir: &Path,
    calls: &[(String, String, String)],
    env: &[(&str, &str)],
) -> Vec<Value> {
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    let stub = StubServer::start(vec![
        Canned::json(200, canned::responses_json("Working.", &calls)),
        Canned::json(200, canned::responses_json("Done.", &[])),
    ])
    .await;
    let mut cmd = tokio::process::Command::from(home.cmd());
    cmd.current_dir(dir)
        .envs(provider_env(&stub))
        .envs(env.iter().copied())
        .args(["run", "--json", "do it"]);
    let out = ok(cmd.output().await);
    assert!(out.status.success(), "{}", stderr(&out));
    stub.requests().iter().map(|r| r.body.clone()).collect()
}

/// Whether anything connected to the listener.
fn connected(listener: &TcpListener) -> bool {
    ok(listener.set_nonblocking(true));
    listener.accept().is_ok()
}

fn python_connect(port: u16) -> String {
    format!("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_command_writes_only_inside_its_workspace_and_reaches_no_network() {
    if !sandbox_here() {
        return;
    }
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "confined");
    let outside = ok(tempfile::tempdir());
    let o = outside.path().display().to_string();
    let listener = ok(TcpListener::bind("127.0.0.1:0"));
    let port = ok(listener.local_addr()).port();
    let patch = json!({ "patch": "--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+#!/bin/sh\n" });
    let calls = vec![
        exec("c1", "echo in > inside.txt"),
        exec("c2", &format!("echo out > {o}/x.txt")),
        exec("c3", "touch .git/hooks/pre-commit"),
        exec("c4", &format!("sh -c 'sh -c \"echo deep > {o}/deep.txt\"'")),
        exec("c5", &python_connect(port)),
        exec("c6", "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""),
        ("c7".into(), "ApplyPatch".into(), patch.to_string()),
        exec(
            "c8",
            "git -c user.name=a -c user.email=a@example.invalid commit -q --allow-empty -m agent",
        ),
    ];
    let requests = run_in(&home, &repo, &calls, &[]).await;
    assert_eq!(requests.len(), 2);
    let frame = requests[0].to_string();
    assert!(
        frame.contains("sandboxed (workspace_write, enforced by the kernel)"),
        "the prompt says so: {frame}"
    );
    assert_eq!(ok(std::fs::read_to_string(repo.join("inside.txt"))), "in\n");
    for refused in [
        outside.path().join("x.txt"),
        outside.path().join("deep.txt"),
        repo.join(".git/hooks/pre-commit"),
        repo.join(".git/hooks/post-checkout"),
    ] {
        assert!(!refused.exists(), "{} was written", refused.display());
    }
    assert!(!connected(&listener), "the command reached the network");
    // The checkout's git metadata is read-only as a whole: no commit in
    // direct mode (an isolated worktree commits; see below).
    assert!(!git(&repo, &["log", "--format=%s", "-1"]).contains("agent"));
    let told = requests[1].to_string();
    for said in [
        "sandbox_hint",
        "escalate",
        "read-only in the sandbox",
        "\\\"sandbox\\\":\\\"workspace_write\\\"",
    ] {
        assert!(told.contains(said), "the model was not told {said}: {told}");
    }
    // The task's temporary directory went with it.
    let tmp = home.path().join("data/tasks/.tmp");
    let left = std::fs::read_dir(&tmp).map_or(0, |d| d.count());
    assert_eq!(left, 0, "temporary directories left in {}", tmp.display());
    // What the operator sees.
    let status = home.ok(&["status"]);
    assert!(
        status.contains("commands sandboxed (workspace_write"),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_turns_the_network_on_and_the_sandbox_off() {
    if !sandbox_here() {
        return;
    }
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "lifted");
    let outside = ok(tempfile::tempdir());
    let listener = ok(TcpListener::bind("127.0.0.1:0"));
    let port = ok(listener.local_addr()).port();
    config(&home, "network = \"on\"\n");
    let calls = vec![
        exec("c1", &python_connect(port)),
        exec("c2", &format!("touch {}/net-on", outside.path().display())),
    ];
    run_in(&home, &repo, &calls, &[]).await;
    assert!(connected(&listener), "network = on lets it connect");
    assert!(
        !outside.path().join("net-on").exists(),
        "writes stay confined"
    );

    config(&home, "sandbox = \"off\"\n");
    let calls = vec![
        exec("c1", &python_connect(port)),
        exec("c2", &format!("touch {}/off", outside.path().display())),
    ];
    run_in(&home, &repo, &calls, &[]).await;
    assert!(connected(&listener), "sandbox = off lifts the network");
    assert!(outside.path().join("off").exists(), "and the writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_refuses_an_escape_and_tells_the_model_why() {
    if !sandbox_here() {
        return;
    }
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "never");
    let outside = ok(tempfile::tempdir());
    config(&home, "approval = \"never\"\n");
    let target = outside.path().join("escaped");
    let args = json!({
        "cmd": format!("touch {}", target.display()),
        "escalate": true,
        "justification": "write the release notes next door",
    });
    let unjustified = json!({ "cmd": format!("touch {}", target.display()), "escalate": true });
    let calls = vec![
        ("c1".into(), "ExecCommand".into(), args.to_string()),
        ("c2".into(), "ExecCommand".into(), unjustified.to_string()),
    ];
    let requests = run_in(&home, &repo, &calls, &[]).await;
    assert!(!target.exists());
    let told = requests[1].to_string();
    assert!(told.contains("approval mode is `never`"), "{told}");
    assert!(told.contains("escalate needs a justification"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escape_waits_across_a_kill_and_runs_once_outside_when_approved() {
    if !sandbox_here() {
        return;
    }
    let home = Home::new();
    let outside = ok(tempfile::tempdir());
    let target = outside.path().join("escaped.txt");
    let call = json!({
        "cmd": format!("echo ran >> {}", target.display()),
        "escalate": true,
        "justification": "the release notes live outside the workspace",
    })
    .to_string();
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("Asking.", &[("call_1", "ExecCommand", &call)]),
        ),
        Canned::json(200, canned::responses_json("It ran.", &[])),
    ])
    .await;
    let detach = || {
        let out = ok(home
            .cmd()
            .envs(provider_env(&stub))
            .arg("--detach")
            .output());
        assert!(out.status.success(), "{}", stderr(&out));
    };
    detach();
    let _daemon = Daemon(&home);
    home.ok(&["send", "update the notes"]);
    let pending: Vec<Value> = poll("the escape's approval", || {
        let v: Vec<Value> =
            serde_json::from_str(&home.ok(&["approvals", "--json"])).unwrap_or_default();
        (!v.is_empty()).then_some(v)
    });
    let id = pending[0]["id"].as_str().unwrap_or_default().to_owned();
    let listed = home.ok(&["approvals"]);
    assert!(
        listed.contains("run outside the sandbox") && listed.contains("release notes"),
        "{listed}"
    );
    super::support::kill_daemon(daemon_pid(&home));
    detach();
    assert!(!target.exists(), "nothing ran before the answer");
    let answer = home.ok(&["approve", &id]);
    assert!(answer.contains("approved ExecCommand"), "{answer}");
    poll("the second model turn", || {
        (stub.requests().len() >= 2).then_some(())
    });
    assert_eq!(
        ok(std::fs::read_to_string(&target)),
        "ran\n",
        "ran once, outside"
    );
    // The workspace's own sandbox, from the CLI; a bad value names the
    // choices.
    let policy = home.ok(&[
        "workspace",
        "policy",
        "agent_home",
        "--sandbox",
        "read_only",
        "--network",
        "on",
    ]);
    assert!(
        policy.contains("model commands: sandbox read_only, network on"),
        "{policy}"
    );
    let bad = home.run(&["workspace", "policy", "agent_home", "--sandbox", "strict"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("workspace_write, read_only or off"),
        "{}",
        stderr(&bad)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_that_cannot_sandbox_says_so_and_sandbox_required_refuses() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "fallback");
    let outside = ok(tempfile::tempdir());
    let forced = [("HOLON_SANDBOX_UNSUPPORTED", "1")];
    let target = outside.path().join("unconfined");
    let calls = vec![exec("c1", &format!("touch {}", target.display()))];
    let requests = run_in(&home, &repo, &calls, &forced).await;
    assert!(target.exists(), "the fallback runs commands unconfined");
    // Said on the terminal too, not only in the log.
    let stub = StubServer::start(vec![Canned::json(
        200,
        canned::responses_json("Done.", &[]),
    )])
    .await;
    let mut cmd = tokio::process::Command::from(home.cmd());
    cmd.envs(provider_env(&stub))
        .envs(forced)
        .args(["run", "--json", "hi"]);
    let said = stderr(&ok(cmd.output().await));
    assert!(said.contains("commands run UNCONFINED"), "{said}");
    let frame = requests[0].to_string();
    assert!(frame.contains("NOT enforced"), "{frame}");
    let status = ok(home.cmd().envs(forced).arg("status").output());
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(status.contains("NOT enforced"), "{status}");

    config(&home, "sandbox_required = true\n");
    let target = outside.path().join("refused");
    let calls = vec![exec("c1", &format!("touch {}", target.display()))];
    let requests = run_in(&home, &repo, &calls, &forced).await;
    assert!(!target.exists());
    let told = requests[1].to_string();
    assert!(told.contains("sandbox_required"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_worktree_commits_but_cannot_repoint_its_repository() {
    if !sandbox_here() {
        return;
    }
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "isolated");
    let use_args = json!({ "path": repo.display().to_string(), "mode": "isolated" }).to_string();
    let commit = json!({
        "cmd": "echo change > change.txt && git add change.txt && \
                git -c user.name=a -c user.email=a@example.invalid commit -qm agent-commit",
    })
    .to_string();
    let repoint = json!({ "cmd": "echo 'gitdir: /tmp/elsewhere' > .git" }).to_string();
    let hooks = json!({
        "cmd": format!("touch {}/.git/hooks/pre-commit", repo.display()),
    })
    .to_string();
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("", &[("u1", "UseWorkspace", &use_args)]),
        ),
        Canned::json(
            200,
            canned::responses_json(
                "",
                &[
                    ("c1", "ExecCommand", &commit),
                    ("c2", "ExecCommand", &repoint),
                    ("c3", "ExecCommand", &hooks),
                ],
            ),
        ),
        Canned::json(200, canned::responses_json("Committed.", &[])),
    ])
    .await;
    home.ok(&["workspace", "attach", &repo.display().to_string()]);
    let mut cmd = tokio::process::Command::from(home.cmd());
    cmd.envs(provider_env(&stub)).args([
        "run",
        "--agent",
        "main",
        "--json",
        "commit in a worktree",
    ]);
    let out = ok(cmd.output().await);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stub.requests().len(), 3);
    // The commit landed on the worktree's branch, in the operator's
    // repository; the repository's hooks were not touched.
    let log = git(&repo, &["log", "--all", "--format=%s"]);
    assert!(log.contains("agent-commit"), "{log}");
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    let worktrees = git(&repo, &["worktree", "list", "--porcelain"]);
    let wt = worktrees
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .find(|p| Path::new(p) != repo)
        .unwrap_or_else(|| panic!("no managed worktree in {worktrees}"));
    let link = ok(std::fs::read_to_string(Path::new(wt).join(".git")));
    assert!(
        link.starts_with("gitdir: ") && !link.contains("elsewhere"),
        "{link}"
    );
}

/// `holon policy rules` lists what "always" allowed (nothing yet, said
/// with how to add one); `--forget` removes an entry, and a rule that is
/// nowhere is refused by name.
#[test]
fn policy_rules_are_listed_and_forgotten_by_name() {
    let home = Home::new();
    let none = home.ok(&["policy", "rules"]);
    assert!(none.contains("main has no \"always\" rules"), "{none}");
    let json = home.ok(&["policy", "rules", "--json"]);
    assert_eq!(json.trim(), "[]");
    home.ok(&[
        "workspace",
        "policy",
        "agent_home",
        "--allow-command",
        "cargo test",
    ]);
    let forgot = home.ok(&[
        "workspace",
        "policy",
        "agent_home",
        "--forget",
        "cargo test",
    ]);
    assert!(!forgot.contains("cargo test"), "{forgot}");
    let bad = home.run(&[
        "workspace",
        "policy",
        "agent_home",
        "--forget",
        "make deploy",
    ]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("no rule `make deploy`"),
        "{}",
        stderr(&bad)
    );
}
