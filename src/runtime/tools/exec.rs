//! ExecCommand: run a command; if it outlives `yield_time_ms` it is
//! promoted to a managed command task whose terminal result re-enters the
//! model (the task tools are `tasks`). Commands run in the agent's active execution root (the
//! workspace checkout, a managed worktree, or its home): by default in the
//! agent's cwd; a `workdir` is relative to the root and may not leave it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::{runtime_error, ToolEnv};
use crate::model::approval::Action;
use crate::model::sandbox::SandboxMode;
use crate::model::task::{CommandOrigin, TaskDetail, TaskRecord};
use crate::model::workspace::{ExecutionProfile, ExecutionSnapshot};
use crate::runtime::command_tasks::{read_tail, CommandSpec, Launch, TaskOrigin};
use crate::runtime::sandbox::Confine;
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};
use crate::store::{Index, Keyed};

pub const DEFAULT_YIELD_MS: u64 = 10_000;
pub const MAX_YIELD_MS: u64 = 300_000;
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum DuplicatePolicy {
    /// Return the running task with the same command instead of starting it again.
    #[default]
    ReuseRunning,
    StartNew,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ExecArgs {
    /// The shell command (run with `SHELL -c`).
    cmd: String,
    /// The shell that runs it: one of the system's shells (/etc/shells),
    /// by name or path (default /bin/sh).
    #[serde(default)]
    shell: Option<String>,
    /// Run it in a login shell (`-l`: the shell reads its profile first).
    #[serde(default, deserialize_with = "super::null_as_default")]
    login: bool,
    /// Run it on a pseudo-terminal of its own (for programs that need a
    /// terminal; their output then holds terminal control sequences).
    #[serde(default, deserialize_with = "super::null_as_default")]
    tty: bool,
    /// Working directory, relative to the execution root (default: the
    /// agent's current directory).
    #[serde(default)]
    workdir: Option<String>,
    /// How long to wait for completion before the command continues as a
    /// background task (default 10000).
    #[serde(default)]
    yield_time_ms: Option<u64>,
    /// Bound on the output returned, in estimated tokens (default 8000,
    /// at most the runtime's cap).
    #[serde(default)]
    max_output_tokens: Option<u64>,
    /// Keep stdin open for TaskInput.
    #[serde(default, deserialize_with = "super::null_as_default")]
    accepts_input: bool,
    #[serde(default, deserialize_with = "super::null_as_default")]
    duplicate_policy: DuplicatePolicy,
    /// Run outside the sandbox (writes anywhere, network on). Asks the
    /// operator first, durably; give a `justification`.
    #[serde(default, deserialize_with = "super::null_as_default")]
    escalate: bool,
    /// Why the command must leave the sandbox (shown to the operator).
    #[serde(default)]
    justification: Option<String>,
}

pub(super) fn truncate_tail(s: &str, max_bytes: u64) -> (String, bool) {
    let max = max_bytes as usize;
    if s.len() <= max {
        return (s.to_owned(), false);
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    (format!("…{}", &s[start..]), true)
}

/// The command's directory: the agent's cwd by default; else `workdir`,
/// relative to the root (or absolute inside it), never leading out.
pub(super) fn resolve_workdir(
    root: &Path,
    cwd: &Path,
    workdir: Option<&str>,
) -> Result<PathBuf, ToolOutcome> {
    let Some(w) = workdir.filter(|w| !w.trim().is_empty()) else {
        return Ok(cwd.to_path_buf());
    };
    let refused = |message: String| {
        tool_error(
            ToolErrorKind::InvalidArguments,
            message,
            Some("use a path inside the execution root"),
            Some("workdir"),
            false,
        )
    };
    let canon_root = root
        .canonicalize()
        .map_err(|e| refused(format!("execution root {}: {e}", root.display())))?;
    // An absolute path inside the root is taken as the same place,
    // relative to it.
    let rel = match Path::new(w)
        .strip_prefix(&canon_root)
        .or(Path::new(w).strip_prefix(root))
    {
        Ok(rel) => rel.display().to_string(),
        Err(_) => w.to_owned(),
    };
    crate::runtime::workspace::resolve_dir_in_root(&canon_root, &rel)
        .map_err(|why| refused(why.message(w, &canon_root)))
}

/// The active execution root and cwd; the agent home is created on
/// demand, a workspace root that vanished is an error the model can read.
pub(super) fn execution_dirs(
    env: &ToolEnv<'_>,
) -> Result<(PathBuf, PathBuf, ExecutionSnapshot), ToolOutcome> {
    let snap = env.host.execution_of(env.agent_id).map_err(runtime_error)?;
    let (root, cwd) = (
        PathBuf::from(&snap.execution_root),
        PathBuf::from(&snap.cwd),
    );
    if snap.workspace_id == crate::model::workspace::AGENT_HOME_ID {
        if let Err(e) = std::fs::create_dir_all(&root) {
            return Err(tool_error(
                ToolErrorKind::Failed,
                format!("cannot create {}: {e}", root.display()),
                None,
                None,
                true,
            ));
        }
    } else if !root.is_dir() {
        return Err(tool_error(
            ToolErrorKind::Failed,
            format!("the execution root {} no longer exists", root.display()),
            Some("UseWorkspace with workspace_id = \"agent_home\" or another workspace"),
            None,
            false,
        ));
    }
    let cwd = if cwd.is_dir() { cwd } else { root.clone() };
    Ok((root, cwd, snap))
}

/// How the agent's next command is confined: `None` when the policy's
/// sandbox is `off`, or when this kernel cannot sandbox and the policy
/// does not require it (then it runs as the operator's user, and the
/// snapshot says so); refused when it requires it.
///
/// An `escalate` call reaches here only once the operator granted it
/// (every mode but `never` asks first); under `never` it is refused.
pub(super) fn confinement(
    env: &ToolEnv<'_>,
    snap: &ExecutionSnapshot,
    escalate: bool,
    justification: Option<&str>,
) -> Result<Option<Confine>, ToolOutcome> {
    let policy = &snap.policy;
    if policy.sandbox_mode() == SandboxMode::Off {
        return Ok(None);
    }
    if escalate && policy.backend == ExecutionProfile::Sandboxed {
        if justification.is_none_or(|j| j.trim().is_empty()) {
            return Err(tool_error(
                ToolErrorKind::InvalidArguments,
                "escalate needs a justification: why the command must run outside the sandbox",
                Some("say in `justification` what it must reach and why"),
                Some("justification"),
                false,
            ));
        }
        if policy.approval.approval == crate::model::approval::Approval::Never {
            return Err(tool_error(
                ToolErrorKind::Failed,
                "refused: this workspace's approval mode is `never`, so nothing runs outside \
                 the sandbox and no one is asked",
                Some("do it inside the sandbox, or tell the operator what you need"),
                Some("escalate"),
                false,
            ));
        }
        // Every other mode asked the operator first; a call that reaches
        // here unasked saw no sandbox when it was checked (the policy
        // changed since): it does not leave one now.
        if !env.granted {
            return Err(tool_error(
                ToolErrorKind::Failed,
                "not run: the sandbox came on after this call was checked; nothing ran",
                Some("call it again: leaving the sandbox asks the operator"),
                Some("escalate"),
                true,
            ));
        }
        return Ok(None);
    }
    if policy.backend != ExecutionProfile::Sandboxed {
        if !env.host.config().sandbox_required {
            return Ok(None);
        }
        let why = policy
            .sandbox_note
            .as_deref()
            .unwrap_or("the kernel cannot sandbox");
        return Err(tool_error(
            ToolErrorKind::Failed,
            format!(
                "commands are refused: the policy requires a sandbox (`sandbox_required = \
                 true`) and {why}"
            ),
            Some("tell the operator; nothing else can run a command here"),
            None,
            false,
        ));
    }
    Ok(Some(Confine {
        mode: policy.sandbox_mode(),
        network: policy.network_mode(),
        execution_root: PathBuf::from(&snap.execution_root),
        agent_home: env.host.agent_home(env.agent_id),
        unix_sockets: env.host.config().unix_sockets.clone(),
        root_pin: snap.root_pin.clone(),
        extra_writable: Vec::new(),
    }))
}

use super::task_view::{cmd_digest, identity, task_snapshot};

pub(super) fn load_task(env: &ToolEnv<'_>, task_id: &str) -> Result<TaskRecord, ToolOutcome> {
    match env
        .host
        .store()
        .read()
        .and_then(|rx| rx.get::<TaskRecord>(Keyed::Tasks, env.agent_id, task_id))
    {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(runtime_error(crate::runtime::RuntimeError::UnknownTask {
            task_id: task_id.to_owned(),
        })),
        Err(e) => Err(tool_error(
            ToolErrorKind::Failed,
            e.to_string(),
            None,
            None,
            true,
        )),
    }
}

/// Wait until the task is terminal or `timeout` passes; returns the record.
pub(super) async fn wait_terminal(
    env: &ToolEnv<'_>,
    task_id: &str,
    timeout: Duration,
) -> Result<TaskRecord, ToolOutcome> {
    let mut events = env.host.store().subscribe();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let task = load_task(env, task_id)?;
        if task.status.is_terminal() {
            return Ok(task);
        }
        // Woken by any committed event (a lagged receiver just re-reads).
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) => return load_task(env, task_id),
            Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => {
                return load_task(env, task_id)
            }
            Ok(_) => {}
        }
    }
}

