//! Quitting (`/quit`, Ctrl+C on an empty composer). An embedded console
//! owns the runtime, and its other agents' work is not on this screen: it
//! asks the runtime which agents are at work first, and with anything
//! running asks once, saying what quitting does to each. The viewed
//! agent's turn is aborted (recorded as aborted, never replayed at the
//! next start); the other agents' running turns are cut off and run again
//! at the next start; commands stop with the runtime. A second quit while
//! the runtime has not answered goes ahead, so a console always quits.
//! A warning left unanswered for 30 seconds lapses: a quit after that
//! asks the runtime again, as what runs has likely changed.

use super::msg::{Connection, Effect};
use super::rows::Tone;
use super::state::{Pending, State};
use super::update::call;
use crate::protocol::{ApiError, Request, Response, RuntimeStatus};

/// How long a quit warning waits for its second quit.
pub const WARNING_MS: i64 = 30_000;

/// The clock: a warning is timed from the first tick after it, and
/// lapses after `WARNING_MS`.
pub fn on_tick(state: &mut State, now_ms: i64) {
    // Confirmed: the console quits once the runtime answered the abort.
    if !state.quit_asked || state.quit_after_abort {
        return;
    }
    match state.quit_asked_ms {
        None => state.quit_asked_ms = Some(now_ms),
        Some(at) if now_ms - at >= WARNING_MS => {
            state.quit_asked = false;
            state.quit_asked_ms = None;
            state.quit_warning = None;
            // The warning on screen no longer holds: say so.
            let text = "The quit warning lapsed: quitting now asks again what is at work.";
            state
                .conversation
                .note(text.to_owned(), super::rows::Tone::Info);
        }
        Some(_) => {}
    }
}

pub fn quit(state: &mut State, fx: &mut Vec<Effect>) {
    if super::runtimes::home_first(state, "/quit", fx) {
        return;
    }
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
/// answer, say so and wait for a second quit too.
pub fn checked(state: &mut State, result: Result<Response, ApiError>, fx: &mut Vec<Effect>) {
    if !std::mem::replace(&mut state.quit_checking, false) || state.quit_asked {
        return;
    }
    state.quit_asked = true;
    let status = match result.and_then(Response::take::<RuntimeStatus>) {
        Ok(status) => status,
        Err(e) => {
            let text = format!(
                "The runtime did not say which agents are at work ({}): quitting stops whatever \
                 runs. Quit again to confirm.",
                e.message
            );
            state.quit_warning = Some(text.clone());
            return state.conversation.note(text, Tone::Info);
        }
    };
    match warning(state, &others_at_work(state, &status)) {
        Some(text) => {
            state.quit_warning = Some(text.clone());
            state.conversation.note(text, Tone::Info)
        }
        None => quit(state, fx),
    }
}

/// The other agents at work: the listed ones inside a turn (whatever their
/// status: a paused agent's turn runs on) or with tasks running, and how
/// many more the runtime counts that its list leaves out (private
/// children, agents past the first 50).
fn others_at_work(state: &State, status: &RuntimeStatus) -> Others {
    let in_turn = |a: &crate::protocol::AgentSummary| {
        a.posture == crate::model::decision::AgentSchedulingPosture::ActiveTurn
    };
    let named = status
        .agents
        .iter()
        .filter(|a| a.id != state.agent_id && (in_turn(a) || a.tasks_active > 0))
        .map(|a| a.id.clone())
        .collect();
    let listed_turns = status.agents.iter().filter(|a| in_turn(a)).count() as u64;
    let listed_tasks: u64 = status.agents.iter().map(|a| a.tasks_active).sum();
    let unlisted = status
        .activity
        .processing_agent_count
        .saturating_sub(listed_turns)
        .max(u64::from(status.activity.active_task_count > listed_tasks));
    Others { named, unlisted }
}

struct Others {
    named: Vec<String>,
    unlisted: u64,
}

/// What quitting would stop, or `None` when nothing is at work.
fn warning(state: &State, others: &Others) -> Option<String> {
    let tasks = state.agent.active_tasks();
    let mut parts = Vec::new();
    if state.conversation.turn.is_some() {
        parts.push(
            "a turn is running: quitting aborts it (recorded as aborted by the operator; the next \
             start does not run it again)"
                .to_owned(),
        );
    }
    match tasks {
        0 => {}
        1 => parts.push(
            "1 task is running: quitting stops its command (a child agent's turn runs again at \
             the next start)"
                .to_owned(),
        ),
        n => parts.push(format!(
            "{n} tasks are running: quitting stops their commands (child agents' turns run again \
             at the next start)"
        )),
    }
    if !others.named.is_empty() || others.unlisted > 0 {
        let mut named = match others.named.len() {
            n if n <= 3 => others.named.join(", "),
            n => format!("{} and {} more", others.named[..3].join(", "), n - 3),
        };
        if others.unlisted > 0 {
            let more = format!("{} not listed", others.unlisted);
            named = match named.is_empty() {
                true => more,
                false => format!("{named}; {more}"),
            };
        }
        parts.push(format!(
            "other agents are at work ({named}): quitting cuts their turns off (the next start \
             runs them again) and stops their commands"
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "{}. Quit again to confirm, or /detach to keep the work going in a background runtime.",
            parts.join("; ")
        )
    })
}
