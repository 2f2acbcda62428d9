//! ExecCommandBatch: a few commands run one after another, each as a
//! command task under the same sandbox and gate as ExecCommand, answered in
//! one grouped receipt. An item gets no terminal and no input, and is never
//! promoted: one that outlives its `yield_time_ms` is stopped and reported
//! `timed_out`. The recorded result keeps every item's status, command,
//! bounded output, truncation, duration and error; the model is shown a
//! compact text receipt with each item's boundary visible.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::exec::{
    confinement, execution_dirs, launch_of, load_task, resolve_workdir, truncate_tail,
    wait_terminal, DEFAULT_YIELD_MS, MAX_YIELD_MS,
};
use super::handler::{Gated, Reach, Tool};
use super::host::ToolHost;
use super::{runtime_error, ToolEnv};
use crate::model::approval::Action;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::runtime::command_tasks::{read_tail, CommandSpec, TaskOrigin};
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::operator::StopHow;
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

/// Items one batch may hold.
pub const MAX_ITEMS: usize = 20;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct BatchArgs {
    /// The commands, run in order (at most 20).
    items: Vec<BatchItem>,
    /// Stop at the first item that does not complete; the rest are
    /// reported skipped (default false: every item runs).
    #[serde(default, deserialize_with = "super::null_as_default")]
    stop_on_failure: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct BatchItem {
    /// The shell command.
    cmd: String,
    /// Working directory, relative to the execution root.
    #[serde(default)]
    workdir: Option<String>,
    /// One of the system's shells (default /bin/sh).
    #[serde(default)]
    shell: Option<String>,
    /// Run it in a login shell.
    #[serde(default, deserialize_with = "super::null_as_default")]
    login: bool,
    /// How long it may run before it is stopped (default 10000).
    #[serde(default)]
    yield_time_ms: Option<u64>,
    /// Bound on its output, in estimated tokens (default: the call's
    /// budget shared among the items).
    #[serde(default)]
    max_output_tokens: Option<u64>,
    /// Refused: items get no terminal (use ExecCommand).
    #[serde(default)]
    #[schemars(skip)]
    tty: Option<Value>,
    /// Refused: items take no input (use ExecCommand).
    #[serde(default)]
    #[schemars(skip)]
    accepts_input: Option<Value>,
    /// Refused: items run inside the sandbox (use ExecCommand).
    #[serde(default)]
    #[schemars(skip)]
    escalate: Option<Value>,
}

/// The arguments checked before anything runs: every item must be one a
/// batch can run.
fn check(a: &BatchArgs) -> Result<(), ToolOutcome> {
    let refuse = |message: String, field: String| {
        tool_error(
            ToolErrorKind::InvalidArguments,
            message,
            Some("use ExecCommand for a command that needs a terminal, input, or to leave the sandbox"),
            Some(&field),
            false,
        )
    };
    if a.items.is_empty() || a.items.len() > MAX_ITEMS {
        return Err(refuse(
            format!(
                "a batch holds 1 to {MAX_ITEMS} items, not {}",
                a.items.len()
            ),
            "items".into(),
        ));
    }
    for (i, item) in a.items.iter().enumerate() {
        if item.cmd.trim().is_empty() {
            return Err(refuse(
                format!("item {i}: cmd is empty"),
                format!("items[{i}].cmd"),
            ));
        }
        for (name, value) in [
            ("tty", &item.tty),
            ("accepts_input", &item.accepts_input),
            ("escalate", &item.escalate),
        ] {
            if value
                .as_ref()
                .is_some_and(|v| !v.is_null() && *v != json!(false))
            {
                return Err(refuse(
                    format!("item {i}: batch items run without `{name}`"),
                    format!("items[{i}].{name}"),
                ));
            }
        }
    }
    Ok(())
}

/// One item's part of the receipt.
fn item_result(i: usize, cmd: &str, status: &str) -> Value {
    json!({ "index": i, "cmd": cmd, "status": status })
}

async fn run(env: &ToolEnv<'_>, a: BatchArgs) -> ToolOutcome {
    if let Err(refused) = check(&a) {
        return refused;
    }
    let (root, cwd, snap) = match execution_dirs(env) {
        Ok(dirs) => dirs,
        Err(e) => return e,
    };
    let sandbox = match confinement(env, &snap, false, None) {
        Ok(c) => c,
        Err(e) => return e,
    };
    // One budget for the whole receipt: the call's cap, shared out.
    let budget = env.host.config().tool_output;
    let mut room = budget.bytes(Some(u64::MAX));
    let share = budget.bytes(None) / a.items.len() as u64;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(MAX_YIELD_MS);
    let cancel = turn_cancel(env);
    let host = env.host;
    let mut items = Vec::with_capacity(a.items.len());
    // Once set, the rest are skipped; with the reason, when there is one
    // to tell (after a failure, the failure says it).
    let mut skipping: Option<Option<&str>> = None;
    for (i, item) in a.items.iter().enumerate() {
        if cancel.as_ref().is_some_and(|c| c.reason().is_some()) {
            skipping = Some(Some("the turn was cancelled"));
        }
        if tokio::time::Instant::now() >= deadline {
            skipping = Some(Some("the batch ran out of time (300 s in all)"));
        }
        if let Some(why) = skipping {
            let mut r = item_result(i, &item.cmd, "skipped");
            if let Some(why) = why {
                r["error"] = json!(why);
            }
            items.push(r);
            continue;
        }
        let want = item
            .max_output_tokens
            .map_or(share, |t| budget.bytes(Some(t)));
        let max_bytes = want.min(room);
        let run = Item {
            env,
            host,
            dirs: (&root, &cwd),
            sandbox: &sandbox,
            max_bytes,
            deadline,
            cancel: cancel.as_deref(),
        };
        let mut result = match run.run(item).await {
            Ok(r) => r,
            Err(e) => {
                let mut r = item_result(i, &item.cmd, "error");
                r["error"] = e.content;
                r
            }
        };
        result["index"] = json!(i);
        room = room.saturating_sub(
            result["output_preview"]
                .as_str()
                .map_or(0, |p| p.len() as u64),
        );
        if a.stop_on_failure && result["status"] != "completed" {
            skipping = Some(None);
        }
        items.push(result);
    }
    let completed = items.iter().filter(|r| r["status"] == "completed").count();
    let receipt = receipt(&items);
    let all_ok = completed == items.len();
    ToolOutcome {
        is_error: !all_ok,
        model_text: Some(receipt),
        ..ToolOutcome::ok(json!({
            "ok": all_ok, "disposition": "batch", "items_total": items.len(),
            "items_completed": completed, "items": items,
            "sandbox": sandbox.as_ref().map_or("off", |c| c.mode.as_str()),
        }))
    }
}

/// The running turn's cancellation, when this call runs in one (a call
/// run after an approval runs outside any turn).
fn turn_cancel(env: &ToolEnv<'_>) -> Option<std::sync::Arc<TurnCancel>> {
    if env.granted {
        return None;
    }
    env.host.turn_cancel(env.agent_id)
}

/// What one item runs with.
struct Item<'a> {
    env: &'a ToolEnv<'a>,
    host: &'a dyn ToolHost,
    dirs: (&'a std::path::Path, &'a std::path::Path),
    sandbox: &'a Option<crate::runtime::sandbox::Confine>,
    max_bytes: u64,
    /// When the whole batch must be done.
    deadline: tokio::time::Instant,
    cancel: Option<&'a TurnCancel>,
}

