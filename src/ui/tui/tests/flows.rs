//! Update flows: feed messages, assert on the effects and the state.

use crossterm::event::{KeyCode, KeyModifiers, MouseEvent, MouseEventKind};
use serde_json::json;

use super::super::conversation::Scroll;
use super::super::keymap::OverlayKind;
use super::super::msg::{Effect, Msg};
use super::super::rows::{PromptState, RowKind};
use super::super::update;
use super::fixtures::*;
use crate::model::agent::DisplayMode as StoredMode;
use crate::model::message::Priority;
use crate::model::task::TaskStatus;
use crate::protocol::types::AgentStatus;
use crate::protocol::DisplayMode;
use crate::protocol::{AgentSummary, ApiError, ControlAction, ErrorCode, Request};

fn rows(st: &super::super::State) -> Vec<&RowKind> {
    st.conversation.rows.iter().map(|r| r.kind()).collect()
}

#[test]
fn enter_submits_a_prompt_shown_sending_then_queued_then_durable() {
    let mut st = fresh();
    let fx = enter(&mut st, "summarise the logs");
    assert_eq!(
        requests(&fx),
        [Request::PromptSubmit {
            agent_id: "main".into(),
            text: "summarise the logs".into(),
            priority: Priority::Normal,
            request_id: None,
        }]
    );
    assert!(st.composer.is_empty());
    assert!(screen(&st).contains("sending…"), "{}", screen(&st));
    let id = call_id(&fx, "prompt.submit");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(
                &fx,
                id,
                json!({ "message_id": "msg_1", "agent_id": "main", "event_seq": 1,
                "admission_seq": 1, "queue_status": "queued", "priority": "normal" }),
            ),
        },
    );
    assert!(screen(&st).contains("queued"));
    let mut s = Script::default();
    let e = s.prompt("msg_1", "summarise the logs");
    update(&mut st, Msg::Event(Box::new(e)));
    assert!(st.conversation.echoes.is_empty(), "the echo is replaced");
    assert!(matches!(
        rows(&st)[..],
        [RowKind::Operator {
            state: PromptState::Waiting(_),
            ..
        }]
    ));
    assert!(screen(&st).contains("summarise the logs · queued"));
    update(&mut st, Msg::Event(Box::new(s.turn("msg_1", "run_1"))));
    assert!(matches!(
        rows(&st)[0],
        RowKind::Operator {
            state: PromptState::Admitted,
            ..
        }
    ));
}

#[test]
fn a_waiting_prompt_says_where_it_stands_and_moves_to_where_it_runs() {
    let mut st = fresh();
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "first"), s.turn("msg_1", "run_1")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    // A `/next` prompt arrives while the first turn runs.
    let mut next = s.prompt("msg_2", "second");
    next.payload["message"]["priority"] = json!("next");
    update(&mut st, Msg::Event(Box::new(next)));
    assert!(
        screen(&st).contains("second · next in line"),
        "{}",
        screen(&st)
    );
    // The first turn goes on below it, then ends.
    let more = [
        s.round(
            "msg_1",
            "run_1",
            1,
            "Working on the first",
            &["ExecCommand"],
        ),
        s.turn_end("msg_1", "run_1", "completed", 1, 900, "first done"),
    ];
    for e in more {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let texts = |st: &super::super::State| -> Vec<String> {
        rows(st)
            .iter()
            .filter_map(|r| match r {
                RowKind::Operator { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    };
    let at = |st: &super::super::State, want: &str| {
        rows(st)
            .iter()
            .position(|r| matches!(r, RowKind::Operator { text, .. } if text == want))
            .unwrap_or_else(|| panic!("no row {want}"))
    };
    let before = rows(&st).len();
    assert!(
        at(&st, "second") < before - 1,
        "still in line above the first turn's rows"
    );
    // Its turn starts: the prompt moves to where it runs, below everything
    // before it and above its own answer.
    update(&mut st, Msg::Event(Box::new(s.turn("msg_2", "run_2"))));
    assert_eq!(
        at(&st, "second"),
        before - 1,
        "the prompt is above its own answer"
    );
    assert_eq!(texts(&st), ["first", "second"]);
    assert!(!screen(&st).contains("next in line"));
}

#[test]
fn the_durable_row_can_arrive_before_the_answer() {
    let mut st = fresh();
    let fx = enter(&mut st, "hello");
    let mut s = Script::default();
    update(&mut st, Msg::Event(Box::new(s.prompt("msg_1", "hello"))));
    assert!(st.conversation.echoes.is_empty());
    let id = call_id(&fx, "prompt.submit");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(
                &fx,
                id,
                json!({ "message_id": "msg_1", "agent_id": "main", "event_seq": 1,
                "admission_seq": 1, "queue_status": "queued", "priority": "normal" }),
            ),
        },
    );
    assert_eq!(rows(&st).len(), 1, "no duplicate row");
}

#[test]
fn a_failed_prompt_stays_visible() {
    let mut st = fresh();
    let fx = enter(&mut st, "hello");
    let id = call_id(&fx, "prompt.submit");
    let err = ApiError::new(
        ErrorCode::AgentStopped,
        "the agent is stopped: /resume first",
    );
    update(
        &mut st,
        Msg::Response {
            id,
            result: Box::new(Err(err)),
        },
    );
    assert!(matches!(
        rows(&st)[..],
        [RowKind::Operator {
            state: PromptState::Failed(_),
            ..
        }]
    ));
    assert!(screen(&st).contains("hello · ✗ not sent"));
    // The runtime's record of the refusal is the one row with the reason.
    let mut s = Script::default();
    let rejected = s.push(
        "message_rejected",
        Some("msg_9"),
        json!({"message_id": "msg_9", "reason": "agent_stopped", "kind": "operator_prompt",
               "hint": "the agent is stopped: resume it first", "body_preview": "hello"}),
    );
    update(&mut st, Msg::Event(Box::new(rejected)));
    let shown = screen(&st);
    assert_eq!(shown.matches("resume it first").count(), 1, "{shown}");
    // An error nothing records stays on the prompt's row.
    let fx = enter(&mut st, "again");
    let id = call_id(&fx, "prompt.submit");
    let err = ApiError::new(ErrorCode::Internal, "connection to the runtime closed");
    update(
        &mut st,
        Msg::Response {
            id,
            result: Box::new(Err(err)),
        },
    );
    assert!(screen(&st).contains("again · ✗ not sent: connection to the runtime closed"));
}

#[test]
fn bang_runs_an_operator_command_task_shown_at_info() {
    let mut st = fresh();
    let fx = enter(&mut st, "!echo hello");
    assert_eq!(
        requests(&fx),
        [Request::TaskRun {
            agent_id: "main".into(),
            cmd: "echo hello".into()
        }]
    );
    let id = call_id(&fx, "task.run");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(
                &fx,
                id,
                json!(task("task_9", "echo hello", "operator", None, 1)),
            ),
        },
    );
    let mut s = Script::default();
    let t = task("task_9", "echo hello", "operator", None, 1);
    for e in [
        s.task_created(&t),
        s.task_status(
            "task_9",
            "echo hello",
            TaskStatus::Queued,
            TaskStatus::Running,
            None,
            None,
            None,
        ),
        s.task_status(
            "task_9",
            "echo hello",
            TaskStatus::Running,
            TaskStatus::Completed,
            Some(0),
            Some(12),
            Some("hello"),
        ),
    ] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    assert!(st.conversation.echoes.is_empty());
    let commands: Vec<_> = rows(&st)
        .into_iter()
        .filter(|r| matches!(r, RowKind::Command(_)))
        .collect();
    assert_eq!(commands.len(), 1, "start and finish are one row");
    let text = screen(&st);
    assert!(text.contains("$ echo hello ✓ exit 0 · 12 ms"), "{text}");
    assert!(text.contains("│ hello"), "{text}");
}

