//! The hidden `holon debug append-stress`: appends ledger events as fast as
//! the store acknowledges them and prints each acknowledged sequence, so
//! the crash-durability test can kill the process mid-burst and check that
//! everything acknowledged survived. The benchmarks append the same events.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::Context;
use crate::model::event::{NewEvent, Provenance};

/// The event kind the stress and benchmark writers append.
pub const STRESS_KIND: &str = "debug_append";

/// A ~300-byte payload whose content is a function of `n`, so a reader can
/// tell an intact record from a torn one.
pub fn stress_payload(n: u64) -> serde_json::Value {
    json!({ "n": n, "text": stress_text(n) })
}

pub fn stress_text(n: u64) -> String {
    let mut s = format!("event {n}: ");
    while s.len() < 260 {
        s.push_str(&format!(
            "{:x}",
            n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (s.len() % 32)
        ));
    }
    s.truncate(260);
    s
}

pub(crate) fn stress_event(agent: &str, n: u64) -> NewEvent {
    NewEvent {
        agent_id: agent.to_owned(),
        kind: STRESS_KIND,
        provenance: Provenance::default(),
        payload: stress_payload(n),
    }
}

pub async fn append_stress(
    ctx: &Context,
    in_flight: usize,
    count: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store().await?;
    let agent = ctx.config.default_agent.clone();
    let permits = Arc::new(Semaphore::new(in_flight.max(1)));
    let (acks, mut acked) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let printer = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        while let Some(seq) = acked.blocking_recv() {
            if writeln!(lock, "{seq}").and_then(|()| lock.flush()).is_err() {
                break;
            }
        }
    });
    let mut tasks = JoinSet::new();
    let mut n = 0u64;
    while count.is_none_or(|c| n < c) {
        n += 1;
        let permit = Arc::clone(&permits).acquire_owned().await?;
        let store = store.clone();
        let agent = agent.clone();
        let acks = acks.clone();
        tasks.spawn(async move {
            let result = store
                .write(move |tx| tx.append_event(stress_event(&agent, n)))
                .await;
            drop(permit);
            if let Ok(seq) = result {
                let _ = acks.send(seq);
            }
        });
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    drop(acks);
    printer.await?;
    Ok(ExitCode::SUCCESS)
}
