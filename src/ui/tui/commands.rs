//! What a submitted composer line does: a prompt (`prompt.submit`, shown
//! at once as a local echo), `!CMD` (`task.run`), or a slash command from
//! `keymap::COMMANDS`. An unknown command or a wrong argument gets a hint
//! row, never silence.

use super::conversation::EchoKind;
use super::keymap::{self, Command, OverlayKind, WhileRunning};
use super::msg::Effect;
use super::overlays::events::Events;
use super::overlays::stack::{self, open_with};
use super::rows::Tone;
use super::settings;
use super::state::{History, Pending, State};
use super::update::call;
use crate::protocol::types::CreateWorkItem;
use crate::protocol::types::Priority;
use crate::protocol::{ControlAction, Request};

pub fn submit(state: &mut State, text: &str, fx: &mut Vec<Effect>) {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return;
    }
    if let Some(cmd) = trimmed.strip_prefix('!') {
        if let Some(note) = state.read_only() {
            return state.conversation.note(note, Tone::Info);
        }
        return run_command(state, cmd.trim(), fx);
    }
    if let Some(rest) = trimmed.strip_prefix('/') {
        if !rest.starts_with('/') {
            return slash(state, rest, fx);
        }
    }
    if let Some(note) = state.read_only() {
        return state.conversation.note(note, Tone::Info);
    }
    // A prompt; `//text` sends `/text` literally.
    let text = match trimmed.strip_prefix("//") {
        Some(rest) => format!("/{rest}"),
        None => text.trim_end().to_owned(),
    };
    send_prompt(state, text, Priority::Normal, fx);
}

/// Send an operator prompt with its local echo (sending, then queued,
/// then the durable row).
fn send_prompt(state: &mut State, text: String, priority: Priority, fx: &mut Vec<Effect>) {
    let request = Request::PromptSubmit {
        agent_id: state.agent_id.clone(),
        text: text.clone(),
        priority,
        request_id: None,
    };
    let effect = call(state, request, Pending::Prompt);
    if let Effect::Call { id, .. } = &effect {
        state.conversation.echo(*id, EchoKind::Prompt, &text);
    }
    state.attention = false;
    state.conversation.scroll = super::conversation::Scroll::Follow;
    fx.push(effect);
}

fn run_command(state: &mut State, cmd: &str, fx: &mut Vec<Effect>) {
    if cmd.is_empty() {
        let hint = "`!` runs a command: type `!` and the command, e.g. `!cargo test`.";
        return state.conversation.note(hint, Tone::Info);
    }
    let request = Request::TaskRun {
        agent_id: state.agent_id.clone(),
        cmd: cmd.to_owned(),
    };
    let effect = call(state, request, Pending::Command);
    if let Effect::Call { id, .. } = &effect {
        state.conversation.echo(*id, EchoKind::Command, cmd);
    }
    state.conversation.scroll = super::conversation::Scroll::Follow;
    fx.push(effect);
}

