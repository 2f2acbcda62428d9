//! The command family as the model uses it: ExecCommand's `shell`,
//! `login` and `tty`, and what TaskStatus says of a command's identity.
//! Real shells, a real pseudo-terminal, the real holder.

use serde_json::{json, Value};

use holon::model::message::Priority;
use holon::runtime::provider::scripted::Scripted;

use super::runtime_core::{events, prompt, rig, wait_event};

/// The results the model was given, in call order.
fn results(host: &holon::runtime::handle::RuntimeHost) -> Vec<Value> {
    events(host)
        .iter()
        .filter(|e| e.kind == "tool_executed")
        .map(|e| {
            let preview = e.payload["result_preview"].as_str().unwrap_or_default();
            serde_json::from_str(preview).unwrap_or_else(|_| json!({ "raw": preview }))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_in_the_shell_it_names_as_a_login_shell_or_on_a_terminal() {
    let r = rig(vec![
        Scripted::tools(
            "",
            &[
                (
                    "ExecCommand",
                    json!({"cmd": "echo shell:$0; shopt -q login_shell && echo login-shell",
                           "shell": "bash", "login": true}),
                ),
                (
                    "ExecCommand",
                    json!({"cmd": "test -t 0 && test -t 1 && echo on-a-terminal; tty; echo via-tty > /dev/tty; read x; echo read-end:$?",
                           "tty": true}),
                ),
                ("ExecCommand", json!({"cmd": "test -t 1 || echo no-terminal"})),
                ("ExecCommand", json!({"cmd": "true", "shell": "python3"})),
            ],
        ),
        Scripted::text("done"),
    ])
    .await;
    r.host
        .submit(prompt("run them", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "brief", |e| e.kind == "brief_created").await;
    let got = given(&r);
    assert_eq!(got.len(), 4, "{got:?}");
    let out = |i: usize| {
        got[i]["stdout_preview"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        out(0).contains("shell:/bin/bash") || out(0).contains("shell:/usr/bin/bash"),
        "{}",
        out(0)
    );
    assert!(out(0).contains("login-shell"), "{}", out(0));
    assert!(
        out(1).contains("on-a-terminal") && out(1).contains("/dev/pts/"),
        "{}",
        out(1)
    );
    // Its terminal opens again by name, in the sandbox too; with no input
    // it reads the end of its input at once.
    assert!(out(1).contains("via-tty"), "{}", out(1));
    assert!(out(1).contains("read-end:1"), "{}", out(1));
    if holon::runtime::sandbox::Support::probe().usable() {
        assert_eq!(got[1]["sandbox"], "workspace_write", "{}", got[1]);
    }
    assert!(out(2).contains("no-terminal"), "{}", out(2));
    let refused = &got[3];
    assert_eq!(refused["field"], "shell", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not a shell commands may run in"),
        "{refused}"
    );
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_command_reads_its_input_and_status_names_how_it_runs() {
    let r = rig(vec![
        Scripted::tools(
            "",
            &[(
                "ExecCommand",
                json!({"cmd": "read a; echo got:$a", "tty": true, "accepts_input": true,
                       "shell": "bash", "yield_time_ms": 50}),
            )],
        ),
        Scripted::text("started"),
        Scripted::text("answered"),
    ])
    .await;
    r.host
        .submit(prompt("ask me", Priority::Normal))
        .await
        .unwrap();
    let created = wait_event(&r.host, "task", |e| e.kind == "task_created").await;
    wait_event(&r.host, "brief", |e| e.kind == "brief_created").await;
    let task_id = created.payload["task"]["id"].as_str().unwrap().to_owned();
    // The promotion's handle (a preview: read as text).
    let promoted = results(&r.host)[0]["raw"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for part in [
        r#""tty":true"#,
        r#""login":false"#,
        r#"/bash""#,
        r#""cmd_digest":"sha256:"#,
    ] {
        assert!(promoted.contains(part), "{part} in {promoted}");
    }
    let receipt = r.host.task_input("main", &task_id, "yes\n").await.unwrap();
    assert!(receipt.accepted_input, "{receipt:?}");
    assert_eq!(receipt.input_target, "tty");
    let done = wait_event(&r.host, "the command's end", |e| {
        e.kind == "task_status_changed"
            && e.payload["task_id"] == task_id.as_str()
            && e.payload["to"] == "completed"
    })
    .await;
    let preview = done.payload["output_preview"].as_str().unwrap_or_default();
    assert!(preview.contains("got:yes"), "{preview}");
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_runs_its_items_in_order_and_answers_in_one_grouped_receipt() {
    let r = rig(vec![
        Scripted::tools(
            "",
            &[
                (
                    "ExecCommandBatch",
                    json!({"items": [
                        {"cmd": "echo one"},
                        {"cmd": "echo two >&2; exit 3"},
                        {"cmd": "sleep 20", "yield_time_ms": 200},
                        {"cmd": "echo $0", "shell": "bash"},
                    ]}),
                ),
                (
                    "ExecCommandBatch",
                    json!({"stop_on_failure": true, "items": [{"cmd": "false"}, {"cmd": "echo never"}]}),
                ),
                (
                    "ExecCommandBatch",
                    json!({"items": [{"cmd": "cat", "accepts_input": true}]}),
                ),
            ],
        ),
        Scripted::text("done"),
    ])
    .await;
    r.host
        .submit(prompt("check things", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "brief", |e| e.kind == "brief_created").await;
    let seen = serde_json::to_string(&r.provider.requests()[1].conversation).unwrap();
    for part in [
        "batch: 2 of 4 items completed",
        "--- [0] completed · echo one · exit 0",
        "one\\n",
        "--- [1] failed · echo two >&2; exit 3 · exit 3",
        "error: exit status 3",
        "two\\n",
        "--- [2] timed_out · sleep 20",
        "error: stopped after 200 ms (yield_time_ms, or the batch's 300 s)",
        "--- [3] completed · echo $0",
        "bash",
        "batch: 0 of 2 items completed",
        "--- [1] skipped · echo never",
        "batch items run without `accepts_input`",
    ] {
        assert!(seen.contains(part), "{part} in {seen}");
    }
    // The recorded result keeps the structure.
    let rx = r.host.store().read().unwrap();
    let runs: Vec<Value> = rx
        .list(holon::store::Keyed::ToolExecutions, "main")
        .unwrap();
    let first = runs
        .iter()
        .find(|x| x["result"]["items_total"] == 4)
        .expect("the first batch's record");
    let items = first["result"]["items"].as_array().unwrap();
    let statuses: Vec<&str> = items
        .iter()
        .map(|i| i["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed", "failed", "timed_out", "completed"]);
    assert_eq!(items[1]["exit_status"], 3);
    assert!(items[0]["duration_ms"].as_u64().is_some());
    assert_eq!(first["is_error"], true);
    // The timed-out item was stopped, not left running.
    let tasks: Vec<holon::model::task::TaskRecord> =
        rx.list(holon::store::Keyed::Tasks, "main").unwrap();
    assert!(tasks.iter().all(|t| t.status.is_terminal()), "{tasks:?}");
    assert!(
        !tasks
            .iter()
            .any(|t| t.summary.as_deref() == Some("echo never")),
        "a skipped item never ran"
    );
    assert_eq!(
        tasks.len(),
        5,
        "four, one, and none for the batch refused before running"
    );
    r.host.shutdown().await;
}

/// The results the model was given whole, in call order.
fn given(r: &super::runtime_core::Rig) -> Vec<Value> {
    use holon::model::usage::ConversationItem;
    let requests = r.provider.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.conversation
        .iter()
        .filter_map(|i| match i {
            ConversationItem::ToolResult { content, .. } => serde_json::from_str(content).ok(),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_is_kept_apart_and_a_background_writer_outlives_its_command() {
    let r = rig(vec![
        Scripted::tools(
            "",
            &[
                (
                    "ExecCommand",
                    json!({"cmd": "(sleep 1; echo late-err >&2; echo alive > bg.txt) & echo out-line; echo err-line >&2; exit 3"}),
                ),
                ("ExecCommand", json!({"cmd": "sleep 2; cat bg.txt"})),
            ],
        ),
        Scripted::text("done"),
    ])
    .await;
    r.host
        .submit(prompt("run them", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "brief", |e| e.kind == "brief_created").await;
    let got = given(&r);
    assert_eq!(got.len(), 2, "{got:?}");
    let first = &got[0];
    let combined = first["stdout_preview"].as_str().unwrap_or_default();
    assert!(
        combined.contains("out-line") && combined.contains("err-line"),
        "the combined output keeps both streams: {first}"
    );
    assert_eq!(first["stderr_preview"], "err-line\n", "{first}");
    assert_eq!(first["exit_status"], 3);
    assert!(
        first["duration_ms"].as_u64().unwrap_or(u64::MAX) < 900,
        "a background writer does not hold the result: {first}"
    );
    // The background process wrote to its stderr after its command and
    // holder ended, and lived on: it was not cut off by a closed pipe.
    assert_eq!(got[1]["stdout_preview"], "alive\n", "{:?}", got[1]);
    let output = std::fs::read_to_string(first["stdout_artifact"].as_str().unwrap()).unwrap();
    assert!(output.contains("late-err"), "{output}");
    let tail = std::fs::read_to_string(first["stderr_artifact"].as_str().unwrap()).unwrap();
    assert_eq!(tail, "err-line\nlate-err\n");
}
