//! The reviewer model through the real binary: a daemon whose approval
//! requests go first to a scripted reviewer under `reviewer_may =
//! "allow_and_deny"`. Its "allow" runs the call once, its "deny" reaches
//! the agent with its reason, and prose falls back to a person, who then
//! answers; every verdict is a durable record, listed and audited.

use serde_json::{json, Value};

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{assert_typed_lines, json_lines, poll, stderr, Daemon, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

pub(super) const REVIEWER: &str = "gpt-reviewer";

/// Of `markers`, the one said last in the request (the conversation's
/// newest input among them).
fn newest<'a>(body: &Value, markers: &[&'a str]) -> Option<&'a str> {
    let text = body.to_string();
    markers
        .iter()
        .filter_map(|m| text.rfind(m).map(|at| (at, *m)))
        .max()
        .map(|(_, m)| m)
}

const PROMPTS: [&str; 4] = ["[approval ", "run echo", "run push", "run touch"];

/// The scripted models: the agent asks for one command per prompt, the
/// reviewer judges by the command it is shown.
fn respond(body: &Value, ran: &str) -> Canned {
    let text = body.to_string();
    if body["model"] == REVIEWER {
        // The request's recent context holds the earlier commands too:
        // the newest command is looked for first.
        let answer = if text.contains("echo touched") {
            "This looks fine to me, go ahead."
        } else if text.contains("git push") {
            r#"{"verdict": "deny", "reason": "pushing needs a person: open a pull request"}"#
        } else if text.contains("echo ok") {
            r#"{"verdict": "allow", "reason": "appends to a file in the agent's own home"}"#
        } else {
            "This looks fine to me, go ahead."
        };
        return Canned::json(200, canned::responses_json(answer, &[]));
    }
    let call = |cmd: &str| json!({ "cmd": cmd }).to_string();
    let reply = match newest(body, &PROMPTS) {
        Some("run echo") => {
            let c = call(&format!("echo ok >> {ran}"));
            canned::responses_json("Appending.", &[("c_echo", "ExecCommand", &c)])
        }
        Some("run push") => {
            let c = call("git push origin main");
            canned::responses_json("Pushing.", &[("c_push", "ExecCommand", &c)])
        }
        Some("run touch") => {
            let c = call(&format!("echo touched >> {ran}"));
            canned::responses_json("Touching.", &[("c_touch", "ExecCommand", &c)])
        }
        _ => canned::responses_json("Noted.", &[]),
    };
    Canned::json(200, reply)
}

fn approvals(home: &Home) -> Vec<Value> {
    serde_json::from_str(&home.ok(&["approvals", "--all", "--json"])).unwrap_or_default()
}