fn slash(state: &mut State, line: &str, fx: &mut Vec<Effect>) {
    let (name, arg) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    let Some(command) = keymap::command(name) else {
        let head: String = name.chars().take(2).collect();
        let similar: Vec<String> = keymap::matching(&head)
            .iter()
            .map(|c| format!("/{}", c.name))
            .collect();
        let maybe = match similar.is_empty() {
            true => String::new(),
            false => format!(" Did you mean {}?", similar.join(" or ")),
        };
        let hint = format!("Unknown command /{name}.{maybe} /help lists them all; `//text` sends a prompt starting with /.");
        return state.conversation.note(hint, Tone::Error);
    };
    let running = state.conversation.turn.is_some();
    if command.while_running == WhileRunning::OnlyWhileRunning && !running {
        let hint = format!("/{}: no turn is running.", command.name);
        return state.conversation.note(hint, Tone::Info);
    }
    let agent_id = state.agent_id.clone();
    let control = |action| Request::Control {
        agent_id: agent_id.clone(),
        action,
    };
    match command.command {
        Command::Help => stack::open_kind(state, OverlayKind::Help, fx),
        Command::Agents => stack::open_kind(state, OverlayKind::Agents, fx),
        Command::Tasks => stack::open_kind(state, OverlayKind::Tasks, fx),
        Command::State => stack::open_kind(state, OverlayKind::State, fx),
        Command::Transcript => stack::open_kind(state, OverlayKind::Transcript, fx),
        Command::Events => {
            let kind = arg.to_owned();
            open_with(state, fx, |ctx| Box::new(Events::open(ctx, kind)));
        }
        Command::Find => super::find::start(state, arg, fx),
        Command::Copy => super::copy::copy(state, fx),
        Command::Runtime => super::runtimes::command(state, arg, fx),
        Command::Work => work(state, arg, fx),
        Command::Agent => agent(state, arg, fx),
        Command::Display => settings::display(state, arg, fx),
        Command::Model => settings::model(state, arg, fx),
        Command::Status => {
            let text = crate::ui::present::usage::status_note(state.agent.summary.as_ref());
            state.conversation.note(text, Tone::Info);
        }
        Command::Pause => control_call(
            state,
            control(ControlAction::Pause),
            ControlAction::Pause,
            fx,
        ),
        Command::Resume => control_call(
            state,
            control(ControlAction::Resume),
            ControlAction::Resume,
            fx,
        ),
        Command::Stop => control_call(state, control(ControlAction::Stop), ControlAction::Stop, fx),
        Command::Wake => control_call(state, control(ControlAction::Wake), ControlAction::Wake, fx),
        Command::Abort => abort(state, fx),
        Command::Interject => prioritized(state, command.name, arg, Priority::Interject, fx),
        Command::Next => prioritized(state, command.name, arg, Priority::Next, fx),
        Command::Workspace => workspace(state, arg, fx),
        Command::Mouse => mouse(state, arg, fx),
        Command::Context => {
            let request = Request::AgentPrompt { agent_id };
            fx.push(call(state, request, Pending::Context));
        }
        Command::Trigger => trigger(state, arg, fx),
        Command::Mcp => {
            // The agent's workspace: its `.mcp.json` servers too.
            let workspace = state
                .agent
                .execution
                .as_ref()
                .map(|x| x.workspace_anchor.clone())
                .filter(|a| !a.is_empty());
            fx.push(call(state, Request::McpList { workspace }, Pending::Mcp))
        }
        Command::Approvals => stack::open_kind(state, OverlayKind::Approvals, fx),
        Command::Approve | Command::Deny => answer(state, command.command, arg, fx),
        Command::Detach => super::detach::detach(state, fx),
        Command::Quit => super::quit::quit(state, fx),
    }
}

/// `y` / `a` on an empty composer: approve the oldest waiting call.
pub fn answer_oldest(state: &mut State, always: bool, fx: &mut Vec<Effect>) {
    let Some((id, _)) = state.composer.approvals.first().cloned() else {
        return;
    };
    let request = Request::ApprovalApprove {
        approval_id: id,
        agent_id: Some(state.agent_id.clone()),
        always,
    };
    fx.push(call(state, request, Pending::Answer));
}

/// `/approve ID [--always]`, `/deny ID [NOTE]`: without an id, the
/// approvals overlay opens instead.
fn answer(state: &mut State, which: Command, arg: &str, fx: &mut Vec<Effect>) {
    let (id, rest) = arg
        .split_once(char::is_whitespace)
        .map_or((arg, ""), |(a, b)| (a, b.trim()));
    if id.is_empty() {
        return stack::open_kind(state, OverlayKind::Approvals, fx);
    }
    // A call waiting on another runtime: answered there, from here (one
    // this view shows waiting is this runtime's, whatever others list).
    let here = (state.conversation.waiting_approvals().iter()).any(|(x, _)| x == id)
        || state.runtimes.asked_here(id);
    let elsewhere = state.runtimes.asked_elsewhere(id).filter(|_| !here);
    let agent_id = elsewhere.as_ref().map(|(_, a)| a.agent_id.clone());
    let request = match which {
        Command::Approve => {
            if !matches!(rest, "" | "--always") {
                let hint = format!("/approve: unknown `{rest}`. Usage: /approve ID [--always]");
                return state.conversation.note(hint, Tone::Error);
            }
            Request::ApprovalApprove {
                approval_id: id.to_owned(),
                agent_id,
                always: rest == "--always",
            }
        }
        _ => Request::ApprovalDeny {
            approval_id: id.to_owned(),
            agent_id,
            note: (!rest.is_empty()).then(|| rest.to_owned()),
        },
    };
    match elsewhere {
        Some((runtime, _)) => {
            let pending = Pending::AnswerOn(runtime.clone());
            fx.push(super::update::call_on(state, runtime, request, pending));
        }
        None => fx.push(call(state, request, Pending::Answer)),
    }
}