#[test]
fn slash_commands_complete_as_you_type() {
    let mut st = fresh();
    typ(&mut st, "/di");
    assert!(
        screen(&st).contains("what the conversation shows"),
        "the menu is drawn"
    );
    update(&mut st, key(KeyCode::Tab));
    assert_eq!(st.composer.text(), "/display ");
    typ(&mut st, "v");
    update(&mut st, key(KeyCode::Tab));
    assert_eq!(st.composer.text(), "/display verbose");
    let fx = update(&mut st, key(KeyCode::Enter));
    assert_eq!(
        requests(&fx),
        [Request::AgentDisplay {
            agent_id: "main".into(),
            mode: StoredMode::Verbose
        }]
    );
    assert_eq!(st.mode, DisplayMode::Verbose);
}

#[test]
fn the_slash_menu_matches_letters_in_order() {
    let mut st = fresh();
    typ(&mut st, "/evt");
    let labels: Vec<String> = menu_labels(&st);
    assert_eq!(
        labels.first().map(String::as_str),
        Some("/events [KIND]"),
        "{labels:?}"
    );
    update(&mut st, key(KeyCode::Tab));
    assert_eq!(st.composer.text(), "/events ");
    // Whole-prefix matches come before the rest.
    let names: Vec<&str> = crate::ui::tui::keymap::matching("st")
        .iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["state", "status", "stop", "transcript"]);
    assert!(crate::ui::tui::keymap::matching("zzq").is_empty());
    // Enter runs only what the text begins: a letters-in-order match is
    // completed first (the hint says so), and runs on the next Enter.
    update(&mut st, ctrl('c'));
    typ(&mut st, "/stp");
    assert!(screen(&st).contains("Enter complete"), "{}", screen(&st));
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(requests(&fx).is_empty(), "/stp does not run /stop: {fx:?}");
    assert_eq!(st.composer.text(), "/stop");
    // Seen, and Enter again: it runs.
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(!requests(&fx).is_empty(), "{fx:?}");
}

#[test]
fn enter_on_a_partial_command_runs_the_selected_one() {
    let mut st = fresh();
    typ(&mut st, "/he");
    update(&mut st, key(KeyCode::Enter));
    assert_eq!(st.overlays.top().map(|o| o.kind()), Some(OverlayKind::Help));
}

#[test]
fn display_mode_switches_persist_per_agent() {
    let mut st = fresh();
    let fx = enter(&mut st, "/display 5");
    assert_eq!(
        requests(&fx),
        [Request::AgentDisplay {
            agent_id: "main".into(),
            mode: StoredMode::Debug
        }]
    );
    let fx = prefix(&mut st, 'd');
    assert_eq!(
        requests(&fx),
        [Request::AgentDisplay {
            agent_id: "main".into(),
            mode: StoredMode::Info
        }]
    );
    assert_eq!(st.mode, DisplayMode::Info);
    let fx = enter(&mut st, "/display loud");
    assert!(requests(&fx).is_empty());
    assert!(screen(&st).contains("unknown mode `loud`"));
}

#[test]
fn the_bootstrap_sets_the_display_mode() {
    let st = booted(&session(), StoredMode::Verbose, 80, 24);
    assert_eq!(st.mode, DisplayMode::Verbose);
}

#[test]
fn typing_is_never_hijacked_by_overlay_letters() {
    let mut st = fresh();
    typ(&mut st, "ahe?");
    assert!(st.overlays.is_empty());
    assert_eq!(st.composer.text(), "ahe?");
}

#[test]
fn a_runtime_error_and_its_failure_brief_are_one_alert() {
    let st = booted(&session(), StoredMode::Info, 80, 24);
    let alerts: Vec<_> = rows(&st)
        .into_iter()
        .filter_map(|r| match r {
            RowKind::Alert {
                summary, detail, ..
            } => Some((summary.clone(), detail.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    assert_eq!(
        alerts[0].0,
        "Turn failed: The model provider is unavailable (HTTP 503 after 3 attempts)"
    );
    assert_eq!(
        alerts[0].1,
        ["provider_unavailable · anthropic · anthropic/claude-sonnet-4 · HTTP 503"]
    );
}

#[test]
fn action_required_rings_the_bell_and_marks_the_status_line() {
    let mut st = booted(&Script::default(), StoredMode::Info, 80, 24);
    let mut s = Script::default();
    let e = s.brief("msg_1", "result", "Which region?", "action_required", None);
    let fx = update(&mut st, Msg::Event(Box::new(e)));
    assert!(fx.contains(&Effect::Notify {
        text: "main needs your input".into()
    }));
    assert!(st.attention);
    assert!(screen(&st).contains("▲ NEEDS YOUR INPUT"));
    enter(&mut st, "eu-west-1");
    assert!(!st.attention, "answering clears the marker");
}

#[test]
fn history_does_not_ring_the_bell() {
    let mut st = console(80, 24);
    let script = session();
    let fx = update(
        &mut st,
        Msg::Bootstrap {
            agent_id: "main".into(),
            state: Box::new(bootstrap(&script, StoredMode::Info)),
        },
    );
    let id = call_id(&fx, "events.page");
    let fx = update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, page(&script.events, script.seq())),
        },
    );
    assert!(!fx.iter().any(|e| matches!(e, Effect::Notify { .. })));
}

#[test]
fn notify_follows_the_setting_and_the_focus() {
    use crate::ui::tui::NotifyWhen;
    let ended = |st: &mut super::super::State, n: &str| {
        let mut s = Script::default();
        let mut fx = Vec::new();
        for e in [
            s.prompt(n, "go"),
            s.turn(n, "run_1"),
            s.turn_end(n, "run_1", "completed", 1, 10, "done"),
        ] {
            let mut e = e;
            e.event_seq = st.conversation.applied_seq + 1;
            fx.extend(update(st, Msg::Event(Box::new(e))));
        }
        fx.into_iter()
            .filter(|e| matches!(e, Effect::Notify { .. }))
            .collect::<Vec<_>>()
    };
    let mut st = booted(&Script::default(), StoredMode::Info, 80, 24);
    st.notify = NotifyWhen::Unfocused;
    assert!(ended(&mut st, "msg_1").is_empty(), "focused: nothing rings");
    update(&mut st, Msg::Focus(false));
    assert_eq!(
        ended(&mut st, "msg_2"),
        [Effect::Notify {
            text: "main: turn completed".into()
        }]
    );
    update(&mut st, Msg::Focus(true));
    assert!(ended(&mut st, "msg_3").is_empty());
    st.notify = NotifyWhen::Always;
    assert_eq!(ended(&mut st, "msg_4").len(), 1);
    st.notify = NotifyWhen::Off;
    update(&mut st, Msg::Focus(false));
    assert!(ended(&mut st, "msg_5").is_empty());
}

#[test]
fn live_events_wait_for_the_history() {
    let mut st = console(80, 24);
    let mut script = session();
    let fx = update(
        &mut st,
        Msg::Bootstrap {
            agent_id: "main".into(),
            state: Box::new(bootstrap(&script, StoredMode::Info)),
        },
    );
    let live = script.prompt("msg_4", "one more thing");
    update(&mut st, Msg::Event(Box::new(live)));
    assert!(
        st.conversation.rows.is_empty(),
        "held until the history arrives"
    );
    let id = call_id(&fx, "events.page");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(
                &fx,
                id,
                page(&script.events[..script.events.len() - 1], script.seq() - 1),
            ),
        },
    );
    let last = st.conversation.rows.last().map(|r| r.kind().clone());
    assert!(matches!(last, Some(RowKind::Operator { text, .. }) if text == "one more thing"));
}

