//! `holon debug bench connections`: a real daemon (this binary, `holon
//! daemon run` in a home of its own) under 5,000 idle TCP connections on
//! its HTTP listener and 300 idle control-socket clients: how long `holon
//! status` takes, and the daemon's RSS, before and during; and how soon a
//! client that sends half a request's headers is closed.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::bench::{millis, percentile};

const TCP: usize = 5_000;
const CONTROL: usize = 300;
const STATUS_RUNS: usize = 15;

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kib| kib / 1024.0)
        .unwrap_or(0.0)
}

/// Raise this process's soft open-file limit to its hard one.
fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit fill and read the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
    lim.rlim_cur
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let limit = raise_fd_limit();
    anyhow::ensure!(
        limit as usize > TCP + CONTROL + 64,
        "the open-file limit ({limit}) is too low for {TCP} + {CONTROL} connections"
    );
    let home = dir.join("connections-home");
    let _ = std::fs::remove_dir_all(&home);
    let exe = std::env::current_exe()?;
    let holon = |args: &[&str]| {
        let mut c = Command::new(&exe);
        c.env("HOLON_HOME", &home)
            .env("HOLON_LISTEN", "127.0.0.1:0")
            .env_remove("HOLON_MODEL")
            .env_remove("HOLON_LOG")
            .env_remove("RUST_LOG")
            .args(args)
            .stdin(Stdio::null());
        c
    };
    let out = holon(&["--detach"]).output()?;
    anyhow::ensure!(
        out.status.success(),
        "the daemon did not start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value =
        serde_json::from_slice(&holon(&["daemon", "status", "--json"]).output()?.stdout)?;
    let pid = status["status"]["pid"].as_u64().unwrap_or(0) as u32;
    let addr: std::net::SocketAddr = status["http_addr"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no HTTP listener: {status}"))?
        .parse()?;
    let socket = home.join("run").join("control.sock");

    let time_status = || -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::new();
        for _ in 0..STATUS_RUNS {
            let t = Instant::now();
            let out = holon(&["status"]).output()?;
            anyhow::ensure!(
                out.status.success(),
                "holon status failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            times.push(t.elapsed());
        }
        times.sort();
        Ok(times)
    };
    let before = time_status()?;
    let rss_before = rss_mib(pid);

    // All at once, given 3 s: past the listener's cap (and the kernel's
    // accept backlog) a connect waits, and an accepted connection that
    // sends nothing is closed after the 10 s header timeout, so the
    // measurement below runs while they are all there.
    let t = Instant::now();
    let mut connects = tokio::task::JoinSet::new();
    for _ in 0..TCP {
        connects.spawn(async move {
            tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(addr)).await
        });
    }
    let mut tcp = Vec::with_capacity(TCP);
    let mut waiting = 0;
    while let Some(r) = connects.join_next().await {
        match r? {
            Ok(Ok(stream)) => tcp.push(stream),
            _ => waiting += 1,
        }
    }
    let mut control = Vec::with_capacity(CONTROL);
    for _ in 0..CONTROL {
        control.push(std::os::unix::net::UnixStream::connect(&socket)?);
    }
    let opened = t.elapsed();
    let during = time_status()?;
    let rss_during = rss_mib(pid);
    println!(
        "conn.status       holon status, {STATUS_RUNS} runs: alone p50 {} max {}; with {TCP} idle TCP ({} connected, {waiting} still waiting in the kernel after 3 s) and {CONTROL} idle control clients (opened in {}) p50 {} max {}",
        millis(percentile(&before, 0.5)),
        millis(before.last().copied().unwrap_or_default()),
        tcp.len(),
        millis(opened),
        millis(percentile(&during, 0.5)),
        millis(during.last().copied().unwrap_or_default()),
    );
    println!("conn.rss          daemon RSS {rss_before:.1} MiB idle, {rss_during:.1} MiB with those connections");
    drop(tcp);
    drop(control);

    // Half a request's headers, then nothing: closed after the header
    // timeout.
    let mut slow = std::net::TcpStream::connect(addr)?;
    slow.write_all(b"POST /trigger/x HTTP/1.1\r\nHost: bench\r\n")?;
    slow.set_read_timeout(Some(Duration::from_secs(30)))?;
    let t = Instant::now();
    let mut buf = [0u8; 512];
    let closed = loop {
        match slow.read(&mut buf) {
            Ok(0) => break Some(t.elapsed()),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break None,
            Err(_) => break Some(t.elapsed()),
        }
    };
    match closed {
        Some(after) => println!(
            "conn.slow_header  a client that stopped mid-headers was closed after {:.1} s",
            after.as_secs_f64()
        ),
        None => println!(
            "conn.slow_header  a client that stopped mid-headers was still open after 30 s"
        ),
    }
    let _ = holon(&["daemon", "stop"]).output()?;
    Ok(())
}
