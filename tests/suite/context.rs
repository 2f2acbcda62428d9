//! Context that lasts: token budgets, cross-turn compaction into the
//! context summary, turn-local recaps and checkpoints, the baseline-over-
//! budget terminal, one retry after `context_length_exceeded`, working
//! memory, and the RFC's "compaction must not decide" rules. The real
//! runtime and store; a scripted model with a small window, and the HTTP
//! stub provider for the long run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::runtime_core::{config, events, kind, prompt, wait_event};
use super::stub_provider::{canned, Canned, StubServer};
use holon::model::agent::AgentRecord;
use holon::model::event::EventRecord;
use holon::model::message::Priority;
use holon::model::usage::FailureKind;
use holon::runtime::context::budget::request_tokens;
use holon::runtime::handle::{HostConfig, RuntimeHost};
use holon::runtime::provider::registry::{build_chain, ProviderEndpointConfig};
use holon::runtime::provider::retry::RetryPolicy;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::runtime::provider::{Provider, ProviderRequest};
use holon::store::{Store, StoreOptions};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

const SUMMARISER_MARK: &str = "You maintain the working summary";

fn is_summary_request(r: &ProviderRequest) -> bool {
    r.system_prompt.starts_with(SUMMARISER_MARK)
}

struct Rig {
    _dir: tempfile::TempDir,
    host: RuntimeHost,
    provider: Arc<ScriptedProvider>,
}