#[test]
fn switching_agents_views_the_other_one_and_an_unknown_name_is_said() {
    let mut st = fresh();
    // An unknown agent: said, and nothing else changes.
    let fx = enter(&mut st, "/agent switch ghost");
    let id = call_id(&fx, "agent.status");
    let fx = update(
        &mut st,
        Msg::Response {
            id,
            result: Box::new(Err(crate::protocol::ApiError::new(
                crate::protocol::ErrorCode::NotFound,
                "no agent `ghost`",
            ))),
        },
    );
    assert!(!fx
        .iter()
        .any(|e| matches!(e, Effect::ViewAgent { .. } | Effect::Quit)));
    assert_eq!(st.agent_id, "main");
    assert!(screen(&st).contains("no agent ghost"), "{}", screen(&st));
    // A known one is shown once the runtime confirms it.
    let fx = enter(&mut st, "/agent switch reviewer");
    let id = call_id(&fx, "agent.status");
    let fx = update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, json!(summary_of("reviewer"))),
        },
    );
    assert!(fx.contains(&Effect::ViewAgent {
        agent_id: "reviewer".into()
    }));
    assert_eq!(st.agent_id, "reviewer");
    let fx = enter(&mut st, "/agent new helper");
    assert_eq!(
        requests(&fx),
        [Request::AgentCreate {
            agent_id: "helper".into(),
            template: None,
        }]
    );
}

#[test]
fn unknown_commands_get_a_hint() {
    let mut st = fresh();
    let fx = enter(&mut st, "/frobnicate");
    assert!(fx.is_empty());
    assert!(
        screen(&st).contains("Unknown command /frobnicate"),
        "{}",
        screen(&st)
    );
    enter(&mut st, "/abort");
    assert!(screen(&st).contains("/abort: no turn is running."));
}

#[test]
fn quitting_and_detaching() {
    let mut st = fresh();
    typ(&mut st, "draft");
    assert!(
        update(&mut st, ctrl('c')).is_empty(),
        "Ctrl+C first clears the composer"
    );
    assert!(st.composer.is_empty());
    // Embedded: the runtime says first whether any agent is at work.
    let fx = update(&mut st, ctrl('c'));
    let id = call_id(&fx, "runtime.status");
    let idle = runtime_status(vec![summary_of("main"), summary_of("dev")]);
    let result = answer(&fx, id, idle);
    assert_eq!(
        update(&mut st, Msg::Response { id, result }),
        [Effect::Quit]
    );
    assert_eq!(enter(&mut st, "/quit"), [Effect::Quit]);
    // Detaching asks whether turns run; none do: it detaches.
    let fx = enter(&mut st, "/detach");
    let id = call_id(&fx, "runtime.status");
    let idle = runtime_status(vec![summary_of("main")]);
    let result = answer(&fx, id, idle);
    assert_eq!(
        update(&mut st, Msg::Response { id, result }),
        [Effect::Detach]
    );
    // Quit twice before the runtime answers: it quits all the same.
    let mut st = fresh();
    assert_eq!(
        requests(&update(&mut st, ctrl('c'))),
        [Request::RuntimeStatus]
    );
    assert_eq!(update(&mut st, ctrl('c')), [Effect::Quit]);
}

#[test]
fn quitting_names_the_other_agents_at_work_and_what_happens_to_them() {
    let mut st = fresh();
    let fx = enter(&mut st, "/quit");
    let id = call_id(&fx, "runtime.status");
    // Inside a turn though paused (a pause lets the turn run on).
    let dev = AgentSummary {
        status: AgentStatus::Paused,
        posture: crate::model::decision::AgentSchedulingPosture::ActiveTurn,
        ..summary_of("dev")
    };
    let ops = AgentSummary {
        tasks_active: 2,
        ..summary_of("ops")
    };
    let status = runtime_status(vec![summary_of("main"), dev, ops, summary_of("idle")]);
    let result = answer(&fx, id, status);
    assert!(
        update(&mut st, Msg::Response { id, result }).is_empty(),
        "asked first"
    );
    let asked = rows(&st).iter().any(|r| {
        matches!(r, RowKind::Note { text, .. } if text.starts_with(
            "other agents are at work (dev, ops): quitting cuts their turns off (the next start \
             runs them again) and stops their commands. Quit again to confirm"))
    });
    assert!(asked, "{:?}", rows(&st));
    // Confirmed: nothing of this agent runs, so it quits at once.
    assert_eq!(enter(&mut st, "/quit"), [Effect::Quit]);
    // No answer from the runtime: said, and a second quit goes.
    let mut st = fresh();
    let fx = enter(&mut st, "/quit");
    let id = call_id(&fx, "runtime.status");
    let failed = Box::new(Err(ApiError::new(ErrorCode::Internal, "store busy")));
    assert!(update(&mut st, Msg::Response { id, result: failed }).is_empty());
    assert!(screen(&st).contains("did not say which agents are at work"));
    assert_eq!(enter(&mut st, "/quit"), [Effect::Quit]);
}

#[test]
fn control_commands_call_control() {
    let mut st = fresh();
    for (cmd, action) in [
        ("/pause", ControlAction::Pause),
        ("/resume", ControlAction::Resume),
        ("/stop", ControlAction::Stop),
        ("/wake", ControlAction::Wake),
    ] {
        let fx = enter(&mut st, cmd);
        assert_eq!(
            requests(&fx),
            [Request::Control {
                agent_id: "main".into(),
                action
            }]
        );
    }
    let fx = enter(&mut st, "/model openai/gpt-5");
    assert_eq!(
        requests(&fx),
        [Request::AgentModel {
            agent_id: "main".into(),
            model: Some("openai/gpt-5".into()),
            reasoning_effort: None,
        }]
    );
    let fx = enter(&mut st, "/model default");
    assert_eq!(
        requests(&fx),
        [Request::AgentModel {
            agent_id: "main".into(),
            model: None,
            reasoning_effort: None,
        }]
    );
    use crate::model::usage::EffortChoice;
    let fx = enter(&mut st, "/model openai/o3 high");
    assert_eq!(
        requests(&fx),
        [Request::AgentModel {
            agent_id: "main".into(),
            model: Some("openai/o3".into()),
            reasoning_effort: Some(EffortChoice::High),
        }]
    );
    // An effort alone keeps the agent's own model.
    let fx = enter(&mut st, "/model auto");
    assert_eq!(
        requests(&fx),
        [Request::AgentModel {
            agent_id: "main".into(),
            model: Some("anthropic/claude-sonnet-4".into()),
            reasoning_effort: Some(EffortChoice::Default),
        }]
    );
    let fx = enter(&mut st, "/model openai/o3 default");
    assert_eq!(
        requests(&fx),
        [Request::AgentModel {
            agent_id: "main".into(),
            model: Some("openai/o3".into()),
            reasoning_effort: Some(EffortChoice::Default),
        }]
    );
    let fx = enter(&mut st, "/model openai/o3 extreme");
    assert!(requests(&fx).is_empty(), "an unknown effort sends nothing");
}

#[test]
fn a_paste_is_one_edit() {
    let mut st = fresh();
    let fx = update(&mut st, Msg::Paste("line one\r\nline two\n".into()));
    assert!(fx.is_empty(), "a pasted newline does not submit");
    assert_eq!(st.composer.text(), "line one\nline two\n");
    update(&mut st, with(KeyCode::Enter, KeyModifiers::SHIFT));
    update(&mut st, with(KeyCode::Enter, KeyModifiers::ALT));
    assert_eq!(st.composer.text(), "line one\nline two\n\n\n");
}

#[test]
fn history_recalls_earlier_prompts() {
    let mut st = fresh();
    enter(&mut st, "first");
    enter(&mut st, "second");
    update(&mut st, key(KeyCode::Up));
    assert_eq!(st.composer.text(), "second");
    update(&mut st, key(KeyCode::Up));
    assert_eq!(st.composer.text(), "first");
    update(&mut st, key(KeyCode::Down));
    update(&mut st, key(KeyCode::Down));
    assert_eq!(st.composer.text(), "");
}

