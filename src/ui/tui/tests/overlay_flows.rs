//! Overlay flows: the stack, input lines, requests made from overlays
//! and their answers (stale ones dropped), and the generated key docs.

use crossterm::event::KeyCode;
use serde_json::json;

use super::super::keymap::OverlayKind;
use super::super::msg::{Effect, Msg};
use super::super::{update, State};
use super::fixtures::*;
use crate::model::agent::DisplayMode as StoredMode;
use crate::protocol::{AgentState, AgentSummary, Request, WorkItemEntry};

#[test]
fn esc_closes_the_top_overlay_first() {
    let mut st = fresh();
    prefix(&mut st, 'h');
    prefix(&mut st, 'e');
    let kinds: Vec<_> = st.overlays.kinds();
    assert_eq!(kinds, [OverlayKind::Help, OverlayKind::Events]);
    update(&mut st, key(KeyCode::Esc));
    assert_eq!(st.overlays.top().map(|o| o.kind()), Some(OverlayKind::Help));
    update(&mut st, key(KeyCode::Esc));
    assert!(st.overlays.is_empty());
    assert!(
        update(&mut st, key(KeyCode::Esc)).is_empty(),
        "Esc never quits"
    );
}

#[test]
fn esc_in_an_input_line_closes_the_line_not_the_overlay() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    prefix(&mut st, 'w');
    typ(&mut st, "a");
    assert!(st.overlays.top().and_then(|o| o.input()).is_some());
    update(&mut st, key(KeyCode::Esc));
    assert!(st.overlays.top().and_then(|o| o.input()).is_none());
    assert_eq!(st.overlays.len(), 1);
}

#[test]
fn stale_answers_are_dropped() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    // The events inspector asks for the tail, then for the first page.
    let open = prefix(&mut st, 'e');
    let first = call_id(&open, "events.page");
    let home = update(&mut st, key(KeyCode::Char('g')));
    let second = call_id(&home, "events.page");
    let script = session();
    update(
        &mut st,
        Msg::Response {
            id: first,
            result: answer(&open, first, page(&script.events[30..], script.seq())),
        },
    );
    assert!(
        screen(&st).contains("Loading events"),
        "the superseded answer is ignored"
    );
    update(
        &mut st,
        Msg::Response {
            id: second,
            result: answer(&home, second, page(&script.events, script.seq())),
        },
    );
    assert!(screen(&st).contains("agent_created"));
    // An answer for an agent no longer shown is dropped too.
    update(&mut st, key(KeyCode::Esc));
    let paused = enter(&mut st, "/pause");
    let pause = call_id(&paused, "control");
    let fx = enter(&mut st, "/agent switch reviewer");
    let switch = call_id(&fx, "agent.status");
    update(
        &mut st,
        Msg::Response {
            id: switch,
            result: answer(&fx, switch, json!(summary_of("reviewer"))),
        },
    );
    let rows_before = st.conversation.rows.len();
    let ok = json!({ "agent_id": "main", "action": "pause", "from": "awake_idle", "to": "paused", "note": "" });
    update(
        &mut st,
        Msg::Response {
            id: pause,
            result: answer(&paused, pause, ok),
        },
    );
    assert_eq!(st.conversation.rows.len(), rows_before);
}

#[test]
fn work_items_from_the_command_and_the_overlay() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    let fx = enter(&mut st, "/work add Write the release notes");
    let created = requests(&fx);
    assert!(
        matches!(&created[..], [Request::WorkItemCreate { item, .. }] if item.objective == "Write the release notes")
    );
    prefix(&mut st, 'w');
    // The first item is the current one (wi_release).
    let fx = update(&mut st, key(KeyCode::Char('p')));
    assert!(
        matches!(&requests(&fx)[..], [Request::WorkItemPick { work_item_id, .. }] if work_item_id == "wi_release")
    );
    update(&mut st, key(KeyCode::Char('c')));
    let fx = enter(&mut st, "done by hand");
    assert!(
        matches!(&requests(&fx)[..], [Request::WorkItemComplete { note: Some(n), .. }] if n == "done by hand")
    );
    update(&mut st, key(KeyCode::Down));
    update(&mut st, key(KeyCode::Down));
    update(&mut st, key(KeyCode::Char('b')));
    for _ in 0..60 {
        update(&mut st, key(KeyCode::Backspace));
    }
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(
        matches!(&requests(&fx)[..], [Request::WorkItemUpdate { update, .. }] if update.work_item_id == "wi_ci" && update.blocked_by == Some(None)),
        "{fx:#?}"
    );
    update(&mut st, key(KeyCode::Char('a')));
    let fx = enter(&mut st, "Rotate the API keys");
    assert!(
        matches!(&requests(&fx)[..], [Request::WorkItemCreate { item, .. }] if item.objective == "Rotate the API keys")
    );
}

