//! `holon debug bench`: the performance figures the issues ask for,
//! measured on real redb files in a temporary directory and printed as
//! plain lines (copy them into docs/performance.md). Built only with the
//! `bench` cargo feature: the shipped binary carries no benchmark code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinSet;

use super::cli::BenchArgs;
use super::stress::{stress_event, stress_payload, STRESS_KIND};
use crate::model::agent::AgentRecord;
use crate::runtime::inspect::agent_summary;
use crate::store::{Store, StoreOptions};

pub(super) use super::life::percentile;

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub(super) fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

pub async fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let tmp;
    let dir: PathBuf = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = TempDir::new()?;
            tmp.0.clone()
        }
    };
    let which = args.which.as_str();
    let all = which == "all";
    println!(
        "holon {} benchmarks in {}",
        env!("CARGO_PKG_VERSION"),
        dir.display()
    );
    if all || which == "store" {
        bench_store(&dir, args.events).await?;
    }
    if all || which == "paging" || which == "status" {
        bench_ledger(&dir, args.ledger).await?;
    }
    if all || which == "scheduler" {
        super::bench_runtime::decide_bench();
    }
    if all || which == "restart" {
        super::bench_runtime::restart_bench(&dir).await?;
    }
    if all || which == "turns" {
        super::bench_turns::run(&dir).await?;
    }
    if all || which == "stop" {
        super::bench_stop::run(&dir).await?;
    }
    if all || which == "console" {
        console_benches();
    }
    if all || which == "workspace" {
        super::bench_workspace::run(&dir).await?;
    }
    if all || which == "admit" {
        super::bench_admit::run(&dir).await?;
    }
    if all || which == "context" {
        super::bench_context::run(&dir).await?;
    }
    if all || which == "frame" {
        super::bench_frame::run(&dir).await?;
    }
    if all || which == "socket" {
        super::bench_socket::socket_bench(&dir).await?;
    }
    if all || which == "triggers" {
        super::bench_triggers::run(&dir).await?;
    }
    #[cfg(target_os = "linux")]
    if all || which == "sandbox" {
        super::bench_sandbox::run(&dir).await?;
    }
    if all || which == "agents" {
        super::bench_agents::run(&dir).await?;
    }
    if which == "hooks" {
        super::bench_hooks::run(&dir).await?;
    }
    if which == "connections" {
        super::bench_connections::run(&dir).await?;
    }
    if which == "backup" {
        super::bench_backup::run(&dir).await?;
    }
    if which == "salvage" {
        super::bench_salvage::run(&dir).await?;
    }
    if which == "older" {
        super::bench_older::run(&dir, args.ledger).await?;
    }
    if which == "bridge" {
        super::bench_bridge::run(&dir, args.ledger.min(100_000)).await?;
    }
    if which == "attach" {
        super::bench_attach::run(&dir, args.turns).await?;
    }
    if which == "faults" {
        faults_bench(&dir).await;
    }
    if which == "tools" {
        super::bench_tools::run(&dir).await?;
    }
    if which == "mcp" {
        super::bench_mcp::run(&dir).await?;
    }
    if which == "crowd" {
        super::bench_crowd::run(&dir, args.agents.unwrap_or(100)).await?;
    }
    if which == "scale" {
        super::bench_scale::run(&dir, args.agents.unwrap_or(1000)).await?;
    }
    if which == "life" {
        life_bench(&dir, &args)?;
    }
    if which == "soak" {
        super::bench_soak::run(&dir, args.secs).await?;
    }
    if which == "idle" {
        super::bench_runtime::idle_bench(&dir, args.idle_secs).await?;
        super::bench_socket::daemon_idle_bench(&dir, args.idle_secs).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The console's frames, keys, streaming and @ picker, in process.
fn console_benches() {
    for rows in [100usize, 100_000] {
        let (conv, events) = crate::ui::tui::bench_render(rows, 120, 40);
        println!(
            "console.render    {rows} rows of history at 120x40: conversation frame {:.1} µs, /events frame {:.1} µs",
            conv.as_secs_f64() * 1e6,
            events.as_secs_f64() * 1e6
        );
    }
    let (lat, cpu) = crate::ui::tui::bench_keystrokes(5, 1000);
    println!(
        "console.keys      1000 events/s for 5 s, a key every 20 ms: key-to-frame p50 {} p99 {}; CPU {:.1}% of one core",
        millis(percentile(&lat, 0.5)),
        millis(percentile(&lat, 0.99)),
        100.0 * cpu.as_secs_f64() / 5.0
    );
    let (frames, keys) = crate::ui::tui::bench_streaming(10_000, 5, 100);
    println!(
        "console.stream    a 2,000-line answer with 40 code blocks streaming at 100 tokens/s into 10,000 rows (its last 5 s): frame p50 {} p99 {}; key-to-frame p50 {} p99 {}",
        millis(percentile(&frames, 0.5)),
        millis(percentile(&frames, 0.99)),
        millis(percentile(&keys, 0.5)),
        millis(percentile(&keys, 0.99)),
    );
    let times = crate::ui::tui::bench_mentions(100_000);
    println!(
        "console.mention   @ picker over 100,000 files, 200 queries typed letter by letter: match p50 {} p99 {}",
        millis(percentile(&times, 0.5)),
        millis(percentile(&times, 0.99)),
    );
}

/// The store under an I/O fault at every write: nothing acknowledged is
/// lost, duplicated or invented.
async fn faults_bench(dir: &Path) {
    let writes = 60;
    let started = Instant::now();
    let (tried, found) = crate::store::fault::sweep(dir, writes, 1).await;
    println!(
        "store.faults      {writes} writes, an I/O fault at every write (whole and torn), \
         sync and length change: {tried} fault points in {:.1} s; {} acknowledged, {} \
         refused, {} lost, {} duplicated, {} invented{}",
        started.elapsed().as_secs_f64(),
        found.acknowledged,
        found.refused,
        found.lost,
        found.duplicated,
        found.invented,
        found
            .unopenable
            .map(|e| format!("; could not reopen: {e}"))
            .unwrap_or_default()
    );
}

/// A month of a runtime's life, kept and pruned: each run in a process of
/// its own, so its RSS is its own.
fn life_bench(dir: &Path, args: &BenchArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    for retain in [Some(args.retain_days), None] {
        let what = match retain {
            Some(d) => format!("retain {d}d"),
            None => "keep all".to_owned(),
        };
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["debug", "life", "--agents"])
            .arg(args.agents.unwrap_or(50).to_string())
            .arg("--days")
            .arg(args.days.to_string())
            .arg("--dir")
            .arg(dir.join(format!("life-{}", retain.unwrap_or(0))))
            .stderr(std::process::Stdio::inherit());
        if let Some(d) = retain {
            cmd.arg("--retain-days").arg(d.to_string());
        }
        let mut child = cmd.stdout(std::process::Stdio::piped()).spawn()?;
        let out = child.stdout.take();
        if let Some(out) = out {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines() {
                let line = line?;
                match line.starts_with("day ") {
                    true => println!("life.month        {what}, {line}"),
                    false => println!("life.run          {what}: {line}"),
                }
            }
        }
        anyhow::ensure!(child.wait()?.success(), "the {what} life failed");
    }
    Ok(())
}

