//! `update(&mut State, Msg) -> Vec<Effect>`: the console's only state
//! transition. Pure: it never performs I/O, never reads a clock (time
//! comes in `Msg::Tick`) and never draws; it changes the state, sets
//! `dirty` when something visible changed, and returns intents.
//!
//! Answers to requests are matched by request id: an id no longer pending
//! (another agent is shown, the overlay that asked is closed, a newer
//! request replaced it) is dropped.

use crate::protocol::types::TaskRecord;

use super::keys;
use super::msg::{Connection, Effect, Msg, RequestId};
use super::overlays::stack;
use super::rows::Tone;
use super::state::{History, Pending, State, HISTORY_EVENTS};
use crate::protocol::events::Event;
use crate::protocol::{
    Admitted, AgentState, AgentSummary, ApiError, ErrorCode, EventRecord, EventsPage, Request,
    Response,
};
use crate::ui::present::present_event;

pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    let mut fx = Vec::new();
    match msg {
        Msg::Key(key) => keys::on_key(state, key, &mut fx),
        Msg::Paste(text) => keys::on_paste(state, &text),
        Msg::Mouse(m) => keys::on_mouse(state, m, &mut fx),
        Msg::Resize { width, height } => {
            (state.width, state.height) = (width, height);
            state.dirty = true;
        }
        Msg::Tick { now_ms } => on_tick(state, now_ms, &mut fx),
        Msg::Bootstrap { agent_id, state: s } => {
            if agent_id == state.agent_id {
                bootstrap(state, &s, &mut fx);
            }
        }
        Msg::Event(e) => {
            if e.agent_id == state.agent_id {
                on_event(state, *e, &mut fx);
            }
        }
        Msg::AssistantDelta {
            agent_id,
            run_id,
            attempt,
            text,
        } => {
            if agent_id == state.agent_id {
                state.conversation.delta(&run_id, attempt, &text);
                state.dirty = true;
            }
        }
        Msg::ToolProgress {
            agent_id,
            run_id,
            call_id,
            progress,
        } => {
            if agent_id == state.agent_id {
                state.dirty |= state
                    .conversation
                    .tool_progress(&run_id, &call_id, &progress);
            }
        }
        Msg::ProviderRetry {
            agent_id,
            run_id,
            attempt,
            notice,
            heard_ms,
        } => {
            if agent_id == state.agent_id {
                state.dirty |=
                    (state.conversation).provider_retry(&run_id, attempt, notice, heard_ms);
            }
        }
        Msg::Response { id, result } => on_response(state, id, *result, &mut fx),
        Msg::Connection(c) => {
            if c == Connection::Streaming {
                state.said_unreachable = None;
            }
            state.connection = c;
            state.dirty = true;
        }
        Msg::RuntimesSeen(glances) => super::runtimes::seen(state, glances, &mut fx),
        Msg::RuntimeSwitched {
            name,
            agent_id,
            took_ms,
            embedded,
        } => super::runtimes::switched(state, name, agent_id, took_ms, embedded, &mut fx),
        Msg::SwitchFailed { name, reason } => super::runtimes::failed(state, &name, &reason),
        // Why a reconnect failed is said where it can be read (a changed
        // host key, another protocol revision), once for each reason.
        Msg::ReconnectFailed(reason) => {
            if state.said_unreachable.as_ref() != Some(&reason) {
                let note = format!("could not reconnect: {reason}");
                state.conversation.note(&note, Tone::Error);
                state.said_unreachable = Some(reason);
                state.dirty = true;
            }
        }
        Msg::Focus(focused) => state.focused = focused,
        Msg::FileIndex(index) => {
            state.composer.picker.indexed(index);
            keys::refresh_mentions(state, &mut fx);
            state.dirty = true;
        }
        Msg::DraftEdited(Ok(text)) => {
            state.composer.replace_draft(&text);
            state.dirty = true;
        }
        Msg::DraftEdited(Err(why)) => {
            state.conversation.note(why, super::rows::Tone::Error);
            state.dirty = true;
        }
    }
    fx
}

/// Call the operator back, when `[console] notify` says so now.
pub(super) fn notify(state: &State, text: String, fx: &mut Vec<Effect>) {
    use super::state::NotifyWhen;
    let now = match state.notify {
        NotifyWhen::Off => false,
        NotifyWhen::Unfocused => !state.focused,
        NotifyWhen::Always => true,
    };
    if now {
        fx.push(Effect::Notify { text });
    }
}

/// Ask for `request`; the answer is routed by `pending`.
pub(crate) fn call(state: &mut State, request: Request, pending: Pending) -> Effect {
    state.next_id += 1;
    let id = state.next_id;
    state.pending.insert(id, (state.agent_id.clone(), pending));
    Effect::Call { id, request }
}

