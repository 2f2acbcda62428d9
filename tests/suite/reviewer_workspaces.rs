//! The reviewer where a workspace's settings and its repository come in,
//! through the real binary: a workspace's own reviewer and written
//! policy, the hold in which a person revokes an allow, a repository's
//! proposed policy (in force only as approved), its `.mcp.json` servers
//! reviewed once per command line, and workspace ids that never collide.

use serde_json::{json, Value};

use super::reviewer::{find, REVIEWER};
use super::stub_provider::{canned, Canned, StubServer};
use super::support::{assert_typed_lines, json_lines, poll, stderr, Daemon, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

/// Starts a daemon on `home` whose agent asks for the command each
/// prompt names (`run: CMD`) and whose reviewer allows what contains
/// `echo ok` (and is asked nothing else); every request the stub serves
/// is kept.
pub(super) async fn daemon_with_reviewer(home: &Home, config: &str) -> (StubServer, Requests) {
    let seen: Requests = Default::default();
    let log = std::sync::Arc::clone(&seen);
    let stub = StubServer::serving(std::sync::Arc::new(move |body: &Value| {
        if let Ok(mut l) = log.lock() {
            l.push(body.clone());
        }
        if body["model"] == REVIEWER {
            let answer = match body.to_string().contains("echo ok") {
                true => r#"{"verdict": "allow", "reason": "an echo in the agent's home"}"#,
                false => r#"{"verdict": "ask", "reason": "not covered"}"#,
            };
            return Canned::json(200, canned::responses_json(answer, &[]));
        }
        let text = body.to_string();
        // Asked since the last answer to an approval or a call's result
        // (the turn ends there).
        let asked = text.rfind("run: ").filter(|at| {
            text.rfind("[approval ") < Some(*at) && text.rfind("function_call_output") < Some(*at)
        });
        let reply = match asked {
            Some(at) => {
                let cmd: String = text[at + 5..].chars().take_while(|c| *c != '"').collect();
                let (cmd, call) = cmd.split_once('#').unwrap_or((&cmd, "c_x"));
                let c = json!({ "cmd": cmd.trim() }).to_string();
                canned::responses_json("Running.", &[(call, "ExecCommand", &c)])
            }
            None => canned::responses_json("Noted.", &[]),
        };
        Canned::json(200, reply)
    }))
    .await;
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        config,
    ));
    let out = ok(home
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-agent")
        .env("OPENAI_BASE_URL", format!("{}/v1", stub.base()))
        .env("OPENAI_API_KEY", "sk-review")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    (stub, seen)
}

pub(super) type Requests = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;

fn reviews(seen: &Requests) -> Vec<String> {
    let all = seen.lock().map(|l| l.clone()).unwrap_or_default();
    all.iter()
        .filter(|r| r["model"] == REVIEWER)
        .map(Value::to_string)
        .collect()
}

