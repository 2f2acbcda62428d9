//! A call waiting for the operator, in the conversation: the row shows
//! what it would do (never "done" before it ran), single keys answer it,
//! Tab completes its id, and an answer from any terminal settles the row
//! and the banner.

use crossterm::event::KeyCode;
use serde_json::{json, Value};

use super::super::msg::Msg;
use super::super::rows::{ApprovalState, RowKind};
use super::super::{update, State};
use super::fixtures::*;
use super::snapshots::{approval, each_size};
use crate::protocol::Request;
use crate::runtime::agent::DisplayMode as StoredMode;

const PATCH: &str = "--- a/src/retry.rs\n+++ b/src/retry.rs\n@@ -10,4 +10,5 @@ fn backoff() {\n     let start = Instant::now();\n-    let deadline = Instant::now() + limit;\n+    let now = clock.now();\n+    let deadline = now + limit;\n     loop {\n";

fn command_approval() -> Value {
    let mut rec = approval(
        "apr_01a2b3",
        "main",
        "ExecCommand",
        "`touch notes.txt`",
        "approval is `on_write`: `touch notes.txt` is not a known read-only command and not on the allow-list",
    );
    rec["arguments"] = json!({ "cmd": "touch notes.txt" });
    rec
}

fn patch_approval() -> Value {
    let mut rec = approval(
        "apr_01a2b4",
        "main",
        "ApplyPatch",
        "src/retry.rs",
        "approval is `on_write`: the patch writes src/retry.rs",
    );
    rec["arguments"] = json!({ "patch": PATCH });
    rec
}

