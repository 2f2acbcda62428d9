//! Workspaces end to end: real git repositories in temporary directories,
//! real `git worktree`, the real binary. A run started in a repository's
//! subdirectory edits that repository; isolated mode edits only its
//! worktree; restart keeps the active workspace; clean worktrees are
//! removed and changed ones kept; escapes are refused; bad input gets a
//! clear error; the console binds to the directory it opens in.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::pty::Console;
use super::stub_provider::{canned, Canned, StubServer};
use super::support::{stderr, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = ok(Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output());
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with one commit on `main`: README.md, AGENTS.md and a
/// `crates/core` subdirectory.
pub(super) fn repo(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    ok(std::fs::create_dir_all(dir.join("crates/core")));
    git(&dir, &["init", "--quiet", "--initial-branch=main"]);
    ok(std::fs::write(dir.join("README.md"), "hello\n"));
    ok(std::fs::write(
        dir.join("AGENTS.md"),
        "repo rules: run the tests\n",
    ));
    ok(std::fs::write(dir.join("crates/core/lib.txt"), "core\n"));
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "--quiet", "-m", "first"]);
    ok(dir.canonicalize())
}

fn holon_in(home: &Home, dir: &Path, args: &[&str]) -> std::process::Output {
    ok(home.cmd().current_dir(dir).args(args).output())
}

fn holon_json(home: &Home, args: &[&str]) -> Value {
    let out = home.run(args);
    assert!(out.status.success(), "holon {args:?}: {}", stderr(&out));
    ok(serde_json::from_slice(&out.stdout))
}

/// `agent`'s events of `kind`, each checked to read as its typed payload.
fn events(home: &Home, agent: &str, kind: &str) -> Vec<Value> {
    let out = home.ok(&["events", "--agent", agent, "--kind", kind, "--json"]);
    let lines: Vec<Value> = out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| ok(serde_json::from_str(l)))
        .collect();
    let records: Vec<holon::protocol::EventRecord> = lines
        .iter()
        .map(|v| ok(serde_json::from_value(v.clone())))
        .collect();
    super::support::assert_typed(&records);
    lines
}

