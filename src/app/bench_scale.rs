//! `holon debug bench scale [--agents N]`: one daemon (`holon daemon run`,
//! its own process) holding N idle agents (default 1,000), created over
//! its control socket:
//!
//! - `scale.create`: `agent.create` round trips (each agent's home from
//!   its template, its record and first events);
//! - `scale.rss`: the daemon's RSS with every agent idle, against the same
//!   daemon with one agent;
//! - `scale.status`: `runtime.status` round trips and their size;
//! - `scale.list`: `agents.list`, the first page of 100 and the whole
//!   list, and their size;
//! - `scale.command`: `holon status` (the process, start to exit);
//! - `scale.restart`: `holon daemon run` to its first `runtime.status`
//!   answer on that store;
//! - `scale.homes`: the agent homes' bytes on disk.

use std::path::Path;
use std::time::{Duration, Instant};

use super::bench::{millis, percentile};
use super::bench_socket::rss_kib;
use crate::protocol::{Request, RuntimeClient};
use crate::ui::client::SocketClient;

/// A `holon daemon run` of this binary, its own process (the scale and
/// idle benchmarks), stopped with SIGTERM.
pub(super) struct Daemon {
    child: std::process::Child,
}

/// A benchmark that stops early (an error) still stops its daemon.
impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: terminating the daemon this benchmark started, which
            // has not been reaped (so its pid is still its own).
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let _ = self.child.wait();
        }
    }
}

impl Daemon {
    /// Start a daemon on `home` (its HTTP listener off unless `listen`)
    /// and wait for its first `runtime.status` answer: how long that took.
    pub(super) async fn start(home: &Path, listen: bool) -> anyhow::Result<(Daemon, Duration)> {
        Daemon::start_with(home, listen, &[]).await
    }

    /// `start`, with these variables added to the daemon's environment.
    pub(super) async fn start_with(
        home: &Path,
        listen: bool,
        env: &[(&str, &str)],
    ) -> anyhow::Result<(Daemon, Duration)> {
        let exe = std::env::current_exe()?;
        let started = Instant::now();
        let mut cmd = std::process::Command::new(exe);
        if !listen {
            cmd.env("HOLON_LISTEN", "off");
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .args(["daemon", "run", "--mode", "daemon"])
            .env("HOLON_HOME", home)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let socket = super::paths::Paths::under(home).socket_path();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(client) = SocketClient::connect(&socket).await {
                if client.call(Request::RuntimeStatus).await.is_ok() {
                    break;
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                anyhow::bail!("the daemon ended at start ({status})");
            }
            if Instant::now() >= deadline {
                let _ = Daemon { child };
                anyhow::bail!("the daemon did not start");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok((Daemon { child }, started.elapsed()))
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn rss_mib(&self) -> f64 {
        rss_kib(&self.child.id().to_string()) as f64 / 1024.0
    }

    /// Stop it (SIGTERM) and wait for it to end.
    pub(super) fn stop(self) {
        drop(self);
    }
}

fn dir_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&p) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            }
            // Blocks allocated: what the disk holds, hard links once each
            // per directory entry (the way `du --count-links` counts).
            total += m.blocks() * 512;
        }
    }
    total
}

async fn timed(
    client: &SocketClient,
    req: &Request,
    n: usize,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let mut times = Vec::with_capacity(n);
    let mut bytes = 0;
    for _ in 0..n {
        let t = Instant::now();
        let text = client.call_raw(req.clone()).await?;
        times.push(t.elapsed());
        bytes = text.len();
    }
    times.sort();
    Ok((times, bytes))
}

pub async fn run(dir: &Path, agents: usize) -> anyhow::Result<()> {
    let home = dir.join("scale-home");
    let (daemon, _) = Daemon::start(&home, false).await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let rss_one = daemon.rss_mib();
    let socket = super::paths::Paths::under(&home).socket_path();
    let client = SocketClient::connect(&socket).await?;
    let mut creates = Vec::with_capacity(agents);
    for i in 1..agents {
        let t = Instant::now();
        client
            .call(Request::AgentCreate {
                agent_id: format!("agent-{i:04}"),
                template: None,
            })
            .await?;
        creates.push(t.elapsed());
    }
    creates.sort();
    println!(
        "scale.create      {} agent.create round trips: p50 {} p99 {}",
        creates.len(),
        millis(percentile(&creates, 0.5)),
        millis(percentile(&creates, 0.99))
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "scale.rss         the daemon with {agents} idle agents: RSS {:.1} MiB (one agent: {rss_one:.1} MiB)",
        daemon.rss_mib()
    );
    let (times, bytes) = timed(&client, &Request::RuntimeStatus, 100).await?;
    println!(
        "scale.status      runtime.status with {agents} agents, 100 round trips: p50 {} p99 {}, {} KB",
        millis(percentile(&times, 0.5)),
        millis(percentile(&times, 0.99)),
        bytes / 1000
    );
    let page = |limit: usize, query: Option<&str>| Request::AgentsList {
        limit: Some(limit),
        cursor: None,
        query: query.map(str::to_owned),
    };
    let (times, bytes) = timed(&client, &page(100, None), 100).await?;
    let (whole, whole_bytes) = timed(&client, &page(1000, None), 20).await?;
    let (found, _) = timed(&client, &page(100, Some("agent-05")), 100).await?;
    println!(
        "scale.list        agents.list of {agents}: a page of 100 p50 {} p99 {} ({} KB); 1,000 at once p50 {} ({} KB); filtered by id (`agent-05`) p50 {}",
        millis(percentile(&times, 0.5)),
        millis(percentile(&times, 0.99)),
        bytes / 1000,
        millis(percentile(&whole, 0.5)),
        whole_bytes / 1000,
        millis(percentile(&found, 0.5)),
    );
    drop(client);
    let exe = std::env::current_exe()?;
    let mut runs = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let out = std::process::Command::new(&exe)
            .arg("status")
            .env("HOLON_HOME", &home)
            .output()?;
        anyhow::ensure!(out.status.success(), "holon status failed");
        runs.push(t.elapsed());
    }
    runs.sort();
    println!(
        "scale.command     holon status with {agents} agents, 10 runs: p50 {} max {}",
        millis(percentile(&runs, 0.5)),
        millis(runs.last().copied().unwrap_or_default())
    );
    daemon.stop();
    let mut restarts = Vec::new();
    for _ in 0..3 {
        let (daemon, took) = Daemon::start(&home, false).await?;
        restarts.push(took);
        daemon.stop();
    }
    restarts.sort();
    println!(
        "scale.restart     holon daemon run to its first answer with {agents} agents, 3 runs: {} to {}",
        millis(restarts[0]),
        millis(restarts[restarts.len() - 1])
    );
    let homes = super::paths::Paths::under(&home).data_dir.join("agents");
    println!(
        "scale.homes       {agents} agent homes: {:.1} MB on disk",
        dir_bytes(&homes) as f64 / 1e6
    );
    Ok(())
}
