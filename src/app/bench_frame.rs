//! `holon debug bench frame`: what the prompt frame costs and what a
//! provider's prefix cache can make of it. The frame a round builds for an
//! agent with 100 open work items and 1,000 memory entries (p50, and the
//! share of it the cache identity takes); then a 12-turn conversation
//! (each turn a command round of ~2.8 KB of output and an answer of
//! ~600 characters, a work item added before
//! each, which also wakes the agent for a turn of its own) against a stub on 127.0.0.1 that caches prefixes as
//! OpenAI's Responses API does (whole 128-token blocks of the longest
//! prefix it saw before, from 1,024 tokens): the share of input tokens it
//! reports cached, as sent (turn state after the conversation) and as it
//! would be with the turn state in the instructions.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holon_stub::{canned, Canned, Responder, StubServer};
use serde_json::{json, Value};

use super::bench::{millis, percentile};
use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::protocol::views::ControlAction;
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::provider::registry::build_chain;
use crate::runtime::provider::registry::ProviderEndpointConfig;
use crate::runtime::provider::retry::RetryPolicy;
use crate::runtime::provider::Provider;
use crate::store::{Store, StoreOptions};

const TURNS: usize = 12;

/// A prefix cache as OpenAI's: what each request shares with the longest
/// matching earlier one, in whole 128-token blocks, from 1,024 tokens.
#[derive(Default)]
struct PrefixCache {
    seen: Vec<String>,
}

