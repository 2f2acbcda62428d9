//! Control-socket benchmarks for `holon debug bench`: status round trips
//! over the real socket, paging a 100,000-event ledger as an attached
//! client, and an idle daemon process's memory and CPU.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bench::{fill_ledger, millis, percentile};
use crate::protocol::{Request, RuntimeClient};
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::store::{Store, StoreOptions};
use crate::ui::client::SocketClient;

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

pub(super) use super::life::rss_kib;

/// CPU time of a process (utime + stime from `/proc/<pid>/stat`).
fn proc_cpu(pid: u32) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name.
    let rest = text.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / hz)
}

pub async fn socket_bench(dir: &Path) -> anyhow::Result<()> {
    let provider = Arc::new(crate::runtime::provider::scripted::ScriptedProvider::new(
        Vec::new(),
    ));
    let served = Served::start(dir, "socket", provider).await?;
    let (store, path) = (&served.store, &served.path);
    let client = SocketClient::connect(path).await?;
    for _ in 0..200 {
        client.call(Request::RuntimeStatus).await?;
    }
    let mut times = Vec::with_capacity(10_000);
    for _ in 0..10_000 {
        let t = Instant::now();
        client.call(Request::RuntimeStatus).await?;
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "socket.status     10000 runtime.status round trips: p50 {} p99 {}",
        micros(percentile(&times, 0.5)),
        micros(percentile(&times, 0.99))
    );

    fill_ledger(store, "main", 100_000).await?;
    let rss0 = rss_kib("self");
    let t = Instant::now();
    let mut from = 1u64;
    let mut seen = 0u64;
    // What an attached console needs: every event decoded, once, straight
    // from the answer's text.
    #[derive(serde::Deserialize)]
    struct Page {
        events: Vec<crate::model::event::EventRecord>,
        next_seq: u64,
    }
    loop {
        let text = client
            .call_raw(Request::EventsPage {
                agent_id: "main".into(),
                from_seq: from,
                limit: 5000,
                kind: None,
            })
            .await?;
        let page: Page = serde_json::from_str(&text)?;
        let events = page.events.len() as u64;
        if events == 0 {
            break;
        }
        seen += events;
        from = page.next_seq;
    }
    let elapsed = t.elapsed();
    println!(
        "socket.attach     paged {seen} events over the socket in {} ({:.0} events/s); process RSS {} MiB -> {} MiB",
        millis(elapsed),
        seen as f64 / elapsed.as_secs_f64(),
        rss0 / 1024,
        rss_kib("self") / 1024
    );
    served.close().await
}

/// A runtime with agent `main` on its own store, serving a real control
/// socket in this process (the socket and soak benchmarks).
pub(super) struct Served {
    pub store: Store,
    pub host: RuntimeHost,
    pub path: std::path::PathBuf,
    stop: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<()>,
}

impl Served {
    pub async fn start(
        dir: &Path,
        name: &str,
        provider: Arc<dyn crate::runtime::provider::Provider>,
    ) -> anyhow::Result<Served> {
        let store = Store::open(&dir.join(format!("{name}.redb")), StoreOptions::default())?;
        let host = RuntimeHost::start(
            store.clone(),
            HostConfig::new(
                dir.join(format!("{name}-data")),
                Arc::new(move |_| Arc::clone(&provider)),
            ),
        )
        .await?;
        host.create_agent("main").await?;
        let path = dir.join(format!("{name}.sock"));
        let listener = super::control::socket::bind(&path).await?;
        let (stop, rx) = tokio::sync::watch::channel(false);
        let client: Arc<dyn RuntimeClient> = Arc::new(host.clone());
        let server = tokio::spawn(super::control::server::serve(
            listener,
            client,
            rx,
            Default::default(),
        ));
        Ok(Served {
            store,
            host,
            path,
            stop,
            server,
        })
    }

    /// Stop serving, shut the runtime down, release the store.
    pub async fn close(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        let _ = self.server.await;
        self.host.shutdown().await;
        drop(self.host);
        self.store.close().await?;
        Ok(())
    }
}

/// A real `holon daemon run` process left idle: its RSS and CPU.
pub async fn daemon_idle_bench(dir: &Path, secs: u64) -> anyhow::Result<()> {
    let home = dir.join("daemon-home");
    let (daemon, _) = super::bench_scale::Daemon::start(&home, true).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu0 = proc_cpu(daemon.pid());
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let cpu = proc_cpu(daemon.pid()).saturating_sub(cpu0);
    println!(
        "daemon.idle       idle daemon over {secs} s: RSS {:.1} MiB, CPU {} ({:.3}% of one core)",
        daemon.rss_mib(),
        millis(cpu),
        100.0 * cpu.as_secs_f64() / secs as f64
    );
    daemon.stop();
    Ok(())
}
