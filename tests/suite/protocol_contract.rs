//! The protocol's contract on a real socket: every served method answers
//! with the type the protocol pairs with its request, and encodes back
//! to the same JSON (split from `control_socket`, whose served runtime it
//! uses).

use holon::model::message::Priority;
use holon::protocol::{Request, RuntimeClient};
use holon::ui::client::SocketClient;

use super::control_socket::served;

/// Every method over the real socket: each answer reads as the type the
/// protocol pairs with its request (`Response::decode`), and the typed
/// answer encodes back to the same JSON. The list must name every served
/// method, so a new one fails here until it has a case. Request lines are
/// kept as golden text in tests/fixtures/protocol/requests.jsonl (written
/// with HOLON_UPDATE_EVENT_FIXTURES=1), so a changed shape shows in review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_answers_with_its_paired_type() {
    use holon::protocol::types::{CreateWorkItem, UpdateWorkItem, UseWorkspace, WorkspaceMode};
    use holon::protocol::{ControlAction, DisplayMode, Response};
    let s = served().await;
    let client = SocketClient::connect(&s.path).await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().display().to_string();
    // A project with a server of its own, for mcp.approve (nothing starts).
    let project = ws.path().canonicalize().unwrap().display().to_string();
    std::fs::write(
        ws.path().join(".mcp.json"),
        r#"{"mcpServers": {"files": {"command": "true"}}}"#,
    )
    .unwrap();
    // And a proposed reviewer policy, for proposal.show and adopt.
    std::fs::create_dir(ws.path().join(".holon")).unwrap();
    std::fs::write(ws.path().join(".holon/policy.md"), "Tests may run.\n").unwrap();
    let proposed = holon::runtime::approvals::review::digest(Some("Tests may run.\n"));
    let agent = || "main".to_owned();
    // Two calls waiting for approval, on an agent of their own.
    let host = &s.rig.host;
    host.create_agent("gated").await.unwrap();
    let always = holon::model::approval::PolicyChange {
        approval: Some(holon::model::approval::Approval::Always),
        ..Default::default()
    };
    host.set_workspace_policy("gated", "agent_home", always)
        .await
        .unwrap();
    for script in [
        holon::runtime::provider::scripted::Scripted::tools(
            "",
            &[
                ("ExecCommand", serde_json::json!({"cmd": "echo a"})),
                ("ExecCommand", serde_json::json!({"cmd": "echo b"})),
            ],
        ),
        holon::runtime::provider::scripted::Scripted::text("answered"),
        holon::runtime::provider::scripted::Scripted::text("answered"),
    ] {
        s.rig.provider.push(script);
    }
    host.submit(holon::model::message::AdmissionRequest::operator_prompt(
        "gated",
        "run two commands",
        Priority::Normal,
        holon::model::message::DeliverySurface::CliPrompt,
    ))
    .await
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let gated = loop {
        let pending = host.approvals(Some("gated"), false).unwrap_or_default();
        if pending.len() == 2 {
            break pending;
        }
        assert!(std::time::Instant::now() < deadline, "no approvals");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let mut requests = vec![
        Request::RuntimeStatus,
        Request::AgentsList {
            limit: Some(10),
            cursor: None,
            query: Some("ma".into()),
        },
        Request::AgentCreate {
            agent_id: "helper".into(),
            template: None,
        },
        Request::AgentArchive {
            agent_id: "helper".into(),
        },
        Request::SkillsList { agent_id: agent() },
        Request::AgentStatus { agent_id: agent() },
        Request::AgentState { agent_id: agent() },
        Request::AgentPrompt { agent_id: agent() },
        Request::AgentTranscript {
            agent_id: agent(),
            limit: Some(10),
        },
        Request::Control {
            agent_id: agent(),
            action: ControlAction::Pause,
        },
        Request::PromptSubmit {
            agent_id: agent(),
            text: "hello".into(),
            priority: Priority::Normal,
            request_id: Some("req_round_trip".into()),
        },
        Request::WorkItemCreate {
            agent_id: agent(),
            item: CreateWorkItem {
                objective: "round trip".into(),
                plan_status: None,
                plan: None,
                todo_list: None,
            },
            request_id: None,
        },
        Request::TaskRun {
            agent_id: agent(),
            cmd: "cat".into(),
        },
        Request::AgentDisplay {
            agent_id: agent(),
            mode: DisplayMode::Verbose,
        },
        Request::AgentModel {
            agent_id: agent(),
            model: Some("openai/gpt-round-trip".into()),
            reasoning_effort: Some(holon::model::usage::EffortChoice::High),
        },
        Request::AgentBudget {
            agent_id: agent(),
            daily_usd: Some(2.5),
            daily_tokens: None,
            clear: false,
        },
        Request::WorkspaceAttach {
            agent_id: agent(),
            path: ws_path.clone(),
        },
        Request::WorkspaceUse {
            agent_id: agent(),
            target: UseWorkspace {
                path: Some(ws_path.clone()),
                workspace_id: None,
                mode: WorkspaceMode::Direct,
            },
        },
        Request::WorkspaceList { agent_id: agent() },
        Request::WorkspaceFiles { agent_id: agent() },
        Request::TriggerShow { agent_id: agent() },
        Request::TriggerDeliver {
            agent_id: agent(),
            meta: holon::protocol::types::DeliveryMeta {
                source: Some("ci".into()),
                resource: Some("pr-1".into()),
                summary: Some("round trip".into()),
            },
        },
        Request::TriggerRotate { agent_id: agent() },
        Request::TriggerRevoke { agent_id: agent() },
        Request::ApprovalsList {
            agent_id: None,
            include_answered: true,
        },
        Request::ApprovalApprove {
            approval_id: gated[0].id.clone(),
            agent_id: Some("gated".into()),
            always: false,
        },
        Request::ApprovalDeny {
            approval_id: gated[1].id.clone(),
            agent_id: None,
            note: Some("round trip".into()),
        },
        Request::WorkspacePolicy {
            agent_id: agent(),
            workspace_id: "agent_home".into(),
            change: holon::model::approval::PolicyChange {
                approval: Some(holon::model::approval::Approval::OnWrite),
                allow_commands: vec!["cargo test".into()],
                ..Default::default()
            },
        },
        Request::RuntimePolicy {
            change: holon::model::approval::PolicyChange {
                allow_paths: vec!["docs/".into()],
                ..Default::default()
            },
        },
        Request::EventsPage {
            agent_id: agent(),
            from_seq: 1,
            limit: 50,
            kind: None,
        },
        Request::StoreBackup { copy: false },
        Request::StoreBackup { copy: true },
        Request::StorePrune {
            older_than_days: Some(30),
            dry_run: true,
        },
        Request::McpList { workspace: None },
        Request::McpApprove {
            name: "files".into(),
            workspace: project.clone(),
            command_line: Some("true".into()),
        },
        Request::McpDisable {
            name: "files".into(),
            workspace: Some(project.clone()),
            disabled: true,
        },
        Request::ProposalShow {
            workspace: project.clone(),
            kind: holon::model::proposal::ProposalKind::Policy,
        },
        Request::ProposalAdopt {
            workspace: project.clone(),
            kind: holon::model::proposal::ProposalKind::Policy,
            digest: proposed.clone(),
            approved: true,
        },
    ];
    let mut answered = Vec::new();
    let mut golden = String::new();
    let mut ids = (None::<String>, None::<String>, None::<String>);
    let mut i = 0;
    while i < requests.len() {
        let request = requests[i].clone();
        i += 1;
        golden.push_str(&serde_json::to_string(&request).unwrap_or_default());
        golden.push('\n');
        let raw = client
            .call_raw(request.clone())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", request.method()));
        let value: serde_json::Value = serde_json::from_str(&raw).unwrap();
        let typed = Response::decode(&request, &value)
            .unwrap_or_else(|e| panic!("{}: {e}\n{value}", request.method()));
        assert!(typed.answers(&request), "{}", request.method());
        let back = serde_json::to_value(&typed).unwrap_or_default();
        assert_eq!(back, value, "{} re-encodes differently", request.method());
        // The name the table of answers gives is the one on the wire.
        let wire = serde_json::to_value(&request).unwrap_or_default();
        assert_eq!(wire["method"], request.method());
        answered.push(request.method());
        // Follow-up requests that need an id from an answer.
        match typed {
            Response::WorkItemCreate(w) if ids.0.is_none() => {
                ids.0 = Some(w.id.clone());
                let work_item_id = w.id;
                requests.push(Request::WorkItemPick {
                    agent_id: agent(),
                    work_item_id: work_item_id.clone(),
                });
                requests.push(Request::WorkItemUpdate {
                    agent_id: agent(),
                    update: UpdateWorkItem {
                        work_item_id: work_item_id.clone(),
                        objective: Some("round trip, updated".into()),
                        ..UpdateWorkItem::default()
                    },
                });
                requests.push(Request::WorkItemComplete {
                    agent_id: agent(),
                    work_item_id,
                    note: Some("done".into()),
                });
            }
            Response::TaskRun(t) if ids.1.is_none() => {
                ids.1 = Some(t.id.clone());
                for r in [
                    Request::TaskStatus {
                        agent_id: agent(),
                        task_id: t.id.clone(),
                    },
                    Request::TaskInput {
                        agent_id: agent(),
                        task_id: t.id.clone(),
                        input: "line\n".into(),
                    },
                    Request::TaskOutput {
                        agent_id: agent(),
                        task_id: t.id.clone(),
                        max_bytes: Some(1024),
                    },
                    Request::TaskStop {
                        agent_id: agent(),
                        task_id: t.id,
                    },
                ] {
                    requests.push(r);
                }
            }
            Response::WorkspaceList(l) if ids.2.is_none() => {
                // Back home, then the attached workspace can be detached.
                let id = l.attached.first().map(|w| w.binding.workspace_id.clone());
                ids.2 = id.clone();
                requests.push(Request::WorkspaceUse {
                    agent_id: agent(),
                    target: UseWorkspace {
                        path: None,
                        workspace_id: Some("agent_home".into()),
                        mode: WorkspaceMode::Direct,
                    },
                });
                requests.push(Request::WorkspaceDetach {
                    agent_id: agent(),
                    workspace_id: id.unwrap_or_default(),
                });
                requests.push(Request::RuntimeShutdown);
            }
            _ => {}
        }
    }
    let mut served: Vec<String> = holon::protocol::METHODS
        .iter()
        .filter(|m| !m.starts_with("events.sub") && !m.starts_with("events.unsub"))
        .map(|m| (*m).to_owned())
        .collect();
    served.sort();
    answered.sort();
    answered.dedup();
    assert_eq!(answered, served, "every method has a round-trip case");
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/protocol/requests.jsonl");
    // Ids the runtime made differ per run: named by their role instead.
    let mut golden = golden.replace(&ws_path, "/tmp/ws");
    for (id, role) in [(&ids.0, "work_1"), (&ids.1, "task_1"), (&ids.2, "ws_1")] {
        if let Some(id) = id {
            golden = golden.replace(id.as_str(), role);
        }
    }
    for (a, role) in gated.iter().zip(["apr_1", "apr_2"]) {
        golden = golden.replace(a.id.as_str(), role);
    }
    if std::env::var_os("HOLON_UPDATE_EVENT_FIXTURES").is_some() {
        let _ = std::fs::create_dir_all(file.parent().unwrap_or(std::path::Path::new(".")));
        std::fs::write(&file, &golden).unwrap();
    }
    let kept = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert_eq!(
        golden, kept,
        "the request wire format changed: review, then update the golden file"
    );
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

/// Every `.rs` file's text beneath `dir`.
fn sources_in(dir: &std::path::Path, into: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources_in(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
}

/// docs/conformance.md says of each section of the runtime contract one of
/// three things, and names only tests that exist: a test renamed or
/// removed fails here until the page follows.
#[test]
fn the_conformance_table_names_only_tests_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/conformance.md")).unwrap();
    let mut sources = String::new();
    sources_in(&root.join("src"), &mut sources);
    sources_in(&root.join("tests"), &mut sources);
    let rows: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| section"))
        .collect();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    let mut named = 0;
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert!(
            matches!(cells.get(2), Some(&("built" | "partial" | "deviation"))),
            "{row}"
        );
        for quoted in cells.get(3).unwrap_or(&"").split('`').skip(1).step_by(2) {
            let Some(name) = quoted.rsplit("::").next().filter(|_| quoted.contains("::")) else {
                continue;
            };
            assert!(
                sources.contains(&format!("fn {name}(")),
                "docs/conformance.md names `{quoted}`, which no test defines"
            );
            named += 1;
        }
    }
    assert!(named >= 40, "{named} tests named");
}
