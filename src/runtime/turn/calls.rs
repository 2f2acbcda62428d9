//! A round's tool calls and its safe point. Each call is recorded as
//! started (durably, before anything runs, so after a crash the model is
//! told it may have had its effects), executed, and recorded with its
//! result in the tool-execution ledger, the events and the transcript.
//! What joins the turn between rounds is `join.rs`.

use std::sync::Arc;
use std::time::Instant;

use super::transcript_in;
use crate::model::event::Provenance;
use crate::model::transcript::TranscriptBody;
use crate::model::usage::ToolCall;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::approvals::{gate, request as approval_request};
use crate::runtime::handle::{HostInner, RuntimeHost};
use crate::runtime::tool_outcome::ToolOutcome;
use crate::runtime::tools::{self, ToolEnv};
use crate::runtime::RuntimeError;

/// How a round's call is answered.
pub(super) enum Route {
    /// Through the approval gate, then run.
    Gate,
    /// Already answered by the turn itself (ToolSearch, an MCP tool whose
    /// definition the request did not carry): nothing runs, so no gate.
    Answered(ToolOutcome),
}

/// A call that ran (or was answered), and the approval it waits for when
/// the policy held it for the operator.
pub(super) struct Ran {
    pub outcome: ToolOutcome,
    pub awaits_approval: Option<String>,
}

/// Run one tool call of a round, recorded before and after. An MCP call,
/// which may wait on its server for up to its tool timeout, ends early
/// when the turn is cancelled (`cancel`). A call the turn answered
/// itself (`Route::Answered`) is recorded the same, but its time is not
/// the tool's.
pub(super) async fn run_call(
    inner: &Arc<HostInner>,
    env: &ToolEnv<'_>,
    run_id: &str,
    call: &ToolCall,
    cancel: &crate::runtime::handle::cancel::TurnCancel,
    route: Route,
) -> Result<Ran, RuntimeError> {
    record_started(env, run_id, call).await?;
    let (refused, runs) = pre_tool(inner, env, run_id, call, cancel, &route).await;
    let ran = matches!(route, Route::Gate) && refused.is_none();
    let t0 = Instant::now();
    let mut awaits_approval = None;
    let mut outcome = match (route, refused) {
        (_, Some(refusal)) => crate::runtime::tool_outcome::tool_error(
            crate::runtime::tool_outcome::ToolErrorKind::Failed,
            refusal,
            Some("the call did not run; do not repeat it unchanged: take another way, or tell the operator what you need"),
            None,
            false,
        ),
        (Route::Answered(outcome), None) => outcome,
        (Route::Gate, None) => match gate::approval_needed(env, call)? {
            None if crate::model::mcp::is_mcp_tool(&call.name) => tokio::select! {
                outcome = tools::execute(env, call, Some(run_id)) => outcome,
                reason = cancel.cancelled() => crate::runtime::tool_outcome::tool_error(
                    crate::runtime::tool_outcome::ToolErrorKind::Failed,
                    format!(
                        "{} was left with the turn ({reason:?}); the server may have done it anyway",
                        call.name
                    ),
                    Some("check what the tool did before calling it again"),
                    None,
                    false,
                ),
            },
            None => tools::execute(env, call, None).await,
            Some((why, snapshot)) => {
                let (outcome, id) = ask_operator(inner, env, run_id, call, why, &snapshot).await?;
                awaits_approval = Some(id);
                outcome
            }
        },
    };
    let duration_ms = t0.elapsed().as_millis() as u64;
    crate::runtime::tool_outcome::finish(&mut outcome, &call.name);
    let (id, rid, mid, c, o, runs) = (
        env.agent_id.to_owned(),
        run_id.to_owned(),
        env.message_id.to_owned(),
        call.clone(),
        outcome.clone(),
        runs,
    );
    env.host
        .store()
        .write(move |tx| {
            crate::runtime::hooks::dispatch::record_in(tx, &id, &runs)?;
            let content = tools::executed_in(tx, &id, &rid, &mid, &c, &o, duration_ms)?;
            // Timings of the tools it has: a name the model made up is not one.
            // Nor is a call the turn answered itself.
            let known = ran
                && (tools::is_builtin(&c.name)
                    || crate::model::mcp::split_tool_name(&c.name).is_some());
            if known {
                if let Some(mut agent) = tx.get_agent::<crate::model::agent::AgentRecord>(&id)? {
                    crate::model::usage::ToolLatency::record(
                        &mut agent.tool_latency,
                        &c.name,
                        duration_ms,
                        o.is_error,
                    );
                    tx.put_agent(&id, &agent)?;
                }
            }
            transcript_in(
                tx,
                &id,
                &rid,
                Some(&mid),
                TranscriptBody::ToolResult {
                    call_id: c.id.clone(),
                    tool_name: c.name.clone(),
                    content,
                    is_error: o.is_error,
                    images: o.images.clone(),
                    error: crate::runtime::tool_outcome::error_of(&o),
                },
            )
        })
        .await?;
    Ok(Ran {
        outcome,
        awaits_approval,
    })
}

