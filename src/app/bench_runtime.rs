//! Runtime benchmarks for `holon debug bench`: the pure `decide` on a large
//! projection, restart of a big agent to a ready runtime, and the CPU an
//! idle runtime uses.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bench::{fill_ledger, millis, percentile};
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::work::{PlanStatus, WorkItemRecord, WorkItemState};
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::provider::scripted::ScriptedProvider;
use crate::runtime::provider::Provider;
use crate::runtime::scheduler::{decide, ProjectionInputs, SchedulerInput, SchedulerProjection};
use crate::store::{Index, Keyed, Store, StoreOptions};

fn work_item(agent: &str, i: usize) -> WorkItemRecord {
    WorkItemRecord {
        id: format!("work_{i:06}"),
        agent_id: agent.to_owned(),
        workspace_id: "agent_home".into(),
        objective: format!("objective number {i}"),
        state: WorkItemState::Open,
        plan_status: if i.is_multiple_of(7) {
            PlanStatus::NeedsInput
        } else {
            PlanStatus::Ready
        },
        todo_list: Vec::new(),
        blocked_by: i.is_multiple_of(3).then(|| "waiting on review".to_owned()),
        recheck_at: None,
        recheck_consumed_at: None,
        result_summary: None,
        revision: 1,
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
    }
}

fn task(agent: &str, i: usize) -> TaskRecord {
    TaskRecord {
        id: format!("task_{i:04}"),
        agent_id: agent.to_owned(),
        kind: TaskKind::CommandTask,
        status: if i.is_multiple_of(2) {
            TaskStatus::Running
        } else {
            TaskStatus::Completed
        },
        wait_policy: WaitPolicy::Background,
        work_item_id: Some(format!("work_{i:06}")),
        parent_message_id: None,
        summary: None,
        detail: Default::default(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
        failure_artifact: None,
    }
}

pub fn decide_bench() {
    let mut agent = AgentRecord::new("bench", "2026-01-01T00:00:00.000Z".into());
    agent.status = AgentStatus::Asleep;
    let items: Vec<WorkItemRecord> = (0..1000).map(|i| work_item("bench", i)).collect();
    let tasks: Vec<TaskRecord> = (0..100).map(|i| task("bench", i)).collect();
    let keys = BTreeSet::new();
    let inputs = ProjectionInputs {
        agent: &agent,
        queue: &[],
        work_items: &items,
        tasks: &tasks,
        waiting_intents: &[],
        timers: &[],
        tool_executions: &[],
        emitted_tick_keys: &keys,
        last_turn_terminal: None,
        runtime_error: None,
        pending_approvals: &[],
        queued_beyond: &[],
    };
    let now = crate::now_ms();
    let t = Instant::now();
    let builds = 200;
    let mut projection = SchedulerProjection::build(inputs, now);
    for _ in 1..builds {
        projection = SchedulerProjection::build(inputs, now);
    }
    let build_ns = t.elapsed().as_nanos() / builds;
    let n = 20_000u128;
    let t = Instant::now();
    let mut kind = None;
    for _ in 0..n {
        kind = Some(decide(std::hint::black_box(&projection), SchedulerInput::Idle).kind);
    }
    let decide_ns = t.elapsed().as_nanos() / n;
    println!(
        "scheduler.decide  1000 work items, 100 tasks: decide {decide_ns} ns/op ({:?}); projection build {:.1} µs",
        kind.map(|k| k.as_str()).unwrap_or("?"),
        build_ns as f64 / 1000.0
    );
}

fn host_config(dir: &Path) -> HostConfig {
    let p: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(Vec::new()));
    HostConfig::new(dir.join("data"), Arc::new(move |_| Arc::clone(&p)))
}

pub async fn restart_bench(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join("restart.redb");
    let _ = std::fs::remove_file(&path);
    {
        let store = Store::open(&path, StoreOptions::default())?;
        crate::runtime::admission::ensure_agent(&store, "main").await?;
        fill_ledger(&store, "main", 100_000).await?;
        for chunk in 0..10 {
            store
                .write(move |tx| {
                    for i in chunk * 1000..(chunk + 1) * 1000 {
                        let mut w = work_item("main", i);
                        // Mostly finished history, 200 still open.
                        if i >= 200 {
                            w.state = WorkItemState::Completed;
                            w.blocked_by = None;
                        } else {
                            tx.index_insert(Index::OpenWorkItems, "main", &w.id)?;
                        }
                        tx.put(Keyed::WorkItems, "main", &w.id, &w)?;
                    }
                    Ok(())
                })
                .await?;
        }
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let store = Store::open(&path, StoreOptions::default())?;
        let before = store.read()?.last_seq("main")?;
        let host = RuntimeHost::start(store.clone(), host_config(dir)).await?;
        // Ready = the actor has recorded its first decision after start.
        let mut ready = false;
        for _ in 0..2000 {
            let rx = store.read()?;
            if !rx
                .events_of_kind("main", "scheduler_decision", before + 1, 1)?
                .is_empty()
            {
                ready = true;
                break;
            }
            drop(rx);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        times.push(t.elapsed());
        anyhow::ensure!(ready, "the runtime never decided after restart");
        host.shutdown().await;
        drop(host);
        drop(store);
    }
    times.sort();
    println!(
        "runtime.restart   100000 events, 10000 work items (200 open): ready in p50 {} (open + recover + first decision)",
        millis(percentile(&times, 0.5))
    );
    Ok(())
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

pub async fn idle_bench(dir: &Path, secs: u64) -> anyhow::Result<()> {
    let store = Store::open(&dir.join("idle.redb"), StoreOptions::default())?;
    let host = RuntimeHost::start(store, host_config(dir)).await?;
    for i in 0..4 {
        host.create_agent(&format!("agent-{i}")).await?;
    }
    // One pending timer far in the future: timers must not mean polling.
    host.create_timer("agent-0", 3_600_000, "far future", None)
        .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let cpu = cpu_time().saturating_sub(cpu0);
    let wall = t0.elapsed();
    println!(
        "runtime.idle      4 idle agents, 1 pending timer, {secs} s: CPU {} ({:.4}% of one core)",
        millis(cpu),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
    );
    host.shutdown().await;
    Ok(())
}
