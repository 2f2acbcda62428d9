//! The answer streaming into the conversation: markdown at every chunk
//! boundary, late deltas of a recorded round, an attempt that starts
//! over, and an answer cut off.

use serde_json::json;

use super::super::msg::Msg;
use super::super::{update, State};
use super::approvals::prompted;
use super::fixtures::*;
use crate::model::agent::DisplayMode as StoredMode;

/// Stream `text` of provider `attempt` (0: not numbered) into the
/// running turn `run_9`.
fn streamed(st: &mut State, attempt: u32, text: &str) {
    let delta = Msg::AssistantDelta {
        agent_id: "main".into(),
        run_id: "run_9".into(),
        attempt,
        text: text.into(),
    };
    update(st, delta);
}

const ANSWER: &str = "## What changed\n\nThe retry loop read the clock **twice**;\nnow it reads it once.\n\n```rust\nlet now = clock.now();\nlet deadline = now + limit;\n```\n\n| file | change |\n|---|---|\n| src/retry.rs | one clock read |\n\n> CI passes on the slow runner.\n\nDone.";

fn text_of(lines: &[ratatui::text::Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

#[test]
fn a_streaming_answer_renders_as_markdown_at_every_chunk_boundary() {
    use super::super::conversation::stable_cut;
    use super::super::theme::Theme;
    let t = Theme { no_color: true };
    // A long code block streams in chunks of its lines, rendered once.
    let code: String = (0..40).map(|i| format!("let x{i} = {i};\n")).collect();
    let long_code = format!("Here:\n\n```rust\n{code}```\n\nThat is all.");
    for answer in [ANSWER, long_code.as_str()] {
        // What the finished answer looks like, with the answer's marker.
        let mut whole = super::super::markdown::render(answer, 80, "  ", t);
        whole[0].spans[0] = ratatui::text::Span::raw("● ");
        let whole = text_of(&whole);
        for chunk in [1, 3, 7, 64, answer.len()] {
            let mut c = super::super::conversation::Conversation::default();
            c.turn = Some(super::super::conversation::Turn {
                run_id: Some("run_1".into()),
                message_id: None,
                started_ms: None,
                activity: None,
                tool: None,
                tokens: 0,
                retry: None,
                awaiting: false,
            });
            let mut fed = 0;
            while fed < answer.len() {
                let mut end = (fed + chunk).min(answer.len());
                while !answer.is_char_boundary(end) {
                    end += 1;
                }
                c.delta("run_1", 1, &answer[fed..end]);
                fed = end;
                // Every intermediate frame renders (finished blocks cached).
                let lines = c.stream_lines(80, t, 1_000);
                assert!(!lines.is_empty() || answer[..fed].trim().is_empty());
            }
            assert_eq!(
                text_of(&c.stream_lines(80, t, 1_000)),
                whole,
                "chunk {chunk}"
            );
            // The bottom of it when the screen is short.
            let bottom = text_of(&c.stream_lines(80, t, 3));
            assert_eq!(bottom, whole[whole.len() - 3..].to_vec());
        }
    }
    assert!(
        text_of(&super::super::markdown::render(ANSWER, 80, "  ", t))
            .iter()
            .any(|l| l.contains("┌ rust"))
    );
    // Finished parts end after a blank line outside a fence, after a
    // closed fence, or every 16 lines inside an open one.
    let at = |t: &str| stable_cut(t).at;
    assert_eq!(at("a\n\nb"), 3);
    assert_eq!(at("```\nx\n\ny"), 0, "inside an open fence");
    assert_eq!(at("```\nx\n```\nmore"), 10, "after a closed fence");
    let long: String = (0..20).map(|i| format!("line {i}\n")).collect();
    let text = format!("```rust\n{long}");
    let c = stable_cut(&text);
    assert_eq!(c.fence.as_deref(), Some("rust"));
    assert!(text[..c.at].ends_with("line 15\n"), "{}", &text[..c.at]);
    // Between plain lines of a paragraph that began after a blank line.
    let c = stable_cut("Intro.\n\nOne line.\nTwo line.\nThree");
    assert_eq!((c.at, c.soft), (18, true), "before `Two line.`");
    assert_eq!(
        at("- item\nlazy one\nlazy two\n"),
        0,
        "a list's lazy lines are not cut"
    );
    assert_eq!(at("Title\n===\n"), 0, "a setext heading is not cut");
}

#[test]
fn the_streaming_answer_shows_in_the_conversation_not_as_one_raw_line() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let mut s = prompted(&mut st, "what changed?", Some("run_9"));
    streamed(&mut st, 0, &ANSWER[..120]);
    let text = screen(&st);
    assert!(text.contains("● What changed"), "{text}");
    assert!(text.contains("┌ rust"), "{text}");
    assert!(!text.contains("## What"), "no raw markdown: {text}");
    assert!(
        text.contains("answering"),
        "the working row says what happens: {text}"
    );
    // A delta of another run is not drawn; the round's record ends the
    // stream, and its late deltas are not taken for the next round's.
    let other = Msg::AssistantDelta {
        agent_id: "main".into(),
        run_id: "run_other".into(),
        attempt: 1,
        text: "GHOST".into(),
    };
    update(&mut st, other);
    assert!(!screen(&st).contains("GHOST"));
    let mut e = s.push(
        "assistant_round_recorded",
        Some("msg_9"),
        json!({ "run_id": "run_9", "round": 1, "text_preview": &ANSWER[..120], "text_chars": 125, "tool_names": [] }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    assert!(st.conversation.stream.is_none());
    streamed(&mut st, 0, "LATE!next round");
    let stream = st.conversation.stream.as_ref().map(|(_, t)| t.as_str());
    assert_eq!(
        stream,
        Some("next round"),
        "5 late characters were the old round's"
    );
}

/// The text the console streams now, if any.
fn stream_text(st: &State) -> Option<&str> {
    st.conversation.stream.as_ref().map(|(_, t)| t.as_str())
}

#[test]
fn an_answer_that_starts_over_is_drawn_once_and_its_late_text_dropped() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let mut s = prompted(&mut st, "explain", Some("run_9"));
    streamed(&mut st, 1, "An early draft of it");
    assert!(screen(&st).contains("An early draft of it"));
    // The provider was tried again: the answer starts over at once, before
    // the new attempt writes anything.
    streamed(&mut st, 2, "");
    assert!(!screen(&st).contains("draft"), "{}", screen(&st));
    streamed(&mut st, 2, "The loop reads ");
    streamed(&mut st, 2, "the clock");
    let text = screen(&st);
    assert!(text.contains("● The loop reads the clock"), "{text}");
    assert!(!text.contains("draft"), "the cut attempt is gone: {text}");
    // The round is recorded (answered by attempt 2) before the rest of
    // its attempt arrived: the rest is dropped whole, however long.
    let record = |s: &mut Script, st: &mut State| {
        let mut e = s.push(
            "assistant_round_recorded",
            Some("msg_9"),
            json!({ "run_id": "run_9", "round": 1, "text_preview": "The loop reads the clock twice.",
                    "text_chars": 31, "tool_names": ["ReadFile"], "attempt": 2 }),
        );
        e.event_seq = st.conversation.applied_seq + 1;
        update(st, Msg::Event(Box::new(e)));
    };
    record(&mut s, &mut st);
    streamed(
        &mut st,
        2,
        " twice. And the late tail is longer than the skip.",
    );
    assert_eq!(stream_text(&st), None);
    streamed(&mut st, 3, "Next round");
    assert_eq!(stream_text(&st), Some("Next round"));
    // A record that arrives after the next round's text overtook it
    // leaves that text streaming.
    record(&mut s, &mut st);
    assert_eq!(stream_text(&st), Some("Next round"));
    // Cut off with nothing recorded by the runtime: what the round's last
    // attempt streamed is kept.
    streamed(&mut st, 4, "Third try");
    let mut e = s.push(
        "turn_terminal",
        Some("msg_9"),
        json!({ "run_id": "run_9", "message_id": "msg_9", "kind": "aborted", "rounds": 2,
                "last_assistant_message": "", "duration_ms": 900, "cancel_reason": "operator_abort" }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    let text = screen(&st);
    assert!(text.contains("● Third try"), "{text}");
    assert!(!text.contains("Next round"), "{text}");
}

#[test]
fn a_retry_is_said_on_the_working_row_with_its_wait_counted_down() {
    use crate::model::attempt::{RetryNext, RetryNotice};
    use crate::model::usage::FailureKind;
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let t0 = 1_800_000_000_000;
    update(&mut st, Msg::Tick { now_ms: t0 });
    let _s = prompted(&mut st, "explain", Some("run_9"));
    streamed(&mut st, 1, "An early draft of it");
    let retry = |st: &mut State, run: &str| {
        let notice = RetryNotice {
            model_ref: "openai/gpt-5".into(),
            attempt: 1,
            max_attempts: 3,
            failure_kind: FailureKind::RateLimited,
            status: Some(429),
            next: RetryNext::Retry,
            backoff_ms: Some(8_000),
        };
        let msg = Msg::ProviderRetry {
            agent_id: "main".into(),
            run_id: run.into(),
            attempt: 1,
            notice,
            heard_ms: t0,
        };
        update(st, msg);
    };
    // Another run's notice is not this turn's.
    retry(&mut st, "run_1");
    assert!(screen(&st).contains("An early draft"));
    retry(&mut st, "run_9");
    let text = screen(&st);
    assert!(
        !text.contains("draft"),
        "the failed attempt is not the answer: {text}"
    );
    assert!(
        text.contains("rate limited (429) · retry 2 of 3 in 8s"),
        "{text}"
    );
    // Late text of the failed attempt is not drawn.
    streamed(&mut st, 1, " goes on");
    assert_eq!(stream_text(&st), None);
    update(&mut st, Msg::Tick { now_ms: t0 + 5_500 });
    assert!(
        screen(&st).contains("retry 2 of 3 in 3s"),
        "{}",
        screen(&st)
    );
    // The wait is over and the retry starts: it says which attempt runs.
    update(&mut st, Msg::Tick { now_ms: t0 + 9_000 });
    streamed(&mut st, 2, "");
    let text = screen(&st);
    assert!(text.contains("rate limited (429) · retry 2 of 3"), "{text}");
    assert!(!text.contains("retry 2 of 3 in"), "{text}");
    // Its text streams: the answer is what the row says again.
    streamed(&mut st, 2, "The loop reads the clock");
    let text = screen(&st);
    assert!(text.contains("answering"), "{text}");
    assert!(!text.contains("rate limited"), "{text}");
}

#[test]
fn an_interrupted_answer_stays_marked_as_cut_off() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let mut s = prompted(&mut st, "explain", Some("run_9"));
    streamed(&mut st, 1, "The loop reads the **clock** twice, so");
    // Esc: the turn ends aborted; the runtime kept what had streamed.
    let mut e = s.push(
        "turn_terminal",
        Some("msg_9"),
        json!({ "run_id": "run_9", "message_id": "msg_9", "kind": "aborted", "rounds": 1,
                "last_assistant_message": "", "duration_ms": 900, "cancel_reason": "operator_abort",
                "partial_answer": "The loop reads the **clock** twice, so" }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    assert!(st.conversation.stream.is_none());
    let text = screen(&st);
    assert!(
        text.contains("● The loop reads the clock twice, so"),
        "{text}"
    );
    assert!(
        text.contains("the answer above was cut off: aborted by the operator"),
        "{text}"
    );
}

#[test]
fn a_failed_turn_keeps_none_of_its_failed_attempts_text() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let mut s = prompted(&mut st, "explain", Some("run_9"));
    streamed(&mut st, 3, "FAILED-part0 FAILED-part1");
    // The provider's last attempt was cut short too: the turn failed.
    let mut e = s.push(
        "turn_terminal",
        Some("msg_9"),
        json!({ "run_id": "run_9", "message_id": "msg_9", "kind": "aborted", "rounds": 1,
                "last_assistant_message": "", "duration_ms": 900 }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    let text = screen(&st);
    assert!(!text.contains("FAILED-part"), "{text}");
    assert!(!text.contains("cut off"), "{text}");
}

#[test]
fn a_narrow_working_row_keeps_the_retry_whole_and_drops_the_hint() {
    use crate::model::attempt::{RetryNext, RetryNotice};
    let mut st = booted(&session(), StoredMode::Info, 60, 20);
    let _s = prompted(&mut st, "explain", Some("run_9"));
    // Three seconds into the turn.
    let started = st.conversation.turn.as_ref().and_then(|t| t.started_ms);
    let t0 = started.unwrap_or_default() + 3_000;
    update(&mut st, Msg::Tick { now_ms: t0 });
    let notice = RetryNotice {
        model_ref: "openai/gpt-5".into(),
        attempt: 1,
        max_attempts: 3,
        failure_kind: crate::model::usage::FailureKind::RateLimited,
        status: Some(429),
        next: RetryNext::Retry,
        backoff_ms: Some(8_000),
    };
    let msg = Msg::ProviderRetry {
        agent_id: "main".into(),
        run_id: "run_9".into(),
        attempt: 1,
        notice,
        heard_ms: t0,
    };
    update(&mut st, msg);
    let text = screen(&st);
    assert!(
        text.contains("rate limited (429) · retry 2 of 3 in 8s"),
        "{text}"
    );
    assert!(!text.contains("Esc to interrupt"), "{text}");
}
