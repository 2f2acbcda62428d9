//! Quitting (`/quit`, Ctrl+C on an empty composer). An embedded console
//! owns the runtime, and its other agents' work is not on this screen: it
//! asks the runtime which agents are at work first, and with anything
//! running asks once, saying what quitting does to each. The viewed
//! agent's turn is aborted (recorded as aborted, never replayed at the
//! next start); the other agents' running turns are cut off and run again
//! at the next start; commands stop with the runtime. A second quit while
//! the runtime has not answered goes ahead, so a console always quits.

use super::msg::{Connection, Effect};
use super::rows::Tone;
use super::state::{Pending, State};
use super::update::call;
use crate::protocol::types::AgentStatus;
use crate::protocol::{ApiError, Request, Response, RuntimeStatus};

pub fn quit(state: &mut State, fx: &mut Vec<Effect>) {
    let embedded = state.connection == Connection::Embedded;
    if embedded && !state.quit_asked {
        if std::mem::replace(&mut state.quit_checking, true) {
            // Asked twice before the runtime answered: go.
            state.quit_asked = true;
        } else {
            fx.push(call(state, Request::RuntimeStatus, Pending::QuitCheck));
            return;
        }
    }
    let turn = state.conversation.turn.is_some();
    if embedded && turn && !state.quit_after_abort {
        state.quit_after_abort = true;
        return super::commands::abort(state, fx);
    }
    fx.push(Effect::Quit);
}

/// The runtime's answer to the quit check: with work running, say what
/// quitting does and wait for a second quit; else quit now. Without an
/// answer, only what this screen shows is said.
pub fn checked(state: &mut State, result: Result<Response, ApiError>, fx: &mut Vec<Effect>) {
    if !std::mem::replace(&mut state.quit_checking, false) || state.quit_asked {
        return;
    }
    let others: Vec<String> = match result.and_then(Response::take::<RuntimeStatus>) {
        Ok(status) => status
            .agents
            .iter()
            .filter(|a| a.id != state.agent_id)
            .filter(|a| a.status == AgentStatus::AwakeRunning || a.tasks_active > 0)
            .map(|a| a.id.clone())
            .collect(),
        Err(_) => Vec::new(),
    };
    state.quit_asked = true;
    match warning(state, &others) {
        Some(text) => state.conversation.note(text, Tone::Info),
        None => quit(state, fx),
    }
}

/// What quitting would stop, or `None` when nothing is at work.
fn warning(state: &State, others: &[String]) -> Option<String> {
    let tasks = state.agent.active_tasks();
    let turn = state.conversation.turn.is_some();
    let mut here = Vec::new();
    if turn {
        here.push("a turn is running".to_owned());
    }
    match tasks {
        0 => {}
        1 => here.push("1 task is running".to_owned()),
        n => here.push(format!("{n} tasks are running")),
    }
    let keep = "Quit again to confirm, or /detach to keep the work going in a background runtime.";
    let this = "quitting stops them (recorded as stopped; the next start does not run them again)";
    if others.is_empty() {
        return (!here.is_empty()).then(|| format!("{}: {this}. {keep}", here.join(" and ")));
    }
    let named = match others.len() {
        n if n <= 3 => others.join(", "),
        n => format!("{} and {} more", others[..3].join(", "), n - 3),
    };
    let others_too = format!(
        "other agents are at work ({named}): quitting cuts their turns off (the next start runs \
         them again) and stops their commands"
    );
    Some(match here.is_empty() {
        true => format!("{others_too}. {keep}"),
        false => format!("{}: {this}; {others_too}. {keep}", here.join(" and ")),
    })
}
