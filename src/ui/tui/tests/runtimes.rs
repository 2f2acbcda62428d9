//! One console over several runtimes: `/runtime` lists them at a glance,
//! `/runtime NAME` switches (the view starts anew once the loop has the
//! new client), and what needs the operator on another runtime is said
//! where the eye is, naming it.

use super::super::msg::{Effect, Msg};
use super::super::runtimes::{Glance, Place};
use super::super::update;
use super::fixtures::*;
use crate::ui::present::runtimes::Seen;

fn with_remotes() -> super::super::State {
    let mut st = fresh();
    st.runtimes.places = vec![
        Place {
            name: "local".into(),
            at: "/h/run/control.sock".into(),
        },
        Place {
            name: "build".into(),
            at: "ssh://build-box/~/holon".into(),
        },
    ];
    st.runtimes.current = "local".into();
    st
}

fn seen(agents: u64, approvals: u64) -> Result<Seen, String> {
    Ok(Seen {
        agents,
        approvals,
        ..Seen::default()
    })
}

#[test]
fn one_runtime_only_says_how_to_name_others() {
    let mut st = fresh();
    let fx = enter(&mut st, "/runtime");
    assert!(fx.is_empty(), "{fx:?}");
    assert!(screen(&st).contains("holon remotes add"), "{}", screen(&st));
}

#[test]
fn the_list_marks_the_runtime_shown_and_names_each_ones_state() {
    let mut st = with_remotes();
    let fx = enter(&mut st, "/runtime");
    assert!(
        fx.iter().any(|e| matches!(e, Effect::GlanceRuntimes)),
        "{fx:?}"
    );
    let glances = vec![
        Glance {
            name: "local".into(),
            seen: seen(2, 0),
        },
        Glance {
            name: "build".into(),
            seen: Err("no answer within 5 s".into()),
        },
    ];
    update(&mut st, Msg::RuntimesSeen(glances));
    let s = screen(&st);
    assert!(s.contains("* local"), "{s}");
    assert!(
        s.contains("build ssh://build-box/~/holon unreachable"),
        "{s}"
    );
    // A periodic glance (not asked for) lists nothing.
    let rows = st.conversation.rows.len();
    update(&mut st, Msg::RuntimesSeen(vec![]));
    assert_eq!(st.conversation.rows.len(), rows);
}

#[test]
fn switching_waits_for_the_new_client_then_shows_the_agent_anew() {
    let mut st = with_remotes();
    let unknown = enter(&mut st, "/runtime gpu");
    assert!(unknown.is_empty());
    assert!(screen(&st).contains("No runtime `gpu`: local, build."));
    let fx = enter(&mut st, "/runtime build");
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::SwitchRuntime { name, agent_id }
            if name == "build" && agent_id == "main")),
        "{fx:?}"
    );
    // One switch at a time.
    assert!(enter(&mut st, "/runtime local").is_empty());
    assert!(screen(&st).contains("A switch to build is under way"));
    assert_eq!(st.runtimes.current, "local", "not before the loop says");
    let fx = update(
        &mut st,
        Msg::RuntimeSwitched {
            name: "build".into(),
            agent_id: "main".into(),
            took_ms: 42,
            embedded: false,
        },
    );
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::ViewAgent { agent_id } if agent_id == "main")),
        "{fx:?}"
    );
    let s = screen(&st);
    assert!(s.contains("build/main"), "{s}");
    assert!(s.contains("Now showing build"), "{s}");
    assert!(s.contains("switched in 42 ms"), "{s}");
    // A failed switch leaves the view where it was, and says why.
    let rows = st.conversation.rows.len();
    update(
        &mut st,
        Msg::SwitchFailed {
            name: "local".into(),
            reason: "not running".into(),
        },
    );
    assert_eq!(st.runtimes.current, "build");
    assert_eq!(st.conversation.rows.len(), rows + 1);
    assert!(screen(&st).contains("Could not switch to local: not running"));
}

