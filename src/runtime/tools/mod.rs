//! The model's tool surface. Each tool is a handler (`handler::Tool`): a
//! typed argument struct whose JSON Schema is generated (`schemars`), the
//! gate and reach it decides, and a call that uses the same runtime
//! operations the console and socket use. Failures use the shared tool
//! error envelope (`runtime::tool_outcome`: `ok: false`, kind, message,
//! hint, field, retryable, bounded details). `SystemTick` is never a tool.

mod agents;
mod attach;
mod exec;
mod exec_batch;
mod exec_shell;
mod handler;
pub(crate) mod host;
mod memory;
pub mod offer;
pub(crate) mod patch;
#[cfg(test)]
mod schema_tests;
mod sleep;
mod task_view;
mod tasks;
mod waits;
mod work;
mod workspace;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};
pub use handler::{Gated, Reach};

use super::handle::HostInner;
use super::provider::ToolSpec;
use crate::model::usage::ToolCall;
use host::ToolHost;

/// What a tool call runs with.
pub(crate) struct ToolEnv<'a> {
    /// The runtime, as far as a tool may reach it.
    pub host: &'a dyn ToolHost,
    pub agent_id: &'a str,
    pub message_id: &'a str,
    /// The work item the turn is bound to (focus at turn start).
    pub turn_work_item_id: Option<String>,
    /// Assistant text of the same round (CompleteWorkItem's report).
    pub round_text: &'a str,
    /// The operator granted this very call (a durable approval): only
    /// then may a command leave the sandbox.
    pub granted: bool,
    /// What the operator approved of this very call (its approval's
    /// summary), when granted: a move of the writable root is held to it.
    pub approved: Option<&'a str>,
}

pub(crate) fn runtime_error(e: super::RuntimeError) -> ToolOutcome {
    use super::RuntimeError as E;
    match e {
        E::WorkItem(w) => {
            let kind = match w {
                crate::model::work::WorkItemError::Unknown(_) => ToolErrorKind::NotFound,
                crate::model::work::WorkItemError::Completed(_) => ToolErrorKind::Conflict,
                crate::model::work::WorkItemError::EmptyObjective => {
                    ToolErrorKind::InvalidArguments
                }
            };
            tool_error(
                kind,
                w.to_string(),
                Some("ListWorkItems shows the open work items"),
                Some("work_item_id"),
                false,
            )
        }
        E::Workspace(w) => {
            use crate::runtime::WorkspaceError as W;
            let (kind, field) = match &w {
                W::Unknown { .. } => (ToolErrorKind::NotFound, Some("workspace_id")),
                W::Target => (ToolErrorKind::InvalidArguments, None),
                W::Missing { .. } | W::NotADirectory { .. } | W::NotReadable { .. } => {
                    (ToolErrorKind::InvalidArguments, Some("path"))
                }
                W::DetachActive { .. } | W::DetachHome => (ToolErrorKind::Conflict, None),
                W::HomeIsolated | W::NestedIsolated { .. } | W::GitSinceAttached { .. } => {
                    (ToolErrorKind::InvalidArguments, Some("mode"))
                }
                W::Refused { .. } | W::Unapproved { .. } => (ToolErrorKind::Failed, Some("path")),
                W::AnchorGone { .. } | W::Git(_) => (ToolErrorKind::Failed, None),
            };
            tool_error(kind, w.to_string(), None, field, false)
        }
        E::UnknownTask { task_id } => tool_error(
            ToolErrorKind::NotFound,
            format!("no task `{task_id}`"),
            Some("task ids come from ExecCommand results"),
            Some("task_id"),
            false,
        ),
        other => tool_error(ToolErrorKind::Failed, other.to_string(), None, None, true),
    }
}

/// For arguments with a default: `null` (what strict-mode models send for
/// "not given") means the default, as absence does.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Option::unwrap_or_default)
}

fn parse_args<T: DeserializeOwned>(call: &ToolCall) -> Result<T, ToolOutcome> {
    let args = if call.arguments.is_null() {
        json!({})
    } else {
        call.arguments.clone()
    };
    serde_json::from_value(args).map_err(|e| {
        tool_error(
            ToolErrorKind::InvalidArguments,
            format!("{} arguments are invalid: {e}", call.name),
            Some("check the tool's JSON schema"),
            None,
            false,
        )
    })
}

