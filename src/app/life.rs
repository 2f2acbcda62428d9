//! A simulated life of a runtime (`holon debug life`, and `holon debug
//! bench life` for its figures): agents with a realistic day each, on a
//! paused clock the simulation moves forward, so a year runs in minutes.
//!
//! Each simulated day, each agent gets three operator prompts (one asks it
//! to sleep six hours, a timer), an external wake hint (a CI result), a
//! work item every third day that is completed two days later, a child
//! every thirtieth day; its context window is small, so it compacts as
//! history grows. The day passes in four steps of six hours; after each,
//! every actor is woken (timers fire) and the runtime settles. With
//! `retain_days`, the store is pruned at each step of a day's end, as the
//! runtime's own schedule would.
//!
//! At the start and after every 30 simulated days it reports: the
//! process's RSS, the store file's bytes and the events it keeps,
//! scheduler decision time (projection load and decide, per agent),
//! prompt-frame build time and memory-search latency (the query, once the
//! index has taken in the month's briefs).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::model::usage::ConversationItem;
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::provider::scripted::{Scripted, ScriptedProvider};
use crate::runtime::provider::ProviderRequest;
use crate::store::{Store, StoreOptions};

const DAY_MS: i64 = 86_400_000;
const STEP_MS: i64 = DAY_MS / 4;

/// The instant every simulation starts at (paused clock).
pub const START: &str = "2026-01-01T00:00:00Z";

#[derive(Debug, Clone)]
pub struct LifeArgs {
    pub agents: usize,
    pub days: u32,
    /// Prune history older than this many days at each day's end; `None`
    /// keeps everything.
    pub retain_days: Option<u32>,
    /// The Holon home the store and agent homes go in (kept, so they can
    /// be inspected with `HOLON_HOME=DIR holon ...`).
    pub dir: PathBuf,
}

/// One report: at the start, and after every 30 simulated days.
#[derive(Debug, Clone, Serialize)]
pub struct Month {
    pub day: u32,
    pub rss_mib: f64,
    /// RSS once the allocator gave its free pages back, as the runtime
    /// does by itself after a quiet second (which a simulation running
    /// flat out never has).
    pub rss_quiet_mib: f64,
    pub store_bytes: u64,
    /// Events the agents' ledgers hold now, and how many were written.
    pub events_kept: u64,
    pub events_written: u64,
    pub decide_p50_us: f64,
    pub decide_p99_us: f64,
    pub frame_p50_ms: f64,
    pub frame_p99_ms: f64,
    pub search_p50_ms: f64,
    pub search_p99_ms: f64,
    /// Model requests answered so far (all agents: turns' rounds and
    /// the summariser's calls).
    pub model_requests: u64,
}

impl Month {
    /// The report as one line (what `holon debug life` and the benchmark
    /// print).
    pub fn line(&self) -> String {
        format!(
            "day {:>3}: RSS {:.1} MiB ({:.1} MiB quiet), store {:.1} MB ({} of {} events kept), decide p50 {:.0} µs p99 {:.0} µs, frame p50 {:.2} ms p99 {:.2} ms, search p50 {:.2} ms p99 {:.2} ms, {} model requests",
            self.day,
            self.rss_mib,
            self.rss_quiet_mib,
            self.store_bytes as f64 / 1e6,
            self.events_kept,
            self.events_written,
            self.decide_p50_us,
            self.decide_p99_us,
            self.frame_p50_ms,
            self.frame_p99_ms,
            self.search_p50_ms,
            self.search_p99_ms,
            self.model_requests
        )
    }
}

/// What the whole run did, for the correctness check.
#[derive(Debug, Clone, Serialize)]
pub struct LifeReport {
    pub months: Vec<Month>,
    pub prompts: u64,
    pub store: PathBuf,
    pub agents: Vec<String>,
    pub wall_secs: f64,
}