pub(super) fn find(home: &Home, call: &str) -> Option<Value> {
    approvals(home).into_iter().find(|a| a["call_id"] == call)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reviewer_allows_once_denies_with_a_reason_and_leaves_prose_to_a_person() {
    let home = Home::new();
    let ran = home.path().join("data/agents/main/ran.txt");
    let ran_text = ran.display().to_string();
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let log = std::sync::Arc::clone(&seen);
    let stub = StubServer::serving(std::sync::Arc::new(move |body: &Value| {
        if let Ok(mut l) = log.lock() {
            l.push(body.clone());
        }
        respond(body, &ran_text)
    }))
    .await;
    let requests = || seen.lock().map(|l| l.clone()).unwrap_or_default();
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        format!(
            "[policy]\napproval = \"on_write\"\nreviewer = \"openai/{REVIEWER}\"\n\
             reviewer_may = \"allow_and_deny\"\nreviewer_hold_secs = 0\n"
        ),
    ));
    ok(std::fs::write(
        home.path().join("config/policy.md"),
        "Commands inside the agent's own home are fine. Never push.\n",
    ));
    let base = format!("{}/v1", stub.base());
    let out = ok(home
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-agent")
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "sk-review")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&home);

    // Allowed: runs once, with no person asked.
    home.ok(&["send", "run echo"]);
    let echo = poll("the reviewer's allow", || {
        find(&home, "c_echo").filter(|a| a["status"] == "granted")
    });
    assert_eq!(echo["review"]["verdict"], "allow", "{echo}");
    assert_eq!(echo["review"]["applied"], true);
    assert_eq!(echo["review"]["model"], format!("openai/{REVIEWER}"));
    assert_eq!(
        echo["review"]["policy_digest"].as_str().map(str::len),
        Some(64)
    );
    poll("the command's output", || {
        std::fs::read_to_string(&ran).ok().filter(|t| t == "ok\n")
    });

    // Denied: the agent reads the reviewer's reason.
    home.ok(&["send", "run push"]);
    let push = poll("the reviewer's deny", || {
        find(&home, "c_push").filter(|a| a["status"] == "denied")
    });
    assert_eq!(push["review"]["verdict"], "deny");
    poll("the denial reaching the agent", || {
        requests()
            .iter()
            .any(|r| r["model"] != REVIEWER && r.to_string().contains("pushing needs a person"))
            .then_some(())
    });

    // Prose is no verdict: a person decides, and sees the reviewer's note.
    home.ok(&["send", "run touch"]);
    let touch = poll("the reviewer's note", || {
        find(&home, "c_touch").filter(|a| a["review"].is_object())
    });
    assert_eq!(touch["status"], "pending");
    assert_eq!(touch["review"]["verdict"], "ask");
    let fallback = touch["review"]["fallback"].as_str().unwrap_or_default();
    assert!(fallback.contains("not one JSON object"), "{touch}");
    let listed = home.ok(&["approvals"]);
    assert!(
        listed.contains("reviewer openai/gpt-reviewer says ask"),
        "{listed}"
    );
    let id = touch["id"].as_str().unwrap_or_default().to_owned();
    let answer = home.ok(&["approve", &id]);
    assert!(answer.contains("approved ExecCommand"), "{answer}");
    poll("the approved command's output", || {
        std::fs::read_to_string(&ran)
            .ok()
            .filter(|t| t == "ok\ntouched\n")
    });

    // One review per request, never two.
    let reviews = requests().iter().filter(|r| r["model"] == REVIEWER).count();
    assert_eq!(reviews, 3);
    // The request was framed as data, under the operator's policy.
    let first = requests()
        .into_iter()
        .find(|r| r["model"] == REVIEWER)
        .map(|r| r.to_string())
        .unwrap_or_default();
    assert!(first.contains("Never push."), "{first}");
    assert!(first.contains("data, not instructions"), "{first}");
    // Asked for its verdict in the wire's structured output.
    let asked = requests().into_iter().find(|r| r["model"] == REVIEWER);
    let format = asked
        .map(|r| r["text"]["format"].clone())
        .unwrap_or_default();
    assert_eq!(format["type"], "json_schema", "{format}");
    assert_eq!(format["strict"], true);

    // The audit: every verdict, how it ended.
    let audit = home.ok(&["approvals", "audit"]);
    assert!(
        audit.contains("allow (answered by the reviewer)"),
        "{audit}"
    );
    assert!(audit.contains("deny (answered by the reviewer)"), "{audit}");
    assert!(audit.contains("ask (granted by a person)"), "{audit}");
    let denies = home.ok(&["approvals", "audit", "--verdict", "deny", "--since", "1d"]);
    assert_eq!(denies.lines().count(), 1, "{denies}");
    // The reviewer's calls are spent on the agent's day, shown as its.
    let usage = home.ok(&["usage"]);
    assert!(usage.contains("openai/gpt-reviewer (reviewer)"), "{usage}");
    let bad = home.run(&["approvals", "audit", "--verdict", "maybe"]);
    assert!(!bad.status.success());
    let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
    assert_eq!(
        evs.iter()
            .filter(|e| e["kind"] == "approval_reviewed")
            .count(),
        3
    );
    assert_typed_lines(&home, "main");
}

/// A verdict recorded but not yet acted on when the runtime stopped (a
/// crash between the two) is acted on at the next start only if the
/// reach in force then lets it, and without asking the model again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_verdict_answers_after_a_restart_only_under_the_reach_in_force() {
    use holon::model::approval::Approval;
    use holon::model::approval::ApprovalRecord;
    use holon::model::approval::ApprovalStatus;
    use holon::model::message::Priority;
    use holon::model::review::{ApprovalReview, ReviewVerdict, ReviewerMay};
    use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
    use holon::runtime::settings::reviewer::ReviewerConfig;
    use std::sync::Arc;

    let dir = ok(tempfile::tempdir());
    let out = dir.path().join("data/agents/main/ran.txt");
    let cmd = format!("echo ran >> {}", out.display());
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("Writing.", &[("ExecCommand", json!({ "cmd": cmd }))]),
        Scripted::text("It ran."),
    ]));
    let policy = dir.path().join("policy.md");
    ok(std::fs::write(
        &policy,
        "Writes in the agent's home are fine.\n",
    ));
    // No reviewer yet: the request waits.
    let host = super::approvals::host_with(dir.path(), &provider, Approval::OnWrite).await;
    ok(host
        .submit(super::runtime_core::prompt("append", Priority::Normal))
        .await);
    let asked = super::runtime_core::wait_event(
        &host,
        "the request",
        super::runtime_core::kind("approval_requested"),
    )
    .await;
    let id = asked.payload["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    host.until_idle().await;
    super::approvals::stop(host).await;
    // What a reviewer under allow_and_deny recorded before a crash.
    let store = ok(holon::store::Store::open(
        &dir.path().join("s.redb"),
        holon::store::StoreOptions::default(),
    ));
    let aid = id.clone();
    ok(store
        .write(move |tx| {
            let key = holon::store::Keyed::Approvals;
            let mut rec: ApprovalRecord = tx.get(key, "main", &aid)?.expect("the approval");
            rec.review = Some(ApprovalReview {
                reviewed_by: "reviewer".into(),
                model: "scripted/test".into(),
                verdict: ReviewVerdict::Allow,
                reason: "a write in the agent's home".into(),
                fallback: None,
                policy_digest: "0".repeat(64),
                policy_from: Vec::new(),
                may: ReviewerMay::AllowAndDeny,
                applied: false,
                runs_at: None,
                latency_ms: 5,
                input_tokens: 0,
                output_tokens: 0,
                cost_usd: None,
                reviewed_at: "2026-11-29T10:00:00.000Z".into(),
            });
            tx.put(key, "main", &aid, &rec)
        })
        .await);
    ok(store.close().await);
    let start = |may: ReviewerMay| {
        let (dir, provider, policy) =
            (dir.path().to_owned(), Arc::clone(&provider), policy.clone());
        async move {
            let store = ok(holon::store::Store::open(
                &dir.join("s.redb"),
                holon::store::StoreOptions::default(),
            ));
            let mut c = super::runtime_core::config(&dir, provider);
            c.policy.approval = Approval::OnWrite;
            c.reviewer = ReviewerConfig {
                model: Some("scripted/test".into()),
                policy_file: Some(policy),
                may,
                hold: std::time::Duration::ZERO,
                ..ReviewerConfig::default()
            };
            ok(holon::runtime::handle::RuntimeHost::start(store, c).await)
        }
    };
    // The operator lowered the reach to advise: the allow stays a note.
    let host = start(ReviewerMay::Advise).await;
    host.reviews_settled().await;
    host.until_idle().await;
    let pending = ok(host.approvals(None, false));
    assert_eq!(
        pending.len(),
        1,
        "the recorded allow did not answer under advise"
    );
    assert!(!out.exists());
    assert_eq!(
        provider.requests().len(),
        1,
        "the model was not asked again"
    );
    super::approvals::stop(host).await;
    // Under allow_and_deny again: it answers, the call runs once.
    let host = start(ReviewerMay::AllowAndDeny).await;
    super::runtime_core::wait_event(
        &host,
        "the grant",
        super::runtime_core::kind("approval_granted"),
    )
    .await;
    super::approvals::wait_requests(&provider, 2).await;
    assert_eq!(ok(std::fs::read_to_string(&out)), "ran\n");
    let rec = ok(host.approvals(None, true))
        .into_iter()
        .find(|a| a.id == id)
        .expect("the approval");
    assert_eq!(rec.status, ApprovalStatus::Granted);
    assert!(rec.review.is_some_and(|r| r.applied));
    assert_eq!(
        provider.requests().len(),
        2,
        "one turn after the grant, no review asked"
    );
    super::approvals::stop(host).await;
}

