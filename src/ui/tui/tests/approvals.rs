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
use crate::model::agent::DisplayMode as StoredMode;
use crate::protocol::Request;

const PATCH: &str = "--- a/src/retry.rs\n+++ b/src/retry.rs\n@@ -10,4 +10,5 @@ fn backoff() {\n     let start = Instant::now();\n-    let deadline = Instant::now() + limit;\n+    let now = clock.now();\n+    let deadline = now + limit;\n     loop {\n";

pub(super) fn command_approval() -> Value {
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

pub(super) fn patch_approval() -> Value {
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
pub(super) fn asked(st: &mut State, rec: &Value) {
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

pub(super) fn answered(st: &mut State, rec: &Value, kind: &str, status: &str, extra: Value) {
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
pub(super) fn prompted(st: &mut State, text: &str, run: Option<&str>) -> Script {
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
        text.contains("a a always, allowing `touch` from now on"),
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
            "✓ approved ExecCommand `touch notes.txt` · from now on `touch` runs without asking"
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
    use crate::protocol::DisplayMode;
    let body: String = (1..=30).map(|i| format!("+line {i}\n")).collect();
    let kind = RowKind::Patch {
        action: "created".into(),
        path: "NOTES.md".into(),
        added: 30,
        removed: 0,
        diff: Some(format!("@@ -0,0 +1,30 @@\n{body}")),
    };
    let text = |mode| super::super::rows::plain_lines(&kind, 80, mode);
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

/// An approved patch keeps its diff: the runtime records the call that ran
/// after the answer, and the console shows it like any applied patch.
#[test]
fn an_approved_patch_shows_its_diff_after_the_answer() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let rec = patch_approval();
    asked(&mut st, &rec);
    answered(&mut st, &rec, "approval_granted", "granted", json!({}));
    let result = json!({
        "ok": true, "summary": "modified src/retry.rs (+2 -1)",
        "files": [{ "path": "src/retry.rs", "action": "modified", "added": 2, "removed": 1 }],
    });
    let mut e = session().tool(
        "msg_1",
        "run_1",
        "ApplyPatch",
        json!({ "patch": PATCH }),
        result,
        4,
        false,
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    let patched = st
        .conversation
        .rows
        .iter()
        .find_map(|r| match r.kind() {
            RowKind::Patch { path, diff, .. } => Some((path.clone(), diff.clone())),
            _ => None,
        })
        .expect("a patch row after the answer");
    assert_eq!(patched.0, "src/retry.rs");
    assert!(
        patched.1.is_some_and(|d| !d.trim().is_empty()),
        "with its diff"
    );
}

/// A reviewer's verdict in words, as the runtime records it.
fn review(verdict: &str, applied: bool, reason: &str) -> Value {
    json!({
        "reviewed_by": "reviewer", "model": "openai/gpt-reviewer", "verdict": verdict,
        "reason": reason, "policy_digest": "ab".repeat(32), "may": "allow_and_deny",
        "applied": applied, "latency_ms": 840, "input_tokens": 900, "output_tokens": 40,
        "reviewed_at": "2026-11-23T09:14:00Z",
    })
}

#[test]
fn the_reviewers_word_is_shown_beside_the_request_and_on_its_answer() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let rec = command_approval();
    asked(&mut st, &rec);
    // Advice: the request still waits, with the reviewer's note under it.
    let mut advised = rec.clone();
    advised["review"] = review("ask", false, "");
    advised["review"]["fallback"] = json!("the reviewer's answer is not one JSON object");
    let mut e = session().push(
        "approval_reviewed",
        Some("msg_1"),
        json!({ "approval": advised }),
    );
    e.event_seq = st.conversation.applied_seq + 1;
    update(&mut st, Msg::Event(Box::new(e)));
    let text = screen(&st);
    assert!(
        text.contains("reviewer openai/gpt-reviewer says ask (the reviewer's answer is not one JSON object) — a person decides"),
        "{text}"
    );
    assert!(
        text.contains("y approve once"),
        "a person still answers: {text}"
    );
    // A verdict that answered: the row says the reviewer approved it.
    let mut rec2 = rec.clone();
    rec2["review"] = review("allow", true, "local and harmless");
    answered(&mut st, &rec2, "approval_granted", "granted", json!({}));
    let text = screen(&st);
    assert!(
        text.contains("approved ExecCommand `touch notes.txt` (by the reviewer)"),
        "{text}"
    );
    let rows = approval_rows(&st);
    assert!(rows.iter().all(|r| r.state != ApprovalState::Waiting));
}