/// The model: a short answer, a Sleep when asked, a summary for the
/// context summariser; after a tool result, a closing answer.
fn model(r: &ProviderRequest) -> Scripted {
    if r.system_prompt
        .starts_with("You maintain the working summary")
    {
        return Scripted::text("Earlier: prompts answered, work items done, timers slept.");
    }
    let after_tool = matches!(
        r.conversation.last(),
        Some(ConversationItem::ToolResult { .. })
    );
    let asked_sleep = r.conversation.iter().rev().find_map(|c| match c {
        ConversationItem::UserText { text } => Some(text.contains("[sleep]")),
        _ => None,
    });
    match (after_tool, asked_sleep) {
        (false, Some(true)) => Scripted::tools(
            "Resting until the build is back.",
            &[(
                "Sleep",
                serde_json::json!({ "duration_ms": STEP_MS, "reason": "waiting for the nightly build" }),
            )],
        ),
        _ => Scripted::text(&format!(
            "Done. {}",
            "Checked the deploy, the staging logs and the parser tests; nothing else is needed. "
                .repeat(3)
        )),
    }
}

/// Keeps the scripted model answering for as long as the run lasts.
fn feed(provider: &ScriptedProvider, n: usize) {
    let f: Arc<dyn Fn(&ProviderRequest) -> Scripted + Send + Sync> = Arc::new(model);
    for _ in 0..n {
        provider.push(Scripted::With(Arc::clone(&f)));
    }
}

/// The `p` quantile of sorted durations (zero when there are none): the
/// simulation's and every benchmark's.
pub(super) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// A process's resident memory in KiB (`pid` or `self`), from `/proc`;
/// 0 where it cannot be read.
pub(super) fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn rss_mib() -> f64 {
    rss_kib("self") as f64 / 1024.0
}

async fn measure(
    host: &RuntimeHost,
    store_path: &Path,
    agents: &[String],
    homes: &Path,
    day: u32,
    model_requests: u64,
) -> anyhow::Result<Month> {
    let rx = host.store().read()?;
    let now = crate::now_ms();
    let (mut decide, mut search) = (Vec::new(), Vec::new());
    let (mut kept, mut written) = (0u64, 0u64);
    for id in agents {
        let last = rx.last_seq(id)?;
        kept += last + 1 - rx.ledger_start(id)?.min(last + 1);
        written += last;
        let t = Instant::now();
        if let Some(live) = crate::runtime::projection::load(&rx, id, now)? {
            let _ = crate::runtime::scheduler::decide(
                &live.projection,
                crate::runtime::scheduler::SchedulerInput::Idle,
            );
        }
        decide.push(t.elapsed());
        // The index first takes in what the month added (a search does
        // that by itself, a little at a time, as an agent lives); then the
        // query alone is timed.
        crate::runtime::recall::open_synced(&rx, &homes.join(id), id)
            .map_err(anyhow::Error::msg)?;
        let t = Instant::now();
        crate::runtime::recall::search(
            &rx,
            &homes.join(id),
            id,
            "deploy staging",
            Some("agent_home"),
            8,
        )
        .map_err(anyhow::Error::msg)?;
        search.push(t.elapsed());
    }
    drop(rx);
    let mut frame = Vec::new();
    for id in agents {
        let t = Instant::now();
        host.prompt_preview(id).await?;
        frame.push(t.elapsed());
    }
    for v in [&mut decide, &mut search, &mut frame] {
        v.sort();
    }
    let rss_busy = rss_mib();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok(Month {
        day,
        rss_mib: rss_busy,
        rss_quiet_mib: {
            crate::runtime::host::release_free_heap();
            rss_mib()
        },
        store_bytes: std::fs::metadata(store_path).map_or(0, |m| m.len()),
        events_kept: kept,
        events_written: written,
        decide_p50_us: us(percentile(&decide, 0.5)),
        decide_p99_us: us(percentile(&decide, 0.99)),
        frame_p50_ms: ms(percentile(&frame, 0.5)),
        frame_p99_ms: ms(percentile(&frame, 0.99)),
        search_p50_ms: ms(percentile(&search, 0.5)),
        search_p99_ms: ms(percentile(&search, 0.99)),
        model_requests,
    })
}