/// A directory removed on drop (benchmarks only; tests use `tempfile`).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        let p = std::env::temp_dir().join(format!("holon-bench-{}", crate::new_id("b")));
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn bench_store(dir: &Path, events: u64) -> anyhow::Result<()> {
    // (a) burst: producers keeping up to 1,000 appends in flight (8
    // producers x 125 awaited futures each, as a busy runtime's actors,
    // tasks and clients do), not one spawned task per append.
    let path = dir.join("burst.redb");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path, StoreOptions::default())?;
    let started = Instant::now();
    let mut producers = JoinSet::new();
    let per_producer = events / 8;
    for p in 0..8u64 {
        let store = store.clone();
        producers.spawn(async move {
            use futures_util::stream::{FuturesUnordered, StreamExt};
            let mut in_flight = FuturesUnordered::new();
            let mut next = 0u64;
            while next < per_producer || !in_flight.is_empty() {
                while next < per_producer && in_flight.len() < 125 {
                    let n = p * per_producer + next + 1;
                    let store = store.clone();
                    in_flight.push(async move {
                        store
                            .write(move |tx| tx.append_event(stress_event("bench", n)))
                            .await
                    });
                    next += 1;
                }
                if let Some(r) = in_flight.next().await {
                    r?;
                }
            }
            Ok::<_, crate::store::StoreError>(())
        });
    }
    while let Some(r) = producers.join_next().await {
        r??;
    }
    let events = per_producer * 8;
    let burst = started.elapsed();
    let burst_rate = events as f64 / burst.as_secs_f64();
    store.close().await?;
    let last = {
        let store = Store::open(&path, StoreOptions::default())?;
        let rx = store.read()?;
        rx.last_seq("bench")?
    };
    anyhow::ensure!(
        last == events,
        "burst wrote {last} events, expected {events}"
    );
    println!(
        "store.burst       {events} durable events, 1000 in flight: {:.2} s, {:.0} events/s",
        burst.as_secs_f64(),
        burst_rate
    );

    // Raw redb in the same run: 1,000 events per commit, same tables.
    let raw_rate = raw_redb_rate(&dir.join("raw.redb"), events)?;
    println!(
        "store.raw_redb    {events} events, 1000 per commit: {:.0} events/s; writer/raw ratio {:.2}",
        raw_rate,
        burst_rate / raw_rate
    );

    // (b) latency: 8 producers each awaiting its own acknowledgement.
    let path = dir.join("latency.redb");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path, StoreOptions::default())?;
    let per_producer = 400u64;
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for p in 0..8u64 {
        let store = store.clone();
        tasks.spawn(async move {
            let mut lat = Vec::with_capacity(per_producer as usize);
            for i in 0..per_producer {
                let t0 = Instant::now();
                store
                    .write(move |tx| tx.append_event(stress_event("bench", p * 1_000_000 + i)))
                    .await?;
                lat.push(t0.elapsed());
            }
            Ok::<_, crate::store::StoreError>(lat)
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    let elapsed = started.elapsed();
    all.sort();
    println!(
        "store.latency     8 producers x {per_producer} awaited appends: p50 {} p99 {}, {:.0} events/s",
        millis(percentile(&all, 0.5)),
        millis(percentile(&all, 0.99)),
        all.len() as f64 / elapsed.as_secs_f64()
    );
    store.close().await?;
    Ok(())
}

fn raw_redb_rate(path: &Path, events: u64) -> anyhow::Result<f64> {
    use crate::store::schema;
    let _ = std::fs::remove_file(path);
    let db = redb::Database::create(path)?;
    let started = Instant::now();
    let mut n = 0u64;
    while n < events {
        let txn = db.begin_write()?;
        {
            let mut t = txn.open_table(schema::EVENTS)?;
            let mut k = txn.open_table(schema::EVENTS_BY_KIND)?;
            for _ in 0..1000.min(events - n) {
                n += 1;
                let rec = json!({"event_seq": n, "id": crate::new_id("evt"), "ts": crate::format_ts(crate::now_ms()),
                    "kind": STRESS_KIND, "agent_id": "bench", "provenance": {}, "payload": stress_payload(n)});
                let bytes = crate::store::codec::pack(serde_json::to_vec(&rec)?);
                t.insert(("bench", n), bytes.as_slice())?;
                k.insert(("bench", STRESS_KIND, n), ())?;
            }
        }
        txn.commit()?;
    }
    Ok(events as f64 / started.elapsed().as_secs_f64())
}

/// Fill the default agent's ledger of a store under `home` to `target`
/// events, in jobs of 1,000 (what a busy writer batches: each commit
/// seals its events into blocks as the runtime's would).
pub(super) async fn fill_ledger(store: &Store, agent: &str, target: u64) -> anyhow::Result<()> {
    let have = store.read()?.last_seq(agent)?;
    let mut n = have;
    while n < target {
        let chunk = 1_000.min(target - n);
        let start = n;
        let agent = agent.to_owned();
        store
            .write(move |tx| {
                for i in 1..=chunk {
                    tx.append_event(stress_event(&agent, start + i))?;
                }
                Ok(())
            })
            .await?;
        n += chunk;
    }
    Ok(())
}

async fn bench_ledger(dir: &Path, ledger: u64) -> anyhow::Result<()> {
    let home = dir.join("home");
    let paths = super::paths::Paths::under(&home);
    paths.ensure()?;
    let store = Store::open(&paths.store_file(), StoreOptions::default())?;
    crate::runtime::admission::ensure_agent(&store, "main").await?;
    for size in [10_000u64, ledger] {
        let t0 = Instant::now();
        fill_ledger(&store, "main", size).await?;
        let fill = t0.elapsed();
        let mut times = Vec::new();
        for i in 0..200u64 {
            let from = size / 2 - 500 + (i % 7);
            let t = Instant::now();
            let rx = store.read()?;
            let page = rx.events("main", from, 1000)?;
            times.push(t.elapsed());
            anyhow::ensure!(page.len() == 1000, "short page");
        }
        times.sort();
        println!(
            "ledger.page       1000 events from the middle of {size}: p50 {} p99 {} (filled in {:.1} s)",
            millis(percentile(&times, 0.5)),
            millis(percentile(&times, 0.99)),
            fill.as_secs_f64()
        );
    }
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let rx = store.read()?;
        for agent in rx.agents::<AgentRecord>()? {
            agent_summary(&rx, &agent, dir, &Default::default())?;
        }
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "status.summary    agent summaries on a {ledger}-event store (in process): p50 {}",
        micros(percentile(&times, 0.5))
    );
    store.close().await?;
    console_startup(&paths, ledger).await?;
    // The whole command, as an operator runs it.
    let exe = std::env::current_exe()?;
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = std::process::Command::new(&exe)
            .arg("status")
            .env("HOLON_HOME", &home)
            .output()?;
        times.push(t.elapsed());
        anyhow::ensure!(
            out.status.success(),
            "holon status failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    times.sort();
    println!(
        "status.command    `holon status` on a {ledger}-event store: p50 {} (whole process)",
        millis(percentile(&times, 0.5))
    );
    Ok(())
}

/// Start-up to the first drawn console frame on the big store: open it,
/// start the runtime, bootstrap the agent, fetch the history page the
/// console asks for, draw one frame. Process spawn and terminal set-up are
/// not included (`status.command` shows what a process start costs).
async fn console_startup(paths: &super::paths::Paths, ledger: u64) -> anyhow::Result<()> {
    use crate::ui::tui::view;
    let t = Instant::now();
    let store = Store::open(&paths.store_file(), StoreOptions::default())?;
    let (host, state) = super::bench_older::open_console(store, paths).await?;
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40))?;
    terminal.draw(|f| view(&state, f))?;
    let elapsed = t.elapsed();
    println!(
        "console.startup   store with {ledger} events: first frame after {} (open, recover, bootstrap, history page, draw)",
        millis(elapsed)
    );
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    Ok(())
}
