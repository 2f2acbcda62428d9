//! The context summary that older turns fold into: asked of the model
//! with a summarisation request when a model is configured, checked, and
//! replaced by a deterministic extractive summary when the model fails,
//! answers with nothing usable, or is absent.

use super::budget::estimate_tokens;
use crate::model::transcript::TranscriptBody;
use crate::model::transcript::TranscriptEntry;
use crate::model::usage::ConversationItem;
use crate::runtime::provider::ProviderRequest;

fn clip(s: &str, chars: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= chars {
        one_line
    } else {
        format!("{}…", one_line.chars().take(chars).collect::<String>())
    }
}

/// Cut `text` to about `max_tokens`, at a line end when one is near.
pub fn bound(text: &str, max_tokens: u64) -> String {
    if estimate_tokens(text) <= max_tokens {
        return text.to_owned();
    }
    let limit = max_tokens.saturating_sub(8);
    let (mut ascii, mut other, mut end) = (0u64, 0u64, 0usize);
    for (i, c) in text.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(4) + other > limit {
            break;
        }
        end = i + c.len_utf8();
    }
    let cut = &text[..end];
    let cut = match cut.rfind('\n') {
        Some(p) if p > end / 2 => &cut[..p],
        _ => cut,
    };
    format!("{cut}\n[summary cut to its budget]")
}

/// One line per folded turn: what came in, what the agent answered, which
/// tools ran and what failed.
fn turn_lines(entries: &[TranscriptEntry]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let run = &entries[i].run_id;
        let start = i;
        while i < entries.len() && &entries[i].run_id == run {
            i += 1;
        }
        let turn = &entries[start..i];
        let mut inputs = Vec::new();
        let mut answer = None;
        let mut tools: Vec<(String, usize)> = Vec::new();
        let mut failures = Vec::new();
        for e in turn {
            match &e.body {
                TranscriptBody::Input { text } => inputs.push(clip(text, 240)),
                TranscriptBody::AssistantRound {
                    text, tool_calls, ..
                } => {
                    if !text.trim().is_empty() {
                        answer = Some(clip(text, 240));
                    }
                    for c in tool_calls {
                        match tools.iter_mut().find(|(n, _)| n == &c.name) {
                            Some((_, k)) => *k += 1,
                            None => tools.push((c.name.clone(), 1)),
                        }
                    }
                }
                TranscriptBody::ToolResult {
                    tool_name,
                    content,
                    is_error: true,
                    ..
                } => failures.push(format!("{tool_name}: {}", clip(content, 100))),
                TranscriptBody::RuntimeFailure { summary, .. } => {
                    failures.push(format!("turn failed: {}", clip(summary, 120)))
                }
                TranscriptBody::TurnCut { reason, .. } => {
                    failures.push(format!("turn cut off: {}", clip(reason, 120)))
                }
                TranscriptBody::ToolResult { .. } | TranscriptBody::ToolStarted { .. } => {}
            }
        }
        let mut line = format!("- {} {}", turn[0].ts, inputs.join(" / "));
        if let Some(a) = answer {
            line.push_str(&format!(" → {a}"));
        }
        if !tools.is_empty() {
            let t: Vec<String> = tools
                .iter()
                .map(|(n, k)| {
                    if *k > 1 {
                        format!("{n}×{k}")
                    } else {
                        n.clone()
                    }
                })
                .collect();
            line.push_str(&format!(" [tools: {}]", t.join(", ")));
        }
        if !failures.is_empty() {
            line.push_str(&format!(" [failed: {}]", failures.join("; ")));
        }
        lines.push(line);
    }
    lines
}

/// The deterministic summary: the previous summary (bounded to half the
/// budget), then one line per folded turn, newest kept when the budget is
/// short.
pub fn extractive(previous: Option<&str>, folded: &[TranscriptEntry], max_tokens: u64) -> String {
    let mut head = String::new();
    if let Some(p) = previous.filter(|p| !p.trim().is_empty()) {
        head.push_str("Earlier:\n");
        head.push_str(&bound(p, max_tokens / 2));
        head.push('\n');
    }
    let lines = turn_lines(folded);
    let mut budget = max_tokens.saturating_sub(estimate_tokens(&head) + 16);
    let mut kept: Vec<&String> = Vec::new();
    for line in lines.iter().rev() {
        let t = estimate_tokens(line) + 1;
        if t > budget {
            break;
        }
        budget -= t;
        kept.push(line);
    }
    kept.reverse();
    let dropped = lines.len() - kept.len();
    let mut out = head;
    out.push_str(&format!("Turns folded here ({}):\n", lines.len()));
    if dropped > 0 {
        out.push_str(&format!("- ({dropped} older turns omitted for space)\n"));
    }
    for l in kept {
        out.push_str(l);
        out.push('\n');
    }
    out.trim_end().to_owned()
}

