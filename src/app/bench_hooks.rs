//! `holon debug bench hooks`: what an operator hook adds to a tool call,
//! through the real runtime (a turn of a model over HTTP, the stub
//! provider, making `CALLS` calls of a tool that only reads the store).
//! Three runtimes take turns: no hooks; one sandboxed `pre_tool` hook that
//! reads its input and exits 0; the same beside a `post_tool` hook, which
//! runs off the turn's path. The figures: each turn's time per call over
//! the no-hook turns', and each hook run's own time as `hook_ran` records
//! it (spawn, sandbox, the shell, the wait). Then the reviewer: a runtime
//! under `on_write` whose every command asks, reviewed by a stub model
//! that answers at once with `allow` (`reviewer_may = "allow_and_deny"`):
//! from the request recorded to the verdict recorded, and to the call
//! answered, which is what a review adds beyond the model's own time.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use holon_stub::{canned, Canned, StubServer};
use serde_json::{json, Value};

use super::bench::{millis, percentile};
use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::settings::hooks::Hooks;
use crate::store::{Store, StoreOptions};

const TURNS: usize = 12;
const CALLS: usize = 10;

/// The scripted model: `CALLS` calls in the first round, then an answer;
/// as the reviewer (`gpt-reviewer`), `allow`.
fn answer(body: &Value, ids: &AtomicUsize) -> Canned {
    if body["model"] == "gpt-reviewer" {
        let verdict = r#"{"verdict": "allow", "reason": "a harmless local command"}"#;
        return Canned::json(200, canned::chat_json(verdict, &[]));
    }
    // The turn's state rides as a user message after the results.
    let is_state = |m: &&Value| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(crate::runtime::provider::wire::is_turn_state)
    };
    // After the calls' results, or an approval's answer joined to the turn.
    let answered = |m: &Value| {
        m["role"] == "tool"
            || (m["role"] == "user"
                && m["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("[approval ")))
    };
    let last_is_result = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| !is_state(m)))
        .is_some_and(answered);
    if last_is_result {
        return Canned::json(200, canned::chat_json("Done.", &[]));
    }
    let text = body.to_string();
    // A prompt to review, not yet answered by its approval's result.
    let asks = text.rfind("review me");
    if asks.is_some() && text.rfind("[approval ") < asks {
        // One command that asks (under on_write) and ends the turn.
        let id = format!("r{}", ids.fetch_add(1, Ordering::Relaxed));
        let args = json!({"cmd": "touch reviewed.txt"}).to_string();
        return Canned::json(200, canned::chat_json("", &[(&id, "ExecCommand", &args)]));
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
        hooks: crate::runtime::settings::hooks::HooksSection,
    }
    let file: File = toml::from_str(text)?;
    crate::runtime::settings::hooks::check(file.hooks).map_err(|(k, m)| anyhow::anyhow!("{k}: {m}"))
}

struct Mode {
    host: RuntimeHost,
    turns: Vec<Duration>,
}

async fn start(dir: &Path, base: &str, hooks: Hooks) -> anyhow::Result<Mode> {
    let provider = super::bench_frame::stub_chain(base, "openai_chat", 128_000)?;
    start_with(dir, Arc::new(move |_| Arc::clone(&provider)), |config| {
        config.policy.approval = crate::model::approval::Approval::Never;
        config.hooks = hooks;
    })
    .await
}

async fn start_with(
    dir: &Path,
    provider: crate::runtime::handle::ProviderSource,
    set: impl FnOnce(&mut HostConfig),
) -> anyhow::Result<Mode> {
    std::fs::create_dir_all(dir)?;
    let store = Store::open(&dir.join("hooks.redb"), StoreOptions::default())?;
    let mut config = HostConfig::new(dir.join("data"), provider);
    set(&mut config);
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
    reviewer(dir, model.base()).await
}

