//! A turn waiting for the answer to a call it asked, in the console: the
//! working row says it needs you (and stops saying so once the turn goes
//! on), single keys answer what the turn waits for, and a wait that ended
//! unanswered is said.

use crossterm::event::KeyCode;
use serde_json::json;

use super::super::msg::Msg;
use super::super::{update, State};
use super::approvals::{answered, asked, command_approval, patch_approval};
use super::fixtures::*;
use crate::protocol::Request;

/// What the runtime records when the turn `run` starts waiting.
fn waits(st: &mut State, run: &str) {
    let payload = json!({
        "run_id": run, "message_id": "msg_1", "approval_ids": ["apr_01a2b3"], "wait_ms": 300_000,
    });
    let mut e = session().push("turn_awaiting_approval", Some("msg_1"), payload);
    e.event_seq = st.conversation.applied_seq + 1;
    update(st, Msg::Event(Box::new(e)));
}

/// A turn waiting for the answer to a call it asked says it needs the
/// operator (not "thinking"), and works again once answered or once
/// something else joined it.
#[test]
fn a_turn_waiting_for_its_approval_says_it_needs_you_until_it_goes_on() {
    let mut st = fresh();
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "touch it"), s.turn("msg_1", "run_1")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let rec = command_approval();
    asked(&mut st, &rec);
    // Asked, but other calls of the round may still run: not yet waiting.
    assert_eq!(st.working().map(|w| w.label), Some("Working".into()));
    waits(&mut st, "run_1");
    let w = st.working().expect("the turn runs");
    assert_eq!(
        (w.label.as_str(), w.glyph, w.needs_operator, w.animated),
        ("Needs you", "▲", true, false)
    );
    assert!(
        w.detail.contains("ExecCommand `touch notes.txt`"),
        "{}",
        w.detail
    );
    answered(&mut st, &rec, "approval_granted", "granted", json!({}));
    let w = st.working().expect("the turn goes on");
    assert_eq!((w.label.as_str(), w.needs_operator), ("Working", false));

    // An interjection joins instead: the turn goes on, the call still
    // waits (its row says so), and the working row works again.
    let rec = patch_approval();
    asked(&mut st, &rec);
    waits(&mut st, "run_1");
    assert_eq!(st.working().map(|w| w.label), Some("Needs you".into()));
    let mut e = session().push(
        "message_interjected",
        Some("msg_9"),
        json!({
            "message_id": "msg_9", "from": "queued", "queue_status": "interjected",
            "detail": { "run_id": "run_1" },
        }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    assert_eq!(st.working().map(|w| w.label), Some("Working".into()));
}

/// Another turn's call still waiting does not make this one wait.
#[test]
fn an_older_turns_approval_does_not_make_the_running_turn_wait() {
    let mut st = fresh();
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "touch it"), s.turn("msg_1", "run_2")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    asked(&mut st, &command_approval());
    waits(&mut st, "run_2");
    let w = st.working().expect("the turn runs");
    assert_eq!(w.label, "Working");
}

/// `y` answers the call the running turn waits for, not an older one left
/// by a turn that ended; when a wait ends unanswered, the conversation
/// says the answer now starts a new turn.
#[test]
fn y_answers_what_the_turn_waits_for_and_an_ended_wait_is_said() {
    let mut st = fresh();
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "touch it"), s.turn("msg_1", "run_1")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    // The older call (run_1) waited, and its turn ended without the answer.
    asked(&mut st, &command_approval());
    waits(&mut st, "run_1");
    let mut e = s.turn_end("msg_1", "run_1", "completed", 1, 900, "");
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    assert!(
        screen(&st).contains("The turn stopped waiting for your answer"),
        "{}",
        screen(&st)
    );
    // A new turn asks for the patch and waits for it.
    let mut e = s.turn("msg_2", "run_2");
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    let mut patch = patch_approval();
    patch["run_id"] = json!("run_2");
    asked(&mut st, &patch);
    waits(&mut st, "run_2");
    let fx = update(&mut st, key(KeyCode::Char('y')));
    let approved = fx.iter().find_map(|e| match e {
        crate::ui::tui::msg::Effect::Call {
            request: Request::ApprovalApprove { approval_id, .. },
            ..
        } => Some(approval_id.clone()),
        _ => None,
    });
    assert_eq!(approved.as_deref(), Some("apr_01a2b4"), "{fx:?}");
}