/// `call`, on another runtime than the one shown.
pub(crate) fn call_on(
    state: &mut State,
    runtime: String,
    request: Request,
    pending: Pending,
) -> Effect {
    match call(state, request, pending) {
        Effect::Call { id, request } => Effect::CallOn {
            runtime,
            id,
            request,
        },
        other => other,
    }
}

fn on_tick(state: &mut State, now_ms: i64, fx: &mut Vec<Effect>) {
    state.now_ms = now_ms;
    super::quit::on_tick(state, now_ms);
    super::detach::on_tick(state, now_ms, fx);
    if state.wants_tick() {
        state.dirty = true;
    }
    stack::with_top(state, fx, |o, ctx| o.on_tick(ctx));
}

/// The console opened in a directory: an agent still in its home starts
/// working there; one working elsewhere is not moved, only told.
fn bind_here(
    state: &mut State,
    x: &crate::protocol::types::ExecutionSnapshot,
    fx: &mut Vec<Effect>,
) {
    use super::overlays::workspaces::{open_binding, OpenBinding};
    let Some(here) = state.console_dir.clone() else {
        return;
    };
    match open_binding(x, &here) {
        OpenBinding::Nothing => {}
        OpenBinding::Offer(text) => state.conversation.note(text, Tone::Info),
        OpenBinding::Use => {
            let request = Request::WorkspaceUse {
                agent_id: state.agent_id.clone(),
                target: crate::protocol::types::UseWorkspace {
                    path: Some(here.display().to_string()),
                    workspace_id: None,
                    mode: crate::protocol::types::WorkspaceMode::Direct,
                },
            };
            fx.push(call(state, request, Pending::WorkspaceUse));
        }
    }
}

fn bootstrap(state: &mut State, s: &AgentState, fx: &mut Vec<Effect>) {
    state.agent.bootstrap(s);
    state.mode = s.display_mode;
    state.dirty = true;
    if std::mem::take(&mut state.bind_on_open) {
        bind_here(state, &s.agent.execution, fx);
    }
    if s.agent.model.is_none() && !std::mem::replace(&mut state.told_no_model, true) {
        state.conversation.note(
            "No model is configured: set HOLON_MODEL=provider/model (e.g. openai/gpt-4.1) \
             before starting, or type /model provider/model.",
            Tone::Info,
        );
    }
    let held = match &mut state.history {
        History::Waiting { held } => std::mem::take(held),
        History::Loading { .. } | History::Done => return, // a reconnect
    };
    if s.last_event_seq == 0 {
        state.history = History::Done;
        for e in held {
            apply_live(state, &e, fx);
        }
        return;
    }
    let from = s
        .last_event_seq
        .saturating_sub(HISTORY_EVENTS as u64 - 1)
        .max(1);
    let request = Request::EventsPage {
        agent_id: state.agent_id.clone(),
        from_seq: from,
        limit: HISTORY_EVENTS,
        kind: None,
    };
    let effect = call(state, request, Pending::History);
    if let Effect::Call { id, .. } = &effect {
        state.history = History::Loading {
            id: *id,
            from,
            upto: s.last_event_seq,
            held,
        };
    }
    fx.push(effect);
}

fn on_event(state: &mut State, e: EventRecord, fx: &mut Vec<Effect>) {
    match &mut state.history {
        History::Waiting { held } | History::Loading { held, .. } => {
            held.push(e);
            return;
        }
        History::Done => {}
    }
    apply_live(state, &e, fx);
}

/// A live event: the projection, the conversation, open overlays.
pub(super) fn apply_live(state: &mut State, e: &EventRecord, fx: &mut Vec<Effect>) {
    if e.event_seq <= state.conversation.applied_seq {
        return;
    }
    let typed = e.event();
    let op = present_event(e, &typed);
    let touched = state.agent.apply(e, &typed);
    let operator_task = operator_task(state, e, &typed);
    let applied = state.conversation.apply(e, &typed, &op, operator_task);
    if op.is_operator_message() {
        state.attention = false; // the operator answered (here or elsewhere)
    }
    if applied.attention {
        state.attention = true;
        notify(state, format!("{} needs your input", state.agent_id), fx);
    } else if let Event::TurnTerminal(p) = &typed {
        // A turn that ended waiting for the operator already called them.
        if !state.attention {
            let how = p.kind.as_str().replace('_', " ");
            notify(state, format!("{}: turn {how}", state.agent_id), fx);
        }
    }
    if applied.settled {
        state.attention = false; // answered here or from another terminal
    }
    if let Event::AgentStateChanged(_) = &typed {
        super::detach::state_changed(state, fx);
    }
    // Which call single keys answer may change with a turn's wait too.
    if matches!(
        typed,
        Event::ApprovalRequested(_)
            | Event::ApprovalGranted(_)
            | Event::ApprovalDenied(_)
            | Event::TurnAwaitingApproval(_)
            | Event::MessageInterjected(_)
            | Event::TurnTerminal(_)
    ) {
        state.composer.approvals = state.conversation.waiting_approvals();
    }
    if let Event::DisplayModeChanged(p) = &typed {
        state.mode = p.to;
    }
    state.overlays.on_event(e);
    if touched == super::projection::Touched::RefreshSummary {
        refresh(state, fx);
    }
    state.dirty = true;
}