impl Item<'_> {
    /// Run one item to its end (stopped at its yield time, the batch's
    /// deadline, or the turn's cancellation).
    async fn run(&self, item: &BatchItem) -> Result<Value, ToolOutcome> {
        let env = self.env;
        let (root, cwd) = self.dirs;
        let workdir = resolve_workdir(root, cwd, item.workdir.as_deref())?;
        let launch = launch_of(item.shell.as_deref(), item.login, false)?;
        let spec = CommandSpec {
            cmd: item.cmd.clone(),
            workdir,
            accepts_input: false,
            launch,
            sandbox: self.sandbox.clone(),
        };
        let origin = TaskOrigin::Agent {
            parent_message_id: Some(env.message_id.to_owned()),
            work_item_id: env.turn_work_item_id.clone(),
        };
        let task = self
            .host
            .start_command_task(env.agent_id, spec, origin)
            .await
            .map_err(runtime_error)?;
        let yield_ms = item
            .yield_time_ms
            .unwrap_or(DEFAULT_YIELD_MS)
            .min(MAX_YIELD_MS);
        let until =
            (tokio::time::Instant::now() + Duration::from_millis(yield_ms)).min(self.deadline);
        let wait = wait_terminal(env, &task.id, until - tokio::time::Instant::now());
        let waited = match self.cancel {
            Some(cancel) => tokio::select! {
                t = wait => t,
                _ = cancel.cancelled() => load_task(env, &task.id),
            },
            None => wait.await,
        };
        let done = waited.ok().filter(|t| t.status.is_terminal());
        match done {
            Some(task) => Ok(outcome_of(&task, None, self.max_bytes)),
            None => Ok(self.stop(&task.id, yield_ms).await),
        }
    }

    /// Stop an item that outlived its time, and wait for its end. One
    /// whose end does not come is handed over: its result re-enters the
    /// agent when it ends, and the receipt says so.
    async fn stop(&self, task_id: &str, yield_ms: u64) -> Value {
        let env = self.env;
        let why = match self.cancel.and_then(|c| c.reason()) {
            Some(_) => "stopped: the turn was cancelled".to_owned(),
            None => format!("stopped after {yield_ms} ms (yield_time_ms, or the batch's 300 s)"),
        };
        let stopped = self
            .host
            .stop_task_as(env.agent_id, task_id, StopHow::Ask)
            .await;
        let grace = env.host.config().stop_grace + Duration::from_secs(2);
        let ended = match stopped {
            Ok(_) => wait_terminal(env, task_id, grace).await.ok(),
            Err(_) => None,
        };
        match ended.filter(|t| t.status.is_terminal()) {
            Some(task) => outcome_of(&task, Some(why), self.max_bytes),
            None => {
                let _ = self.host.promote_task(env.agent_id, task_id).await;
                json!({
                    "cmd": load_task(env, task_id).ok().and_then(|t| t.summary),
                    "status": "stop_pending", "task_id": task_id,
                    "error": format!("{why}, but it has not ended yet; its result will be \
                                      delivered to you when it does"),
                })
            }
        }
    }
}