#[test]
fn ctrl_r_searches_the_history() {
    let mut st = fresh();
    st.composer.set_history(vec![
        "deploy to staging".into(),
        "fix the flaky test".into(),
        "Deploy to production".into(),
        "/events".into(),
    ]);
    typ(&mut st, "draft");
    update(&mut st, ctrl('r'));
    typ(&mut st, "deploy");
    assert_eq!(
        st.composer.text(),
        "Deploy to production",
        "newest first, any case"
    );
    assert!(screen(&st).contains("history `deploy`: Deploy to production"));
    update(&mut st, ctrl('r'));
    assert_eq!(st.composer.text(), "deploy to staging", "Ctrl+R: older");
    update(&mut st, key(KeyCode::Esc));
    assert_eq!(st.composer.text(), "draft", "Esc: back to the draft");
    update(&mut st, ctrl('r'));
    typ(&mut st, "flaky");
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(
        requests(&fx).is_empty(),
        "Enter keeps the match, sends nothing"
    );
    assert_eq!(st.composer.text(), "fix the flaky test");
    assert!(st.composer.search_query().is_none());
    typ(&mut st, "!");
    assert_eq!(st.composer.text(), "fix the flaky test!");
}

#[test]
fn history_is_kept_walks_past_commands_and_ctrl_c_starts_it_again() {
    let mut st = fresh();
    // Earlier sessions' entries, then this one's: Enter asks to keep it.
    st.composer
        .set_history(vec!["from yesterday".into(), "/events".into()]);
    typ(&mut st, "today");
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(fx.contains(&Effect::RememberPrompt {
        agent_id: "main".into(),
        text: "today".into()
    }));
    update(&mut st, key(KeyCode::Up));
    assert_eq!(st.composer.text(), "today");
    update(&mut st, key(KeyCode::Up));
    assert_eq!(st.composer.text(), "/events");
    assert!(!st.composer.menu_open(), "a recalled command opens no menu");
    update(&mut st, key(KeyCode::Up));
    assert_eq!(st.composer.text(), "from yesterday", "Up walks on past it");
    // Ctrl+C clears and forgets the position: Up starts at the newest.
    update(&mut st, ctrl('c'));
    assert!(st.composer.is_empty());
    update(&mut st, key(KeyCode::Up));
    assert_eq!(st.composer.text(), "today");
}

#[test]
fn the_working_row_is_scoped_to_the_turn() {
    let mut st = fresh();
    let mut s = Script::default();
    let events = [
        s.prompt("msg_1", "go"),
        s.turn("msg_1", "run_1"),
        s.round("msg_1", "run_1", 1, "Reading the logs", &["ExecCommand"]),
    ];
    for e in events {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    assert!(st.wants_tick());
    let w = st.working().map(|w| (w.label, w.detail));
    assert_eq!(
        w,
        Some((
            "Working".into(),
            "Assistant progress: Reading the logs".into()
        ))
    );
    update(
        &mut st,
        Msg::Event(Box::new(s.turn_end(
            "msg_1",
            "run_1",
            "completed",
            1,
            900,
            "",
        ))),
    );
    enter(&mut st, "and now?");
    let w = st.working().map(|w| (w.label, w.detail));
    assert_eq!(
        w,
        Some(("Sending".into(), String::new())),
        "no preview from the previous turn"
    );
    update(&mut st, Msg::Event(Box::new(s.turn("msg_2", "run_2"))));
    assert_eq!(st.working().map(|w| w.detail), Some("thinking".into()));
}

#[test]
fn idle_agents_do_not_tick() {
    let st = fresh();
    assert!(st.working().is_none());
    assert!(!st.wants_tick());
}

#[test]
fn progress_repeated_by_the_brief_is_hidden_and_rows_merge() {
    let st = booted(&session(), StoredMode::Verbose, 80, 24);
    let hidden: Vec<_> = st.conversation.rows.iter().filter(|r| r.hidden).collect();
    assert_eq!(hidden.len(), 1);
    assert!(
        matches!(hidden[0].kind(), RowKind::Event(op) if op.summary.starts_with("Assistant progress: Fixed the flaky test."))
    );
    let patches: Vec<_> = rows(&st)
        .into_iter()
        .filter_map(|r| match r {
            RowKind::Patch {
                path,
                added,
                removed,
                ..
            } => Some((path.as_str(), *added, *removed)),
            _ => None,
        })
        .collect();
    assert_eq!(
        patches,
        [("src/retry.rs", 12, 5), ("tests/retry.rs", 34, 0)]
    );
    let rg = rows(&st)
        .into_iter()
        .filter(|r| {
            matches!(r, RowKind::Command(c) if c.cmd.starts_with("rg "))
                || matches!(r, RowKind::Event(op) if op.summary.starts_with("ExecCommand: rg"))
        })
        .count();
    assert_eq!(rg, 1, "the task row and its ExecCommand call are one row");
}

#[test]
fn esc_while_scrolled_back_returns_to_the_bottom_and_never_interrupts() {
    let mut script = session();
    let mut st = booted(&script, StoredMode::Debug, 80, 24);
    for e in [
        script.prompt("msg_esc", "go"),
        script.turn("msg_esc", "run_esc"),
    ] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    assert!(screen(&st).contains("Esc to interrupt"), "{}", screen(&st));
    update(&mut st, key(KeyCode::PageUp));
    assert!(matches!(st.conversation.scroll, Scroll::Anchor { .. }));
    // The working row says what Esc does now.
    assert!(screen(&st).contains("Esc to the bottom"), "{}", screen(&st));
    assert!(
        requests(&update(&mut st, key(KeyCode::Esc))).is_empty(),
        "a turn being read back through is not interrupted"
    );
    assert_eq!(st.conversation.scroll, Scroll::Follow, "back at the bottom");
    let abort = [Request::Control {
        agent_id: "main".into(),
        action: ControlAction::Abort,
    }];
    assert_eq!(requests(&update(&mut st, key(KeyCode::Esc))), abort);
}

#[test]
fn a_drag_says_once_how_to_select_text() {
    let mut st = booted(&session(), StoredMode::Debug, 80, 24);
    let drag = || {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Drag(crossterm::event::MouseButton::Left),
            column: 3,
            row: 3,
            modifiers: KeyModifiers::NONE,
        })
    };
    update(&mut st, drag());
    assert!(
        screen(&st).contains("hold Shift while dragging"),
        "{}",
        screen(&st)
    );
    update(&mut st, drag());
    let said = st
        .conversation
        .rows
        .iter()
        .filter(|r| format!("{:?}", r.kind()).contains("hold Shift"))
        .count();
    assert_eq!(said, 1, "said once");
}

#[test]
fn scrolling_by_wheel_and_pages() {
    let mut st = booted(&session(), StoredMode::Debug, 80, 24);
    let wheel = |kind| {
        Msg::Mouse(MouseEvent {
            kind,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        })
    };
    update(&mut st, wheel(MouseEventKind::ScrollUp));
    assert!(matches!(st.conversation.scroll, Scroll::Anchor { .. }));
    assert!(screen(&st).contains("newer row"));
    update(&mut st, key(KeyCode::PageDown));
    assert_eq!(st.conversation.scroll, Scroll::Follow);
    update(&mut st, with(KeyCode::Home, KeyModifiers::CONTROL));
    assert!(
        screen(&st).contains("Agent main created"),
        "{}",
        screen(&st)
    );
}

#[test]
fn the_status_line_shows_the_connection() {
    let mut st = fresh();
    update(
        &mut st,
        Msg::Connection(super::super::msg::Connection::Reconnecting { in_secs: 3 }),
    );
    assert!(screen(&st).contains("reconnecting in 3s"));
    let lost = super::super::msg::Connection::Disconnected {
        reason: "socket closed".into(),
    };
    update(&mut st, Msg::Connection(lost));
    assert!(screen(&st).contains("✗ disconnected: socket closed"));
    update(
        &mut st,
        Msg::Connection(super::super::msg::Connection::Streaming),
    );
    assert!(screen(&st).contains("● streaming"));
}

