//! One-shot commands for scripts: `status`, `send`, `events`. Today they
//! read and write the store directly (a running runtime owns the store and
//! they say so); the control socket routes them through that runtime once
//! it exists. Every command has a `--json` form with a stable shape.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

use super::cli::{EventsArgs, SendArgs};
use super::Context;
use crate::runtime::admission::admit;
use crate::runtime::agent::AgentRecord;
use crate::runtime::envelope::{AdmissionRequest, DeliverySurface};
use crate::runtime::inspect::{agent_summary, AgentSummary};
use crate::store::{EventRecord, SCHEMA_VERSION};

/// Writes lines to stdout; a closed pipe (`| head`) ends output quietly.
struct Out {
    lock: std::io::StdoutLock<'static>,
    closed: bool,
}

impl Out {
    fn new() -> Out {
        Out {
            lock: std::io::stdout().lock(),
            closed: false,
        }
    }

    fn line(&mut self, s: &str) -> anyhow::Result<()> {
        if self.closed {
            return Ok(());
        }
        match writeln!(self.lock, "{s}") {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub home: Option<String>,
    pub store: String,
    pub schema_version: u32,
    pub runtime: &'static str,
    pub default_agent: String,
    pub default_model: Option<String>,
    pub agents: Vec<AgentSummary>,
}

async fn status_report(ctx: &Context) -> anyhow::Result<StatusReport> {
    let store = ctx.open_store().await?;
    let rx = store.read()?;
    let agents: Vec<AgentRecord> = rx.agents()?;
    let mut summaries = Vec::with_capacity(agents.len());
    for agent in &agents {
        summaries.push(agent_summary(&rx, agent)?);
    }
    Ok(StatusReport {
        home: ctx.paths.home.as_ref().map(|h| h.display().to_string()),
        store: store.path().display().to_string(),
        schema_version: rx.schema_version().unwrap_or(SCHEMA_VERSION),
        runtime: "not_running",
        default_agent: ctx.config.default_agent.clone(),
        default_model: ctx.config.default_model.clone(),
        agents: summaries,
    })
}

fn print_status(out: &mut Out, report: &StatusReport) -> anyhow::Result<()> {
    out.line(&format!("store    {}", report.store))?;
    out.line(&format!(
        "runtime  {}",
        match report.runtime {
            "not_running" => "not running (read from the store)",
            other => other,
        }
    ))?;
    out.line(&format!(
        "model    {}",
        report
            .default_model
            .as_deref()
            .unwrap_or("none configured (set HOLON_MODEL, e.g. openai/gpt-4.1)")
    ))?;
    out.line("")?;
    out.line(&format!(
        "{:<16} {:<14} {:<20} {:>6} {:>6} {:>6} {:>8}",
        "AGENT", "STATUS", "POSTURE", "QUEUE", "WORK", "TASKS", "EVENTS"
    ))?;
    for a in &report.agents {
        let marker = if a.id == report.default_agent {
            "*"
        } else {
            " "
        };
        out.line(&format!(
            "{marker}{:<15} {:<14} {:<20} {:>6} {:>6} {:>6} {:>8}",
            a.id,
            a.status.as_str(),
            a.posture,
            a.queue_depth,
            a.work_items_open,
            a.tasks_active,
            a.last_event_seq
        ))?;
        out.line(&format!("  {}", a.posture_reason))?;
        if let Some(hint) = a.lifecycle_hint {
            out.line(&format!("  {hint}"))?;
        }
    }
    Ok(())
}

pub async fn status(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let report = status_report(ctx).await?;
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&report)?)?;
    } else {
        print_status(&mut out, &report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `holon` with no command. The console is not built yet, so this shows
/// the store's status and says so.
pub async fn overview(ctx: &Context) -> anyhow::Result<ExitCode> {
    let report = status_report(ctx).await?;
    let mut out = Out::new();
    out.line("The Holon console is not built yet; here is the status of your store.")?;
    out.line("Send a prompt with `holon send TEXT`, read events with `holon events`.")?;
    out.line("")?;
    print_status(&mut out, &report)?;
    Ok(ExitCode::SUCCESS)
}

pub async fn send(ctx: &Context, args: SendArgs) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store().await?;
    let agent = args
        .agent
        .unwrap_or_else(|| ctx.config.default_agent.clone());
    let req = AdmissionRequest::operator_prompt(
        &agent,
        &args.text,
        args.priority,
        DeliverySurface::CliPrompt,
    );
    let admitted = admit(&store, req).await?;
    let mut out = Out::new();
    if args.json {
        out.line(&serde_json::to_string(&admitted)?)?;
    } else {
        out.line(&format!(
            "queued {} for {} (priority {}, event {}); it runs when the runtime processes the queue",
            admitted.message_id,
            admitted.agent_id,
            admitted.priority.as_str(),
            admitted.event_seq
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A plain one-line rendering until the shared presentation layer lands.
fn human_event(e: &EventRecord) -> String {
    let mut payload = e.payload.to_string();
    if payload.chars().count() > 100 {
        payload = payload.chars().take(99).collect::<String>() + "…";
    }
    format!("{:>7}  {}  {:<26} {}", e.event_seq, e.ts, e.kind, payload)
}

pub async fn events(ctx: &Context, args: EventsArgs) -> anyhow::Result<ExitCode> {
    const PAGE: usize = 1000;
    let store = ctx.open_store().await?;
    let agent = args
        .agent
        .unwrap_or_else(|| ctx.config.default_agent.clone());
    let rx = store.read()?;
    if rx.agent::<AgentRecord>(&agent)?.is_none() {
        anyhow::bail!("no agent `{agent}`; list agents with `holon status`");
    }
    let mut out = Out::new();
    let mut remaining = args.limit.unwrap_or(usize::MAX);
    let mut from = args.from.max(1);
    while remaining > 0 && !out.closed {
        let want = remaining.min(PAGE);
        let page = match &args.kind {
            Some(kind) => rx.events_of_kind(&agent, kind, from, want)?,
            None => rx.events(&agent, from, want)?,
        };
        let Some(last) = page.last() else { break };
        from = last.event_seq + 1;
        remaining -= page.len();
        for e in &page {
            if args.json {
                out.line(&serde_json::to_string(e)?)?;
            } else {
                out.line(&human_event(e))?;
            }
        }
        if page.len() < want {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `holon work add`: a control-plane enqueue of an open work item.
pub async fn work_add(
    ctx: &Context,
    objective: String,
    agent: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store().await?;
    let agent = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let home = ctx.paths.agent_home(&agent);
    let req = crate::runtime::work_ops::CreateWorkItem {
        objective,
        ..Default::default()
    };
    let item = crate::runtime::work_ops::create(
        &store,
        &home,
        &agent,
        req,
        crate::runtime::work_ops::WorkItemSource::Operator,
    )
    .await?;
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string(&item)?)?;
    } else {
        out.line(&format!(
            "queued work item {} for {}: {}",
            item.id, agent, item.objective
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
