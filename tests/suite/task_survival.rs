//! Commands that outlive their runtime: each runs under a holder (the real
//! `holon __hold`) that records its exit durably. A runtime that crashes
//! or shuts down as a daemon leaves it running; the next one reattaches
//! (input and stop work again) and delivers its result once, or settles it
//! from the record it left, or fails it with the reason when its holder
//! was killed and ends what it left running.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use holon::model::message::Priority;
use holon::model::task::TaskRecord;
use holon::model::task::TaskStatus;
use holon::runtime::handle::RuntimeHost;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::store::{Keyed, Store, StoreOptions};

use super::runtime_core::{config, events, kind, prompt, wait_event};
use super::runtime_restart::{crash, runtime, start};
use super::support::{command_pid, poll, running};

fn pid_of(task: &TaskRecord) -> i32 {
    task.detail.pid.unwrap_or(0)
}

/// The task's record once it is terminal.
async fn settled(host: &RuntimeHost, task_id: &str) -> TaskRecord {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let t: Option<TaskRecord> = host
            .store()
            .read()
            .and_then(|rx| rx.get(Keyed::Tasks, "main", task_id))
            .unwrap();
        if let Some(t) = t.filter(|t| t.status.is_terminal()) {
            return t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{task_id} never ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn a_command_outlives_a_crashed_runtime_and_its_result_reaches_the_agent_once() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "",
            &[(
                "ExecCommand",
                json!({"cmd": "sleep 1.5; echo held-done", "yield_time_ms": 50}),
            )],
        ),
        Scripted::text("started the slow one"),
    ]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    let (task_id, holder) = rt.block_on(async {
        host.submit(prompt("run it", Priority::Normal))
            .await
            .unwrap();
        let created = wait_event(&host, "task created", kind("task_created")).await;
        wait_event(&host, "brief", kind("brief_created")).await;
        let id = created.payload["task"]["id"].as_str().unwrap().to_owned();
        let rx = host.store().read().unwrap();
        let task: TaskRecord = rx.get(Keyed::Tasks, "main", &id).unwrap().unwrap();
        assert_eq!(task.detail.held, Some(true));
        (id, pid_of(&task))
    });
    crash(rt, host, dir.path());
    assert!(running(holder), "the holder outlived its runtime");

    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::text(
        "the slow one finished",
    )]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    rt.block_on(async {
        let back = wait_event(&host, "reattached", kind("task_reattached")).await;
        assert_eq!(back.payload["task_id"], json!(task_id));
        assert_eq!(back.payload["pid"], json!(holder));
        assert_eq!(back.payload["result_reenters"], true);
        wait_event(&host, "the answer", |e| {
            e.kind == "brief_created" && e.payload["brief"]["text"] == "the slow one finished"
        })
        .await;
        let task = settled(&host, &task_id).await;
        assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
        let conv = serde_json::to_string(&provider.requests()[0].conversation).unwrap();
        assert!(conv.contains("held-done"), "{conv}");
        // Once: with everything settled, still one result and one request.
        host.until_idle().await;
        let results = events(&host)
            .iter()
            .filter(|e| e.kind == "task_result_queued" && e.payload["task_id"] == task_id)
            .count();
        assert_eq!(results, 1);
        assert_eq!(provider.requests().len(), 1);
        host.shutdown().await;
    });
    let files: Vec<_> = std::fs::read_dir(dir.path().join("data/tasks/main"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(!files.is_empty());
    assert!(
        files.iter().all(|f| f.to_string_lossy().ends_with(".log")),
        "the holder's files are removed once settled: {files:?}"
    );
}

#[test]
fn a_command_that_ended_while_no_runtime_ran_is_settled_from_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    let task = rt.block_on(async {
        host.run_operator_command("main", "sleep 0.3; echo late; exit 3")
            .await
            .unwrap()
    });
    crash(rt, host, dir.path());
    poll("the holder to end", || {
        (!running(pid_of(&task))).then_some(())
    });
    let rt = runtime();
    let host = start(&rt, dir.path(), provider);
    rt.block_on(async {
        let t = settled(&host, &task.id).await;
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.summary.as_deref(), Some("exit status 3"));
        assert_eq!(t.detail.exit_status, Some(3));
        let preview = t.detail.output_preview.unwrap_or_default();
        assert!(preview.contains("late"), "{preview}");
        assert!(!events(&host).iter().any(|e| e.kind == "task_reattached"));
        host.shutdown().await;
    });
}

