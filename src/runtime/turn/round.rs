//! A turn's provider rounds, as four named phases around one `Round`:
//!
//! 1. `fit_request`: the prompt frame and the conversation, kept within
//!    the context budget (a forced compaction at most once, recaps and a
//!    checkpoint note when rounds are folded), or the turn ends over
//!    budget;
//! 2. `call_provider`: the request, cancellable; a "prompt too long"
//!    answer compacts harder and fits once more;
//! 3. `record_round`: provider telemetry, the assistant round and token
//!    totals in one write; a failed round or an answer without tool calls
//!    ends the turn;
//! 4. `run_tools`: each tool call recorded before and after
//!    (`calls.rs`), then `interject` prompts and answers to the turn's
//!    approvals join at the safe point (`join.rs`), where a round that
//!    asked for approval waits a while for the answer.
//!
//! A phase answers `Step::End` to end the turn; `rounds` only sequences
//! them, checks cancellation between rounds and stops at `max_rounds`.

use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Instant;

use super::budget::{
    checkpoint_tokens, frame_now, over_budget_report, turn_inputs_tokens, TurnRefs, TurnShape,
    KEEP_VERBATIM_ROUNDS,
};
use super::calls::{run_call, Route};
use super::ending::Ending;
use super::frame::FrameContext;
use super::join;
use super::stream::Stream;
use super::{cancelled_attempt, output_limit_reason, transcript_in};
use crate::model::agent::AgentRecord;
use crate::model::context::ContextBudget;
use crate::model::context::PromptUse;
use crate::model::event::Provenance;
use crate::model::mcp;
use crate::model::message::MessageEnvelope;
use crate::model::transcript::TranscriptBody;
use crate::model::usage::ConversationItem;
use crate::model::usage::FailureArtifact;
use crate::model::usage::FailureCategory;
use crate::model::usage::FailureKind;
use crate::model::usage::PromptCache;
use crate::model::work::{WorkItemRecord, WorkItemState};
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::payloads::CancelReason;
use crate::runtime::context::budget::{estimate_tokens, request_tokens};
use crate::runtime::context::plan::fit_turn;
use crate::runtime::context::stale::{reminder, StaleConfig, StaleProgress, PROGRESS_TOOLS};
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::handle::HostInner;
use crate::runtime::provider::catalog::usd;
use crate::runtime::provider::{BlockStability, PromptContentBlock};
use crate::runtime::provider::{
    Provider, ProviderFailure, ProviderOutcome, ProviderProgress, ProviderRequest, ProviderRound,
};
use crate::runtime::tools::offer::{Offer, TOOL_SEARCH};
use crate::runtime::tools::{self, ToolEnv};
use crate::runtime::RuntimeError;
use crate::store::Keyed;

mod record;
mod run_tools;

/// What a phase decided: go on with `T`, or end the turn.
enum Step<T> {
    Go(T),
    End(Ending),
}

/// Go on with the phase's value, or return the turn's ending.
macro_rules! go {
    ($step:expr) => {
        match $step {
            Step::Go(value) => value,
            Step::End(ending) => return Ok(ending),
        }
    };
}

/// A request that fits the budget, ready to send.
struct Fitted {
    request: ProviderRequest,
    /// The frame's own tokens (for a compaction after "too long").
    baseline_tokens: u64,
    built: Built,
}

/// How a round's request was built, for its records.
#[derive(Debug, Clone, Default)]
struct Built {
    prompt_estimate: u64,
    context_build_ms: u64,
    cacheable_tokens: u64,
    sections: Vec<String>,
    cache: Option<PromptCache>,
    reminded: bool,
    /// The tools the request carried and those it left to ToolSearch.
    tools: crate::runtime::tools::offer::Sent,
}

/// The provider's answer, with what it took.
struct Called {
    outcome: ProviderOutcome,
    /// The run's provider attempt that answered (`stream.rs`).
    attempt: u32,
    built: Built,
    provider_round_ms: u64,
}