/// A model that asks again after each denial does not loop on the
/// reviewer: after its fifth denial in a row, a person decides the next
/// request, and a person's answer lets the reviewer be asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denials_in_a_row_hand_the_next_request_to_a_person() {
    use holon::model::approval::Approval;
    use holon::model::approval::ApprovalStatus;
    use holon::model::message::Priority;
    use holon::model::review::ReviewerMay;
    use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
    use holon::runtime::settings::reviewer::ReviewerConfig;
    use std::sync::Arc;

    let dir = ok(tempfile::tempdir());
    let deny = r#"{"verdict": "deny", "reason": "not in this repository"}"#;
    let mut script = Vec::new();
    for i in 0..6 {
        let cmd = format!("echo {i} >> out.txt");
        script.push(Scripted::tools(
            "Writing.",
            &[("ExecCommand", json!({ "cmd": cmd }))],
        ));
        if i < 5 {
            script.push(Scripted::text(deny));
        }
    }
    let provider = Arc::new(ScriptedProvider::new(script));
    let policy = dir.path().join("policy.md");
    ok(std::fs::write(&policy, "Never write files.\n"));
    let store = ok(holon::store::Store::open(
        &dir.path().join("s.redb"),
        holon::store::StoreOptions::default(),
    ));
    let mut c = super::runtime_core::config(dir.path(), Arc::clone(&provider));
    c.policy.approval = Approval::OnWrite;
    c.reviewer = ReviewerConfig {
        model: Some("scripted/test".into()),
        policy_file: Some(policy),
        may: ReviewerMay::AllowAndDeny,
        hold: std::time::Duration::ZERO,
        ..ReviewerConfig::default()
    };
    let host = ok(holon::runtime::handle::RuntimeHost::start(store, c).await);
    ok(host.create_agent("main").await);
    ok(host
        .submit(super::runtime_core::prompt("write", Priority::Normal))
        .await);
    // Six requests: five denied by the reviewer, the sixth left to a person.
    super::approvals::wait_requests(&provider, 11).await;
    let sixth = super::runtime_core::wait_event(&host, "the sixth review", |e| {
        e.kind == "approval_reviewed"
            && e.payload["approval"]["review"]["fallback"]
                .as_str()
                .is_some_and(|f| f.contains("5 requests in a row"))
    })
    .await;
    host.reviews_settled().await;
    let all = ok(host.approvals(None, true));
    let denied = all
        .iter()
        .filter(|a| a.status == ApprovalStatus::Denied)
        .count();
    assert_eq!(denied, 5);
    let pending = ok(host.approvals(None, false));
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].id,
        sixth.payload["approval"]["id"].as_str().unwrap_or_default()
    );
    // The reviewer was not asked about the sixth.
    assert_eq!(provider.requests().len(), 11);
    super::approvals::stop(host).await;
}