/// A workspace names its own reviewer (none in config.toml) and has its
/// own written policy beside config.toml; an allow that answers is held,
/// and a person who denies it in the hold wins: the call never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_names_its_own_reviewer_and_a_person_revokes_its_allow() {
    let home = Home::new();
    let ran = home.path().join("data/agents/main/ran.txt");
    let config = "[policy]\napproval = \"on_write\"\nreviewer_may = \"allow_and_deny\"\n\
                  reviewer_hold_secs = 600\n";
    let (_stub, seen) = daemon_with_reviewer(&home, config).await;
    let _daemon = Daemon(&home);
    let ws_policy = home.path().join("config/workspaces/agent_home/policy.md");
    ok(std::fs::create_dir_all(ok(ws_policy
        .parent()
        .ok_or("no parent"))));
    ok(std::fs::write(
        &ws_policy,
        "Echoes in the agent's home are fine.\n",
    ));

    // No reviewer anywhere yet: a person is asked, nobody else.
    home.ok(&["send", &format!("run: echo ok >> {}#c_1", ran.display())]);
    let first = poll("the first request", || find(&home, "c_1"));
    let id = first["id"].as_str().unwrap_or_default().to_owned();
    home.ok(&["deny", &id]);

    // The workspace's own reviewer, set by the operator.
    let bad = home.run(&[
        "workspace",
        "policy",
        "agent_home",
        "--reviewer",
        "no model",
    ]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("is not a reviewer"),
        "{}",
        stderr(&bad)
    );
    let set = home.ok(&[
        "workspace",
        "policy",
        "agent_home",
        "--reviewer",
        &format!("openai/{REVIEWER}"),
    ]);
    assert!(set.contains("reviewer: openai/gpt-reviewer"), "{set}");
    home.ok(&["send", &format!("run: echo ok >> {}#c_2", ran.display())]);
    let held = poll("the reviewer's held allow", || {
        find(&home, "c_2").filter(|a| a["review"].is_object())
    });
    assert_eq!(held["status"], "pending", "{held}");
    assert_eq!(held["review"]["verdict"], "allow");
    assert_eq!(held["review"]["applied"], false);
    assert!(held["review"]["runs_at"].is_string(), "{held}");
    let from = held["review"]["policy_from"].to_string();
    assert!(from.contains("workspaces/agent_home/policy.md"), "{from}");
    let listed = home.ok(&["approvals"]);
    assert!(listed.contains("unless a person answers first"), "{listed}");
    // The person revokes it before it runs.
    let id = held["id"].as_str().unwrap_or_default().to_owned();
    home.ok(&["deny", &id, "--note", "not today"]);
    let denied = poll("the denial", || {
        find(&home, "c_2").filter(|a| a["status"] == "denied")
    });
    assert_eq!(denied["review"]["applied"], false);
    assert!(!ran.exists(), "a revoked allow ran its call");
    // The workspace's policy was what the reviewer read; the first
    // request was never reviewed.
    let asked = reviews(&seen);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("Echoes in the agent's home are fine."));

    // Off for this workspace: nobody but a person again.
    home.ok(&["workspace", "policy", "agent_home", "--reviewer", "off"]);
    home.ok(&["send", &format!("run: echo ok >> {}#c_3", ran.display())]);
    let third = poll("the third request", || find(&home, "c_3"));
    let id = third["id"].as_str().unwrap_or_default().to_owned();
    home.ok(&["approve", &id]);
    poll("the approved echo", || {
        std::fs::read_to_string(&ran).ok().filter(|t| t == "ok\n")
    });
    assert_eq!(reviews(&seen).len(), 1);
    assert_typed_lines(&home, "main");
}

