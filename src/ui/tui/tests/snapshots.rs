//! Snapshots of the main view in each display mode and of every overlay,
//! at 80x24 and 120x40, driven by the session fixture through `update`
//! (with a fixed clock). Files live in `src/ui/tui/snapshots/`.

use crossterm::event::KeyCode;
use serde_json::json;

use super::super::msg::Msg;
use super::super::{update, State};
use super::fixtures::*;
use crate::model::agent::DisplayMode as StoredMode;
use crate::protocol::types::TaskStatus;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

pub(super) fn snap(name: &str, st: &State) {
    let text = screen(st);
    let name = format!("{name}_{}x{}", st.width, st.height);
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(name, text);
    });
}

pub(super) fn each_size(name: &str, mode: StoredMode, drive: impl Fn(&mut State)) {
    for (w, h) in SIZES {
        let mut st = booted(&session(), mode, w, h);
        drive(&mut st);
        snap(name, &st);
    }
}

pub(super) fn respond(
    st: &mut State,
    fx: &[super::super::msg::Effect],
    method: &str,
    result: serde_json::Value,
) {
    let id = call_id(fx, method);
    update(
        st,
        Msg::Response {
            id,
            result: answer(fx, id, result),
        },
    );
}

#[test]
fn main_view_info() {
    each_size("main_info", StoredMode::Info, |_| {});
}

#[test]
fn main_view_verbose() {
    each_size("main_verbose", StoredMode::Verbose, |_| {});
}

#[test]
fn main_view_debug() {
    each_size("main_debug", StoredMode::Debug, |_| {});
}

/// The first turn from its top: tool, command and patch rows.
#[test]
fn main_view_verbose_from_the_top() {
    each_size("main_verbose_top", StoredMode::Verbose, |st| {
        update(
            st,
            with(KeyCode::Home, crossterm::event::KeyModifiers::CONTROL),
        );
    });
}

#[test]
fn main_view_debug_from_the_top() {
    each_size("main_debug_top", StoredMode::Debug, |st| {
        update(
            st,
            with(KeyCode::Home, crossterm::event::KeyModifiers::CONTROL),
        );
    });
}

/// A turn running: the working row with the turn's latest activity, a
/// prompt queued behind it and another being sent.
#[test]
fn main_view_working() {
    each_size("main_working", StoredMode::Info, |st| {
        let mut s = session();
        let base = s.events.len();
        s.prompt("msg_4", "eu-west-1, and tell me when it is live.");
        s.turn("msg_4", "run_4");
        s.round(
            "msg_4",
            "run_4",
            1,
            "Deploying to eu-west-1.",
            &["ExecCommand"],
        );
        let t = task(
            "task_03",
            "./deploy.sh staging eu-west-1",
            "agent",
            Some("msg_4"),
            s.clock,
        );
        s.task_created(&t);
        s.task_status(
            "task_03",
            "./deploy.sh staging eu-west-1",
            crate::model::task::TaskStatus::Queued,
            crate::model::task::TaskStatus::Running,
            None,
            None,
            None,
        );
        for e in s.events[base..].iter().cloned() {
            update(st, Msg::Event(Box::new(e)));
        }
        let fx = enter(st, "Also post the link in #releases");
        respond(
            st,
            &fx,
            "prompt.submit",
            json!({ "message_id": "msg_5", "agent_id": "main", "event_seq": 90, "admission_seq": 5,
                    "queue_status": "queued", "priority": "normal" }),
        );
        enter(st, "!git log --oneline -3");
        update(
            st,
            Msg::Tick {
                now_ms: s.now_ms() + 12_000,
            },
        );
    });
}

#[test]
fn main_view_composer_menu() {
    each_size("main_menu", StoredMode::Info, |st| {
        typ(st, "/");
    });
}

#[test]
fn overlay_help() {
    each_size("overlay_help", StoredMode::Info, |st| {
        prefix(st, 'h');
    });
}