impl PrefixCache {
    /// (input tokens, cached tokens) of `text`, then remember it.
    fn take(&mut self, text: String) -> (u64, u64) {
        let shared = self
            .seen
            .iter()
            .map(|s| {
                s.bytes()
                    .zip(text.bytes())
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        let tokens = |bytes: usize| (bytes / 4) as u64;
        let cached = match tokens(shared) {
            t if t >= 1024 => t / 128 * 128,
            _ => 0,
        };
        self.seen.push(text);
        (tokens(self.seen.last().map_or(0, String::len)), cached)
    }
}

/// The request as a provider reads it for caching: tools, instructions,
/// then the input in order.
fn cache_text(tools: &Value, instructions: &str, input: &[Value]) -> String {
    let mut s = tools.to_string();
    s.push_str(instructions);
    for item in input {
        s.push_str(&item.to_string());
    }
    s
}

/// The same request with the turn state (the last input, when it is one)
/// moved to the end of the instructions: where it was sent before.
fn state_in_instructions(tools: &Value, instructions: &str, input: &[Value]) -> String {
    let is_state = |v: &Value| {
        v["role"] == "user"
            && v["content"][0]["text"]
                .as_str()
                .is_some_and(crate::runtime::provider::wire::is_turn_state)
    };
    match input.split_last() {
        Some((last, rest)) if is_state(last) => {
            let text = last["content"][0]["text"].as_str().unwrap_or_default();
            cache_text(tools, &format!("{instructions}\n\n{text}"), rest)
        }
        _ => cache_text(tools, instructions, input),
    }
}

struct Caches {
    sent: PrefixCache,
    before: PrefixCache,
    before_input: u64,
    before_cached: u64,
}

async fn stub(caches: Arc<Mutex<Caches>>, served: Arc<AtomicU64>) -> StubServer {
    let responder: Responder = Arc::new(move |body: &Value| {
        let n = served.fetch_add(1, Ordering::SeqCst);
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let instructions = body["instructions"].as_str().unwrap_or_default();
        let tools = &body["tools"];
        let (tokens, cached) = {
            let mut c = caches.lock().unwrap_or_else(|p| p.into_inner());
            let (t, k) = c.sent.take(cache_text(tools, instructions, &input));
            let (bt, bk) = c
                .before
                .take(state_in_instructions(tools, instructions, &input));
            c.before_input += bt;
            c.before_cached += bk;
            (t, k)
        };
        // New input (an operator prompt, a tick) gets a command round;
        // the command's result, the answer.
        let is_state = |v: &Value| {
            v["content"][0]["text"]
                .as_str()
                .is_some_and(crate::runtime::provider::wire::is_turn_state)
        };
        let answered = input
            .iter()
            .rev()
            .find(|v| !is_state(v))
            .is_some_and(|v| v["type"] == "function_call_output");
        let mut answer = match answered {
            false => canned::responses_json(
                "",
                &[(
                    &format!("call_{n}"),
                    "ExecCommand",
                    r#"{"cmd":"seq 1 600"}"#,
                )],
            ),
            true => canned::responses_json(
                &format!(
                    "answer {n}: {}",
                    "the numbers ran from 1 to 600 as asked. ".repeat(15)
                ),
                &[],
            ),
        };
        answer["usage"] = json!({
            "input_tokens": tokens, "output_tokens": 5, "total_tokens": tokens + 5,
            "input_tokens_details": {"cached_tokens": cached},
        });
        Canned::json(200, answer)
    });
    StubServer::serving(responder).await
}

/// A provider chain to the stub at `base`: `wire`, answers whole, a
/// `window`-token context (the benchmarks' one endpoint, `bench/model`).
pub(super) fn stub_chain(base: &str, wire: &str, window: u64) -> anyhow::Result<Arc<dyn Provider>> {
    stub_chain_for(base, wire, window, "model")
}

/// As `stub_chain`, for the model named `model` (`bench/MODEL`).
pub(super) fn stub_chain_for(
    base: &str,
    wire: &str,
    window: u64,
    model: &str,
) -> anyhow::Result<Arc<dyn Provider>> {
    let endpoint: ProviderEndpointConfig = toml::from_str(&format!(
        "base_url = \"{base}/v1\"\nwire = \"{wire}\"\nstreaming = \"off\"\n\
         context_window = {window}\n"
    ))?;
    let endpoints = BTreeMap::from([("bench".to_owned(), endpoint)]);
    let chain = build_chain(
        &format!("bench/{model}"),
        &[],
        &BTreeMap::new(),
        &endpoints,
        RetryPolicy::default(),
    )
    .map_err(|f| anyhow::anyhow!(f.artifact.summary))?;
    Ok(Arc::new(chain))
}

fn chain(base: &str) -> anyhow::Result<Arc<dyn Provider>> {
    stub_chain(base, "openai_responses", 1_000_000)
}

async fn frame_bench(dir: &Path) -> anyhow::Result<()> {
    let provider = chain("http://127.0.0.1:9")?;
    let store = Store::open(&dir.join("frame.redb"), StoreOptions::default())?;
    let config = HostConfig::new(dir.join("frame"), Arc::new(move |_| Arc::clone(&provider)));
    let host = RuntimeHost::start(store, config).await?;
    host.create_agent("main").await?;
    host.control("main", ControlAction::Pause).await?;
    for i in 0..100 {
        let req = serde_json::from_value(json!({
            "objective": format!("work item {i}: port module {i} and keep its tests green"),
            "todo_list": [{"text": "read it"}, {"text": "port it"}, {"text": "test it"}],
        }))?;
        host.create_work_item("main", req).await?;
    }
    let memory = dir.join("frame/agents/main/memory/self.md");
    let mut text = String::from("# Self\n\n");
    for i in 0..1000 {
        text.push_str(&format!(
            "- fact {i}: the build of crate {i} needs feature x{i}\n"
        ));
    }
    std::fs::write(&memory, text)?;
    let (mut builds, mut cache) = host.bench_frame_builds("main", 200).await?;
    builds.sort();
    cache.sort();
    println!(
        "frame.build       100 open work items, 1,000 memory entries: build p50 {} p95 {}; of which system blocks and cache identity p50 {}",
        millis(percentile(&builds, 0.5)),
        millis(percentile(&builds, 0.95)),
        millis(percentile(&cache, 0.5)),
    );
    host.shutdown().await;
    Ok(())
}

async fn cache_bench(dir: &Path) -> anyhow::Result<()> {
    let caches = Arc::new(Mutex::new(Caches {
        sent: PrefixCache::default(),
        before: PrefixCache::default(),
        before_input: 0,
        before_cached: 0,
    }));
    let served = Arc::new(AtomicU64::new(0));
    let stub = stub(Arc::clone(&caches), Arc::clone(&served)).await;
    let provider = chain(stub.base())?;
    let store = Store::open(&dir.join("cache.redb"), StoreOptions::default())?;
    let config = HostConfig::new(dir.join("cache"), Arc::new(move |_| Arc::clone(&provider)));
    let host = RuntimeHost::start(store, config).await?;
    host.create_agent("main").await?;
    for turn in 0..TURNS {
        // The work queue changes between turns, as an operator's would.
        let req = serde_json::from_value(json!({ "objective": format!("follow-up {turn}") }))?;
        host.create_work_item("main", req).await?;
        host.submit(AdmissionRequest::operator_prompt(
            "main",
            &format!("step {turn}: run the command, then answer"),
            Priority::Normal,
            DeliverySurface::CliPrompt,
        ))
        .await?;
        tokio::time::timeout(Duration::from_secs(30), host.until_idle())
            .await
            .map_err(|_| {
                let kinds: Vec<String> = host
                    .store()
                    .read()
                    .and_then(|rx| rx.events("main", 1, 100_000))
                    .unwrap_or_default()
                    .iter()
                    .map(|e| e.kind.clone())
                    .collect();
                anyhow::anyhow!("turn {turn} did not end: {kinds:?}")
            })?;
    }
    let (mut input, mut cached, mut rounds) = (0u64, 0u64, 0u64);
    for e in host.store().read()?.events("main", 1, 100_000)? {
        if e.kind == "provider_round_completed" {
            rounds += 1;
            input += e.payload["token_usage"]["input_tokens"]
                .as_u64()
                .unwrap_or(0);
            cached += e.payload["token_usage"]["cached_input_tokens"]
                .as_u64()
                .unwrap_or(0);
        }
    }
    let (before_cached, before_input) = {
        let c = caches.lock().unwrap_or_else(|p| p.into_inner());
        (c.before_cached, c.before_input)
    };
    let share = |k: u64, n: u64| 100.0 * k as f64 / n.max(1) as f64;
    println!(
        "frame.cache       {TURNS} prompts ({rounds} rounds: a command, then the answer; the work queue changing between turns) against a prefix cache: \
         {:.1}% of {} input tokens cached (turn state after the conversation); {:.1}% with it in the instructions",
        share(cached, input),
        input,
        share(before_cached, before_input),
    );
    host.shutdown().await;
    Ok(())
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    frame_bench(dir).await?;
    cache_bench(dir).await
}