#[test]
fn tasks_overlay_shows_output_stops_and_sends_input() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    let fx = prefix(&mut st, 't');
    let id = call_id(&fx, "task.output");
    let output = json!({ "task": task("task_02", "cargo test", "agent", None, 1), "output": "test result: ok. 512 passed",
                         "output_bytes": 28, "truncated": false, "retrieval_status": "success" });
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, output),
        },
    );
    assert!(
        screen(&st).contains("│ test result: ok. 512 passed"),
        "{}",
        screen(&st)
    );
    update(&mut st, key(KeyCode::Char('s')));
    assert!(screen(&st).contains("already finished"));
    // Nor does a finished task take input: said at once, nothing asked.
    st = booted(&session(), StoredMode::Info, 80, 24);
    prefix(&mut st, 't');
    update(&mut st, key(KeyCode::Char('i')));
    assert!(screen(&st).contains("already finished"), "{}", screen(&st));
    assert!(!screen(&st).contains("Input for"), "{}", screen(&st));
}

/// An operator's command `id` running `cmd`, as its events tell the
/// console.
fn started(s: &mut Script, st: &mut State, id: &str, cmd: &str) {
    use crate::model::task::TaskStatus;
    let t = task(id, cmd, "operator", None, 50);
    let (from, to) = (TaskStatus::Queued, TaskStatus::Running);
    for e in [
        s.task_created(&t),
        s.task_status(id, cmd, from, to, None, None, None),
    ] {
        update(st, Msg::Event(Box::new(e)));
    }
}

#[test]
fn tasks_overlay_sends_input_to_a_running_task() {
    let mut s = session();
    let mut st = booted(&s, StoredMode::Info, 80, 24);
    started(&mut s, &mut st, "task_live", "read -r answer");
    prefix(&mut st, 't');
    update(&mut st, key(KeyCode::Char('i')));
    let fx = enter(&mut st, "yes");
    assert!(
        matches!(&requests(&fx)[..], [Request::TaskInput { task_id, input, .. }] if task_id == "task_live" && input == "yes\n")
    );
}

#[test]
fn events_inspector_filters_and_opens_json() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let script = session();
    let fx = enter(&mut st, "/events");
    let id = call_id(&fx, "events.page");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, page(&script.events, script.seq())),
        },
    );
    update(&mut st, key(KeyCode::Char('/')));
    enter(&mut st, "tool");
    let text = screen(&st);
    assert!(
        text.contains("tool_executed") && !text.contains("brief_created"),
        "{text}"
    );
    update(&mut st, key(KeyCode::Char('v')));
    assert!(screen(&st).contains("visibility ≤ progress"));
    for _ in 0..4 {
        update(&mut st, key(KeyCode::Char('v')));
    }
    assert!(
        screen(&st).contains("kind ~ “tool” · 3/38 shown"),
        "{}",
        screen(&st)
    );
    update(&mut st, key(KeyCode::Enter));
    assert_eq!(
        st.overlays.top().map(|o| o.kind()),
        Some(OverlayKind::EventDetail)
    );
    assert!(
        screen(&st).contains("\"tool_name\": \"ExecCommand\""),
        "{}",
        screen(&st)
    );
    update(&mut st, key(KeyCode::Esc));
    assert_eq!(
        st.overlays.top().map(|o| o.kind()),
        Some(OverlayKind::Events)
    );
}

