//! Turn benchmarks for `holon debug bench turns`: the runtime's own cost
//! per provider round, against the shared stub provider (`holon-stub`) on
//! 127.0.0.1 answering at once (keep-alive HTTP/1.1, non-streaming Chat
//! Completions), and ExecCommand's spawn-to-result latency for `true`.
//!
//! The round figure subtracts what a provider round costs on its own: the
//! same chain's `round()` (request encoding, HTTP round trip, parsing)
//! measured directly against the same stub. The raw HTTP round trip of a
//! fixed body is printed too. What remains is the runtime: prompt and
//! conversation assembly, the durable writes of each round (round record,
//! tool execution, interjection check; every commit fsynced), the tool
//! call itself (`AgentGet`) and the actor's scheduling.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use holon_stub::{Canned, Responder, StubServer};
use redb::Durability;
use serde_json::{json, Value};

use super::bench::{millis, percentile};
use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::model::usage::ConversationItem;
use crate::model::usage::ToolCall;
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::host::run_once::RunOutcome;
use crate::runtime::provider::registry::{build_chain, http_client, ProviderEndpointConfig};
use crate::runtime::provider::retry::{ProviderChain, RetryPolicy};
use crate::runtime::provider::{Provider, ProviderRequest};
use crate::runtime::tools::{self, ToolEnv};
use crate::store::{Store, StoreOptions};

/// Provider rounds per benchmark turn (the last one answers with text).
const ROUNDS_PER_TURN: usize = 20;
const TURNS: usize = 10;
const PROVIDER_ROUNDS: usize = 200;
const EXEC_RUNS: usize = 200;

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The stub's answer: a tool call (`AgentGet`) until the conversation since
/// the last user message holds `ROUNDS_PER_TURN - 1` tool results, then
/// text. Stateless, so any number of turns can run against it.
fn answer(request: &Value, calls: &AtomicU64) -> Value {
    let results = results_since_user(request);
    let message = if results + 1 >= ROUNDS_PER_TURN {
        json!({"role": "assistant", "content": "done"})
    } else {
        let n = calls.fetch_add(1, Ordering::Relaxed);
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{n}"), "type": "function", "function": {"name": "AgentGet", "arguments": "{}"}}
        ]})
    };
    completion(message)
}

/// Tool results in a Chat Completions request since its last user message
/// (the turn state that closes every request aside).
pub(super) fn results_since_user(request: &Value) -> usize {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let state = |m: &&Value| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(crate::runtime::provider::wire::is_turn_state)
    };
    messages
        .iter()
        .rev()
        .skip_while(state)
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count()
}

/// A Chat Completions answer carrying `message` (a tool call or text).
pub(super) fn completion(message: Value) -> Value {
    let finish = if message["tool_calls"].is_null() {
        "stop"
    } else {
        "tool_calls"
    };
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105});
    json!({"id": "chatcmpl-bench", "object": "chat.completion", "usage": usage,
           "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
}

/// The stub provider answering `answer` on keep-alive connections.
async fn stub() -> StubServer {
    let calls = Arc::new(AtomicU64::new(0));
    let responder: Responder =
        Arc::new(move |request: &Value| Canned::json(200, answer(request, &calls)));
    StubServer::serving(responder).await
}

pub(super) fn chain(base: &str) -> anyhow::Result<ProviderChain> {
    let endpoint: ProviderEndpointConfig = toml::from_str(&format!(
        // A window no benchmark fills: rounds are measured, not the
        // turn-local recaps a full window brings.
        "base_url = \"{base}/v1\"\nwire = \"openai_chat\"\nstreaming = \"off\"\n\
         context_window = 1000000\n"
    ))?;
    let endpoints = BTreeMap::from([("bench".to_owned(), endpoint)]);
    build_chain(
        "bench/model",
        &[],
        &BTreeMap::new(),
        &endpoints,
        RetryPolicy::default(),
    )
    .map_err(|f| anyhow::anyhow!(f.artifact.summary))
}

fn sample_request() -> ProviderRequest {
    ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: "You are Holon.".into(),
        context_blocks: Vec::new(),
        conversation: vec![ConversationItem::UserText {
            text: "[operator] benchmark".into(),
        }],
        tools: tools::specs(),
        max_output_tokens: None,
        prompt_cache_key: None,
        no_reasoning: false,
        response_schema: None,
    }
}

