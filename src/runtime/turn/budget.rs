//! A turn's context bookkeeping between rounds: the compactions it ran,
//! the budget share it may use (lowered after the provider said a prompt
//! was too long), and the turn-local checkpoint it last recorded. The
//! planning itself is pure (`runtime::context`); this performs it.

use std::sync::Arc;

use super::compaction::{compact, FoldRequest};
use super::frame::FrameContext;
use super::prompt::{self, ContextRead, Frame};
use crate::model::agent::AgentRecord;
use crate::model::context::ContextBudget;
use crate::model::event::Provenance;
use crate::model::usage::ConversationItem;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::context::budget::items_tokens;
use crate::runtime::context::plan::TurnFit;
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::handle::HostInner;
use crate::runtime::provider::{Provider, ToolSpec};
use crate::runtime::RuntimeError;

/// Rounds of the running turn kept verbatim as long as the budget allows.
pub(super) const KEEP_VERBATIM_ROUNDS: usize = 2;

/// What every step of a turn's context work needs.
pub(super) struct TurnRefs<'a> {
    pub inner: &'a Arc<HostInner>,
    pub agent_id: &'a str,
    pub run_id: &'a str,
    pub provider: &'a dyn Provider,
    /// The catalog this round offers (rebuilt when an MCP server's tools
    /// changed).
    pub tools: Arc<[ToolSpec]>,
    pub cancel: &'a TurnCancel,
}

/// The frame of the agent's next round.
pub(super) fn frame_now(t: &TurnRefs<'_>, ctx: &FrameContext) -> Result<Frame, RuntimeError> {
    let rx = t.inner.store.read()?;
    let agent: AgentRecord = crate::runtime::workspace::view::record_in(&rx, t.agent_id)?;
    Ok(prompt::build(&rx, &agent, ctx, t.tools.to_vec())?)
}

/// The running turn's own inputs (its first input and any interjected
/// before its first round): part of the fixed baseline, never recapped.
pub(super) fn turn_inputs_tokens(history: &[ConversationItem], turn_start: usize) -> u64 {
    let inputs: Vec<ConversationItem> = history[turn_start.min(history.len())..]
        .iter()
        .take_while(|i| matches!(i, ConversationItem::UserText { .. }))
        .cloned()
        .collect();
    items_tokens(&inputs)
}

/// The failure brief of a turn whose fixed part exceeds the budget: how
/// big each part is, largest first, and what to shrink.
pub(super) fn over_budget_report(
    frame: &Frame,
    history: &[ConversationItem],
    turn_start: usize,
    limit: u64,
    budget: &ContextBudget,
) -> String {
    let mut costs = frame.costs();
    costs.push(("this turn's input", turn_inputs_tokens(history, turn_start)));
    costs.sort_by_key(|c| std::cmp::Reverse(c.1));
    let total: u64 = costs.iter().map(|(_, t)| t).sum();
    let parts: Vec<String> = costs
        .iter()
        .filter(|(_, t)| *t > 0)
        .map(|(n, t)| format!("{n} ~{t}"))
        .collect();
    format!(
        "This turn was not sent: its fixed part alone is about {total} tokens, over the prompt \
         budget of {limit} tokens (context window {} tokens). Largest parts: {}. Shrink the \
         largest: a shorter prompt, a smaller AGENTS.md or memory file, fewer open work items — \
         or use a model with a bigger window (`[model] context_window` or \
         `HOLON_CONTEXT_WINDOW` if the window is really larger).",
        budget.window,
        parts.join(", ")
    )
}

/// What the last checkpoint anchored on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mark {
    recapped: Vec<u32>,
    anchor: Option<(String, u64)>,
}

/// The checkpoint prompt that follows the recapped rounds.
pub(super) fn checkpoint_text(recapped: &[u32], anchor: Option<&(String, u64)>) -> String {
    let contiguous = recapped.windows(2).all(|w| w[1] == w[0] + 1);
    let rounds = match (recapped.first(), recapped.last()) {
        (Some(a), Some(b)) if a != b && contiguous => format!("Rounds {a}–{b}"),
        (Some(a), Some(b)) if a != b => {
            let head: Vec<String> = recapped[..recapped.len() - 1]
                .iter()
                .map(u32::to_string)
                .collect();
            format!("Rounds {} and {b}", head.join(", "))
        }
        (Some(a), _) => format!("Round {a}"),
        _ => "No rounds".to_owned(),
    };
    let work = match anchor {
        Some((id, rev)) => format!(
            "The current work item is {id} at revision {rev} (its plan is in the work queue \
             above and is the truth about progress)."
        ),
        None => "No work item is current.".to_owned(),
    };
    format!(
        "[runtime checkpoint] {rounds} of this turn were recapped to stay within the context \
         budget; their full results remain in the runtime's ledger. {work} Continue from the \
         latest results below, and re-run a command rather than guess at output you no longer \
         see."
    )
}

/// What the checkpoint note for `recapped` costs, with room for the
/// longer note a refit that recaps more rounds may need.
pub(super) fn checkpoint_tokens(recapped: &[u32], anchor: Option<&(String, u64)>) -> u64 {
    let text = checkpoint_text(recapped, anchor);
    items_tokens(&[ConversationItem::UserText { text }]) + 16
}