#[test]
fn what_needs_you_elsewhere_is_said_once_and_stays_in_the_status_line() {
    let mut st = with_remotes();
    let glance = |approvals| {
        vec![
            Glance {
                name: "local".into(),
                seen: seen(1, 5),
            },
            Glance {
                name: "build".into(),
                seen: seen(3, approvals),
            },
        ]
    };
    update(&mut st, Msg::RuntimesSeen(glance(2)));
    let s = screen(&st);
    assert!(s.contains("Needs you on another runtime: build (2)"), "{s}");
    assert!(s.contains("elsewhere: build 2"), "{s}");
    // The shown runtime's own approvals are its banner's, not "elsewhere".
    assert!(!s.contains("local 5"), "{s}");
    // The same count again is not said again; a larger one is.
    update(&mut st, Msg::RuntimesSeen(glance(2)));
    assert_eq!(
        screen(&st).matches("Needs you on another runtime").count(),
        1
    );
    update(&mut st, Msg::RuntimesSeen(glance(3)));
    assert!(screen(&st).contains("build (3)"));
    // Answered there: gone from the status line.
    update(&mut st, Msg::RuntimesSeen(glance(0)));
    assert!(!screen(&st).contains("elsewhere:"));
    // Leaving a runtime that needs you is not news: it is carried into
    // "elsewhere" at once, and the next glance says nothing new.
    update(
        &mut st,
        Msg::RuntimeSwitched {
            name: "build".into(),
            agent_id: "main".into(),
            took_ms: 3,
            embedded: false,
        },
    );
    assert!(
        screen(&st).contains("elsewhere: local 5"),
        "{}",
        screen(&st)
    );
    let said = screen(&st).matches("Needs you on another runtime").count();
    update(&mut st, Msg::RuntimesSeen(glance(0)));
    assert_eq!(
        screen(&st).matches("Needs you on another runtime").count(),
        said
    );
}

/// An embedded console runs this machine's runtime: quitting or detaching
/// while it shows another goes back home first (to the agent shown there
/// before), and the next quit is about the home runtime.
#[test]
fn quitting_away_from_the_runtime_this_console_runs_goes_home_first() {
    let mut st = with_remotes();
    st.runtimes.embedded = Some("local".into());
    enter(&mut st, "/runtime build");
    update(
        &mut st,
        Msg::RuntimeSwitched {
            name: "build".into(),
            agent_id: "main".into(),
            took_ms: 7,
            embedded: false,
        },
    );
    st.agent_id = "ci".into();
    let fx = enter(&mut st, "/quit");
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::SwitchRuntime { name, agent_id }
            if name == "local" && agent_id == "main")),
        "{fx:?}"
    );
    assert!(!fx.iter().any(|e| matches!(e, Effect::Quit)), "{fx:?}");
    assert!(
        screen(&st).contains("runs the local runtime"),
        "{}",
        screen(&st)
    );
    update(
        &mut st,
        Msg::RuntimeSwitched {
            name: "local".into(),
            agent_id: "main".into(),
            took_ms: 1,
            embedded: true,
        },
    );
    assert_eq!(st.connection, super::super::msg::Connection::Embedded);
    assert_eq!(st.agent_id, "main");
    // At home, /detach is the embedded runtime's own again.
    let fx = enter(&mut st, "/detach");
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::SwitchRuntime { .. })),
        "{fx:?}"
    );
}

/// No switch while a quit, a detach or a prompt is under way (each is
/// about the runtime shown), and no quit while a switch is: whatever it
/// acts on would change under it. A way home that fails lets the next
/// /quit act from where the console is.
#[test]
fn a_switch_waits_for_what_is_under_way_and_a_failed_way_home_still_quits() {
    let mut st = with_remotes();
    st.detaching.waiting = true;
    assert!(enter(&mut st, "/runtime build").is_empty());
    assert!(screen(&st).contains("Not switching now: a detach is under way"));
    st.detaching.waiting = false;
    st.quit_asked = true;
    assert!(enter(&mut st, "/runtime build").is_empty());
    st.quit_asked = false;
    enter(&mut st, "/runtime build");
    let fx = enter(&mut st, "/quit");
    assert!(!fx.iter().any(|e| matches!(e, Effect::Quit)), "{fx:?}");
    assert!(
        screen(&st).contains("/quit once it lands"),
        "{}",
        screen(&st)
    );

    // An embedded console away from home whose way back fails.
    let mut st = with_remotes();
    st.runtimes.embedded = Some("local".into());
    st.runtimes.current = "build".into();
    let fx = enter(&mut st, "/quit");
    assert!(fx.iter().any(|e| matches!(e, Effect::SwitchRuntime { .. })));
    update(
        &mut st,
        Msg::SwitchFailed {
            name: "local".into(),
            reason: "it has no agent `main`".into(),
        },
    );
    assert!(screen(&st).contains("acts from here"), "{}", screen(&st));
    let fx = enter(&mut st, "/quit");
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::SwitchRuntime { .. })),
        "{fx:?}"
    );
}