/// Why a reconnect failed is said once per reason, while the status line
/// keeps counting down; said again after a connection came back.
#[test]
fn a_failed_reconnect_says_why_once_per_reason() {
    let mut st = fresh();
    let reconnecting = super::super::msg::Connection::Reconnecting { in_secs: 4 };
    update(&mut st, Msg::Connection(reconnecting.clone()));
    let key_changed = "ssh refused box: its host key is not the one known_hosts holds";
    for _ in 0..3 {
        update(&mut st, Msg::ReconnectFailed(key_changed.into()));
    }
    let s = screen(&st);
    assert_eq!(
        s.matches("could not reconnect: ssh refused box").count(),
        1,
        "{s}"
    );
    assert!(s.contains("reconnecting in 4s"), "{s}");
    update(
        &mut st,
        Msg::Connection(super::super::msg::Connection::Streaming),
    );
    update(&mut st, Msg::Connection(reconnecting));
    update(&mut st, Msg::ReconnectFailed(key_changed.into()));
    let s = screen(&st);
    assert_eq!(
        s.matches("could not reconnect: ssh refused box").count(),
        2,
        "{s}"
    );
}

#[test]
fn resizing_rewraps_and_tiny_screens_get_a_hint() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    update(
        &mut st,
        Msg::Resize {
            width: 60,
            height: 15,
        },
    );
    assert!(
        screen(&st).lines().all(|l| l.chars().count() == 62),
        "60 columns plus quotes"
    );
    update(
        &mut st,
        Msg::Resize {
            width: 30,
            height: 6,
        },
    );
    assert!(screen(&st).contains("Enlarge the terminal"));
}

#[test]
fn events_of_another_agent_and_duplicates_are_ignored() {
    let mut st = booted(&session(), StoredMode::Info, 80, 24);
    let before = st.conversation.rows.len();
    let mut s = session();
    let mut dup = s.events[5].clone();
    update(&mut st, Msg::Event(Box::new(dup.clone())));
    dup.agent_id = "other".into();
    dup.event_seq = 999;
    update(&mut st, Msg::Event(Box::new(dup)));
    assert_eq!(st.conversation.rows.len(), before);
    let next = s.prompt("msg_9", "next");
    update(&mut st, Msg::Event(Box::new(next)));
    assert_eq!(st.conversation.rows.len(), before + 1);
}

#[test]
fn esc_interrupts_a_running_turn_and_ctrl_c_closes_overlays() {
    let mut st = fresh();
    // Idle: Esc only returns to the live tail.
    assert!(requests(&update(&mut st, key(KeyCode::Esc))).is_empty());
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "go"), s.turn("msg_1", "run_1")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let abort = [Request::Control {
        agent_id: "main".into(),
        action: ControlAction::Abort,
    }];
    assert_eq!(requests(&update(&mut st, key(KeyCode::Esc))), abort);
    // With the menu open, Esc closes the menu and the turn goes on.
    typ(&mut st, "/st");
    assert!(requests(&update(&mut st, key(KeyCode::Esc))).is_empty());
    st.composer.clear();
    // In an overlay Ctrl+C closes it; the console stays.
    update(&mut st, ctrl('o'));
    typ(&mut st, "h");
    assert_eq!(st.overlays.len(), 1);
    assert!(update(&mut st, ctrl('c')).is_empty());
    assert!(st.overlays.is_empty(), "Ctrl+C closed the overlay");
    // `/abort` is the same request.
    assert_eq!(requests(&enter(&mut st, "/abort")), abort);
}

#[test]
fn a_fresh_home_says_how_to_configure_a_model_and_the_status_line_names_it() {
    let mut st = console(120, 40);
    let mut state = bootstrap(&Script::default(), StoredMode::Info);
    state.agent.model = None;
    state.agent.model_override = None;
    update(
        &mut st,
        Msg::Bootstrap {
            agent_id: "main".into(),
            state: Box::new(state.clone()),
        },
    );
    let notes = rows(&st)
        .iter()
        .filter(|r| matches!(r, RowKind::Note { text, .. } if text.contains("HOLON_MODEL")))
        .count();
    assert_eq!(notes, 1, "one line says how to configure a model");
    assert_eq!(st.agent.model, None);
    let shown = screen(&st);
    assert!(shown.contains("no model — /model"), "{shown}");
    // A reconnect's bootstrap does not say it again; a configured runtime
    // default is named, not "default model".
    state.agent.model = Some("openai/gpt-4.1".into());
    update(
        &mut st,
        Msg::Bootstrap {
            agent_id: "main".into(),
            state: Box::new(state),
        },
    );
    assert_eq!(st.agent.model.as_deref(), Some("openai/gpt-4.1"));
    let shown = screen(&st);
    assert!(
        shown
            .lines()
            .next()
            .is_some_and(|l| l.contains("openai/gpt-4.1")),
        "{shown}"
    );
    let notes = rows(&st)
        .iter()
        .filter(|r| matches!(r, RowKind::Note { text, .. } if text.contains("HOLON_MODEL")))
        .count();
    assert_eq!(notes, 1);
}

#[test]
fn a_control_confirmation_says_things_once() {
    let mut st = fresh();
    let fx = enter(&mut st, "/stop");
    let id = call_id(&fx, "control");
    let outcome = json!({"agent_id": "main", "action": "stop", "from": "awake_idle", "to": "stopped",
                        "note": "new prompts are refused until resumed; a running turn is cancelled"});
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, outcome),
        },
    );
    let fx = enter(&mut st, "/resume");
    let id = call_id(&fx, "control");
    let outcome = json!({"agent_id": "main", "action": "resume", "from": "stopped", "to": "awake_idle", "note": "resumed"});
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, outcome),
        },
    );
    let notes: Vec<String> = rows(&st)
        .iter()
        .filter_map(|r| match r {
            RowKind::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        notes,
        [
            "Stopped (awake idle → stopped): new prompts are refused until resumed; a running turn is cancelled",
            "Resumed (stopped → awake idle)",
        ]
    );
}

#[test]
fn quitting_an_embedded_console_with_work_running_asks_once() {
    let mut st = fresh();
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "go"), s.turn("msg_1", "run_1")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let fx = enter(&mut st, "/quit");
    let id = call_id(&fx, "runtime.status");
    let result = answer(&fx, id, runtime_status(vec![summary_of("main")]));
    assert!(
        update(&mut st, Msg::Response { id, result }).is_empty(),
        "asked first"
    );
    let asked = rows(&st).iter().any(|r| {
        matches!(r, RowKind::Note { text, .. } if text.starts_with("a turn is running: quitting aborts it (recorded as aborted by the operator"))
    });
    assert!(asked);
    // Confirmed: the turn is aborted first (never replayed), then quit.
    let fx = update(&mut st, ctrl('c'));
    assert!(
        matches!(
            requests(&fx).as_slice(),
            [Request::Control {
                action: ControlAction::Abort,
                ..
            }]
        ),
        "{fx:?}"
    );
    assert!(
        !fx.contains(&Effect::Quit),
        "not before the runtime answered"
    );
    let id = call_id(&fx, "control");
    let outcome = json!({ "agent_id": "main", "action": "abort", "from": "awake_running",
                          "to": "awake_running", "note": "the turn stops now" });
    let fx = update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, outcome),
        },
    );
    assert_eq!(fx, [Effect::Quit], "asked once");
    // Attached, the runtime keeps working: no question.
    let mut st = fresh();
    st.connection = super::super::msg::Connection::Streaming;
    for e in [s.prompt("msg_2", "go"), s.turn("msg_2", "run_2")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    assert_eq!(enter(&mut st, "/quit"), [Effect::Quit]);
}

#[test]
fn a_pasted_prompt_keeps_its_tabs_on_the_wire() {
    let mut st = fresh();
    update(&mut st, Msg::Paste("if x {\n\treturn;\n}".into()));
    assert_eq!(st.composer.text(), "if x {\n\treturn;\n}");
    assert!(screen(&st).contains("    return;"), "drawn as spaces");
    let fx = update(&mut st, key(KeyCode::Enter));
    assert_eq!(
        requests(&fx),
        [Request::PromptSubmit {
            agent_id: "main".into(),
            text: "if x {\n\treturn;\n}".into(),
            priority: crate::model::message::Priority::Normal,
            request_id: None,
        }]
    );
}

