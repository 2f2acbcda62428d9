//! `holon debug bench context`: what lasting context costs. The prompt
//! frame a round builds with 100 and with 10,000 transcript entries
//! (compacted, and the uncompacted worst case read up to the cap); the
//! compaction a turn pays when it folds; and MemorySearch over 100,000
//! indexed briefs (rebuild, then search p50/p99).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redb::Durability;
use serde_json::json;

use super::bench::{millis, percentile};
use super::bench_turns::start_host;
use crate::model::agent::AgentRecord;
use crate::model::transcript::TranscriptBody;
use crate::model::transcript::TranscriptEntry;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::provider::scripted::{Scripted, ScriptedProvider};
use crate::runtime::provider::ProviderRequest;
use crate::store::Keyed;

/// Write `n` transcript entries (an input and an answer per turn, ~300
/// bytes each) for `agent`, in batches.
async fn fill_transcript(host: &RuntimeHost, agent: &str, n: usize) -> anyhow::Result<()> {
    for chunk in 0..n.div_ceil(1_000) {
        let a = agent.to_owned();
        let count = (n - chunk * 1_000).min(1_000);
        host.store()
            .write(move |tx| {
                for i in 0..count {
                    let run = format!("run_{chunk}_{}", i / 2);
                    let body = match i % 2 {
                        0 => TranscriptBody::Input {
                            text: format!(
                                "[operator] note {chunk}/{i}: {}",
                                "lorem ipsum ".repeat(20)
                            ),
                        },
                        _ => TranscriptBody::AssistantRound {
                            input_tokens: None,
                            output_tokens: None,
                            round: 1,
                            reasoning: Vec::new(),
                            text: format!("Noted {chunk}/{i}. {}", "dolor sit ".repeat(20)),
                            tool_calls: Vec::new(),
                            token_usage: None,
                            timeline: None,
                        },
                    };
                    let e = TranscriptEntry {
                        id: crate::new_id("tr"),
                        agent_id: a.clone(),
                        run_id: run,
                        message_id: None,
                        ts: tx.now_ts(),
                        body,
                    };
                    tx.put(Keyed::Transcript, &a, &e.id.clone(), &e)?;
                }
                Ok(())
            })
            .await?;
    }
    Ok(())
}

/// Put the agent's compaction boundary `keep` entries before the end, as
/// a compaction would have left it.
async fn set_boundary(host: &RuntimeHost, agent: &str, keep: usize) -> anyhow::Result<()> {
    let all: Vec<TranscriptEntry> = host.store().read()?.list(Keyed::Transcript, agent)?;
    let through = all[all.len() - keep - 1].id.clone();
    let a = agent.to_owned();
    host.store()
        .write(move |tx| {
            let mut rec: AgentRecord = tx
                .get_agent(&a)?
                .unwrap_or_else(|| AgentRecord::new(&a, tx.now_ts()));
            rec.context.compacted_through = Some(through.clone());
            rec.context.epoch = 1;
            tx.put_agent(&a, &rec)
        })
        .await?;
    Ok(())
}

async fn frame_times(host: &RuntimeHost, agent: &str) -> anyhow::Result<(Vec<Duration>, u64)> {
    let mut times = Vec::new();
    let mut tokens = 0;
    for _ in 0..30 {
        let t = Instant::now();
        let p = host.prompt_preview(agent).await?;
        times.push(t.elapsed());
        tokens = p.total_tokens;
    }
    times.sort();
    Ok((times, tokens))
}

async fn frame_bench(dir: &Path) -> anyhow::Result<()> {
    let provider = Arc::new(ScriptedProvider::new(Vec::new()));
    let host = start_host(dir, "ctx-frame", provider, Durability::None).await?;
    for (agent, entries, boundary) in [
        ("h100", 100, None),
        ("h10k", 10_000, Some(100)),
        ("h10k-raw", 10_000, None),
    ] {
        host.create_agent(agent).await?;
        fill_transcript(&host, agent, entries).await?;
        if let Some(keep) = boundary {
            set_boundary(&host, agent, keep).await?;
        }
        let (times, tokens) = frame_times(&host, agent).await?;
        let what = match boundary {
            Some(_) => "compacted, 100 after the boundary",
            None if entries > 2_000 => "never compacted: read up to the 2,000 cap",
            None => "all verbatim",
        };
        println!(
            "context.frame     {entries:>6} transcript entries ({what}): frame build p50 {} p95 {} (~{tokens} tokens)",
            millis(percentile(&times, 0.5)),
            millis(percentile(&times, 0.95)),
        );
    }
    host.shutdown().await;
    Ok(())
}

