//! One-shot commands for scripts: `status`, `send`, `events`, `work add`.
//! Each is written once against `RuntimeClient`: the running runtime's
//! socket when one answers, else `OfflineClient` over the store. Every
//! command has a `--json` form with a stable shape.

use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;

use serde::Serialize;

use super::cli::{EventsArgs, SendArgs};
use super::Context;
use crate::model::event::EventRecord;
use crate::protocol::views::AgentSummary;
use crate::protocol::{
    call_typed, follow, Admitted, EventsPage, Request, RuntimeClient, RuntimeStatus,
    SubscriptionItem,
};
use crate::store::SCHEMA_VERSION;
use crate::ui::present::counted;

/// Said when an agent works in the user's home or an ancestor of it (an
/// operator may attach it; a model never moves there): its commands may
/// then write anywhere in it.
fn holds_home(root: &str) -> Option<String> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let home = std::path::Path::new(&home).canonicalize().ok()?;
    let root = std::path::Path::new(root).canonicalize().ok()?;
    home.starts_with(&root).then(|| {
        format!(
            "WARNING: its writable root {} holds your home directory: its commands may write \
             anywhere in it (your shell's startup files, ~/.ssh); attached by you",
            root.display()
        )
    })
}

/// Writes lines to stdout; a closed pipe (`| head`) ends output quietly,
/// and the command's exit status is then 141 (`app::READER_GONE`), as a
/// shell gives any writer to a closed pipe.
pub(super) struct Out {
    lock: std::io::StdoutLock<'static>,
    closed: bool,
}

impl Out {
    pub(super) fn new() -> Out {
        Out {
            lock: std::io::stdout().lock(),
            closed: false,
        }
    }

    /// A line of text for a person: what a model or a command wrote in it
    /// (a path, a summary, a reason) cannot act on the terminal or hide
    /// (`model::text`). JSON lines go through `line` as they are.
    pub(super) fn text(&mut self, s: &str) -> anyhow::Result<()> {
        self.line(&crate::model::text::escape_hidden(s))
    }