/// A repository proposes a policy in `.holon/policy.md`: the reviewer
/// reads it only once the operator approved its exact text, and not after
/// the text changes (as a model in that repository could change it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_proposed_policy_counts_only_as_approved() {
    let home = Home::new();
    let config = format!("[policy]\napproval = \"on_write\"\nreviewer = \"openai/{REVIEWER}\"\n");
    let (_stub, seen) = daemon_with_reviewer(&home, &config).await;
    let _daemon = Daemon(&home);
    ok(std::fs::write(
        home.path().join("config/policy.md"),
        "Never push.\n",
    ));
    let repo = home.path().join("proj");
    ok(std::fs::create_dir_all(repo.join(".holon")));
    let proposed = repo.join(".holon/policy.md");
    ok(std::fs::write(&proposed, "Echo commands here are fine.\n"));
    let dir = repo.display().to_string();
    home.ok(&["workspace", "use", &dir]);
    let out = repo.join("out.txt").display().to_string();
    let review_of = |call: &str, n: usize| {
        home.ok(&["send", &format!("run: echo ok >> {out}#{call}")]);
        let rec = poll("the review", || {
            find(&home, call).filter(|a| a["review"].is_object())
        });
        let asked = reviews(&seen);
        assert_eq!(asked.len(), n, "one review per request");
        (rec, asked[n - 1].clone())
    };

    // Proposed, not approved: shown to the operator, not to the reviewer.
    let shown = home.ok(&["policy", "proposal", "--dir", &dir]);
    assert!(shown.contains("not approved"), "{shown}");
    assert!(shown.contains("| Echo commands here are fine."), "{shown}");
    let (rec, asked) = review_of("c_1", 1);
    assert!(!asked.contains("Echo commands here"), "{asked}");
    assert!(asked.contains("Never push."));
    assert_eq!(
        rec["review"]["policy_from"].as_array().map(Vec::len),
        Some(1)
    );

    // Approved for another text: refused. For its own: read.
    let wrong = home.run(&[
        "policy",
        "adopt",
        "--dir",
        &dir,
        "--expect",
        &"a".repeat(64),
    ]);
    assert!(!wrong.status.success());
    assert!(stderr(&wrong).contains("not aaaa"), "{}", stderr(&wrong));
    let view: Value =
        serde_json::from_str(&home.ok(&["policy", "proposal", "--dir", &dir, "--json"]))
            .unwrap_or_default();
    let digest = view["digest"].as_str().unwrap_or_default().to_owned();
    let adopted = home.ok(&["policy", "adopt", "--dir", &dir, "--expect", &digest]);
    assert!(adopted.contains("approved"), "{adopted}");
    let (rec, asked) = review_of("c_2", 2);
    assert!(asked.contains("Echo commands here are fine."), "{asked}");
    assert!(asked.contains("Proposed by the repository"), "{asked}");
    let from = rec["review"]["policy_from"].to_string();
    assert!(from.contains("proposed by the repository"), "{from}");

    // Changed after the approval (a model could write it): not read.
    ok(std::fs::write(&proposed, "Push freely.\n"));
    let shown = home.ok(&["policy", "proposal", "--dir", &dir]);
    assert!(shown.contains("changed since you approved it"), "{shown}");
    let (_, asked) = review_of("c_3", 3);
    assert!(!asked.contains("Push freely"), "{asked}");
    assert!(!asked.contains("Echo commands here"), "{asked}");

    // A link is never followed.
    ok(std::fs::remove_file(&proposed));
    ok(std::os::unix::fs::symlink(
        home.path().join("config/policy.md"),
        &proposed,
    ));
    let shown = home.ok(&["policy", "proposal", "--dir", &dir]);
    assert!(
        shown.contains("refused") && shown.contains("is a link"),
        "{shown}"
    );

    let revoked = home.ok(&["policy", "adopt", "--dir", &dir, "--revoke"]);
    assert!(revoked.contains("no longer approved"), "{revoked}");
    let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
    let told: Vec<bool> = evs
        .iter()
        .filter(|e| e["kind"] == "proposal_approved")
        .map(|e| e["payload"]["approved"] == true)
        .collect();
    assert_eq!(told, [true, false]);
    assert_typed_lines(&home, "main");
}

