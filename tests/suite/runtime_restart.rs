//! Restart behaviour with real processes and a real store: a turn killed
//! mid-flight replays its message without re-executing recorded tool
//! calls; tasks run without a holder, whose process cannot be supervised
//! again, become interrupted (held ones: `task_survival`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use holon::model::message::Priority;
use holon::runtime::handle::RuntimeHost;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::store::{Store, StoreOptions};

use super::runtime_core::{config, events, kind, prompt, wait_event};
use super::support::{command_pid, ignores, poll, running};

pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Start a host on `dir` in its own tokio runtime.
pub(super) fn start(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    provider: Arc<ScriptedProvider>,
) -> RuntimeHost {
    start_with(rt, dir, provider, true)
}

/// Start a host whose commands run under a holder (`held`), or as its
/// own children, which cannot outlive it.
pub(super) fn start_with(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    provider: Arc<ScriptedProvider>,
    held: bool,
) -> RuntimeHost {
    rt.block_on(async {
        let store = Store::open(&dir.join("s.redb"), StoreOptions::default()).unwrap();
        let mut config = config(dir, provider);
        if !held {
            config.holder = None;
        }
        let host = RuntimeHost::start(store, config).await.unwrap();
        host.create_agent("main").await.unwrap();
        host
    })
}

/// Drop the runtime with the host's tasks mid-flight: like a crash, nothing
/// after the last commit is written. Waits until the store is released.
pub(super) fn crash(rt: tokio::runtime::Runtime, host: RuntimeHost, dir: &std::path::Path) {
    drop(host);
    rt.shutdown_timeout(Duration::from_millis(100));
    for _ in 0..200 {
        match Store::open(&dir.join("s.redb"), StoreOptions::default()) {
            Ok(s) => {
                drop(s);
                std::thread::sleep(Duration::from_millis(20));
                return;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    panic!("store never released after the crash");
}

/// Crash the runtime, start it again on the same store, and wait for the
/// first task it records as interrupted.
fn restart_until_interrupted(
    rt: tokio::runtime::Runtime,
    host: RuntimeHost,
    dir: &std::path::Path,
    provider: Arc<ScriptedProvider>,
) -> (
    tokio::runtime::Runtime,
    RuntimeHost,
    holon::model::event::EventRecord,
) {
    crash(rt, host, dir);
    let rt = runtime();
    let host = start_with(&rt, dir, provider, false);
    let e = rt.block_on(wait_event(&host, "interrupted", |e| {
        e.kind == "task_status_changed" && e.payload["to"] == "interrupted"
    }));
    (rt, host, e)
}

#[test]
fn a_turn_killed_mid_flight_replays_its_message_without_rerunning_tools() {
    let dir = tempfile::tempdir().unwrap();
    // Inside the agent's home: the sandbox lets the command write there.
    let counter = dir.path().join("data/agents/main/counter.txt");
    let cmd = format!("echo ran >> {}", counter.display());
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("", &[("ExecCommand", json!({ "cmd": cmd }))]),
        Scripted::Delay(Duration::from_secs(30), Box::new(Scripted::text("never"))),
    ]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    let message_id = rt.block_on(async {
        let a = host
            .submit(prompt("count once", Priority::Normal))
            .await
            .unwrap();
        wait_event(&host, "tool executed", kind("tool_executed")).await;
        // Let the second provider round begin, then die inside it.
        super::approvals::wait_requests(&provider, 2).await;
        a.message_id
    });
    crash(rt, host, dir.path());
    assert_eq!(
        std::fs::read_to_string(&counter)
            .unwrap_or_default()
            .lines()
            .count(),
        1
    );

    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::text(
        "recovered; the command already ran once",
    )]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    rt.block_on(async {
        let started = wait_event(&host, "runtime started with replay", |e| {
            e.kind == "runtime_started"
                && e.payload["replay_message_ids"]
                    .to_string()
                    .contains(&message_id)
        })
        .await;
        assert_eq!(started.payload["turn_was_in_progress"], true);
        let replay = wait_event(&host, "replayed dequeue", |e| {
            e.kind == "message_processing_started" && e.payload["replay"] == true
        })
        .await;
        assert_eq!(replay.payload["message_id"], json!(message_id));
        wait_event(&host, "recovered brief", |e| {
            e.kind == "brief_created" && e.event_seq > replay.event_seq
        })
        .await;
        // The model saw the earlier call and its recorded result.
        let conv = serde_json::to_string(&provider.requests()[0].conversation).unwrap_or_default();
        assert!(
            conv.contains("ExecCommand") && conv.contains("tool_result"),
            "{conv}"
        );
        let tool_runs = events(&host)
            .iter()
            .filter(|e| e.kind == "tool_executed")
            .count();
        assert_eq!(tool_runs, 1, "no tool call re-executed by recovery");
        host.shutdown().await;
    });
    assert_eq!(
        std::fs::read_to_string(&counter)
            .unwrap_or_default()
            .lines()
            .count(),
        1,
        "the command ran exactly once"
    );
}

#[test]
fn unheld_tasks_left_running_by_a_dead_runtime_become_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start_with(&rt, dir.path(), Arc::clone(&provider), false);
    let (task_id, pid) = rt.block_on(async {
        let t = host.run_operator_command("main", "sleep 30").await.unwrap();
        let pid = t.detail.pid.unwrap_or(0);
        (t.id, pid)
    });
    assert!(pid > 0);
    let (rt, host, e) = restart_until_interrupted(rt, host, dir.path(), provider);
    rt.block_on(async {
        assert_eq!(e.payload["task_id"], json!(task_id));
        host.shutdown().await;
    });
    // The orphaned process group was terminated, not left running untracked.
    let mut alive = true;
    for _ in 0..100 {
        // SAFETY: signal 0 only probes for existence.
        alive = unsafe { libc::kill(pid, 0) } == 0;
        if !alive {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive, "process {pid} still running after recovery");
}

#[test]
fn closing_the_store_releases_the_file_even_with_a_task_still_running() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), provider);
    rt.block_on(async {
        host.run_operator_command("main", "sleep 5").await.unwrap();
        host.shutdown().await;
        let store = host.store().clone();
        store.close().await.unwrap();
        // Another process (here: another open) can take the store at once.
        match Store::open(&dir.path().join("s.redb"), StoreOptions::default()) {
            Ok(_) => {}
            Err(e) => panic!("the store is still held after close: {e}"),
        }
    });
    drop(host);
}

