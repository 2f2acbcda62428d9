//! `holon transcript` and `holon tail`: an agent read as the model lived
//! it. `transcript` prints the newest transcript entries (through the
//! runtime, or the store when none runs); `tail` prints the last few, then
//! follows the agent: its transcript and briefs as they are recorded, and
//! the answer as it streams.

use std::ops::ControlFlow;
use std::process::ExitCode;

use super::commands::Out;
use super::Context;
use crate::protocol::{call_typed, follow, Followed, Request, TranscriptPage};
use crate::store::EventRecord;
use crate::ui::present::transcript::lines;

pub async fn transcript(
    ctx: &Context,
    agent: Option<String>,
    limit: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let agent = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let client = super::offline::client(ctx).await?;
    let request = Request::AgentTranscript {
        agent_id: agent.clone(),
        limit: Some(limit),
    };
    let page: TranscriptPage = call_typed(&*client, request).await?;
    let mut out = Out::new();
    if page.more && !json {
        // On stderr: stdout stays the transcript.
        eprintln!("holon: older entries were left out (--limit N shows more)");
    }
    for e in &page.entries {
        match json {
            true => out.line(&serde_json::to_string(e)?)?,
            false => {
                for l in lines(e, false) {
                    out.line(&l)?;
                }
            }
        }
    }
    if page.entries.is_empty() && !json {
        eprintln!("holon: `{agent}` has no transcript yet");
    }
    Ok(ExitCode::SUCCESS)
}

/// The events `tail` shows besides the streamed answer: what the operator
/// would want to see happen, in the console's words.
const TAILED: &[&str] = &[
    "message_admitted",
    "turn_started",
    "assistant_round_recorded",
    "tool_started",
    "tool_executed",
    "approval_requested",
    "approval_granted",
    "approval_denied",
    "brief_created",
    "turn_terminal",
    "runtime_error",
    "mcp_server_failed",
];

pub async fn tail(ctx: &Context, agent: Option<String>) -> anyhow::Result<ExitCode> {
    let agent = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let client = super::offline::client(ctx).await?;
    if client.transport() == super::offline::OFFLINE {
        anyhow::bail!(
            "tail follows a running runtime; start one with `holon --detach` \
             (`holon transcript` reads the store without one)"
        );
    }
    // The summary says where to follow from; the whole bootstrap is not
    // needed.
    let summary: crate::protocol::AgentSummary = call_typed(
        &*client,
        Request::AgentStatus {
            agent_id: agent.clone(),
        },
    )
    .await?;
    let recent: TranscriptPage = call_typed(
        &*client,
        Request::AgentTranscript {
            agent_id: agent.clone(),
            limit: Some(10),
        },
    )
    .await?;
    let mut out = Out::new();
    for e in &recent.entries {
        for l in lines(e, false) {
            out.line(&l)?;
        }
    }
    out.line(&format!(
        "— following {agent} ({}); Ctrl+C stops following, never the agent",
        summary.posture_reason
    ))?;
    // The current round's answer shown as it streamed.
    let mut streamed = Streamed::default();
    let mut printed = Ok(());
    follow(&*client, &agent, summary.last_event_seq + 1, |item| {
        printed = show(&mut out, &mut streamed, item);
        std::future::ready(match printed.is_err() || out.is_closed() {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        })
    })
    .await?;
    printed?;
    if out.is_closed() {
        return Ok(ExitCode::SUCCESS);
    }
    anyhow::bail!("the runtime went away")
}

/// The current round's answer as shown while it streamed: its provider
/// attempt and how many of its characters.
#[derive(Default)]
struct Streamed {
    attempt: u32,
    chars: usize,
}

/// Print one followed item: streamed answer text as it comes (indented),
/// an event as the console's line for it. An answer that starts over (a
/// retry, a fallback model) says so and is printed again.
fn show(out: &mut Out, streamed: &mut Streamed, item: Followed) -> anyhow::Result<()> {
    match item {
        Followed::Delta { text, attempt, .. } => {
            if streamed.chars > 0 && attempt != streamed.attempt {
                out.line("")?;
                out.line("  ↻ the answer starts over (the provider was tried again)")?;
                streamed.chars = 0;
            }
            if streamed.chars == 0 {
                out.raw("  ")?;
            }
            streamed.attempt = attempt;
            streamed.chars += text.chars().count();
            out.raw(&crate::ui::present::printable(&text).replace('\n', "\n  "))
        }
        // Progress is for the console's working row; the call's result
        // is what is shown here.
        Followed::Progress { .. } => Ok(()),
        Followed::Event(e) if TAILED.contains(&e.kind.as_str()) => {
            let shown = std::mem::take(&mut streamed.chars);
            if shown > 0 {
                out.line("")?;
                let whole = e.payload["text_chars"].as_u64().unwrap_or(0) as usize;
                if e.kind == "assistant_round_recorded" && shown >= whole {
                    // Its whole text has just been shown as it streamed
                    // (deltas missed by a slow reader leave it printed).
                    return Ok(());
                }
            }
            out.line(&line(&e))
        }
        Followed::Event(_) => Ok(()),
    }
}

fn line(e: &EventRecord) -> String {
    crate::ui::present::short_line(e, &crate::ui::present::present(e))
}