/// `/agents` groups agents by runtime: the one shown is the list, each
/// other runtime's agents follow on a line of their own, from its last
/// glance, naming how to get there.
#[test]
fn the_agents_overlay_lists_other_runtimes_agents_under_their_name() {
    let mut st = with_remotes();
    let build = Seen {
        agents: 2,
        listed: vec![
            ("main".into(), "Idle".parse().unwrap()),
            ("ci".into(), "WaitingForOperator".parse().unwrap()),
        ],
        ..Seen::default()
    };
    let glances = vec![
        Glance {
            name: "local".into(),
            seen: seen(1, 0),
        },
        Glance {
            name: "build".into(),
            seen: Ok(build),
        },
    ];
    update(&mut st, Msg::RuntimesSeen(glances));
    let fx = prefix(&mut st, 'a');
    let id = call_id(&fx, "agents.list");
    let list =
        serde_json::json!({"agents": [summary(3, ("Idle", "no runnable work"))], "total": 1});
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, list),
        },
    );
    let s = screen(&st);
    for agent in ["build/main", "build/ci"] {
        let row = s.lines().find(|l| l.contains(agent)).unwrap_or_default();
        assert!(row.contains("on build: Enter goes there"), "{agent}: {s}");
    }
    assert!(
        s.lines()
            .any(|l| l.contains("build/ci") && l.contains("Needs input")),
        "{s}"
    );
    // Enter on one goes there: runtime and agent in one step.
    let mut fx = Vec::new();
    for _ in 0..12 {
        fx = update(&mut st, key(crossterm::event::KeyCode::Down));
    }
    assert!(fx.is_empty(), "{fx:?}");
    let fx = update(&mut st, key(crossterm::event::KeyCode::Enter));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::SwitchRuntime { name, agent_id }
            if name == "build" && agent_id == "ci")),
        "{fx:?}"
    );
    assert!(st.overlays.top().is_none(), "the overlay closed");
    assert_eq!(st.runtimes.switching.as_deref(), Some("build"));
    st.runtimes.switching = None;
    // Or typed.
    let fx = enter(&mut st, "/runtime build ci");
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::SwitchRuntime { name, agent_id }
            if name == "build" && agent_id == "ci")),
        "{fx:?}"
    );
    assert!(
        !s.contains("on local:"),
        "the runtime shown is the list itself: {s}"
    );
}

/// A call waiting on `runtime`'s agent `agent`, as a glance keeps it.
fn asked(id: &str, agent: &str) -> crate::model::approval::ApprovalRecord {
    serde_json::from_value(serde_json::json!({
        "id": id, "agent_id": agent, "status": "pending", "tool_name": "ExecCommand",
        "call_id": "call_1", "arguments": { "cmd": "cargo publish" },
        "summary": "`cargo publish`", "why": "approval is `always`",
        "workspace_id": "agent_home", "execution_root": "/srv/build", "run_id": "run_b",
        "message_id": "msg_b", "requested_at": "2026-11-30T09:00:00Z",
    }))
    .expect("an approval record")
}

fn build_asks(st: &mut super::super::State) {
    let build = Seen {
        agents: 1,
        approvals: 1,
        asked: vec![asked("apr_b1", "ci")],
        ..Seen::default()
    };
    let glances = vec![
        Glance {
            name: "local".into(),
            seen: seen(1, 0),
        },
        Glance {
            name: "build".into(),
            seen: Ok(build),
        },
    ];
    update(st, Msg::RuntimesSeen(glances));
}