#[test]
fn overlay_agents() {
    each_size("overlay_agents", StoredMode::Info, |st| {
        let fx = prefix(st, 'a');
        let mut reviewer = summary(120, ("WaitingForTask", "waiting on task task_77"));
        reviewer.id = "reviewer".into();
        reviewer.tasks_active = 1;
        // Its children: one still working, one finished with its
        // worktree kept for review.
        reviewer.children = vec![
            child(
                "child-4f2a9c01d3",
                "Investigate the flaky login test",
                TaskStatus::Running,
                ("ActiveTurn", "turn in progress"),
            ),
            {
                let mut c = child(
                    "child-9b7e22a410",
                    "Try the parser rewrite",
                    TaskStatus::Completed,
                    ("Archived", "archived"),
                );
                c.worktree = Some(crate::model::task::ChildWorktree {
                    path: "/repo/.holon/worktrees/x".into(),
                    branch: "holon/child-9b7e22a410".into(),
                    changed_files: 2,
                    cleanup: crate::model::task::WorktreeCleanup::Retained,
                });
                c
            },
        ];
        let mut nightly = summary(9, ("Idle", "no runnable work"));
        nightly.id = "nightly".into();
        nightly.work_items_open = 0;
        let mut paused = summary(
            4,
            ("Idle", "paused: messages queue but no model turn starts"),
        );
        paused.id = "docs-bot".into();
        paused.status = crate::model::agent::AgentStatus::Paused;
        let list = json!({"agents": [
            summary(
                52,
                (
                    "WaitingForOperator",
                    "operator input needed for work item wi_release"
                )
            ),
            reviewer,
            nightly,
            paused
        ], "total": 4});
        respond(st, &fx, "agents.list", list);
    });
}

fn child(
    id: &str,
    label: &str,
    task_status: crate::protocol::types::TaskStatus,
    posture: (&str, &str),
) -> crate::protocol::types::ChildSupervision {
    crate::protocol::types::ChildSupervision {
        parent_agent_id: "main".into(),
        cleanup_owner: "supervision_task".into(),
        followup_target: "parent_supervisor".into(),
        child_agent_id: id.into(),
        supervision_task_id: format!("task_{id}"),
        label: label.into(),
        task_status,
        child_status: crate::protocol::types::AgentStatus::AwakeRunning,
        posture: posture.0.parse().unwrap(),
        posture_reason: posture.1.into(),
        archived: task_status.is_terminal(),
        workspace_mode: Default::default(),
        current_work_item: None,
        current_work_item_id: None,
        model_rounds: 3,
        input_tokens: 1200,
        output_tokens: 300,
        queue_depth: 0,
        tasks_active: 0,
        last_brief: None,
        worktree: None,
    }
}

pub(super) fn approval(
    id: &str,
    agent: &str,
    tool: &str,
    summary: &str,
    why: &str,
) -> serde_json::Value {
    json!({
        "id": id, "agent_id": agent, "status": "pending", "tool_name": tool, "call_id": "call_1",
        "arguments": {}, "summary": summary, "why": why, "workspace_id": "ws_holon_1a2b3c4d",
        "execution_root": "/home/op/src/holon", "run_id": "run_1", "message_id": "msg_1",
        "requested_at": "2026-11-23T09:14:02Z",
    })
}

