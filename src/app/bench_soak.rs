//! `holon debug bench soak --secs N`: memory under sustained load. A
//! runtime served on a real socket admits prompts at a steady rate (each a
//! turn whose provider fails at once: the cheapest turn that still writes
//! everything a turn writes, failure brief included) while four
//! clients watch: two subscribers that read, one that subscribes and never
//! reads, and one that reconnects in a loop. Every 10 s it prints the
//! process RSS: bounded buffers and caches make the curve level off.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::bench_socket::{rss_kib, Served};
use crate::model::message::Priority;
use crate::protocol::{Request, RuntimeClient};
use crate::ui::client::SocketClient;

/// Prompts per second.
const RATE: u64 = 50;

/// A provider that fails every round at once and keeps nothing (the
/// scripted test provider records every request, which would be the
/// benchmark's own leak).
struct Failing;

impl crate::runtime::provider::Provider for Failing {
    fn model_ref(&self) -> String {
        "soak/none".into()
    }

    fn round<'a>(
        &'a self,
        _request: &'a crate::runtime::provider::ProviderRequest,
        _progress: &'a (dyn Fn(crate::runtime::provider::ProviderProgress) + Send + Sync),
    ) -> crate::model::BoxFuture<'a, crate::runtime::provider::ProviderOutcome> {
        use crate::model::usage::AttemptOutcome;
        use crate::model::usage::ProviderAttemptTimeline;
        use crate::runtime::provider::{not_configured_failure, ProviderOutcome};
        Box::pin(async move {
            let failure = not_configured_failure();
            let kind = failure.kind;
            ProviderOutcome {
                result: Err(failure),
                timeline: ProviderAttemptTimeline::single_attempt(
                    "soak/none",
                    AttemptOutcome::FailFastAborted,
                    Some(kind),
                    None,
                ),
            }
        })
    }
}

pub async fn run(dir: &Path, secs: u64) -> anyhow::Result<()> {
    let served = Served::start(dir, "soak", Arc::new(Failing)).await?;
    let (host, path) = (&served.host, served.path.clone());
    let store_file = dir.join("soak.redb");
    let file_at_start = std::fs::metadata(&store_file)?.len();
    // Two subscribers that keep up.
    let mut watchers = Vec::new();
    for _ in 0..2 {
        let c = SocketClient::connect(&path).await?;
        watchers.push(tokio::spawn(async move {
            let mut from = 1;
            loop {
                let Ok(mut sub) = c.subscribe("main", from).await else {
                    return;
                };
                while let Some(item) = sub.next().await {
                    if let crate::protocol::SubscriptionItem::Event(e) = item {
                        from = e.event_seq + 1;
                    }
                }
            }
        }));
    }
    // One that subscribes and never reads.
    let mut deaf = tokio::net::UnixStream::connect(&path).await?;
    deaf.write_all(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\",\"params\":{\"agent_id\":\"main\"}}\n",
    )
    .await?;
    // One that reconnects in a loop.
    let p = path.clone();
    watchers.push(tokio::spawn(async move {
        loop {
            if let Ok(c) = SocketClient::connect(&p).await {
                if let Ok(mut sub) = c.subscribe("main", 1).await {
                    for _ in 0..50 {
                        if sub.next().await.is_none() {
                            break;
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }));

    let sender = SocketClient::connect(&path).await?;
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / RATE));
    let mut next_report = Duration::ZERO;
    let mut sent = 0u64;
    let mut curve = Vec::new();
    println!(
        "soak              {RATE} prompts/s for {secs} s, 2 reading subscribers, 1 that never reads, 1 reconnecting"
    );
    while start.elapsed() < Duration::from_secs(secs) {
        tick.tick().await;
        sender
            .call(Request::PromptSubmit {
                agent_id: "main".into(),
                text: format!("soak prompt {sent}"),
                priority: Priority::Normal,
                request_id: None,
            })
            .await?;
        sent += 1;
        if start.elapsed() >= next_report {
            let rss = rss_kib("self") / 1024;
            let events = host.store().read()?.last_seq("main")?;
            println!(
                "soak.rss          t={:>4} s  RSS {rss:>4} MiB  prompts {sent:>6}  events {events:>8}",
                next_report.as_secs()
            );
            curve.push(rss);
            next_report += Duration::from_secs(10);
        }
    }
    let first_half = curve.get(curve.len() / 2).copied().unwrap_or(0);
    let file_running = std::fs::metadata(&store_file)?.len();
    println!(
        "soak.summary      RSS {} MiB at 10 s, {} MiB at half time, {} MiB at the end; store {} MiB",
        curve.get(1).copied().unwrap_or(0),
        first_half,
        rss_kib("self") / 1024,
        file_running / (1024 * 1024)
    );
    for w in watchers {
        w.abort();
    }
    drop(deaf);
    served.close().await?;
    disk_per_prompt(&store_file, file_at_start, file_running, sent)
}

/// What each prompt (and its failed turn) left in the store: the file's
/// growth since the start while the runtime ran, as it left the file (a
/// clean close also writes redb's allocator state, a fixed ~2-3 MB that
/// the next open frees) and after compaction, the records' own bytes, and
/// the B-tree pages' overhead and unused space.
fn disk_per_prompt(
    path: &Path,
    file_at_start: u64,
    file_running: u64,
    prompts: u64,
) -> anyhow::Result<()> {
    let stats = crate::store::compact::stats(path)?;
    let stored: u64 = stats.tables.iter().map(|t| t.stored_bytes).sum();
    let overhead: u64 = stats
        .tables
        .iter()
        .map(|t| t.metadata_bytes + t.fragmented_bytes)
        .sum();
    let compacted = crate::store::compact::compact(path)?;
    let per = |bytes: u64| bytes as f64 / 1000.0 / prompts.max(1) as f64;
    println!(
        "soak.disk         {prompts} prompts: the file grew {:.1} KB per prompt while running, {:.1} KB as left, \
         {:.1} KB compacted (from {:.1} MB at the start); records {:.1} KB stored per prompt, B-tree overhead and \
         unused page space {:.1} KB",
        per(file_running.saturating_sub(file_at_start)),
        per(compacted.bytes_before.saturating_sub(file_at_start)),
        per(compacted.bytes_after.saturating_sub(file_at_start)),
        file_at_start as f64 / 1e6,
        per(stored),
        per(overhead),
    );
    Ok(())
}
