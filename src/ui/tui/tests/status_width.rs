//! The status line at every width: parts left out by priority, the ` …`
//! that says so, and the parts that always stay.

use super::fixtures::*;
use crate::model::agent::DisplayMode as StoredMode;

#[test]
fn the_status_line_at_every_width_keeps_its_anchors_and_says_what_it_left_out() {
    let wide = booted(&session(), StoredMode::Info, 400, 20);
    let whole = screen(&wide).lines().next().unwrap_or_default().to_owned();
    assert!(!whole.contains('…'), "nothing left out at 400: {whole}");
    for width in super::super::state::MIN_SIZE.0..=160 {
        let st = booted(&session(), StoredMode::Info, width, 20);
        let text = screen(&st);
        let line = text.lines().next().unwrap_or_default();
        // The connection's label is whole, with a gap before it.
        assert!(line.contains(" embedded"), "{width}: {line:?}");
        assert!(!line.contains("…embedded"), "{width}: {line:?}");
        // The agent and the display mode stay while they fit at all.
        assert!(line.contains("· main"), "{width}: {line:?}");
        if width >= 46 {
            assert!(line.contains("· info"), "{width}: {line:?}");
        }
        // The marker shows only when parts were left out, and whenever
        // they were once the parts that stay leave it room.
        let parts = |l: &str| l.split(" · ").count();
        let left_out = parts(line) < parts(&whole);
        let marked = line.contains(" …");
        assert!(!marked || left_out, "{width}: {line:?}");
        if width >= 48 {
            assert_eq!(marked, left_out, "{width}: {line:?}");
        }
    }
}
