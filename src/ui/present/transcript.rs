//! Transcript entries in words, for `holon transcript` and `holon tail`:
//! each entry a few lines under its clock time, the input given to the
//! model, what it said and called, each result (a tick or a cross, its
//! first lines), a runtime failure with its provider attempts, and a turn
//! cut off with what it had answered so far.

use super::words::{clock, duration, one_line, printable, wire_name};
use crate::model::transcript::{TranscriptBody, TranscriptEntry};
use crate::model::usage::{AttemptOutcome, ProviderAttemptTimeline};

/// Characters of a result or an input shown.
const SHOWN: usize = 240;

/// The lines of one entry; `None` for a tool's start (its result says it
/// ran), unless `starts` asks for them (`holon tail`, which shows a call
/// while it runs).
/// Every line is printable: what a model or a webhook wrote cannot send
/// escape sequences to the operator's terminal.
pub fn lines(e: &TranscriptEntry, starts: bool) -> Vec<String> {
    let mut out = raw_lines(e, starts);
    for l in &mut out {
        *l = printable(l);
    }
    out
}

fn raw_lines(e: &TranscriptEntry, starts: bool) -> Vec<String> {
    let at = clock(&e.ts);
    match &e.body {
        TranscriptBody::Input { text } => vec![format!("{at} ▸ {}", one_line(text, SHOWN))],
        TranscriptBody::AssistantRound {
            round,
            text,
            tool_calls,
            token_usage,
            timeline,
            ..
        } => {
            let tokens = token_usage
                .as_ref()
                .map(|u| format!(" · {} in, {} out", u.input_tokens, u.output_tokens))
                .unwrap_or_default();
            let mut out = vec![format!("{at} ● round {round}{tokens}")];
            out.extend(text.lines().map(|l| format!("  {l}")));
            out.extend(
                tool_calls
                    .iter()
                    .map(|c| format!("  → {} {}", c.name, one_line(&c.arguments.to_string(), 120))),
            );
            // A round that took retries or a fallback says so.
            if let Some(t) = timeline.as_ref().filter(|t| t.attempts.len() > 1) {
                out.extend(attempts(t));
            }
            out
        }
        TranscriptBody::ToolStarted { tool_name, .. } if starts => {
            vec![format!("{at} … {tool_name} running")]
        }
        TranscriptBody::ToolStarted { .. } => Vec::new(),
        TranscriptBody::ToolResult {
            tool_name,
            content,
            is_error,
            images,
            ..
        } => {
            let mark = if *is_error { "✗" } else { "✓" };
            let mut out = vec![format!(
                "{at} {mark} {tool_name}: {}",
                one_line(content, SHOWN)
            )];
            out.extend(
                images
                    .iter()
                    .map(|i| format!("  + an image ({})", i.mime_type)),
            );
            out
        }
        TranscriptBody::RuntimeFailure {
            summary, timeline, ..
        } => {
            let mut out = vec![format!(
                "{at} ✗ the turn failed: {}",
                one_line(summary, SHOWN)
            )];
            out.extend(timeline.iter().flat_map(attempts));
            out
        }
        TranscriptBody::TurnCut {
            reason,
            partial_answer: Some(text),
        } => {
            let mut out = vec![format!("{at} ● the answer so far")];
            out.extend(text.lines().map(|l| format!("  {l}")));
            out.push(format!("  ✗ cut off: {}", one_line(reason, SHOWN)));
            out
        }
        TranscriptBody::TurnCut { reason, .. } => {
            vec![format!(
                "{at} ✗ the turn was cut off: {}",
                one_line(reason, SHOWN)
            )]
        }
    }
}

