//! Delegation benchmarks for `holon debug bench agents`, against the
//! shared stub provider on 127.0.0.1 (keep-alive HTTP/1.1, Chat
//! Completions, answering at once):
//!
//! - SpawnAgent to the child's first provider request (p50/p99): the
//!   child's home from the template, the one transaction that creates the
//!   child, its supervising task and its first message, the actor's start
//!   and its first prompt frame;
//! - 50 children under one parent at once, each running ten rounds (an
//!   AgentGet tool call each) then its report: wall time, and the process
//!   CPU per child round with the provider chain's own CPU per round (the
//!   same stub, measured alone) subtracted;
//! - memory per idle child: RSS growth with 50 children alive and waiting
//!   (each recorded an external wait), divided by 50.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use holon_stub::{Canned, Responder, StubServer};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::bench::{millis, percentile};
use super::bench_socket::rss_kib;
use super::bench_turns::{completion, results_since_user};
use crate::model::agent::ProfilePreset;
use crate::model::task::ChildWorkspaceMode;
use crate::runtime::agents::child_ops::SpawnRequest;
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::provider::retry::ProviderChain;
use crate::runtime::provider::{Provider, ProviderOutcome, ProviderProgress, ProviderRequest};
use crate::runtime::settings::limits::AgentLimits;
use crate::store::{Store, StoreOptions};

const SPAWNS: usize = 100;
const CHILDREN: usize = 50;
const CHILD_ROUNDS: usize = 10;

/// Chat-completions answer: idle children record a wait; round children
/// call AgentGet until they hold `CHILD_ROUNDS - 1` results; the rest
/// answer at once.
fn answer(request: &Value) -> Value {
    let text = request.to_string();
    let results = results_since_user(request);
    let call = |name: &str, args: Value| {
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{results}"), "type": "function",
             "function": {"name": name, "arguments": args.to_string()}}
        ]})
    };
    completion(if text.contains("IDLE-CHILD") && results == 0 {
        call(
            "RecordExternalWait",
            json!({"description": "the bench", "source": "bench", "external_ref": "never"}),
        )
    } else if text.contains("ROUNDS-CHILD") && results + 1 < CHILD_ROUNDS {
        call("AgentGet", json!({}))
    } else {
        json!({"role": "assistant", "content": "done"})
    })
}

/// The chain, noting each agent's first request.
struct FirstRequest {
    chain: Arc<ProviderChain>,
    agent: String,
    seen: Arc<Mutex<HashSet<String>>>,
    first: mpsc::UnboundedSender<(String, Instant)>,
}

impl Provider for FirstRequest {
    fn model_ref(&self) -> String {
        self.chain.model_ref()
    }

    fn round<'a>(
        &'a self,
        request: &'a ProviderRequest,
        progress: &'a (dyn Fn(ProviderProgress) + Send + Sync),
    ) -> BoxFuture<'a, ProviderOutcome> {
        let new = self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(self.agent.clone());
        if new {
            let _ = self.first.send((self.agent.clone(), Instant::now()));
        }
        self.chain.round(request, progress)
    }
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn spawn(text: &str) -> SpawnRequest {
    SpawnRequest {
        preset: ProfilePreset::PrivateChild,
        initial_message: Some(text.to_owned()),
        agent_id: None,
        workspace_mode: ChildWorkspaceMode::Inherit,
        parent_message_id: None,
        work_item_id: None,
    }
}

