//! `holon debug bench bridge [--ledger N]`: attach over the ssh stdio
//! bridge against the local socket, on the path users run. A daemon (its
//! own process) holds an agent whose ledger has `--ledger` events (default
//! 100,000, turns of ~1 KB markdown answers); one client reaches it over
//! its unix socket, the other as `holon attach ssh://` does: an ssh program
//! (here a stand-in that runs the far command on this machine, as the
//! tests' does, so the network is not what is measured) starting `holon
//! attach --stdio`, whose pipes carry the protocol. Each pages the whole
//! ledger, 500 events a page as the console asks, three times, and sends
//! 500 `agent.status` requests one after another (a key that asks the
//! runtime, without the frame). Prints both, and the bridge's overhead.

use std::path::Path;
use std::time::{Duration, Instant};

use super::bench::{millis, percentile};
use super::bench_scale::Daemon;
use crate::protocol::{Request, RuntimeClient};
use crate::store::{Store, StoreOptions};
use crate::ui::client::SocketClient;

/// The stand-in for ssh: drop ssh's options and the destination, run the
/// far command here with this binary's directory first on PATH.
fn stand_in(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exe = std::env::current_exe()?;
    let bin = exe.parent().unwrap_or(Path::new("/"));
    let script = format!(
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in -T) shift ;; -o|-p|-l) shift 2 ;; \
         *) break ;; esac; done\nshift\nPATH='{}':\"$PATH\"\nexport PATH\nexec sh -c \"exec $*\"\n",
        bin.display()
    );
    let path = dir.join("ssh-stand-in");
    std::fs::write(&path, script)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// Page `agent`'s whole ledger as the console does: its time, and the
/// events read.
async fn page_all(client: &dyn RuntimeClient, agent: &str) -> anyhow::Result<(Duration, u64)> {
    let t = Instant::now();
    let (mut from, mut read) = (1, 0u64);
    loop {
        let request = Request::EventsPage {
            agent_id: agent.to_owned(),
            from_seq: from,
            limit: 500,
            kind: None,
        };
        let page: crate::protocol::EventsPage =
            crate::protocol::call_typed(client, request).await?;
        read += page.events.len() as u64;
        if page.events.is_empty() || page.next_seq > page.last_event_seq {
            break;
        }
        from = page.next_seq;
    }
    Ok((t.elapsed(), read))
}

/// `n` status requests one after another: each one's round trip.
async fn round_trips(client: &dyn RuntimeClient, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let request = Request::AgentStatus {
            agent_id: "main".into(),
        };
        client.call_raw(request).await?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok(times)
}

pub async fn run(dir: &Path, ledger: u64) -> anyhow::Result<()> {
    let home = dir.join("bridge");
    let paths = super::paths::Paths::under(&home);
    paths.ensure()?;
    {
        let store = Store::open(&paths.store_file(), StoreOptions::default())?;
        crate::runtime::admission::ensure_agent(&store, "main").await?;
        super::bench_older::fill(&store, "main", ledger).await?;
        store.close().await?;
    }
    let (_daemon, _) = Daemon::start(&home, false).await?;
    let local = SocketClient::connect(&paths.socket_path()).await?;
    let target = crate::ui::ssh::SshTarget {
        user: None,
        host: "bench".into(),
        port: None,
        home: Some(home.display().to_string()),
    };
    let program = stand_in(dir)?;
    let t = Instant::now();
    let bridged = crate::ui::ssh::connect_via(&target, program.as_os_str(), false).await?;
    let connect = t.elapsed();
    let (mut over_socket, mut over_bridge) = (Vec::new(), Vec::new());
    let mut events = 0;
    for _ in 0..3 {
        let (d, n) = page_all(&local, "main").await?;
        over_socket.push(d);
        let (d, m) = page_all(&bridged, "main").await?;
        anyhow::ensure!(n == m, "the bridge read {m} events, the socket {n}");
        over_bridge.push(d);
        events = n;
    }
    over_socket.sort();
    over_bridge.sort();
    let (socket, bridge) = (over_socket[1], over_bridge[1]);
    let socket_rt = round_trips(&local, 500).await?;
    let bridge_rt = round_trips(&bridged, 500).await?;
    let overhead = |a: Duration, b: Duration| {
        (b.as_secs_f64() / a.as_secs_f64().max(f64::EPSILON) - 1.0) * 100.0
    };
    println!(
        "attach.bridge     {events} events paged 500 at a time (median of 3): socket {}, ssh \
         bridge {} ({:+.0}%); agent.status round trip p50 {} vs {} ({:+.0}%), p99 {} vs {}; \
         the bridge connected (ssh stand-in, far holon started, first answer) in {}",
        millis(socket),
        millis(bridge),
        overhead(socket, bridge),
        millis(percentile(&socket_rt, 0.5)),
        millis(percentile(&bridge_rt, 0.5)),
        overhead(percentile(&socket_rt, 0.5), percentile(&bridge_rt, 0.5)),
        millis(percentile(&socket_rt, 0.99)),
        millis(percentile(&bridge_rt, 0.99)),
        millis(connect),
    );
    Ok(())
}