/// Run the simulation on the process's clock, which must be paused (the
/// simulation moves it). `on_month` sees each report as it is made.
pub async fn simulate(
    args: &LifeArgs,
    mut on_month: impl FnMut(&Month),
) -> anyhow::Result<LifeReport> {
    anyhow::ensure!(
        crate::clock::wall(Duration::from_secs(1)).is_none(),
        "a simulated life needs the paused clock (it moves it itself)"
    );
    let started = Instant::now();
    // Laid out as a Holon home: `HOLON_HOME=DIR holon events ...` reads it.
    let paths = super::paths::Paths::under(&args.dir);
    std::fs::create_dir_all(&paths.data_dir)?;
    let store_path = paths.store_file();
    let store = Store::open(&store_path, StoreOptions::default())?;
    let provider = Arc::new(
        ScriptedProvider::new(Vec::new())
            .with_context_window(8_192)
            .forgetting(),
    );
    let p: Arc<dyn crate::runtime::provider::Provider> = Arc::clone(&provider) as _;
    let data = paths.data_dir.clone();
    let mut config = HostConfig::new(data.clone(), Arc::new(move |_| Arc::clone(&p)));
    config.default_agent = "agent-00".into();
    let host = RuntimeHost::start(store.clone(), config).await?;
    let agents: Vec<String> = (0..args.agents).map(|i| format!("agent-{i:02}")).collect();
    for a in &agents {
        host.create_agent(a).await?;
    }
    let homes = data.join("agents");
    let mut months = Vec::new();
    let mut prompts = 0u64;
    let mut open_work: Vec<(String, String, u32)> = Vec::new();
    let first = measure(&host, &store_path, &agents, &homes, 0, 0).await?;
    on_month(&first);
    months.push(first);
    for day in 1..=args.days {
        // About ten model requests per agent a day: topped up, never
        // piled up (the script's own memory would count in the RSS).
        let want = agents.len() * 12;
        feed(&provider, want.saturating_sub(provider.remaining()));
        for (i, a) in agents.iter().enumerate() {
            for n in 0..3 {
                let sleep = n == 1 && day % 2 == 0;
                let text = format!(
                    "day {day}, note {n}: check the deploy and the staging logs{}",
                    if sleep { " [sleep]" } else { "" }
                );
                host.submit(AdmissionRequest::operator_prompt(
                    a,
                    &text,
                    Priority::Normal,
                    DeliverySurface::CliPrompt,
                ))
                .await?;
                prompts += 1;
            }
            host.wake_hint(a, "the CI run finished", Some("ci".into()), None)
                .await?;
            if (day + i as u32).is_multiple_of(3) {
                let w = host
                    .create_work_item(
                        a,
                        crate::protocol::views::CreateWorkItem {
                            objective: format!("fix the flaky parser test (day {day})"),
                            ..Default::default()
                        },
                    )
                    .await?;
                open_work.push((a.clone(), w.id, day));
            }
            if (day + i as u32).is_multiple_of(30) {
                host.spawn_agent(
                    a,
                    crate::runtime::agents::child_ops::SpawnRequest {
                        preset: crate::model::agent::ProfilePreset::PrivateChild,
                        initial_message: Some("look into the staging logs and report".into()),
                        agent_id: None,
                        workspace_mode: crate::model::task::ChildWorkspaceMode::Inherit,
                        parent_message_id: None,
                        work_item_id: None,
                    },
                )
                .await?;
            }
        }
        let (due, rest): (Vec<_>, Vec<_>) =
            open_work.into_iter().partition(|(_, _, d)| day >= d + 2);
        open_work = rest;
        for (a, w, _) in due {
            host.complete_work_item(&a, &w, Some("done".into())).await?;
        }
        for _ in 0..4 {
            host.until_idle().await;
            crate::clock::advance(STEP_MS);
            // Every actor, children too: their timers fire on a wake.
            let all: Vec<crate::model::agent::AgentRecord> = host.store().read()?.agents()?;
            for a in all.iter().filter(|a| a.archived_at.is_none()) {
                host.wake(&a.id);
            }
        }
        host.until_idle().await;
        if let Some(keep) = args.retain_days {
            let cutoff = crate::runtime::retention::cutoff_ms(crate::now_ms(), keep);
            crate::runtime::retention::prune_store(
                host.store(),
                Some(&data),
                cutoff,
                false,
                crate::model::retention::PruneBy::RetainDays,
            )
            .await?;
        }
        if day.is_multiple_of(30) || day == args.days {
            let m = measure(&host, &store_path, &agents, &homes, day, provider.served()).await?;
            on_month(&m);
            months.push(m);
        }
    }
    host.shutdown().await;
    drop(host);
    store.close().await?;
    Ok(LifeReport {
        months,
        prompts,
        store: store_path,
        agents,
        wall_secs: started.elapsed().as_secs_f64(),
    })
}