pub(super) fn provider_env(stub: &StubServer) -> Vec<(String, String)> {
    vec![
        ("HOLON_MODEL".into(), "openai/gpt-ws".into()),
        ("OPENAI_BASE_URL".into(), format!("{}/v1", stub.base())),
        ("OPENAI_API_KEY".into(), "sk-ws".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_in_a_subdirectory_works_on_that_repository_and_refuses_escapes() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "widget");
    let outside = projects.path().join("outside.txt");
    ok(std::fs::write(&outside, "untouched\n"));
    std::os::unix::fs::symlink(projects.path(), repo.join("crates/escape")).unwrap();
    let patch = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-hello\n+hello from holon\n";
    let escape = "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1 +1 @@\n-untouched\n+owned\n";
    let through_link =
        "--- a/crates/escape/outside.txt\n+++ b/crates/escape/outside.txt\n@@ -1 +1 @@\n-untouched\n+owned\n";
    let json =
        |s: &str| serde_json::to_string(&serde_json::json!({ "patch": s })).unwrap_or_default();
    let (p2, p3) = (json(escape), json(through_link));
    // The patch comes the freeform way (a Responses custom tool call: the
    // raw diff, no JSON); the escapes as JSON function calls.
    let mut first = canned::responses_json(
        "Working.",
        &[
            (
                "c1",
                "ExecCommand",
                r#"{"cmd":"pwd; echo made > made.txt"}"#,
            ),
            ("c3", "ApplyPatch", &p2),
            ("c4", "ApplyPatch", &p3),
            ("c5", "ExecCommand", r#"{"cmd":"pwd","workdir":"../.."}"#),
            (
                "c6",
                "ExecCommand",
                r#"{"cmd":"pwd","workdir":"crates/escape"}"#,
            ),
        ],
    );
    if let Some(output) = first["output"].as_array_mut() {
        output.insert(
            2,
            serde_json::json!({"type": "custom_tool_call", "call_id": "c2", "name": "ApplyPatch", "input": patch}),
        );
    }
    let stub = StubServer::start(vec![
        Canned::json(200, first),
        Canned::json(200, canned::responses_json("Done.", &[])),
    ])
    .await;
    let mut cmd = tokio::process::Command::from(home.cmd());
    cmd.current_dir(repo.join("crates/core"))
        .envs(provider_env(&stub))
        .args(["run", "--json", "fix it"]);
    let out = ok(cmd.output().await);
    assert!(out.status.success(), "{}", stderr(&out));

    // The shell ran in the directory the run started in; the patch path
    // was relative to the repository's top level.
    assert_eq!(
        ok(std::fs::read_to_string(repo.join("crates/core/made.txt"))),
        "made\n"
    );
    assert_eq!(
        ok(std::fs::read_to_string(repo.join("README.md"))),
        "hello from holon\n"
    );
    // Nothing outside the root was written, by `..` or through a symlink.
    assert_eq!(ok(std::fs::read_to_string(&outside)), "untouched\n");

    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].body.to_string();
    assert!(first.contains("Execution environment"), "{first}");
    assert!(
        first.contains(&repo.display().to_string()),
        "the root is in the frame"
    );
    // The symlink the test planted is the one untracked file.
    assert!(
        first.contains("git: branch main, 1 changed or untracked file(s)"),
        "{first}"
    );
    assert!(
        first.contains("repo rules: run the tests"),
        "the repo's AGENTS.md is loaded"
    );
    let second = requests[1].body.to_string();
    let core = repo.join("crates/core").display().to_string();
    assert!(
        second.contains(&core),
        "pwd printed the subdirectory: {second}"
    );
    let output = |call: &str| -> Value {
        let item = requests[1].body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| {
                let t = i["type"].as_str().unwrap_or_default();
                t.ends_with("call_output") && i["call_id"] == call
            })
            .unwrap_or_else(|| panic!("no output for {call}: {second}"));
        ok(serde_json::from_str(
            item["output"].as_str().unwrap_or_default(),
        ))
    };
    assert_eq!(output("c2")["ok"], true);
    assert!(
        second.contains(r#""type":"custom_tool_call_output""#),
        "the freeform call's result goes back as a custom output: {second}"
    );
    assert!(
        first.contains(r#""type":"custom""#),
        "ApplyPatch is offered freeform"
    );
    for call in ["c3", "c4", "c5", "c6"] {
        let out = output(call);
        assert_eq!(out["ok"], false, "{call} escaped: {out}");
        assert_eq!(out["kind"], "invalid_arguments", "{call}: {out}");
    }
}

#[test]
fn isolated_mode_edits_only_its_worktree_survives_restart_and_is_kept_or_removed() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "gadget");
    let repo_s = repo.display().to_string();

    // Direct use from the CLI (no runtime running: in process).
    let used = holon_json(&home, &["workspace", "use", &repo_s, "--json"]);
    assert_eq!(used["execution"]["execution_root"], repo_s.as_str());
    assert_eq!(used["execution"]["projection_kind"], "canonical_root");
    let ws_id = used["execution"]["workspace_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(ws_id.starts_with("ws_gadget_"), "{ws_id}");

    // A second agent in the same checkout is visible to the first
    // (occupancy); isolated mode is the way to work in parallel.
    // Explicit targeting never creates an agent: create it first.
    let refused = home.run(&["workspace", "use", &repo_s, "--agent", "second"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("no agent `second`"),
        "{}",
        stderr(&refused)
    );
    holon_json(&home, &["agent", "create", "second", "--json"]);
    holon_json(
        &home,
        &["workspace", "use", &repo_s, "--agent", "second", "--json"],
    );
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(
        list["attached"][0]["direct_users"],
        serde_json::json!(["second"])
    );

    // A worktree the operator made by hand is adopted: the repository stays
    // the workspace, the worktree is the root, Holon does not manage it.
    let manual = projects.path().join("gadget-manual");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "manual",
            &manual.display().to_string(),
        ],
    );
    let adopted = holon_json(
        &home,
        &["workspace", "use", &manual.display().to_string(), "--json"],
    );
    assert_eq!(adopted["execution"]["workspace_id"], ws_id.as_str());
    assert_eq!(adopted["execution"]["workspace_anchor"], repo_s.as_str());
    let manual_s = ok(manual.canonicalize()).display().to_string();
    assert_eq!(adopted["execution"]["execution_root"], manual_s.as_str());
    assert!(adopted["note"]
        .as_str()
        .unwrap_or_default()
        .contains("does not manage it"));
    holon_json(&home, &["workspace", "use", &ws_id, "--json"]);
    assert!(manual.exists(), "an adopted worktree is never removed");

    // Isolated: a managed worktree on its own branch, outside the checkout.
    let iso = holon_json(&home, &["workspace", "use", &ws_id, "--isolated", "--json"]);
    let x = &iso["execution"];
    assert_eq!(
        x["workspace_anchor"],
        repo_s.as_str(),
        "the anchor stays the repository"
    );
    assert_eq!(x["projection_kind"], "git_worktree_root");
    let wt = PathBuf::from(x["execution_root"].as_str().unwrap_or_default());
    let branch = x["worktree"]["worktree_branch"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        wt.starts_with(home.path().join("data/worktrees")),
        "{}",
        wt.display()
    );
    assert!(branch.starts_with("holon/main/"), "{branch}");
    assert_eq!(x["worktree"]["original_branch"], "main");
    assert!(git(&repo, &["worktree", "list"]).contains(&wt.display().to_string()));

    // An edit in the worktree leaves the checkout alone.
    ok(std::fs::write(
        wt.join("README.md"),
        "changed in isolation\n",
    ));
    assert_eq!(
        ok(std::fs::read_to_string(repo.join("README.md"))),
        "hello\n"
    );

    // Restart (a new process): still isolated in the same worktree.
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(list["active_workspace_id"], ws_id.as_str());
    assert_eq!(
        list["execution"]["execution_root"],
        wt.display().to_string().as_str()
    );
    let status = holon_json(&home, &["status", "--json"]);
    assert_eq!(
        status["agents"][0]["execution"]["worktree"]["worktree_branch"],
        branch.as_str(),
        "holon status --json serves the snapshot"
    );

    // Leaving with changes keeps the worktree and reports it.
    let back = holon_json(&home, &["workspace", "use", "agent_home", "--json"]);
    assert_eq!(back["execution"]["workspace_id"], "agent_home");
    assert_eq!(
        back["retained"][0]["worktree_path"],
        wt.display().to_string().as_str()
    );
    assert!(
        wt.join("README.md").exists(),
        "a changed worktree is never deleted"
    );
    let kept = events(&home, "main", "worktree_retained");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["payload"]["uncommitted_files"], 1);

    // Isolated again: the kept worktree is re-entered, not a second one.
    let again = holon_json(&home, &["workspace", "use", &ws_id, "--isolated", "--json"]);
    assert_eq!(
        again["execution"]["execution_root"],
        wt.display().to_string().as_str()
    );

    // Once clean, leaving removes the worktree and deletes its branch.
    git(&wt, &["checkout", "--", "README.md"]);
    holon_json(&home, &["workspace", "use", &ws_id, "--json"]);
    assert!(!wt.exists(), "a clean worktree is removed");
    assert!(
        !git(&repo, &["branch", "--list"]).contains(&branch),
        "its branch is deleted"
    );
    assert_eq!(events(&home, "main", "worktree_removed").len(), 1);
    super::support::assert_typed_lines(&home, "main");

    // Detaching the active workspace is refused; after switching it works
    // and nothing on disk is touched.
    let out = home.run(&["workspace", "detach", &ws_id]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("switch first"), "{}", stderr(&out));
    holon_json(&home, &["workspace", "use", "agent_home", "--json"]);
    holon_json(&home, &["workspace", "detach", &ws_id, "--json"]);
    assert!(repo.join("README.md").exists());
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(list["attached"], serde_json::json!([]));
    super::support::assert_typed_lines(&home, "main");
}