#[test]
fn a_killed_holder_fails_its_task_with_the_reason_and_its_command_is_ended() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    let task = rt.block_on(async { host.run_operator_command("main", "sleep 30").await.unwrap() });
    let output = task.detail.output_path.clone().unwrap();
    let command_file = std::path::Path::new(&output).with_extension("pid");
    let command: serde_json::Value = poll("the command's identity", || {
        std::fs::read(&command_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    });
    let command = command["pid"].as_i64().unwrap() as i32;
    crash(rt, host, dir.path());
    // SAFETY: the holder this test's runtime started.
    unsafe { libc::kill(pid_of(&task), libc::SIGKILL) };
    poll("the holder to die", || {
        (!running(pid_of(&task))).then_some(())
    });
    assert!(
        running(command),
        "the command still runs without its holder"
    );
    let rt = runtime();
    let host = start(&rt, dir.path(), provider);
    rt.block_on(async {
        let t = settled(&host, &task.id).await;
        assert_eq!(t.status, TaskStatus::Failed);
        let summary = t.summary.unwrap_or_default();
        assert!(summary.contains("holder is gone"), "{summary}");
        assert!(summary.contains("SIGTERM"), "{summary}");
        host.shutdown().await;
    });
    poll("the command to be ended", || {
        (!running(command)).then_some(())
    });
}

#[test]
fn a_daemon_leaves_commands_running_and_the_next_one_answers_input_and_stop() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let open = |rt: &tokio::runtime::Runtime| {
        rt.block_on(async {
            let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
            let mut c = config(dir.path(), Arc::clone(&provider));
            c.commands = holon::runtime::handle::CommandsFate::Outlive;
            let host = RuntimeHost::start(store, c).await.unwrap();
            host.create_agent("main").await.unwrap();
            host
        })
    };
    let rt = runtime();
    let host = open(&rt);
    let cmd = "read a; echo got:$a; trap '' TERM; sleep 30";
    let task = rt.block_on(async {
        let t = host.run_operator_command("main", cmd).await.unwrap();
        host.shutdown().await;
        let store = host.store().clone();
        store.close().await.unwrap();
        t
    });
    drop(host);
    drop(rt);
    let holder = pid_of(&task);
    assert!(
        running(holder),
        "a daemon's shutdown left the command running"
    );
    let rt = runtime();
    let host = open(&rt);
    rt.block_on(async {
        wait_event(&host, "reattached", kind("task_reattached")).await;
        let receipt = host.task_input("main", &task.id, "yes\n").await.unwrap();
        assert!(receipt.accepted_input, "{receipt:?}");
        let output = task.detail.output_path.clone().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&output)
            .unwrap_or_default()
            .contains("got:yes")
        {
            assert!(std::time::Instant::now() < deadline, "no answer read");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // It ignores TERM: after the grace the holder kills it.
        let command = command_pid(&task);
        host.stop_task("main", &task.id).await.unwrap();
        let t = settled(&host, &task.id).await;
        assert_eq!(t.status, TaskStatus::Cancelled);
        assert_eq!(t.summary.as_deref(), Some("stopped by request"));
        assert_eq!(t.detail.signal, Some(9), "{t:?}");
        assert!(!running(command), "the command itself was killed");
        host.shutdown().await;
    });
    poll("the holder to end", || (!running(holder)).then_some(()));
}

/// A host on `dir` with what it does with running commands, and its stop
/// grace.
fn open_with(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    commands: holon::runtime::handle::CommandsFate,
    grace: Duration,
) -> RuntimeHost {
    rt.block_on(async {
        let store = Store::open(&dir.join("s.redb"), StoreOptions::default()).unwrap();
        let provider = Arc::new(ScriptedProvider::new(vec![]));
        let mut c = config(dir, provider);
        c.commands = commands;
        c.stop_grace = grace;
        let host = RuntimeHost::start(store, c).await.unwrap();
        host.create_agent("main").await.unwrap();
        host
    })
}

/// Shut a host down and let go of its store.
fn close(rt: tokio::runtime::Runtime, host: RuntimeHost) {
    rt.block_on(async {
        host.shutdown().await;
        let store = host.store().clone();
        store.close().await.unwrap();
    });
    drop(host);
}

#[test]
fn a_one_shot_runtime_leaves_running_commands_alone_and_a_stop_survives_restart() {
    use holon::runtime::handle::CommandsFate::{Outlive, OwnOnly};
    let dir = tempfile::tempdir().unwrap();
    let short = Duration::from_millis(300);
    let rt = runtime();
    let host = open_with(&rt, dir.path(), Outlive, short);
    let task = rt.block_on(async {
        host.run_operator_command("main", "trap '' TERM; sleep 30")
            .await
            .unwrap()
    });
    let command = command_pid(&task);
    close(rt, host);
    // A one-shot command: no reattach, nothing stopped at its end.
    let rt = runtime();
    let host = open_with(&rt, dir.path(), OwnOnly, short);
    rt.block_on(async {
        assert!(!events(&host).iter().any(|e| e.kind == "task_reattached"));
    });
    close(rt, host);
    assert!(running(command), "a one-shot runtime left it alone");
    // A stop asked for (TERM, ignored here), then a shutdown before its
    // grace ends ...
    let rt = runtime();
    let host = open_with(&rt, dir.path(), Outlive, Duration::from_secs(60));
    rt.block_on(async {
        wait_event(&host, "reattached", kind("task_reattached")).await;
        host.stop_task("main", &task.id).await.unwrap();
    });
    close(rt, host);
    assert!(running(command), "still running when that runtime stopped");
    // ... and the runtime that comes next goes on with the stop.
    let rt = runtime();
    let host = open_with(&rt, dir.path(), Outlive, short);
    rt.block_on(async {
        let t = settled(&host, &task.id).await;
        assert_eq!(t.status, TaskStatus::Cancelled, "{t:?}");
        assert_eq!(t.summary.as_deref(), Some("stopped by request"));
        host.shutdown().await;
    });
    poll("the command to be killed", || {
        (!running(command)).then_some(())
    });
}