/// What the reviewer adds to an approval request, with a model that
/// answers at once.
async fn reviewer(dir: &Path, base: &str) -> anyhow::Result<()> {
    use crate::protocol::events::Event;
    const REQUESTS: usize = 40;
    // The agent's model and the reviewer's, both the stub, told apart by
    // name: the provider source builds each agent's chain by its model.
    let agent = super::bench_frame::stub_chain(base, "openai_chat", 128_000)?;
    let review = super::bench_frame::stub_chain_for(base, "openai_chat", 128_000, "gpt-reviewer")?;
    let source: crate::runtime::handle::ProviderSource =
        Arc::new(move |rec| match rec.model_override.as_deref() {
            Some(m) if m.ends_with("gpt-reviewer") => Arc::clone(&review),
            _ => Arc::clone(&agent),
        });
    let policy = dir.join("reviewer-policy.md");
    std::fs::write(&policy, "Commands in the agent's own home are fine.\n")?;
    let mode = start_with(&dir.join("reviewer"), source, |config| {
        config.policy.approval = crate::model::approval::Approval::OnWrite;
        config.reviewer = crate::runtime::settings::reviewer::ReviewerConfig {
            model: Some("bench/gpt-reviewer".into()),
            policy_file: Some(policy),
            may: crate::model::review::ReviewerMay::AllowAndDeny,
            timeout: Duration::from_secs(30),
            // Measured: the reviewer's own overhead, not a chosen wait.
            hold: Duration::ZERO,
            ..Default::default()
        };
    })
    .await?;
    for n in 0..REQUESTS {
        mode.host
            .submit(AdmissionRequest::operator_prompt(
                "main",
                &format!("review me {n}"),
                Priority::Normal,
                DeliverySurface::CliPrompt,
            ))
            .await?;
        // The turn waits at the request; the review answers it, and the
        // same turn goes on with the result.
        let answered = async {
            mode.host.until_idle().await;
            mode.host.reviews_settled().await;
            mode.host.until_idle().await;
        };
        tokio::time::timeout(Duration::from_secs(60), answered)
            .await
            .map_err(|_| anyhow::anyhow!("request {n} was not answered within 60 s"))?;
    }
    let rx = mode.host.store().read()?;
    let ms = |ts: &str| crate::runtime::scheduler::parse_ts_ms(ts).unwrap_or(0);
    let (mut to_verdict, mut to_answer, mut model) = (Vec::new(), Vec::new(), Vec::new());
    let asked = rx.events_of_kind("main", "approval_requested", 0, 100_000)?;
    let reviewed = rx.events_of_kind("main", "approval_reviewed", 0, 100_000)?;
    let granted = rx.events_of_kind("main", "approval_granted", 0, 100_000)?;
    let at = |events: &[crate::model::event::EventRecord], id: &str| {
        events.iter().find_map(|e| match e.event() {
            Event::ApprovalRequested(p)
            | Event::ApprovalReviewed(p)
            | Event::ApprovalGranted(p)
                if p.approval.id == id =>
            {
                Some((ms(&e.ts), p.approval.review.clone()))
            }
            _ => None,
        })
    };
    for e in &asked {
        let Event::ApprovalRequested(p) = e.event() else {
            continue;
        };
        let id = p.approval.id;
        let (Some((t0, _)), Some((t1, review)), Some((t2, _))) =
            (at(&asked, &id), at(&reviewed, &id), at(&granted, &id))
        else {
            continue;
        };
        to_verdict.push(Duration::from_millis((t1 - t0).max(0) as u64));
        to_answer.push(Duration::from_millis((t2 - t0).max(0) as u64));
        if let Some(r) = review {
            model.push(Duration::from_millis(r.latency_ms));
        }
    }
    drop(rx);
    for v in [&mut to_verdict, &mut to_answer, &mut model] {
        v.sort();
    }
    println!(
        "hooks.reviewer    {} requests under on_write, reviewed by a stub model that allows at once: request to verdict recorded p50 {} p99 {}; to the call approved p50 {} p99 {}; the review itself (prompt, model call, parse) p50 {}",
        to_verdict.len(),
        millis(percentile(&to_verdict, 0.5)),
        millis(percentile(&to_verdict, 0.99)),
        millis(percentile(&to_answer, 0.5)),
        millis(percentile(&to_answer, 0.99)),
        millis(percentile(&model, 0.5)),
    );
    mode.host.shutdown().await;
    Ok(())
}