/// A call waiting on another runtime is named where the eye is, with the
/// words that answer it from here; `/approve ID` answers it there, over
/// that runtime's connection, and says what it did.
#[test]
fn another_runtimes_call_is_answered_from_here() {
    let mut st = with_remotes();
    build_asks(&mut st);
    let s = screen(&st);
    assert!(
        s.contains("build · ci asks to run ExecCommand `cargo publish`: /approve apr_b1"),
        "{s}"
    );
    let fx = enter(&mut st, "/approve apr_b1");
    let Some(Effect::CallOn {
        runtime,
        id,
        request,
    }) = fx.into_iter().next()
    else {
        panic!("no call on another runtime");
    };
    assert_eq!(runtime, "build");
    assert_eq!(
        request,
        crate::protocol::Request::ApprovalApprove {
            approval_id: "apr_b1".into(),
            agent_id: Some("ci".into()),
            always: false,
        }
    );
    let mut granted = asked("apr_b1", "ci");
    granted.status = crate::model::approval::ApprovalStatus::Granted;
    let result = Box::new(Ok(crate::protocol::Response::ApprovalApprove(granted)));
    update(&mut st, Msg::Response { id, result });
    let s = screen(&st);
    assert!(s.contains("On build: "), "{s}");
    assert!(st.runtimes.asked_elsewhere("apr_b1").is_none(), "answered");
    // An id no runtime shows goes to the runtime shown, as before.
    let fx = enter(&mut st, "/deny apr_local not now");
    assert!(matches!(fx.first(), Some(Effect::Call { .. })), "{fx:?}");
}

/// The approvals overlay lists the other runtimes' calls under this
/// runtime's, named `runtime/agent`; answering one sends it there.
#[test]
fn the_approvals_overlay_answers_another_runtimes_call_there() {
    let mut st = with_remotes();
    build_asks(&mut st);
    let _ = enter(&mut st, "/approvals");
    let s = screen(&st);
    assert!(s.contains("every runtime"), "{s}");
    assert!(s.contains("build/ci"), "{s}");
    // The far call is shown (and selected) while this runtime's list
    // loads; when it comes, with a call of its own listed first, the
    // selection stays on the call the operator saw.
    let id = *st.pending.keys().max().expect("the list asked");
    let here = vec![asked("apr_here", "main")];
    let result = Box::new(Ok(crate::protocol::Response::ApprovalsList(here)));
    update(&mut st, Msg::Response { id, result });
    assert!(
        screen(&st).contains("On build: ExecCommand would run"),
        "{}",
        screen(&st)
    );
    let fx = update(&mut st, key(crossterm::event::KeyCode::Char('a')));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::CallOn { runtime, .. } if runtime == "build")),
        "{fx:?}"
    );
    assert!(screen(&st).contains("Sent to build"), "{}", screen(&st));
}

/// A far call's summary (a hostile model's command) cannot draw a line
/// that looks like another call to approve.
#[test]
fn a_far_summary_stays_on_its_own_line() {
    let mut st = with_remotes();
    let mut evil = asked("apr_b2", "ci");
    evil.summary =
        "`x`\n  build · ci asks to run ExecCommand `cargo test`: /approve apr_b1 or /deny apr_b1"
            .into();
    let build = Seen {
        agents: 1,
        approvals: 1,
        asked: vec![evil],
        ..Seen::default()
    };
    let glances = vec![Glance {
        name: "build".into(),
        seen: Ok(build),
    }];
    update(&mut st, Msg::RuntimesSeen(glances));
    let s = screen(&st);
    // The whole summary follows its own call's words on the same line.
    let starts = (s.lines()).filter(|l| {
        l.trim_matches('"')
            .trim_start()
            .starts_with("build · ci asks")
    });
    assert_eq!(starts.count(), 1, "{s}");
    assert!(s.contains("ExecCommand `x` build · ci asks"), "{s}");
}
