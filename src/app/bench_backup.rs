//! `holon debug bench backup`: `holon store backup` of a large store (1,000
//! agents, 1,000,000 events) while 8 writers admit prompts, against the
//! same admissions with no backup running: the backup's time and size, and
//! what it does to admission latency (each admission is a durable commit).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bench::{millis, percentile};
use crate::model::event::NewEvent;
use crate::model::event::Provenance;
use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::runtime::admission::{admit, ensure_agent};
use crate::store::{Store, StoreOptions};

const AGENTS: usize = 1_000;
const EVENTS_PER_AGENT: u64 = 1_000;
const WRITERS: usize = 8;

/// A store of `AGENTS` agents with `EVENTS_PER_AGENT` events each (written
/// without fsync: only its contents matter here).
async fn build(path: &Path) -> anyhow::Result<()> {
    let store = Store::open(
        path,
        StoreOptions {
            durability: redb::Durability::None,
            ..StoreOptions::default()
        },
    )?;
    for a in 0..AGENTS {
        ensure_agent(&store, &format!("agent-{a:04}")).await?;
    }
    // Ten agents' events per commit.
    for chunk in 0..AGENTS / 10 {
        store
            .write(move |tx| {
                for a in chunk * 10..chunk * 10 + 10 {
                    let id = format!("agent-{a:04}");
                    for n in 1..EVENTS_PER_AGENT {
                        tx.append_event(NewEvent {
                            agent_id: id.clone(),
                            kind: "brief_created",
                            provenance: Provenance::default(),
                            payload: serde_json::json!({
                                "brief_id": format!("brief_{a}_{n}"),
                                "kind": "progress",
                                "text": format!("step {n} of the plan for agent {a}: built and tested"),
                            }),
                        })?;
                    }
                }
                Ok(())
            })
            .await?;
    }
    store.close().await?;
    Ok(())
}

/// Admit prompts from `WRITERS` tasks until `stop`; sorted latencies.
async fn admit_until(store: &Store, stop: Arc<AtomicBool>) -> anyhow::Result<Vec<Duration>> {
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..WRITERS {
        let (store, stop) = (store.clone(), Arc::clone(&stop));
        tasks.spawn(async move {
            let mut lat = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                admit(
                    &store,
                    AdmissionRequest::operator_prompt(
                        &format!("agent-{w:04}"),
                        &format!("prompt {n} from writer {w}"),
                        Priority::Normal,
                        DeliverySurface::CliPrompt,
                    ),
                )
                .await?;
                lat.push(t.elapsed());
                n += 1;
            }
            anyhow::Ok(lat)
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    all.sort();
    Ok(all)
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join("backup.redb");
    let _ = std::fs::remove_file(&path);
    let t = Instant::now();
    build(&path).await?;
    let file = std::fs::metadata(&path)?.len();
    println!(
        "backup.setup      {AGENTS} agents, {} events: {:.1} MB, written in {:.1} s",
        AGENTS as u64 * EVENTS_PER_AGENT,
        file as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let store = Store::open(&path, StoreOptions::default())?;

    // Admissions alone, for as long as a backup takes below (first a
    // fixed 5 s).
    let stop = Arc::new(AtomicBool::new(false));
    let timer = {
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            stop.store(true, Ordering::Relaxed);
        })
    };
    let alone = admit_until(&store, stop).await?;
    timer.await?;

    let stop = Arc::new(AtomicBool::new(false));
    let backing_up = {
        let (store, stop) = (store.clone(), Arc::clone(&stop));
        tokio::task::spawn_blocking(move || {
            let r = store.backup_rotated(1);
            stop.store(true, Ordering::Relaxed);
            r
        })
    };
    let during = admit_until(&store, stop).await?;
    let report = backing_up.await??;
    println!(
        "backup.copy       {} tables, {} rows: {:.1} MB copy in {:.2} s while {WRITERS} writers admitted prompts",
        report.tables,
        report.rows,
        report.bytes as f64 / 1e6,
        report.millis as f64 / 1e3
    );
    let line = |what: &str, lat: &[Duration], secs: f64| {
        println!(
            "backup.admit      {what}: {} admissions ({:.0}/s), ack p50 {} p99 {} max {}",
            lat.len(),
            lat.len() as f64 / secs,
            millis(percentile(lat, 0.5)),
            millis(percentile(lat, 0.99)),
            millis(lat.last().copied().unwrap_or_default()),
        )
    };
    line("no backup      ", &alone, 5.0);
    line("during a backup", &during, report.millis as f64 / 1e3);
    store.close().await?;
    let _ = std::fs::remove_file(&report.path);
    Ok(())
}