#[test]
fn overlay_approvals() {
    each_size("overlay_approvals", StoredMode::Info, |st| {
        let fx = prefix(st, 'y');
        let list = json!([
            approval(
                "apr_01a2b3",
                "main",
                "ExecCommand",
                "`cargo publish --allow-dirty`",
                "approval is `on_write`: `cargo publish --allow-dirty` is not a known read-only command and not on the allow-list"
            ),
            approval(
                "apr_01a2b4",
                "reviewer",
                "ApplyPatch",
                "src/lib.rs, docs/api.md",
                "approval is `always`: the patch writes src/lib.rs"
            ),
        ]);
        let mut list = list;
        list[0]["arguments"] = json!({ "cmd": "cargo publish --allow-dirty" });
        list[1]["arguments"] =
            json!({ "patch": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-old\n+new\n" });
        respond(st, &fx, "approvals.list", list);
    });
}

#[test]
fn approval_row_in_the_conversation() {
    each_size("approval_row", StoredMode::Info, |st| {
        let mut s = session();
        let rec = approval(
            "apr_01a2b3",
            "main",
            "ExecCommand",
            "`rm -rf target/release`",
            "approval is `on_write`: `rm -rf target/release` is not a known read-only command and not on the allow-list",
        );
        let mut rec = rec;
        rec["arguments"] = json!({ "cmd": "rm -rf target/release" });
        let e = s.push(
            "approval_requested",
            Some("msg_1"),
            json!({ "approval": rec }),
        );
        update(st, Msg::Event(Box::new(e)));
    });
}

#[test]
fn overlay_workspaces() {
    use crate::model::workspace::WorkspaceEntry;
    use crate::model::workspace::WorkspaceList;
    use crate::model::workspace::*;
    use crate::runtime::workspace::*;
    each_size("overlay_workspaces", StoredMode::Info, |st| {
        let fx = prefix(st, 'p');
        let mut ws = super::fixtures::workspaces();
        let session = WorktreeSession {
            workspace_id: "ws_holon_1a2b3c4d".into(),
            original_working_directory: "/home/op/src/holon".into(),
            original_branch: "main".into(),
            worktree_path: "/home/op/.holon/data/worktrees/main/ws_holon_1a2b3c4d-9f3e2a1b".into(),
            worktree_branch: "holon/main/9f3e2a1b".into(),
            base_commit: "3c1f0e2".into(),
            created_at: "2026-11-20T09:05:00Z".into(),
        };
        if let Some(a) = ws.active.as_mut() {
            a.execution_root = session.worktree_path.clone();
            a.cwd = session.worktree_path.clone();
            a.mode = WorkspaceMode::Isolated;
            a.projection_kind = ProjectionKind::GitWorktreeRoot;
            a.worktree = Some(session.clone());
        }
        let mut kept = session.clone();
        kept.worktree_path = "/home/op/.holon/data/worktrees/main/ws_docs_5e6f7a8b-0c1d2e3f".into();
        kept.worktree_branch = "holon/main/0c1d2e3f".into();
        kept.workspace_id = "ws_docs_5e6f7a8b".into();
        let list = WorkspaceList {
            agent_id: "main".into(),
            active_workspace_id: "ws_holon_1a2b3c4d".into(),
            execution_root_present: true,
            execution: snapshot(
                &ws,
                std::path::Path::new("/home/op/.holon/data/agents/main"),
                &Default::default(),
            ),
            attached: vec![
                WorkspaceEntry {
                    binding: ws.attached[0].clone(),
                    active: true,
                    present: true,
                    direct_users: vec![],
                },
                WorkspaceEntry {
                    binding: WorkspaceBinding {
                        workspace_id: "ws_docs_5e6f7a8b".into(),
                        anchor: "/home/op/src/docs".into(),
                        git: true,
                        attached_at: "2026-11-19T10:00:00Z".into(),
                        pin: None,
                    },
                    active: false,
                    present: true,
                    direct_users: vec!["reviewer".into()],
                },
                WorkspaceEntry {
                    binding: WorkspaceBinding {
                        workspace_id: "ws_scratch_11aa22bb".into(),
                        anchor: "/tmp/scratch".into(),
                        git: false,
                        attached_at: "2026-11-18T10:00:00Z".into(),
                        pin: None,
                    },
                    active: false,
                    present: false,
                    direct_users: vec![],
                },
            ],
            retained_worktrees: vec![kept],
        };
        respond(st, &fx, "workspace.list", json!(list));
    });
}

#[test]
fn overlay_transcript() {
    each_size("overlay_transcript", StoredMode::Info, |st| {
        let fx = enter(st, "/transcript");
        let s = session();
        respond(st, &fx, "events.page", page(&s.events, s.seq()));
        for _ in 0..12 {
            update(st, key(KeyCode::Up));
        }
    });
}

#[test]
fn overlay_tasks() {
    each_size("overlay_tasks", StoredMode::Info, |st| {
        let fx = prefix(st, 't');
        let out = "   Compiling holon v0.4.0\n    Finished test profile in 18.2s\n     Running unittests\n\
                   test result: ok. 512 passed; 0 failed\n     Running tests/all.rs\ntest result: ok. 61 passed; 0 failed\n";
        respond(
            st,
            &fx,
            "task.output",
            json!({ "task": task("task_02", "cargo test", "agent", None, 1), "output": out,
                    "output_bytes": out.len(), "truncated": false, "retrieval_status": "success" }),
        );
    });
}

#[test]
fn overlay_work() {
    each_size("overlay_work", StoredMode::Info, |st| {
        prefix(st, 'w');
        update(st, key(KeyCode::Down));
    });
}

#[test]
fn overlay_work_detail() {
    each_size("overlay_work_detail", StoredMode::Info, |st| {
        prefix(st, 'w');
        update(st, key(KeyCode::Enter));
    });
}

#[test]
fn overlay_state() {
    each_size("overlay_state", StoredMode::Info, |st| {
        let fx = prefix(st, 's');
        let boot = bootstrap(&session(), StoredMode::Info);
        respond(st, &fx, "agent.state", json!(boot));
    });
}

#[test]
fn overlay_events() {
    each_size("overlay_events", StoredMode::Info, |st| {
        let fx = prefix(st, 'e');
        let s = session();
        respond(st, &fx, "events.page", page(&s.events, s.seq()));
        for _ in 0..3 {
            update(st, key(KeyCode::Up));
        }
    });
}

#[test]
fn overlay_event_detail() {
    each_size("overlay_event_detail", StoredMode::Info, |st| {
        let fx = prefix(st, 'e');
        let s = session();
        respond(st, &fx, "events.page", page(&s.events, s.seq()));
        update(st, key(KeyCode::Char('/')));
        enter(st, "runtime_error");
        update(st, key(KeyCode::Enter));
    });
}

#[test]
fn narrowest_terminal() {
    let mut st = booted(&session(), StoredMode::Verbose, 60, 15);
    snap("main_verbose", &st);
    prefix(&mut st, 'e');
    snap("overlay_events_empty", &st);
}

#[test]
fn the_status_line_names_the_effort_and_the_spend_today() {
    use crate::protocol::views::{DayUsageView, UsageView};
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    let mut s = summary(200, ("Idle", "no runnable work"));
    s.model = Some("openai/gpt-5".into());
    s.reasoning_effort = Some(crate::model::usage::ReasoningEffort::High);
    s.usage = Some(UsageView {
        last_turn: None,
        today: DayUsageView {
            day: "2026-11-25".into(),
            cost_usd: 0.4213,
            tokens: 52_000,
            budget_usd: Some(5.0),
            ..DayUsageView::default()
        },
        ..UsageView::default()
    });
    st.agent.apply_summary(&s, true);
    let text = screen(&st);
    assert!(text.contains("openai/gpt-5 · high"), "{text}");
    assert!(text.contains("$0.42/$5.00 today"), "{text}");
    // Nothing spent at a known price: no cost shown.
    s.usage = Some(UsageView::default());
    st.agent.apply_summary(&s, true);
    assert!(!screen(&st).contains("today"));
}

#[test]
fn no_color_has_no_colours() {
    let mut st = booted(&session(), StoredMode::Debug, 80, 24);
    st.theme.no_color = true;
    let Ok(mut terminal) = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24));
    let _ = terminal.draw(|f| super::super::view(&st, f));
    let buf = terminal.backend().buffer();
    let coloured = buf
        .content
        .iter()
        .any(|c| c.fg != ratatui::style::Color::Reset || c.bg != ratatui::style::Color::Reset);
    assert!(!coloured, "NO_COLOR: no cell has a colour");
}

/// `cargo test --lib ui::tui -- --ignored --nocapture bench`: frame times
/// with 100 and 100,000 rows of history (also `holon debug bench`).
#[test]
#[ignore]
fn bench_render_cost_follows_the_screen() {
    for rows in [100, 100_000] {
        let (conversation, events) = super::super::bench_render(rows, 120, 40);
        println!("{rows:>7} rows: conversation {conversation:?}, events {events:?}");
    }
}

#[test]
fn the_status_line_names_an_approval_policy_that_asks() {
    use crate::model::approval::Approval;
    let mut st = booted(&session(), StoredMode::Info, 120, 40);
    assert!(!screen(&st).contains("asks: writes"));
    if let Some(x) = st.agent.execution.as_mut() {
        x.policy.approval.approval = Approval::OnWrite;
    }
    let text = screen(&st);
    assert!(text.contains("⌂ holon · asks: writes"), "{text}");
}