/// One line per provider attempt: model, outcome, failure, time.
fn attempts(t: &ProviderAttemptTimeline) -> Vec<String> {
    t.attempts
        .iter()
        .map(|a| {
            let outcome = match a.outcome {
                AttemptOutcome::Retrying => "retried",
                AttemptOutcome::RetriesExhausted => "retries exhausted",
                AttemptOutcome::FailFastAborted => "failed fast",
                AttemptOutcome::Succeeded => "succeeded",
                AttemptOutcome::Cancelled => "cancelled",
            };
            let kind = a
                .failure_kind
                .map(|k| format!(" ({})", wire_name(&k)))
                .unwrap_or_default();
            let took = a
                .duration_ms
                .map(|ms| format!(", {}", duration(ms)))
                .unwrap_or_default();
            let fallback = if a.advanced_to_fallback {
                ", fell back"
            } else {
                ""
            };
            format!(
                "  attempt {}/{} {}: {outcome}{kind}{took}{fallback}",
                a.attempt, a.max_attempts, a.model_ref
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::usage::{ToolCall, ToolImage};

    fn entry(body: TranscriptBody) -> TranscriptEntry {
        TranscriptEntry {
            id: "tr_1".into(),
            agent_id: "main".into(),
            run_id: "run_1".into(),
            message_id: None,
            ts: "2026-11-26T09:30:01.000Z".into(),
            body,
        }
    }

    #[test]
    fn a_turn_cut_off_says_why_after_what_it_had_answered() {
        let cut = |partial: Option<&str>| {
            lines(
                &entry(TranscriptBody::TurnCut {
                    reason: "aborted by the operator".into(),
                    partial_answer: partial.map(str::to_owned),
                }),
                false,
            )
        };
        assert_eq!(
            cut(Some("The loop reads\nthe clock")),
            [
                "09:30:01 ● the answer so far",
                "  The loop reads",
                "  the clock",
                "  ✗ cut off: aborted by the operator",
            ]
        );
        assert_eq!(
            cut(None),
            ["09:30:01 ✗ the turn was cut off: aborted by the operator"]
        );
    }

    #[test]
    fn a_round_its_calls_and_their_results() {
        let round = entry(TranscriptBody::AssistantRound {
            input_tokens: None,
            output_tokens: None,
            round: 2,
            reasoning: Vec::new(),
            text: "Running the tests.\nThen the lint.".into(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "ExecCommand".into(),
                arguments: serde_json::json!({"cmd": "cargo test"}),
                malformed_arguments: None,
            }],
            token_usage: None,
            timeline: None,
        });
        assert_eq!(
            lines(&round, false),
            [
                "09:30:01 ● round 2",
                "  Running the tests.",
                "  Then the lint.",
                "  → ExecCommand {\"cmd\":\"cargo test\"}",
            ]
        );
        let failed = entry(TranscriptBody::ToolResult {
            call_id: "c1".into(),
            tool_name: "mcp__shots__take".into(),
            content: format!("exit 101\n{}", "x".repeat(500)),
            is_error: true,
            images: vec![ToolImage {
                mime_type: "image/png".into(),
                data: String::new(),
            }],
            error: None,
        });
        let shown = lines(&failed, false);
        let hostile = entry(TranscriptBody::Input {
            text: "look \x1b]0;pwned\x07 here".into(),
        });
        // Shown escaped: nothing acts on the terminal, nothing hides.
        assert_eq!(
            lines(&hostile, false),
            ["09:30:01 ▸ look \\u{1b}]0;pwned\\u{7} here"]
        );
        assert!(shown[0].starts_with("09:30:01 ✗ mcp__shots__take: exit 101 xxx"));
        assert!(shown[0].chars().count() < 300, "{}", shown[0]);
        assert_eq!(shown[1], "  + an image (image/png)");
        let start = entry(TranscriptBody::ToolStarted {
            call_id: "c1".into(),
            tool_name: "ExecCommand".into(),
            started_at: "t".into(),
        });
        assert!(lines(&start, false).is_empty());
        assert_eq!(lines(&start, true), ["09:30:01 … ExecCommand running"]);
    }
}
