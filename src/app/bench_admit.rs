//! `holon debug bench admit`: prompt admissions over the real control
//! socket. Eight clients, each keeping a window of `prompt.submit`
//! requests in flight on its one connection; prompts/s and the latency of
//! each acknowledgement (durable: the admission's commit), first with the
//! agent paused (admission alone), then while it runs turns.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bench::{millis, percentile};
use super::bench_socket::Served;
use crate::model::message::Priority;
use crate::protocol::{ControlAction, Request, RuntimeClient};
use crate::runtime::provider::scripted::{Scripted, ScriptedProvider};
use crate::ui::client::SocketClient;

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 2_000;

/// Submit `PER_CLIENT` prompts from each of `CLIENTS` connections, `window`
/// in flight per connection, each to the next of `agents` in turn.
/// Returns (prompts/s, sorted latencies).
pub(super) async fn drive(
    path: &Path,
    window: usize,
    agents: &[String],
) -> anyhow::Result<(f64, Vec<Duration>)> {
    let agents: Arc<[String]> = agents.into();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(Arc::new(SocketClient::connect(path).await?));
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        for w in 0..window {
            let client = Arc::clone(client);
            let agents = Arc::clone(&agents);
            tasks.spawn(async move {
                let mut lat = Vec::new();
                let mut n = w;
                while n < PER_CLIENT {
                    let t = Instant::now();
                    client
                        .call(Request::PromptSubmit {
                            // Clients interleaved: each moment's prompts
                            // go to different agents.
                            agent_id: agents[(n * CLIENTS + c) % agents.len()].clone(),
                            text: format!("prompt {c}/{n}"),
                            priority: Priority::Normal,
                            request_id: None,
                        })
                        .await?;
                    lat.push(t.elapsed());
                    n += window;
                }
                anyhow::Ok(lat)
            });
        }
    }
    let mut all = Vec::with_capacity(CLIENTS * PER_CLIENT);
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    all.sort();
    Ok((rate, all))
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    // Turns that answer at once, so "busy" means the runtime's own work.
    let answers = (0..200_000).map(|_| Scripted::text("ok"));
    let provider = Arc::new(ScriptedProvider::new(answers));
    let served = Served::start(dir, "admit", provider).await?;
    let main = ["main".to_owned()];
    let control = SocketClient::connect(&served.path).await?;
    control
        .call(Request::Control {
            agent_id: "main".into(),
            action: ControlAction::Pause,
        })
        .await?;
    for window in [1usize, 16] {
        let (rate, lat) = drive(&served.path, window, &main).await?;
        println!(
            "admit.idle        {CLIENTS} clients x {window} in flight, agent paused: {rate:.0} prompts/s, ack p50 {} p99 {}",
            millis(percentile(&lat, 0.5)),
            millis(percentile(&lat, 0.99)),
        );
    }
    control
        .call(Request::Control {
            agent_id: "main".into(),
            action: ControlAction::Resume,
        })
        .await?;
    // Resumed with the idle runs' prompts queued: how soon work starts.
    let t = Instant::now();
    let queued = CLIENTS * PER_CLIENT * 2;
    loop {
        let n = served
            .store
            .read()?
            .events_of_kind("main", "turn_started", 1, 10)?
            .len();
        if n > 0 || t.elapsed() > Duration::from_secs(60) {
            println!(
                "admit.resume      resumed with {queued} prompts queued: first turn after {}",
                millis(t.elapsed())
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (rate, lat) = drive(&served.path, 16, &main).await?;
    println!(
        "admit.busy        {CLIENTS} clients x 16 in flight, agent running turns: {rate:.0} prompts/s, ack p50 {} p99 {}",
        millis(percentile(&lat, 0.5)),
        millis(percentile(&lat, 0.99)),
    );
    let rx = served.store.read()?;
    let count = |k: &str| rx.events_of_kind("main", k, 1, 1_000_000).map(|v| v.len());
    println!(
        "admit.busy        meanwhile: {} turns started, {} completed, {} scheduler decisions",
        count("turn_started")?,
        count("turn_terminal")?,
        count("scheduler_decision")?
    );
    drop(rx);
    drop(control);
    served.close().await
}
