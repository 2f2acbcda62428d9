//! How a turn is written down when it ends: the message's final queue
//! status, the `turn_terminal` record, the failure records of a failed or
//! over-budget turn, the agent's turn flags, and the operator's brief
//! (with its visibility), all in one transaction.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::ending::{brief_class, outcome, Ending, Outcome};
use super::transcript_in;
use crate::model::agent::AgentRecord;
use crate::model::decision::SystemTickReason;
use crate::model::decision::TurnTerminalKind;
use crate::model::message::MessageEnvelope;
use crate::model::task::TaskRecord;
use crate::model::transcript::TranscriptBody;
use crate::model::transcript::TranscriptEntry;
use crate::model::usage::FailureKind;
use crate::model::work::{PlanStatus, TodoState, WorkItemRecord, WorkItemState};
use crate::protocol::events::{self as ev, new_event, Event, SettleDetail};
use crate::protocol::payloads::CancelReason;
use crate::runtime::context::working;
use crate::runtime::handle::HostInner;
use crate::runtime::provider::catalog::usd;
use crate::runtime::provider::ProviderFailure;
use crate::runtime::queue::provenance_of;
use crate::runtime::queue::settle_in;
use crate::runtime::scheduler::work_queue_tick_key;
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, StoreError, WriteCtx};

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
            let Outcome {
                terminal,
                queue_status,
                brief_kind,
                text,
                last_assistant,
                rounds,
                failure,
            } = outcome(&ending);
            let text = match &ending {
                Ending::Aborted {
                    reason: CancelReason::DailyBudget,
                    ..
                } => match tx.get_agent::<AgentRecord>(&id)? {
                    Some(a) => crate::runtime::budget::paused_brief(&a, global_budget, tx.now_ms()),
                    None => text,
                },
                _ => text,
            };
            let (truncated, cancel_reason, cancelled_timeline) = match &ending {
                Ending::Completed { truncated, .. } => (truncated.clone(), None, None),
                Ending::Failed { .. } | Ending::OverBudget { .. } => (None, None, None),
                Ending::Aborted {
                    reason, timeline, ..
                } => (None, Some(*reason), timeline.as_deref()),
            };
            failure_records_in(tx, &id, &rid, &msg, &ending, turn_work_item_id.as_deref())?;
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
            let agent = turn_ended_in(tx, &id, &ending, terminal, failure.as_ref())?;
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
            tx.append_event(new_event(
                &id,
                provenance_of(&msg),
                Event::TurnTerminal(ended),
            ))?;
            let completed = match &ending {
                Ending::Completed {
                    completed_work_item,
                    ..
                } => completed_work_item.clone(),
                Ending::Failed { .. } | Ending::Aborted { .. } | Ending::OverBudget { .. } => None,
            };
            let (needs_input, awaiting_tasks) = waiting_in(tx, &id)?;
            // Its focus, the open work item, is read where it is merged.
            let evidence = working::TurnEvidence {
                focus: None,
                files: files.clone(),
                commands: commands.clone(),
                waiting_on: awaiting_tasks.clone(),
                result: matches!(ending, Ending::Completed { .. }).then(|| last_assistant.clone()),
            };
            let attachments = remember_in(tx, &id, evidence, tokens_before, (duration_ms, rounds))?;
            let handed_off = !awaiting_tasks.is_empty();
            let (brief_kind, visibility) =
                brief_class(brief_kind, handed_off, completed.is_some(), needs_input);
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
            tx.append_event(new_event(
                &id,
                provenance_of(&msg),
                Event::BriefCreated(created),
            ))?;
            Ok(())
        })
        .await?;
    Ok(())
}

/// What a turn that did not complete leaves in the ledger and the
/// transcript: an over-budget report, a failure with its attempts, or
/// the cut that ended it.
fn failure_records_in(
    tx: &mut WriteCtx<'_>,
    id: &str,
    rid: &str,
    msg: &MessageEnvelope,
    ending: &Ending,
    turn_work_item_id: Option<&str>,
) -> Result<(), StoreError> {
    if let Ending::OverBudget { report, .. } = ending {
        transcript_in(
            tx,
            id,
            rid,
            Some(&msg.id),
            TranscriptBody::RuntimeFailure {
                summary: report.clone(),
                failure_artifact: json!({ "kind": "baseline_over_budget" }),
                timeline: None,
            },
        )?;
    }
    if let Ending::Failed {
        failure, timeline, ..
    } = ending
    {
        let error = ev::RuntimeErrorRecorded {
            run_id: rid.to_owned(),
            phase: "runtime_turn".into(),
            failure_kind: failure.kind,
            failure_artifact: failure.artifact.clone(),
            provider_attempt_timeline: (**timeline).clone(),
            token_usage: timeline.aggregated_token_usage,
        };
        tx.append_event(new_event(
            id,
            provenance_of(msg),
            Event::RuntimeError(error),
        ))?;
        transcript_in(
            tx,
            id,
            rid,
            Some(&msg.id),
            TranscriptBody::RuntimeFailure {
                summary: failure.artifact.summary.clone(),
                failure_artifact: json!(failure.artifact),
                timeline: Some((**timeline).clone()),
            },
        )?;
        // context_length_exceeded must not auto-continue the bound
        // work item: mark its continue tick as already emitted.
        if failure.kind == FailureKind::ContextLengthExceeded {
            if let Some(w) = turn_work_item_id.and_then(|w| {
                tx.get::<WorkItemRecord>(Keyed::WorkItems, id, w)
                    .ok()
                    .flatten()
            }) {
                let key = work_queue_tick_key(SystemTickReason::ContinueActive, &w.id, w.revision);
                let family = crate::runtime::scheduler::tick_key_family(&key);
                tx.index_remove_prefix(Index::TickKeys, id, family)?;
                tx.index_insert(Index::TickKeys, id, &key)?;
            }
        }
    }
    // A turn cut off says so in the transcript, so the operator
    // and the model see it; one interrupted by shutdown runs again.
    if let Ending::Aborted {
        reason, partial, ..
    } = ending
    {
        if *reason != CancelReason::RuntimeShutdown {
            transcript_in(
                tx,
                id,
                rid,
                Some(&msg.id),
                TranscriptBody::TurnCut {
                    reason: reason.describe().to_owned(),
                    partial_answer: partial.clone(),
                },
            )?;
        }
    }
    Ok(())
}