async fn wait_children_done(host: &RuntimeHost, limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !host.live_children("main")?.is_empty() {
        anyhow::ensure!(Instant::now() < deadline, "children did not finish in time");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let responder: Responder = Arc::new(|request: &Value| Canned::json(200, answer(request)));
    let stub = StubServer::serving(responder).await;
    let chain = Arc::new(super::bench_turns::chain(stub.base())?);
    let (first_tx, mut first_rx) = mpsc::unbounded_channel();
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let source = {
        let (chain, seen) = (Arc::clone(&chain), Arc::clone(&seen));
        move |a: &crate::model::agent::AgentRecord| -> Arc<dyn Provider> {
            Arc::new(FirstRequest {
                chain: Arc::clone(&chain),
                agent: a.id.clone(),
                seen: Arc::clone(&seen),
                first: first_tx.clone(),
            })
        }
    };
    let store = Store::open(&dir.join("agents.redb"), StoreOptions::default())?;
    let mut config = HostConfig::new(dir.join("agents"), Arc::new(source));
    config.agent_limits = AgentLimits {
        max_spawn_depth: 1,
        max_children: 256,
    };
    config.max_rounds = CHILD_ROUNDS as u32 + 5;
    let host = RuntimeHost::start(store, config).await?;
    host.create_agent("main").await?;

    // SpawnAgent to the child's first provider request, one at a time.
    let mut lat = Vec::with_capacity(SPAWNS);
    for _ in 0..SPAWNS {
        let t = Instant::now();
        let s = host.spawn_agent("main", spawn("answer at once")).await?;
        let child = s.child_agent_id.unwrap_or_default();
        loop {
            let (agent, at) = tokio::time::timeout(Duration::from_secs(10), first_rx.recv())
                .await?
                .ok_or_else(|| anyhow::anyhow!("the provider wrapper went away"))?;
            if agent == child {
                lat.push(at - t);
                break;
            }
        }
    }
    wait_children_done(&host, Duration::from_secs(30)).await?;
    lat.sort();
    println!(
        "agents.spawn       SpawnAgent to the child's first provider request, {SPAWNS} children one at a time: \
         p50 {} p99 {}",
        millis(percentile(&lat, 0.5)),
        millis(percentile(&lat, 0.99))
    );

    // The provider chain's own CPU per round against the same stub.
    let probe = ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: "You are Holon.".into(),
        context_blocks: Vec::new(),
        conversation: vec![crate::model::usage::ConversationItem::UserText {
            text: "bench".into(),
        }],
        tools: crate::runtime::tools::specs(),
        max_output_tokens: None,
        prompt_cache_key: None,
        no_reasoning: false,
        response_schema: None,
    };
    let cpu0 = cpu_time();
    for _ in 0..200 {
        let _ = chain.round(&probe, &|_| {}).await;
    }
    let chain_cpu = (cpu_time() - cpu0) / 200;

    // 50 children at once, ten rounds each.
    let (cpu0, t0) = (cpu_time(), Instant::now());
    for n in 0..CHILDREN {
        host.spawn_agent("main", spawn(&format!("ROUNDS-CHILD {n}")))
            .await?;
    }
    wait_children_done(&host, Duration::from_secs(120)).await?;
    let (wall, cpu) = (t0.elapsed(), cpu_time() - cpu0);
    let rounds = (CHILDREN * CHILD_ROUNDS) as u32;
    let per_round = cpu / rounds;
    println!(
        "agents.concurrent  {CHILDREN} children under one parent, {CHILD_ROUNDS} rounds each ({rounds} rounds): \
         wall {} ({:.0} rounds/s); process CPU {:.0} µs per child round, runtime overhead {:.0} µs per round \
         after the provider chain's own {:.0} µs",
        millis(wall),
        f64::from(rounds) / wall.as_secs_f64(),
        per_round.as_secs_f64() * 1e6,
        per_round.saturating_sub(chain_cpu).as_secs_f64() * 1e6,
        chain_cpu.as_secs_f64() * 1e6,
    );

    // Memory per idle child: 50 children alive, each waiting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss0 = rss_kib("self");
    let before = seen.lock().unwrap_or_else(|p| p.into_inner()).len();
    for n in 0..CHILDREN {
        host.spawn_agent("main", spawn(&format!("IDLE-CHILD {n}")))
            .await?;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rx = host.store().read()?;
        let waiting = host
            .live_children("main")?
            .iter()
            .filter(|(c, _)| {
                rx.agent::<crate::model::agent::AgentRecord>(c)
                    .ok()
                    .flatten()
                    .is_some_and(|a| !a.turn_in_progress && a.last_turn_terminal.is_some())
            })
            .count();
        if waiting == CHILDREN {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "idle children did not settle");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss1 = rss_kib("self");
    let after = seen.lock().unwrap_or_else(|p| p.into_inner()).len();
    println!(
        "agents.idle        {CHILDREN} idle children alive ({} first requests): RSS {} -> {} KiB, {:.0} KiB per idle child",
        after - before,
        rss0,
        rss1,
        rss1.saturating_sub(rss0) as f64 / CHILDREN as f64
    );
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    Ok(())
}