fn trigger(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    let agent_id = state.agent_id.clone();
    let request = match arg {
        "" => Request::TriggerShow { agent_id },
        "rotate" => Request::TriggerRotate { agent_id },
        "revoke" => Request::TriggerRevoke { agent_id },
        other => {
            let hint = format!("/trigger: unknown `{other}`. Usage: /trigger [rotate|revoke]");
            return state.conversation.note(hint, Tone::Error);
        }
    };
    fx.push(call(state, request, Pending::Trigger));
}

/// `/interject TEXT` and `/next TEXT`: a prompt with a higher priority.
fn prioritized(state: &mut State, name: &str, arg: &str, priority: Priority, fx: &mut Vec<Effect>) {
    if arg.is_empty() {
        let hint = format!("/{name} needs the message: /{name} TEXT");
        return state.conversation.note(hint, Tone::Info);
    }
    send_prompt(state, arg.to_owned(), priority, fx);
}

/// Abort the running turn (Esc, `/abort`).
pub fn abort(state: &mut State, fx: &mut Vec<Effect>) {
    let request = Request::Control {
        agent_id: state.agent_id.clone(),
        action: ControlAction::Abort,
    };
    control_call(state, request, ControlAction::Abort, fx);
}

fn control_call(state: &mut State, request: Request, action: ControlAction, fx: &mut Vec<Effect>) {
    fx.push(call(state, request, Pending::Control(action)));
}

/// The note after a control action succeeded: a short label, then the
/// runtime's own explanation (said once, not echoed by the label).
pub fn control_done(action: ControlAction) -> &'static str {
    match action {
        ControlAction::Pause => "Paused",
        ControlAction::Resume => "Resumed",
        ControlAction::Stop => "Stopped",
        ControlAction::Wake => "Wake requested",
        ControlAction::Abort => "Abort requested",
    }
}

fn work(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    match arg
        .split_once(char::is_whitespace)
        .map_or((arg, ""), |(a, b)| (a, b.trim()))
    {
        ("", _) => stack::open_kind(state, OverlayKind::Work, fx),
        ("add", "") => state
            .conversation
            .note("Usage: /work add OBJECTIVE", Tone::Info),
        ("add", objective) => {
            let request = Request::WorkItemCreate {
                agent_id: state.agent_id.clone(),
                request_id: None,
                item: CreateWorkItem {
                    objective: objective.to_owned(),
                    ..CreateWorkItem::default()
                },
            };
            fx.push(call(state, request, Pending::WorkCreate));
        }
        (other, _) => {
            let hint = format!("/work: unknown `{other}`. Usage: /work, or /work add OBJECTIVE");
            state.conversation.note(hint, Tone::Error);
        }
    }
}

fn agent(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    let (sub, name) = arg
        .split_once(char::is_whitespace)
        .map_or((arg, ""), |(a, b)| (a, b.trim()));
    match (sub, name) {
        ("", _) => stack::open_kind(state, OverlayKind::Agents, fx),
        ("new", "") | ("switch", "") => state
            .conversation
            .note(format!("Usage: /agent {sub} NAME"), Tone::Info),
        ("new", name) => {
            let (id, template) = match name.split_once("--template") {
                Some((id, t)) => (
                    id.trim(),
                    Some(t.trim().to_owned()).filter(|t| !t.is_empty()),
                ),
                None => (name, None),
            };
            let request = Request::AgentCreate {
                agent_id: id.to_owned(),
                template,
            };
            fx.push(call(state, request, Pending::AgentCreate));
        }
        ("switch", name) if name == state.agent_id => state
            .conversation
            .note(format!("Already showing {name}."), Tone::Info),
        ("switch", name) => {
            let request = Request::AgentStatus {
                agent_id: name.to_owned(),
            };
            fx.push(call(state, request, Pending::AgentSwitch(name.to_owned())));
        }
        (other, _) => {
            let hint =
                format!("/agent: unknown `{other}`. Usage: /agent new NAME [--template ID] | /agent switch NAME");
            state.conversation.note(hint, Tone::Error);
        }
    }
}

