//! Detaching an embedded console (`/detach`): the runtime is handed to a
//! background daemon. The store is one process's at a time, so the
//! embedded runtime stops first, and a turn it cuts off runs again in the
//! daemon: its model calls would be paid twice. So with a turn running,
//! detaching waits: no new turn starts (`Effect::HoldTurns`), the running
//! ones end, then the console detaches. The wait is said on the
//! composer's line, with Esc to detach now. An attached console only
//! closes: nothing stops.

use super::msg::{Connection, Effect};
use super::rows::Tone;
use super::state::{Pending, State};
use super::update::call;
use crate::protocol::{ApiError, Request, Response, RuntimeStatus};

/// How often the runtime is asked again whether turns still run.
const POLL_MS: i64 = 1_000;

/// Detaching's progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Detaching {
    /// Turns were running: no new one starts, the console waits for them.
    pub waiting: bool,
    /// A status request is out.
    pub checking: bool,
    /// When the runtime was last asked (epoch ms).
    pub asked_ms: Option<i64>,
}

/// `/detach`.
pub fn detach(state: &mut State, fx: &mut Vec<Effect>) {
    if super::runtimes::home_first(state, "/detach", fx) {
        return;
    }
    if state.connection != Connection::Embedded {
        return fx.push(Effect::Detach);
    }
    if state.detaching.waiting {
        // Asked again while waiting: the operator means now.
        return now(state, fx);
    }
    ask(state, fx);
}

/// The conversation shows another agent: a check asked for the one shown
/// before was dropped with its requests; the next tick asks again.
pub fn view_changed(state: &mut State) {
    state.detaching.checking = false;
    state.detaching.asked_ms = state.detaching.asked_ms.map(|_| 0);
}

/// Esc while detaching waits: detach now.
pub fn now(state: &mut State, fx: &mut Vec<Effect>) {
    state.conversation.note(
        "Detaching now: a turn cut off runs again in the background runtime (its model calls \
         are made again)."
            .to_owned(),
        Tone::Info,
    );
    fx.push(Effect::Detach);
}

fn ask(state: &mut State, fx: &mut Vec<Effect>) {
    if state.detaching.asked_ms.is_none() {
        // Held from the first ask: a turn must not start between an
        // answer of none running and the hand-over. Detaching goes on
        // either way, so the hold costs nothing.
        fx.push(Effect::HoldTurns);
    }
    state.detaching.checking = true;
    state.detaching.asked_ms = Some(state.now_ms);
    fx.push(call(state, Request::RuntimeStatus, Pending::DetachCheck));
}

/// While waiting, the runtime is asked again every `POLL_MS`.
pub fn on_tick(state: &mut State, now_ms: i64, fx: &mut Vec<Effect>) {
    let d = state.detaching;
    if d.waiting && !d.checking && d.asked_ms.is_none_or(|at| now_ms - at >= POLL_MS) {
        ask(state, fx);
    }
}

/// The viewed agent's state changed (its turn may have ended): while
/// waiting, ask at once rather than at the next poll.
pub fn state_changed(state: &mut State, fx: &mut Vec<Effect>) {
    if state.detaching.waiting && !state.detaching.checking {
        ask(state, fx);
    }
}

/// The runtime's answer: no turn runs, detach; turns run, hold new ones
/// and wait (said once). Without an answer, detach: the operator asked.
pub fn checked(state: &mut State, result: Result<Response, ApiError>, fx: &mut Vec<Effect>) {
    if !std::mem::replace(&mut state.detaching.checking, false) {
        return;
    }
    let running = match result.and_then(Response::take::<RuntimeStatus>) {
        Ok(status) => status.activity.running_turn_count,
        Err(e) => {
            let text = format!(
                "The runtime did not say whether turns run ({}): detaching now.",
                e.message
            );
            state.conversation.note(text, Tone::Info);
            return fx.push(Effect::Detach);
        }
    };
    if running == 0 {
        return fx.push(Effect::Detach);
    }
    if !state.detaching.waiting {
        state.detaching.waiting = true;
        let turns = match running {
            1 => "a turn is running".to_owned(),
            n => format!("{n} turns are running"),
        };
        let text = format!(
            "Detaching once {}: {turns}, and cutting it off would make its model calls again in \
             the background runtime. No new turn starts meanwhile (queued work waits for the \
             background runtime). Esc detaches now.",
            if running == 1 { "it ends" } else { "they end" }
        );
        state.conversation.note(text, Tone::Info);
    }
    state.dirty = true;
}

/// What the composer's line says while detaching waits.
pub fn waiting_line(state: &State) -> Option<&'static str> {
    state.detaching.waiting.then_some(
        "Detaching once the running turn ends (no model call is paid twice) · Esc detaches now",
    )
}
