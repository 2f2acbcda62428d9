//! How a turn is written down when it ends: the message's final queue
//! status, the `turn_terminal` record, the failure records of a failed or
//! over-budget turn, the agent's turn flags, and the operator's brief
//! (with its visibility), all in one transaction.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::transcript_in;
use crate::model::agent::AgentRecord;
use crate::model::decision::SystemTickReason;
use crate::model::decision::TurnTerminalKind;
use crate::model::message::MessageEnvelope;
use crate::model::message::QueueEntryStatus;
use crate::model::task::TaskRecord;
use crate::model::transcript::TranscriptBody;
use crate::model::transcript::TranscriptEntry;
use crate::model::usage::FailureKind;
use crate::model::usage::ProviderAttemptTimeline;
use crate::model::work::{PlanStatus, TodoState, WorkItemRecord, WorkItemState};
use crate::protocol::events::{
    self as ev, new_event, BriefKind, BriefVisibility, Event, SettleDetail,
};
use crate::runtime::context::working;
use crate::runtime::host::cancel::CancelReason;
use crate::runtime::host::HostInner;
use crate::runtime::provider::catalog::usd;
use crate::runtime::provider::ProviderFailure;
use crate::runtime::queue::provenance_of;
use crate::runtime::queue::settle_in;
use crate::runtime::scheduler::work_queue_tick_key;
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, StoreError};

/// How the turn ended, before it is written down.
pub(super) enum Ending {
    Completed {
        text: String,
        rounds: u32,
        completed_work_item: Option<String>,
        /// The provider's stop reason when the answer was cut off by the
        /// output limit (`length`, `max_tokens`, `incomplete:...`).
        truncated: Option<String>,
    },
    Failed {
        failure: Box<ProviderFailure>,
        timeline: Box<ProviderAttemptTimeline>,
        rounds: u32,
    },
    /// The turn's fixed part alone exceeds the prompt budget: nothing is
    /// sent (`TurnBaselineOverBudget`).
    OverBudget { report: String, rounds: u32 },
    Aborted {
        reason: CancelReason,
        rounds: u32,
        /// The provider request that was in flight when the turn was
        /// cancelled, recorded as a cancelled attempt.
        timeline: Option<Box<ProviderAttemptTimeline>>,
        /// What the model had streamed of its answer when it was cut off.
        partial: Option<String>,
    },
}

/// The agent's usage totals at turn start: the turn's own usage and cost
/// are what they grew by.
#[derive(Debug, Clone, Copy)]
pub(super) struct Totals {
    input: u64,
    output: u64,
    cached: u64,
    written: u64,
    reasoning: u64,
    cost_micro_usd: u64,
    unpriced: u64,
    /// The working-memory revision the turn's prompt showed.
    memory_revision: u64,
}

impl Totals {
    pub(super) fn of(agent: &AgentRecord) -> Totals {
        Totals {
            input: agent.total_input_tokens,
            output: agent.total_output_tokens,
            cached: agent.total_cached_input_tokens,
            written: agent.total_cache_write_tokens,
            reasoning: agent.total_reasoning_tokens,
            cost_micro_usd: agent.total_cost_micro_usd,
            unpriced: agent.total_unpriced_rounds,
            memory_revision: agent.working_memory.revision,
        }
    }

    fn tokens_to(&self, now: &AgentRecord) -> ev::TurnTokens {
        ev::TurnTokens {
            input_tokens: now.total_input_tokens.saturating_sub(self.input),
            output_tokens: now.total_output_tokens.saturating_sub(self.output),
            cached_input_tokens: now.total_cached_input_tokens.saturating_sub(self.cached),
            cache_write_tokens: now.total_cache_write_tokens.saturating_sub(self.written),
            reasoning_tokens: now.total_reasoning_tokens.saturating_sub(self.reasoning),
        }
    }

    /// The turn's usage, as the token-usage contract counts it.
    fn usage_to(&self, now: &AgentRecord) -> crate::model::usage::TokenUsage {
        let t = self.tokens_to(now);
        crate::model::usage::TokenUsage {
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            total_tokens: t.input_tokens.saturating_add(t.output_tokens),
            cached_input_tokens: t.cached_input_tokens,
            cache_write_tokens: t.cache_write_tokens,
            reasoning_tokens: t.reasoning_tokens,
        }
    }

