//! Operator hooks through the real binary and a scripted local model: a
//! `pre_tool` hook refusing a call with a reason the model reads (and
//! letting the next one run), hooks of later events told with their
//! documented input, every run a `hook_ran` event; and hooks that behave
//! badly (hang, flood their output, reach for a unix socket, write outside
//! their directory) held by their limits and their sandbox.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{assert_typed_lines, json_lines, stderr, Home};
use super::workspaces::{provider_env, repo};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

fn write_config(home: &Home, text: &str) {
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(home.path().join("config/config.toml"), text));
}

/// An executable script in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    ok(std::fs::write(&path, format!("#!/bin/sh\n{body}")));
    ok(std::fs::set_permissions(
        &path,
        std::fs::Permissions::from_mode(0o755),
    ));
    path
}

fn exec(id: &str, cmd: &str) -> (String, String, String) {
    (
        id.to_owned(),
        "ExecCommand".to_owned(),
        json!({ "cmd": cmd }).to_string(),
    )
}

/// One `holon run` in `dir` whose model makes `calls`, then ends; the
/// requests the model sent, and the run's agent.
async fn run_in(
    home: &Home,
    dir: &Path,
    calls: &[(String, String, String)],
) -> (Vec<Value>, String) {
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
        .args(["run", "--json", "do it"]);
    let out = ok(cmd.output().await);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = ok(serde_json::from_slice(&out.stdout));
    let agent = report["agent_id"].as_str().unwrap_or_default().to_owned();
    (
        stub.requests().iter().map(|r| r.body.clone()).collect(),
        agent,
    )
}

/// The `hook_ran` payloads of `agent`, in order.
fn hook_runs(home: &Home, agent: &str) -> Vec<Value> {
    json_lines(&home.ok(&["events", "--agent", agent, "--json", "--limit", "100000"]))
        .into_iter()
        .filter(|e| e["kind"] == "hook_ran")
        .map(|e| e["payload"].clone())
        .collect()
}

