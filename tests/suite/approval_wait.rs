//! A turn whose call asks for approval waits a while for the answer and
//! goes on with it in the same turn: one turn, one model request more,
//! the answer joined as input. Other input ends the wait (the answer then
//! starts its own turn, as before); a shutdown or a kill while it waits
//! settles the turn, never replays it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::approvals::{stop, wait_requests};
use super::runtime_core::{config, events, kind, prompt, wait_event};
use holon::model::approval::{Approval, ApprovalPolicy};
use holon::model::message::Priority;
use holon::runtime::handle::RuntimeHost;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::store::{Store, StoreOptions};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

/// A runtime under `on_write` whose turns wait `wait` for an answer.
async fn host(dir: &std::path::Path, provider: &Arc<ScriptedProvider>, wait: u64) -> RuntimeHost {
    let store = ok(Store::open(&dir.join("s.redb"), StoreOptions::default()));
    let mut c = config(dir, Arc::clone(provider));
    c.policy = ApprovalPolicy {
        approval: Approval::OnWrite,
        ..ApprovalPolicy::default()
    };
    c.approval_wait = Duration::from_secs(wait);
    let host = ok(RuntimeHost::start(store, c).await);
    ok(host.create_agent("main").await);
    host
}

fn posture(host: &RuntimeHost) -> (String, String) {
    let rx = ok(host.store().read());
    let live = ok(holon::runtime::projection::load(&rx, "main", 0));
    let p = live.expect("no agent").projection.posture();
    (p.posture.as_str().to_owned(), p.reason.clone())
}

fn count(host: &RuntimeHost, k: &str) -> usize {
    events(host).iter().filter(|e| e.kind == k).count()
}

/// The command a script asks for, writing inside the agent's home.
fn writer(dir: &std::path::Path) -> (std::path::PathBuf, Scripted) {
    let out = dir.join("data/agents/main/ran.txt");
    let cmd = format!("echo ran >> {}", out.display());
    let call = Scripted::tools("Writing.", &[("ExecCommand", json!({ "cmd": cmd }))]);
    (out, call)
}

