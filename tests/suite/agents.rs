//! Agents through the binary: delegation to a private child (SpawnAgent)
//! whose result re-enters its parent, TaskStop on a child, a restart with a
//! live child, worktree children (removed when clean, retained with
//! changes), templates (and their fail-closed path), skills (precedence and
//! activation), all against a daemon and the local stub provider.

use std::sync::Arc;

use serde_json::{json, Value};

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{assert_typed_lines, json_lines, poll, stderr, Daemon, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

fn events(home: &Home, agent: &str) -> Vec<Value> {
    json_lines(&home.ok(&["events", "--agent", agent, "--json", "--limit", "5000"]))
}

fn show(home: &Home, agent: &str) -> Value {
    ok(serde_json::from_str(
        &home.ok(&["agent", "show", agent, "--json"]),
    ))
}

/// The request body's text, and how many tool outputs it carries.
fn read(body: &Value) -> (String, usize) {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let outputs = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .count();
    (body.to_string(), outputs)
}

fn answer(text: &str, calls: &[canned::Call]) -> Canned {
    Canned::json(200, canned::responses_json(text, calls))
}

/// A daemon on this home whose model is the stub.
fn start_daemon(home: &Home, stub: &StubServer) {
    let base = format!("{}/v1", stub.base());
    let out = ok(home
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-agents")
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "sk-agents")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A stub whose parent spawns one child with `initial_message` and whose
/// child's model call never finishes during a test.
async fn slow_child_stub(initial_message: &'static str) -> StubServer {
    let responder = move |body: &Value| -> Canned {
        let (text, outputs) = read(body);
        if text.contains("Delegated to you by agent") {
            return answer("too late", &[]).delay(std::time::Duration::from_secs(60));
        }
        match outputs {
            0 => {
                let spawn = json!({ "initial_message": initial_message }).to_string();
                Canned::json(
                    200,
                    canned::responses_json("", &[("p1", "SpawnAgent", &spawn)]),
                )
            }
            _ => answer("Delegated.", &[]),
        }
    };
    StubServer::responding(Arc::new(responder)).await
}

fn child_task(home: &Home, parent: &str) -> Value {
    show(home, parent)["children"]
        .as_array()
        .and_then(|c| c.last().cloned())
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_delegates_and_the_childs_result_reenters_the_parent() {
    let home = Home::new();
    // A skill in the default agent's home, and one in the user scope.
    let skill = home.path().join("data/agents/main/skills/checks");
    ok(std::fs::create_dir_all(&skill));
    ok(std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: checks\ndescription: How to check work\n---\nRun the checks.\n",
    ));
    let user_skill = home.path().join("user/.agents/skills/personal");
    ok(std::fs::create_dir_all(&user_skill));
    ok(std::fs::write(
        user_skill.join("SKILL.md"),
        "Personal habits.\n",
    ));
    let skill_md = skill.join("SKILL.md").display().to_string();
    let responder = {
        let skill_md = skill_md.clone();
        move |body: &Value| -> Canned {
            let (text, outputs) = read(body);
            if text.contains("Delegated to you by agent") {
                // The child: one command, then its report.
                return match outputs {
                    0 => answer(
                        "",
                        &[("c1", "ExecCommand", r#"{"cmd":"echo child-$((1+1))"}"#)],
                    ),
                    _ => answer("child report: saw child-2", &[]),
                };
            }
            if text.contains("child report: saw child-2") {
                return answer("Parent done: the child saw child-2.", &[]);
            }
            match outputs {
                0 => {
                    let read_skill = json!({ "cmd": format!("cat {skill_md}") }).to_string();
                    let refused = json!({ "prompt": "do it" }).to_string();
                    let unknown = json!({ "preset": "boss", "initial_message": "x" }).to_string();
                    Canned::json(
                        200,
                        canned::responses_json(
                            "",
                            &[
                                ("p1", "ExecCommand", &read_skill),
                                ("p2", "SpawnAgent", &refused),
                                ("p2b", "SpawnAgent", &unknown),
                            ],
                        ),
                    )
                }
                3 => {
                    let spawn =
                        json!({ "initial_message": "Count to two\nthen run echo" }).to_string();
                    Canned::json(
                        200,
                        canned::responses_json("", &[("p3", "SpawnAgent", &spawn)]),
                    )
                }
                _ => answer("Delegated; the child's report will follow.", &[]),
            }
        }
    };
    let stub = StubServer::responding(Arc::new(responder)).await;
    start_daemon(&home, &stub);
    let _daemon = Daemon(&home);
    home.ok(&["send", "investigate with a helper"]);

    // The child ran and its report came back to the parent as a task result.
    poll("the parent's final brief", || {
        events(&home, "main")
            .iter()
            .any(|e| {
                e["kind"] == "brief_created"
                    && e["payload"]["brief"]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("Parent done"))
            })
            .then_some(())
    });
    let main = events(&home, "main");
    // The forbidden field was refused with a clear error.
    let spawns: Vec<String> = main
        .iter()
        .filter(|e| e["kind"] == "tool_executed" && e["payload"]["tool_name"] == "SpawnAgent")
        .map(|e| e.to_string())
        .collect();
    assert!(
        spawns[0].contains("does not take `prompt`"),
        "{}",
        spawns[0]
    );
    assert!(
        spawns[1].contains("unknown variant `boss`"),
        "{}",
        spawns[1]
    );
    let created = main
        .iter()
        .find(|e| e["kind"] == "task_created" && e["payload"]["task"]["kind"] == "child_agent_task")
        .expect("no child task");
    let task_id = created["payload"]["task"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let child_id = created["payload"]["task"]["detail"]["child_agent_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(created["payload"]["task"]["summary"], "Count to two");
    assert!(main
        .iter()
        .any(|e| e["kind"] == "task_result_queued" && e["payload"]["task_id"] == task_id.as_str()));
    // The parent's last request carried the child's report.
    let last = stub
        .requests()
        .into_iter()
        .rev()
        .find(|r| !r.body.to_string().contains("Delegated to you"));
    assert!(last.is_some_and(|r| r.body.to_string().contains("child report: saw child-2")));

    // The child: its own context, private, supervised, archived at the end.
    let child = events(&home, &child_id);
    let made = &child[0];
    assert_eq!(made["kind"], "agent_created");
    let agent = &made["payload"]["agent"];
    assert_eq!(agent["kind"], "child");
    assert_eq!(agent["visibility"], "private");
    assert_eq!(agent["ownership"], "parent_supervised");
    assert_eq!(agent["profile_preset"], "private_child");
    assert_eq!(agent["lineage_parent_agent_id"], "main");
    assert_eq!(agent["supervision_task_id"], task_id.as_str());
    assert!(child
        .iter()
        .any(|e| e["kind"] == "tool_executed" && e["payload"]["tool_name"] == "ExecCommand"));
    let archived = child
        .iter()
        .find(|e| e["kind"] == "agent_archived")
        .expect("the child was not archived");
    assert_eq!(archived["payload"]["reason"], "supervision_completed");

    // Listings: the child only under its parent, with its supervision.
    let list: Value = ok(serde_json::from_str(&home.ok(&["agent", "list", "--json"])));
    let ids: Vec<&str> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["id"].as_str())
        .collect();
    assert_eq!(ids, vec!["main"]);
    let sup = child_task(&home, "main");
    assert_eq!(sup["child_agent_id"], child_id.as_str());
    assert_eq!(sup["task_status"], "completed");
    assert_eq!(sup["archived"], true);
    assert!(sup["last_brief"]
        .as_str()
        .is_some_and(|b| b.contains("child-2")));
    let text = home.ok(&["agent", "list"]);
    assert!(
        text.contains(&format!("└ {child_id}  [completed]  Count to two")),
        "{text}"
    );
    // A status route does not show the private child either.
    let status: Value = ok(serde_json::from_str(&home.ok(&["status", "--json"])));
    assert!(!status
        .to_string()
        .contains(&format!("\"id\":\"{child_id}\"")));

    // The skill the parent read is active, recorded once; the user-scope
    // skill is listed for the default agent.
    let activated: Vec<&Value> = main
        .iter()
        .filter(|e| e["kind"] == "skill_activated")
        .collect();
    assert_eq!(activated.len(), 1, "{activated:?}");
    assert_eq!(activated[0]["payload"]["load_reason"], "read_skill_md");
    assert_eq!(
        activated[0]["payload"]["entrypoint_path"],
        skill_md.as_str()
    );
    let skills: Value = ok(serde_json::from_str(
        &home.ok(&["skills", "list", "--json"]),
    ));
    let by_name = |n: &str| {
        skills
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == n)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(by_name("checks")["state"], "session_active");
    assert_eq!(by_name("personal")["scope"], "user");
    // The first request listed the catalog (metadata, never the body).
    let first = stub.requests()[0].body.to_string();
    assert!(first.contains("checks (agent)") && first.contains("How to check work"));
    assert!(!first.contains("Run the checks."));
    // The child (a child agent) does not see user-scope skills.
    let child_req = stub
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("Delegated to you"))
        .expect("no child request");
    assert!(!child_req.body.to_string().contains("personal (user)"));

    assert_typed_lines(&home, "main");
    assert_typed_lines(&home, &child_id);
}

/// One JSON-RPC request over the home's control socket.
fn rpc(home: &Home, method: &str, params: Value) -> Value {
    use std::io::{BufRead, Write};
    let path = home.path().join("run/control.sock");
    let mut s = ok(std::os::unix::net::UnixStream::connect(path));
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    ok(writeln!(s, "{line}"));
    let mut answer = String::new();
    ok(std::io::BufReader::new(s).read_line(&mut answer));
    ok(serde_json::from_str(&answer))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_child_survives_a_restart_and_task_stop_ends_it() {
    let home = Home::new();
    let stub = slow_child_stub("Watch the slow thing").await;
    start_daemon(&home, &stub);
    let daemon = Daemon(&home);
    home.ok(&["send", "delegate the slow thing"]);
    let child_calls = || {
        stub.requests()
            .iter()
            .filter(|r| r.body.to_string().contains("Delegated to you"))
            .count()
    };
    poll("the child's model call", || {
        (child_calls() >= 1).then_some(())
    });
    let sup = child_task(&home, "main");
    let (child, task) = (
        sup["child_agent_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        sup["supervision_task_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    );
    assert_eq!(sup["task_status"], "running");
    // The supervision boundary, as the contract names it.
    assert_eq!(sup["parent_agent_id"], "main", "{sup}");
    assert_eq!(sup["cleanup_owner"], "supervision_task", "{sup}");
    assert_eq!(sup["followup_target"], "parent_supervisor", "{sup}");

    // Stopping the daemon with the child's call in flight is prompt, and
    // the child survives it: its supervising task is still open.
    let mut stop = home.cmd();
    stop.args(["daemon", "stop"]);
    // The child's model answers in 60 s: the stop does not wait for it,
    // and the runtime ends of itself (`daemon stop` signals one that does
    // not end within 10 s, and says so).
    let limit = std::time::Duration::from_secs(30);
    let out = super::support::output_within(stop, limit, "the stop waited for the model");
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("stopped gracefully"), "{said}");
    let sup = child_task(&home, "main");
    assert_eq!(sup["task_status"], "running", "{sup}");
    assert_eq!(sup["archived"], false, "{sup}");
    start_daemon(&home, &stub);
    // Its interrupted turn replays after the restart.
    poll("the child's replayed call", || {
        (child_calls() >= 2).then_some(())
    });
    assert!(!events(&home, &child)
        .iter()
        .any(|e| e["kind"] == "agent_archived"));

    // The operator stops it through the parent's task handle.
    let stopped = rpc(
        &home,
        "task.stop",
        json!({"agent_id": "main", "task_id": task}),
    );
    assert_eq!(stopped["result"]["status"], "cancelled", "{stopped}");
    let archived = poll("the child's archive", || {
        events(&home, &child)
            .into_iter()
            .find(|e| e["kind"] == "agent_archived")
    });
    assert_eq!(archived["payload"]["reason"], "supervision_completed");
    let sup = child_task(&home, "main");
    assert_eq!(
        (sup["task_status"].clone(), sup["archived"].clone()),
        (json!("cancelled"), json!(true))
    );
    // Its result reached the parent, which was told it was stopped.
    poll("the parent's task result", || {
        events(&home, "main")
            .iter()
            .any(|e| e["kind"] == "task_result_queued" && e["payload"]["task_id"] == task.as_str())
            .then_some(())
    });
    // Stopping again is refused as a terminal task, not a crash.
    let again = rpc(
        &home,
        "task.stop",
        json!({"agent_id": "main", "task_id": task}),
    );
    assert_eq!(again["result"]["status"], "cancelled", "{again}");
    drop(daemon);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktree_children_leave_clean_worktrees_removed_and_changed_ones_retained() {
    let home = Home::new();
    let repo = super::workspaces::repo(home.path(), "proj");
    let responder = |body: &Value| -> Canned {
        let (text, outputs) = read(body);
        if text.contains("Delegated to you by agent") {
            let cmd = if text.contains("make-change") {
                r#"{"cmd":"echo new > added.txt"}"#
            } else {
                r#"{"cmd":"git status --short"}"#
            };
            return match outputs {
                0 => answer("", &[("c1", "ExecCommand", cmd)]),
                _ => answer("child done", &[]),
            };
        }
        match outputs {
            0 => {
                let a = json!({"initial_message": "make-change in a worktree", "workspace_mode": "worktree"}).to_string();
                let b = json!({"initial_message": "look only", "workspace_mode": "worktree"})
                    .to_string();
                Canned::json(
                    200,
                    canned::responses_json(
                        "",
                        &[("p1", "SpawnAgent", &a), ("p2", "SpawnAgent", &b)],
                    ),
                )
            }
            _ => answer("Both delegated.", &[]),
        }
    };
    let stub = StubServer::responding(Arc::new(responder)).await;
    let repo_s = repo.display().to_string();
    home.ok(&["workspace", "use", &repo_s]);
    start_daemon(&home, &stub);
    let _daemon = Daemon(&home);
    home.ok(&["send", "two experiments"]);
    let children = poll("both children finished", || {
        let c = show(&home, "main")["children"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (c.len() == 2 && c.iter().all(|c| c["task_status"] == "completed")).then_some(c)
    });
    let by_label = |l: &str| {
        children
            .iter()
            .find(|c| c["label"].as_str().is_some_and(|x| x.starts_with(l)))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let changed = by_label("make-change");
    let clean = by_label("look only");
    assert_eq!(changed["worktree"]["cleanup"], "retained", "{changed}");
    assert_eq!(clean["worktree"]["cleanup"], "removed", "{clean}");
    let kept = changed["worktree"]["path"].as_str().unwrap_or_default();
    assert!(std::path::Path::new(kept).join("added.txt").is_file());
    let gone = clean["worktree"]["path"].as_str().unwrap_or_default();
    assert!(!gone.is_empty() && !std::path::Path::new(gone).exists());
    // The operator's checkout is untouched.
    assert!(!repo.join("added.txt").exists());
    let id = |c: &Value| c["child_agent_id"].as_str().unwrap_or_default().to_owned();
    assert!(events(&home, &id(&changed))
        .iter()
        .any(|e| e["kind"] == "worktree_retained"));
    assert!(events(&home, &id(&clean))
        .iter()
        .any(|e| e["kind"] == "worktree_removed"));
    let text = home.ok(&["agent", "show", "main"]);
    assert!(text.contains("(worktree retained: "), "{text}");
}

#[test]
fn templates_create_agents_all_or_nothing_and_archive_hides_them() {
    let home = Home::new();
    let made: Value = ok(serde_json::from_str(&home.ok(&[
        "agent",
        "create",
        "dev",
        "--template",
        "holon-developer",
        "--json",
    ])));
    assert_eq!(made["identity"]["kind"], "named");
    assert_eq!(made["identity"]["profile_preset"], "public_named");
    let dev = home.path().join("data/agents/dev");
    for rel in [
        "AGENTS.md",
        "memory/self.md",
        "memory/operator.md",
        "skills/holon-verify/SKILL.md",
        ".holon/state/template.json",
    ] {
        assert!(dev.join(rel).is_file(), "{rel}");
    }
    let created = events(&home, "dev");
    assert_eq!(
        created[0]["payload"]["template"]["selector"],
        "holon-developer"
    );
    // The engineering guardrails and shell-first inspection are in the
    // policy layer every agent gets, whatever its template.
    let prompt = home.ok(&["debug", "prompt", "--agent", "dev", "--json"]);
    for said in ["rg --files", "sed -n START,ENDp", "no speculative cleanup"] {
        assert!(prompt.contains(said), "{said} missing from {prompt}");
    }
    // Its skill is in its catalog; the user scope is not (a named agent).
    let user_skill = home.path().join("user/.agents/skills/personal");
    ok(std::fs::create_dir_all(&user_skill));
    ok(std::fs::write(user_skill.join("SKILL.md"), "mine\n"));
    let skills = home.ok(&["skills", "list", "--agent", "dev"]);
    assert!(
        skills.contains("holon-verify (agent)") && !skills.contains("personal"),
        "{skills}"
    );
    assert!(home.ok(&["skills", "list"]).contains("personal (user)"));

    // Bad input: clear errors, nothing half-made.
    let taken = home.run(&["agent", "create", "dev"]);
    assert!(!taken.status.success());
    assert!(
        stderr(&taken).contains("already exists"),
        "{}",
        stderr(&taken)
    );
    let no_md = home.path().join("tpl-empty");
    ok(std::fs::create_dir_all(&no_md));
    let broken = home.path().join("tpl-broken");
    ok(std::fs::create_dir_all(&broken));
    ok(std::fs::write(broken.join("AGENTS.md"), "x"));
    ok(std::fs::write(
        broken.join("skills.json"),
        "{\"skill_refs\": [1",
    ));
    for (id, template, says) in [
        ("a1", no_md.display().to_string(), "has no AGENTS.md"),
        (
            "a2",
            broken.display().to_string(),
            "skills.json is not valid",
        ),
        (
            "a3",
            "no-such-template".to_owned(),
            "no template `no-such-template`",
        ),
        (
            "a4",
            "https://github.com/o/r/tree/main/t".to_owned(),
            "need the network",
        ),
        ("a5", "../escape".to_owned(), "is not a template id"),
    ] {
        let out = home.run(&["agent", "create", id, "--template", &template]);
        assert!(!out.status.success(), "{id}");
        assert!(stderr(&out).contains(says), "{id}: {}", stderr(&out));
        assert!(
            !home.path().join("data/agents").join(id).exists(),
            "{id} left a home"
        );
    }
    let hostile = home.run(&["agent", "create", "../x"]);
    assert!(!hostile.status.success());

    let listed = home.ok(&["agent", "list"]);
    assert!(
        listed.contains("dev") && listed.contains("main"),
        "{listed}"
    );
    home.ok(&["agent", "archive", "dev"]);
    assert!(!home.ok(&["agent", "list"]).contains("dev"));
    let shown: Value = ok(serde_json::from_str(
        &home.ok(&["agent", "show", "dev", "--json"]),
    ));
    assert!(shown["identity"]["archived_at"].is_string());
    let refused = home.run(&["send", "hello", "--agent", "dev"]);
    assert!(!refused.status.success());
    let run = home.run(&["run", "--agent", "dev", "hello"]);
    assert!(stderr(&run).contains("is archived"), "{}", stderr(&run));
    let main = home.run(&["agent", "archive", "main"]);
    assert!(stderr(&main).contains("default agent"), "{}", stderr(&main));
    // The default agent got holon-default's AGENTS.md (never overwritten).
    let md = home.path().join("data/agents/main/AGENTS.md");
    assert!(ok(std::fs::read_to_string(&md)).contains("general-purpose Holon agent"));
    ok(std::fs::write(&md, "mine"));
    home.ok(&["agent", "list"]);
    assert_eq!(ok(std::fs::read_to_string(&md)), "mine");
    assert_typed_lines(&home, "dev");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_is_bounded_and_a_stopped_parent_stops_its_children() {
    use holon::model::agent::ProfilePreset;
    use holon::model::task::ChildWorkspaceMode;
    use holon::protocol::views::ControlAction;
    use holon::runtime::agents::child_ops::SpawnRequest;
    use holon::runtime::handle::RuntimeHost;
    use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
    use holon::runtime::settings::limits::AgentLimits;
    use holon::store::{Store, StoreOptions};
    use std::time::Duration;

    let dir = ok(tempfile::tempdir());
    let store = ok(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    // Children's model calls never finish during the test.
    let slow = || Scripted::Delay(Duration::from_secs(60), Box::new(Scripted::text("late")));
    let provider = Arc::new(ScriptedProvider::new((0..8).map(|_| slow())));
    let mut config = super::runtime_core::config(dir.path(), provider);
    config.agent_limits = AgentLimits {
        max_spawn_depth: 1,
        max_children: 2,
    };
    let host = ok(RuntimeHost::start(store, config).await);
    ok(host.create_agent("main").await);
    let req = |text: Option<&str>| SpawnRequest {
        preset: ProfilePreset::PrivateChild,
        initial_message: text.map(str::to_owned),
        agent_id: None,
        workspace_mode: ChildWorkspaceMode::Inherit,
        parent_message_id: None,
        work_item_id: None,
    };
    let err = |r: Result<
        holon::runtime::agents::child_ops::Spawned,
        holon::runtime::RuntimeError,
    >| { r.err().map(|e| e.to_string()).unwrap_or_default() };
    // The operator's policy on the parent's workspace follows its children.
    let always = holon::model::approval::PolicyChange {
        approval: Some(holon::model::approval::Approval::Always),
        ..Default::default()
    };
    ok(host
        .set_workspace_policy("main", "agent_home", always)
        .await);
    let a = ok(host.spawn_agent("main", req(Some("first"))).await);
    let b = ok(host.spawn_agent("main", req(Some("second"))).await);
    assert!(err(host.spawn_agent("main", req(Some("third"))).await).contains("max_children"));
    let child = a.child_agent_id.unwrap_or_default();
    assert!(err(host.spawn_agent(&child, req(Some("deeper"))).await).contains("max_spawn_depth"));
    let mut escape = req(Some("x"));
    escape.preset = ProfilePreset::PublicNamed;
    escape.agent_id = Some("escapee".into());
    assert!(err(host.spawn_agent(&child, escape).await).contains("cannot create public agents"));
    assert!(err(host.spawn_agent("main", req(None)).await).contains("needs `initial_message`"));
    let mut named = req(Some("hi"));
    named.preset = ProfilePreset::PublicNamed;
    assert!(err(host.spawn_agent("main", named.clone()).await).contains("needs `agent_id`"));
    named.agent_id = Some("main".into());
    assert!(err(host.spawn_agent("main", named.clone()).await).contains("already exists"));
    let mut bad = req(Some("x"));
    bad.agent_id = Some("mine".into());
    assert!(err(host.spawn_agent("main", bad).await).contains("`agent_id` is for `public_named`"));
    let mut wt = req(Some("x"));
    wt.workspace_mode = ChildWorkspaceMode::Worktree;
    assert!(err(host.spawn_agent("main", wt).await).contains("needs an active git workspace"));
    // A public named agent: lineage, no supervision, the caller's attached set.
    named.agent_id = Some("reviewer".into());
    let made = ok(host.spawn_agent("main", named).await);
    assert_eq!(made.agent_id, "reviewer");
    let reviewer =
        ok(ok(host.store().read()).agent::<holon::model::agent::AgentRecord>("reviewer"));
    let reviewer = reviewer.expect("no reviewer");
    assert_eq!(reviewer.lineage_parent_agent_id.as_deref(), Some("main"));
    assert!(reviewer.supervision_task_id.is_none());

    // Stopping or archiving a child itself ends it through its parent's
    // task (the parent is told), not as a bare stop that leaves the task
    // open forever.
    let (ca, cb) = (child.clone(), b.child_agent_id.unwrap_or_default());
    let out = ok(host.control(&ca, ControlAction::Stop).await);
    assert!(out.note.contains("its task"), "{}", out.note);
    ok(host.archive_agent(&cb, "operator").await);
    assert!(ok(host.live_children("main")).is_empty());
    let rx = ok(host.store().read());
    for c in [&a.supervision_task_id, &b.supervision_task_id] {
        let t: Option<holon::model::task::TaskRecord> = ok(rx.get(
            holon::store::Keyed::Tasks,
            "main",
            c.as_deref().unwrap_or_default(),
        ));
        assert_eq!(
            t.map(|t| t.status),
            Some(holon::model::task::TaskStatus::Cancelled)
        );
    }
    drop(rx);
    ok(host.spawn_agent("main", req(Some("third"))).await);
    ok(host.spawn_agent("main", req(Some("fourth"))).await);
    // Stopping the parent stops both live children with it.
    let out = ok(host.control("main", ControlAction::Stop).await);
    assert!(
        out.note.contains("2 child agent(s) stopped"),
        "{}",
        out.note
    );
    assert!(ok(host.live_children("main")).is_empty());
    let rx = ok(host.store().read());
    let children: Vec<_> = ok(rx.agents::<holon::model::agent::AgentRecord>())
        .into_iter()
        .filter(|a| a.lineage_parent_agent_id.as_deref() == Some("main") && a.id != "reviewer")
        .collect();
    assert_eq!(children.len(), 4);
    assert!(children.iter().all(|c| c.archived_at.is_some()));
    assert!(children.iter().all(
        |c| c.workspaces.policies.get("agent_home").map(|p| p.approval)
            == Some(holon::model::approval::Approval::Always)
    ));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_a_parents_child_and_opens_it_read_only() {
    let home = Home::new();
    let stub = slow_child_stub("Profile the slow query").await;
    start_daemon(&home, &stub);
    let _daemon = Daemon(&home);
    home.ok(&["send", "delegate the profiling"]);
    let sup = poll("the child", || {
        let c = child_task(&home, "main");
        (c["posture"] == "ActiveTurn").then_some(c)
    });
    let child = sup["child_agent_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut c = super::pty::Console::start(home.path(), &["attach"], 120, 30, &[]);
    c.wait_until("attached", |s| s.contains("main ·"));
    c.key(b"\x0f");
    c.type_text("a");
    c.wait_for(&format!("└ {child}"));
    c.wait_for("Profile the slow query");
    c.key(b"\x1b[B");
    c.enter();
    c.wait_until("the child's view", |s| {
        s.lines().next().is_some_and(|l| l.contains(&child))
    });
    c.wait_for("is a child agent: read-only");
    c.type_text("hello child");
    c.enter();
    c.wait_for("read-only here");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    // Nothing reached the child's queue from the console.
    assert!(!events(&home, &child)
        .iter()
        .any(|e| e.to_string().contains("hello child")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_of_many_agents_counts_them_all_and_summarizes_the_busiest() {
    use holon::protocol::{AgentsPage, Request, Response, RuntimeClient};
    let r = super::runtime_core::rig(Vec::new()).await;
    for i in 0..60 {
        r.host.create_agent(&format!("agent-{i:02}")).await.unwrap();
    }
    r.host
        .control("agent-59", holon::protocol::views::ControlAction::Pause)
        .await
        .unwrap();
    r.host.until_idle().await;
    let status = r.host.runtime_status().unwrap();
    assert_eq!(status.agent_count, 61);
    assert_eq!(status.agents.len(), 50);
    let ids: Vec<&str> = status.agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids[0], "main", "the default agent first: {ids:?}");
    assert_eq!(ids[1], "agent-59", "then the paused one: {ids:?}");
    // agents.list pages through every one of them, in id order.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let answer = r
            .host
            .call(Request::AgentsList {
                limit: Some(25),
                cursor: cursor.take(),
                query: None,
            })
            .await
            .unwrap();
        let Response::AgentsList(AgentsPage {
            agents,
            next_cursor,
            total,
        }) = answer
        else {
            panic!("not a page")
        };
        assert_eq!(total, 61);
        seen.extend(agents.into_iter().map(|a| a.id));
        match next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 61);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    let bad = r
        .host
        .call(Request::AgentsList {
            limit: None,
            cursor: Some("../x".into()),
            query: None,
        })
        .await;
    assert!(bad.is_err(), "a hostile cursor is refused");
    r.host.shutdown().await;
}
