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
        Pending::Model => match result.and_then(Response::take::<ModelChanged>) {
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
        },
        // Quitting: the turn is aborted (or had already ended); go.
        Pending::Control(crate::protocol::ControlAction::Abort) if state.quit_after_abort => {
            fx.push(Effect::Quit)
        }
        Pending::Control(action) => match result.and_then(Response::take::<ControlOutcome>) {
            Ok(outcome) => {
                let what = super::commands::control_done(action);
                // The runtime's note explains; one that only repeats the
                // label is not said twice.
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
            Err(e) => state.conversation.note(e.message, Tone::Error),
        },
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
        Pending::WorkspaceUse => match result.and_then(Response::take::<UseOutcome>) {
            Ok(out) => {
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
            Err(e) => state
                .conversation
                .note(format!("/workspace use: {}", e.message), Tone::Error),
        },
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
        Pending::Mcp => {
            match result.and_then(Response::take::<Vec<crate::model::mcp::McpServerInfo>>) {
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
        Pending::WorkspaceAttach | Pending::WorkspaceDetach => {
            let verb = match pending {
                Pending::WorkspaceAttach => "attach",
                _ => "detach",
            };
            match result.and_then(Response::take::<WorkspaceBinding>) {
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
