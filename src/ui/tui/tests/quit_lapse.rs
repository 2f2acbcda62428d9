//! A quit warning that is not confirmed lapses: a quit long after it asks
//! the runtime again instead of going at once.

use super::super::msg::{Effect, Msg};
use super::super::quit::WARNING_MS;
use super::super::update;
use super::fixtures::*;

/// A console whose agent is inside a turn.
fn running() -> super::super::State {
    let mut st = fresh();
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "go"), s.turn("msg_1", "run_1")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    st
}

/// The effects ask the runtime to abort the turn, and nothing else.
fn aborts(fx: &[Effect]) -> bool {
    matches!(
        requests(fx).as_slice(),
        [crate::protocol::Request::Control {
            action: crate::protocol::ControlAction::Abort,
            ..
        }]
    )
}

/// `/quit` with a turn running: the check, answered; the warning shown.
fn warned(st: &mut super::super::State) {
    let fx = enter(st, "/quit");
    let id = call_id(&fx, "runtime.status");
    let result = answer(&fx, id, runtime_status(vec![summary_of("main")]));
    assert!(update(st, Msg::Response { id, result }).is_empty(), "asked");
    assert!(st.quit_asked);
}

#[test]
fn an_unconfirmed_quit_warning_lapses_and_the_next_quit_asks_again() {
    let mut st = running();
    warned(&mut st);
    assert!(st.needs_clock(), "the warning is timed");
    let t0 = 1_000_000;
    update(&mut st, Msg::Tick { now_ms: t0 });
    update(
        &mut st,
        Msg::Tick {
            now_ms: t0 + WARNING_MS - 1,
        },
    );
    assert!(st.quit_asked, "still waiting for the second quit");
    update(
        &mut st,
        Msg::Tick {
            now_ms: t0 + WARNING_MS,
        },
    );
    assert!(!st.quit_asked, "lapsed");
    assert!(screen(&st).contains("The quit warning lapsed"), "said");
    // The next quit checks again, and a second one right after goes.
    let fx = enter(&mut st, "/quit");
    assert!(!fx.contains(&Effect::Quit), "{fx:?}");
    call_id(&fx, "runtime.status");
    let fx = enter(&mut st, "/quit");
    assert!(
        aborts(&fx),
        "the second quit goes on, the turn aborted first: {fx:?}"
    );
}

#[test]
fn a_confirmed_quit_waiting_for_its_abort_does_not_lapse() {
    let mut st = running();
    warned(&mut st);
    enter(&mut st, "/quit");
    assert!(st.quit_after_abort, "the turn's abort was asked for");
    update(&mut st, Msg::Tick { now_ms: 0 });
    update(
        &mut st,
        Msg::Tick {
            now_ms: 10 * WARNING_MS,
        },
    );
    assert!(
        st.quit_asked,
        "confirmed: it quits once the abort is answered"
    );
}

#[test]
fn a_confirmed_quit_within_the_warning_goes() {
    let mut st = running();
    warned(&mut st);
    update(&mut st, Msg::Tick { now_ms: 5_000 });
    update(&mut st, Msg::Tick { now_ms: 20_000 });
    let fx = enter(&mut st, "/quit");
    assert!(
        aborts(&fx),
        "no second check: the turn is aborted and the console quits: {fx:?}"
    );
}

#[test]
fn a_warning_about_other_agents_alone_keeps_the_clock_and_lapses() {
    use crate::protocol::AgentSummary;
    // Nothing animates here: the warning is about another agent's turn.
    let mut st = fresh();
    let fx = enter(&mut st, "/quit");
    let id = call_id(&fx, "runtime.status");
    let dev = AgentSummary {
        posture: crate::model::decision::AgentSchedulingPosture::ActiveTurn,
        ..summary_of("dev")
    };
    let result = answer(&fx, id, runtime_status(vec![summary_of("main"), dev]));
    assert!(update(&mut st, Msg::Response { id, result }).is_empty());
    assert!(!st.wants_tick(), "nothing animates");
    assert!(st.needs_clock(), "but the warning is timed");
    update(&mut st, Msg::Tick { now_ms: 0 });
    update(&mut st, Msg::Tick { now_ms: WARNING_MS });
    assert!(!st.quit_asked && !st.needs_clock(), "lapsed, and no clock");
}

#[test]
fn switching_agents_forgets_the_warning() {
    let mut st = running();
    warned(&mut st);
    let fx = enter(&mut st, "/agent switch dev");
    let id = call_id(&fx, "agent.status");
    let result = answer(&fx, id, serde_json::json!(summary_of("dev")));
    update(&mut st, Msg::Response { id, result });
    assert_eq!(st.agent_id, "dev");
    assert!(!st.quit_asked, "the warning spoke of another agent");
}

/// Scrolled back through the conversation, the quit warning is still in
/// view: on the composer's line, until it is answered or lapses.
#[test]
fn the_quit_warning_stays_where_the_eye_is() {
    let mut st = running();
    for n in 0..60 {
        st.conversation
            .note(format!("filler {n}"), super::super::rows::Tone::Info);
    }
    update(&mut st, key(crossterm::event::KeyCode::PageUp));
    update(&mut st, key(crossterm::event::KeyCode::PageUp));
    warned(&mut st);
    let text = screen(&st);
    let composer = text
        .lines()
        .find(|l| l.contains("Quit again to confirm"))
        .unwrap_or_else(|| panic!("the warning is not in view:\n{text}"));
    assert!(
        composer.contains("› "),
        "not on the composer's line: {composer}"
    );
    let t0 = 1_000_000;
    update(&mut st, Msg::Tick { now_ms: t0 });
    update(
        &mut st,
        Msg::Tick {
            now_ms: t0 + WARNING_MS,
        },
    );
    assert!(!screen(&st).contains("Quit again to confirm"), "lapsed");
}