/// A turn's context bookkeeping.
#[derive(Debug)]
pub(super) struct TurnShape {
    /// Percent of the prompt budget in use.
    pub budget_percent: u64,
    /// A forced compaction already ran in this turn.
    pub forced: bool,
    /// The one retry after `context_length_exceeded` was used.
    pub retried_too_long: bool,
    last_mark: Option<Mark>,
}

impl Default for TurnShape {
    fn default() -> Self {
        TurnShape {
            budget_percent: 100,
            forced: false,
            retried_too_long: false,
            last_mark: None,
        }
    }
}

impl TurnShape {
    /// The agent, its verbatim history and its summary, in one snapshot.
    pub fn read(&self, t: &TurnRefs<'_>) -> Result<ContextRead, RuntimeError> {
        ContextRead::load(&t.inner.store.read()?, t.agent_id)
    }

    /// Fold older turns of `read` when the plan says so (always, when
    /// `force`), given what the frame costs (`baseline`). Returns whether
    /// anything folded (then the history must be read again).
    pub async fn compact(
        &self,
        t: &TurnRefs<'_>,
        baseline: u64,
        read: &ContextRead,
        force: bool,
        trigger: &'static str,
    ) -> Result<bool, RuntimeError> {
        let budget = t.provider.context_budget();
        let limit = budget.prompt_budget * self.budget_percent / 100;
        let history_budget = limit.saturating_sub(baseline);
        let req = FoldRequest {
            history_budget,
            keep_target: history_budget / 2,
            force,
            trigger,
            prompt_budget: limit,
        };
        Ok(compact(t.inner, t.run_id, t.provider, req, read, t.cancel)
            .await?
            .is_some())
    }

    /// The conversation to send: the fitted items, with a checkpoint
    /// prompt after the recapped rounds. A new checkpoint (more rounds
    /// recapped, or the work item moved on, which invalidates the old
    /// anchor) is recorded as `turn_checkpoint`.
    pub async fn checkpoint(
        &mut self,
        t: &TurnRefs<'_>,
        round: u32,
        frame: &Frame,
        fit: TurnFit,
        turn_start: usize,
    ) -> Result<Vec<ConversationItem>, RuntimeError> {
        if fit.recapped_rounds.is_empty() {
            return Ok(fit.items);
        }
        let mut items = fit.items;
        // After the last recapped round: before the next round's start.
        let next = fit.recapped_rounds.last().copied().unwrap_or(0) as usize;
        let at = (turn_start..items.len())
            .filter(|&i| matches!(items[i], ConversationItem::AssistantRound { .. }))
            .nth(next)
            .unwrap_or(items.len());
        items.insert(
            at,
            ConversationItem::UserText {
                text: checkpoint_text(&fit.recapped_rounds, frame.anchor.as_ref()),
            },
        );
        let mark = Mark {
            recapped: fit.recapped_rounds.clone(),
            anchor: frame.anchor.clone(),
        };
        if self.last_mark.as_ref() == Some(&mark) {
            return Ok(items);
        }
        let invalidated = self
            .last_mark
            .as_ref()
            .and_then(|m| m.anchor.clone())
            .filter(|a| Some(a) != mark.anchor.as_ref());
        let (id, rid) = (t.agent_id.to_owned(), t.run_id.to_owned());
        let checkpoint = ev::TurnCheckpoint {
            run_id: rid,
            round,
            recapped_rounds: mark.recapped.clone(),
            work_item_id: mark.anchor.as_ref().map(|a| a.0.clone()),
            work_item_revision: mark.anchor.as_ref().map(|a| a.1),
            invalidated_anchor: invalidated.map(|(work_item_id, revision)| ev::Anchor {
                work_item_id,
                revision,
            }),
            tokens_before: fit.tokens_before,
            tokens_after: fit.tokens_after,
        };
        let event = new_event(
            &id,
            Provenance::default(),
            Event::TurnCheckpoint(checkpoint),
        );
        t.inner
            .store
            .write(move |tx| tx.append_event(event.clone()))
            .await?;
        self.last_mark = Some(mark);
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_text_names_the_rounds_and_the_anchor() {
        let t = checkpoint_text(&[1, 2, 3], Some(&("wi_1".to_owned(), 4)));
        assert!(t.starts_with("[runtime checkpoint] Rounds 1–3"));
        assert!(t.contains("wi_1 at revision 4"));
        assert!(checkpoint_text(&[2], None).contains("Round 2 of"));
        assert!(checkpoint_text(&[1, 2, 3, 5], None).contains("Rounds 1, 2, 3 and 5 of"));
    }

    #[test]
    fn the_turn_inputs_are_the_leading_user_texts() {
        let items = vec![
            ConversationItem::UserText { text: "old".into() },
            ConversationItem::UserText {
                text: "x".repeat(400),
            },
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: "y".repeat(4000),
                tool_calls: Vec::new(),
            },
        ];
        assert_eq!(turn_inputs_tokens(&items, 1), 104);
        assert_eq!(turn_inputs_tokens(&items, 9), 0);
    }
}
