//! What the runtime answered to the console's slash commands and
//! settings (a model change, a control, a new agent, a workspace, a
//! trigger …): each becomes a note in the conversation, or a change to
//! what the console shows.

use super::msg::Effect;
use super::rows::Tone;
use super::state::{Pending, State};
use super::update::refresh;
use crate::protocol::types::{ApprovalRecord, PromptPreview, TriggerView};
use crate::protocol::types::{UseOutcome, WorkItemRecord, WorkspaceBinding};
use crate::protocol::{AgentSummary, ApiError, ControlOutcome, ErrorCode, ModelChanged, Response};
use crate::ui::present::context;

/// The answer to a command the console sent (`pending` says which).
pub(super) fn answered(
    state: &mut State,
    pending: Pending,
    result: Result<Response, ApiError>,
    fx: &mut Vec<Effect>,
) {
    match pending {
        // Answered before it got here (`update::on_response`).
        Pending::AnswerOn(_) => {}
        Pending::Display => {
            if let Err(e) = result {
                state
                    .conversation
                    .note(format!("The display mode was not saved: {e}"), Tone::Error);
            }
        }
        Pending::Model => model_changed(state, result.and_then(Response::take)),
        // Quitting: the turn is aborted (or had already ended); go.
        Pending::Control(crate::protocol::ControlAction::Abort) if state.quit_after_abort => {
            fx.push(Effect::Quit)
        }
        Pending::Control(action) => controlled(state, action, result.and_then(Response::take), fx),
        Pending::AgentCreate => match result.and_then(Response::take::<AgentSummary>) {
            Ok(created) => {
                let name = created.id;
                state
                    .conversation
                    .note(format!("Created agent {name}."), Tone::Ok);
                if !name.is_empty() {
                    super::commands::view_agent(state, &name, fx);
                }
            }
            Err(e) => state
                .conversation
                .note(format!("No agent created: {}", e.message), Tone::Error),
        },
        Pending::AgentSwitch(name) => match result {
            Ok(_) => super::commands::view_agent(state, &name, fx),
            Err(e) if e.code == ErrorCode::NotFound => state.conversation.note(
                format!("no agent {name} (see /agent for the list)"),
                Tone::Error,
            ),
            Err(e) => state
                .conversation
                .note(format!("cannot show {name}: {}", e.message), Tone::Error),
        },
        Pending::WorkspaceUse => workspace_used(state, result.and_then(Response::take)),
        Pending::Context => match result.and_then(Response::take::<PromptPreview>) {
            Ok(p) => state.conversation.note(context::summary(&p), Tone::Info),
            Err(e) => state
                .conversation
                .note(format!("/context: {}", e.message), Tone::Error),
        },
        Pending::Answer => match result.and_then(Response::take::<ApprovalRecord>) {
            // This agent's approval row shows the answer (its event);
            // another agent's gets a note.
            Ok(a) if a.agent_id == state.agent_id => {}
            Ok(a) => {
                let text = crate::ui::present::approvals::answered(&a);
                state.conversation.note(text, Tone::Ok)
            }
            // Answered elsewhere first, unknown id, stopped agent: said.
            Err(e) => state.conversation.note(e.message, Tone::Error),
        },
        Pending::Trigger => match result.and_then(Response::take::<TriggerView>) {
            Ok(t) => {
                let text = crate::ui::present::trigger::lines(&t).join("\n");
                state.conversation.note(text, Tone::Info)
            }
            Err(e) => state
                .conversation
                .note(format!("/trigger: {}", e.message), Tone::Error),
        },
        Pending::Mcp => mcp_listed(state, result.and_then(Response::take)),
        Pending::WorkspaceAttach => bound(state, "attach", result.and_then(Response::take)),
        Pending::WorkspaceDetach => bound(state, "detach", result.and_then(Response::take)),
        Pending::WorkCreate => match result.and_then(Response::take::<WorkItemRecord>) {
            Ok(w) => {
                let text = format!("Work item added: {} ({}).", w.objective, w.id);
                state.conversation.note(text, Tone::Ok);
            }
            Err(e) => state
                .conversation
                .note(format!("No work item added: {}", e.message), Tone::Error),
        },
        // Answered where they were asked.
        Pending::QuitCheck
        | Pending::DetachCheck
        | Pending::Prompt
        | Pending::Command
        | Pending::History
        | Pending::Older { .. }
        | Pending::Refresh
        | Pending::Overlay(_) => {}
    }
}

