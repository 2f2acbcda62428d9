//! The render benchmark behind `holon debug bench`: one frame of the
//! conversation and one of the `/events` inspector, each with `rows` rows
//! of history, drawn into a `TestBackend`. Both views are virtualised, so
//! the frame time should not grow with `rows`.

use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use super::msg::Connection;
use super::overlays::{events::Events, Overlay};
use super::state::{History, Init, State};
use super::view::view;
use crate::runtime::api::EventRecord;
use crate::store::Provenance;
use crate::ui::present::{present, DisplayMode};

/// One synthetic event of a busy agent; `i` picks the kind.
pub fn sample_event(seq: u64, i: usize) -> EventRecord {
    let mid = format!("msg_{}", i / 4);
    let (kind, payload) = match i % 4 {
        0 => (
            "message_admitted",
            json!({ "message": { "id": mid, "kind": "operator_prompt",
                "body": { "type": "text", "text": format!("Please check build number {i} and report back.") } },
                "queue_status": "queued" }),
        ),
        1 => (
            "assistant_round_recorded",
            json!({ "round": 1, "text_preview": format!("Looking at build {i}: running the tests first."),
                    "tool_names": ["ExecCommand"] }),
        ),
        2 => (
            "tool_executed",
            json!({ "tool_name": "ExecCommand", "arguments": { "cmd": "cargo test --quiet" },
                    "is_error": false, "duration_ms": 1234 + i as u64 % 1000,
                    "result_preview": "{\"disposition\":\"completed\",\"exit_status\":0}" }),
        ),
        _ => (
            "brief_created",
            json!({ "brief": { "kind": "result", "text": format!(
                "## Build {i}\n\nAll **green**. The slowest test took `2.1 s`:\n\n- unit: 412 passed\n- integration: 38 passed") },
                "visibility": "turn_result" }),
        ),
    };
    EventRecord {
        event_seq: seq,
        id: format!("evt_{seq}"),
        ts: format!("2026-11-22T04:{:02}:{:02}.000Z", (seq / 60) % 60, seq % 60),
        kind: kind.into(),
        agent_id: "main".into(),
        provenance: Provenance {
            message_id: Some(mid),
            ..Provenance::default()
        },
        payload,
    }
}

fn state(width: u16, height: u16) -> State {
    let mut s = State::new(Init {
        agent_id: "main".into(),
        connection: Connection::Embedded,
        width,
        height,
        bell: false,
        no_color: false,
    });
    s.history = History::Done;
    s.mode = DisplayMode::Verbose;
    s
}

fn frame_time(state: &State, width: u16, height: u16) -> Duration {
    let Ok(mut terminal) = Terminal::new(TestBackend::new(width, height)) else {
        return Duration::ZERO;
    };
    // Warm-up: fills the row caches of what is on screen.
    let _ = terminal.draw(|f| view(state, f));
    let start = Instant::now();
    let _ = terminal.draw(|f| view(state, f));
    start.elapsed()
}

/// (conversation frame, events frame) with `rows` rows of history.
pub fn bench_render(rows: usize, width: u16, height: u16) -> (Duration, Duration) {
    let events: Vec<EventRecord> = (0..rows).map(|i| sample_event(i as u64 + 1, i)).collect();
    let mut conv = state(width, height);
    for e in &events {
        let op = present(e);
        conv.conversation.apply(e, &op, false);
    }
    let conversation = frame_time(&conv, width, height);
    let mut inspector = state(width, height);
    inspector
        .overlays
        .push(Overlay::Events(Events::with(events, true)));
    let inspector_time = frame_time(&inspector, width, height);
    (conversation, inspector_time)
}
