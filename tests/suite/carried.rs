//! Nothing the model asked for is lost: a command's result that arrives
//! while the agent waits on something else (its own timer) starts no
//! turn, and is shown to the model in the next turn it runs, through the
//! real binary and a scripted model.

use serde_json::json;

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{poll, stderr, Daemon, Home};
use super::workspaces::provider_env;

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_arrives_during_a_timer_reaches_the_model_when_it_fires() {
    let home = Home::new();
    let exec = json!({ "cmd": "sleep 0.3; echo TASK-RESULT-MARKER", "yield_time_ms": 50 });
    let sleep = json!({ "duration_ms": 2500 });
    let (exec, sleep) = (exec.to_string(), sleep.to_string());
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json(
                "Started; resting.",
                &[("c1", "ExecCommand", &exec), ("c2", "Sleep", &sleep)],
            ),
        ),
        Canned::json(200, canned::responses_json("Seen it.", &[])),
    ])
    .await;
    let out = ok(home
        .cmd()
        .envs(provider_env(&stub))
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&home);
    home.ok(&["send", "build it, then rest"]);
    // The result arrives while the timer runs: settled without a turn,
    // and kept for the model.
    let events = poll("the result settled without a turn", || {
        let text = home.ok(&["events", "--json"]);
        text.contains("\"carried_for_model\":true").then_some(text)
    });
    assert!(
        events.contains("mismatched_trigger:task_result:awaiting_timer"),
        "{events}"
    );
    assert_eq!(stub.requests().len(), 1, "it started no turn");
    // The timer fires: that turn shows the result, marked, before it.
    poll("the timer's turn", || {
        (stub.requests().len() >= 2).then_some(())
    });
    let next = stub.requests()[1].body.to_string();
    assert!(next.contains("TASK-RESULT-MARKER"), "{next}");
    assert!(
        next.contains("while you were waiting for something else"),
        "{next}"
    );
    let started = poll("turn_started naming it", || {
        let text = home.ok(&["events", "--json"]);
        text.lines()
            .find(|l| l.contains("\"turn_started\"") && l.contains("\"carried\""))
            .map(str::to_owned)
    });
    assert!(started.contains("msg"), "{started}");
    // Each turn's terminal says its place among the agent's turns.
    let terminals: Vec<String> = poll("the second turn's end", || {
        let lines: Vec<String> = home
            .ok(&["events", "--json"])
            .lines()
            .filter(|l| l.contains("\"kind\":\"turn_terminal\""))
            .map(str::to_owned)
            .collect();
        (lines.len() >= 2).then_some(lines)
    });
    assert!(
        terminals[0].contains("\"turn_index\":1"),
        "{}",
        terminals[0]
    );
    assert!(
        terminals[1].contains("\"turn_index\":2"),
        "{}",
        terminals[1]
    );
    assert!(
        terminals[1].contains("\"completed_at\""),
        "{}",
        terminals[1]
    );
    // Shown once: a later turn does not repeat it as new input.
    let transcript = home.ok(&["transcript"]);
    assert_eq!(
        transcript.matches("while you were waiting").count(),
        1,
        "{transcript}"
    );
}

/// A command's result that arrives while its agent is paused (by the
/// operator, or by its budget, which pauses the same way) waits in the
/// queue and reaches the model when the agent resumes; nothing runs
/// meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_arrives_while_paused_reaches_the_model_on_resume() {
    use holon::model::message::Priority;
    use holon::protocol::views::ControlAction;
    use holon::runtime::provider::scripted::Scripted;

    use super::runtime_core::{prompt, rig, wait_event};

    let r = rig(vec![
        Scripted::tools(
            "",
            &[(
                "ExecCommand",
                json!({"cmd": "sleep 0.4; echo PAUSED-RESULT-MARKER", "yield_time_ms": 50}),
            )],
        ),
        Scripted::text("started; it runs on"),
        Scripted::text("read the result"),
    ])
    .await;
    ok(r.host.submit(prompt("build it", Priority::Normal)).await);
    wait_event(&r.host, "the first brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "started; it runs on"
    })
    .await;
    ok(r.host.control("main", ControlAction::Pause).await);
    wait_event(&r.host, "the result queued", |e| {
        e.kind == "task_result_queued"
    })
    .await;
    // Paused: the result waits, and no model request is made for it (the
    // actor settles on it without a turn).
    r.host.until_idle().await;
    assert_eq!(r.provider.requests().len(), 2, "nothing runs while paused");
    ok(r.host.control("main", ControlAction::Resume).await);
    wait_event(&r.host, "the reading turn", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "read the result"
    })
    .await;
    let seen = serde_json::to_string(&r.provider.requests()[2].conversation).unwrap_or_default();
    assert!(seen.contains("PAUSED-RESULT-MARKER"), "{seen}");
    r.host.shutdown().await;
}
