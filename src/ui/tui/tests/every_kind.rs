//! What each console surface does with every event kind: the golden
//! sample of each kind (tests/fixtures/events), the same kind with a
//! payload that does not fit, and a kind this build does not know, through
//! the conversation, the projection and the transcript. The snapshot holds
//! each surface's decision per kind, so a change to how a family or a kind
//! is handled shows in review.

use crate::protocol::events::{Event, EventKind};
use crate::protocol::EventRecord;
use crate::ui::present::present_event;
use crate::ui::tui::conversation::Conversation;
use crate::ui::tui::overlays::transcript::transcript_lines;
use crate::ui::tui::projection::AgentView as Projection;
use crate::ui::tui::theme::Theme;
use std::fmt::Write as _;

/// The golden samples, by file name, numbered from 1 in that order.
fn samples() -> Vec<EventRecord> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/events");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the golden samples")
        .map(|e| e.expect("a sample").path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let text = std::fs::read_to_string(f).expect("a sample");
        let mut e: EventRecord = serde_json::from_str(&text).expect("a sample record");
        e.event_seq = i as u64 + 1;
        out.push(e);
    }
    out
}

/// A sample's kind again, with a payload its type does not read, and a
/// kind no build knows.
fn unreadable(seq: u64) -> Vec<EventRecord> {
    let mut out: Vec<EventRecord> = EventKind::ALL
        .iter()
        .filter(|k| matches!(Event::decode(k.as_str(), &bad()), Event::Unreadable { .. }))
        .map(|k| record(seq, k.as_str()))
        .collect();
    out.push(record(seq, "no_such_kind"));
    out
}

fn bad() -> serde_json::Value {
    serde_json::json!({ "unexpected": [1, 2, 3] })
}

fn record(seq: u64, kind: &str) -> EventRecord {
    EventRecord {
        event_seq: seq,
        id: format!("evt_{seq}"),
        ts: "2026-11-22T09:00:00.000Z".into(),
        kind: kind.into(),
        agent_id: "main".into(),
        provenance: Default::default(),
        payload: bad(),
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
            let kind = format!("{:?}", row.kind());
            let kind: String = kind.chars().take(240).collect();
            let _ = writeln!(out, "  row {:?} {kind}", row.min_mode);
        }
        if let Some(t) = &c.turn {
            let _ = writeln!(out, "  turn {t:?}");
        }
    }
    let mut p = Projection::default();
    let touched = p.apply(e, &typed);
    let changed = p != Projection::default();
    let _ = writeln!(out, "projection: {touched:?}, changed {changed}");
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
        let kind = format!("{:?}", row.kind());
        let kind: String = kind.chars().take(240).collect();
        let _ = writeln!(out, "  row {:?} {kind}", row.min_mode);
    }
    let _ = writeln!(out, "turn {:?}", c.turn);
    let _ = writeln!(out, "projection {p:?}");
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("every_kind_through_each_surface", out);
    });
}