/// Whether the task an event is about was started by the operator.
pub(super) fn operator_task(state: &State, e: &EventRecord, typed: &Event) -> bool {
    typed
        .task_id()
        .or(e.provenance.task_id.as_deref())
        .and_then(|id| state.agent.task(id))
        .is_some_and(|t| t.operator)
}

/// One `agent.status` in flight at most; signals while it flies ask for
/// one more afterwards.
pub(super) fn refresh(state: &mut State, fx: &mut Vec<Effect>) {
    if state.refresh.is_some() {
        state.refresh_again = true;
        return;
    }
    let request = Request::AgentStatus {
        agent_id: state.agent_id.clone(),
    };
    let effect = call(state, request, Pending::Refresh);
    if let Effect::Call { id, .. } = &effect {
        state.refresh = Some(*id);
    }
    fx.push(effect);
}

fn on_response(
    state: &mut State,
    id: RequestId,
    result: Result<Response, ApiError>,
    fx: &mut Vec<Effect>,
) {
    let Some((agent_id, pending)) = state.pending.remove(&id) else {
        return; // stale or unknown: dropped
    };
    // About the whole runtime, not the agent it was asked for.
    match pending {
        Pending::QuitCheck => return super::quit::checked(state, result, fx),
        Pending::DetachCheck => return super::detach::checked(state, result, fx),
        Pending::AnswerOn(runtime) => return super::runtimes::answered(state, &runtime, result),
        _ => {}
    }
    if agent_id != state.agent_id {
        return;
    }
    state.dirty = true;
    match pending {
        Pending::QuitCheck | Pending::DetachCheck | Pending::AnswerOn(_) => {}
        Pending::Prompt => match result.and_then(Response::take::<Admitted>) {
            Ok(a) => state.conversation.echo_answered(id, Some(a.message_id)),
            // A refusal the runtime records (message_rejected) gets its
            // own alert row from that event: the prompt row only says it
            // was not sent, so the reason is shown once.
            Err(e) if e.code == ErrorCode::AgentStopped => state.conversation.echo_failed(id, ""),
            Err(e) => state.conversation.echo_failed(id, &e.message),
        },
        Pending::Command => match result.and_then(Response::take::<TaskRecord>) {
            Ok(t) => state.conversation.echo_answered(id, Some(t.id)),
            Err(e) => state.conversation.echo_failed(id, &e.message),
        },
        Pending::History => {
            if let History::Loading {
                id: want,
                from,
                upto,
                ..
            } = &state.history
            {
                if *want == id {
                    let span = (*from, *upto);
                    let held = match std::mem::replace(&mut state.history, History::Done) {
                        History::Loading { held, .. } | History::Waiting { held } => held,
                        History::Done => Vec::new(),
                    };
                    let page = result.and_then(Response::take::<EventsPage>);
                    if let Err(e) = &page {
                        state
                            .conversation
                            .note(format!("Could not load the history: {e}"), Tone::Error);
                    }
                    let events = page.map(|p| p.events).unwrap_or_default();
                    super::pages::history_arrived(state, span, held, events, fx);
                }
            }
        }
        Pending::Older { from, upto } => {
            if state.older == Some(id) {
                state.older = None;
                // Rows went back to the ledger meanwhile (the window moved
                // on): this page no longer joins the oldest row held.
                if state.conversation.first_seq == upto + 1 {
                    super::pages::older_arrived(state, from, upto, result, fx);
                } else {
                    super::find::page_lost(state, "the view moved on while older turns loaded");
                }
            }
        }
        Pending::Refresh => {
            state.refresh = None;
            if let Ok(s) = result.and_then(Response::take::<AgentSummary>) {
                state.agent.apply_summary(&s, false);
            }
            if std::mem::take(&mut state.refresh_again) {
                refresh(state, fx);
            }
        }
        Pending::Overlay(kind) => {
            let result = &result;
            stack::with_kind(state, fx, kind, |o, ctx| o.on_response(id, result, ctx));
        }
        other => super::answers::answered(state, other, result, fx),
    }
}