/// A repository's `.mcp.json` server awaiting approval goes to the
/// workspace's reviewer once per command line; under `allow_and_deny` its
/// allow approves that command line (recorded as the reviewer's), while
/// an `ask` leaves the server to the operator, with the note shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_mcp_server_is_reviewed_once_per_command_line() {
    let home = Home::new();
    let config = format!(
        "[policy]\nreviewer = \"openai/{REVIEWER}\"\nreviewer_may = \"allow_and_deny\"\n\
         reviewer_hold_secs = 0\n"
    );
    let (_stub, seen) = daemon_with_reviewer(&home, &config).await;
    let _daemon = Daemon(&home);
    ok(std::fs::write(
        home.path().join("config/policy.md"),
        "Servers that only echo are fine.\n",
    ));
    let repo = home.path().join("mcp-proj");
    ok(std::fs::create_dir_all(&repo));
    ok(std::fs::write(
        repo.join(".mcp.json"),
        r#"{"mcpServers": {"echoer": {"command": "echo", "args": ["ok"]},
            "other": {"command": "false"}}}"#,
    ));
    let dir = repo.display().to_string();
    home.ok(&["workspace", "use", &dir]);
    home.ok(&["send", "hello"]);
    let listed = |name: &str| {
        let all: Vec<Value> =
            serde_json::from_str(&home.ok(&["mcp", "list", "--dir", &dir, "--json"]))
                .unwrap_or_default();
        all.into_iter().find(|s| s["name"] == name)
    };
    let echoer = poll("the echoer's approval by the reviewer", || {
        listed("echoer").filter(|s| s["review"].is_object() && s["state"] != "awaiting_approval")
    });
    assert_eq!(echoer["review"]["verdict"], "allow", "{echoer}");
    let other = poll("the other's review", || {
        listed("other").filter(|s| s["review"].is_object())
    });
    assert_eq!(other["state"], "awaiting_approval", "{other}");
    assert_eq!(other["review"]["verdict"], "ask");
    let text = home.ok(&["mcp", "list", "--dir", &dir]);
    assert!(text.contains("advice only: you decide"), "{text}");
    // The reviewer read the server as data, under the operator's policy.
    let asked = reviews(&seen);
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked
        .iter()
        .all(|r| r.contains("Servers that only echo are fine.")));
    assert!(asked.iter().any(|r| r.contains("echo ok")));
    // The approval is the reviewer's, and said so.
    let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
    let approved: Vec<&Value> = evs
        .iter()
        .filter(|e| e["kind"] == "mcp_server_approved")
        .collect();
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["provenance"]["source"], "reviewer");
    assert_eq!(approved[0]["payload"]["command_line"], "echo ok");
    // Another turn asks nothing again.
    home.ok(&["send", "again"]);
    poll("the second turn", || {
        let n = seen.lock().map(|l| l.len()).unwrap_or_default();
        (n >= 4).then_some(())
    });
    home.ok(&["send", "and again"]);
    poll("the third turn", || {
        let n = seen.lock().map(|l| l.len()).unwrap_or_default();
        (n >= 5).then_some(())
    });
    assert_eq!(reviews(&seen).len(), 2);
    assert_typed_lines(&home, "main");
}

/// Two directories never share a workspace id (it names the policy, the
/// reviewer and the written policy of a workspace). Ids carry 64 bits of
/// the directory's SHA-256, so none can be named to collide; one already
/// bound elsewhere (as a binding from before could be) is refused, for
/// this agent and for any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_whose_workspace_id_is_taken_is_refused() {
    use holon::model::agent::AgentRecord;
    use holon::model::approval::Approval;
    use holon::runtime::provider::scripted::ScriptedProvider;
    use holon::runtime::workspace::workspace_id_for;
    use std::sync::Arc;

    let dir = ok(tempfile::tempdir());
    let root = ok(dir.path().canonicalize());
    let (a, b) = (root.join("one/proj"), root.join("two/proj"));
    ok(std::fs::create_dir_all(&a));
    ok(std::fs::create_dir_all(&b));
    let id = workspace_id_for(&b);
    assert_ne!(workspace_id_for(&a), id);
    let hash = id.rsplit('_').next().unwrap_or_default();
    assert_eq!(hash.len(), 16, "{id}");
    let provider = Arc::new(ScriptedProvider::new(Vec::new()));
    let host = super::approvals::host_with(dir.path(), &provider, Approval::OnRequest).await;
    ok(host.create_agent("other").await);
    ok(host.attach_workspace("other", &a).await);
    // A binding from before holds b's id for a: as a collision would.
    let taken = id.clone();
    ok(host
        .store()
        .write(move |tx| {
            let mut agent: AgentRecord = tx.get_agent("other")?.expect("the agent");
            for binding in &mut agent.workspaces.attached {
                binding.workspace_id = taken.clone();
            }
            tx.put_agent("other", &agent)
        })
        .await);
    for agent in ["main", "other"] {
        let refused = host.attach_workspace(agent, &b).await;
        let why = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(why.contains("already"), "{agent}: {why}");
    }
    // The first attaches again as itself, by any agent.
    ok(host.attach_workspace("main", &a).await);
    super::approvals::stop(host).await;
}
