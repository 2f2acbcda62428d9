//! Trigger and remote-attach benchmarks for `holon debug bench triggers`:
//! a delivery over real HTTP until its wake hint is durable (the answer
//! comes after the commit), deliveries per second from 8 concurrent
//! senders, and `runtime.status` round trips over the WebSocket against
//! the unix socket.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::access::{Access, HttpOptions, RateLimit};
use super::bench::{millis, percentile};
use super::bench_socket::Served;
use crate::protocol::views::ControlAction;
use crate::protocol::{Request, RuntimeClient};
use crate::ui::client::SocketClient;
use crate::ui::ws::Endpoint;

const SEQUENTIAL: usize = 2_000;
const SENDERS: usize = 8;
const PER_SENDER: usize = 1_000;
const ROUND_TRIPS: usize = 5_000;

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let provider = Arc::new(crate::runtime::provider::scripted::ScriptedProvider::new(
        Vec::new(),
    ));
    let served = Served::start(dir, "triggers", provider).await?;
    // Paused: deliveries are recorded and coalesce into one pending wake,
    // no turns run (what is measured is ingress, not the model).
    served.host.control("main", ControlAction::Pause).await?;
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let token = crate::runtime::triggers::new_token();
    let options = HttpOptions {
        listen: Some("127.0.0.1:0".into()),
        access: Access::Local,
        advertise: None,
        token: token.clone(),
        rate: RateLimit {
            burst: 1_000_000,
            per_sec: 1_000_000.0,
        },
        tls: None,
    };
    let client: Arc<dyn RuntimeClient> = Arc::new(served.host.clone());
    let http = super::http::start(&served.host, client, options, stop_rx, Default::default()).await;
    let view = served.host.trigger_show("main").await?;
    let url = view
        .trigger_url
        .ok_or_else(|| anyhow::anyhow!("the listener did not start: {:?}", view.ingress))?;
    let addr = served.host.ingress().http_addr.unwrap_or_default();
    let http_client = reqwest::Client::new();
    let body = serde_json::json!({"source": "ci", "resource": "pr-1", "summary": "bench"});
    let deliver = |c: reqwest::Client, url: String, body: serde_json::Value| async move {
        let t = Instant::now();
        let r = c.post(&url).json(&body).send().await?;
        anyhow::ensure!(
            r.status().as_u16() == 202,
            "delivery answered {}",
            r.status()
        );
        Ok::<_, anyhow::Error>(t.elapsed())
    };
    for _ in 0..50 {
        deliver(http_client.clone(), url.clone(), body.clone()).await?;
    }
    let mut times = Vec::with_capacity(SEQUENTIAL);
    for _ in 0..SEQUENTIAL {
        times.push(deliver(http_client.clone(), url.clone(), body.clone()).await?);
    }
    times.sort();
    println!(
        "trigger.deliver   {SEQUENTIAL} HTTP deliveries, one at a time, answered once the wake hint is durable: p50 {} p99 {}",
        millis(percentile(&times, 0.5)),
        millis(percentile(&times, 0.99))
    );
    let t = Instant::now();
    let mut senders = tokio::task::JoinSet::new();
    for _ in 0..SENDERS {
        let (c, url, body) = (http_client.clone(), url.clone(), body.clone());
        senders.spawn(async move {
            let mut times = Vec::with_capacity(PER_SENDER);
            for _ in 0..PER_SENDER {
                times.push(deliver(c.clone(), url.clone(), body.clone()).await?);
            }
            Ok::<_, anyhow::Error>(times)
        });
    }
    let mut times = Vec::new();
    while let Some(r) = senders.join_next().await {
        times.extend(r??);
    }
    let wall = t.elapsed();
    times.sort();
    println!(
        "trigger.flood     {SENDERS} senders x {PER_SENDER} deliveries: {:.0} deliveries/s, p50 {} p99 {}",
        (SENDERS * PER_SENDER) as f64 / wall.as_secs_f64(),
        millis(percentile(&times, 0.5)),
        millis(percentile(&times, 0.99))
    );

    let socket = SocketClient::connect(&served.path).await?;
    let ws = Endpoint::websocket(&format!("ws://{addr}"), token, None)
        .map_err(anyhow::Error::msg)?
        .connect()
        .await?;
    for (name, client) in [("socket", &socket), ("websocket", &ws)] {
        for _ in 0..200 {
            client.call(Request::RuntimeStatus).await?;
        }
        let mut times: Vec<Duration> = Vec::with_capacity(ROUND_TRIPS);
        for _ in 0..ROUND_TRIPS {
            let t = Instant::now();
            client.call(Request::RuntimeStatus).await?;
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "remote.status     {ROUND_TRIPS} runtime.status round trips over the {name}: p50 {} p99 {}",
            millis(percentile(&times, 0.5)),
            millis(percentile(&times, 0.99))
        );
    }
    drop((socket, ws));
    let _ = stop.send(true);
    if let Some(h) = http {
        let _ = h.await;
    }
    served.close().await
}