async fn exec(env: &ToolEnv<'_>, a: ExecArgs) -> ToolOutcome {
    if a.cmd.trim().is_empty() {
        return tool_error(
            ToolErrorKind::InvalidArguments,
            "cmd is empty",
            None,
            Some("cmd"),
            false,
        );
    }
    let (root, cwd, snap) = match execution_dirs(env) {
        Ok(dirs) => dirs,
        Err(e) => return e,
    };
    let workdir = match resolve_workdir(&root, &cwd, a.workdir.as_deref()) {
        Ok(w) => w,
        Err(e) => return e,
    };
    let launch = match launch_of(a.shell.as_deref(), a.login, a.tty) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let max_bytes = env.host.config().tool_output.bytes(a.max_output_tokens);
    // A granted escape runs, whatever sandboxed twin is running.
    if a.duplicate_policy == DuplicatePolicy::ReuseRunning && !a.escalate {
        if let Some(t) = running_duplicate(env, &a.cmd, &workdir, &launch) {
            return ToolOutcome::ok(json!({
                "ok": true, "disposition": "already_running", "task_handle": task_snapshot(&t),
                "hint": "use TaskStatus / TaskOutput with this task_id, or duplicate_policy=start_new",
            }));
        }
    }
    let sandbox = match confinement(env, &snap, a.escalate, a.justification.as_deref()) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let host = env.host;
    let spec = CommandSpec {
        cmd: a.cmd.clone(),
        workdir: workdir.clone(),
        accepts_input: a.accepts_input,
        launch,
        sandbox: sandbox.clone(),
    };
    let origin = TaskOrigin::Agent {
        parent_message_id: Some(env.message_id.to_owned()),
        work_item_id: env.turn_work_item_id.clone(),
    };
    let task = match host.start_command_task(env.agent_id, spec, origin).await {
        Ok(t) => t,
        Err(e) => return runtime_error(e),
    };
    let yield_ms = a
        .yield_time_ms
        .unwrap_or(DEFAULT_YIELD_MS)
        .min(MAX_YIELD_MS);
    let task = match wait_terminal(env, &task.id, Duration::from_millis(yield_ms)).await {
        Ok(t) => t,
        Err(e) => return e,
    };
    let d = &task.detail;
    let output_path = d.output_path.as_deref().map(PathBuf::from);
    let (output, _, cut_at_file) = output_path
        .as_deref()
        .map(|p| read_tail(p, max_bytes + 1))
        .unwrap_or_default();
    let (preview, truncated) = truncate_tail(&output, max_bytes);
    let stderr = StderrTail::of(d, max_bytes / 4);
    if task.status == crate::model::task::TaskStatus::Completed {
        if let Err(e) = host.note_skill_use(env.agent_id, &a.cmd, &workdir).await {
            tracing::warn!(error = %e, "cannot record skill activation");
        }
    }
    if task.status.is_terminal() {
        let failed = task.status != crate::model::task::TaskStatus::Completed;
        let mut result = json!({
            "ok": !failed,
            "disposition": "completed", "task_id": task.id, "status": task.status,
            "exit_status": d.exit_status, "signal": d.signal, "summary": task.summary,
            "stdout_preview": preview, "stderr_preview": stderr.preview, "truncated": truncated || cut_at_file,
            "stdout_artifact": output_path, "duration_ms": d.duration_ms,
            "sandbox": sandbox.as_ref().map_or("off", |c| c.mode.as_str()),
        });
        let why = task.summary.as_deref().unwrap_or_default();
        if let Some(p) = &stderr.path {
            result["stderr_artifact"] = json!(p);
        }
        let hint = sandbox
            .as_ref()
            .filter(|_| failed)
            .and_then(|c| crate::runtime::sandbox::denial_hint(c, &format!("{why}\n{output}")));
        if let Some(hint) = hint {
            result["sandbox_hint"] = json!(hint);
        }
        return ToolOutcome {
            is_error: failed,
            ..ToolOutcome::ok(result)
        };
    }
    match host.promote_task(env.agent_id, &task.id).await {
        Ok(()) => ToolOutcome::ok(json!({
            "ok": true, "disposition": "promoted_to_task", "task_handle": task_snapshot(&task),
            "initial_output_preview": preview, "initial_output_truncated": truncated || cut_at_file,
            "note": "the command is still running; its result will be delivered to you when it ends",
        })),
        Err(e) => runtime_error(e),
    }
}

