//! Performing cross-turn compaction: plan the fold (pure), say
//! `context_compaction_started`, ask the model for the summary outside
//! any transaction (cancellable; the extractive summary when it fails,
//! answers garbage, or no model is configured), then one commit: the
//! archived episode, the agent's new boundary and epoch, and
//! `context_compacted`. A runtime killed before the commit has changed
//! nothing but the started event; the next turn plans again.

use std::sync::Arc;

use super::prompt::ContextRead;
use crate::model::agent::AgentRecord;
use crate::model::context::ContextEpisode;
use crate::model::context::SummarySource;
use crate::model::event::Provenance;
use crate::model::transcript::TranscriptEntry;
use crate::model::usage::TokenUsage;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::context::budget::estimate_tokens;
use crate::runtime::context::plan::plan_fold;
use crate::runtime::context::summary;
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::handle::HostInner;
use crate::runtime::provider::{Provider, ProviderProgress};
use crate::runtime::RuntimeError;
use crate::store::{Keyed, StoreError};

/// Why a compaction runs, and how far it goes.
#[derive(Debug, Clone, Copy)]
pub(super) struct FoldRequest {
    /// Tokens the verbatim history may use.
    pub history_budget: u64,
    /// Tokens of newest turns to keep verbatim when folding.
    pub keep_target: u64,
    /// Fold every turn but the running one.
    pub force: bool,
    /// `turn_start`, `turn_local` or `context_length_exceeded`.
    pub trigger: &'static str,
    /// The model's whole prompt budget (bounds the summarisation request).
    pub prompt_budget: u64,
}

/// The summary and how it was made.
struct Made {
    text: String,
    source: SummarySource,
    fallback_reason: Option<String>,
    usage: Option<TokenUsage>,
    /// The model that answered, when one did.
    model_ref: Option<String>,
}

async fn summarise(
    provider: &dyn Provider,
    previous: Option<&str>,
    folded: &[TranscriptEntry],
    req: &FoldRequest,
    max_tokens: u64,
    cancel: &TurnCancel,
) -> Option<Made> {
    let extractive = |reason: String, usage, model_ref| Made {
        text: summary::extractive(previous, folded, max_tokens),
        source: SummarySource::Extractive,
        fallback_reason: Some(reason),
        usage,
        model_ref,
    };
    if provider.model_ref().is_empty() {
        return Some(extractive("no model is configured".into(), None, None));
    }
    let input = (req.prompt_budget.saturating_sub(max_tokens) * 3 / 4).max(512);
    let request = summary::request(previous, folded, input, max_tokens);
    let quiet = |_: ProviderProgress| {};
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => return None,
        o = provider.round(&request, &quiet) => o,
    };
    Some(match outcome.result {
        Err(f) => extractive(
            format!("the summarisation request failed: {}", f.artifact.summary),
            None,
            None,
        ),
        Ok(r) => {
            match summary::check_model_summary(&r.text, !r.tool_calls.is_empty(), max_tokens) {
                Ok(text) => Made {
                    text,
                    source: SummarySource::Model,
                    fallback_reason: None,
                    usage: r.token_usage,
                    model_ref: Some(r.model_ref.clone()),
                },
                Err(why) => extractive(why, r.token_usage, Some(r.model_ref.clone())),
            }
        }
    })
}

