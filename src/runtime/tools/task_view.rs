//! What the task tools show of a task (pure): its lifecycle snapshot,
//! and a command's identity with the digest two equal commands share.

use serde_json::{json, Value};

use crate::model::task::{TaskDetail, TaskRecord};

/// What TaskStatus shows of a task: its lifecycle, and for a command its
/// identity (the command, where, and how it runs: `/bin/sh -c`, not a
/// login shell, no terminal) with `cmd_digest`, a key two equal commands
/// share; never its output. A failed task says why (`failure_artifact`).
pub(super) fn task_snapshot(t: &TaskRecord) -> serde_json::Value {
    let d = &t.detail;
    let command = match (t.kind, identity(d)) {
        (crate::model::task::TaskKind::CommandTask, Some(mut identity)) => {
            identity["cmd_digest"] = json!(cmd_digest(&identity));
            identity["output_path"] = json!(d.output_path);
            identity["accepts_input"] = json!(d.accepts_input);
            identity["terminal_reentry"] = json!(d.terminal_reentry);
            identity
        }
        _ => Value::Null,
    };
    json!({
        "task_id": t.id, "kind": t.kind, "status": t.status, "summary": t.summary,
        "command": command,
        "exit_status": d.exit_status, "signal": d.signal, "duration_ms": d.duration_ms,
        "work_item_id": t.work_item_id,
        "failure_artifact": t.failure_artifact,
        "created_at": t.created_at, "updated_at": t.updated_at,
    })
}

/// A command task's identity from its detail: the command, its working
/// directory and how it runs (records from before `shell`, `login` and
/// `tty` ran `/bin/sh -c` without a terminal).
pub(super) fn identity(d: &TaskDetail) -> Option<Value> {
    let shell = d
        .shell
        .as_deref()
        .unwrap_or(crate::runtime::command_tasks::DEFAULT_SHELL);
    Some(json!({
        "cmd": d.cmd.as_ref()?, "workdir": d.workdir,
        "shell": shell, "login": d.login.unwrap_or(false), "tty": d.tty.unwrap_or(false),
    }))
}

/// `sha256:` and the first 16 bytes (hex) of the digest of a command's
/// identity (`identity`: the command, its working directory and how it
/// runs; its other keys are ignored).
pub(super) fn cmd_digest(identity: &Value) -> String {
    use sha2::{Digest, Sha256};
    let keyed = json!({
        "cmd": identity["cmd"], "workdir": identity["workdir"], "shell": identity["shell"],
        "login": identity["login"], "tty": identity["tty"],
    });
    let digest = Sha256::digest(keyed.to_string().as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