    pub(super) fn line(&mut self, s: &str) -> anyhow::Result<()> {
        if self.closed {
            return Ok(());
        }
        match writeln!(self.lock, "{s}") {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.gone();
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn gone(&mut self) {
        self.closed = true;
        super::READER_GONE.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Text without a newline, flushed at once (an answer as it streams).
    pub(super) fn raw(&mut self, s: &str) -> anyhow::Result<()> {
        if self.closed {
            return Ok(());
        }
        match write!(self.lock, "{s}").and_then(|()| self.lock.flush()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.gone();
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the reader went away (`| head` had enough).
    pub(super) fn is_closed(&self) -> bool {
        self.closed
    }
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub home: Option<String>,
    pub store: String,
    pub schema_version: u32,
    /// `running` or `not_running` (then read from the store), the same
    /// word whichever answered.
    pub runtime: &'static str,
    /// The running runtime's pid and mode (`daemon`, `console`, ...).
    pub pid: Option<u32>,
    pub mode: Option<String>,
    pub default_agent: String,
    pub default_model: Option<String>,
    pub agents: Vec<AgentSummary>,
    /// Listed agents in all (`agents` shows at most 50, the busiest).
    pub agent_count: u64,
}

async fn status_report(ctx: &Context) -> anyhow::Result<StatusReport> {
    let client = super::offline::client(ctx).await?;
    let s: RuntimeStatus = call_typed(&*client, Request::RuntimeStatus).await?;
    let running = s.mode != super::offline::OFFLINE;
    Ok(StatusReport {
        home: s.home,
        store: s.store,
        schema_version: SCHEMA_VERSION,
        runtime: if running { "running" } else { "not_running" },
        pid: running.then_some(s.pid),
        mode: running.then_some(s.mode),
        default_agent: ctx.config.default_agent.clone(),
        // A running runtime's model, not this command's HOLON_MODEL.
        default_model: s.default_model,
        agent_count: s.agent_count.max(s.agents.len() as u64),
        agents: s.agents,
    })
}

/// An agent's model when it is not simply the runtime's default: its own
/// override, and the models a turn falls back to.
fn model_line(a: &crate::protocol::AgentSummary) -> Option<String> {
    let own = a.model_source.as_deref() == Some("agent_override");
    let model = a.model.as_deref()?;
    let fallbacks = match a.fallback_models.is_empty() {
        true => String::new(),
        false => format!(", falling back to {}", a.fallback_models.join(", ")),
    };
    match (own, fallbacks.is_empty()) {
        (false, true) => None,
        (true, _) => Some(format!("model {model} (its own){fallbacks}")),
        (false, false) => Some(format!("model {model}{fallbacks}")),
    }
}

fn print_status(out: &mut Out, report: &StatusReport) -> anyhow::Result<()> {
    out.text(&format!("store    {}", report.store))?;
    let runtime = match (report.pid, &report.mode) {
        (Some(pid), Some(mode)) => format!("running (pid {pid}, {mode})"),
        _ => "not running (read from the store)".to_owned(),
    };
    out.text(&format!("runtime  {runtime}"))?;
    out.text(&format!(
        "model    {}",
        report
            .default_model
            .as_deref()
            .unwrap_or("none configured (set HOLON_MODEL, e.g. openai/gpt-4.1)")
    ))?;
    out.line("")?;
    out.text(&format!(
        "{:<16} {:<14} {:<20} {:>6} {:>6} {:>6} {:>5} {:>8}",
        "AGENT", "STATUS", "POSTURE", "QUEUE", "WORK", "TASKS", "CTX", "EVENTS"
    ))?;
    for a in &report.agents {
        let marker = if a.id == report.default_agent {
            "*"
        } else {
            " "
        };
        out.text(&format!(
            "{marker}{:<15} {:<14} {:<20} {:>6} {:>6} {:>6} {:>5} {:>8}",
            a.id,
            a.status.as_str(),
            a.posture,
            a.queue_depth,
            a.work_items_open,
            a.tasks_active,
            a.context
                .percent
                .map_or("-".to_owned(), |p| format!("{p}%")),
            a.last_event_seq
        ))?;
        out.text(&format!("  {}", a.posture_reason))?;
        if a.lost_events > 0 {
            out.text(&format!(
                "  {} of its history lost in a salvage (holon events marks where)",
                counted(a.lost_events, "event", "events")
            ))?;
        }
        let x = &a.execution;
        if x.workspace_id != crate::model::workspace::AGENT_HOME_ID {
            let mode = match &x.worktree {
                Some(w) => format!("isolated on {}", w.worktree_branch),
                None => "direct".to_owned(),
            };
            out.text(&format!("  works in {} ({mode})", x.execution_root))?;
            if let Some(note) = holds_home(&x.execution_root) {
                out.text(&format!("  {note}"))?;
            }
        }
        out.text(&format!("  commands {}", x.policy.confinement_line()))?;
        if let Some(line) = model_line(a) {
            out.text(&format!("  {line}"))?;
        }
        if let Some(until) = &a.sleeping_until {
            out.text(&format!("  asleep until {until}"))?;
        }
        if let Some(u) = &a.usage {
            out.text(&format!("  {}", crate::ui::present::usage::usage_line(u)))?;
            if let Some(t) = &u.last_turn {
                out.text(&format!(
                    "  last turn {} in / {} out tokens",
                    t.input_tokens, t.output_tokens
                ))?;
            }
        }
        if let Some(hint) = &a.lifecycle_hint {
            out.text(&format!("  {hint}"))?;
        }
    }
    let more = report
        .agent_count
        .saturating_sub(report.agents.len() as u64);
    if more > 0 {
        out.text(&format!(
            "... and {more} more agents (`holon agent list` lists them all)"
        ))?;
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

/// Run `attempt` again (at most 3 times in all) when it failed for a
/// passing reason: the runtime's connection dropped or it is shutting down
/// (the next attempt reaches its successor, or the store). Attempts carry
/// the same client request id, so nothing is admitted twice.
async fn retrying<T, F, Fut>(mut attempt: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) if tries < 3 && passing(&e) => {
                tracing::warn!(error = %e, tries, "retrying with the same request id");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

fn passing(e: &anyhow::Error) -> bool {
    match e.downcast_ref::<crate::protocol::ApiError>() {
        Some(api) => {
            matches!(api.code, crate::protocol::ErrorCode::ShuttingDown)
                || api.message.contains("connection to the runtime closed")
        }
        None => false,
    }
}

/// `holon` with no command when there is no terminal to draw on: the
/// store's status.
pub async fn overview(ctx: &Context) -> anyhow::Result<ExitCode> {
    let report = status_report(ctx).await?;
    let mut out = Out::new();
    out.line("No terminal to open the console on; here is the status of your store.")?;
    out.line("Send a prompt with `holon send TEXT`, read events with `holon events`.")?;
    out.line("")?;
    print_status(&mut out, &report)?;
    Ok(ExitCode::SUCCESS)
}

pub async fn send(ctx: &Context, args: SendArgs) -> anyhow::Result<ExitCode> {
    let agent = args
        .agent
        .unwrap_or_else(|| ctx.config.default_agent.clone());
    // One id for every attempt: a retry after a dropped connection or a
    // restarting runtime is admitted once.
    let request_id = crate::new_id("req");
    let admitted: Admitted = retrying(|| async {
        let client = super::offline::client(ctx).await?;
        let req = Request::PromptSubmit {
            agent_id: agent.clone(),
            text: args.text.clone(),
            priority: args.priority,
            request_id: Some(request_id.clone()),
        };
        Ok(call_typed(&*client, req).await?)
    })
    .await?;
    let mut out = Out::new();
    if args.json {
        out.line(&serde_json::to_string(&admitted)?)?;
    } else {
        out.text(&format!(
            "queued {} for {} (priority {}, event {}); it runs when the runtime processes the queue",
            admitted.message_id,
            admitted.agent_id,
            admitted.priority.as_str(),
            admitted.event_seq
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The human form of one event: the shared presentation layer's line.
fn human_event(e: &EventRecord) -> String {
    crate::ui::present::human_line(e, &crate::ui::present::present(e))
}

pub async fn events(ctx: &Context, args: EventsArgs) -> anyhow::Result<ExitCode> {
    let agent = args
        .agent
        .clone()
        .unwrap_or_else(|| ctx.config.default_agent.clone());
    let client = super::offline::client(ctx).await?;
    events_via(&*client, &agent, &args).await
}

/// `holon work add`: a control-plane enqueue of an open work item.
pub async fn work_add(
    ctx: &Context,
    objective: String,
    agent: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let agent = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let req = crate::protocol::views::CreateWorkItem {
        objective,
        ..Default::default()
    };
    let request_id = crate::new_id("req");
    let item: crate::model::work::WorkItemRecord = retrying(|| async {
        let client = super::offline::client(ctx).await?;
        let req = Request::WorkItemCreate {
            agent_id: agent.clone(),
            item: req.clone(),
            request_id: Some(request_id.clone()),
        };
        Ok(call_typed(&*client, req).await?)
    })
    .await?;
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string(&item)?)?;
    } else {
        out.text(&format!(
            "queued work item {} for {}: {}",
            item.id, agent, item.objective
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Events through a client: page from `--from`, then (with `--follow`, a
/// running runtime only) the live tail, resuming transparently after a lag.
async fn events_via(
    client: &dyn RuntimeClient,
    agent: &str,
    args: &EventsArgs,
) -> anyhow::Result<ExitCode> {
    let mut out = Out::new();
    let mut remaining = args.limit.unwrap_or(usize::MAX);
    let mut from = args.from.max(1);
    let print = |out: &mut Out, e: &EventRecord| -> anyhow::Result<()> {
        if args.json {
            out.line(&serde_json::to_string(e)?)
        } else {
            out.text(&human_event(e))
        }
    };
    if !args.follow {
        while remaining > 0 && !out.closed {
            let req = Request::EventsPage {
                agent_id: agent.to_owned(),
                from_seq: from,
                limit: remaining.min(1000),
                kind: args.kind.clone(),
            };
            let page: EventsPage = call_typed(client, req).await?;
            if let Some(n) = page.pruned_before {
                // On stderr: stdout stays one event per line.
                eprintln!("holon: events before seq {n} were pruned by retention");
            }
            let events = page.events;
            let lost = page.lost;
            let Some(last) = events.last() else {
                for r in &lost {
                    eprintln!(
                        "holon: events {} to {} were lost in a salvage",
                        r.from_seq, r.to_seq
                    );
                }
                break;
            };
            from = last.event_seq + 1;
            remaining = remaining.saturating_sub(events.len());
            for e in &events {
                // A recorded loss just before this event: a marked gap,
                // on stderr (stdout stays one event per line).
                for r in lost.iter().filter(|r| r.to_seq + 1 == e.event_seq) {
                    eprintln!(
                        "holon: events {} to {} were lost in a salvage",
                        r.from_seq, r.to_seq
                    );
                }
                print(&mut out, e)?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if client.transport() == super::offline::OFFLINE {
        anyhow::bail!("--follow needs a running runtime (start one with `holon --detach`)");
    }
    let mut printed = Ok(());
    let next = follow(client, agent, from, |item| {
        let SubscriptionItem::Event(e) = item else {
            // Events only: streamed previews are not printed.
            return std::future::ready(ControlFlow::Continue(()));
        };
        if args.kind.as_deref().is_some_and(|k| k != e.kind) {
            return std::future::ready(ControlFlow::Continue(()));
        }
        printed = print(&mut out, &e);
        remaining = remaining.saturating_sub(1);
        let done = printed.is_err() || remaining == 0 || out.closed;
        std::future::ready(match done {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        })
    })
    .await?;
    printed?;
    if remaining > 0 && !out.closed {
        anyhow::bail!(
            "the runtime went away; events up to {} were printed",
            next.saturating_sub(1)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `holon attach`: a plain-text stand-in for the console over the socket.
/// Prints the agent's events as they happen and sends every line typed as
/// an operator prompt. Closing it (Ctrl+D, Ctrl+C) never stops the runtime.
pub async fn attach(
    ctx: &Context,
    endpoint: crate::ui::ws::Endpoint,
    agent: Option<String>,
) -> anyhow::Result<ExitCode> {
    let client = std::sync::Arc::new(
        endpoint
            .connect()
            .await
            .map_err(|e| anyhow::anyhow!(endpoint.unreachable(&e)))?,
    );
    let agent = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let request = Request::AgentState {
        agent_id: agent.clone(),
    };
    let state: crate::protocol::AgentState = call_typed(&*client, request).await?;
    let last = state.last_event_seq;
    say!(
        "attached to {} ({}); {} — type a prompt and press Enter, Ctrl+D to detach",
        agent,
        endpoint.describe(),
        state.agent.posture_reason
    );
    let follower = {
        let client = std::sync::Arc::clone(&client);
        let agent = agent.clone();
        tokio::spawn(async move {
            let mut from = last.saturating_sub(10).max(1);
            loop {
                let printed = follow(&*client, &agent, from, |item| {
                    if let SubscriptionItem::Event(e) = item {
                        say!("{}", human_event(&e));
                    }
                    std::future::ready(ControlFlow::Continue(()))
                })
                .await;
                match printed {
                    Ok(next) => from = next,
                    Err(_) => return,
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        })
    };
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    use tokio::io::AsyncBufReadExt;
    while let Ok(Some(line)) = lines.next_line().await {
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let req = Request::PromptSubmit {
            agent_id: agent.clone(),
            text: text.to_owned(),
            priority: crate::model::message::Priority::Normal,
            request_id: None,
        };
        if let Err(e) = client.call(req).await {
            eprintln!("holon: {e}");
        }
    }
    follower.abort();
    Ok(ExitCode::SUCCESS)
}