/// The tail of a command's stderr, kept apart by its holder's tee (none
/// for a terminal's command, whose output is one stream, nor when it
/// wrote nothing there).
pub(super) struct StderrTail {
    pub preview: String,
    pub truncated: bool,
    pub path: Option<PathBuf>,
}

impl StderrTail {
    /// Read from the task's `stderr_path`, at most `max` bytes.
    pub fn of(detail: &TaskDetail, max: u64) -> StderrTail {
        let path = detail
            .stderr_path
            .as_deref()
            .map(PathBuf::from)
            .filter(|p| p.metadata().is_ok_and(|m| m.len() > 0));
        let (preview, _, truncated) = path
            .as_deref()
            .map(|p| read_tail(p, max))
            .unwrap_or_default();
        StderrTail {
            preview,
            truncated,
            path,
        }
    }

    /// The contract's path-only artifacts: the combined output (the
    /// `output_artifact`), then the stderr tail.
    pub fn artifacts(&self, output: Option<&Path>) -> Vec<serde_json::Value> {
        let mut v: Vec<serde_json::Value> = output
            .iter()
            .map(|p| json!({ "kind": "task_output", "path": p }))
            .collect();
        if let Some(p) = &self.path {
            v.push(json!({ "kind": "task_stderr", "path": p }));
        }
        v
    }
}