/// Fold older turns into the context summary when the plan says so,
/// planning on `read` (a snapshot: the commit checks the boundary has not
/// moved since).
/// Returns the new episode, or `None` when nothing folded (history fits,
/// only the running turn is left, the turn was cancelled, or another
/// compaction got there first).
pub(super) async fn compact(
    inner: &Arc<HostInner>,
    run_id: &str,
    provider: &dyn Provider,
    req: FoldRequest,
    read: &ContextRead,
    cancel: &TurnCancel,
) -> Result<Option<ContextEpisode>, RuntimeError> {
    let started = std::time::Instant::now();
    let store = inner.store.clone();
    let agent_id = read.agent.id.as_str();
    let (history, previous) = (&read.history, &read.summary);
    let boundary = read.agent.context.compacted_through.clone();
    // More entries than were read is pressure to fold on its own.
    let budget = if history.more { 0 } else { req.history_budget };
    let Some(fold) = plan_fold(&history.entries, budget, req.keep_target, req.force) else {
        return Ok(None);
    };
    let folded: Vec<TranscriptEntry> = if history.more {
        let (all, _) = store.read()?.list_recent_after::<TranscriptEntry>(
            Keyed::Transcript,
            agent_id,
            boundary.as_deref(),
            usize::MAX,
        )?;
        all.into_iter()
            .take_while(|e| e.id <= fold.through_id)
            .collect()
    } else {
        history.entries[..fold.entries].to_vec()
    };
    // Said before the summary is asked for (which may take a while), so
    // a client shows the compaction as it runs, not only once it is done.
    let prev_tokens = previous.as_ref().map_or(0, |e| e.summary_tokens);
    let started_event = ev::ContextCompactionStarted {
        run_id: run_id.to_owned(),
        trigger: req.trigger.to_owned(),
        folding_message_count: folded.len() as u64,
        folding_turns: fold.turns as u64,
        tokens_before: fold.tokens_before + prev_tokens,
    };
    let id = agent_id.to_owned();
    store
        .write(move |tx| {
            tx.append_event(new_event(
                &id,
                Provenance::default(),
                Event::ContextCompactionStarted(started_event.clone()),
            ))
        })
        .await?;
    let max_tokens = (req.history_budget / 4).clamp(256, 8_000);
    let prev_text = previous.as_ref().map(|e| e.summary.as_str());
    let Some(made) = summarise(provider, prev_text, &folded, &req, max_tokens, cancel).await else {
        return Ok(None);
    };
    let workspace_id = inner.execution_of(agent_id)?.workspace_id;
    let summary_tokens = estimate_tokens(&made.text);
    let (id, rid) = (agent_id.to_owned(), run_id.to_owned());
    let pricing = inner.config.pricing.clone();
    let folded_turns = fold.turns as u64;
    let episode = store
        .write(move |tx| {
            let mut agent: AgentRecord = tx
                .get_agent(&id)?
                .ok_or_else(|| StoreError::Storage(format!("agent {id} vanished")))?;
            if agent.context.compacted_through != boundary {
                return Ok(None);
            }
            let now = tx.now_ts();
            let episode = ContextEpisode {
                id: crate::new_id("ep"),
                agent_id: id.clone(),
                epoch: agent.context.epoch + 1,
                created_at: now,
                summary: made.text.clone(),
                source: made.source,
                fallback_reason: made.fallback_reason.clone(),
                folded_entries: folded.len() as u64,
                folded_turns,
                through_id: fold.through_id.clone(),
                from_ts: folded.first().map(|e| e.ts.clone()).unwrap_or_default(),
                through_ts: folded.last().map(|e| e.ts.clone()).unwrap_or_default(),
                workspace_id: workspace_id.clone(),
                tokens_before: fold.tokens_before + prev_tokens,
                tokens_after: fold.tokens_kept + summary_tokens,
                summary_tokens,
            };
            tx.put(Keyed::ContextEpisodes, &id, &episode.id, &episode)?;
            agent.context.epoch = episode.epoch;
            agent.context.compacted_through = Some(episode.through_id.clone());
            agent.context.compacted_entries += episode.folded_entries;
            agent.context.summary_episode_id = Some(episode.id.clone());
            // The summariser's round is spent like any other: on the
            // agent's totals, its day and its budget.
            let summariser_cost = match (made.usage, made.model_ref.as_deref()) {
                (Some(u), Some(m)) => pricing.cost_micro_usd(m, &u),
                _ => None,
            };
            if let Some(u) = made.usage {
                let day = crate::runtime::budget::budget_day(&agent, tx.now_ms());
                crate::runtime::budget::add_round(&mut agent, &day, &u, summariser_cost);
            }
            tx.put_agent(&id, &agent)?;
            let compacted = ev::ContextCompacted {
                run_id: rid.clone(),
                episode_id: episode.id.clone(),
                epoch: episode.epoch,
                trigger: req.trigger.to_owned(),
                compacted_message_count: episode.folded_entries,
                compacted_turns: episode.folded_turns,
                summary_source: made.source,
                fallback_reason: made.fallback_reason.clone(),
                summary_chars: episode.summary.chars().count(),
                summary_tokens,
                tokens_before: episode.tokens_before,
                tokens_after: episode.tokens_after,
                summariser_token_usage: made.usage,
                summariser_model_ref: made.model_ref.clone(),
                summariser_cost_usd: summariser_cost.map(crate::runtime::provider::catalog::usd),
                workspace_id: episode.workspace_id.clone(),
                duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            };
            tx.append_event(new_event(
                &id,
                Provenance::default(),
                Event::ContextCompacted(compacted),
            ))?;
            Ok(Some(episode))
        })
        .await?;
    Ok(episode)
}