#[test]
fn bad_workspace_input_gets_clear_errors_and_a_vanished_worktree_falls_back_home() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let refused = |args: &[&str], says: &str| {
        let out = home.run(args);
        assert!(!out.status.success(), "holon {args:?} should fail");
        assert!(
            stderr(&out).contains(says),
            "holon {args:?}: {}",
            stderr(&out)
        );
    };
    let missing = projects.path().join("nope").display().to_string();
    refused(&["workspace", "use", &missing], "does not exist");
    let file = projects.path().join("file.txt");
    ok(std::fs::write(&file, "x"));
    refused(
        &["workspace", "use", &file.display().to_string()],
        "not a directory",
    );
    refused(&["workspace", "use", "ws_unknown_00000000"], "no workspace");
    refused(
        &["workspace", "use", "agent_home", "--isolated"],
        "no isolated mode",
    );
    refused(&["workspace", "detach", "agent_home"], "cannot be detached");

    // A repository with no commits: direct works, isolated needs a HEAD.
    let empty = projects.path().join("empty");
    ok(std::fs::create_dir_all(&empty));
    git(&empty, &["init", "--quiet"]);
    let empty_s = empty.display().to_string();
    holon_json(&home, &["workspace", "use", &empty_s, "--json"]);
    refused(&["workspace", "use", &empty_s, "--isolated"], "no commits");

    // A plain directory: direct works, isolated needs a repository.
    let plain = projects.path().join("plain");
    ok(std::fs::create_dir_all(&plain));
    let plain_s = plain.display().to_string();
    let used = holon_json(&home, &["workspace", "use", &plain_s, "--json"]);
    assert_eq!(used["execution"]["execution_root"], plain_s.as_str());
    refused(
        &["workspace", "use", &plain_s, "--isolated"],
        "not inside a git repository",
    );

    // Without git on PATH: direct still works, isolated says git is missing.
    let repo = repo(projects.path(), "nogit");
    let repo_s = repo.display().to_string();
    let out = ok(home
        .cmd()
        .env("PATH", "/nonexistent")
        .args(["workspace", "use", &repo_s, "--isolated"])
        .output());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("`git` is not installed"),
        "{}",
        stderr(&out)
    );

    // A detached HEAD can be isolated from (no original branch).
    git(&repo, &["checkout", "--quiet", "--detach"]);
    let iso = holon_json(
        &home,
        &["workspace", "use", &repo_s, "--isolated", "--json"],
    );
    assert_eq!(iso["execution"]["worktree"]["original_branch"], "");
    let wt = PathBuf::from(
        iso["execution"]["execution_root"]
            .as_str()
            .unwrap_or_default(),
    );
    // A commit made there is the session's own work, though there was no
    // branch to compare with: leaving keeps the worktree.
    ok(std::fs::write(
        wt.join("README.md"),
        "committed in isolation\n",
    ));
    git(&wt, &["commit", "--quiet", "-am", "work"]);
    let back = holon_json(&home, &["workspace", "use", "agent_home", "--json"]);
    assert_eq!(
        back["retained"][0]["worktree_path"],
        wt.display().to_string().as_str()
    );
    let kept = events(&home, "main", "worktree_retained");
    assert_eq!(
        kept.last().map(|e| e["payload"]["commits_ahead"].clone()),
        Some(serde_json::json!(1))
    );
    assert!(wt.join("README.md").exists());
    let again = holon_json(
        &home,
        &["workspace", "use", &repo_s, "--isolated", "--json"],
    );
    assert_eq!(
        again["execution"]["execution_root"],
        wt.display().to_string().as_str()
    );

    // The worktree deleted by hand: a listing starts nothing and shows
    // what is recorded; the next start falls back to AgentHome with an
    // event, and the binding is kept.
    ok(std::fs::remove_dir_all(&wt));
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(
        list["execution"]["execution_root"],
        wt.display().to_string().as_str()
    );
    assert_eq!(list["execution_root_present"], false, "{list}");
    assert!(events(&home, "main", "workspace_missing").is_empty());
    let said = home.ok(&["workspace", "list"]);
    assert!(
        said.contains("is gone: the runtime moves main to its agent home"),
        "{said}"
    );
    // Attaching the attached repository again starts a runtime here.
    holon_json(&home, &["workspace", "attach", &repo_s, "--json"]);
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(list["active_workspace_id"], "agent_home");
    assert_eq!(list["execution_root_present"], true, "{list}");
    assert!(list["attached"]
        .as_array()
        .is_some_and(|a| a.iter().any(|e| e["anchor"] == repo_s.as_str())));
    let gone = events(&home, "main", "workspace_missing");
    super::support::assert_typed_lines(&home, "main");
    assert_eq!(gone.len(), 1);
    assert_eq!(
        gone[0]["payload"]["execution_root"],
        wt.display().to_string().as_str()
    );
}

