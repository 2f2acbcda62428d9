//! `holon transcript` and `holon tail`: an agent read as the model lived
//! it. `transcript` prints the newest transcript entries (through the
//! runtime, or the store when none runs); `tail` prints the last few, then
//! follows the agent: its transcript and briefs as they are recorded, and
//! the answer as it streams.

use std::ops::ControlFlow;
use std::process::ExitCode;

use super::commands::Out;
use super::Context;
use crate::model::attempt::RetryNotice;
use crate::model::event::EventRecord;
use crate::protocol::{call_typed, follow, Request, SubscriptionItem, TranscriptPage};
use crate::ui::present::attempt::attempt_line;
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
    "approval_reviewed",
    "approval_granted",
    "approval_denied",
    "brief_created",
    "turn_terminal",
    "runtime_error",
    "mcp_server_failed",
    "hook_ran",
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
/// attempt and how many of its characters; and the last attempt of a
/// recorded round (its run and number), whose late deltas are not shown.
#[derive(Default)]
struct Streamed {
    attempt: u32,
    chars: usize,
    closed: crate::protocol::client::ClosedAttempts,
}

/// Says an answer starts over.
const STARTS_OVER: &str = "\n  ↻ the answer starts over (the provider was tried again)\n";

impl Streamed {
    /// What to print for a delta of `run_id`'s `attempt` (0: not
    /// numbered): its text, indented; nothing when it is late. A new
    /// attempt after text was shown says the answer starts over.
    fn delta(&mut self, run_id: &str, attempt: u32, text: &str) -> String {
        if self.closed.is_late(run_id, attempt) {
            return String::new();
        }
        let mut out = String::new();
        if self.chars > 0 && attempt != self.attempt {
            out.push_str(STARTS_OVER);
            self.chars = 0;
        }
        self.attempt = attempt;
        if text.is_empty() {
            return out;
        }
        if self.chars == 0 {
            out.push_str("  ");
        }
        self.chars += text.chars().count();
        out.push_str(&crate::ui::present::printable(text).replace('\n', "\n  "));
        out
    }

    /// What to print when `run_id`'s provider `attempt` failed and the
    /// chain retries it or moves to the next model: the notice on a line
    /// of its own (after any text that attempt streamed, which is not the
    /// answer and whose late deltas are not shown).
    fn retry(&mut self, run_id: &str, attempt: u32, notice: &RetryNotice) -> String {
        if self.closed.is_late(run_id, attempt) {
            // Of a round already recorded: stale.
            return String::new();
        }
        let mut out = String::new();
        if self.chars > 0 {
            out.push('\n');
            self.chars = 0;
        }
        if attempt > 0 {
            self.closed.close_through(run_id, attempt);
        }
        let said = attempt_line(notice, None);
        out.push_str(&format!("  ↻ {}\n", crate::ui::present::printable(&said)));
        out
    }

    /// A round was recorded, or the turn ended: late deltas of the
    /// round's attempt and earlier ones, or of the whole run, are not
    /// shown.
    fn recorded(&mut self, e: &EventRecord) {
        let attempt = match e.kind.as_str() {
            "turn_terminal" => u32::MAX,
            _ => e.payload["attempt"].as_u64().unwrap_or(0) as u32,
        };
        let run = e.payload["run_id"].as_str().unwrap_or_default();
        if attempt > 0 {
            self.closed.close_through(run, attempt);
        }
    }
}