/// One turn's rounds: what every round reads, and what a round leaves for
/// the next.
struct Round<'a> {
    t: TurnRefs<'a>,
    message: &'a MessageEnvelope,
    turn_work_item_id: Option<String>,
    frame: &'a mut FrameContext,
    budget: ContextBudget,
    shape: TurnShape,
    /// The conversation the next request sends: rebuilt from the
    /// transcript once per turn (and after a compaction), then extended
    /// by each round with the items the transcript would give back.
    history: Vec<ConversationItem>,
    /// Where this turn's own items begin in `history`.
    turn_start: usize,
    completed_work_item: Option<String>,
    /// The run's provider attempts so far: streamed text is numbered by
    /// them (`stream.rs`).
    attempts: Arc<AtomicU32>,
    /// Rounds without work-item progress, for the reminder.
    stale: StaleProgress,
    stale_config: StaleConfig,
    /// The turn's tool catalog and what of it the next request sends
    /// (`t.tools`, kept in step).
    offer: Offer,
}

/// Run provider rounds until the turn ends.
#[allow(clippy::too_many_arguments)]
pub(super) async fn rounds(
    inner: &Arc<HostInner>,
    agent_id: &str,
    run_id: &str,
    message: &MessageEnvelope,
    turn_work_item_id: Option<String>,
    provider: &dyn Provider,
    frame: &mut FrameContext,
    cancel: &TurnCancel,
) -> Result<Ending, RuntimeError> {
    // Building the catalog may start MCP servers (each within its startup
    // timeout): a cancelled turn does not wait for them.
    let aborted = |reason, rounds| Ending::Aborted {
        reason,
        rounds,
        timeline: None,
        partial: None,
    };
    // What the model's server says of its window (bounded; cached), and
    // the catalog (which may start MCP servers), at once.
    let tools = tokio::select! {
        (_, tools) = futures_util::future::join(
            super::windows::learn(inner, provider),
            tools::catalog(inner, agent_id),
        ) => tools,
        reason = cancel.cancelled() => return Ok(aborted(reason, 0)),
    };
    // The workspace's `.mcp.json` servers awaiting approval go to its
    // reviewer first (off this path; once per command line).
    crate::runtime::handle::RuntimeHost {
        inner: Arc::clone(inner),
    }
    .review_mcp_soon(agent_id);
    let share = inner.config.mcp_tool_share;
    let offer = Offer::new(tools, provider.context_budget().prompt_budget, share);
    let t = TurnRefs {
        inner,
        agent_id,
        run_id,
        provider,
        tools: offer.sent().into(),
        cancel,
    };
    let mut r = Round::begin(t, message, turn_work_item_id, frame, offer).await?;
    for round in 1..=inner.config.max_rounds {
        if let Some(reason) = cancel.reason() {
            return Ok(Ending::Aborted {
                reason,
                rounds: round - 1,
                timeline: None,
                partial: None,
            });
        }
        // The daily budget is checked before every further request, never
        // inside a round (the actor checked it before the turn took its
        // message); only pausing writes.
        if round > 1 && !super::budget_allows(inner, agent_id).await? {
            return Ok(Ending::Aborted {
                reason: CancelReason::DailyBudget,
                rounds: round - 1,
                timeline: None,
                partial: None,
            });
        }
        if round > 1 {
            r.frame.refresh(inner, agent_id).await?;
            // A server said its tools changed: the next request offers
            // the new list. Only a turn offered MCP tools looks (no store
            // read or file check per round otherwise; a server that offered
            // none is looked at again next turn).
            let offers_mcp =
                r.t.tools.iter().any(|t| mcp::is_mcp_tool(&t.name)) || r.offer.deferred();
            if offers_mcp
                && inner
                    .mcp()
                    .stale(tools::mcp_anchor(inner, agent_id).as_deref())
            {
                let all = tokio::select! {
                    tools = tools::catalog(inner, agent_id) => tools,
                    reason = cancel.cancelled() => return Ok(aborted(reason, round - 1)),
                };
                r.offer.replace(all, r.budget.prompt_budget, share);
                // Deferred now where it was not: what this turn used stays.
                r.offer.note(&r.history);
                r.t.tools = r.offer.sent().into();
            }
        }
        let called = go!(r.call_provider(round).await?);
        let answer = go!(r.record_round(round, called).await?);
        go!(r.run_tools(round, answer).await?);
    }
    Ok(Ending::Failed {
        failure: Box::new(ProviderFailure {
            kind: FailureKind::InvalidResponse,
            artifact: FailureArtifact::new(
                FailureCategory::Runtime,
                "max_rounds_exceeded",
                format!(
                    "the turn needed more than {} provider rounds and was stopped",
                    inner.config.max_rounds
                ),
            ),
        }),
        timeline: Box::default(),
        rounds: inner.config.max_rounds,
    })
}

