//! An MCP call's progress on the working row: shown after the running
//! call's activity, and only for that call of that turn.

use serde_json::json;

use super::fixtures::*;
use crate::model::mcp::McpProgress;
use crate::ui::tui::msg::Msg;
use crate::ui::tui::update;

fn progress(run: &str, call: &str, n: f64) -> Msg {
    Msg::ToolProgress {
        agent_id: "main".into(),
        run_id: run.into(),
        call_id: call.into(),
        progress: McpProgress::new(n, Some(4.0), Some("indexing")),
    }
}

#[test]
fn progress_shows_on_the_running_calls_row_until_it_ends() {
    let mut st = fresh();
    let mut s = Script::default();
    let started = json!({"run_id": "run_1", "call_id": "call_1", "tool_name": "mcp__docs__search"});
    let events = [
        s.prompt("msg_1", "go"),
        s.turn("msg_1", "run_1"),
        s.push("tool_started", Some("msg_1"), started),
    ];
    for e in events {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let detail = |st: &crate::ui::tui::state::State| st.working().map(|w| w.detail);
    assert_eq!(detail(&st), Some("docs · search started".into()));

    update(&mut st, progress("run_1", "call_1", 1.0));
    assert_eq!(
        detail(&st),
        Some("docs · search started · 1/4 indexing".into())
    );
    assert!(st.dirty);

    // Another call's (or turn's) late report changes nothing.
    st.dirty = false;
    update(&mut st, progress("run_1", "call_0", 3.0));
    update(&mut st, progress("run_0", "call_1", 3.0));
    assert!(!st.dirty);
    assert_eq!(
        detail(&st),
        Some("docs · search started · 1/4 indexing".into())
    );

    // Once the call ended, its progress is moot.
    let executed = json!({
        "run_id": "run_1", "call_id": "call_1", "tool_name": "mcp__docs__search",
        "arguments": {"q": "x"}, "is_error": false, "duration_ms": 40,
        "result_preview": "{\"ok\":true,\"text\":\"found\"}", "tool_execution_id": "tex_1"
    });
    let e = s.push("tool_executed", Some("msg_1"), executed);
    update(&mut st, Msg::Event(Box::new(e)));
    update(&mut st, progress("run_1", "call_1", 4.0));
    assert!(!detail(&st).unwrap_or_default().contains("4/4"));
}