/// The JSON lines a hook appended to `in.jsonl` in its state directory.
fn told(home: &Home, hook: &str) -> Vec<Value> {
    let file = home.path().join(format!("data/hooks/{hook}/in.jsonl"));
    json_lines(&std::fs::read_to_string(&file).unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_tool_hook_refuses_a_call_the_model_reads_why_and_later_events_are_told() {
    let home = Home::new();
    let scripts = ok(tempfile::tempdir());
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "hooked");
    let guard = script(
        scripts.path(),
        "guard.sh",
        r#"input=$(cat)
printf '%s\n' "$input" >> "$HOLON_HOOK_STATE_DIR/in.jsonl"
case "$input" in
  *'git push'*) echo "no pushes from agents: open a pull request instead" >&2; exit 2;;
  *'rm -rf'*) echo '{"decision":"deny","reason":"nothing is deleted wholesale"}'; exit 0;;
esac
exit 0
"#,
    );
    let keep = script(
        scripts.path(),
        "keep.sh",
        "cat >> \"$HOLON_HOOK_STATE_DIR/in.jsonl\"; echo >> \"$HOLON_HOOK_STATE_DIR/in.jsonl\"\n",
    );
    let (guard, keep) = (guard.display(), keep.display());
    write_config(
        &home,
        &format!(
            r#"
[[hooks.pre_tool]]
name = "guard"
command = "{guard}"
tools = ["ExecCommand"]

[[hooks.post_tool]]
name = "after"
command = "{keep}"

[[hooks.turn_end]]
name = "ended"
command = "{keep}"

[[hooks.brief]]
name = "briefed"
command = "{keep}"

[[hooks.prompt_submitted]]
name = "prompted"
command = "{keep}"
"#
        ),
    );
    let calls = vec![
        exec("c1", "git push origin main"),
        exec("c2", "rm -rf src"),
        exec("c3", "echo ran > ran.txt"),
    ];
    let (requests, agent) = run_in(&home, &repo, &calls).await;
    assert_eq!(requests.len(), 2);
    let told_model = requests[1].to_string();
    for said in [
        "refused this call: no pushes from agents: open a pull request instead",
        "refused this call: nothing is deleted wholesale",
    ] {
        assert!(
            told_model.contains(said),
            "the model was not told {said}: {told_model}"
        );
    }
    // The refused calls never ran; the allowed one did.
    assert_eq!(ok(std::fs::read_to_string(repo.join("ran.txt"))), "ran\n");
    // The guard saw each call, its arguments in full, in the documented shape.
    let seen = told(&home, "guard");
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[0]["schema"], 1);
    assert_eq!(seen[0]["event"], "pre_tool");
    assert_eq!(seen[0]["agent_id"], agent.as_str());
    assert_eq!(seen[0]["tool"], "ExecCommand");
    assert_eq!(seen[0]["args"]["cmd"], "git push origin main");
    let root = ok(repo.canonicalize()).display().to_string();
    assert_eq!(seen[0]["workspace"], root.as_str());
    // Every run is an event; the notification hooks ran off the turn's
    // path, yet before the one-shot runtime stopped.
    let runs = hook_runs(&home, &agent);
    let outcomes: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["hook"].as_str().unwrap_or("").to_owned(),
                r["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    for expected in [
        ("guard", "denied"),
        ("guard", "allowed"),
        ("after", "done"),
        ("ended", "done"),
        ("briefed", "done"),
        ("prompted", "done"),
    ] {
        assert!(
            outcomes.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not in {outcomes:?}"
        );
    }
    let denied: Vec<&Value> = runs.iter().filter(|r| r["outcome"] == "denied").collect();
    assert_eq!(denied.len(), 2);
    assert!(denied
        .iter()
        .all(|r| r["refused"] == true && r["tool"] == "ExecCommand"));
    assert_eq!(told(&home, "after").len(), 3, "post_tool once per call");
    let ended = told(&home, "ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["outcome"], "completed");
    let prompted = told(&home, "prompted");
    assert_eq!(prompted[0]["text"], "do it");
    assert!(told(&home, "briefed")[0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Done.")));
    if holon::runtime::sandbox::tests_can_sandbox() {
        assert!(runs.iter().all(|r| r["sandboxed"] == true), "{runs:?}");
    }
    // What the operator reads.
    let events = home.ok(&["events", "--agent", &agent, "--limit", "100000"]);
    assert!(
        events.contains("Hook `guard` (pre_tool, ExecCommand) refused the call"),
        "{events}"
    );
    assert_typed_lines(&home, &agent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_that_hang_flood_or_reach_out_are_held_to_their_limits() {
    let home = Home::new();
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "hostile");
    let outside = ok(tempfile::tempdir());
    let sock_path = outside.path().join("control.sock");
    let listener = ok(std::os::unix::net::UnixListener::bind(&sock_path));
    ok(listener.set_nonblocking(true));
    let o = outside.path().display();
    let s = sock_path.display();
    write_config(
        &home,
        &format!(
            r#"
[[hooks.pre_tool]]
name = "flood"
command = "head -c 100000000 /dev/zero; exit 0"

[[hooks.pre_tool]]
name = "reach"
command = "touch $HOLON_HOOK_STATE_DIR/tried; python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{s}')\" && echo connected > {o}/reached; touch {o}/wrote; exit 0"
on_error = "allow"

[[hooks.pre_tool]]
name = "hang"
command = "sleep 30"
timeout_secs = 1
on_error = "deny"
"#
        ),
    );
    // The hung hook is killed at its limit, not waited for (`sleep 30`).
    let calls = [exec("c1", "echo never > never.txt")];
    let run = run_in(&home, &repo, &calls);
    let (requests, agent) = tokio::time::timeout(std::time::Duration::from_secs(25), run)
        .await
        .expect("the run waited for the hung hook");
    let told_model = requests[1].to_string();
    assert!(
        told_model.contains("the hook `hang` failed (did not finish within 1 s"),
        "{told_model}"
    );
    assert!(!repo.join("never.txt").exists(), "a refused call ran");
    let runs = hook_runs(&home, &agent);
    let by = |name: &str| {
        runs.iter()
            .find(|r| r["hook"] == name)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(by("flood")["outcome"], "allowed");
    assert_eq!(by("flood")["output_bytes"], 100_000_000);
    assert_eq!(by("hang")["outcome"], "failed");
    assert_eq!(by("hang")["timed_out"], true);
    assert_eq!(by("hang")["refused"], true);
    assert_eq!(by("hang")["failures"], 1);
    // The hook did run, in its own directory.
    assert!(home.path().join("data/hooks/reach/tried").exists());
    if holon::runtime::sandbox::tests_can_sandbox() {
        assert!(
            listener.accept().is_err(),
            "a sandboxed hook reached a unix socket"
        );
        assert!(!outside.path().join("reached").exists());
        assert!(
            !outside.path().join("wrote").exists(),
            "a sandboxed hook wrote outside its directory"
        );
    }
}

/// What a hook leaves in its own directory is never followed by Holon
/// when it makes the next run's sandbox: links planted where a scratch
/// directory, the sandbox's writable file or Holon's own files would be
/// lead nowhere, and the next run still writes only in its directory.
#[test]
fn links_a_hook_plants_do_not_steer_its_next_run() {
    if !holon::runtime::sandbox::tests_can_sandbox() {
        return;
    }
    let home = Home::new();
    let outside = ok(tempfile::tempdir());
    let o = outside.path().display();
    ok(std::fs::write(
        outside.path().join("keep.txt"),
        "operator's\n",
    ));
    let plant = format!(
        "cd \"$HOLON_HOOK_STATE_DIR\"; for n in tmp .output .holon .shm .runs; do ln -sfn {o} \"$n\"; done; \
         ln -sfn {o}/keep.txt out.txt; exit 0"
    );
    let probe = format!(
        "echo x > \"$TMPDIR/t\"; echo x > {o}/escaped; echo x > {o}/keep.txt; \
         echo mine > \"$HOLON_HOOK_STATE_DIR/own\"; exit 0"
    );
    for command in [&plant, &probe, &probe] {
        write_config(
            &home,
            &format!("[[hooks.brief]]\nname = \"nest\"\ncommand = '{command}'\n"),
        );
        let out = home.run(&["hooks", "test", "brief"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert!(
        !outside.path().join("escaped").exists(),
        "a hook wrote outside"
    );
    assert!(
        !outside.path().join("t").exists(),
        "its TMPDIR was steered outside"
    );
    assert_eq!(
        ok(std::fs::read_to_string(outside.path().join("keep.txt"))),
        "operator's\n"
    );
    assert_eq!(
        ok(std::fs::read_to_string(
            home.path().join("data/hooks/nest/own")
        )),
        "mine\n"
    );
    // Each run's scratch directory went with it.
    let runs = home.path().join("data/hooks/.runs");
    assert_eq!(std::fs::read_dir(&runs).map_or(0, |d| d.count()), 0);
}

#[test]
fn hooks_list_and_test_show_what_runs_without_recording() {
    let home = Home::new();
    let scripts = ok(tempfile::tempdir());
    let guard = script(
        scripts.path(),
        "guard.sh",
        "case \"$(cat)\" in *'git push'*) echo 'no pushes' >&2; exit 2;; esac\n",
    );
    write_config(
        &home,
        &format!(
            "[[hooks.pre_tool]]\nname = \"guard\"\ncommand = \"{}\"\ntools = [\"ExecCommand\"]\n\n[[hooks.agent_idle]]\ncommand = \"true\"\nsandbox = \"off\"\n",
            guard.display()
        ),
    );
    let list = home.ok(&["hooks", "list"]);
    assert!(list.contains("guard: "), "{list}");
    assert!(list.contains("UNCONFINED (sandbox = \"off\")"), "{list}");
    let sample = home.ok(&["hooks", "test", "pre_tool"]);
    assert!(sample.starts_with("guard: allowed"), "{sample}");
    let input = scripts.path().join("push.json");
    ok(std::fs::write(&input, r#"{"args": {"cmd": "git push"}}"#));
    let push = home.run(&[
        "hooks",
        "test",
        "pre_tool",
        "--input",
        &input.display().to_string(),
    ]);
    let said = String::from_utf8_lossy(&push.stdout).into_owned();
    assert!(
        said.contains("guard: denied, the call would be refused"),
        "{said}"
    );
    assert!(said.contains("no pushes"), "{said}");
    let unknown = home.run(&["hooks", "test", "PreToolUse"]);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("not a hook event"),
        "{}",
        stderr(&unknown)
    );
    // A bad table is refused with the key at fault.
    write_config(
        &home,
        "[[hooks.brief]]\ncommand = \"x\"\ntools = [\"ExecCommand\"]\n",
    );
    let bad = home.run(&["hooks", "list"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("hooks.brief[0].tools"),
        "{}",
        stderr(&bad)
    );
}

/// A follower that falls behind the store's broadcast (a slow hook, a
/// burst of events, a small buffer) reads each agent's ledger back from
/// where it was: every event is told, once, none skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_falls_behind_tells_every_event_once() {
    use holon::model::message::Priority;
    use holon::protocol::views::ControlAction;
    const PROMPTS: usize = 60;
    let dir = ok(tempfile::tempdir());
    let store = ok(holon::store::Store::open(
        &dir.path().join("s.redb"),
        holon::store::StoreOptions {
            event_buffer: 16,
            ..Default::default()
        },
    ));
    let provider = std::sync::Arc::new(holon::runtime::provider::scripted::ScriptedProvider::new(
        Vec::new(),
    ));
    let mut c = super::runtime_core::config(dir.path(), provider);
    #[derive(serde::Deserialize)]
    struct File {
        hooks: holon::runtime::settings::hooks::HooksSection,
    }
    let file: File = ok(toml::from_str(
        "[[hooks.prompt_submitted]]\nname = \"slow\"\ncommand = \"cat > /dev/null; sleep 0.02\"\nsandbox = \"off\"\n",
    ));
    c.hooks = ok(holon::runtime::settings::hooks::check(file.hooks));
    let host = ok(holon::runtime::handle::RuntimeHost::start(store, c).await);
    ok(host.create_agent("main").await);
    // Paused: the prompts only queue, each one event the hook is told of.
    ok(host.control("main", ControlAction::Pause).await);
    for n in 0..PROMPTS {
        ok(host
            .submit(super::runtime_core::prompt(
                &format!("p{n}"),
                Priority::Normal,
            ))
            .await);
    }
    let told = || {
        let rx = ok(host.store().read());
        ok(rx.events_of_kind("main", "hook_ran", 0, 100_000))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while told().len() < PROMPTS {
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {PROMPTS} told",
            told().len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let runs = told();
    let mut about: Vec<u64> = runs
        .iter()
        .filter_map(|e| e.payload["about_seq"].as_u64())
        .collect();
    let all = about.len();
    about.sort();
    about.dedup();
    assert_eq!(
        (all, about.len()),
        (PROMPTS, PROMPTS),
        "each prompt told exactly once"
    );
    super::approvals::stop(host).await;
}

/// A repository proposes hooks in `.holon/hooks.toml`: they run only once
/// the operator approved the file's exact text, never while it asks for
/// more than a model command has (network), and not after the text
/// changes (as a model working there could change it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_hooks_run_only_as_approved() {
    let home = Home::new();
    let config = "[policy]\napproval = \"on_request\"\n";
    let (_stub, seen) = super::reviewer_workspaces::daemon_with_reviewer(&home, config).await;
    let _daemon = super::support::Daemon(&home);
    let projects = ok(tempfile::tempdir());
    let repo = repo(projects.path(), "proposing");
    ok(std::fs::create_dir_all(repo.join(".holon")));
    let file = repo.join(".holon/hooks.toml");
    let guard = r#"[[hooks.pre_tool]]
name = "no-rm"
tools = ["ExecCommand"]
command = "if grep -q 'rm -rf'; then echo 'this repository forbids rm -rf' >&2; exit 2; fi"
"#;
    ok(std::fs::write(&file, format!("{guard}network = true\n")));
    let dir = repo.display().to_string();
    home.ok(&["workspace", "use", &dir]);
    let refused_by_hook = |call: &str| {
        home.ok(&["send", &format!("run: rm -rf gone-{call}#{call}")]);
        let result = super::support::poll("the call's result", || {
            let all = seen.lock().map(|l| l.clone()).unwrap_or_default();
            all.iter().find_map(|r| {
                let items = r["input"].as_array()?;
                items
                    .iter()
                    .find(|i| i["type"] == "function_call_output" && i["call_id"] == call)
                    .map(|i| i["output"].to_string())
            })
        });
        result.contains("this repository forbids rm -rf")
    };

    // Asking for the network: refused whole, and cannot be approved.
    let shown = home.ok(&["hooks", "proposal", "--dir", &dir]);
    assert!(
        shown.contains("refused") && shown.contains("no network"),
        "{shown}"
    );
    let view: Value =
        serde_json::from_str(&home.ok(&["hooks", "proposal", "--dir", &dir, "--json"]))
            .unwrap_or_default();
    let digest = view["digest"].as_str().unwrap_or_default().to_owned();
    let bad = home.run(&["hooks", "adopt", "--dir", &dir, "--expect", &digest]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("no network"), "{}", stderr(&bad));

    // Proposed, not approved: nothing runs.
    ok(std::fs::write(&file, guard));
    let shown = home.ok(&["hooks", "proposal", "--dir", &dir]);
    assert!(shown.contains("not approved"), "{shown}");
    assert!(!refused_by_hook("c_1"));

    // Approved as written: the hook guards, sandboxed.
    let view: Value =
        serde_json::from_str(&home.ok(&["hooks", "proposal", "--dir", &dir, "--json"]))
            .unwrap_or_default();
    let digest = view["digest"].as_str().unwrap_or_default().to_owned();
    let adopted = home.ok(&["hooks", "adopt", "--dir", &dir, "--expect", &digest]);
    assert!(adopted.contains("approved"), "{adopted}");
    assert!(refused_by_hook("c_2"));
    let runs = hook_runs(&home, "main");
    assert_eq!(runs.len(), 1, "{runs:?}");
    let name = runs[0]["hook"].as_str().unwrap_or_default();
    assert!(
        name.starts_with("repo-") && name.ends_with(".no-rm"),
        "{name}"
    );
    assert_eq!(runs[0]["sandboxed"], true);
    assert_eq!(runs[0]["outcome"], "denied");

    // Changed after the approval: not run until approved again.
    ok(std::fs::write(&file, guard.replace("exit 2", "exit 0")));
    assert!(!refused_by_hook("c_3"));
    assert_eq!(hook_runs(&home, "main").len(), 1);
    let kinds: Vec<String> = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]))
        .into_iter()
        .filter(|e| e["kind"] == "proposal_approved")
        .map(|e| e["payload"]["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(kinds, ["hooks"]);
    assert_typed_lines(&home, "main");
}

#[test]
fn a_daemon_stops_gracefully_past_a_running_hook_and_leaves_none_behind() {
    let home = Home::new();
    let marks = ok(tempfile::tempdir());
    let pid_file = marks.path().join("hook.pid");
    write_config(
        &home,
        &format!(
            "[[hooks.prompt_submitted]]\nname = \"long\"\ncommand = \"echo $$ > {}; exec sleep 31\"\n\
             timeout_secs = 60\nsandbox = \"off\"\n",
            pid_file.display()
        ),
    );
    home.ok(&["--detach"]);
    let daemon = super::support::Daemon(&home);
    home.ok(&["send", "start the hook"]);
    let pid: i32 = super::support::poll("the hook to start", || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    });
    assert!(super::support::running(pid));
    // Graceful, under the 10 s before `daemon stop` signals: the drain
    // gives up on the hook and kills it with its group.
    let stop = home.ok(&["daemon", "stop"]);
    drop(daemon);
    assert!(stop.contains("stopped gracefully"), "{stop}");
    super::support::poll("the hook's process to be gone", || {
        (!super::support::running(pid)).then_some(())
    });
}