#[test]
fn a_large_paste_is_one_placeholder_sent_in_full_and_shown_folded() {
    let mut st = fresh();
    let pasted: String = (1..=30)
        .map(|i| format!("log line {i:02} {}\n", "x".repeat(87)))
        .collect();
    assert_eq!(pasted.chars().count(), 3_000);
    typ(&mut st, "why does this fail? ");
    update(&mut st, Msg::Paste(pasted.clone()));
    assert_eq!(
        st.composer.text(),
        "why does this fail? [pasted 30 lines · 3,000 chars]"
    );
    let text = screen(&st);
    assert!(
        !text.contains("log line 02"),
        "the composer holds one line: {text}"
    );
    // A second one is told apart; a small paste goes in as text.
    update(&mut st, Msg::Paste(pasted.clone()));
    assert!(st
        .composer
        .text()
        .ends_with("[pasted 30 lines · 3,000 chars #2]"));
    update(&mut st, Msg::Paste(" and more".into()));
    let fx = update(&mut st, key(KeyCode::Enter));
    let sent = requests(&fx)
        .into_iter()
        .find_map(|r| match r {
            Request::PromptSubmit { text, .. } => Some(text),
            _ => None,
        })
        .unwrap_or_default();
    assert_eq!(
        sent,
        format!("why does this fail? {pasted}{pasted} and more")
    );
    assert!(st.composer.is_empty());
    // The prompt's row in the conversation is folded at info.
    let text = screen(&st);
    assert!(text.contains("log line 08"), "{text}");
    assert!(!text.contains("log line 09"), "{text}");
    assert!(text.contains("… 53 more lines"), "{text}");
}

#[test]
fn mouse_capture_can_be_switched_off_to_copy_text() {
    let mut st = fresh();
    assert_eq!(enter(&mut st, "/mouse off"), [Effect::Mouse(false)]);
    assert!(!st.mouse);
    assert!(screen(&st).contains("select text with the mouse"));
    assert_eq!(enter(&mut st, "/mouse"), [Effect::Mouse(true)], "toggles");
    assert!(enter(&mut st, "/mouse sideways").is_empty());
}

#[test]
fn a_note_of_several_lines_keeps_its_lines() {
    use crate::ui::tui::rows::{render, RowKind, Tone};
    use crate::ui::tui::theme::Theme;
    let note = RowKind::Note {
        text: "Context of main: ~2.5k tokens.\nNothing compacted yet.".into(),
        tone: Tone::Info,
    };
    let lines: Vec<String> = render(&note, 80, DisplayMode::Info, Theme { no_color: true })
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert_eq!(
        lines,
        vec![
            "» Context of main: ~2.5k tokens.".to_owned(),
            "  Nothing compacted yet.".to_owned()
        ]
    );
}

#[test]
fn trigger_shows_the_url_deliveries_and_waits_as_a_note() {
    let mut st = fresh();
    let fx = enter(&mut st, "/trigger");
    assert_eq!(
        requests(&fx),
        [Request::TriggerShow {
            agent_id: "main".into()
        }]
    );
    let id = call_id(&fx, "trigger.show");
    let view = json!({
        "agent_id": "main",
        "trigger": {"external_trigger_id": "trg_1", "target_agent_id": "main", "status": "active",
                    "trigger_count": 2, "last_triggered_at": "2026-11-23T10:00:00Z"},
        "trigger_url": "http://127.0.0.1:7464/trigger/main/abc123",
        "ingress": {"state": "listening", "http_addr": "127.0.0.1:7464", "access": "local"},
        "recent_deliveries": [{"event_seq": 9, "at": "2026-11-23T10:00:00Z", "external_trigger_id": "trg_1",
            "source": "ci", "resource": "pr-7", "summary": "build failed", "outcome": "submitted",
            "satisfied_waiting_intent_ids": ["wait_1"]}],
        "open_waits": [{"id": "wait_2", "agent_id": "main", "source": "github", "description": "review on PR 9",
            "external_ref": "pr-9", "created_at": "", "updated_at": ""}],
    });
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, view),
        },
    );
    let text = screen(&st);
    for part in [
        "http://127.0.0.1:7464/trigger/main/abc123",
        "capability secret",
        "ci pr-7 \"build failed\": woke the agent;",
        "satisfied wait_1",
        "wait_2: review on PR 9 (source github, ref pr-9)",
        "listening on 127.0.0.1:7464",
    ] {
        assert!(text.contains(part), "{part:?} in:\n{text}");
    }
    let fx = enter(&mut st, "/trigger rotate");
    assert_eq!(
        requests(&fx),
        [Request::TriggerRotate {
            agent_id: "main".into()
        }]
    );
    let fx = enter(&mut st, "/trigger nonsense");
    assert!(requests(&fx).is_empty());
}

#[test]
fn approvals_are_answered_from_the_composer_or_the_overlay() {
    let mut st = fresh();
    let fx = enter(&mut st, "/approve apr_1 --always");
    assert_eq!(
        requests(&fx),
        [Request::ApprovalApprove {
            approval_id: "apr_1".into(),
            agent_id: None,
            always: true
        }]
    );
    // A second console answered first: the runtime's refusal is shown.
    let id = call_id(&fx, "approval.approve");
    let refused = ApiError::new(
        ErrorCode::Conflict,
        "approval `apr_1` was already answered: granted",
    );
    update(
        &mut st,
        Msg::Response {
            id,
            result: Box::new(Err(refused)),
        },
    );
    assert!(screen(&st).contains("already answered: granted"));
    let fx = enter(&mut st, "/deny apr_2 not in prod");
    assert_eq!(
        requests(&fx),
        [Request::ApprovalDeny {
            approval_id: "apr_2".into(),
            agent_id: None,
            note: Some("not in prod".into())
        }]
    );
    assert!(requests(&enter(&mut st, "/approve apr_3 now")).is_empty());
    // No id: the overlay of every waiting call, answered with keys.
    let fx = enter(&mut st, "/approve");
    let id = call_id(&fx, "approvals.list");
    let list = json!([{
        "id": "apr_4", "agent_id": "reviewer", "status": "pending", "tool_name": "ExecCommand",
        "call_id": "c", "arguments": {}, "summary": "`make deploy`", "why": "approval is `always`",
        "workspace_id": "agent_home", "execution_root": "/h", "run_id": "r", "message_id": "m",
        "requested_at": "2026-11-23T09:00:00Z",
    }]);
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, list),
        },
    );
    assert!(screen(&st).contains("`make deploy`"));
    let fx = update(&mut st, key(KeyCode::Char('A')));
    assert_eq!(
        requests(&fx),
        [Request::ApprovalApprove {
            approval_id: "apr_4".into(),
            agent_id: Some("reviewer".into()),
            always: true
        }]
    );
    update(&mut st, key(KeyCode::Char('d')));
    for c in "later".chars() {
        update(&mut st, key(KeyCode::Char(c)));
    }
    let fx = update(&mut st, key(KeyCode::Enter));
    assert_eq!(
        requests(&fx),
        [Request::ApprovalDeny {
            approval_id: "apr_4".into(),
            agent_id: Some("reviewer".into()),
            note: Some("later".into())
        }]
    );
}

/// An answer of another method's type (a client or server bug) is said
/// like any error, never read as if it fit.
#[test]
fn an_answer_of_the_wrong_type_is_said_not_misread() {
    let mut st = fresh();
    let fx = enter(&mut st, "hello");
    let id = call_id(&fx, "prompt.submit");
    let wrong = crate::protocol::Response::RuntimeShutdown(crate::protocol::ShutdownAck {
        shutting_down: true,
        commands_left_running: 0,
    });
    update(
        &mut st,
        Msg::Response {
            id,
            result: Box::new(Ok(wrong)),
        },
    );
    let shown = screen(&st);
    assert!(shown.contains("hello · ✗ not sent"), "{shown}");
    assert!(shown.contains("unexpected answer"), "{shown}");
}