/// Print one followed item: streamed answer text as it comes (indented),
/// an event as the console's line for it. An answer that starts over (a
/// retry, a fallback model) says so and is printed again.
fn show(out: &mut Out, streamed: &mut Streamed, item: SubscriptionItem) -> anyhow::Result<()> {
    match item {
        SubscriptionItem::Delta {
            run_id,
            text,
            attempt,
        } => {
            let shown = streamed.delta(&run_id, attempt, &text);
            match shown.is_empty() {
                true => Ok(()),
                false => out.raw(&shown),
            }
        }
        // Progress is for the console's working row; the call's result
        // is what is shown here.
        // `follow` resumes a lagged subscription itself.
        SubscriptionItem::Progress { .. } | SubscriptionItem::Lagged { .. } => Ok(()),
        SubscriptionItem::Retry {
            run_id,
            attempt,
            notice,
        } => out.raw(&streamed.retry(&run_id, attempt, &notice)),
        SubscriptionItem::Event(e) if TAILED.contains(&e.kind.as_str()) => {
            if e.kind == "assistant_round_recorded" || e.kind == "turn_terminal" {
                streamed.recorded(&e);
            }
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
        SubscriptionItem::Event(_) => Ok(()),
    }
}

fn line(e: &EventRecord) -> String {
    crate::ui::present::short_line(e, &crate::ui::present::present(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(run: &str, attempt: u32) -> EventRecord {
        event("assistant_round_recorded", run, attempt)
    }

    fn event(kind: &str, run: &str, attempt: u32) -> EventRecord {
        EventRecord {
            event_seq: 1,
            id: "evt_1".into(),
            ts: "2026-11-26T10:00:00.000Z".into(),
            kind: kind.into(),
            agent_id: "main".into(),
            provenance: Default::default(),
            payload: serde_json::json!({ "run_id": run, "attempt": attempt, "text_chars": 5 }),
        }
    }

    #[test]
    fn an_answer_that_starts_over_is_said_once_and_printed_again() {
        let mut s = Streamed::default();
        assert_eq!(s.delta("run_1", 1, "Hello\nwor"), "  Hello\n  wor");
        // The retry's empty delta says so before any of its text.
        assert_eq!(s.delta("run_1", 2, ""), STARTS_OVER);
        assert_eq!(s.delta("run_1", 2, "Hello"), "  Hello");
        assert_eq!(s.delta("run_1", 2, " world"), " world");
    }

    #[test]
    fn a_retry_is_said_on_its_own_line_and_the_failed_text_is_not_printed_again() {
        let notice = RetryNotice {
            model_ref: "openai/gpt-5".into(),
            attempt: 1,
            max_attempts: 3,
            failure_kind: crate::model::usage::FailureKind::StreamInterrupted,
            status: None,
            next: crate::model::attempt::RetryNext::Retry,
            backoff_ms: Some(1_500),
        };
        let mut s = Streamed::default();
        assert_eq!(s.delta("run_1", 1, "Hel"), "  Hel");
        assert_eq!(
            s.retry("run_1", 1, &notice),
            "\n  ↻ stream cut off · retry 2 of 3 in 2s\n"
        );
        assert_eq!(
            s.delta("run_1", 1, "lo"),
            "",
            "late text of the failed attempt"
        );
        // The retry's text follows the notice; "starts over" is not said twice.
        assert_eq!(s.delta("run_1", 2, ""), "");
        assert_eq!(s.delta("run_1", 2, "Hello"), "  Hello");
    }

    #[test]
    fn late_deltas_of_a_recorded_round_are_not_printed() {
        let mut s = Streamed::default();
        assert_eq!(s.delta("run_1", 1, "Hel"), "  Hel");
        s.recorded(&recorded("run_1", 1));
        s.chars = 0;
        assert_eq!(s.delta("run_1", 1, "lo"), "", "late");
        // The next round, and another run's first attempt, are shown.
        assert_eq!(s.delta("run_1", 2, "Next"), "  Next");
        s.chars = 0;
        assert_eq!(s.delta("run_2", 1, "New run"), "  New run");
    }

    #[test]
    fn nothing_of_a_run_is_printed_after_its_turn_ended() {
        let mut s = Streamed::default();
        assert_eq!(s.delta("run_1", 3, "cut"), "  cut");
        s.recorded(&event("turn_terminal", "run_1", 0));
        s.chars = 0;
        assert_eq!(s.delta("run_1", 4, " late"), "");
        assert_eq!(s.delta("run_2", 1, "Next"), "  Next");
    }

    #[test]
    fn unnumbered_deltas_are_shown_as_they_come() {
        let mut s = Streamed::default();
        s.recorded(&recorded("run_1", 0));
        assert_eq!(s.delta("run_1", 0, "a"), "  a");
        assert_eq!(s.delta("run_1", 0, "b"), "b");
    }
}