/// Feed the request, then what the turn records for the gated call.
fn asked(st: &mut State, rec: &Value) {
    let mut s = session();
    let mut e = s.push(
        "approval_requested",
        Some("msg_1"),
        json!({ "approval": rec }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(st, Msg::Event(Box::new(e)));
    let result = json!({
        "ok": false, "status": "awaiting_approval", "approval_id": rec["id"],
        "message": "was not run: the operator must approve it",
    });
    let mut e = s.push(
        "tool_executed",
        Some("msg_1"),
        json!({
            "run_id": "run_1", "call_id": "call_1", "tool_name": rec["tool_name"],
            "arguments": rec["arguments"], "is_error": false, "duration_ms": 0,
            "result_preview": result.to_string(),
            "result_facts": { "status": "awaiting_approval", "approval_id": rec["id"],
                              "message": "was not run: the operator must approve it" },
        }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(st, Msg::Event(Box::new(e)));
}

fn answered(st: &mut State, rec: &Value, kind: &str, status: &str, extra: Value) {
    let mut rec = rec.clone();
    rec["status"] = json!(status);
    rec["answered_at"] = json!("2026-11-23T09:15:00Z");
    if let (Some(r), Some(x)) = (rec.as_object_mut(), extra.as_object()) {
        r.extend(x.clone());
    }
    let mut e = session().push(kind, Some("msg_1"), json!({ "approval": rec }));
    e.event_seq = st.conversation.applied_seq + 1;
    update(st, Msg::Event(Box::new(e)));
}

fn approval_rows(st: &State) -> Vec<&super::super::rows::ApprovalRow> {
    st.conversation
        .rows
        .iter()
        .filter_map(|r| match r.kind() {
            RowKind::Approval(a) => Some(a),
            _ => None,
        })
        .collect()
}

/// The operator's prompt `text`, live after the fixture's history, and
/// (with `run`) its turn started; the script, to push more events on.
fn prompted(st: &mut State, text: &str, run: Option<&str>) -> Script {
    let mut s = session();
    let base = s.events.len();
    s.prompt("msg_9", text);
    if let Some(run) = run {
        s.turn("msg_9", run);
    }
    for mut e in s.events[base..].iter().cloned() {
        e.event_seq = st.conversation.applied_seq + 1;
        update(st, Msg::Event(Box::new(e)));
    }
    s
}

/// Stream `text` into the running turn `run_9`.
fn streamed(st: &mut State, text: &str) {
    let delta = Msg::AssistantDelta {
        agent_id: "main".into(),
        run_id: "run_9".into(),
        text: text.into(),
    };
    update(st, delta);
}

#[test]
fn a_waiting_command_shows_what_it_would_run_and_never_done() {
    each_size("approval_waiting_command", StoredMode::Info, |st| {
        asked(st, &command_approval())
    });
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    asked(&mut st, &command_approval());
    let text = screen(&st);
    assert!(text.contains("ExecCommand wants to run"), "{text}");
    assert!(text.contains("$ touch notes.txt"), "{text}");
    assert!(
        text.contains("a a always, allowing `touch notes.txt` from now on"),
        "{text}"
    );
    assert!(
        text.contains("a call waits: y approve"),
        "the composer says the keys answer: {text}"
    );
    assert!(
        !text.contains("touch notes.txt ✓"),
        "not done before it ran: {text}"
    );
    assert!(text.contains("NEEDS YOUR INPUT"), "{text}");
    assert!(
        text.contains("y approve"),
        "the hint names the keys: {text}"
    );
}

#[test]
fn a_waiting_patch_shows_its_diff_with_line_numbers() {
    each_size("approval_waiting_patch", StoredMode::Info, |st| {
        asked(st, &patch_approval())
    });
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    asked(&mut st, &patch_approval());
    let text = screen(&st);
    assert!(text.contains("ApplyPatch wants to write"), "{text}");
    assert!(text.contains("  11 +    let now = clock.now();"), "{text}");
    assert!(
        text.contains("-    let deadline = Instant::now() + limit;"),
        "{text}"
    );
}

#[test]
fn single_keys_answer_the_oldest_waiting_call() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    asked(&mut st, &command_approval());
    let fx = update(&mut st, key(KeyCode::Char('y')));
    assert!(
        requests(&fx).iter().any(|r| matches!(r,
            Request::ApprovalApprove { approval_id, always: false, .. } if approval_id == "apr_01a2b3")),
        "{fx:?}"
    );
    assert!(st.composer.is_empty(), "y typed nothing");
    // "Always" takes `a` twice; anything between cancels it.
    let fx = update(&mut st, key(KeyCode::Char('a')));
    assert!(requests(&fx).is_empty(), "one a is not an answer");
    assert!(screen(&st).contains("press a again"));
    update(&mut st, key(KeyCode::Esc));
    let fx = update(&mut st, key(KeyCode::Char('a')));
    assert!(requests(&fx).is_empty(), "Esc cancelled the first a");
    let fx = update(&mut st, key(KeyCode::Char('a')));
    assert!(requests(&fx)
        .iter()
        .any(|r| matches!(r, Request::ApprovalApprove { always: true, .. })));
    update(&mut st, key(KeyCode::Char('n')));
    assert_eq!(st.composer.text(), "/deny apr_01a2b3 ");
    // Typing goes on as text now: the note.
    typ(&mut st, "not here");
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(requests(&fx).iter().any(|r| matches!(r,
        Request::ApprovalDeny { approval_id, note: Some(n), .. }
            if approval_id == "apr_01a2b3" && n == "not here")));
}

#[test]
fn with_nothing_waiting_the_keys_type_and_question_mark_opens_help() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let fx = update(&mut st, key(KeyCode::Char('y')));
    assert!(requests(&fx).is_empty());
    assert_eq!(st.composer.text(), "y");
    update(&mut st, key(KeyCode::Char('?')));
    assert_eq!(st.composer.text(), "y?", "? types itself after text");
    update(&mut st, ctrl('c'));
    assert!(st.composer.is_empty());
    update(&mut st, key(KeyCode::Char('?')));
    assert!(
        st.overlays.top().is_some(),
        "? on an empty composer opens help"
    );
}

#[test]
fn tab_completes_waiting_ids_for_approve_and_deny() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    asked(&mut st, &command_approval());
    asked(&mut st, &patch_approval());
    typ(&mut st, "/approve apr_01a2b4");
    update(&mut st, key(KeyCode::Tab));
    assert_eq!(st.composer.text(), "/approve apr_01a2b4", "already whole");
    update(&mut st, ctrl('c'));
    typ(&mut st, "/deny apr");
    let labels: Vec<String> = menu_labels(&st);
    assert_eq!(labels, vec!["apr_01a2b3", "apr_01a2b4"]);
    update(&mut st, key(KeyCode::Tab));
    assert_eq!(st.composer.text(), "/deny apr_01a2b3 ");
}

#[test]
fn an_answer_from_another_terminal_settles_the_row_and_the_banner() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    // The operator answers the fixture's open question first.
    prompted(&mut st, "eu-west-1", None);
    assert!(!st.attention);
    let cmd = command_approval();
    let patch = patch_approval();
    asked(&mut st, &cmd);
    asked(&mut st, &patch);
    assert!(st.attention);
    // Only the oldest waiting row offers the keys.
    let keyed: Vec<bool> = approval_rows(&st).iter().map(|a| a.keys).collect();
    assert_eq!(keyed, [true, false]);
    assert!(screen(&st).contains("waits behind the call above"));
    answered(
        &mut st,
        &cmd,
        "approval_granted",
        "granted",
        json!({ "always": true }),
    );
    assert!(st.attention, "the patch still waits");
    let keyed: Vec<bool> = approval_rows(&st).iter().map(|a| a.keys).collect();
    assert_eq!(keyed, [false, true], "the keys move on to the patch");
    assert_eq!(st.composer.approvals.len(), 1);
    answered(
        &mut st,
        &patch,
        "approval_denied",
        "denied",
        json!({ "note": "not in this PR" }),
    );
    assert!(!st.attention, "nothing waits: the banner clears");
    assert!(st.composer.approvals.is_empty());
    let states: Vec<&ApprovalState> = approval_rows(&st).iter().map(|a| &a.state).collect();
    assert_eq!(
        states,
        vec![
            &ApprovalState::Approved { always: true },
            &ApprovalState::Denied {
                note: Some("not in this PR".into())
            }
        ]
    );
    let text = screen(&st);
    assert!(
        text.contains(
            "✓ approved ExecCommand `touch notes.txt` · from now on `touch notes.txt` runs without asking"
        ),
        "{text}"
    );
    assert!(
        text.contains("✗ denied ApplyPatch src/retry.rs: not in this PR"),
        "{text}"
    );
    assert!(!text.contains("NEEDS YOUR INPUT"), "{text}");
    // With nothing waiting, `y` types again.
    update(&mut st, key(KeyCode::Char('y')));
    assert_eq!(st.composer.text(), "y");
}

