//! What each console surface does with every event kind: the golden
//! sample of each kind (tests/fixtures/events) and a readable record of
//! each kind without one, every kind with a payload that does not fit, and
//! a kind this build does not know, through the conversation (for an
//! operator's task and another's), the projection and the transcript. The snapshot holds
//! each surface's decision per kind, so a change to how a family or a kind
//! is handled shows in review.

use crate::protocol::events::{Event, EventKind};
use crate::protocol::EventRecord;
use crate::ui::present::present_event;
use crate::ui::tui::conversation::Conversation;
use crate::ui::tui::overlays::transcript::transcript_lines;
use crate::ui::tui::projection::AgentView as Projection;
use crate::ui::tui::theme::Theme;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The golden samples, by file name, then readable records of the kinds
/// that have none and of cases the samples do not show (an agent's task,
/// another's message), numbered from 1 in that order.
fn samples() -> Vec<EventRecord> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/events");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the golden samples")
        .map(|e| e.expect("a sample").path())
        .collect();
    files.sort();
    let mut out: Vec<EventRecord> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a sample");
        out.push(serde_json::from_str(&text).expect("a sample record"));
    }
    let like = |out: &[EventRecord], kind: &str, as_kind: &str, edit: &dyn Fn(&mut Value)| {
        let mut e = (out.iter().find(|e| e.kind == kind).cloned()).expect("the sample");
        e.kind = as_kind.into();
        edit(&mut e.payload);
        e
    };
    let more = [
        like(&out, "message_processed", "message_dropped", &|p| {
            p["queue_status"] = json!("dropped")
        }),
        like(&out, "timer_fired", "timer_cancelled", &|p| {
            p["timer"]["status"] = json!("cancelled")
        }),
        like(&out, "task_created", "task_created", &|p| {
            p["task"]["detail"]["origin"] = json!("agent")
        }),
        like(&out, "message_admitted", "message_admitted", &|p| {
            p["message"]["kind"] = json!("webhook_event");
            p["message"]["origin"] = json!({ "kind": "webhook", "source": "ci" });
        }),
    ];
    out.extend(more);
    for kind in ["task_output", "runtime_stopped", "work_item_recheck_due"] {
        out.push(record(0, kind, json!({})));
    }
    for (i, e) in out.iter_mut().enumerate() {
        e.event_seq = i as u64 + 1;
    }
    for e in &out {
        let typed = e.event();
        assert!(
            !matches!(typed, Event::Unreadable { .. }),
            "{}: {typed:?}",
            e.kind
        );
    }
    out
}

/// Every kind again, by name, with a payload no kind reads, and a kind no
/// build knows.
fn unreadable(seq: u64) -> Vec<EventRecord> {
    let mut kinds: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
    kinds.sort_unstable();
    let mut out: Vec<EventRecord> = (kinds.iter()).map(|k| record(seq, k, json!(42))).collect();
    for e in &out {
        assert!(matches!(e.event(), Event::Unreadable { .. }), "{}", e.kind);
    }
    out.push(record(seq, "no_such_kind", json!(42)));
    out
}

fn record(seq: u64, kind: &str, payload: Value) -> EventRecord {
    EventRecord {
        event_seq: seq,
        id: format!("evt_{seq}"),
        ts: "2026-11-22T09:00:00.000Z".into(),
        kind: kind.into(),
        agent_id: "main".into(),
        provenance: Default::default(),
        payload,
    }
}

/// One event through the three surfaces, each fresh: what it touched and
/// what it drew.
fn one(e: &EventRecord, out: &mut String) {
    let typed = e.event();
    let op = present_event(e, &typed);
    let _ = writeln!(out, "## {} (#{})", e.kind, e.event_seq);
    for operator_task in [true, false] {
        let mut c = Conversation::default();
        let applied = c.apply(e, &typed, &op, operator_task);
        let _ = writeln!(
            out,
            "conversation (operator task {operator_task}): {applied:?}"
        );
        for row in &c.rows {
            let _ = writeln!(out, "  row {:?} {:?}", row.min_mode, row.kind());
        }
        if let Some(t) = &c.turn {
            let _ = writeln!(out, "  turn {t:?}");
        }
    }
    let mut p = Projection::default();
    let touched = p.apply(e, &typed);
    let _ = writeln!(out, "projection: {touched:?}");
    if p != Projection::default() {
        let _ = writeln!(out, "  {p:?}");
    }
    for line in transcript_lines(std::slice::from_ref(e), 80, Theme { no_color: true }) {
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        let _ = writeln!(out, "  transcript: {}", text.trim_end());
    }
}

#[test]
fn every_kind_through_each_surface() {
    let samples = samples();
    let mut out = String::new();
    for e in &samples {
        one(e, &mut out);
    }
    for e in unreadable(samples.len() as u64 + 1) {
        one(&e, &mut out);
    }
    // All of them in order through one conversation and one projection:
    // what each merges with the rows and state before it.
    let mut c = Conversation::default();
    let mut p = Projection::default();
    let _ = writeln!(out, "## all in order");
    for e in &samples {
        let typed = e.event();
        let applied = c.apply(e, &typed, &present_event(e, &typed), true);
        let touched = p.apply(e, &typed);
        let _ = writeln!(out, "{} {applied:?} {touched:?}", e.kind);
    }
    for row in &c.rows {
        let _ = writeln!(out, "  row {:?} {:?}", row.min_mode, row.kind());
    }
    let _ = writeln!(out, "turn {:?}", c.turn);
    let _ = writeln!(out, "projection {p:?}");
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("every_kind_through_each_surface", out);
    });
}
