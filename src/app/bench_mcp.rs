//! `holon debug bench mcp`: MCP servers, with the stub server built beside
//! this binary (`cargo build --release --features bench --example
//! mcp_stub`):
//!
//! - `mcp.start`: a server's start (spawn, handshake, tool list) to the
//!   first catalog, each time with a fresh runtime-side hub;
//! - `mcp.call`: an `echo` call's round trip through the hub (argument
//!   check, JSON-RPC over stdio, result shaping), which is Holon's
//!   overhead over a server that does no work;
//! - `mcp.idle`: a daemon's RSS and child processes with three servers
//!   configured and none used, against the same daemon with none.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::bench::{millis, percentile};
use super::bench_scale::Daemon;
use crate::model::usage::ToolCall;
use crate::runtime::mcp::Hub;
use crate::runtime::settings::mcp::ServerConfig;

pub(super) fn stub_path() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .map(|d| d.join("examples/mcp_stub"))
        .unwrap_or_default();
    anyhow::ensure!(
        path.exists(),
        "{} is missing: build it with `cargo build --release --features bench --example mcp_stub`",
        path.display()
    );
    Ok(path)
}

fn stub(name: &str, path: &Path) -> ServerConfig {
    ServerConfig {
        sandboxed: false,
        ..ServerConfig::stdio(name, &path.display().to_string(), &[])
    }
}

fn children_of_pid(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .map(|c| c.split_whitespace().count())
        .sum()
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let path = stub_path()?;
    let data = dir.join("mcp-data");
    let mut starts = Vec::new();
    for _ in 0..20 {
        let hub = Hub::new(vec![stub("stub", &path)], &data, Vec::new());
        let t = Instant::now();
        let specs = hub.specs(None, "bench", None).await;
        starts.push(t.elapsed());
        anyhow::ensure!(!specs.is_empty(), "the stub offered no tools");
        hub.stop().await;
    }
    starts.sort();
    println!(
        "mcp.start         spawn, initialize and tools/list to the first catalog (20 starts): p50 {} p99 {}",
        millis(percentile(&starts, 0.5)),
        millis(percentile(&starts, 0.99))
    );

    let hub = Hub::new(vec![stub("stub", &path)], &data, Vec::new());
    hub.specs(None, "bench", None).await;
    let call = ToolCall {
        id: "c".into(),
        name: "mcp__stub__echo".into(),
        arguments: serde_json::json!({"text": "hello"}),
        malformed_arguments: None,
    };
    for _ in 0..200 {
        hub.call(None, "bench", None, &call, 32_000, None).await;
    }
    let mut calls = Vec::new();
    for _ in 0..5000 {
        let t = Instant::now();
        let out = hub.call(None, "bench", None, &call, 32_000, None).await;
        calls.push(t.elapsed());
        anyhow::ensure!(!out.is_error, "the echo failed: {}", out.content);
    }
    hub.stop().await;
    calls.sort();
    println!(
        "mcp.call          echo over stdio, 5,000 calls: p50 {} p99 {}",
        millis(percentile(&calls, 0.5)),
        millis(percentile(&calls, 0.99))
    );

    let mut rss = Vec::new();
    for servers in [0usize, 3] {
        let home = dir.join(format!("mcp-idle-{servers}"));
        std::fs::create_dir_all(home.join("config"))?;
        let mut text = String::new();
        for i in 0..servers {
            text.push_str(&format!(
                "[mcp_servers.s{i}]\ncommand = \"{}\"\n",
                path.display()
            ));
        }
        std::fs::write(home.join("config/config.toml"), text)?;
        let (daemon, _) = Daemon::start(&home, false).await?;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        rss.push((servers, daemon.rss_mib(), children_of_pid(daemon.pid())));
        daemon.stop();
    }
    for (servers, mib, children) in rss {
        println!(
            "mcp.idle          a daemon with {servers} servers configured, none used: RSS {mib:.1} MiB, {children} child processes"
        );
    }
    Ok(())
}