#[test]
fn a_long_patch_row_folds_at_info_and_shows_whole_in_verbose() {
    use super::super::rows::render;
    use super::super::theme::Theme;
    use crate::ui::present::DisplayMode;
    let body: String = (1..=30).map(|i| format!("+line {i}\n")).collect();
    let kind = RowKind::Patch {
        action: "created".into(),
        path: "NOTES.md".into(),
        added: 30,
        removed: 0,
        diff: Some(format!("@@ -0,0 +1,30 @@\n{body}")),
    };
    let text = |mode| {
        render(&kind, 80, mode, Theme { no_color: true })
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
    };
    let info = text(DisplayMode::Info);
    assert_eq!(info.len(), 1 + 20 + 1, "{info:#?}");
    assert!(info[1].contains("@@ -0,0 +1,30 @@"));
    assert!(info[2].contains("   1 +line 1"), "{info:#?}");
    assert!(info[21].contains("… 11 more lines"), "{info:#?}");
    let verbose = text(DisplayMode::Verbose);
    assert_eq!(verbose.len(), 1 + 31);
    assert!(verbose[31].contains("  30 +line 30"));
}

#[test]
fn the_approvals_overlay_shows_the_selected_patch_in_full() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let fx = prefix(&mut st, 'y');
    let list = json!([command_approval(), patch_approval()]);
    super::snapshots::respond(&mut st, &fx, "approvals.list", list);
    assert!(screen(&st).contains("$ touch notes.txt"));
    update(&mut st, key(KeyCode::Down));
    let text = screen(&st);
    assert!(text.contains("ApplyPatch would apply:"), "{text}");
    assert!(text.contains("  11 +    let now = clock.now();"), "{text}");
}

// ---- answers rendered as they stream ---------------------------------------

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
            });
            let mut fed = 0;
            while fed < answer.len() {
                let mut end = (fed + chunk).min(answer.len());
                while !answer.is_char_boundary(end) {
                    end += 1;
                }
                c.delta("run_1", &answer[fed..end]);
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
    streamed(&mut st, &ANSWER[..120]);
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
    streamed(&mut st, "LATE!next round");
    let stream = st.conversation.stream.as_ref().map(|(_, t)| t.as_str());
    assert_eq!(
        stream,
        Some("next round"),
        "5 late characters were the old round's"
    );
}

#[test]
fn an_interrupted_answer_stays_marked_as_cut_off() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let mut s = prompted(&mut st, "explain", Some("run_9"));
    streamed(&mut st, "The loop reads the **clock** twice, so");
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
fn a_waiting_mcp_call_names_its_tool_and_what_always_allows() {
    let mut rec = approval(
        "apr_01a2b5",
        "main",
        "mcp__github__create_issue",
        "`mcp__github__create_issue` {\"title\":\"flaky test\"}",
        "approval is `on_write`: `mcp__github__create_issue` may write (the server does not mark it read-only)",
    );
    rec["arguments"] = json!({ "title": "flaky test" });
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    asked(&mut st, &rec);
    let text = screen(&st);
    assert!(text.contains("mcp__github__create_issue"), "{text}");
    assert!(
        text.contains("always, allowing the tool `mcp__github__create_issue` from now on"),
        "{text}"
    );
    // The gated call's own result draws no row: nothing ran.
    assert!(!text.contains("github · create_issue"), "{text}");
}