/// A call durably "started" before anything runs: after a crash the model
/// is told it may have had its effects.
async fn record_started(
    env: &ToolEnv<'_>,
    run_id: &str,
    call: &ToolCall,
) -> Result<(), RuntimeError> {
    let (id, rid, mid, cid, name) = (
        env.agent_id.to_owned(),
        run_id.to_owned(),
        env.message_id.to_owned(),
        call.id.clone(),
        call.name.clone(),
    );
    env.host
        .store()
        .write(move |tx| {
            let started_at = tx.now_ts();
            let provenance = Provenance {
                message_id: Some(mid.clone()),
                ..Provenance::default()
            };
            let started = ev::ToolStarted {
                run_id: rid.clone(),
                call_id: cid.clone(),
                tool_name: name.clone(),
            };
            tx.append_event(new_event(&id, provenance, Event::ToolStarted(started)))?;
            transcript_in(
                tx,
                &id,
                &rid,
                Some(&mid),
                TranscriptBody::ToolStarted {
                    call_id: cid.clone(),
                    tool_name: name.clone(),
                    started_at,
                },
            )
        })
        .await?;
    Ok(())
}

/// The operator's pre_tool hooks, before the gate: one may refuse the call
/// (it then never runs, and nothing is asked of the operator). Their runs
/// are recorded with the call's result. A turn stopped meanwhile stops
/// them (with what they started). A call the turn answered runs none.
async fn pre_tool(
    inner: &HostInner,
    env: &ToolEnv<'_>,
    run_id: &str,
    call: &ToolCall,
    cancel: &crate::runtime::handle::cancel::TurnCancel,
    route: &Route,
) -> (Option<String>, Vec<ev::HookRan>) {
    match route {
        Route::Gate => tokio::select! {
            hooks = inner.hooks().pre_tool(env.agent_id, run_id, call) => (
                hooks.refused.map(|(hook, reason)| {
                    format!("the operator's hook `{hook}` refused this call: {reason}")
                }),
                hooks.runs,
            ),
            reason = cancel.cancelled() => (
                Some(format!(
                    "the call did not run: the turn was stopped ({reason:?}) while the \
                     operator's hooks checked it"
                )),
                Vec::new(),
            ),
        },
        Route::Answered(_) => (None, Vec::new()),
    }
}

/// A call the policy holds for the operator: its approval recorded (the
/// reviewer reads it first, when one is configured), and the turn told
/// to end its round waiting. Returns what the model is told and the
/// approval's id.
async fn ask_operator(
    inner: &Arc<HostInner>,
    env: &ToolEnv<'_>,
    run_id: &str,
    call: &ToolCall,
    why: String,
    snapshot: &crate::model::workspace::ExecutionSnapshot,
) -> Result<(ToolOutcome, String), RuntimeError> {
    let rec = approval_request::approval_for(env, run_id, call, why, snapshot);
    let content = approval_request::awaiting(&rec);
    let asked = rec.clone();
    env.host
        .store()
        .write(move |tx| approval_request::request_in(tx, &rec))
        .await?;
    // The reviewer reads it first, when one is configured.
    RuntimeHost::from_inner(inner).review_soon(&asked);
    let outcome = ToolOutcome {
        ends_turn: true,
        ..ToolOutcome::ok(content)
    };
    Ok((outcome, asked.id))
}
