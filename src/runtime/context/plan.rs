//! Compaction planning, as plain functions. Cross-turn: which older turns
//! of the transcript fold into the context summary so that the history
//! fits its share of the prompt budget. Turn-local: which earlier rounds
//! of the running turn are replaced by deterministic recaps so that one
//! long tool turn stays within the budget. Neither decides anything about
//! tasks, work items or waking: they only choose what the model reads.

use crate::model::context::Fold;

use super::budget::{estimate_tokens, item_tokens, items_tokens};
use crate::model::transcript::TranscriptBody;
use crate::model::transcript::TranscriptEntry;
use crate::model::usage::ConversationItem;
use crate::model::usage::ToolImage;

/// What one transcript entry costs once it is in the conversation.
pub fn entry_tokens(e: &TranscriptEntry) -> u64 {
    match &e.body {
        TranscriptBody::Input { text } => 4 + estimate_tokens(text),
        TranscriptBody::AssistantRound {
            reasoning,
            text,
            tool_calls,
            ..
        } => item_tokens(&ConversationItem::AssistantRound {
            reasoning: reasoning.clone(),
            text: text.clone(),
            tool_calls: tool_calls.clone(),
        }),
        TranscriptBody::ToolStarted { .. } => 0,
        TranscriptBody::ToolResult {
            content, images, ..
        } => 4 + estimate_tokens(content) + images.len() as u64 * ToolImage::TOKENS,
        TranscriptBody::RuntimeFailure { summary, .. } => 12 + estimate_tokens(summary),
        TranscriptBody::TurnCut {
            reason,
            partial_answer,
        } => 16 + estimate_tokens(reason) + partial_answer.as_deref().map_or(0, estimate_tokens),
    }
}

/// Turn boundaries: the index where each run's entries begin.
fn turn_starts(entries: &[TranscriptEntry]) -> Vec<usize> {
    let mut starts = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if i == 0 || entries[i - 1].run_id != e.run_id {
            starts.push(i);
        }
    }
    starts
}

/// Plan a cross-turn fold of `entries` (the history after the last
/// boundary, oldest first, the running turn last). Nothing folds while the
/// history fits `history_budget`; when it does not, the newest turns that
/// fit `keep_target` stay verbatim (always at least the running one) and
/// everything older folds. `force` folds every turn but the running one.
pub fn plan_fold(
    entries: &[TranscriptEntry],
    history_budget: u64,
    keep_target: u64,
    force: bool,
) -> Option<Fold> {
    let costs: Vec<u64> = entries.iter().map(entry_tokens).collect();
    let total: u64 = costs.iter().sum();
    if !force && total <= history_budget {
        return None;
    }
    let starts = turn_starts(entries);
    let turn_cost = |t: usize| -> u64 {
        let from = starts[t];
        let to = starts.get(t + 1).copied().unwrap_or(entries.len());
        costs[from..to].iter().sum()
    };
    // Walk back from the newest turn, keeping while the target allows.
    let last = starts.len().checked_sub(1)?;
    let mut first_kept = last;
    let mut kept = turn_cost(last);
    if !force {
        while first_kept > 0 {
            let c = turn_cost(first_kept - 1);
            if kept + c > keep_target {
                break;
            }
            kept += c;
            first_kept -= 1;
        }
    }
    if first_kept == 0 {
        return None;
    }
    let cut = starts[first_kept];
    Some(Fold {
        entries: cut,
        through_id: entries[cut - 1].id.clone(),
        turns: first_kept,
        tokens_before: total,
        tokens_kept: kept,
    })
}

/// The conversation of the running turn after turn-local compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnFit {
    pub items: Vec<ConversationItem>,
    /// The rounds of this turn (1-based) replaced by recaps.
    pub recapped_rounds: Vec<u32>,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Still over budget with every earlier round recapped.
    pub over: bool,
}

