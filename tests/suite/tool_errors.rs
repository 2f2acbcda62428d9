//! Every tool's failure reaches the model as the one error envelope, named
//! by its tool, and stays structured where it is kept: the transcript's
//! `error` and the `tool_executed` event's `tool_error`.

use serde_json::{json, Value};

use super::approvals::wait_requests;
use super::mcp::results;
use super::runtime_core::{events, kind, prompt, rig, wait_event};
use holon::model::message::Priority;
use holon::runtime::provider::scripted::Scripted;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tools_error_is_the_envelope_named_by_its_tool() {
    let mut names: Vec<String> = holon::runtime::tools::specs()
        .into_iter()
        .map(|s| s.name)
        .collect();
    names.push("NoSuchTool".into());
    // Arguments no tool takes: a string where an object belongs.
    let calls: Vec<(&str, Value)> = names
        .iter()
        .map(|n| (n.as_str(), json!("not an object")))
        .collect();
    let r = rig(vec![
        Scripted::tools("Trying every tool wrongly.", &calls),
        Scripted::text("All refused."),
    ])
    .await;
    r.host.submit(prompt("go", Priority::Normal)).await.unwrap();
    wait_event(&r.host, "the turn's end", kind("turn_terminal")).await;
    wait_requests(&r.provider, 2).await;

    let told = results(&r.provider, 1);
    assert_eq!(told.len(), names.len());
    for (name, envelope, is_error) in &told {
        assert!(is_error, "{name}: {envelope}");
        assert_eq!(envelope["ok"], false, "{name}: {envelope}");
        assert_eq!(envelope["tool_name"], name.as_str(), "{envelope}");
        for field in ["kind", "message", "hint", "field", "retryable", "details"] {
            assert!(
                envelope.get(field).is_some(),
                "{name} lacks {field}: {envelope}"
            );
        }
        assert!(envelope["message"].as_str().is_some_and(|m| !m.is_empty()));
    }

    // Kept structured: the event's tool_error and the transcript's error.
    let executed: Vec<Value> = events(&r.host)
        .into_iter()
        .filter(|e| e.kind == "tool_executed")
        .map(|e| e.payload)
        .collect();
    assert_eq!(executed.len(), names.len());
    for e in &executed {
        assert_eq!(e["tool_error"]["tool_name"], e["tool_name"], "{e}");
        assert_eq!(e["tool_error"]["ok"], false, "{e}");
    }
    let page: holon::protocol::TranscriptPage = holon::protocol::call_typed(
        &r.host,
        holon::protocol::Request::AgentTranscript {
            agent_id: "main".into(),
            limit: Some(1000),
        },
    )
    .await
    .unwrap();
    let errors = page
        .entries
        .iter()
        .filter(|e| {
            matches!(&e.body, holon::model::transcript::TranscriptBody::ToolResult { error: Some(err), .. } if err["ok"] == false)
        })
        .count();
    assert_eq!(errors, names.len());
}

/// A command task that exits with an error carries a failure artifact of
/// category `task`, in its record as `task.status` and `task.output` give
/// it; one that succeeds carries none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_carries_its_failure_artifact() {
    use holon::model::task::TaskRecord;
    use holon::protocol::{call_typed, Request, TaskOutput};
    let r = rig(Vec::new()).await;
    let run = |cmd: &str| Request::TaskRun {
        agent_id: "main".into(),
        cmd: cmd.into(),
    };
    let failing: TaskRecord = call_typed(&r.host, run("echo broken >&2; exit 3"))
        .await
        .unwrap();
    let fine: TaskRecord = call_typed(&r.host, run("true")).await.unwrap();
    let ended = |id: String| {
        let host = r.host.clone();
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
            loop {
                let req = Request::TaskOutput {
                    agent_id: "main".into(),
                    task_id: id.clone(),
                    max_bytes: None,
                };
                let out: TaskOutput = call_typed(&host, req).await.unwrap();
                if out.task.status.is_terminal() {
                    return out.task;
                }
                assert!(std::time::Instant::now() < deadline, "{:?}", out.task);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    let failed = ended(failing.id.clone()).await;
    let a = failed.failure_artifact.as_deref().expect("an artifact");
    assert_eq!(serde_json::to_value(a.category).unwrap(), "task");
    assert_eq!(a.kind, "exit_status");
    assert_eq!(a.exit_status, Some(3));
    assert_eq!(a.task_id.as_deref(), Some(failing.id.as_str()));
    assert_eq!(
        a.metadata.get("cmd").map(String::as_str),
        Some("echo broken >&2; exit 3")
    );
    assert!(ended(fine.id.clone()).await.failure_artifact.is_none());
}