fn schema_of<T: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T))
        .unwrap_or_else(|_| json!({"type": "object"}));
    if let Some(obj) = v.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.insert("additionalProperties".into(), json!(false));
    }
    v
}

fn spec<T: JsonSchema>(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: schema_of::<T>(),
        freeform_field: None,
    }
}

/// What the approval gate sees of a call: `Gated::No` for a tool that
/// does not exist or arguments that do not parse (nothing runs then).
/// An MCP server's tool is judged by what its server said of it.
pub(crate) fn gate_of(host: &dyn ToolHost, agent_id: &str, call: &ToolCall) -> Gated {
    if crate::model::mcp::is_mcp_tool(&call.name) {
        let anchor = mcp_place_of(host.execution_of(agent_id)).0;
        return host
            .mcp()
            .gate(anchor.as_deref(), call)
            .map_or(Gated::No, Gated::By);
    }
    let Some(tool) = handler::find(&call.name) else {
        return Gated::No;
    };
    let gated = tool.gate_in(host, agent_id, call).unwrap_or(Gated::No);
    debug_assert!(
        gated == Gated::No || tool.reach() != Reach::Runtime,
        "{} reaches only the runtime, yet asks for a gate",
        call.name
    );
    gated
}

/// A call that ran, recorded: its execution (the whole result, in the
/// tool-executions ledger) and its `tool_executed` event. Returns the
/// result's text. A turn's call and a call the operator approved later
/// are recorded alike.
pub(crate) fn executed_in(
    tx: &mut crate::store::WriteCtx<'_>,
    agent_id: &str,
    run_id: &str,
    message_id: &str,
    call: &ToolCall,
    outcome: &ToolOutcome,
    duration_ms: u64,
) -> Result<String, crate::store::StoreError> {
    use crate::protocol::events::{self as ev, new_event, Event};
    let exec_id = crate::new_id("tool");
    let content = outcome.text();
    tx.put(
        crate::store::Keyed::ToolExecutions,
        agent_id,
        &exec_id,
        &serde_json::json!({
            "id": exec_id, "call_id": call.id, "run_id": run_id, "message_id": message_id,
            "tool_name": call.name, "arguments": call.arguments, "result": outcome.content,
            "is_error": outcome.is_error, "duration_ms": duration_ms,
            "status": if outcome.is_error { "failed" } else { "completed" },
            "malformed_arguments": call.malformed_arguments,
        }),
    )?;
    let executed = ev::ToolExecuted {
        run_id: run_id.to_owned(),
        tool_execution_id: exec_id,
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: call.arguments.clone(),
        is_error: outcome.is_error,
        duration_ms,
        malformed_arguments: call.malformed_arguments.clone(),
        result_preview: content
            .chars()
            .take(ev::ToolExecuted::PREVIEW_CHARS)
            .collect(),
        result_facts: ev::ToolExecuted::facts_of(&outcome.content),
        tool_error: crate::runtime::tool_outcome::error_of(outcome),
    };
    let provenance = crate::model::event::Provenance {
        message_id: Some(message_id.to_owned()),
        ..crate::model::event::Provenance::default()
    };
    tx.append_event(new_event(
        agent_id,
        provenance,
        Event::ToolExecuted(executed),
    ))?;
    Ok(content)
}

/// Whether `name` is one of the built-in tools.
pub(crate) fn is_builtin(name: &str) -> bool {
    handler::find(name).is_some()
}

/// Holon's own tools, in a stable order.
pub fn specs() -> Vec<ToolSpec> {
    handler::TOOLS.iter().map(|t| t.spec()).collect()
}

/// The workspace whose `.mcp.json` servers the agent may use: the one it
/// works in.
pub(crate) fn mcp_anchor(host: &HostInner, agent_id: &str) -> Option<std::path::PathBuf> {
    mcp_place(host, agent_id).0
}

/// The workspace the agent works in, for MCP: its anchor (whose
/// `.mcp.json` servers it may use) and the policy in force there (under
/// whose sandbox they start).
fn mcp_place(
    host: &HostInner,
    agent_id: &str,
) -> (
    Option<std::path::PathBuf>,
    Option<crate::model::approval::ApprovalPolicy>,
) {
    mcp_place_of(host.execution_of(agent_id))
}