#[test]
fn a_rounds_reasoning_summary_shows_from_verbose_up_and_never_as_the_answer() {
    let mut st = booted(&Script::default(), StoredMode::Verbose, 100, 30);
    let mut s = Script::default();
    update(&mut st, Msg::Event(Box::new(s.prompt("msg_1", "why?"))));
    update(&mut st, Msg::Event(Box::new(s.turn("msg_1", "run_1"))));
    let payload = json!({ "run_id": "run_1", "round": 1, "text_preview": "", "tool_names": ["ExecCommand"],
        "text_chars": 0, "reasoning_summary": "Check the logs before touching the config.\nThen decide." });
    update(
        &mut st,
        Msg::Event(Box::new(s.push(
            "assistant_round_recorded",
            Some("msg_1"),
            payload,
        ))),
    );
    let verbose = screen(&st);
    let thinking = verbose
        .find("Thinking: Check the logs before touching the config.")
        .unwrap_or_else(|| panic!("{verbose}"));
    let requested = verbose
        .find("Model requested tools")
        .unwrap_or_else(|| panic!("{verbose}"));
    assert!(thinking < requested, "the reasoning comes first");
    let mut info = booted(&Script::default(), StoredMode::Info, 100, 30);
    for e in s.events.clone() {
        update(&mut info, Msg::Event(Box::new(e)));
    }
    assert!(!screen(&info).contains("Thinking"));
}

#[test]
fn slash_status_sums_up_the_session() {
    use crate::protocol::views::{DayUsageView, UsageView};
    let mut st = booted(&Script::default(), StoredMode::Info, 120, 30);
    let mut s = summary(3, ("Idle", "no runnable work"));
    s.model = Some("openai/gpt-5".into());
    s.reasoning_effort = Some(crate::model::usage::ReasoningEffort::High);
    s.usage = Some(UsageView {
        last_turn: None,
        input_tokens: 120_000,
        output_tokens: 9_000,
        cached_input_tokens: 80_000,
        cache_write_tokens: 0,
        reasoning_tokens: 4_000,
        model_rounds: 7,
        cost_usd: 0.2612,
        unpriced_rounds: 0,
        today: DayUsageView {
            cost_usd: 0.2612,
            budget_usd: Some(1.0),
            ..DayUsageView::default()
        },
    });
    st.agent.apply_summary(&s, true);
    enter(&mut st, "/status");
    let text = screen(&st);
    assert!(
        text.contains("Status: openai/gpt-5 · reasoning high · context 41%"),
        "{text}"
    );
    assert!(
        text.contains("Tokens: 120000 in (80000 cached) · 9000 out (4000 reasoning) · 7 rounds"),
        "{text}"
    );
    assert!(
        text.contains("Cost: $0.2612 · today $0.2612 of $1.00"),
        "{text}"
    );
}

#[test]
fn at_opens_a_file_picker_over_the_workspace() {
    use crate::ui::tui::mention::FileIndex;
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let root = st
        .agent
        .execution
        .as_ref()
        .map(|x| x.execution_root.clone())
        .unwrap_or_default();
    let fx = typ(&mut st, "fix @");
    assert!(
        fx.contains(&Effect::IndexFiles { root: root.clone() }),
        "the first @ asks for the walk: {fx:?}"
    );
    let fx = typ(&mut st, "re");
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::IndexFiles { .. })),
        "asked once"
    );
    let index = FileIndex {
        root,
        files: vec![
            "src/retry.rs".into(),
            "tests/retry.rs".into(),
            "README.md".into(),
        ],
        truncated: false,
    };
    update(&mut st, Msg::FileIndex(std::sync::Arc::new(index)));
    typ(&mut st, "try");
    let labels: Vec<String> = menu_labels(&st);
    assert_eq!(labels, ["@src/retry.rs", "@tests/retry.rs"]);
    assert!(screen(&st).contains("@tests/retry.rs"), "the menu is drawn");
    // Enter takes the file (the prompt is not sent yet); then it sends.
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(requests(&fx).is_empty());
    assert_eq!(st.composer.text(), "fix @src/retry.rs ");
    typ(&mut st, "please");
    let fx = update(&mut st, key(KeyCode::Enter));
    assert!(requests(&fx).iter().any(|r| matches!(r,
        Request::PromptSubmit { text, .. } if text == "fix @src/retry.rs please")));
}

#[test]
fn mcp_calls_are_rows_at_info_and_slash_mcp_lists_the_servers() {
    let mut st = fresh();
    let mut s = Script::default();
    let e = s.tool(
        "msg_1",
        "run_1",
        "mcp__github__get_issue",
        json!({ "repo": "holon", "number": 7 }),
        json!({ "ok": true, "text": "Issue 7: the console wedges" }),
        42,
        false,
    );
    update(&mut st, Msg::Event(Box::new(e)));
    let text = screen(&st);
    assert!(
        text.contains("github · get_issue: holon (42 ms) → Issue 7: the console wedges"),
        "{text}"
    );

    let fx = enter(&mut st, "/mcp");
    assert!(matches!(requests(&fx)[..], [Request::McpList { .. }]));
    let id = call_id(&fx, "mcp.list");
    let servers = json!([{
        "name": "github", "transport": "stdio", "state": "running", "log": "/l",
        "tools": [{ "name": "get_issue", "exposed": "mcp__github__get_issue", "read_only": true }],
        "dropped": [],
    }, {
        "name": "browser", "transport": "http", "state": "failed", "log": "/b",
        "reason": "the server at http://127.0.0.1:9/mcp refused the handshake", "retry_in_ms": 4000,
    }]);
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, servers),
        },
    );
    let text = screen(&st);
    assert!(text.contains("github (stdio) running · 1 tool"), "{text}");
    assert!(text.contains("mcp__github__get_issue read-only"), "{text}");
    assert!(
        text.contains("browser (http) failed: the server at"),
        "{text}"
    );
    assert!(text.contains("handshake (tried again after 4 s)"), "{text}");
}

#[test]
fn compaction_is_a_row_at_info_while_it_runs_and_says_what_it_made() {
    let mut st = booted(&Script::default(), StoredMode::Info, 100, 24);
    let mut s = Script::default();
    let feed = |st: &mut super::super::State, e| {
        update(st, Msg::Event(Box::new(e)));
    };
    feed(&mut st, s.prompt("msg_1", "go on"));
    feed(&mut st, s.turn("msg_1", "run_1"));
    let started = json!({ "run_id": "run_1", "trigger": "turn_start", "folding_message_count": 80,
        "folding_turns": 38, "tokens_before": 24_100 });
    feed(&mut st, s.push("context_compaction_started", None, started));
    let shown = screen(&st);
    assert!(
        shown.contains("Compacting context: folding 38 turns (24.1k tokens) into the summary"),
        "{shown}"
    );
    let done = json!({ "run_id": "run_1", "episode_id": "ep_1", "epoch": 2, "trigger": "turn_start",
        "compacted_message_count": 80, "compacted_turns": 38, "summary_source": "model",
        "summary_chars": 4000, "summary_tokens": 1_200, "tokens_before": 24_100, "tokens_after": 9_000,
        "workspace_id": "agent_home", "duration_ms": 57_300.0 });
    feed(&mut st, s.push("context_compacted", None, done));
    let shown = screen(&st);
    assert!(!shown.contains("Compacting context"), "{shown}");
    assert!(
        shown.contains("Context compacted: 38 turns → 1.2k-token summary in 57.3 s"),
        "{shown}"
    );
    // One that the turn's end overtakes says it made nothing.
    feed(
        &mut st,
        s.push(
            "context_compaction_started",
            None,
            json!({ "run_id": "run_1",
        "trigger": "turn_local", "folding_turns": 2, "tokens_before": 3_000 }),
        ),
    );
    feed(
        &mut st,
        s.turn_end("msg_1", "run_1", "aborted", 1, 2_000, ""),
    );
    let shown = screen(&st);
    assert!(
        shown.contains("Context compaction ended without a new summary"),
        "{shown}"
    );
    assert_eq!(shown.matches("Context compacted").count(), 1, "{shown}");
}

