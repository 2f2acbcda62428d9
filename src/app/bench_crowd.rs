//! `holon debug bench crowd [--agents N]`: N agents (default 100) running
//! model turns at once in one daemon (`holon daemon run`, its own process)
//! against the stub provider on 127.0.0.1, which streams each answer in
//! 20 pieces after a second's thought, so every agent is always inside a
//! turn. A console is attached to one of them over the control socket (its
//! follower and its update-and-draw loop, as `holon attach` runs them,
//! drawing into a test backend). Printed:
//!
//! - `crowd.turns`: model requests made per second with every agent
//!   busy;
//! - `crowd.console`: the attached console's key-to-frame latency, a key
//!   every 20 ms for 5 s, while the agents run;
//! - `crowd.admit`: `prompt.submit` from 8 socket clients, 16 in flight
//!   each, spread over the N agents while they run turns, and the same
//!   console's key-to-frame during that burst.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use holon_stub::{canned, Canned, Responder, StubServer};

use super::bench::{millis, percentile};
use super::bench_scale::Daemon;
use crate::model::message::Priority;
use crate::protocol::{Request, RuntimeClient};
use crate::ui::client::SocketClient;
use crate::ui::tui::msg::Msg;

/// How long the stub thinks before it streams an answer.
const THINK: Duration = Duration::from_secs(1);
/// Prompts queued per agent before the measurements, so none runs dry.
const BACKLOG: usize = 20;
/// How long the console is measured, each time.
const CONSOLE_SECS: u64 = 5;

fn answer_pieces() -> Vec<String> {
    let mut pieces = vec!["## Checked\n\n".to_owned()];
    for i in 0..18 {
        pieces.push(format!("- step {i}: the **build** passed in `{i}.2 s`\n"));
    }
    pieces.push("\nAll green.".to_owned());
    pieces
}

/// A stub provider that answers every request with `pieces` streamed
/// after `think`, counting the requests in `served`.
pub(super) async fn counting_stub(
    pieces: Vec<String>,
    think: Duration,
    served: Arc<AtomicU64>,
) -> StubServer {
    let responder: Responder = Arc::new(move |_| {
        served.fetch_add(1, Ordering::Relaxed);
        let deltas: Vec<&str> = pieces.iter().map(String::as_str).collect();
        Canned::sse(canned::chat_sse(&deltas, &[])).delay(think)
    });
    StubServer::serving(responder).await
}

/// The attached console: its follower (a task on this runtime) feeding a
/// channel, measured by `bench_attached` on a thread of its own.
struct Console {
    rx: Option<tokio::sync::mpsc::Receiver<Msg>>,
    agent: String,
}

impl Console {
    async fn attach(socket: &Path, agent: &str) -> anyhow::Result<Console> {
        let client: Arc<dyn RuntimeClient> = Arc::new(SocketClient::connect(socket).await?);
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(super::console::follow_agent(
            client,
            agent.to_owned(),
            None,
            tx,
        ));
        Ok(Console {
            rx: Some(rx),
            agent: agent.to_owned(),
        })
    }

    /// Start measuring key-to-frame for `CONSOLE_SECS`; join the handle
    /// for (sorted latencies, messages applied).
    fn measure(&mut self) -> std::thread::JoinHandle<(Vec<Duration>, u64, Console)> {
        let mut rx = self.rx.take();
        let agent = std::mem::take(&mut self.agent);
        std::thread::spawn(move || {
            let (lat, applied) = match rx.as_mut() {
                Some(rx) => crate::ui::tui::bench_attached(rx, &agent, CONSOLE_SECS),
                None => (Vec::new(), 0),
            };
            (lat, applied, Console { rx, agent })
        })
    }
}

fn joined(
    handle: std::thread::JoinHandle<(Vec<Duration>, u64, Console)>,
) -> anyhow::Result<(Vec<Duration>, u64, Console)> {
    handle
        .join()
        .map_err(|_| anyhow::anyhow!("the console thread panicked"))
}

pub async fn run(dir: &Path, agents: usize) -> anyhow::Result<()> {
    let served = Arc::new(AtomicU64::new(0));
    let stub = counting_stub(answer_pieces(), THINK, Arc::clone(&served)).await;
    let home = dir.join("crowd-home");
    let config = home.join("config");
    std::fs::create_dir_all(&config)?;
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[model]\ndefault = \"stub/crowd\"\n\n[providers.stub]\nbase_url = \"{}/v1\"\n\
             wire = \"openai_chat\"\nstreaming = \"on\"\napi_key_env = \"CROWD_KEY\"\n",
            stub.base()
        ),
    )?;
    let (daemon, _) = Daemon::start_with(&home, false, &[("CROWD_KEY", "sk-crowd")]).await?;
    let socket = super::paths::Paths::under(&home).socket_path();
    let client = SocketClient::connect(&socket).await?;
    let names: Vec<String> = (0..agents).map(|i| format!("crowd-{i:03}")).collect();
    for name in &names {
        client
            .call(Request::AgentCreate {
                agent_id: name.clone(),
                template: None,
            })
            .await?;
    }
    let mut console = Console::attach(&socket, &names[0]).await?;
    for round in 0..BACKLOG {
        for name in &names {
            client
                .call(Request::PromptSubmit {
                    agent_id: name.clone(),
                    text: format!("check build {round}"),
                    priority: Priority::Normal,
                    request_id: None,
                })
                .await?;
        }
    }
    // Every agent inside its first turn.
    tokio::time::sleep(THINK * 2).await;

    let before = (served.load(Ordering::Relaxed), Instant::now());
    let (lat, applied, back) = tokio::task::spawn_blocking({
        let handle = console.measure();
        move || joined(handle)
    })
    .await??;
    console = back;
    anyhow::ensure!(applied > 0, "the attached console applied no event");
    let rate =
        (served.load(Ordering::Relaxed) - before.0) as f64 / before.1.elapsed().as_secs_f64();
    println!(
        "crowd.turns       {agents} agents running turns against the stub (1 s to answer): {rate:.0} model requests/s"
    );
    println!(
        "crowd.console     attached to one of them, a key every 20 ms for {CONSOLE_SECS} s: key-to-frame p50 {} p99 {} max {} ({applied} messages from the runtime)",
        millis(percentile(&lat, 0.5)),
        millis(percentile(&lat, 0.99)),
        millis(lat.last().copied().unwrap_or_default()),
    );

    let measuring = console.measure();
    let (admitted, acks) = super::bench_admit::drive(&socket, 16, &names).await?;
    let (lat, applied, _) = tokio::task::spawn_blocking(move || joined(measuring)).await??;
    println!(
        "crowd.admit       8 clients x 16 in flight over {agents} running agents: {admitted:.0} prompts/s, ack p50 {} p99 {}; console key-to-frame meanwhile p50 {} p99 {} ({applied} messages from the runtime)",
        millis(percentile(&acks, 0.5)),
        millis(percentile(&acks, 0.99)),
        millis(percentile(&lat, 0.5)),
        millis(percentile(&lat, 0.99)),
    );
    drop(client);
    daemon.stop();
    Ok(())
}