#[test]
fn a_holder_killed_under_a_running_runtime_fails_its_task_and_ends_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), provider);
    rt.block_on(async {
        let task = host.run_operator_command("main", "sleep 30").await.unwrap();
        let command = command_pid(&task);
        // SAFETY: the holder this test's runtime started.
        unsafe { libc::kill(pid_of(&task), libc::SIGKILL) };
        let t = settled(&host, &task.id).await;
        assert_eq!(t.status, TaskStatus::Failed);
        let summary = t.summary.unwrap_or_default();
        assert!(summary.contains("killed (signal 9)"), "{summary}");
        assert!(!running(command), "the command was ended: {summary}");
        host.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_dash_nine_mid_command_then_start_delivers_its_result_exactly_once() {
    use super::stub_provider::{canned, Canned, StubServer};
    use super::support::{daemon_pid, json_lines, kill_daemon, stderr, Daemon, Home};
    let home = Home::new();
    let marker = home.path().join("data/agents/main/ran.txt");
    let cmd = format!("sleep 4; echo ran >> {}; echo survived", marker.display());
    let call = json!({ "cmd": cmd, "yield_time_ms": 50 }).to_string();
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("Starting it.", &[("call_1", "ExecCommand", &call)]),
        ),
        Canned::json(
            200,
            canned::responses_json("It runs in the background.", &[]),
        ),
        Canned::json(200, canned::responses_json("It finished.", &[])),
    ])
    .await;
    let base = format!("{}/v1", stub.base());
    let detach = || {
        let out = home
            .cmd()
            .env("HOLON_MODEL", "openai/gpt-survival")
            .env("OPENAI_BASE_URL", &base)
            .env("OPENAI_API_KEY", "sk-survival")
            .arg("--detach")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    };
    detach();
    let _daemon = Daemon(&home);
    home.ok(&["send", "run the slow command"]);
    // The turn has ended (its second answer asked for is not enough: a
    // kill before the turn's end replays its message instead).
    poll("the turn to end", || {
        let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
        evs.iter()
            .any(|e| e["kind"] == "turn_terminal")
            .then_some(())
    });
    assert_eq!(stub.requests().len(), 2);
    kill_daemon(daemon_pid(&home));
    assert!(!marker.exists(), "killed before the command finished");
    detach();
    poll("the result's turn", || {
        (stub.requests().len() >= 3).then_some(())
    });
    let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
    let count = |k: &str| evs.iter().filter(|e| e["kind"] == k).count();
    // Reattached, or (on a slow machine) ended before the start: either
    // way its result is delivered once.
    assert!(count("task_reattached") <= 1);
    assert_eq!(count("task_result_queued"), 1);
    let done = evs
        .iter()
        .find(|e| e["kind"] == "task_status_changed" && e["payload"]["to"] == "completed")
        .expect("the task completed");
    assert!(
        done["payload"]["output_preview"]
            .as_str()
            .unwrap_or_default()
            .contains("survived"),
        "{done}"
    );
    let third = stub.requests()[2].body.to_string();
    assert!(third.contains("survived"), "{third}");
    super::support::settled(&home);
    assert_eq!(stub.requests().len(), 3, "the result re-entered once");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}

#[test]
fn an_agents_command_that_ended_while_no_runtime_ran_still_reaches_it() {
    use holon::runtime::command_tasks::{CommandSpec, TaskOrigin};
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    // Started by the agent and not yet promoted: its turn would have
    // answered it inline, had the runtime not died.
    let task = rt.block_on(async {
        let spec = CommandSpec {
            cmd: "sleep 0.3; echo inline-lost".into(),
            workdir: dir.path().to_path_buf(),
            accepts_input: false,
            launch: Default::default(),
            sandbox: None,
        };
        let origin = TaskOrigin::Agent {
            parent_message_id: None,
            work_item_id: None,
        };
        host.start_command_task("main", spec, origin).await.unwrap()
    });
    crash(rt, host, dir.path());
    poll("the holder to end", || {
        (!running(pid_of(&task))).then_some(())
    });
    let rt = runtime();
    let host = start(&rt, dir.path(), provider);
    rt.block_on(async {
        let queued = wait_event(&host, "its result", kind("task_result_queued")).await;
        assert_eq!(queued.payload["task_id"], json!(task.id));
        host.shutdown().await;
    });
}