fn approval_id(asked: &holon::model::event::EventRecord) -> String {
    asked.payload["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_in_time_goes_on_in_the_turn_that_asked() {
    let dir = ok(tempfile::tempdir());
    let (out, call) = writer(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![
        call,
        Scripted::text("It ran, in the same turn."),
    ]));
    let host = host(dir.path(), &provider, 60).await;
    ok(host
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    let asked = wait_event(&host, "the approval request", kind("approval_requested")).await;
    let waits = wait_event(&host, "the wait", kind("turn_awaiting_approval")).await;
    assert_eq!(waits.payload["approval_ids"], json!([approval_id(&asked)]));
    assert_eq!(waits.payload["wait_ms"], 60_000);
    // While it waits, the turn runs and says what it waits for.
    let (p, reason) = posture(&host);
    assert_eq!(p, "ActiveTurn", "{reason}");
    assert!(
        reason.contains("turn in progress, waiting for your answer: approval needed: ExecCommand"),
        "{reason}"
    );
    assert_eq!(count(&host, "turn_terminal"), 0, "the turn waits");
    assert!(!host.settled(), "a waiting turn is work in hand");
    ok(host.approve("main", &approval_id(&asked), false).await);
    wait_requests(&provider, 2).await;
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    host.until_idle().await;
    assert!(host.settled());
    assert_eq!(ok(std::fs::read_to_string(&out)), "ran\n", "ran once");
    // One turn, and the model saw the result in it.
    assert_eq!(count(&host, "turn_started"), 1);
    assert_eq!(count(&host, "turn_terminal"), 1);
    assert_eq!(provider.requests().len(), 2);
    let second = serde_json::to_string(&provider.requests()[1].conversation).unwrap_or_default();
    assert!(
        second.contains("The operator approved ExecCommand"),
        "{second}"
    );
    assert!(
        second.contains("exit_status"),
        "the result came back: {second}"
    );
    // The answer joined the run that asked: settled `interjected` there.
    let run = asked.payload["approval"]["run_id"].clone();
    let joined: Vec<_> = events(&host)
        .into_iter()
        .filter(|e| e.kind == "message_interjected")
        .collect();
    assert_eq!(joined.len(), 1, "{joined:?}");
    assert_eq!(joined[0].payload["detail"]["run_id"], run);
    let (p, reason) = posture(&host);
    assert_ne!(p, "WaitingForOperator", "{reason}");
    assert!(!reason.contains("waiting for your answer"), "{reason}");
    assert!(ok(host.approvals(None, false)).is_empty());
    stop(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_input_ends_the_wait_and_the_answer_starts_its_own_turn() {
    let dir = ok(tempfile::tempdir());
    let (out, call) = writer(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![
        call,
        Scripted::text("About the other thing."),
        Scripted::text("Now it ran."),
    ]));
    let host = host(dir.path(), &provider, 600).await;
    ok(host
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    let asked = wait_event(&host, "the approval request", kind("approval_requested")).await;
    // The operator says something else: the waiting turn gives way at
    // once, not after its ten minutes.
    ok(host
        .submit(prompt("and the other thing?", Priority::Normal))
        .await);
    wait_event(&host, "the first turn's end", kind("turn_terminal")).await;
    wait_requests(&provider, 2).await;
    let second = serde_json::to_string(&provider.requests()[1].conversation).unwrap_or_default();
    assert!(second.contains("and the other thing?"), "{second}");
    assert!(!out.exists(), "nothing ran before the answer");
    ok(host.approve("main", &approval_id(&asked), false).await);
    wait_requests(&provider, 3).await;
    host.until_idle().await;
    let third = serde_json::to_string(&provider.requests()[2].conversation).unwrap_or_default();
    assert!(
        third.contains("The operator approved ExecCommand"),
        "{third}"
    );
    assert_eq!(ok(std::fs::read_to_string(&out)), "ran\n");
    assert_eq!(count(&host, "turn_started"), 3);
    stop(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_while_the_turn_waits_ends_it_and_nothing_replays() {
    let dir = ok(tempfile::tempdir());
    let (out, call) = writer(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![
        call,
        Scripted::text("It ran after the restart."),
    ]));
    let host1 = host(dir.path(), &provider, 600).await;
    ok(host1
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    let asked = wait_event(&host1, "the approval request", kind("approval_requested")).await;
    stop(host1).await;
    let host2 = host(dir.path(), &provider, 600).await;
    host2.until_idle().await;
    // The turn ended at the shutdown (its message is not replayed), and
    // the approval is still there to answer.
    let started: Vec<_> = events(&host2)
        .into_iter()
        .filter(|e| e.kind == "runtime_started")
        .collect();
    let last = started.last().expect("runtime_started");
    assert_eq!(last.payload["turn_was_in_progress"], false, "{last:?}");
    assert_eq!(last.payload["replay_message_ids"], json!([]), "{last:?}");
    assert_eq!(provider.requests().len(), 1, "no model call again");
    assert_eq!(ok(host2.approvals(None, false)).len(), 1);
    ok(host2.approve("main", &approval_id(&asked), false).await);
    wait_requests(&provider, 2).await;
    host2.until_idle().await;
    assert_eq!(ok(std::fs::read_to_string(&out)), "ran\n");
    stop(host2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_falling_due_ends_the_wait_and_fires_on_time() {
    let dir = ok(tempfile::tempdir());
    let (_, call) = writer(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![
        call,
        Scripted::text("Noted."),
        Scripted::text("Noted."),
    ]));
    // A timer due in a second and a half: the ten-minute wait ends then.
    let host = host(dir.path(), &provider, 600).await;
    ok(host.create_timer("main", 1_500, "check again", None).await);
    ok(host
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    wait_event(&host, "the approval request", kind("approval_requested")).await;
    let ended = wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    let fired = wait_event(&host, "the timer", kind("timer_fired")).await;
    assert!(fired.event_seq > ended.event_seq);
    assert_eq!(ok(host.approvals(None, false)).len(), 1, "still asked");
    stop(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_holding_new_turns_ends_the_wait() {
    let dir = ok(tempfile::tempdir());
    let (_, call) = writer(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![call]));
    let host = host(dir.path(), &provider, 600).await;
    ok(host
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    wait_event(&host, "the approval request", kind("approval_requested")).await;
    // A console handing its runtime to a daemon holds new turns: a turn
    // waiting for an answer ends rather than keep the hand-over waiting.
    host.hold_turns();
    let ended = wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    assert_eq!(ended.payload["kind"], "completed", "{ended:?}");
    assert_eq!(provider.requests().len(), 1);
    stop(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_or_a_pause_ends_the_wait_and_the_approval_stays() {
    let dir = ok(tempfile::tempdir());
    let (out, call) = writer(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![
        call.clone(),
        Scripted::text("Understood, not now."),
        call,
        Scripted::text("It ran after the resume."),
    ]));
    let host = host(dir.path(), &provider, 600).await;
    use holon::protocol::views::ControlAction;
    // Esc while it waits: the wait ends, the turn as it stood (its calls
    // are all recorded); the call still waits for an answer.
    ok(host
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    wait_event(&host, "the wait", kind("turn_awaiting_approval")).await;
    let aborted = ok(host.control("main", ControlAction::Abort).await);
    assert!(
        aborted.note.contains("stops waiting for your answer"),
        "{aborted:?}"
    );
    let ended = wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    assert_eq!(ended.payload["kind"], "completed", "{ended:?}");
    assert_eq!(ok(host.approvals(None, false)).len(), 1, "still asked");
    ok(host
        .deny("main", &ok(host.approvals(None, false))[0].id, None)
        .await);
    host.until_idle().await;
    // Paused while it waits: the turn ends, and an answer then waits for
    // the resume instead of going on in a paused agent.
    let before = count(&host, "turn_terminal");
    let requests = provider.requests().len();
    ok(host
        .submit(prompt("append once more", Priority::Normal))
        .await);
    wait_event(&host, "the second wait", |_| {
        count(&host, "turn_awaiting_approval") == 2
    })
    .await;
    ok(host.control("main", ControlAction::Pause).await);
    wait_event(&host, "the paused turn's end", |_| {
        count(&host, "turn_terminal") == before + 1
    })
    .await;
    let id = ok(host.approvals(None, false))[0].id.clone();
    ok(host.approve("main", &id, false).await);
    host.until_idle().await;
    assert_eq!(
        provider.requests().len(),
        requests + 1,
        "nothing ran while paused"
    );
    assert_eq!(
        ok(std::fs::read_to_string(&out)),
        "ran\n",
        "the approved call ran"
    );
    ok(host.control("main", ControlAction::Resume).await);
    wait_requests(&provider, requests + 2).await;
    stop(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_turns_last_round_nothing_waits_or_joins() {
    let dir = ok(tempfile::tempdir());
    let (_, call) = writer(dir.path());
    let provider = Arc::new(ScriptedProvider::new(vec![
        call,
        Scripted::text("The answer came as its own turn."),
    ]));
    let store = ok(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    let mut c = config(dir.path(), Arc::clone(&provider));
    c.policy = ApprovalPolicy {
        approval: Approval::OnWrite,
        ..ApprovalPolicy::default()
    };
    c.approval_wait = Duration::from_secs(600);
    c.max_rounds = 1;
    let host = ok(RuntimeHost::start(store, c).await);
    ok(host.create_agent("main").await);
    ok(host
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    let asked = wait_event(&host, "the approval request", kind("approval_requested")).await;
    // No request could follow this round to take the answer: the turn
    // ends at once, and the answer starts a turn of its own.
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    assert_eq!(count(&host, "turn_awaiting_approval"), 0);
    ok(host.approve("main", &approval_id(&asked), false).await);
    wait_requests(&provider, 2).await;
    host.until_idle().await;
    assert_eq!(count(&host, "turn_started"), 2);
    stop(host).await;
}