#[test]
fn a_group_that_ignores_term_is_killed_by_recovery_and_the_record_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start_with(&rt, dir.path(), Arc::clone(&provider), false);
    let pid = rt.block_on(async {
        let t = host
            .run_operator_command("main", "trap '' TERM; sleep 60 & wait; sleep 60")
            .await
            .unwrap();
        let identity = &t.detail.process_identity;
        assert!(
            identity.as_ref().is_some_and(|i| i.start_ticks > 0),
            "the task records its process identity: {identity:?}"
        );
        t.detail.pid.unwrap_or(0)
    });
    assert!(pid > 0);
    crash(rt, host, dir.path());
    assert!(running(pid), "the task outlived its runtime");
    let rt = runtime();
    let host = start_with(&rt, dir.path(), provider, false);
    rt.block_on(async {
        let e = wait_event(&host, "interrupted", |e| {
            e.kind == "task_status_changed" && e.payload["to"] == "interrupted"
        })
        .await;
        let summary = e.payload["task"]["summary"].to_string() + &e.payload.to_string();
        assert!(summary.contains("SIGKILL"), "{summary}");
        host.shutdown().await;
    });
    for _ in 0..100 {
        if !running(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("process group {pid} survived recovery");
}

#[test]
fn recovery_never_signals_a_process_that_took_over_a_recorded_pid() {
    use holon::model::task::TaskKind;
    use holon::model::task::TaskRecord;
    use holon::model::task::TaskStatus;
    use holon::model::task::WaitPolicy;
    let dir = tempfile::tempdir().unwrap();
    // A stranger: not Holon's, in its own process group.
    let mut stranger = {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let pid = stranger.id() as i32;
    let real = holon::model::process::ProcessIdentity::of(pid).expect("no identity");
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    rt.block_on(async {
        // A task record from "before a reboot": same pid, other start time.
        let record = TaskRecord {
            id: "task_stale".into(),
            agent_id: "main".into(),
            kind: TaskKind::CommandTask,
            status: TaskStatus::Running,
            wait_policy: WaitPolicy::Background,
            work_item_id: None,
            parent_message_id: None,
            summary: Some("sleep 1000".into()),
            detail: holon::model::task::TaskDetail::from_value(json!({
                "pid": pid,
                "process_identity": {"pid": pid, "start_ticks": real.start_ticks + 5, "boot_id": real.boot_id},
            })),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
            failure_artifact: None,
        };
        host.store()
            .write(move |tx| {
                tx.put(holon::store::Keyed::Tasks, "main", &record.id, &record)?;
                tx.index_insert(holon::store::Index::ActiveTasks, "main", &record.id)
            })
            .await
            .unwrap();
    });
    let (rt, host, e) = restart_until_interrupted(rt, host, dir.path(), provider);
    rt.block_on(async {
        assert!(
            e.payload.to_string().contains("left alone"),
            "{}",
            e.payload
        );
        host.shutdown().await;
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(running(pid), "the stranger {pid} was signalled");
    let _ = stranger.kill();
    let _ = stranger.wait();
}

#[test]
fn a_call_that_started_before_a_crash_is_reported_as_outcome_unknown_not_unexecuted() {
    let dir = tempfile::tempdir().unwrap();
    // Inside the agent's home: the sandbox lets the command write there.
    let marker = dir.path().join("data/agents/main/ran.txt");
    let cmd = format!("echo ran >> {}; sleep 20", marker.display());
    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::tools(
        "",
        &[("ExecCommand", json!({ "cmd": cmd }))],
    )]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    rt.block_on(async {
        host.submit(prompt("run it", Priority::Normal))
            .await
            .unwrap();
        wait_event(&host, "tool started", kind("tool_started")).await;
        for _ in 0..100 {
            if marker.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    // The command has had its effect; the runtime dies mid-call.
    assert!(marker.exists());
    crash(rt, host, dir.path());

    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::text("checked")]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    rt.block_on(async {
        wait_event(&host, "replayed turn ends", |e| {
            e.kind == "turn_terminal" && e.payload["kind"] == "completed"
        })
        .await;
        let conv = serde_json::to_string(&provider.requests()[0].conversation).unwrap_or_default();
        assert!(conv.contains("started, outcome unknown"), "{conv}");
        assert!(!conv.contains("not executed"), "{conv}");
        host.shutdown().await;
    });
}

#[test]
fn shutdown_stops_running_tasks_even_those_ignoring_term_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), provider);
    let (polite, stubborn) = rt.block_on(async {
        let a = host.run_operator_command("main", "sleep 60").await.unwrap();
        let b = host
            .run_operator_command("main", "trap '' TERM; sleep 60 & wait; sleep 60")
            .await
            .unwrap();
        let pid = |t: &holon::model::task::TaskRecord| t.detail.pid.unwrap_or(0);
        let pids = (pid(&a), pid(&b));
        // The stubborn one has set its trap: TERM alone cannot end it.
        let shell = command_pid(&b);
        poll("the trap", || ignores(shell, libc::SIGTERM).then_some(()));
        host.shutdown().await;
        // Not just its holder: the command that ignored TERM ended too.
        poll("the stubborn command to end", || {
            (!running(shell)).then_some(())
        });
        let tasks: Vec<holon::model::task::TaskRecord> = host
            .store()
            .read()
            .and_then(|r| r.list(holon::store::Keyed::Tasks, "main"))
            .unwrap();
        for t in &tasks {
            assert_eq!(t.status, holon::model::task::TaskStatus::Cancelled, "{t:?}");
            assert_eq!(t.summary.as_deref(), Some("stopped: the runtime shut down"));
        }
        assert_eq!(tasks.len(), 2);
        pids
    });
    for pid in [polite, stubborn] {
        assert!(pid > 0);
        assert!(!running(pid), "task process {pid} outlived the shutdown");
    }
}

#[test]
fn a_command_started_after_shutdown_began_never_runs_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let rt = runtime();
    let host = start(&rt, dir.path(), provider);
    // Inside the agent's home: the sandbox lets the command write there.
    let marker = dir.path().join("data/agents/main/ran.txt");
    rt.block_on(async {
        // Shutdown stops the tasks first; a request that lands after (an
        // in-flight `task.run`, an agent's last tool call) must not start
        // a process nobody supervises.
        host.shutdown().await;
        let cmd = format!("echo ran > {}", marker.display());
        let task = host.run_operator_command("main", &cmd).await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let settled = loop {
            let t: holon::model::task::TaskRecord = host
                .store()
                .read()
                .and_then(|rx| rx.get(holon::store::Keyed::Tasks, "main", &task.id))
                .unwrap()
                .expect("no task record");
            if t.status.is_terminal() {
                break t;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the task never settled"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(settled.status, holon::model::task::TaskStatus::Cancelled);
        assert_eq!(
            settled.summary.as_deref(),
            Some("stopped: the runtime shut down")
        );
    });
    assert!(!marker.exists(), "the command ran after shutdown");
    drop(host);
}