/// Whether an open work item needs the operator's input, and the tasks
/// the turn handed work off to (promoted, still running, to rejoin).
fn waiting_in(tx: &WriteCtx<'_>, id: &str) -> Result<(bool, Vec<String>), StoreError> {
    let mut needs_input = false;
    for wid in tx.index_list(Index::OpenWorkItems, id)? {
        if let Some(w) = tx.get::<WorkItemRecord>(Keyed::WorkItems, id, &wid)? {
            needs_input |= w.plan_status == PlanStatus::NeedsInput;
        }
    }
    let mut awaiting_tasks = Vec::new();
    for tid in tx.index_list(Index::ActiveTasks, id)? {
        if let Some(t) = tx.get::<TaskRecord>(Keyed::Tasks, id, &tid)? {
            if t.detail.terminal_reentry == Some(true) {
                awaiting_tasks.push(tid);
            }
        }
    }
    Ok((needs_input, awaiting_tasks))
}

/// The agent's flags once its turn ended: no turn in progress, the
/// terminal kind, the runtime error the ending leaves (a completed turn
/// clears it), a completed turn's skills kept for the session. A turn
/// cut by shutdown leaves the agent at rest: no scheduler decision will
/// move it off `awake_running` before the runtime stops (recovery applies
/// the same rule at the next start; the message stays dequeued and
/// replays then).
fn turn_ended_in(
    tx: &mut WriteCtx<'_>,
    id: &str,
    ending: &Ending,
    terminal: TurnTerminalKind,
    failure: Option<&ProviderFailure>,
) -> Result<AgentRecord, StoreError> {
    let mut agent: AgentRecord = tx
        .get_agent(id)?
        .ok_or_else(|| StoreError::Storage(format!("agent {id} vanished")))?;
    agent.turn_in_progress = false;
    agent.turn_awaits.clear();
    agent.current_run_id = None;
    agent.last_turn_terminal = Some(terminal);
    if let Ending::Aborted {
        reason: CancelReason::RuntimeShutdown,
        ..
    } = ending
    {
        agent.status = agent.status.at_rest();
    }
    let runtime_error = match (ending, failure) {
        (Ending::Completed { .. }, _) => None,
        (_, Some(f)) => Some(f.artifact.summary.clone()),
        (Ending::OverBudget { report, .. }, _) => Some(report.clone()),
        (Ending::Aborted { .. }, None) | (Ending::Failed { .. }, None) => {
            agent.runtime_error.clone()
        }
    };
    if runtime_error != agent.runtime_error {
        agent.runtime_error_at = runtime_error.as_ref().map(|_| tx.now_ts());
    }
    agent.runtime_error = runtime_error;
    if matches!(ending, Ending::Completed { .. }) {
        crate::runtime::agents::skills::promote(&mut agent.skills);
    }
    agent.last_brief_at = Some(tx.now_ts());
    tx.put_agent(id, &agent)?;
    Ok(agent)
}

/// The working memory after the turn: its evidence merged (with the open
/// work item in focus), the revision its prompt showed marked as shown;
/// the turn's time and usage counted. Returns what the turn attached,
/// which goes with its brief.
fn remember_in(
    tx: &mut WriteCtx<'_>,
    id: &str,
    mut evidence: working::TurnEvidence,
    tokens_before: Totals,
    (duration_ms, rounds): (u64, u32),
) -> Result<Vec<ev::BriefAttachment>, StoreError> {
    let mut agent: AgentRecord = tx
        .get_agent(id)?
        .ok_or_else(|| StoreError::Storage(format!("agent {id} vanished")))?;
    evidence.focus = match agent.current_work_item_id.as_deref() {
        Some(w) => tx
            .get::<WorkItemRecord>(Keyed::WorkItems, id, w)?
            .filter(|w| w.state == WorkItemState::Open)
            .map(|w| focus_of(&w)),
        None => None,
    };
    let memory = &mut agent.working_memory;
    memory.last_prompted_revision = memory
        .last_prompted_revision
        .max(tokens_before.memory_revision);
    working::advance(memory, &evidence);
    let attachments = std::mem::take(&mut agent.pending_attachments);
    agent.turn_profile.add(duration_ms, rounds);
    let turn_usage = tokens_before.usage_to(&agent);
    if turn_usage.input_tokens + turn_usage.output_tokens > 0 {
        agent.last_turn_usage = Some(turn_usage);
    }
    tx.put_agent(id, &agent)?;
    Ok(attachments)
}
