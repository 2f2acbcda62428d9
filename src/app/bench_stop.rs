//! `holon debug bench stop`: how fast a turn lets go of a model call in
//! flight. The shared stub provider (`holon-stub`) reads each request and
//! never answers (a model that thinks forever); the benchmark starts a turn against it and
//! measures control abort to the durable `turn_terminal`, and runtime
//! shutdown (what `daemon stop`, SIGTERM and console quit do) to its end.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use holon_stub::{Canned, Responder, StubServer};
use redb::Durability;

use super::bench::{millis, percentile};
use super::bench_turns::{chain, start_host};
use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::protocol::views::ControlAction;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::provider::Provider;

const RUNS: usize = 10;

/// A provider endpoint that reads each request and never answers (within
/// the benchmark: an hour); dropped with the benchmark.
async fn silent_stub() -> StubServer {
    let never: Responder = Arc::new(|_: &serde_json::Value| {
        Canned::json(200, serde_json::json!({})).delay(Duration::from_secs(3600))
    });
    StubServer::serving(never).await
}

/// Submit a prompt and wait until its turn has started.
async fn start_turn(host: &RuntimeHost, text: &str) -> anyhow::Result<()> {
    let mut events = host.store().subscribe();
    host.submit(AdmissionRequest::operator_prompt(
        "bench",
        text,
        Priority::Normal,
        DeliverySurface::CliPrompt,
    ))
    .await?;
    wait_for(&mut events, "turn_started").await?;
    // Let the request reach the stub.
    tokio::time::sleep(Duration::from_millis(30)).await;
    Ok(())
}

async fn wait_for(
    events: &mut tokio::sync::broadcast::Receiver<Arc<crate::model::event::EventRecord>>,
    kind: &str,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(e)) if e.kind == kind => return Ok(()),
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(e)) => anyhow::bail!("event stream ended: {e}"),
            Err(_) => anyhow::bail!("no {kind} within 10 s"),
        }
    }
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let stub = silent_stub().await;
    let provider: Arc<dyn Provider> = Arc::new(chain(stub.base())?);
    let mut aborts = Vec::with_capacity(RUNS);
    let mut shutdowns = Vec::with_capacity(RUNS);
    for n in 0..RUNS {
        let name = format!("stop-{n}");
        let host = start_host(dir, &name, Arc::clone(&provider), Durability::Immediate).await?;
        host.create_agent("bench").await?;

        start_turn(&host, "abort me").await?;
        let mut events = host.store().subscribe();
        let t = Instant::now();
        host.control("bench", ControlAction::Abort).await?;
        wait_for(&mut events, "turn_terminal").await?;
        aborts.push(t.elapsed());

        start_turn(&host, "outlive me").await?;
        let t = Instant::now();
        host.shutdown().await;
        shutdowns.push(t.elapsed());
        let store = host.store().clone();
        drop(host);
        store.close().await?;
    }
    aborts.sort();
    shutdowns.sort();
    println!(
        "turn.stop          a model call in flight that never answers, {RUNS} runs: abort to durable \
         turn_terminal p50 {} max {}; runtime shutdown p50 {} max {}",
        millis(percentile(&aborts, 0.5)),
        millis(percentile(&aborts, 1.0)),
        millis(percentile(&shutdowns, 0.5)),
        millis(percentile(&shutdowns, 1.0)),
    );
    Ok(())
}