const SUMMARISER: &str = "You maintain the working summary of a long-lived software agent's \
older conversation. Write a compact, factual summary for the agent itself: what the operator \
asked, what was done and decided, files and commands that matter, results, open questions and \
commitments. Keep identifiers (work item ids, task ids, paths, branch names) exact. Do not \
invent anything, do not address the operator, and do not call tools. Plain text, at most the \
length you are given.";

/// The transcript as the summariser reads it: each entry labelled and cut
/// to a fair share, the whole bounded to `max_tokens`.
fn render_for_summary(entries: &[TranscriptEntry], max_tokens: u64) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in entries {
        let s = match &e.body {
            TranscriptBody::Input { text } => format!("INPUT {}: {}", e.ts, clip(text, 1_500)),
            TranscriptBody::AssistantRound {
                text, tool_calls, ..
            } => {
                let calls: Vec<String> = tool_calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, clip(&c.arguments.to_string(), 200)))
                    .collect();
                format!("AGENT: {} {}", clip(text, 1_500), calls.join(" "))
            }
            TranscriptBody::ToolResult {
                tool_name,
                content,
                is_error,
                ..
            } => format!(
                "RESULT {tool_name}{}: {}",
                if *is_error { " (error)" } else { "" },
                clip(content, 600)
            ),
            TranscriptBody::RuntimeFailure { summary, .. } => {
                format!("TURN FAILED: {}", clip(summary, 300))
            }
            TranscriptBody::TurnCut {
                reason,
                partial_answer,
            } => match partial_answer {
                Some(text) => format!(
                    "TURN CUT OFF ({reason}) while answering: {}",
                    clip(text, 600)
                ),
                None => format!("TURN CUT OFF: {reason}"),
            },
            TranscriptBody::ToolStarted { .. } => continue,
        };
        parts.push(s);
    }
    // Newest first when it must be cut: the latest state matters most.
    let mut used = 0;
    let mut kept = Vec::new();
    for p in parts.iter().rev() {
        let t = estimate_tokens(p) + 1;
        if used + t > max_tokens {
            break;
        }
        used += t;
        kept.push(p.as_str());
    }
    kept.reverse();
    let omitted = parts.len() - kept.len();
    let mut out = String::new();
    if omitted > 0 {
        out.push_str(&format!("({omitted} older entries omitted)\n"));
    }
    out.push_str(&kept.join("\n"));
    out
}

/// The summarisation request: no tools, the previous summary and the
/// folded transcript, within `input_tokens`.
pub fn request(
    previous: Option<&str>,
    folded: &[TranscriptEntry],
    input_tokens: u64,
    max_summary_tokens: u64,
) -> ProviderRequest {
    let prev = previous
        .filter(|p| !p.trim().is_empty())
        .map(|p| bound(p, input_tokens / 3))
        .unwrap_or_else(|| "(none)".to_owned());
    let body_budget = input_tokens.saturating_sub(estimate_tokens(&prev) + 200);
    let text = format!(
        "Previous summary:\n{prev}\n\nConversation to fold in:\n{}\n\nWrite the new summary \
         (at most about {max_summary_tokens} tokens).",
        render_for_summary(folded, body_budget)
    );
    ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: SUMMARISER.to_owned(),
        context_blocks: Vec::new(),
        conversation: vec![ConversationItem::UserText { text }],
        tools: Vec::new(),
        max_output_tokens: Some(max_summary_tokens.min(u32::MAX as u64) as u32),
        prompt_cache_key: None,
        no_reasoning: true,
        response_schema: None,
    }
}