async fn compaction_bench(dir: &Path) -> anyhow::Result<()> {
    let summariser = Scripted::With(Arc::new(|r: &ProviderRequest| {
        if r.system_prompt
            .starts_with("You maintain the working summary")
        {
            Scripted::text("The operator sent numbered notes; each was acknowledged.")
        } else {
            Scripted::text("Noted.")
        }
    }));
    let provider =
        Arc::new(ScriptedProvider::new(vec![summariser; 400]).with_context_window(8_192));
    let host = start_host(dir, "ctx-compact", provider, Durability::Immediate).await?;
    host.create_agent("c").await?;
    for i in 0..60 {
        let text = format!("note {i}: {}", "lorem ipsum ".repeat(250));
        let req = crate::model::message::AdmissionRequest::operator_prompt(
            "c",
            &text,
            crate::model::message::Priority::Normal,
            crate::model::message::DeliverySurface::CliPrompt,
        );
        host.submit(req).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let evs = host
            .store()
            .read()?
            .events_of_kind("c", "turn_terminal", 1, 1_000)?;
        if evs.len() >= 60 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rx = host.store().read()?;
    let ms = |e: &crate::model::event::EventRecord, k: &str| e.payload[k].as_f64().unwrap_or(0.0);
    let compactions = rx.events_of_kind("c", "context_compacted", 1, 1_000)?;
    let turns = rx.events_of_kind("c", "turn_terminal", 1, 1_000)?;
    let mut c: Vec<Duration> = compactions
        .iter()
        .map(|e| Duration::from_secs_f64(ms(e, "duration_ms") / 1e3))
        .collect();
    let mut t: Vec<Duration> = turns
        .iter()
        .map(|e| Duration::from_secs_f64(ms(e, "duration_ms") / 1e3))
        .collect();
    c.sort();
    t.sort();
    println!(
        "context.compact   60 prompts of 3 KB in an 8k window: {} compactions, each p50 {} p95 {} (plan, summary from an instant model, commit); turns p50 {}",
        c.len(),
        millis(percentile(&c, 0.5)),
        millis(percentile(&c, 0.95)),
        millis(percentile(&t, 0.5)),
    );
    drop(rx);
    host.shutdown().await;
    Ok(())
}

async fn search_bench(dir: &Path) -> anyhow::Result<()> {
    let provider = Arc::new(ScriptedProvider::new(Vec::new()));
    let host = start_host(dir, "ctx-search", provider, Durability::None).await?;
    host.create_agent("m").await?;
    const WORDS: [&str; 16] = [
        "deploy",
        "staging",
        "parser",
        "migration",
        "flaky",
        "websocket",
        "release",
        "tokio",
        "benchmark",
        "上下文",
        "压缩",
        "cache",
        "rotation",
        "runbook",
        "latency",
        "budget",
    ];
    let records = 100_000usize;
    for chunk in 0..records / 5_000 {
        host.store()
            .write(move |tx| {
                for i in 0..5_000 {
                    let n = chunk * 5_000 + i;
                    let id = crate::new_id("brief");
                    let text = format!(
                        "Report {n}: worked on {} and {}; {} is next. {}",
                        WORDS[n % 16],
                        WORDS[(n / 16) % 16],
                        WORDS[(n / 256) % 16],
                        "Details follow in the usual form. ".repeat(4)
                    );
                    let b = json!({"id": id, "agent_id": "m", "kind": "result", "created_at": tx.now_ts(),
                                   "text": text, "workspace_id": "agent_home"});
                    tx.append_event(crate::model::event::NewEvent {
                        agent_id: "m".into(),
                        kind: crate::protocol::events::EventKind::BriefCreated.as_str(),
                        provenance: crate::model::event::Provenance::default(),
                        payload: json!({ "brief": b, "visibility": "turn_result" }),
                    })?;
                }
                Ok(())
            })
            .await?;
    }
    let home = dir.join("ctx-search").join("agents").join("m");
    let store = host.store().clone();
    let h = home.clone();
    let (rebuild, report) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let rx = store.read()?;
        let t = Instant::now();
        let (_, report) =
            crate::runtime::recall::open_synced(&rx, &h, "m").map_err(anyhow::Error::msg)?;
        Ok((t.elapsed(), report))
    })
    .await??;
    println!(
        "memory.rebuild    {} documents indexed from nothing in {:.2} s",
        report.documents,
        rebuild.as_secs_f64()
    );
    let store = host.store().clone();
    let times = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::new();
        for i in 0..200 {
            let q = format!("{} {}", WORDS[i % 16], WORDS[(i * 7) % 16]);
            let rx = store.read()?;
            let t = Instant::now();
            let (hits, _) =
                crate::runtime::recall::search(&rx, &home, "m", &q, Some("agent_home"), 8)
                    .map_err(anyhow::Error::msg)?;
            times.push(t.elapsed());
            anyhow::ensure!(!hits.is_empty(), "no hits for {q}");
        }
        times.sort();
        let mut rare = Vec::new();
        for i in 0..100 {
            let q = format!("report {} {}", (i * 997) % records, WORDS[i % 16]);
            let rx = store.read()?;
            let t = Instant::now();
            let (hits, _) = crate::runtime::recall::search(&rx, &home, "m", &q, Some("agent_home"), 8)
                .map_err(anyhow::Error::msg)?;
            rare.push(t.elapsed());
            anyhow::ensure!(!hits.is_empty(), "no hits for {q}");
        }
        rare.sort();
        println!(
            "memory.search     a selective query (a report number and a word) over {records}: p50 {} p99 {}",
            millis(percentile(&rare, 0.5)),
            millis(percentile(&rare, 0.99)),
        );
        let mut sync = Vec::new();
        for _ in 0..50 {
            let rx = store.read()?;
            let t = Instant::now();
            crate::runtime::recall::open_synced(&rx, &home, "m").map_err(anyhow::Error::msg)?;
            sync.push(t.elapsed());
        }
        sync.sort();
        println!(
            "memory.sync       the freshness check alone (open, cursors, hashes): p50 {}",
            millis(percentile(&sync, 0.5))
        );
        Ok(times)
    })
    .await??;
    println!(
        "memory.search     MemorySearch over {records} briefs (sync check + FTS5 + snippets, 8 results): p50 {} p99 {}",
        millis(percentile(&times, 0.5)),
        millis(percentile(&times, 0.99)),
    );
    host.shutdown().await;
    Ok(())
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    frame_bench(dir).await?;
    compaction_bench(dir).await?;
    search_bench(dir).await
}