#[test]
fn the_console_binds_to_the_repository_it_opens_in_and_switches_from_the_overlay() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "console-repo");
    let sub = repo.join("crates/core").display().to_string();
    let mut c = Console::start(home.path(), &[], 120, 32, &[("HOLON_TEST_CWD", &sub)]);
    c.wait_until("the workspace on the status line", |s| {
        s.contains("⌂ console-repo")
    });

    // `!` commands run where the agent is: the directory the console
    // opened in.
    c.type_text("!pwd");
    c.enter();
    c.wait_until("the command row", |s| {
        s.contains("$ pwd") && s.contains("exit 0")
    });

    // The overlay: enter isolated mode; the status line shows the branch.
    c.key(b"\x0f");
    c.type_text("p");
    c.wait_for("Workspaces · main");
    c.type_text("i");
    c.wait_until("isolated", |s| s.contains("⎇ holon/main/"));
    c.key(b"\x1b");
    c.wait_until("the overlay closed", |s| !s.contains("Workspaces · main"));
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);

    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(list["execution"]["mode"], "isolated");
    assert_eq!(
        list["execution"]["workspace_anchor"],
        repo.display().to_string().as_str()
    );
    let tasks = events(&home, "main", "task_status_changed");
    assert!(!tasks.is_empty());

    // Opened elsewhere, the console does not move an agent that works in
    // a workspace: it says so and offers `/workspace use .`.
    let other = projects.path().display().to_string();
    let mut c = Console::start(home.path(), &[], 120, 32, &[("HOLON_TEST_CWD", &other)]);
    c.wait_for("/workspace use .");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(list["execution"]["mode"], "isolated", "not moved");
}

