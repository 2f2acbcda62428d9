//! The task tools: TaskStatus, TaskOutput, TaskInput, TaskStop, over the
//! command tasks ExecCommand promoted (and child agents' tasks).

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::exec::{load_task, wait_terminal, MAX_YIELD_MS};
use super::handler::{Gated, Reach, Tool};
use super::task_view::task_snapshot;
use super::{runtime_error, ToolEnv};
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::runtime::command_tasks::read_tail;
use crate::runtime::operator::StopHow;
use crate::runtime::tool_outcome::ToolOutcome;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct TaskIdArgs {
    task_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct TaskStopArgs {
    task_id: String,
    /// Kill it at once (KILL) instead of asking first (TERM, then KILL
    /// after a grace period): for a task that ignores being asked.
    #[serde(default, deserialize_with = "super::null_as_default")]
    force: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct TaskOutputArgs {
    task_id: String,
    /// Wait for the task to finish (bounded by timeout_ms).
    #[serde(default, deserialize_with = "super::null_as_default")]
    block: bool,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct TaskInputArgs {
    task_id: String,
    /// Text written to the task's stdin (include a newline to end a line).
    input: String,
}

/// The child projection of a child task (`null` if it cannot be read).
/// A child-agent task's supervision and the child's observability (null
/// for any other task).
fn supervision(env: &ToolEnv<'_>, t: &TaskRecord) -> (serde_json::Value, serde_json::Value) {
    let s = env.host.store().read().ok().and_then(|rx| {
        crate::runtime::agents::child_view::child_supervision(&rx, t)
            .ok()
            .flatten()
    });
    match s {
        Some(s) => (json!(s), json!(s.observability())),
        None => (serde_json::Value::Null, serde_json::Value::Null),
    }
}

pub(super) struct TaskStatus;

impl Tool for TaskStatus {
    const NAME: &'static str = "TaskStatus";
    const DESCRIPTION: &'static str = "Lifecycle status of a task (no output).";
    type Args = TaskIdArgs;

    fn gate(&self, _: &TaskIdArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: TaskIdArgs) -> ToolOutcome {
        match load_task(env, &args.task_id) {
            Ok(t) if t.kind == TaskKind::ChildAgentTask => {
                let (supervision, observability) = supervision(env, &t);
                let mut task = task_snapshot(&t);
                task["child_agent_id"] = supervision["child_agent_id"].clone();
                task["child_observability"] = observability;
                ToolOutcome::ok(json!({
                    "ok": true, "task": task, "child_supervision": supervision,
                }))
            }
            Ok(t) => ToolOutcome::ok(json!({ "ok": true, "task": task_snapshot(&t) })),
            Err(e) => e,
        }
    }
}

pub(super) struct TaskOutput;

impl Tool for TaskOutput {
    const NAME: &'static str = "TaskOutput";
    const DESCRIPTION: &'static str =
        "A bounded preview of a task's output; block=true waits for it to finish.";
    type Args = TaskOutputArgs;

    fn gate(&self, _: &TaskOutputArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, a: TaskOutputArgs) -> ToolOutcome {
        let task = if a.block {
            let timeout = a.timeout_ms.unwrap_or(30_000).min(MAX_YIELD_MS);
            wait_terminal(env, &a.task_id, Duration::from_millis(timeout)).await
        } else {
            load_task(env, &a.task_id)
        };
        match task {
            Ok(t) if t.kind == TaskKind::ChildAgentTask => {
                let (supervision, observability) = supervision(env, &t);
                ToolOutcome::ok(json!({
                    "ok": true,
                    "retrieval_status": if t.status.is_terminal() { "success" } else { "not_ready" },
                    "task": {
                        "task_id": t.id, "kind": t.kind, "status": t.status, "summary": t.summary,
                        "result": t.detail.child_result,
                        "child_agent_id": supervision["child_agent_id"],
                        "child_observability": observability,
                    },
                    "child_supervision": supervision,
                }))
            }
            Ok(t) => {
                let d = &t.detail;
                let path = d.output_path.as_deref().map(PathBuf::from);
                let max = env.host.config().tool_output.bytes(None);
                let (preview, _, cut) = path
                    .as_deref()
                    .map(|p| read_tail(p, max))
                    .unwrap_or_default();
                // The contract's minimum artifacts: path-only references
                // to the output the runtime keeps; `output_artifact`
                // indexes the combined output among them.
                let stderr = super::exec::StderrTail::of(d, max / 4);
                let artifacts = stderr.artifacts(path.as_deref());
                let output_artifact = path.as_ref().map(|_| 0);
                ToolOutcome::ok(json!({
                    "ok": true,
                    "retrieval_status": if t.status.is_terminal() { "success" } else { "not_ready" },
                    "task": {
                        "task_id": t.id, "kind": t.kind, "status": t.status, "summary": t.summary,
                        "output_preview": preview, "output_truncated": cut,
                        "stderr_preview": stderr.preview, "stderr_truncated": stderr.truncated,
                        "stderr_artifact": stderr.path,
                        "artifacts": artifacts, "output_artifact": output_artifact,
                        "output_path": path,
                        "result_summary": t.status.is_terminal().then_some(t.summary.clone()).flatten(),
                        "exit_status": d.exit_status,
                        "signal": d.signal,
                        "duration_ms": d.duration_ms,
                        "failure_artifact": t.failure_artifact,
                    }
                }))
            }
            Err(e) => e,
        }
    }
}

pub(super) struct TaskInput;

impl Tool for TaskInput {
    const NAME: &'static str = "TaskInput";
    const DESCRIPTION: &'static str = "Write input to a task started with accepts_input.";
    type Args = TaskInputArgs;

    /// The input goes to a command that already passed the gate.
    fn gate(&self, _: &TaskInputArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, a: TaskInputArgs) -> ToolOutcome {
        let host = env.host;
        match host.task_input(env.agent_id, &a.task_id, &a.input).await {
            // Refused (the task ended, or takes no input): a failed call,
            // its receipt saying why.
            Ok(r) => ToolOutcome {
                is_error: !r.accepted_input,
                ..ToolOutcome::ok(json!({ "ok": r.accepted_input, "receipt": r }))
            },
            Err(e) => runtime_error(e),
        }
    }
}

pub(super) struct TaskStop;

impl Tool for TaskStop {
    const NAME: &'static str = "TaskStop";
    const DESCRIPTION: &'static str =
        "Stop a running task (TERM, then KILL after a grace period; force=true kills it at once).";
    type Args = TaskStopArgs;

    fn gate(&self, _: &TaskStopArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, a: TaskStopArgs) -> ToolOutcome {
        let host = env.host;
        let stop = match a.force {
            true => StopHow::Force,
            false => StopHow::Ask,
        };
        // A command that already ended has nothing to stop: said so, not a
        // stop pretended. (A child's task goes on to its cleanup, which an
        // ended one may still need.)
        if let Some(ended) = load_task(env, &a.task_id)
            .ok()
            .and_then(|t| ended_by_itself(&t))
        {
            return ended;
        }
        match host.stop_task_as(env.agent_id, &a.task_id, stop).await {
            Ok(t) => match ended_by_itself(&t) {
                // It ended on its own between the look and the stop.
                Some(ended) if t.status != crate::model::task::TaskStatus::Cancelled => ended,
                _ => ToolOutcome::ok(json!({
                    "ok": true,
                    "stop_requested": true,
                    "force_stop_requested": a.force,
                    "task": task_snapshot(&t),
                })),
            },
            Err(e) => runtime_error(e),
        }
    }
}

/// TaskStop's answer for a command that had already ended (not stopped
/// by this call): nothing was stopped, and how it ended.
fn ended_by_itself(t: &TaskRecord) -> Option<ToolOutcome> {
    if t.kind != TaskKind::CommandTask || !t.status.is_terminal() {
        return None;
    }
    let status = serde_json::to_value(t.status).unwrap_or_default();
    Some(ToolOutcome::ok(json!({
        "ok": true,
        "stop_requested": false,
        "force_stop_requested": false,
        "note": format!(
            "the task had already ended ({}); nothing was stopped",
            status.as_str().unwrap_or("ended")
        ),
        "task": task_snapshot(t),
    })))
}

#[cfg(test)]
mod snapshot_tests {
    use super::*;
    use crate::model::task::{TaskKind, TaskStatus, WaitPolicy};

    fn command(cmd: &str, workdir: &str) -> TaskRecord {
        TaskRecord {
            id: "task_1".into(),
            agent_id: "main".into(),
            kind: TaskKind::CommandTask,
            status: TaskStatus::Running,
            wait_policy: WaitPolicy::Background,
            work_item_id: None,
            parent_message_id: None,
            summary: None,
            detail: crate::model::task::TaskDetail::from_value(
                json!({"cmd": cmd, "workdir": workdir, "output_path": "/x/out"}),
            ),
            created_at: "t0".into(),
            updated_at: "t0".into(),
            failure_artifact: None,
        }
    }

    #[test]
    fn a_command_snapshot_carries_its_identity_and_no_output() {
        let s = task_snapshot(&command("cargo test", "."));
        let c = &s["command"];
        assert_eq!(c["cmd"], "cargo test");
        assert_eq!(
            (
                c["shell"].as_str(),
                c["login"].as_bool(),
                c["tty"].as_bool()
            ),
            (Some("/bin/sh"), Some(false), Some(false))
        );
        let digest = c["cmd_digest"].as_str().unwrap_or_default().to_owned();
        assert!(
            digest.starts_with("sha256:") && digest.len() == 39,
            "{digest}"
        );
        // The same command in the same place: the same key; elsewhere not.
        let again = task_snapshot(&command("cargo test", "."));
        assert_eq!(again["command"]["cmd_digest"], digest.as_str());
        let elsewhere = task_snapshot(&command("cargo test", "crates/x"));
        assert_ne!(elsewhere["command"]["cmd_digest"], digest.as_str());
        assert!(s.get("stdout_preview").is_none() && c.get("output_preview").is_none());
    }
}