#[test]
fn the_status_line_status_and_context_give_one_context_figure() {
    let mut st = booted(&session(), StoredMode::Info, 160, 40);
    // The agent's last prompt: 82k of a 200k window (the fixture's).
    assert!(screen(&st).contains("ctx 41%"), "{}", screen(&st));
    assert!(!screen(&st).contains(" tok "), "no second token figure");
    let same = "context 41% (82.0k of the 200.0k-token window at the last prompt)";
    enter(&mut st, "/status");
    assert!(screen(&st).contains(same), "{}", screen(&st));
    let fx = enter(&mut st, "/context");
    let id = call_id(&fx, "agent.prompt");
    let preview = json!({ "agent_id": "main", "model_ref": "anthropic/claude-sonnet-4",
        "budget": { "window": 200_000, "source": "known_model", "output_reserve": 16_000, "prompt_budget": 176_000 },
        "sections": [], "history_entries": 40, "history_tokens": 60_000, "total_tokens": 84_000,
        "percent_of_window": 42, "conversation": [],
        "context": { "epoch": 2, "compacted_entries": 310, "last_prompt":
            { "estimated_tokens": 80_000, "reported_input_tokens": 82_000, "window": 200_000, "prompt_budget": 176_000 } } });
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, preview),
        },
    );
    let text = screen(&st);
    assert!(
        text.contains(&format!("Context of main: {same}.")),
        "{text}"
    );
    assert!(
        text.contains("The next prompt would be ~84.0k tokens, 42%"),
        "{text}"
    );
}

#[test]
fn detaching_waits_for_running_turns_and_esc_detaches_now() {
    let busy = |n: u64| {
        let mut v = runtime_status(vec![summary_of("main")]);
        v["activity"]["running_turn_count"] = json!(n);
        v
    };
    let mut st = fresh();
    // No new turn starts from the first ask (one could start between an
    // answer of none and the hand-over).
    let fx = enter(&mut st, "/detach");
    assert!(fx.contains(&Effect::HoldTurns), "{fx:?}");
    let id = call_id(&fx, "runtime.status");
    let fx = update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, busy(1)),
        },
    );
    // The wait is said where the eye is.
    assert!(fx.is_empty(), "{fx:?}");
    assert!(st.needs_clock(), "it polls while it waits");
    let shown = screen(&st);
    assert!(
        shown.contains("Detaching once the running turn ends"),
        "{shown}"
    );
    // Asked again a second later: still running, nothing more is said.
    let later = st.now_ms + 1_000;
    let fx = update(&mut st, Msg::Tick { now_ms: later });
    let id = call_id(&fx, "runtime.status");
    assert!(update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, busy(1))
        }
    )
    .is_empty());
    // The turn ended (its agent's state changed): asked at once, and it goes.
    let mut s = Script {
        clock: 10,
        ..Default::default()
    };
    let changed = json!({ "from": "awake_running", "to": "asleep", "cause": "Sleep" });
    let fx = update(
        &mut st,
        Msg::Event(Box::new(s.push("agent_state_changed", None, changed))),
    );
    let id = call_id(&fx, "runtime.status");
    let fx = update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, busy(0)),
        },
    );
    assert_eq!(fx, [Effect::Detach]);

    // Esc while it waits detaches now, and says what that costs; it
    // never interrupts the turn it waits for.
    let mut st = fresh();
    let fx = enter(&mut st, "/detach");
    let id = call_id(&fx, "runtime.status");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, busy(2)),
        },
    );
    assert!(
        screen(&st).contains("2 turns are running"),
        "{}",
        screen(&st)
    );
    assert_eq!(update(&mut st, key(KeyCode::Esc)), [Effect::Detach]);
    assert!(screen(&st).contains("Detaching now"), "{}", screen(&st));

    // An attached console only closes: nothing stops.
    let mut st = fresh();
    st.connection = crate::ui::tui::msg::Connection::Streaming;
    assert_eq!(enter(&mut st, "/detach"), [Effect::Detach]);
}

#[test]
fn a_compaction_left_open_is_closed_by_the_next_and_never_says_compacting() {
    let mut st = booted(&Script::default(), StoredMode::Info, 100, 24);
    let mut s = Script::default();
    for e in [s.prompt("msg_1", "go"), s.turn("msg_1", "run_1")] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let started = json!({ "run_id": "run_1", "trigger": "turn_start", "folding_turns": 3, "tokens_before": 9_000 });
    for _ in 0..2 {
        let e = s.push("context_compaction_started", None, started.clone());
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let shown = screen(&st);
    assert_eq!(shown.matches("Compacting context").count(), 2, "{shown}");
    assert!(
        shown.contains("Context compaction ended without a new summary"),
        "{shown}"
    );
    // A compaction of another run does not end this one.
    let other = json!({ "run_id": "run_0", "episode_id": "ep_0", "epoch": 1, "trigger": "turn_start",
        "compacted_turns": 1, "summary_source": "model", "summary_tokens": 100, "duration_ms": 10.0 });
    update(
        &mut st,
        Msg::Event(Box::new(s.push("context_compacted", None, other))),
    );
    let open = rows(&st)
        .into_iter()
        .filter(|r| matches!(r, RowKind::Event(op) if op.summary.starts_with("Compacting context")))
        .count();
    assert_eq!(open, 1, "{}", screen(&st));
}

#[test]
fn a_failure_below_the_view_is_said_on_the_rule_where_the_eye_is() {
    let mut st = booted(&Script::default(), StoredMode::Info, 100, 24);
    for n in 0..60 {
        st.conversation
            .note(format!("filler {n}"), super::super::rows::Tone::Info);
    }
    update(&mut st, key(KeyCode::PageUp));
    let mut s = Script {
        clock: 5,
        ..Default::default()
    };
    let e = s.runtime_error("msg_1", "run_1", &provider_down());
    update(&mut st, Msg::Event(Box::new(e)));
    let shown = screen(&st);
    let rule = shown
        .lines()
        .find(|l| l.contains("newer row"))
        .unwrap_or_else(|| panic!("no rule marker:\n{shown}"));
    assert!(
        rule.contains("✗ Runtime error: The model provider"),
        "{rule}"
    );
    assert!(rule.contains("Ctrl+End"), "{rule}");
    // Back at the bottom the failure is in view itself.
    update(&mut st, key(KeyCode::Esc));
    assert!(!screen(&st)
        .lines()
        .any(|l| l.contains("✗ Runtime") && l.contains("──")));
}

#[test]
fn copy_puts_the_newest_answer_or_the_found_row_on_the_clipboard() {
    let mut st = booted(&Script::default(), StoredMode::Info, 100, 24);
    let fx = enter(&mut st, "/copy");
    assert!(fx.is_empty());
    assert!(screen(&st).contains("Nothing to copy yet"));
    let mut s = Script::default();
    for e in [
        s.brief("msg_1", "result", "first **answer**", "turn_result", None),
        s.brief("msg_2", "result", "second answer", "turn_result", None),
    ] {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let fx = enter(&mut st, "/copy");
    assert_eq!(
        fx,
        [Effect::Copy {
            text: "second answer".into()
        }]
    );
    assert!(
        screen(&st).contains("Copied 13 characters"),
        "{}",
        screen(&st)
    );
    // With find showing a row, that row, as its source text.
    enter(&mut st, "/find first");
    let fx = enter(&mut st, "/copy");
    assert_eq!(
        fx,
        [Effect::Copy {
            text: "first **answer**".into()
        }]
    );
}

#[test]
fn copy_leaves_out_what_the_screen_showed_escaped_and_knows_a_terminal_without_it() {
    let mut st = booted(&Script::default(), StoredMode::Info, 120, 24);
    let mut s = Script::default();
    let e = s.brief(
        "msg_1",
        "result",
        "run \u{1b}[2Kthis\u{202e} now",
        "turn_result",
        None,
    );
    update(&mut st, Msg::Event(Box::new(e)));
    let fx = enter(&mut st, "/copy");
    assert_eq!(
        fx,
        [Effect::Copy {
            text: "run [2Kthis now".into()
        }]
    );
    assert!(
        screen(&st).contains("control and hidden characters left out"),
        "{}",
        screen(&st)
    );
    st.clipboard = false;
    assert!(enter(&mut st, "/copy").is_empty());
    assert!(screen(&st).contains("cannot take a clipboard write"));
}