/// `/model`: the model now and before, from the next turn.
fn model_changed(state: &mut State, result: Result<ModelChanged, ApiError>) {
    match result {
        Ok(changed) => {
            state.agent.apply_summary(&changed.agent, false);
            let now = state
                .agent
                .model
                .clone()
                .unwrap_or_else(|| "the runtime default".into());
            let was = changed
                .previous_model_override
                .unwrap_or_else(|| "the runtime default".into());
            state.conversation.note(
                format!("Model: {now} (was {was}); it applies from the next turn."),
                Tone::Ok,
            );
        }
        Err(e) => state.conversation.note(
            format!("The model was not changed: {}", e.message),
            Tone::Error,
        ),
    }
}

/// A control action done: what it did, the status it moved between, and
/// the runtime's note when that says more than the label.
fn controlled(
    state: &mut State,
    action: crate::protocol::ControlAction,
    result: Result<ControlOutcome, ApiError>,
    fx: &mut Vec<Effect>,
) {
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            state.conversation.note(e.message, Tone::Error);
            return;
        }
    };
    let what = super::commands::control_done(action);
    let note = Some(outcome.note.trim())
        .filter(|n| !n.is_empty() && !n.eq_ignore_ascii_case(what))
        .map(|n| format!(": {n}"))
        .unwrap_or_default();
    let (from, to) = (outcome.from.as_str(), outcome.to.as_str());
    let change = match from != to {
        true => format!(" ({} → {})", from.replace('_', " "), to.replace('_', " ")),
        false => String::new(),
    };
    state
        .conversation
        .note(format!("{what}{change}{note}"), Tone::Ok);
    refresh(state, fx);
}

/// `/workspace use`: where the agent works now, and each worktree kept
/// for review.
fn workspace_used(state: &mut State, result: Result<UseOutcome, ApiError>) {
    let out = match result {
        Ok(out) => out,
        Err(e) => {
            let text = format!("/workspace use: {}", e.message);
            state.conversation.note(text, Tone::Error);
            return;
        }
    };
    state.agent.execution = Some(out.execution.clone());
    if let Some(note) = out.note {
        state.conversation.note(note, Tone::Info);
    }
    for w in out.retained {
        let kept = format!(
            "Kept worktree {} (branch {}): it has changes to review.",
            w.worktree_path, w.worktree_branch
        );
        state.conversation.note(kept, Tone::Info);
    }
}

/// `/mcp`: each server and its tools, or that none is configured.
fn mcp_listed(state: &mut State, result: Result<Vec<crate::model::mcp::McpServerInfo>, ApiError>) {
    match result {
        Ok(servers) if servers.is_empty() => state.conversation.note(
            "No MCP servers are configured ([mcp_servers.NAME] in config.toml).",
            Tone::Info,
        ),
        Ok(servers) => {
            let text: Vec<String> = servers
                .iter()
                .flat_map(crate::ui::present::mcp::lines)
                .collect();
            state.conversation.note(text.join("\n"), Tone::Info)
        }
        Err(e) => state
            .conversation
            .note(format!("/mcp: {}", e.message), Tone::Error),
    }
}

/// `/workspace attach` or `detach` (`verb`): the workspace, and where
/// to go from there.
fn bound(state: &mut State, verb: &str, result: Result<WorkspaceBinding, ApiError>) {
    match result {
        Ok(b) => {
            let (id, anchor) = (&b.workspace_id, &b.anchor);
            let text = match verb {
                "attach" => {
                    format!("Attached {anchor} as {id}; `/workspace use {id}` works there.")
                }
                _ => format!("Detached {id} ({anchor}); nothing on disk was touched."),
            };
            state.conversation.note(text, Tone::Ok);
        }
        Err(e) => state
            .conversation
            .note(format!("/workspace {verb}: {}", e.message), Tone::Error),
    }
}