async fn rig_with(window: u64, script: Vec<Scripted>) -> Rig {
    let dir = ok(tempfile::tempdir());
    let store = ok(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    let provider = Arc::new(ScriptedProvider::new(script).with_context_window(window));
    let host = ok(RuntimeHost::start(store, config(dir.path(), Arc::clone(&provider))).await);
    ok(host.create_agent("main").await);
    Rig {
        _dir: dir,
        host,
        provider,
    }
}

fn record(host: &RuntimeHost) -> AgentRecord {
    let rx = ok(host.store().read());
    ok(rx.agent::<AgentRecord>("main")).expect("no agent")
}

fn count(evs: &[EventRecord], k: &str) -> usize {
    evs.iter().filter(|e| e.kind == k).count()
}

async fn wait_turns(host: &RuntimeHost, n: usize) {
    for _ in 0..600 {
        if count(&events(host), "turn_terminal") >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{n} turns never ended");
}

/// Send 3 KB prompts (`{label} N: …`) until a compaction is recorded,
/// each waited for; `ended` turns have ended before. Returns how many
/// have ended after.
async fn fill_until_compacted(host: &RuntimeHost, ended: usize, label: &str, max: usize) -> usize {
    let mut n = ended;
    while count(&events(host), "context_compacted") == 0 {
        assert!(n < max, "no compaction");
        let text = format!("{label} {n}: {}", "lorem ipsum ".repeat(250));
        ok(host.submit(prompt(&text, Priority::Normal)).await);
        n += 1;
        wait_turns(host, n).await;
    }
    n
}

/// A model that answers each turn briefly and summarises when asked.
fn chatty(summary: &'static str) -> Scripted {
    Scripted::With(Arc::new(move |r: &ProviderRequest| {
        if is_summary_request(r) {
            Scripted::text(summary)
        } else {
            Scripted::text("Noted.")
        }
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_history_folds_into_a_summary_and_every_request_fits_the_budget() {
    let script: Vec<Scripted> = (0..40)
        .map(|_| chatty("The operator sent numbered notes; each was acknowledged."))
        .collect();
    let rig = rig_with(8_192, script).await;
    let budget = rig.provider.context_budget();
    for i in 0..12 {
        let text = format!("note {i}: {}", "lorem ipsum ".repeat(250));
        ok(rig.host.submit(prompt(&text, Priority::Normal)).await);
        wait_turns(&rig.host, i + 1).await;
    }
    let reqs = rig.provider.requests();
    for r in &reqs {
        assert!(
            request_tokens(r) <= budget.prompt_budget,
            "request of {} tokens over the budget {}",
            request_tokens(r),
            budget.prompt_budget
        );
    }
    let evs = events(&rig.host);
    let compactions: Vec<&EventRecord> = evs
        .iter()
        .filter(|e| e.kind == "context_compacted")
        .collect();
    assert!(!compactions.is_empty(), "no compaction recorded");
    let epochs: Vec<u64> = compactions
        .iter()
        .filter_map(|e| e.payload["epoch"].as_u64())
        .collect();
    assert!(epochs.windows(2).all(|w| w[1] == w[0] + 1), "{epochs:?}");
    // Each was said as it began, before its summary was asked for.
    for done in &compactions {
        let began = evs.iter().rev().find(|e| {
            e.kind == "context_compaction_started"
                && e.event_seq < done.event_seq
                && e.payload["run_id"] == done.payload["run_id"]
        });
        let began = began.unwrap_or_else(|| panic!("no start before {}", done.event_seq));
        assert_eq!(
            began.payload["folding_turns"],
            done.payload["compacted_turns"]
        );
        assert_eq!(
            began.payload["tokens_before"],
            done.payload["tokens_before"]
        );
    }
    let c = &compactions[0].payload;
    assert_eq!(c["summary_source"], "model");
    assert_eq!(c["trigger"], "turn_start");
    // The summariser's call is spent like a round: its model is named, its
    // tokens are on the agent's day.
    assert!(c["summariser_model_ref"].is_string(), "{c}");
    let summariser_tokens = c["summariser_token_usage"]["input_tokens"]
        .as_u64()
        .unwrap()
        + c["summariser_token_usage"]["output_tokens"]
            .as_u64()
            .unwrap();
    let agent: holon::model::agent::AgentRecord = rig
        .host
        .store()
        .read()
        .unwrap()
        .agent("main")
        .unwrap()
        .unwrap();
    let rounds: u64 = evs
        .iter()
        .filter(|e| e.kind == "provider_round_completed")
        .map(|e| {
            e.payload["token_usage"]["input_tokens"].as_u64().unwrap()
                + e.payload["token_usage"]["output_tokens"].as_u64().unwrap()
        })
        .sum();
    assert!(
        agent.spend_today.tokens >= rounds + summariser_tokens,
        "{} < {rounds} + {summariser_tokens}",
        agent.spend_today.tokens
    );
    assert!(c["tokens_after"].as_u64() < c["tokens_before"].as_u64());
    // The last turn's request carries the summary, not the first note.
    let last = reqs
        .iter()
        .rev()
        .find(|r| !is_summary_request(r))
        .expect("no turn request");
    let blocks: Vec<&str> = last
        .context_blocks
        .iter()
        .map(|b| b.text.as_str())
        .collect();
    assert!(
        blocks
            .iter()
            .any(|b| b.starts_with("Context summary (epoch") && b.contains("numbered notes")),
        "{blocks:?}"
    );
    let convo = serde_json::to_string(&last.conversation).unwrap_or_default();
    assert!(
        !convo.contains("note 0:"),
        "the oldest turn is still verbatim"
    );
    assert!(convo.contains("note 11:"));
    // Compaction decided nothing: one turn per prompt, all completed.
    assert_eq!(count(&evs, "turn_started"), 12);
    assert!(evs
        .iter()
        .filter(|e| e.kind == "turn_terminal")
        .all(|e| e.payload["kind"] == "completed"));
    // Token accounting is on the agent and in the round telemetry.
    let agent = record(&rig.host);
    let used = agent.context.last_prompt.expect("no prompt use recorded");
    assert_eq!(used.window, 8_192);
    assert!(used.estimated_tokens > 0 && used.percent() < 100);
    assert_eq!(agent.context.epoch as usize, compactions.len());
    let round = evs
        .iter()
        .rfind(|e| e.kind == "provider_round_completed")
        .expect("no round");
    assert_eq!(round.payload["context_window"], 8_192);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_garbage_summary_falls_back_to_the_extractive_one_and_says_why() {
    let garbage = Scripted::With(Arc::new(|r: &ProviderRequest| {
        if is_summary_request(r) {
            Scripted::text("...")
        } else {
            Scripted::text("Noted.")
        }
    }));
    let failing = Scripted::With(Arc::new(|r: &ProviderRequest| {
        if is_summary_request(r) {
            Scripted::Fail(FailureKind::ServerError, "summariser down".into())
        } else {
            Scripted::text("Noted.")
        }
    }));
    let mut script = vec![garbage; 8];
    script.extend(vec![failing; 30]);
    let rig = rig_with(8_192, script).await;
    let mut reasons = Vec::new();
    for i in 0..14 {
        let text = format!("item {i}: {}", "dolor sit amet ".repeat(200));
        ok(rig.host.submit(prompt(&text, Priority::Normal)).await);
        wait_turns(&rig.host, i + 1).await;
    }
    for e in events(&rig.host)
        .iter()
        .filter(|e| e.kind == "context_compacted")
    {
        assert_eq!(e.payload["summary_source"], "extractive", "{}", e.payload);
        reasons.push(
            e.payload["fallback_reason"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        );
    }
    assert!(
        reasons.iter().any(|r| r.contains("no usable text")),
        "{reasons:?}"
    );
    // Every turn still completed: the summariser's failure is not the turn's.
    let evs = events(&rig.host);
    assert!(evs
        .iter()
        .filter(|e| e.kind == "turn_terminal")
        .all(|e| e.payload["kind"] == "completed"));
    // The extractive summary names the folded inputs.
    let last = rig
        .provider
        .requests()
        .into_iter()
        .rev()
        .find(|r| !is_summary_request(r))
        .expect("no request");
    let summary = last
        .context_blocks
        .iter()
        .find(|b| b.text.starts_with("Context summary"))
        .map(|b| b.text.clone())
        .unwrap_or_default();
    assert!(summary.contains("item 0: dolor"), "{summary}");
}

/// One long command's output: about 3,000 estimated tokens.
fn big_command(n: usize) -> Scripted {
    Scripted::tools(
        "",
        &[(
            "ExecCommand",
            json!({ "cmd": format!("yes 'output line {n} of a long build log' | head -n 330") }),
        )],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_tool_turn_is_recapped_with_checkpoints_and_a_work_item_update_invalidates_the_anchor(
) {
    let rig = rig_with(8_192, Vec::new()).await;
    let item = ok(rig
        .host
        .create_work_item(
            "main",
            holon::protocol::views::CreateWorkItem {
                objective: "collect the build logs".into(),
                ..Default::default()
            },
        )
        .await);
    ok(rig.host.pick_work_item("main", &item.id).await);
    let update = Scripted::tools(
        "",
        &[(
            "UpdateWorkItem",
            json!({ "work_item_id": item.id, "todo_list": [{"text": "read the logs", "state": "in_progress"}] }),
        )],
    );
    for s in [
        big_command(1),
        big_command(2),
        big_command(3),
        update,
        big_command(4),
        big_command(5),
        Scripted::text("Collected."),
    ] {
        rig.provider.push(s);
    }
    ok(rig
        .host
        .submit(prompt("collect the logs", Priority::Normal))
        .await);
    let end = wait_event(&rig.host, "turn end", kind("turn_terminal")).await;
    assert_eq!(end.payload["kind"], "completed", "{}", end.payload);
    let budget = rig.provider.context_budget();
    for r in rig.provider.requests() {
        assert!(
            request_tokens(&r) <= budget.prompt_budget,
            "{} > {}",
            request_tokens(&r),
            budget.prompt_budget
        );
    }
    let evs = events(&rig.host);
    let checkpoints: Vec<&Value> = evs
        .iter()
        .filter(|e| e.kind == "turn_checkpoint")
        .map(|e| &e.payload)
        .collect();
    assert!(!checkpoints.is_empty(), "no checkpoint");
    let first = checkpoints[0];
    assert_eq!(first["work_item_id"], json!(item.id));
    let rev0 = first["work_item_revision"].as_u64();
    assert!(
        checkpoints
            .iter()
            .any(|c| c["invalidated_anchor"]["revision"].as_u64() == rev0
                && c["work_item_revision"].as_u64() > rev0),
        "{checkpoints:?}"
    );
    // The checkpoint prompt follows the recaps; recaps keep call/result
    // pairs and never the recapped body.
    // (The open work item may continue in a later turn: look at this
    // turn's last round, the seventh request.)
    let last = rig
        .provider
        .requests()
        .into_iter()
        .nth(6)
        .expect("no seventh request");
    let convo = serde_json::to_string(&last.conversation).unwrap_or_default();
    // (Round 4, the small work-item update, is kept; how many of the
    // latest rounds also need a recap depends on the tool catalog's size.)
    assert!(
        convo.contains("[runtime checkpoint] Rounds 1, 2, 3")
            && !convo.contains("Rounds 1, 2, 3, 4"),
        "{convo}"
    );
    assert!(convo.contains("[recap] ExecCommand"));
    // Compaction replaced nothing of the work item's truth.
    assert_eq!(
        record(&rig.host).current_work_item_id,
        Some(item.id.clone())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_fixed_part_exceeds_the_budget_ends_baseline_over_budget_and_sends_nothing() {
    // A window the fixed part (policy, tools, frame) fits with room for a
    // short prompt, and a paste that does not.
    let rig = rig_with(7_168, vec![chatty("The operator sent a huge paste."); 3]).await;
    let huge = format!("please read: {}", "x".repeat(40_000));
    ok(rig.host.submit(prompt(&huge, Priority::Normal)).await);
    let end = wait_event(&rig.host, "turn end", kind("turn_terminal")).await;
    assert_eq!(end.payload["kind"], "baseline_over_budget");
    assert!(rig.provider.requests().is_empty(), "nothing sent");
    let brief = wait_event(&rig.host, "brief", kind("brief_created")).await;
    let text = brief.payload["brief"]["text"].as_str().unwrap_or("");
    assert_eq!(brief.payload["brief"]["kind"], "failure");
    assert!(text.contains("this turn's input ~10"), "{text}");
    assert!(text.contains("context window 7168"), "{text}");
    // The next, normal prompt runs: the huge one is history now, folded.
    ok(rig.host.submit(prompt("short one", Priority::Normal)).await);
    wait_turns(&rig.host, 2).await;
    let evs = events(&rig.host);
    let last = evs
        .iter()
        .rfind(|e| e.kind == "turn_terminal")
        .expect("no end");
    assert_eq!(last.payload["kind"], "completed", "{}", last.payload);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_length_exceeded_compacts_once_and_retries() {
    let mut script: Vec<Scripted> = (0..4).map(|_| Scripted::text("Noted.")).collect();
    script.push(Scripted::Fail(
        FailureKind::ContextLengthExceeded,
        "maximum context length exceeded".into(),
    ));
    script.push(Scripted::text(
        "A summary of the earlier notes, kept short.",
    ));
    script.push(Scripted::text("Answered after the retry."));
    // A second overflow in another turn is terminal after its one retry.
    script.push(Scripted::Fail(
        FailureKind::ContextLengthExceeded,
        "too long".into(),
    ));
    script.push(Scripted::text("The second summary of the notes so far."));
    script.push(Scripted::Fail(
        FailureKind::ContextLengthExceeded,
        "still too long".into(),
    ));
    let rig = rig_with(200_000, script).await;
    for i in 0..4 {
        ok(rig
            .host
            .submit(prompt(&format!("note {i}"), Priority::Normal))
            .await);
        wait_turns(&rig.host, i + 1).await;
    }
    ok(rig.host.submit(prompt("and now?", Priority::Normal)).await);
    wait_turns(&rig.host, 5).await;
    let evs = events(&rig.host);
    let c = evs
        .iter()
        .find(|e| e.kind == "context_compacted")
        .expect("no compaction");
    assert_eq!(c.payload["trigger"], "context_length_exceeded");
    assert_eq!(c.payload["compacted_turns"], 4);
    let end = evs
        .iter()
        .rfind(|e| e.kind == "turn_terminal")
        .expect("no end");
    assert_eq!(end.payload["kind"], "completed");
    assert_eq!(
        end.payload["last_assistant_message"],
        "Answered after the retry."
    );
    ok(rig.host.submit(prompt("again", Priority::Normal)).await);
    wait_turns(&rig.host, 6).await;
    let evs = events(&rig.host);
    let err = evs
        .iter()
        .rfind(|e| e.kind == "runtime_error")
        .expect("no error");
    assert_eq!(err.payload["failure_kind"], "context_length_exceeded");
    assert_eq!(rig.provider.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_memory_is_created_loaded_and_editable_from_a_workspace() {
    let rig = rig_with(200_000, Vec::new()).await;
    let home = rig._dir.path().join("data").join("agents").join("main");
    let patch = "--- a/@home/memory/self.md\n+++ b/@home/memory/self.md\n@@ -1,1 +1,1 @@\n-# Self\n+# Self (edited by the agent)\n";
    rig.provider.push(Scripted::tools(
        "",
        &[("ApplyPatch", json!({ "patch": patch }))],
    ));
    rig.provider.push(Scripted::text("Remembered."));
    rig.provider.push(Scripted::text("Still here."));
    ok(rig
        .host
        .submit(prompt("remember this", Priority::Normal))
        .await);
    wait_turns(&rig.host, 1).await;
    let first = rig.provider.requests().remove(0);
    let memory = first
        .context_blocks
        .iter()
        .find(|b| b.text.starts_with("Working memory"))
        .expect("no memory block");
    assert!(memory.text.contains("## memory/operator.md"));
    let own = ok(std::fs::read_to_string(home.join("memory/self.md")));
    assert!(own.starts_with("# Self (edited by the agent)"), "{own}");
    ok(rig.host.submit(prompt("next", Priority::Normal)).await);
    wait_turns(&rig.host, 2).await;
    let next = rig.provider.requests().pop().expect("no request");
    assert!(next
        .context_blocks
        .iter()
        .any(|b| b.text.contains("# Self (edited by the agent)")));
}

/// The long run through the real HTTP stack: 40 prompts of 3 KB each
/// against a model whose configured window is 8k tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_prompts_of_three_kilobytes_stay_within_a_small_window_over_http() {
    let stub = StubServer::responding(Arc::new(|body: &Value| {
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        let text = if system.starts_with(SUMMARISER_MARK) {
            "Summary: the operator sent forty numbered notes of filler; each was acknowledged."
        } else {
            "Noted."
        };
        Canned::json(200, canned::chat_json(text, &[]))
    }))
    .await;
    let text = format!(
        "base_url = \"{}/v1\"\nwire = \"openai_chat\"\nstreaming = \"off\"\ncontext_window = 8192\n",
        stub.base()
    );
    let endpoint: ProviderEndpointConfig = ok(toml::from_str(&text));
    let endpoints = BTreeMap::from([("stub".to_owned(), endpoint)]);
    let chain: Arc<dyn Provider> = Arc::new(ok(build_chain(
        "stub/small",
        &[],
        &BTreeMap::new(),
        &endpoints,
        RetryPolicy::default(),
    )
    .map_err(|f| f.artifact.summary)));
    assert_eq!(chain.context_budget().window, 8_192);
    let dir = ok(tempfile::tempdir());
    let store = ok(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    let p = Arc::clone(&chain);
    let config = HostConfig::new(dir.path().join("data"), Arc::new(move |_| Arc::clone(&p)));
    let host = ok(RuntimeHost::start(store, config).await);
    ok(host.create_agent("main").await);
    for i in 0..40 {
        let note = format!("note {i:02}: {}", "abcdefghij ".repeat(272));
        assert!(note.len() >= 3_000);
        ok(host.submit(prompt(&note, Priority::Normal)).await);
        wait_turns(&host, i + 1).await;
    }
    let reqs = stub.requests();
    assert!(reqs.len() >= 40);
    for r in &reqs {
        // What went over the wire, at four bytes a token, with the JSON
        // framing counted too: still inside the window.
        let wire_tokens = r.body.to_string().len() / 4;
        assert!(wire_tokens < 8_192, "a request of ~{wire_tokens} tokens");
    }
    let evs = events(&host);
    assert!(count(&evs, "context_compacted") >= 3);
    assert_eq!(count(&evs, "turn_started"), 40);
    assert!(evs
        .iter()
        .filter(|e| e.kind == "turn_terminal")
        .all(|e| e.payload["kind"] == "completed"));
}

/// A runtime killed while the summariser is thinking has committed
/// nothing of the compaction: after the restart the message replays, the
/// fold is planned again and recorded once, and every prompt is answered.
#[test]
fn a_restart_in_the_middle_of_a_compaction_loses_nothing() {
    use super::runtime_restart::{crash, runtime, start};
    let dir = ok(tempfile::tempdir());
    let slow = Scripted::With(Arc::new(|r: &ProviderRequest| {
        if is_summary_request(r) {
            Scripted::Delay(
                Duration::from_secs(60),
                Box::new(Scripted::text("never written")),
            )
        } else {
            Scripted::text("Noted.")
        }
    }));
    let provider = Arc::new(ScriptedProvider::new(vec![slow; 20]).with_context_window(8_192));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    let notes = 8;
    rt.block_on(async {
        for i in 0..notes {
            let text = format!("note {i}: {}", "lorem ipsum ".repeat(250));
            ok(host.submit(prompt(&text, Priority::Normal)).await);
        }
        for _ in 0..400 {
            if provider.requests().iter().any(is_summary_request) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no summarisation request");
    });
    let answered_before = count(&events(&host), "turn_terminal");
    crash(rt, host, dir.path());

    let provider = Arc::new(
        ScriptedProvider::new(vec![chatty("Notes were sent and acknowledged."); 40])
            .with_context_window(8_192),
    );
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    rt.block_on(async {
        wait_turns(&host, notes).await;
        let evs = events(&host);
        assert!(answered_before < notes);
        let compactions: Vec<&EventRecord> = evs
            .iter()
            .filter(|e| e.kind == "context_compacted")
            .collect();
        assert!(!compactions.is_empty());
        assert_eq!(compactions[0].payload["epoch"], 1, "nothing half-committed");
        assert_eq!(compactions[0].payload["summary_source"], "model");
        let ep_id = compactions[0].payload["episode_id"].as_str().unwrap_or("");
        let rx = ok(host.store().read());
        let episodes: Vec<holon::model::context::ContextEpisode> =
            ok(rx.list(holon::store::Keyed::ContextEpisodes, "main"));
        assert_eq!(episodes.len(), compactions.len());
        assert_eq!(episodes[0].id, ep_id);
        assert!(!episodes.iter().any(|e| e.summary.contains("never written")));
        // Every note reached the model (verbatim or folded), and each was
        // answered.
        let answered: Vec<&EventRecord> = evs
            .iter()
            .filter(|e| e.kind == "turn_terminal" && e.payload["kind"] == "completed")
            .collect();
        assert_eq!(answered.len(), notes);
        host.shutdown().await;
    });
}

/// The RFC's "compaction must not decide" list and its scenarios start
/// here: a current work item, a queued one, and a job that outlives the
/// turns, then prompts until a compaction folds the turn that started it.
/// Returns the compaction's event_seq and the two work item ids.
async fn compacted_with_work_and_a_job(rig: &Rig) -> (u64, String, String) {
    let make = |objective: &str| holon::protocol::views::CreateWorkItem {
        objective: objective.into(),
        ..Default::default()
    };
    let current = ok(rig
        .host
        .create_work_item("main", make("watch the slow job"))
        .await);
    ok(rig.host.pick_work_item("main", &current.id).await);
    let queued = ok(rig
        .host
        .create_work_item("main", make("a queued follow-up"))
        .await);
    rig.provider.push(Scripted::tools(
        "",
        &[(
            "ExecCommand",
            json!({"cmd": "sleep 3; echo slow-done", "yield_time_ms": 50}),
        )],
    ));
    rig.provider.push(Scripted::text("Started the job."));
    for _ in 0..30 {
        rig.provider
            .push(chatty("The operator sent notes while a job ran."));
    }
    ok(rig
        .host
        .submit(prompt("start the slow job", Priority::Normal))
        .await);
    wait_turns(&rig.host, 1).await;
    fill_until_compacted(&rig.host, 1, "note", 12).await;
    let seq = events(&rig.host)
        .iter()
        .find(|e| e.kind == "context_compacted")
        .map(|e| e.event_seq)
        .unwrap_or_default();
    (seq, current.id, queued.id)
}

/// Kinds recorded between the compaction and the end of its turn.
fn after_compaction(host: &RuntimeHost, seq: u64) -> Vec<String> {
    events(host)
        .iter()
        .filter(|e| e.event_seq > seq)
        .map(|e| e.kind.clone())
        .take_while(|k| k != "turn_terminal")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_does_not_decide_task_activity_and_a_rejoining_result_finds_work_truth_unchanged(
) {
    let rig = rig_with(8_192, Vec::new()).await;
    let (seq, current, _) = compacted_with_work_and_a_job(&rig).await;
    assert!(
        !after_compaction(&rig.host, seq)
            .iter()
            .any(|k| k.starts_with("task_")),
        "compaction changed a task"
    );
    let rx = ok(rig.host.store().read());
    assert_eq!(
        ok(rx.index_list(holon::store::Index::ActiveTasks, "main")).len(),
        1,
        "the job is still active"
    );
    drop(rx);
    let rejoined = wait_event(&rig.host, "task result", kind("task_result_queued")).await;
    assert!(rejoined.event_seq > seq);
    wait_event(&rig.host, "task result turn", |e| {
        e.kind == "turn_terminal" && e.event_seq > rejoined.event_seq
    })
    .await;
    assert_eq!(record(&rig.host).current_work_item_id, Some(current));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_does_not_decide_work_item_completion_or_focus() {
    let rig = rig_with(8_192, Vec::new()).await;
    let (seq, current, queued) = compacted_with_work_and_a_job(&rig).await;
    assert!(
        !after_compaction(&rig.host, seq)
            .iter()
            .any(|k| k.starts_with("work_item")),
        "compaction changed a work item"
    );
    let rx = ok(rig.host.store().read());
    let open = ok(rx.index_list(holon::store::Index::OpenWorkItems, "main"));
    assert!(
        open.contains(&current) && open.contains(&queued),
        "{open:?}"
    );
    drop(rx);
    assert_eq!(
        record(&rig.host).current_work_item_id,
        Some(current),
        "the queued item was not focused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_does_not_decide_waking_and_a_later_wake_hint_keeps_its_provenance() {
    let rig = rig_with(8_192, Vec::new()).await;
    let (seq, _, _) = compacted_with_work_and_a_job(&rig).await;
    let evs = events(&rig.host);
    assert!(
        !after_compaction(&rig.host, seq)
            .iter()
            .any(|k| k.starts_with("wake_hint") || k == "system_tick_emitted"),
        "compaction woke the agent"
    );
    // Every turn has the message it processes: none was started by a
    // compaction. (Matched by message, not by count: a turn for the job's
    // result may be between its two records when this looks.)
    let processing: Vec<&serde_json::Value> = evs
        .iter()
        .filter(|e| e.kind == "message_processing_started")
        .map(|e| &e.payload["message_id"])
        .collect();
    for t in evs.iter().filter(|e| e.kind == "turn_started") {
        assert!(
            processing.contains(&&t.payload["message_id"]),
            "{}",
            t.payload
        );
    }
    assert!(count(&evs, "turn_started") <= count(&evs, "message_processing_started"));
    let before = evs.last().map_or(0, |e| e.event_seq);
    ok(rig
        .host
        .wake_hint("main", "ci finished: 2 failures", Some("ci".into()), None)
        .await);
    let hint = wait_event(&rig.host, "hint", |e| {
        e.kind == "wake_hint_submitted" && e.event_seq > before
    })
    .await;
    assert_eq!(hint.payload["pending"]["source"], "ci", "{}", hint.payload);
    let tick = wait_event(&rig.host, "tick", |e| {
        e.kind == "system_tick_emitted"
            && e.event_seq > before
            && e.payload["reason"] == "wake_hint"
    })
    .await;
    assert_eq!(tick.payload["idempotency_key"], "wake_hint:ci:1");
    wait_event(&rig.host, "tick turn", |e| {
        e.kind == "turn_terminal" && e.event_seq > tick.event_seq
    })
    .await;
    // The model is told who woke it, after the compaction as before.
    let told = rig.provider.requests().iter().any(|r| {
        serde_json::to_string(&r.conversation)
            .unwrap_or_default()
            .contains("ci finished: 2 failures")
    });
    assert!(told, "the wake hint's reason reached the model");
}

/// The model finds a brief of an earlier, compacted epoch with
/// MemorySearch and reads its exact text with MemoryGet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_search_finds_a_brief_from_an_earlier_epoch_and_memory_get_returns_it_exactly() {
    use holon::model::usage::ConversationItem;
    const EARLY: &str =
        "The staging database password rotates every 90 days; the runbook is wiki/db-rotation.";
    // A model that answers from what it reads: the first question with the
    // fact, filler with "Noted.", and the recall question by searching,
    // then fetching the first result, then quoting it.
    let model = Scripted::With(Arc::new(|r: &ProviderRequest| {
        if is_summary_request(r) {
            return Scripted::text("The operator asked about rotation, then sent filler notes.");
        }
        let last_input = r
            .conversation
            .iter()
            .rev()
            .find_map(|i| match i {
                ConversationItem::UserText { text } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let last_result: Option<Value> = match r.conversation.last() {
            Some(ConversationItem::ToolResult { content, .. }) => {
                serde_json::from_str(content).ok()
            }
            _ => None,
        };
        if last_input.contains("how do db passwords rotate") {
            Scripted::text(EARLY)
        } else if last_input.contains("recall:") {
            match last_result {
                None => Scripted::tools(
                    "",
                    &[(
                        "MemorySearch",
                        json!({"query": "database password rotation runbook"}),
                    )],
                ),
                Some(v) if v.get("results").is_some() => {
                    let r = v["results"][0]["source_ref"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned();
                    Scripted::tools("", &[("MemoryGet", json!({ "source_ref": r }))])
                }
                Some(v) => Scripted::text(v["content"].as_str().unwrap_or("nothing found")),
            }
        } else {
            Scripted::text("Noted.")
        }
    }));
    let rig = rig_with(8_192, vec![model; 80]).await;
    ok(rig
        .host
        .submit(prompt("how do db passwords rotate?", Priority::Normal))
        .await);
    wait_turns(&rig.host, 1).await;
    // Fill until the first turn is folded away (an earlier epoch).
    let n = fill_until_compacted(&rig.host, 1, "filler", 15).await;
    ok(rig
        .host
        .submit(prompt(
            "recall: what did you say about db passwords?",
            Priority::Normal,
        ))
        .await);
    wait_turns(&rig.host, n + 1).await;
    let evs = events(&rig.host);
    let end = evs
        .iter()
        .rfind(|e| e.kind == "turn_terminal")
        .expect("no end");
    assert_eq!(
        end.payload["last_assistant_message"], EARLY,
        "{}",
        end.payload
    );
    let searched = evs
        .iter()
        .find(|e| e.kind == "tool_executed" && e.payload["tool_name"] == "MemorySearch")
        .expect("no search");
    let preview = searched.payload["result_preview"].as_str().unwrap_or("");
    assert!(preview.contains("\"kind\":\"brief\""), "{preview}");
}