/// `mcp_place` of a snapshot read.
fn mcp_place_of(
    execution: Result<crate::model::workspace::ExecutionSnapshot, super::RuntimeError>,
) -> (
    Option<std::path::PathBuf>,
    Option<crate::model::approval::ApprovalPolicy>,
) {
    let Ok(snapshot) = execution else {
        return (None, None);
    };
    let anchor = Some(std::path::PathBuf::from(snapshot.workspace_anchor))
        .filter(|p| !p.as_os_str().is_empty());
    (anchor, Some(snapshot.policy.approval))
}

/// The tool catalog offered to the agent: Holon's own tools, then the
/// MCP servers' (starting any that are not running yet).
pub(crate) async fn catalog(host: &HostInner, agent_id: &str) -> Vec<ToolSpec> {
    let mut all = specs();
    host.mcp()
        .set_sandbox(&host.default_policy(), host.config.sandbox_required);
    let (anchor, policy) = mcp_place(host, agent_id);
    let offered = host
        .mcp()
        .specs(anchor.as_deref(), agent_id, policy.as_ref());
    all.extend(offered.await);
    all
}

/// Where an MCP call's progress goes: the live updates clients follow, at
/// most one every 50 ms (a server may report far faster than anyone
/// reads), and the first report of the work done always.
fn live_progress(
    host: &dyn ToolHost,
    agent_id: &str,
    run_id: &str,
    call_id: &str,
) -> crate::runtime::mcp::ProgressSink {
    use std::time::{Duration, Instant};
    let live = host.live().clone();
    let (agent_id, run_id, call_id) = (agent_id.to_owned(), run_id.to_owned(), call_id.to_owned());
    // When the last report went, and whether it said the work was done.
    let last = std::sync::Mutex::new((None::<Instant>, false));
    Arc::new(move |progress: crate::model::mcp::McpProgress| {
        let done = progress.total.is_some_and(|t| progress.progress >= t);
        if let Ok(mut last) = last.lock() {
            let (at, told_done) = *last;
            let first_done = done && !told_done;
            if !first_done && at.is_some_and(|at| at.elapsed() < Duration::from_millis(50)) {
                return;
            }
            *last = (Some(Instant::now()), told_done || done);
        }
        let _ = live.send(super::handle::LiveUpdate::ToolProgress {
            agent_id: agent_id.clone(),
            run_id: run_id.clone(),
            call_id: call_id.clone(),
            progress,
        });
    })
}

/// The answer to a call whose arguments text was not JSON: nothing ran,
/// and the model is told exactly why so it can send the call again.
fn malformed_arguments(call: &ToolCall) -> Option<ToolOutcome> {
    let m = call.malformed_arguments.as_ref()?;
    Some(tool_error(
        ToolErrorKind::InvalidArguments,
        format!(
            "{} was not run: its arguments are not valid JSON ({})",
            call.name, m.error
        ),
        Some("send the arguments again as one JSON object that matches the tool's schema"),
        None,
        false,
    ))
}

/// Run one tool call. An MCP server's progress on it is shown live as
/// the progress of `run_id`'s call, when given.
pub(crate) async fn execute(
    env: &ToolEnv<'_>,
    call: &ToolCall,
    run_id: Option<&str>,
) -> ToolOutcome {
    if let Some(outcome) = malformed_arguments(call) {
        return outcome;
    }
    if crate::model::mcp::is_mcp_tool(&call.name) {
        let max = env.host.config().tool_output.bytes(None);
        let (anchor, policy) = mcp_place_of(env.host.execution_of(env.agent_id));
        let sink = run_id.map(|r| live_progress(env.host, env.agent_id, r, &call.id));
        let mcp = env.host.mcp();
        return mcp
            .call(
                anchor.as_deref(),
                env.agent_id,
                policy.as_ref(),
                call,
                max as usize,
                sink,
            )
            .await;
    }
    match handler::find(&call.name) {
        Some(tool) => tool.run(env, call).await,
        None => tool_error(
            ToolErrorKind::UnknownTool,
            format!("there is no tool named `{}`", call.name),
            Some("use one of the tools listed in the request"),
            None,
            false,
        ),
    }
}