impl<'a> Round<'a> {
    /// Turn start: fold older turns into the summary when the history
    /// outgrows its share of the budget, then read the conversation.
    async fn begin(
        mut t: TurnRefs<'a>,
        message: &'a MessageEnvelope,
        turn_work_item_id: Option<String>,
        frame: &'a mut FrameContext,
        mut offer: Offer,
    ) -> Result<Round<'a>, RuntimeError> {
        let shape = TurnShape::default();
        let read = shape.read(&t)?;
        let baseline = frame_now(&t, frame)?.baseline_tokens();
        let read = match shape
            .compact(&t, baseline, &read, false, "turn_start")
            .await?
        {
            true => shape.read(&t)?,
            false => read,
        };
        let (history, turn_start) = read.conversation(t.run_id);
        // The MCP tools the conversation still shows in use stay loaded.
        offer.note(&history);
        t.tools = offer.sent().into();
        let stale_config = t.inner.config.stale_reminder;
        Ok(Round {
            budget: t.provider.context_budget(),
            t,
            message,
            turn_work_item_id,
            frame,
            shape,
            history,
            turn_start,
            completed_work_item: None,
            attempts: Arc::default(),
            stale: StaleProgress::default(),
            stale_config,
            offer,
        })
    }

    /// Phase 1: the request for this round, within the budget.
    async fn fit_request(&mut self, round: u32) -> Result<Step<Fitted>, RuntimeError> {
        let t0 = Instant::now();
        let t = &self.t;
        let f = frame_now(t, self.frame)?;
        let limit = self.budget.prompt_budget * self.shape.budget_percent / 100;
        let baseline = f.baseline_tokens() + turn_inputs_tokens(&self.history, self.turn_start);
        if baseline > limit {
            return Ok(Step::End(Ending::OverBudget {
                report: over_budget_report(&f, &self.history, self.turn_start, limit, &self.budget),
                rounds: round - 1,
            }));
        }
        let room = limit - f.baseline_tokens();
        let mut fit = fit_turn(&self.history, self.turn_start, room, KEEP_VERBATIM_ROUNDS);
        if fit.over && !self.shape.forced {
            self.shape.forced = true;
            let read = self.shape.read(t)?;
            let folded = self
                .shape
                .compact(t, f.baseline_tokens(), &read, true, "turn_local")
                .await?;
            if folded {
                (self.history, self.turn_start) = self.shape.read(t)?.conversation(t.run_id);
                fit = fit_turn(&self.history, self.turn_start, room, KEEP_VERBATIM_ROUNDS);
            }
        }
        // The checkpoint note that follows recapped rounds is part of the
        // request: fit again with room for it.
        if !fit.recapped_rounds.is_empty() {
            let note = checkpoint_tokens(&fit.recapped_rounds, f.anchor.as_ref());
            let room = room.saturating_sub(note);
            fit = fit_turn(&self.history, self.turn_start, room, KEEP_VERBATIM_ROUNDS);
        }
        let conversation = self
            .shape
            .checkpoint(t, round, &f, fit, self.turn_start)
            .await?;
        let mut request = f.request(conversation);
        let mut prompt_estimate = request_tokens(&request);
        // Many rounds without a work-item update: a provider-only
        // reminder of the current item, unless it would not fit.
        let mut reminded = false;
        if self.stale.due(self.stale_config) {
            if let Some(text) = self.progress_reminder(f.anchor.as_ref())? {
                let tokens = estimate_tokens(&text);
                if prompt_estimate + tokens <= self.budget.prompt_budget {
                    // With the turn state, after the conversation: never
                    // inside a prefix a provider would cache.
                    request.context_blocks.push(PromptContentBlock {
                        text,
                        stability: BlockStability::TurnScoped,
                        cache_breakpoint: false,
                    });
                    prompt_estimate += tokens;
                    self.stale.reminded();
                    reminded = true;
                }
            }
        }
        Ok(Step::Go(Fitted {
            baseline_tokens: f.baseline_tokens(),
            built: Built {
                prompt_estimate,
                context_build_ms: t0.elapsed().as_millis() as u64,
                cacheable_tokens: f.cacheable_tokens(),
                sections: f.sections.iter().map(|s| s.name.to_owned()).collect(),
                cache: Some(f.cache.clone()),
                reminded,
                tools: self.offer.sent_counts(),
            },
            request,
        }))
    }

    /// Phase 2: send the request. At most two passes: the second after
    /// the provider said the prompt was too long (one compaction, one
    /// retry).
    async fn call_provider(&mut self, round: u32) -> Result<Step<Called>, RuntimeError> {
        loop {
            let fitted = match self.fit_request(round).await? {
                Step::Go(fitted) => fitted,
                Step::End(ending) => return Ok(Step::End(ending)),
            };
            let t = &self.t;
            // What streams is sent on, and kept if the turn is cut off.
            let live = t.inner.live.clone();
            let stream = Stream::new(live, t.agent_id, t.run_id, Arc::clone(&self.attempts));
            let progress = |p: ProviderProgress| stream.progress(p);
            let t0 = Instant::now();
            // Cancellation drops the request future, which closes the
            // connection: nothing waits for a model that is no longer wanted.
            let outcome = tokio::select! {
                biased;
                reason = t.cancel.cancelled() => {
                    return Ok(Step::End(Ending::Aborted {
                        reason,
                        rounds: round,
                        timeline: Some(Box::new(cancelled_attempt(t.provider, t0))),
                        partial: stream.partial(),
                    }));
                }
                outcome = t.provider.round(&fitted.request, &progress) => outcome,
            };
            let too_long = matches!(&outcome.result,
                Err(f) if f.kind == FailureKind::ContextLengthExceeded);
            if too_long && !self.shape.retried_too_long {
                // The window is smaller than we thought: fold everything
                // before this turn, recap harder, and try once more.
                self.shape.retried_too_long = true;
                self.shape.budget_percent = 60;
                self.shape.forced = true;
                let read = self.shape.read(t)?;
                let why = "context_length_exceeded";
                if self
                    .shape
                    .compact(t, fitted.baseline_tokens, &read, true, why)
                    .await?
                {
                    (self.history, self.turn_start) = self.shape.read(t)?.conversation(t.run_id);
                }
                continue;
            }
            return Ok(Step::Go(Called {
                outcome,
                attempt: stream.attempt(),
                built: fitted.built,
                provider_round_ms: t0.elapsed().as_millis() as u64,
            }));
        }
    }

    /// The progress reminder of the turn's current work item, if it is
    /// still open.
    fn progress_reminder(
        &self,
        anchor: Option<&(String, u64)>,
    ) -> Result<Option<String>, RuntimeError> {
        let Some((id, _)) = anchor else {
            return Ok(None);
        };
        let rx = self.t.inner.store.read()?;
        let item: Option<WorkItemRecord> = rx.get(Keyed::WorkItems, self.t.agent_id, id)?;
        Ok(item
            .filter(|w| w.state == WorkItemState::Open)
            .map(|w| reminder(&w, self.stale.rounds_without, self.stale_config.max_tokens)))
    }
}