#[test]
fn agents_overlay_switches_and_creates() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    let fx = prefix(&mut st, 'a');
    let id = call_id(&fx, "agents.list");
    let mut other = summary(3, ("Idle", "no runnable work"));
    other.id = "reviewer".into();
    let list = json!({"agents": [
        summary(40, ("WaitingForOperator", "operator input needed")),
        other
    ], "total": 2});
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, list),
        },
    );
    update(&mut st, key(KeyCode::Char('n')));
    let fx = enter(&mut st, "helper");
    assert_eq!(
        requests(&fx),
        [Request::AgentCreate {
            agent_id: "helper".into(),
            template: None,
        }]
    );
    update(&mut st, key(KeyCode::Down));
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(fx.contains(&Effect::ViewAgent {
        agent_id: "reviewer".into()
    }));
    assert!(st.overlays.is_empty());
}

#[test]
fn the_agents_overlay_pages_and_filters_on_the_runtime() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    let fx = prefix(&mut st, 'a');
    let id = call_id(&fx, "agents.list");
    let page = |from: usize, to: usize| -> Vec<AgentSummary> {
        (from..to)
            .map(|i| {
                let mut a = summary(1, ("Idle", "idle"));
                a.id = format!("agent-{i:03}");
                a
            })
            .collect()
    };
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(
                &fx,
                id,
                json!({"agents": page(0, 100), "next_cursor": "agent-099", "total": 250}),
            ),
        },
    );
    assert!(
        screen(&st).contains("Agents · 100 of 250"),
        "{}",
        screen(&st)
    );
    // The selection reaching the end asks for the next page, once.
    let fx = update(&mut st, key(KeyCode::End));
    assert_eq!(
        requests(&fx),
        [Request::AgentsList {
            limit: Some(100),
            cursor: Some("agent-099".into()),
            query: None,
        }]
    );
    let more = call_id(&fx, "agents.list");
    assert!(requests(&update(&mut st, key(KeyCode::Down))).is_empty());
    update(
        &mut st,
        Msg::Response {
            id: more,
            result: answer(
                &fx,
                more,
                json!({"agents": page(100, 200), "next_cursor": "agent-199", "total": 250}),
            ),
        },
    );
    assert!(
        screen(&st).contains("Agents · 200 of 250"),
        "{}",
        screen(&st)
    );
    // `/` filters by id on the runtime.
    update(&mut st, key(KeyCode::Char('/')));
    let fx = enter(&mut st, "07");
    assert_eq!(
        requests(&fx),
        [Request::AgentsList {
            limit: Some(100),
            cursor: None,
            query: Some("07".into()),
        }]
    );
    let id = call_id(&fx, "agents.list");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, json!({"agents": page(70, 80), "total": 10})),
        },
    );
    let shown = screen(&st);
    assert!(shown.contains("Agents matching \"07\""), "{shown}");
    assert!(
        shown.contains("agent-079") && !shown.contains("agent-199"),
        "{shown}"
    );
}

#[test]
fn a_child_opens_from_the_agents_overlay_read_only() {
    let mut st = booted(&session(), StoredMode::Info, 100, 30);
    let fx = prefix(&mut st, 'a');
    let id = call_id(&fx, "agents.list");
    let mut main = summary(40, ("WaitingForTask", "waiting on task task_c"));
    main.children = vec![serde_json::from_value(json!({
        "child_agent_id": "child-0a1b2c3d4e", "supervision_task_id": "task_c",
        "label": "Investigate the flaky test", "task_status": "running",
        "child_status": "awake_running", "posture": "ActiveTurn",
        "posture_reason": "turn in progress", "archived": false,
        "workspace_mode": "inherit", "model_rounds": 1, "input_tokens": 10,
        "output_tokens": 5, "queue_depth": 0, "tasks_active": 0
    }))
    .unwrap()];
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, json!({"agents": [main], "total": 1})),
        },
    );
    assert!(
        screen(&st).contains("└ child-0a1b2c3d4e"),
        "{}",
        screen(&st)
    );
    update(&mut st, key(KeyCode::Down));
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(fx.contains(&Effect::ViewAgent {
        agent_id: "child-0a1b2c3d4e".into()
    }));
    // Viewing the child: its summary says what it is; prompts and
    // commands are refused here with the way to steer it.
    let mut child = summary(3, ("ActiveTurn", "turn in progress"));
    child.id = "child-0a1b2c3d4e".into();
    child.identity.kind = crate::protocol::types::AgentKind::Child;
    child.identity.lineage_parent_agent_id = Some("main".into());
    child.identity.supervision_task_id = Some("task_c".into());
    st.agent.summary = Some(child);
    for text in ["please stop", "!ls"] {
        let fx = enter(&mut st, text);
        assert!(requests(&fx).is_empty(), "{text}: {fx:?}");
    }
    assert!(screen(&st).contains("read-only here"), "{}", screen(&st));
}

