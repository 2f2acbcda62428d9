//! `holon debug bench hooks`: what an operator hook adds to a tool call,
//! through the real runtime (a turn of a model over HTTP, the stub
//! provider, making `CALLS` calls of a tool that only reads the store).
//! Three runtimes take turns: no hooks; one sandboxed `pre_tool` hook that
//! reads its input and exits 0; the same beside a `post_tool` hook, which
//! runs off the turn's path. The figures: each turn's time per call over
//! the no-hook turns', and each hook run's own time as `hook_ran` records
//! it (spawn, sandbox, the shell, the wait).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use holon_stub::{canned, Canned, StubServer};
use serde_json::{json, Value};

use super::bench::{millis, percentile};
use crate::runtime::envelope::{AdmissionRequest, DeliverySurface, Priority};
use crate::runtime::hooks::Hooks;
use crate::runtime::host::{HostConfig, RuntimeHost};
use crate::store::{Store, StoreOptions};

const TURNS: usize = 12;
const CALLS: usize = 10;

/// The scripted model: `CALLS` calls in the first round, then an answer.
fn answer(body: &Value, ids: &AtomicUsize) -> Canned {
    // The turn's state rides as a user message after the results.
    let is_state = |m: &&Value| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(crate::runtime::provider::wire::is_turn_state)
    };
    let last_is_tool = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| !is_state(m)))
        .is_some_and(|m| m["role"] == "tool");
    if last_is_tool {
        return Canned::json(200, canned::chat_json("Done.", &[]));
    }
    let calls: Vec<(String, String, String)> = (0..CALLS)
        .map(|_| {
            let id = format!("c{}", ids.fetch_add(1, Ordering::Relaxed));
            (id, "ListWorkItems".to_owned(), json!({}).to_string())
        })
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    Canned::json(200, canned::chat_json("", &calls))
}

fn hooks(text: &str) -> anyhow::Result<Hooks> {
    #[derive(serde::Deserialize)]
    struct File {
        hooks: crate::runtime::hooks::config::HooksSection,
    }
    let file: File = toml::from_str(text)?;
    crate::runtime::hooks::config::check(file.hooks).map_err(|(k, m)| anyhow::anyhow!("{k}: {m}"))
}

struct Mode {
    host: RuntimeHost,
    turns: Vec<Duration>,
}

async fn start(dir: &Path, base: &str, hooks: Hooks) -> anyhow::Result<Mode> {
    std::fs::create_dir_all(dir)?;
    let provider = super::bench_frame::stub_chain(base, "openai_chat", 128_000)?;
    let store = Store::open(&dir.join("hooks.redb"), StoreOptions::default())?;
    let mut config = HostConfig::new(dir.join("data"), Arc::new(move |_| Arc::clone(&provider)));
    config.policy.approval = crate::model::approval::Approval::Never;
    config.hooks = hooks;
    let host = RuntimeHost::start(store, config).await?;
    host.create_agent("main").await?;
    Ok(Mode {
        host,
        turns: Vec::new(),
    })
}

async fn turn(mode: &mut Mode, n: usize) -> anyhow::Result<()> {
    let t0 = Instant::now();
    mode.host
        .submit(AdmissionRequest::operator_prompt(
            "main",
            &format!("turn {n}: list the work items"),
            Priority::Normal,
            DeliverySurface::CliPrompt,
        ))
        .await?;
    tokio::time::timeout(Duration::from_secs(120), mode.host.until_idle())
        .await
        .map_err(|_| anyhow::anyhow!("turn {n} did not end within 120 s"))?;
    mode.turns.push(t0.elapsed());
    Ok(())
}

/// Each `hook_ran` of `event`: its recorded duration.
fn runs(mode: &Mode, event: &str) -> anyhow::Result<Vec<Duration>> {
    let events = mode
        .host
        .store()
        .read()?
        .events_of_kind("main", "hook_ran", 0, 100_000)?;
    let mut out: Vec<Duration> = events
        .iter()
        .filter_map(|e| match e.event() {
            crate::protocol::events::Event::HookRan(p) if p.event == event => {
                Some(Duration::from_millis(p.duration_ms))
            }
            _ => None,
        })
        .collect();
    out.sort();
    Ok(out)
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let ids = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ids);
    let model = StubServer::serving(Arc::new(move |body: &Value| answer(body, &counter))).await;
    let pre = "[[hooks.pre_tool]]\nname = \"pre\"\ncommand = \"cat > /dev/null; exit 0\"\n";
    let post = "[[hooks.post_tool]]\nname = \"post\"\ncommand = \"cat > /dev/null; exit 0\"\n";
    let mut none = start(&dir.join("none"), model.base(), Hooks::default()).await?;
    let mut with_pre = start(&dir.join("pre"), model.base(), hooks(pre)?).await?;
    let mut both = start(
        &dir.join("both"),
        model.base(),
        hooks(&format!("{pre}{post}"))?,
    )
    .await?;
    // Alternated, so machine noise lands on every mode.
    for n in 0..TURNS {
        turn(&mut none, n).await?;
        turn(&mut with_pre, n).await?;
        turn(&mut both, n).await?;
    }
    // The post_tool hooks of the last turn run after it: wait for them.
    let deadline = Instant::now() + Duration::from_secs(60);
    while runs(&both, "post_tool")?.len() < TURNS * CALLS && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let per_call = |m: &Mode| -> Vec<Duration> {
        let mut v: Vec<Duration> = m.turns.iter().map(|t| *t / CALLS as u32).collect();
        v.sort();
        v
    };
    let base = per_call(&none);
    let over = |m: &Mode| -> Vec<Duration> {
        let b = percentile(&base, 0.5);
        let mut v: Vec<Duration> = per_call(m).iter().map(|t| t.saturating_sub(b)).collect();
        v.sort();
        v
    };
    let pre_runs = runs(&with_pre, "pre_tool")?;
    let post_runs = runs(&both, "post_tool")?;
    let sandboxed = crate::runtime::sandbox::Support::probe().usable();
    println!(
        "hooks.call        a turn of {CALLS} ListWorkItems calls, {TURNS} turns a mode: per call, no hooks p50 {}; with a pre_tool hook ({}) p50 {} (+{} a call, p99 +{})",
        millis(percentile(&base, 0.5)),
        if sandboxed { "sandboxed" } else { "unconfined: no sandbox here" },
        millis(percentile(&per_call(&with_pre), 0.5)),
        millis(percentile(&over(&with_pre), 0.5)),
        millis(percentile(&over(&with_pre), 0.99)),
    );
    println!(
        "hooks.run         one pre_tool run as hook_ran records it ({} runs): p50 {} p99 {}",
        pre_runs.len(),
        millis(percentile(&pre_runs, 0.5)),
        millis(percentile(&pre_runs, 0.99)),
    );
    println!(
        "hooks.post        with a post_tool hook too (off the turn's path): per call p50 +{} over no hooks; {} post_tool runs, p50 {}",
        millis(percentile(&over(&both), 0.5)),
        post_runs.len(),
        millis(percentile(&post_runs, 0.5)),
    );
    for m in [none, with_pre, both] {
        m.host.shutdown().await;
    }
    Ok(())
}