/// Recap of one tool result: what it was and how big, its first and last
/// lines, never its body.
pub fn recap_result(tool_name: &str, content: &str, is_error: bool) -> String {
    let lines: Vec<&str> = content.lines().filter(|l| !l.trim().is_empty()).collect();
    let clip = |s: &str| -> String {
        let s = s.trim();
        if s.chars().count() > 160 {
            format!("{}…", s.chars().take(160).collect::<String>())
        } else {
            s.to_owned()
        }
    };
    let mut out = format!(
        "[recap] {tool_name} {} ({} chars, {} lines) — the full output was compacted to stay \
         within the context budget; run it again if you need it.",
        if is_error { "failed" } else { "result" },
        content.chars().count(),
        content.lines().count()
    );
    if let Some(first) = lines.first() {
        out.push_str(&format!("\nfirst: {}", clip(first)));
    }
    if lines.len() > 1 {
        if let Some(last) = lines.last() {
            out.push_str(&format!("\nlast: {}", clip(last)));
        }
    }
    out
}

fn recap_text(text: &str) -> String {
    if text.chars().count() <= 300 {
        return text.to_owned();
    }
    format!(
        "{}… [recap: {} chars]",
        text.chars().take(300).collect::<String>(),
        text.chars().count()
    )
}

/// Fit the running turn into `budget` tokens of conversation: `items` is
/// the whole conversation, the running turn beginning at `turn_start`.
/// Earlier rounds of the turn are recapped oldest first, keeping the
/// newest `keep_last` rounds verbatim as long as possible; call/result
/// pairs stay intact. Deterministic: the same input gives the same recaps.
pub fn fit_turn(
    items: &[ConversationItem],
    turn_start: usize,
    budget: u64,
    keep_last: usize,
) -> TurnFit {
    let tokens_before = items_tokens(items);
    let mut out = items.to_vec();
    let mut recapped = Vec::new();
    if tokens_before <= budget {
        return TurnFit {
            items: out,
            recapped_rounds: recapped,
            tokens_before,
            tokens_after: tokens_before,
            over: false,
        };
    }
    // The rounds of the running turn: each starts at an assistant round.
    let rounds: Vec<usize> = (turn_start..out.len())
        .filter(|&i| matches!(out[i], ConversationItem::AssistantRound { .. }))
        .collect();
    let mut total = tokens_before;
    for pass_keep in [keep_last, 0] {
        let limit = rounds.len().saturating_sub(pass_keep);
        for (n, &start) in rounds.iter().enumerate().take(limit) {
            if total <= budget {
                break;
            }
            let end = rounds.get(n + 1).copied().unwrap_or(out.len());
            let mut changed = false;
            for item in &mut out[start..end] {
                let before = item_tokens(item);
                match item {
                    ConversationItem::AssistantRound { text, .. } => *text = recap_text(text),
                    ConversationItem::ToolResult {
                        tool_name,
                        content,
                        is_error,
                        images,
                        ..
                    } if !content.starts_with("[recap]") => {
                        *content = recap_result(tool_name, content, *is_error);
                        images.clear();
                    }
                    ConversationItem::ToolResult { .. } | ConversationItem::UserText { .. } => {}
                }
                let after = item_tokens(item);
                if after < before {
                    total -= before - after;
                    changed = true;
                }
            }
            let round = (n + 1) as u32;
            if changed && !recapped.contains(&round) {
                recapped.push(round);
            }
        }
    }
    recapped.sort_unstable();
    TurnFit {
        items: out,
        recapped_rounds: recapped,
        tokens_before,
        tokens_after: total,
        over: total > budget,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::usage::ToolCall;

    fn entry(run: &str, body: TranscriptBody) -> TranscriptEntry {
        TranscriptEntry {
            id: crate::new_id("tr"),
            agent_id: "main".into(),
            run_id: run.into(),
            message_id: None,
            ts: "t".into(),
            body,
        }
    }

    fn turn(run: &str, chars: usize) -> Vec<TranscriptEntry> {
        vec![
            entry(
                run,
                TranscriptBody::Input {
                    text: "x".repeat(chars),
                },
            ),
            entry(
                run,
                TranscriptBody::AssistantRound {
                    input_tokens: None,
                    output_tokens: None,
                    reasoning: Vec::new(),
                    round: 1,
                    text: "done".into(),
                    tool_calls: Vec::new(),
                    token_usage: None,
                    timeline: None,
                },
            ),
        ]
    }

    #[test]
    fn history_that_fits_is_left_alone() {
        let entries: Vec<_> = (0..3).flat_map(|i| turn(&format!("r{i}"), 400)).collect();
        assert_eq!(plan_fold(&entries, 1_000, 500, false), None);
    }

    #[test]
    fn older_turns_fold_and_the_newest_stay_within_the_target() {
        // Ten turns of ~110 tokens each.
        let entries: Vec<_> = (0..10).flat_map(|i| turn(&format!("r{i}"), 400)).collect();
        let fold = plan_fold(&entries, 600, 300, false).expect("fold");
        assert_eq!(fold.turns, 8, "two turns fit 300 tokens");
        assert_eq!(fold.entries, 16);
        assert_eq!(fold.through_id, entries[15].id);
        assert!(fold.tokens_kept <= 300);
        // Forced: everything but the running turn.
        let forced = plan_fold(&entries, 10_000, 10_000, true).expect("fold");
        assert_eq!(forced.turns, 9);
    }

    #[test]
    fn the_running_turn_never_folds_even_when_it_alone_is_too_big() {
        let entries = turn("r0", 40_000);
        assert_eq!(plan_fold(&entries, 100, 50, false), None);
        assert_eq!(plan_fold(&entries, 100, 50, true), None);
    }

    fn round(id: &str, result_chars: usize) -> Vec<ConversationItem> {
        vec![
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: "checking".into(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    name: "ExecCommand".into(),
                    arguments: serde_json::json!({"cmd": "cargo test"}),
                    malformed_arguments: None,
                }],
            },
            ConversationItem::ToolResult {
                call_id: id.into(),
                tool_name: "ExecCommand".into(),
                content: format!("line one\n{}\nlast line", "y".repeat(result_chars)),
                is_error: false,
                images: Vec::new(),
            },
        ]
    }

    #[test]
    fn turn_local_recaps_oldest_rounds_first_and_keeps_pairs() {
        let mut items = vec![ConversationItem::UserText { text: "go".into() }];
        for i in 0..6 {
            items.extend(round(&format!("c{i}"), 4_000));
        }
        let fit = fit_turn(&items, 0, 3_000, 2);
        assert!(!fit.over, "{fit:?}");
        assert!(fit.tokens_after <= 3_000);
        assert_eq!(fit.recapped_rounds, vec![1, 2, 3, 4]);
        assert_eq!(
            fit.items.len(),
            items.len(),
            "nothing removed: pairs intact"
        );
        let last = &fit.items[fit.items.len() - 1];
        assert!(
            matches!(last, ConversationItem::ToolResult { content, .. } if !content.starts_with("[recap]"))
        );
        let first_result = &fit.items[2];
        assert!(
            matches!(first_result, ConversationItem::ToolResult { content, .. }
                if content.starts_with("[recap] ExecCommand result") && content.contains("last: last line"))
        );
        // Deterministic.
        assert_eq!(fit_turn(&items, 0, 3_000, 2), fit);
    }

    #[test]
    fn turn_local_recaps_even_the_newest_rounds_before_giving_up() {
        let mut items = vec![ConversationItem::UserText { text: "go".into() }];
        for i in 0..2 {
            items.extend(round(&format!("c{i}"), 8_000));
        }
        let fit = fit_turn(&items, 0, 500, 2);
        assert_eq!(fit.recapped_rounds, vec![1, 2]);
        assert!(!fit.over);
        let hopeless = fit_turn(
            &[ConversationItem::UserText {
                text: "z".repeat(10_000),
            }],
            0,
            500,
            2,
        );
        assert!(hopeless.over);
        assert!(hopeless.recapped_rounds.is_empty());
    }
}