#[test]
fn holon_run_does_not_move_an_existing_agent_working_elsewhere() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let a = repo(projects.path(), "alpha");
    let b = repo(projects.path(), "beta");
    holon_json(
        &home,
        &["workspace", "use", &a.display().to_string(), "--json"],
    );
    // No provider: the run fails fast, but the binding decision comes first.
    let out = holon_in(&home, &b, &["run", "--agent", "main", "hi"]);
    assert!(
        stderr(&out).contains("keeps working in"),
        "{}",
        stderr(&out)
    );
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(
        list["execution"]["execution_root"],
        a.display().to_string().as_str()
    );
    // -C moves it.
    let _ = holon_in(
        &home,
        &a,
        &[
            "run",
            "--agent",
            "main",
            "-C",
            &b.display().to_string(),
            "hi",
        ],
    );
    let list = holon_json(&home, &["workspace", "list", "--json"]);
    assert_eq!(
        list["execution"]["execution_root"],
        b.display().to_string().as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_moves_itself_with_use_workspace_and_the_next_round_sees_where_it_is() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "tool-repo");
    let use_args = serde_json::json!({ "path": repo.display().to_string(), "mode": "isolated" });
    let patch = serde_json::json!({
        "patch": "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-hello\n+isolated edit\n"
    });
    let (use_args, patch) = (use_args.to_string(), patch.to_string());
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("", &[("u1", "UseWorkspace", &use_args)]),
        ),
        Canned::json(
            200,
            canned::responses_json("", &[("p1", "ApplyPatch", &patch)]),
        ),
        Canned::json(200, canned::responses_json("Edited in a worktree.", &[])),
    ])
    .await;
    // The operator points the run at the repository (`-C`, which attaches
    // it); the model moves itself into an isolated worktree of it, which
    // asks no one: the workspace is attached.
    let mut cmd = tokio::process::Command::from(home.cmd());
    cmd.envs(provider_env(&stub)).args([
        "run",
        "-C",
        &repo.display().to_string(),
        "--json",
        "edit it safely",
    ]);
    let out = ok(cmd.output().await);
    assert!(out.status.success(), "{}", stderr(&out));

    let requests = stub.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].body.to_string();
    assert!(first.contains("workspace: ws_tool-repo"), "{first}");
    assert!(first.contains("mode: direct"), "{first}");
    let second = requests[1].body.to_string();
    assert!(
        second.contains("mode: isolated (managed worktree on branch holon/run-"),
        "{second}"
    );
    assert!(
        second.contains("repo rules: run the tests"),
        "the repository's guidance joined the frame"
    );
    // The edit landed in the worktree only.
    assert_eq!(
        ok(std::fs::read_to_string(repo.join("README.md"))),
        "hello\n"
    );
    let worktrees = git(&repo, &["worktree", "list", "--porcelain"]);
    let wt = worktrees
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .find(|p| Path::new(p) != repo)
        .unwrap_or_else(|| panic!("no managed worktree in {worktrees}"));
    assert_eq!(
        ok(std::fs::read_to_string(Path::new(wt).join("README.md"))),
        "isolated edit\n"
    );
    // The run's session ended with it: a worktree holding changes is kept
    // and said so.
    assert!(stderr(&out).contains("kept worktree"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_item_is_filed_under_the_workspace_it_was_written_in() {
    use holon::protocol::views::CreateWorkItem;
    let r = super::runtime_core::rig(Vec::new()).await;
    let item = |objective: &str| CreateWorkItem {
        objective: objective.into(),
        ..Default::default()
    };
    let home = ok(r.host.create_work_item("main", item("at home")).await);
    assert_eq!(home.workspace_id, "agent_home");
    let project = ok(tempfile::tempdir());
    let req = holon::protocol::types::UseWorkspace {
        path: Some(project.path().display().to_string()),
        ..Default::default()
    };
    let used = ok(r.host.use_workspace("main", req).await);
    let in_project = ok(r
        .host
        .create_work_item("main", item("in the project"))
        .await);
    assert_ne!(in_project.workspace_id, "agent_home");
    assert_eq!(in_project.workspace_id, used.execution.workspace_id);
    r.host.shutdown().await;
}

/// A console attached from another machine asks the runtime for the
/// files its `@` picker offers: the execution root's, as git lists them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_files_lists_the_execution_root_as_git_would() {
    use holon::protocol::{call_json, Request};
    let r = super::runtime_core::rig(vec![]).await;
    let status = call_json(
        &r.host,
        Request::AgentStatus {
            agent_id: "main".into(),
        },
    )
    .await
    .unwrap();
    let root = std::path::PathBuf::from(status["execution"]["execution_root"].as_str().unwrap());
    for (path, text) in [
        (".gitignore", "target/\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("target/debug/app", "binary"),
        ("README.md", "hi\n"),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let listed = call_json(
        &r.host,
        Request::WorkspaceFiles {
            agent_id: "main".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(listed["root"], root.display().to_string());
    let mut files: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    files.sort();
    assert!(
        files.contains(&"README.md") && files.contains(&"src/main.rs"),
        "{files:?}"
    );
    assert!(!files.iter().any(|f| f.starts_with("target/")), "{files:?}");
    assert_eq!(listed["truncated"], false);
    r.host.shutdown().await;
}