/// Raw HTTP round trip and the provider chain's own round, per call.
async fn provider_rounds(
    stub: &StubServer,
    chain: &ProviderChain,
) -> anyhow::Result<(Duration, Duration)> {
    let client =
        http_client(&RetryPolicy::default()).map_err(|f| anyhow::anyhow!(f.artifact.summary))?;
    let url = format!("{}/v1/chat/completions", stub.base());
    let body = json!({"model": "model", "messages": [{"role": "user", "content": "benchmark"}]})
        .to_string();
    let mut raw = Vec::with_capacity(PROVIDER_ROUNDS);
    for _ in 0..PROVIDER_ROUNDS {
        let t = Instant::now();
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await?;
        response.bytes().await?;
        raw.push(t.elapsed());
    }
    let request = sample_request();
    let progress = |_p| {};
    let mut rounds = Vec::with_capacity(PROVIDER_ROUNDS);
    for _ in 0..PROVIDER_ROUNDS {
        let t = Instant::now();
        let outcome = chain.round(&request, &progress).await;
        rounds.push(t.elapsed());
        if let Err(f) = outcome.result {
            anyhow::bail!("stub provider round failed: {}", f.artifact.summary);
        }
    }
    raw.sort();
    rounds.sort();
    let raw_mean = raw.iter().sum::<Duration>() / raw.len() as u32;
    let round_mean = rounds.iter().sum::<Duration>() / rounds.len() as u32;
    println!(
        "provider.round     openai_chat stub, {PROVIDER_ROUNDS} calls: raw HTTP p50 {:.0} µs (mean {:.0} µs); \
         chain round incl. encode/parse p50 {:.0} µs (mean {:.0} µs)",
        micros(percentile(&raw, 0.5)),
        micros(raw_mean),
        micros(percentile(&rounds, 0.5)),
        micros(round_mean),
    );
    Ok((raw_mean, round_mean))
}

pub(super) async fn start_host(
    dir: &Path,
    name: &str,
    provider: Arc<dyn Provider>,
    durability: Durability,
) -> anyhow::Result<RuntimeHost> {
    let options = StoreOptions {
        durability,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir.join(format!("{name}.redb")), options)?;
    let mut config = HostConfig::new(dir.join(name), Arc::new(move |_| Arc::clone(&provider)));
    config.max_rounds = ROUNDS_PER_TURN as u32 + 5;
    Ok(RuntimeHost::start(store, config).await?)
}

async fn stop_host(host: RuntimeHost) -> anyhow::Result<()> {
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    Ok(())
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let stub = stub().await;
    let chain = Arc::new(chain(stub.base())?);
    let (raw_http, provider_round) = provider_rounds(&stub, &chain).await?;

    for (name, durability, what) in [
        ("turns", Durability::Immediate, "durable"),
        ("turns-nosync", Durability::None, "no fsync"),
    ] {
        let chain: Arc<dyn Provider> = Arc::clone(&chain) as Arc<dyn Provider>;
        let host = start_host(dir, name, chain, durability).await?;
        let (rounds, elapsed) = turns(&host).await?;
        stop_host(host).await?;
        if matches!(durability, Durability::Immediate) {
            disk_per_turn(&dir.join(format!("{name}.redb"))).await?;
        }
        let per_round = elapsed / rounds.max(1) as u32;
        println!(
            "turn.rounds        {what}: {TURNS} turns × {ROUNDS_PER_TURN} rounds ({rounds} rounds, AgentGet each): \
             {:.0} rounds/s, {:.0} µs per round; runtime overhead {:.0} µs per round excluding the provider \
             round ({:.0} µs excluding only the raw HTTP round trip)",
            rounds as f64 / elapsed.as_secs_f64(),
            micros(per_round),
            micros(per_round.saturating_sub(provider_round)),
            micros(per_round.saturating_sub(raw_http)),
        );
    }
    exec_bench(dir).await
}

