//! The conversation model's own rules, without a terminal.

use super::*;
use crate::protocol::events::Event;
use crate::protocol::types::TaskStatus;
use crate::protocol::EventRecord;
use crate::ui::tui::rows::CommandState;
use serde_json::{json, Value};

fn event(seq: u64, kind: &str, payload: Value) -> EventRecord {
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

fn apply(c: &mut Conversation, e: &EventRecord) {
    let typed = e.event();
    assert!(!matches!(typed, Event::Unreadable { .. }), "{typed:?}");
    c.apply(
        e,
        &typed,
        &crate::ui::present::present_event(e, &typed),
        true,
    );
}

#[test]
fn trimming_keeps_merges_pointing_at_the_right_rows() {
    let mut c = Conversation::default();
    for i in 0..5 {
        c.note(format!("note {i}"), Tone::Info);
    }
    let created = event(
        1,
        "task_created",
        json!({ "task": { "id": "t1", "agent_id": "main", "kind": "command_task", "status": "queued",
            "detail": { "cmd": "ls", "origin": "operator" }, "created_at": "t", "updated_at": "t" } }),
    );
    apply(&mut c, &created);
    c.trim(3);
    let done = event(
        2,
        "task_status_changed",
        json!({ "task_id": "t1", "kind": "command_task", "from": "running", "to": "completed", "exit_status": 0 }),
    );
    apply(&mut c, &done);
    assert_eq!(c.rows.len(), 3, "no new row: the task row was found");
    assert!(
        matches!(c.rows[2].kind(), RowKind::Command(r) if r.status == CommandState::Task(TaskStatus::Completed))
    );
}