/// A path typed in the console, made absolute against the console's own
/// directory (a relative one the runtime would read from the agent's cwd).
fn console_path(state: &State, path: &str) -> String {
    match &state.console_dir {
        Some(dir) if !std::path::Path::new(path).is_absolute() => {
            let joined = dir.join(path);
            joined
                .canonicalize()
                .unwrap_or(joined)
                .display()
                .to_string()
        }
        _ => path.to_owned(),
    }
}

/// `/mouse [on|off]`: without an argument, toggle.
fn mouse(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    let on = match arg {
        "" => !state.mouse,
        "on" => true,
        "off" => false,
        other => {
            let hint = format!("/mouse: unknown `{other}`. Use /mouse on or /mouse off.");
            return state.conversation.note(hint, Tone::Error);
        }
    };
    state.mouse = on;
    fx.push(Effect::Mouse(on));
    let text = match on {
        true => "Mouse capture on: the wheel scrolls the conversation.",
        false => "Mouse capture off: select text with the mouse to copy it; PgUp/PgDn scroll. /mouse on restores the wheel.",
    };
    state.conversation.note(text, Tone::Info);
}

/// `/workspace`: the overlay; `use PATH|ID [--isolated]`, `attach PATH`,
/// `detach ID`.
fn workspace(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    use crate::protocol::types::{UseWorkspace, WorkspaceMode};
    let (sub, rest) = arg
        .split_once(char::is_whitespace)
        .map_or((arg, ""), |(a, b)| (a, b.trim()));
    let agent_id = state.agent_id.clone();
    let (request, pending) = match (sub, rest) {
        ("", _) => return stack::open_kind(state, OverlayKind::Workspaces, fx),
        ("use", "") | ("attach", "") | ("detach", "") => {
            let usage = "Usage: /workspace use PATH|ID [--isolated] | attach PATH | detach ID";
            return state.conversation.note(usage, Tone::Info);
        }
        ("use", target) => {
            let mut words: Vec<&str> = target.split_whitespace().collect();
            let isolated = words.contains(&"--isolated");
            words.retain(|w| *w != "--isolated");
            let target = words.join(" ");
            let mode = match isolated {
                true => WorkspaceMode::Isolated,
                false => WorkspaceMode::Direct,
            };
            // Against the console's own directory (else the runtime reads
            // a relative path from the agent's cwd).
            let base = state.console_dir.clone().unwrap_or_default();
            let target = UseWorkspace::from_target(&target, mode, &base);
            (
                Request::WorkspaceUse { agent_id, target },
                Pending::WorkspaceUse,
            )
        }
        ("attach", path) => (
            Request::WorkspaceAttach {
                agent_id,
                path: console_path(state, path),
            },
            Pending::WorkspaceAttach,
        ),
        ("detach", id) => (
            Request::WorkspaceDetach {
                agent_id,
                workspace_id: id.to_owned(),
            },
            Pending::WorkspaceDetach,
        ),
        (other, _) => {
            let hint = format!(
                "/workspace: unknown `{other}`. Usage: /workspace [use PATH|ID [--isolated] | attach PATH | detach ID]"
            );
            return state.conversation.note(hint, Tone::Error);
        }
    };
    fx.push(call(state, request, pending));
}

/// Show another agent: forget this one's conversation, overlays and
/// requests (their answers are now stale), and ask the loop to bootstrap
/// and follow the other one.
pub fn view_agent(state: &mut State, agent_id: &str, fx: &mut Vec<Effect>) {
    state.agent_id = agent_id.to_owned();
    state.agent = Default::default();
    state.conversation = Default::default();
    state.composer.approvals.clear();
    state.overlays.close_all();
    // An answer sent to another runtime is said whatever is shown then.
    state
        .pending
        .retain(|_, (_, p)| matches!(p, Pending::AnswerOn(_)));
    // A quit check's answer was among them, and a warning spoke of the
    // agent viewed then: the next quit asks again.
    state.quit_checking = false;
    (state.quit_asked, state.quit_asked_ms) = (false, None);
    state.quit_warning = None;
    state.quit_after_abort = false;
    super::detach::view_changed(state);
    state.find = None;
    state.history = History::Waiting { held: Vec::new() };
    (state.refresh, state.refresh_again) = (None, false);
    state.older = None;
    state.attention = false;
    state.dirty = true;
    fx.push(Effect::ViewAgent {
        agent_id: agent_id.to_owned(),
    });
}