/// What the successful turns left on disk: stored bytes per turn and per
/// event (every table, the agent's setup included; an event's bytes are
/// its share of the ledger's rows, blocks and kind index), and the file as
/// the runtime left it and compacted.
async fn disk_per_turn(path: &Path) -> anyhow::Result<()> {
    let events: u64 = {
        let store = crate::store::Store::open(path, crate::store::StoreOptions::default())?;
        let rx = store.read()?;
        let mut n = 0;
        for agent in rx.agents::<crate::model::agent::AgentRecord>()? {
            n += rx.last_seq(&agent.id)?;
        }
        drop(rx);
        store.close().await?;
        n
    };
    let stats = crate::store::compact::stats(path)?;
    let stored: u64 = stats.tables.iter().map(|t| t.stored_bytes).sum();
    let ledger: u64 = stats
        .tables
        .iter()
        .filter(|t| ["events", "event_blocks", "event_kinds"].contains(&t.table.as_str()))
        .map(|t| t.stored_bytes)
        .sum();
    let compacted = crate::store::compact::compact(path)?;
    println!(
        "turn.disk          durable: {TURNS} turns × {ROUNDS_PER_TURN} rounds: {:.1} KB stored per turn \
         ({events} events, {:.0} B stored per event); file {:.0} KB as left, {:.0} KB compacted",
        stored as f64 / 1000.0 / TURNS as f64,
        ledger as f64 / events.max(1) as f64,
        compacted.bytes_before as f64 / 1000.0,
        compacted.bytes_after as f64 / 1000.0,
    );
    Ok(())
}

/// `TURNS` one-shot turns of `ROUNDS_PER_TURN` rounds; (rounds, time).
async fn turns(host: &RuntimeHost) -> anyhow::Result<(usize, Duration)> {
    host.create_agent("bench").await?;
    let mut rounds = 0usize;
    let mut elapsed = Duration::ZERO;
    for n in 0..TURNS {
        let req = AdmissionRequest::operator_prompt(
            "bench",
            &format!("turn {n}"),
            Priority::Normal,
            DeliverySurface::RunOnce,
        );
        let t = Instant::now();
        let report = host.run_once(req, Duration::from_secs(120)).await?;
        elapsed += t.elapsed();
        if report.outcome != RunOutcome::Completed {
            anyhow::bail!("benchmark turn failed: {:?}", report.failure_artifact);
        }
        rounds += report.provider_attempt_timeline.attempts.len();
    }
    Ok((rounds, elapsed))
}

/// ExecCommand `true` through the tool entry point: task record, process
/// spawn, supervision, terminal record, result envelope; under a holder
/// (as a daemon runs commands) and as the runtime's own child.
async fn exec_bench(dir: &Path) -> anyhow::Result<()> {
    let held = exec_samples(dir, "exec-held", std::env::current_exe().ok()).await?;
    let direct = exec_samples(dir, "exec", None).await?;
    println!(
        "exec_command.true  {EXEC_RUNS} runs, spawn to result: held p50 {}, p99 {}, max {}; \
         direct p50 {}, p99 {}",
        millis(percentile(&held, 0.5)),
        millis(percentile(&held, 0.99)),
        millis(held.last().copied().unwrap_or_default()),
        millis(percentile(&direct, 0.5)),
        millis(percentile(&direct, 0.99)),
    );
    Ok(())
}

/// Sorted latencies of ExecCommand `true`, run under `holder` (or none).
async fn exec_samples(
    dir: &Path,
    name: &str,
    holder: Option<std::path::PathBuf>,
) -> anyhow::Result<Vec<Duration>> {
    let scripted: Arc<dyn Provider> = Arc::new(
        crate::runtime::provider::scripted::ScriptedProvider::new(Vec::new()),
    );
    let options = StoreOptions {
        durability: Durability::Immediate,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir.join(format!("{name}.redb")), options)?;
    let mut config = HostConfig::new(dir.join(name), Arc::new(move |_| Arc::clone(&scripted)));
    config.holder = holder;
    let host = RuntimeHost::start(store, config).await?;
    host.create_agent("bench").await?;
    let call = ToolCall {
        id: "call_exec".into(),
        name: "ExecCommand".into(),
        arguments: json!({"cmd": "true", "duplicate_policy": "start_new"}),
        malformed_arguments: None,
    };
    let mut samples = Vec::with_capacity(EXEC_RUNS);
    for _ in 0..EXEC_RUNS {
        let env = ToolEnv {
            host: host.inner(),
            agent_id: "bench",
            message_id: "msg_bench",
            turn_work_item_id: None,
            round_text: "",
            granted: false,
            approved: None,
        };
        let t = Instant::now();
        let mut outcome = tools::execute(&env, &call, None).await;
        crate::runtime::tool_outcome::finish(&mut outcome, &call.name);
        samples.push(t.elapsed());
        if outcome.is_error || outcome.content["disposition"] != "completed" {
            anyhow::bail!("ExecCommand true did not complete: {}", outcome.content);
        }
    }
    stop_host(host).await?;
    samples.sort();
    Ok(samples)
}