/// Accept a model's summary, or say why it is unusable.
pub fn check_model_summary(
    text: &str,
    called_tools: bool,
    max_tokens: u64,
) -> Result<String, String> {
    let t = text.trim();
    if called_tools {
        return Err("the summariser called tools instead of answering".into());
    }
    if t.chars().filter(|c| c.is_alphanumeric()).count() < 16 {
        return Err("the summariser answered with no usable text".into());
    }
    Ok(bound(t, max_tokens))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::usage::ToolCall;

    fn e(run: &str, body: TranscriptBody) -> TranscriptEntry {
        TranscriptEntry {
            id: crate::new_id("tr"),
            agent_id: "main".into(),
            run_id: run.into(),
            message_id: None,
            ts: format!("ts-{run}"),
            body,
        }
    }

    fn sample() -> Vec<TranscriptEntry> {
        vec![
            e(
                "r1",
                TranscriptBody::Input {
                    text: "[operator] fix the failing test in parser.rs".into(),
                },
            ),
            e(
                "r1",
                TranscriptBody::AssistantRound {
                    input_tokens: None,
                    output_tokens: None,
                    reasoning: vec![crate::model::usage::ReasoningItem::Thinking {
                        model: String::new(),
                        thinking: "PRIVATE-THOUGHT: try the parser first".into(),
                        signature: "sig".into(),
                    }],
                    round: 1,
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "ExecCommand".into(),
                        arguments: serde_json::json!({"cmd": "cargo test"}),
                        malformed_arguments: None,
                    }],
                    token_usage: None,
                    timeline: None,
                },
            ),
            e(
                "r1",
                TranscriptBody::ToolResult {
                    call_id: "c1".into(),
                    tool_name: "ExecCommand".into(),
                    content: "exit 101: test parser::empty failed".into(),
                    is_error: true,
                    images: Vec::new(),
                    error: None,
                },
            ),
            e(
                "r1",
                TranscriptBody::AssistantRound {
                    input_tokens: None,
                    output_tokens: None,
                    reasoning: Vec::new(),
                    round: 2,
                    text: "Fixed the empty-input case in parser.rs.".into(),
                    tool_calls: Vec::new(),
                    token_usage: None,
                    timeline: None,
                },
            ),
            e(
                "r2",
                TranscriptBody::Input {
                    text: "[operator] 上下文 测试".into(),
                },
            ),
        ]
    }

    #[test]
    fn reasoning_is_never_summarised_into_text() {
        let s = extractive(None, &sample(), 2_000);
        assert!(!s.contains("PRIVATE-THOUGHT"), "{s}");
        let rendered = render_for_summary(&sample(), 10_000);
        assert!(!rendered.contains("PRIVATE-THOUGHT"), "{rendered}");
        assert!(rendered.contains("ExecCommand"), "{rendered}");
    }

    #[test]
    fn extractive_summary_names_inputs_answers_tools_and_failures() {
        let s = extractive(Some("we set up the repo"), &sample(), 2_000);
        assert!(s.contains("Earlier:\nwe set up the repo"), "{s}");
        assert!(s.contains("fix the failing test in parser.rs → Fixed the empty-input case"));
        assert!(s.contains("[tools: ExecCommand]"));
        assert!(s.contains("[failed: ExecCommand: exit 101"));
        assert!(s.contains("上下文 测试"));
        assert_eq!(s, extractive(Some("we set up the repo"), &sample(), 2_000));
    }

    #[test]
    fn extractive_summary_keeps_the_newest_turns_within_budget() {
        let many: Vec<TranscriptEntry> = (0..200)
            .map(|i| {
                e(
                    &format!("r{i}"),
                    TranscriptBody::Input {
                        text: format!("turn number {i} {}", "w".repeat(200)),
                    },
                )
            })
            .collect();
        let s = extractive(None, &many, 500);
        assert!(estimate_tokens(&s) <= 500, "{}", estimate_tokens(&s));
        assert!(s.contains("turn number 199"));
        assert!(s.contains("older turns omitted"));
    }

    #[test]
    fn the_request_is_bounded_and_garbage_is_refused() {
        let r = request(None, &sample(), 1_000, 300);
        assert!(r.tools.is_empty());
        assert!(super::super::budget::request_tokens(&r) < 1_400);
        assert_eq!(r.max_output_tokens, Some(300));
        assert!(check_model_summary("   ", false, 100).is_err());
        assert!(check_model_summary("!!! ??? ...", false, 100).is_err());
        assert!(check_model_summary("A real summary of what happened here.", true, 100).is_err());
        let long = "word ".repeat(5_000);
        let ok = check_model_summary(&long, false, 100).unwrap();
        assert!(estimate_tokens(&ok) <= 110);
    }
}