/// What the receipt says of a finished item (`stopped`: why it was cut
/// short, when it was).
fn outcome_of(task: &TaskRecord, stopped: Option<String>, max_bytes: u64) -> Value {
    let d = &task.detail;
    let output = d.output_path.as_deref().map(std::path::PathBuf::from);
    let (text, _, cut) = output
        .as_deref()
        .map(|p| read_tail(p, max_bytes + 1))
        .unwrap_or_default();
    let (preview, truncated) = truncate_tail(&text, max_bytes);
    let status = match (&stopped, task.status) {
        (Some(_), _) => "timed_out",
        (None, TaskStatus::Completed) => "completed",
        (None, _) => "failed",
    };
    let mut r = json!({
        "cmd": d.cmd, "status": status, "task_id": task.id, "exit_status": d.exit_status,
        "duration_ms": d.duration_ms, "output_preview": preview, "truncated": truncated || cut,
    });
    if let Some(why) = stopped {
        r["error"] = json!(why);
    } else if status == "failed" {
        r["error"] = json!(task.summary);
    }
    r
}

/// The grouped text the model reads: a line per item, its output below.
fn receipt(items: &[Value]) -> String {
    let done = items.iter().filter(|r| r["status"] == "completed").count();
    let mut out = format!("batch: {done} of {} items completed\n", items.len());
    for r in items {
        let i = r["index"].as_u64().unwrap_or(0);
        let mut head = format!(
            "--- [{i}] {} · {}",
            r["status"].as_str().unwrap_or(""),
            r["cmd"].as_str().unwrap_or("")
        );
        if let Some(code) = r["exit_status"].as_i64() {
            head.push_str(&format!(" · exit {code}"));
        }
        if let Some(ms) = r["duration_ms"].as_u64() {
            head.push_str(&format!(" · {ms} ms"));
        }
        if r["truncated"] == true {
            head.push_str(" · output cut to its end");
        }
        out.push_str(&head);
        out.push('\n');
        let error = match &r["error"] {
            Value::String(s) => Some(s.clone()),
            Value::Object(e) => e.get("message").and_then(|m| m.as_str()).map(str::to_owned),
            _ => None,
        };
        if let Some(e) = error {
            out.push_str(&format!("error: {e}\n"));
        }
        if let Some(text) = r["output_preview"].as_str().filter(|t| !t.is_empty()) {
            out.push_str(text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

pub(super) struct ExecCommandBatch;

impl Tool for ExecCommandBatch {
    const NAME: &'static str = "ExecCommandBatch";
    const DESCRIPTION: &'static str = "Run a few short commands one after another and get all \
        their results in one receipt. Each item runs like ExecCommand (same sandbox and approval), \
        but without a terminal or input and never in the background: an item still running after \
        its yield_time_ms is stopped and reported timed_out. Use ExecCommand for long or \
        interactive commands.";
    type Args = BatchArgs;

    fn gate(&self, args: &BatchArgs) -> Gated {
        // A login shell's item is judged as its whole invocation (its
        // profile runs first), as ExecCommand's is.
        let judged = args.items.iter().map(|i| match i.login {
            true => format!("{} -l -c {}", i.shell.as_deref().unwrap_or("sh"), i.cmd),
            false => i.cmd.clone(),
        });
        Gated::By(Action::Commands(judged.collect()))
    }

    fn reach(&self) -> Reach {
        Reach::Process
    }

    async fn call(&self, env: &ToolEnv<'_>, args: BatchArgs) -> ToolOutcome {
        run(env, args).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(items: Value) -> BatchArgs {
        serde_json::from_value(json!({ "items": items })).unwrap()
    }

    #[test]
    fn a_batch_refuses_items_it_cannot_run_before_anything_runs() {
        let field = |a: &BatchArgs| check(a).err().map(|e| e.content["field"].clone());
        assert_eq!(field(&args(json!([]))), Some(json!("items")));
        assert_eq!(
            field(&args(json!([{"cmd": "ls"}, {"cmd": " "}]))),
            Some(json!("items[1].cmd"))
        );
        assert_eq!(
            field(&args(json!([{"cmd": "ls", "tty": true}]))),
            Some(json!("items[0].tty"))
        );
        assert_eq!(
            field(&args(json!([{"cmd": "ls", "accepts_input": true}]))),
            Some(json!("items[0].accepts_input"))
        );
        assert_eq!(
            field(&args(json!([{"cmd": "ls", "escalate": true}]))),
            Some(json!("items[0].escalate"))
        );
        assert_eq!(
            field(&args(
                json!([{"cmd": "ls", "tty": false, "accepts_input": null}])
            )),
            None
        );
        let many: Vec<Value> = (0..=MAX_ITEMS).map(|_| json!({"cmd": "true"})).collect();
        assert_eq!(field(&args(json!(many))), Some(json!("items")));
    }

    #[test]
    fn the_receipt_keeps_each_items_boundary() {
        let items = vec![
            json!({"index": 0, "cmd": "echo a", "status": "completed", "exit_status": 0,
                   "duration_ms": 3, "output_preview": "a\n", "truncated": false}),
            json!({"index": 1, "cmd": "false", "status": "failed", "exit_status": 1,
                   "duration_ms": 2, "output_preview": "", "truncated": false,
                   "error": "exit status 1"}),
            json!({"index": 2, "cmd": "ls", "status": "skipped"}),
        ];
        assert_eq!(
            receipt(&items),
            "batch: 1 of 3 items completed\n\
             --- [0] completed · echo a · exit 0 · 3 ms\na\n\
             --- [1] failed · false · exit 1 · 2 ms\nerror: exit status 1\n\
             --- [2] skipped · ls\n"
        );
    }

    #[test]
    fn a_batch_is_gated_as_its_commands() {
        let a = args(json!([{"cmd": "git status"}, {"cmd": "cargo build"}]));
        assert_eq!(
            ExecCommandBatch.gate(&a),
            Gated::By(Action::Commands(vec![
                "git status".into(),
                "cargo build".into()
            ]))
        );
    }
}