/// How the command runs: its shell checked against the system's list.
pub(super) fn launch_of(
    shell: Option<&str>,
    login: bool,
    tty: bool,
) -> Result<Launch, ToolOutcome> {
    let listed = std::fs::read_to_string(super::exec_shell::SHELLS_FILE).unwrap_or_default();
    let shell =
        super::exec_shell::resolve_shell(shell, &listed, |p| p.is_file()).map_err(|why| {
            tool_error(
                ToolErrorKind::InvalidArguments,
                why,
                Some("leave `shell` out to use /bin/sh"),
                Some("shell"),
                false,
            )
        })?;
    Ok(Launch { shell, login, tty })
}

/// A running task of the agent's own with the same identity (command,
/// directory, shell, login, terminal) whose result will reach it: never
/// an operator's command or a batch's item, whose results do not.
fn running_duplicate(
    env: &ToolEnv<'_>,
    cmd: &str,
    workdir: &Path,
    launch: &Launch,
) -> Option<TaskRecord> {
    let wanted = cmd_digest(&json!({
        "cmd": cmd, "workdir": workdir, "shell": launch.shell, "login": launch.login,
        "tty": launch.tty,
    }));
    let rx = env.host.store().read().ok()?;
    let ids = rx.index_list(Index::ActiveTasks, env.agent_id).ok()?;
    ids.iter()
        .filter_map(|id| {
            rx.get::<TaskRecord>(Keyed::Tasks, env.agent_id, id)
                .ok()
                .flatten()
        })
        .find(|t| {
            let d = &t.detail;
            let reenters =
                d.origin == Some(CommandOrigin::Agent) && d.terminal_reentry == Some(true);
            reenters && identity(d).is_some_and(|i| cmd_digest(&i) == wanted)
        })
}

pub(super) struct ExecCommand;

impl Tool for ExecCommand {
    const NAME: &'static str = "ExecCommand";
    const DESCRIPTION: &'static str =
        "Run a shell command in the execution root. Returns its output \
        when it finishes within yield_time_ms; otherwise it continues as a background task and its \
        result is delivered to you when it ends. Commands run in a sandbox (see the execution \
        environment): to run one outside it, set escalate with a justification and the operator \
        is asked.";
    type Args = ExecArgs;

    fn gate(&self, args: &ExecArgs) -> Gated {
        match args.escalate {
            true => Gated::By(Action::Escape {
                cmd: args.cmd.clone(),
                justification: args.justification.clone().unwrap_or_default(),
            }),
            // A login shell first runs the operator's profile: judged as
            // the whole invocation, which no allow-list entry or read-only
            // command matches.
            false if args.login => Gated::By(Action::Command(format!(
                "{} -l -c {}",
                args.shell.as_deref().unwrap_or("sh"),
                args.cmd
            ))),
            // In a terminal, or taking input, a command can be driven once
            // it runs (a pager's `!`): judged as more than its text, so it
            // is never taken for one that only reads.
            false if args.tty || args.accepts_input => {
                let how = match (args.tty, args.accepts_input) {
                    (true, true) => "in a terminal, taking input",
                    (true, false) => "in a terminal",
                    _ => "taking input",
                };
                Gated::By(Action::Command(format!("{} ({how})", args.cmd)))
            }
            false => Gated::By(Action::Command(args.cmd.clone())),
        }
    }

    fn reach(&self) -> Reach {
        Reach::Process
    }

    async fn call(&self, env: &ToolEnv<'_>, args: ExecArgs) -> ToolOutcome {
        exec(env, args).await
    }
}