#[test]
fn keymap_doc_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/keymap.md");
    let want = super::super::keymap::reference_markdown();
    if std::env::var_os("UPDATE_KEYMAP_DOC").is_some() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/keymap.md is out of date: run with UPDATE_KEYMAP_DOC=1"
    );
}

#[test]
fn events_inspector_pages_through_history() {
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let mut s = Script::default();
    for i in 0..1200 {
        s.push("scheduler_decision", None, json!({ "decision": "StayIdle", "reason": "no_runnable_work", "evidence": [format!("check {i}")] }));
    }
    let fx = prefix(&mut st, 'e');
    assert!(
        matches!(
            &requests(&fx)[..],
            [Request::EventsPage { from_seq: 1, .. }]
        ),
        "{fx:#?}"
    );
    let id = call_id(&fx, "events.page");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, page(&s.events[700..], 1200)),
        },
    );
    assert!(
        screen(&st).contains("#701–1,200 of 1,200 · following"),
        "{}",
        screen(&st)
    );
    let fx = update(&mut st, key(KeyCode::Char('[')));
    assert!(
        matches!(
            &requests(&fx)[..],
            [Request::EventsPage { from_seq: 201, .. }]
        ),
        "{fx:#?}"
    );
    let id = call_id(&fx, "events.page");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, page(&s.events[200..700], 1200)),
        },
    );
    assert!(
        screen(&st).contains("#201–1,200 of 1,200"),
        "{}",
        screen(&st)
    );
    update(&mut st, key(KeyCode::Char(':')));
    let fx = enter(&mut st, "42");
    assert!(
        matches!(
            &requests(&fx)[..],
            [Request::EventsPage { from_seq: 42, .. }]
        ),
        "{fx:#?}"
    );
    let id = call_id(&fx, "events.page");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, page(&s.events[41..541], 1200)),
        },
    );
    let text = screen(&st);
    assert!(
        text.contains("#42–541 of 1,200") && !text.contains("following"),
        "{text}"
    );
    assert!(text.contains("▸ 42 "), "the jump selects the event: {text}");
    // Live events append only while following the tail.
    let live = s.push("turn_started", Some("msg_1"), json!({ "run_id": "run_1" }));
    update(&mut st, Msg::Event(Box::new(live)));
    assert!(screen(&st).contains("#42–541 of 1,201"));
}