    /// The turn's cost, unless one of its rounds had none.
    fn cost_to(&self, now: &AgentRecord) -> Option<f64> {
        let cost = now.total_cost_micro_usd.saturating_sub(self.cost_micro_usd);
        (now.total_unpriced_rounds == self.unpriced).then(|| usd(cost))
    }
}

/// Transcript entries read back for a turn's working-memory evidence.
const EVIDENCE_ENTRIES: usize = 96;

/// The work item in focus, as working memory keeps it.
fn focus_of(w: &WorkItemRecord) -> crate::model::working::WorkFocus {
    crate::model::working::WorkFocus {
        id: w.id.clone(),
        objective: w.objective.clone(),
        plan_status: serde_json::to_value(w.plan_status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        open_todos: w
            .todo_list
            .iter()
            .filter(|t| t.state != TodoState::Completed)
            .map(|t| t.text.clone())
            .collect(),
        blocked_by: w.blocked_by.clone(),
    }
}

pub(super) async fn finish(
    inner: &Arc<HostInner>,
    agent_id: &str,
    run_id: &str,
    message: &MessageEnvelope,
    turn_work_item_id: Option<String>,
    ending: Ending,
    // When the turn started, and the agent's token totals then (the
    // turn's own usage is the difference).
    (started, tokens_before): (Instant, Totals),
) -> Result<(), RuntimeError> {
    let duration_ms = started.elapsed().as_millis() as u64;
    // Briefs keep the workspace they were written in (memory search
    // scopes by it).
    let workspace_id = inner.execution_of(agent_id)?.workspace_id;
    let (id, rid, msg) = (agent_id.to_owned(), run_id.to_owned(), message.clone());
    let global_budget = inner.config.budget;
    // The turn's own records, for its working memory (its newest ones
    // when it had very many).
    let entries: Vec<TranscriptEntry> =
        inner
            .store
            .read()?
            .list_recent(Keyed::Transcript, agent_id, EVIDENCE_ENTRIES)?;
    let (files, commands) = working::from_entries(&entries, run_id);
    drop(entries);
    inner
        .store
        .write(move |tx| {
            let (terminal, queue_status, brief_kind, text, last_assistant, rounds, failure) = match &ending {
                Ending::Completed { text, rounds, truncated: None, .. } => (TurnTerminalKind::Completed, QueueEntryStatus::Processed, BriefKind::Result, text.clone(), text.clone(), *rounds, None),
                Ending::Completed { text, rounds, truncated: Some(why), .. } => {
                    let note = format!("{text}\n\n[The answer was cut off by the model's output limit (stop reason `{why}`).]");
                    (TurnTerminalKind::Completed, QueueEntryStatus::Processed, BriefKind::Result, note, text.clone(), *rounds, None)
                }
                Ending::Failed { failure, rounds, .. } => (TurnTerminalKind::Aborted, QueueEntryStatus::Processed, BriefKind::Failure, failure.artifact.summary.clone(), String::new(), *rounds, Some((**failure).clone())),
                Ending::OverBudget { report, rounds } => (TurnTerminalKind::BaselineOverBudget, QueueEntryStatus::Processed, BriefKind::Failure, report.clone(), String::new(), *rounds, None),
                Ending::Aborted { reason, rounds, .. } => (TurnTerminalKind::Aborted, QueueEntryStatus::Aborted, BriefKind::Failure, format!("Turn {}.", reason.describe()), String::new(), *rounds, None),
            };
            let text = match &ending {
                Ending::Aborted { reason: CancelReason::DailyBudget, .. } => match tx.get_agent::<AgentRecord>(&id)? {
                    Some(a) => crate::runtime::budget::paused_brief(&a, global_budget, tx.now_ms()),
                    None => text,
                },
                _ => text,
            };
            let (truncated, cancel_reason, cancelled_timeline) = match &ending {
                Ending::Completed { truncated, .. } => (truncated.clone(), None, None),
                Ending::Failed { .. } | Ending::OverBudget { .. } => (None, None, None),
                Ending::Aborted { reason, timeline, .. } => (None, Some(*reason), timeline.as_deref()),
            };
            if let Ending::OverBudget { report, .. } = &ending {
                transcript_in(tx, &id, &rid, Some(&msg.id), TranscriptBody::RuntimeFailure {
                    summary: report.clone(),
                    failure_artifact: json!({ "kind": "baseline_over_budget" }),
                    timeline: None,
                })?;
            }
            if let Ending::Failed { failure, timeline, .. } = &ending {
                let error = ev::RuntimeErrorRecorded {
                    run_id: rid.clone(),
                    phase: "runtime_turn".into(),
                    failure_kind: failure.kind,
                    failure_artifact: failure.artifact.clone(),
                    provider_attempt_timeline: (**timeline).clone(),
                    token_usage: timeline.aggregated_token_usage,
                };
                tx.append_event(new_event(&id, provenance_of(&msg), Event::RuntimeError(error)))?;
                transcript_in(tx, &id, &rid, Some(&msg.id), TranscriptBody::RuntimeFailure {
                    summary: failure.artifact.summary.clone(),
                    failure_artifact: json!(failure.artifact),
                    timeline: Some((**timeline).clone()),
                })?;
                // context_length_exceeded must not auto-continue the bound
                // work item: mark its continue tick as already emitted.
                if failure.kind == FailureKind::ContextLengthExceeded {
                    if let Some(w) = turn_work_item_id.as_ref().and_then(|w| tx.get::<WorkItemRecord>(Keyed::WorkItems, &id, w).ok().flatten()) {
                        let key = work_queue_tick_key(SystemTickReason::ContinueActive, &w.id, w.revision);
                        let family = crate::runtime::scheduler::tick_key_family(&key);
                        tx.index_remove_prefix(Index::TickKeys, &id, family)?;
                        tx.index_insert(Index::TickKeys, &id, &key)?;
                    }
                }
            }
            // A turn cut off says so in the transcript, so the operator
            // and the model see it; one interrupted by shutdown runs again.
            if let Ending::Aborted { reason, partial, .. } = &ending {
                if *reason != CancelReason::RuntimeShutdown {
                    transcript_in(tx, &id, &rid, Some(&msg.id), TranscriptBody::TurnCut {
                        reason: reason.describe().to_owned(),
                        partial_answer: partial.clone(),
                    })?;
                }
            }
            // A turn interrupted by shutdown leaves its message dequeued: it
            // replays on the next start (restart contract).
            if cancel_reason != Some(CancelReason::RuntimeShutdown) {
                let detail = SettleDetail {
                    run_id: Some(rid.clone()),
                    turn_terminal: Some(terminal),
                    ..SettleDetail::default()
                };
                settle_in(tx, &id, &msg.id, queue_status, detail)?;
            }
            let mut agent: AgentRecord = tx.get_agent(&id)?.ok_or_else(|| StoreError::Storage(format!("agent {id} vanished")))?;
            agent.turn_in_progress = false;
            agent.turn_awaits.clear();
            agent.current_run_id = None;
            agent.last_turn_terminal = Some(terminal);
            // The runtime stops after this turn: no scheduler decision will
            // move the agent off `awake_running`, so say what is true while
            // nothing runs (the rule recovery applies at the next start; the
            // message stays dequeued and replays then).
            if cancel_reason == Some(CancelReason::RuntimeShutdown) {
                agent.status = agent.status.at_rest();
            }
            let runtime_error = match (&ending, failure.as_ref()) {
                (Ending::Completed { .. }, _) => None,
                (_, Some(f)) => Some(f.artifact.summary.clone()),
                (Ending::OverBudget { report, .. }, _) => Some(report.clone()),
                (Ending::Aborted { .. }, None) | (Ending::Failed { .. }, None) => agent.runtime_error.clone(),
            };
            if runtime_error != agent.runtime_error {
                agent.runtime_error_at = runtime_error.as_ref().map(|_| tx.now_ts());
            }
            agent.runtime_error = runtime_error;
            // A completed turn makes its turn-active skills session-active.
            if matches!(ending, Ending::Completed { .. }) {
                crate::runtime::agents::skills::promote(&mut agent.skills);
            }
            agent.last_brief_at = Some(tx.now_ts());
            tx.put_agent(&id, &agent)?;
            let ended = ev::TurnTerminal {
                run_id: rid.clone(),
                message_id: msg.id.clone(),
                turn_index: tx.next_counter(&id, "turns")?,
                completed_at: tx.now_ts(),
                kind: terminal,
                rounds,
                last_assistant_message: last_assistant.clone(),
                duration_ms,
                truncated: truncated.is_some(),
                truncation_stop_reason: truncated.clone(),
                cancel_reason,
                provider_attempt_timeline: cancelled_timeline.cloned(),
                token_usage: tokens_before.tokens_to(&agent),
                cost_usd: tokens_before.cost_to(&agent),
                partial_answer: match &ending {
                    Ending::Aborted { partial, .. } => partial.clone(),
                    _ => None,
                },
            };
            tx.append_event(new_event(&id, provenance_of(&msg), Event::TurnTerminal(ended)))?;
            // Brief visibility: waiting for the operator -> action_required;
            // a completed work item with its report -> work_done; else
            // turn_result.
            let completed = match &ending {
                Ending::Completed { completed_work_item, .. } => completed_work_item.clone(),
                Ending::Failed { .. } | Ending::Aborted { .. } | Ending::OverBudget { .. } => None,
            };
            let mut needs_input = false;
            for wid in tx.index_list(Index::OpenWorkItems, &id)? {
                if let Some(w) = tx.get::<WorkItemRecord>(Keyed::WorkItems, &id, &wid)? {
                    needs_input |= w.plan_status == PlanStatus::NeedsInput;
                }
            }
            // A completed turn whose promoted tasks are still running has
            // handed work off: its brief is an acknowledgement (the result
            // follows when those tasks rejoin).
            let mut awaiting_tasks = Vec::new();
            for tid in tx.index_list(Index::ActiveTasks, &id)? {
                if let Some(t) = tx.get::<TaskRecord>(Keyed::Tasks, &id, &tid)? {
                    let reenters = t.detail.as_ref().and_then(|d| d.get("terminal_reentry")).and_then(|v| v.as_bool());
                    if reenters == Some(true) {
                        awaiting_tasks.push(tid);
                    }
                }
            }
            // The working memory, after the turn: its evidence merged, the
            // revision its prompt showed marked as shown.
            let mut agent: AgentRecord = tx.get_agent(&id)?.ok_or_else(|| StoreError::Storage(format!("agent {id} vanished")))?;
            let focus = match agent.current_work_item_id.as_deref() {
                Some(w) => tx.get::<WorkItemRecord>(Keyed::WorkItems, &id, w)?.filter(|w| w.state == WorkItemState::Open).map(|w| focus_of(&w)),
                None => None,
            };
            let memory = &mut agent.working_memory;
            memory.last_prompted_revision = memory.last_prompted_revision.max(tokens_before.memory_revision);
            let evidence = working::TurnEvidence {
                focus,
                files: files.clone(),
                commands: commands.clone(),
                waiting_on: awaiting_tasks.clone(),
                result: matches!(ending, Ending::Completed { .. }).then(|| last_assistant.clone()),
            };
            working::advance(memory, &evidence);
            // What the turn attached goes with its brief.
            let attachments = std::mem::take(&mut agent.pending_attachments);
            agent.turn_profile.add(duration_ms, rounds);
            let turn_usage = tokens_before.usage_to(&agent);
            if turn_usage.input_tokens + turn_usage.output_tokens > 0 {
                agent.last_turn_usage = Some(turn_usage);
            }
            tx.put_agent(&id, &agent)?;
            let brief_kind = if brief_kind == BriefKind::Result && !awaiting_tasks.is_empty() && completed.is_none() {
                BriefKind::Ack
            } else {
                brief_kind
            };
            let visibility = if needs_input && brief_kind != BriefKind::Failure {
                BriefVisibility::ActionRequired
            } else if completed.is_some() && brief_kind == BriefKind::Result {
                BriefVisibility::WorkDone
            } else {
                BriefVisibility::TurnResult
            };
            let brief = ev::Brief {
                id: crate::new_id("brief"),
                agent_id: id.clone(),
                work_item_id: completed.clone().or(turn_work_item_id.clone()),
                kind: brief_kind,
                created_at: tx.now_ts(),
                text,
                related_message_id: msg.id.clone(),
                related_task_id: msg.task_id.clone(),
                failure_artifact: failure.as_ref().map(|f| f.artifact.clone()),
                awaiting_task_ids: awaiting_tasks,
                truncated: truncated.is_some(),
                workspace_id: workspace_id.clone(),
                attachments,
            };
            // The event is the brief's only record (the `briefs` table of
            // older stores is no longer written).
            let created = ev::BriefCreated { brief, visibility };
            tx.append_event(new_event(&id, provenance_of(&msg), Event::BriefCreated(created)))?;
            Ok(())
        })
        .await?;
    Ok(())
}