#[test]
fn work_item_answers_reach_the_view_that_asked_and_the_cursor_follows_its_item() {
    let mut s = session();
    let mut st = booted(&s, StoredMode::Info, 120, 40);
    // Two items with one name, created while the console is open.
    for id in ["wi_twin_a", "wi_twin_b"] {
        let e = s.work(
            "work_item_created",
            &work_item(id, "Tidy the logs", 1),
            json!({}),
        );
        update(&mut st, Msg::Event(Box::new(e)));
    }
    prefix(&mut st, 'w');
    let shown = screen(&st);
    assert!(
        shown.contains("Tidy the logs (…twin_a)") && shown.contains("Tidy the logs (…twin_b)"),
        "{shown}"
    );
    // Select the docs item and pick it: it moves to the top (current), and
    // the cursor moves with it.
    let docs = |fx: &[Effect]| matches!(&requests(fx)[..], [Request::WorkItemPick { work_item_id, .. }] if work_item_id == "wi_docs");
    let mut picked = false;
    for _ in 0..6 {
        let fx = update(&mut st, key(KeyCode::Char('p')));
        if docs(&fx) {
            picked = true;
            break;
        }
        update(&mut st, key(KeyCode::Down));
    }
    assert!(picked, "reached the docs item");
    let e = s.push(
        "work_item_picked",
        None,
        json!({ "work_item_id": "wi_docs", "objective": "Document the retry policy for operators" }),
    );
    update(&mut st, Msg::Event(Box::new(e)));
    assert!(
        docs(&update(&mut st, key(KeyCode::Char('p')))),
        "the cursor stayed on it"
    );

    // Its detail asks for the plan the events did not carry, and an action
    // taken there is answered there (never a lone "…").
    let fx = update(&mut st, key(KeyCode::Enter));
    let id = call_id(&fx, "agent.state");
    let docs = WorkItemEntry {
        record: work_item("wi_docs", "Write the policy", 1),
        plan_preview: Some("1. Draft the policy\n2. Review it".into()),
        plan_preview_complete: Some(true),
        plan_path: None,
    };
    let state = json!(AgentState {
        work_items: vec![docs],
        ..bootstrap(&session(), StoredMode::Info)
    });
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, state),
        },
    );
    assert!(
        screen(&st).contains("1. Draft the policy"),
        "{}",
        screen(&st)
    );
    let fx = update(&mut st, key(KeyCode::Char('p')));
    let id = call_id(&fx, "work_item.pick");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, json!(work_item("wi_docs", "Write the policy", 2))),
        },
    );
    let shown = screen(&st);
    assert!(
        shown.contains("Picked: it is now the current focus."),
        "{shown}"
    );
}

#[test]
fn following_a_task_shows_how_it_ended() {
    use crate::model::task::TaskStatus;
    let mut s = session();
    let mut st = booted(&s, StoredMode::Info, 120, 40);
    started(&mut s, &mut st, "task_live", "cargo build");
    let fx = prefix(&mut st, 't');
    let id = call_id(&fx, "task.output");
    let running = json!({ "task": task("task_live", "cargo build", "agent", None, 1), "output": "Compiling holon", "output_bytes": 15,
                          "truncated": false, "retrieval_status": "not_ready" });
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, running),
        },
    );
    assert!(st.wants_tick(), "following the running task");
    // It ends between two reads: one more read shows the end.
    let done = s.task_status(
        "task_live",
        "cargo build",
        TaskStatus::Running,
        TaskStatus::Completed,
        Some(0),
        Some(900),
        None,
    );
    update(&mut st, Msg::Event(Box::new(done)));
    assert!(st.wants_tick(), "still ticking for the final output");
    let fx = update(
        &mut st,
        Msg::Tick {
            now_ms: i64::MAX / 2,
        },
    );
    let id = call_id(&fx, "task.output");
    let finished = json!({ "task": task("task_live", "cargo build", "agent", None, 1), "output": "Compiling holon\nFinished release", "output_bytes": 32,
                           "truncated": false, "retrieval_status": "success" });
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, finished),
        },
    );
    assert!(screen(&st).contains("Finished release"), "{}", screen(&st));
    assert!(!st.wants_tick(), "done following");
}

#[test]
fn task_output_scrolls_back() {
    let mut st = booted(&session(), StoredMode::Info, 100, 30);
    let fx = prefix(&mut st, 't');
    let id = call_id(&fx, "task.output");
    let text: Vec<String> = (1..=200).map(|n| format!("line {n:03}")).collect();
    let output = json!({ "task": task("task_02", "cargo test", "agent", None, 1), "output": text.join("\n"), "output_bytes": 1800,
                         "truncated": false, "retrieval_status": "success" });
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, output),
        },
    );
    assert!(screen(&st).contains("line 200") && !screen(&st).contains("line 150"));
    for _ in 0..8 {
        update(&mut st, key(KeyCode::Char('[')));
    }
    let shown = screen(&st);
    assert!(
        !shown.contains("line 200") && shown.contains("scrolled back"),
        "{shown}"
    );
    for _ in 0..8 {
        update(&mut st, key(KeyCode::Char(']')));
    }
    assert!(screen(&st).contains("line 200"));
}
