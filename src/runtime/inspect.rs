//! Read-only inspection: the `AgentSummary` projection behind `holon
//! status`, built from current-state tables only. It never scans the event
//! ledger: the event count is the agent's last `event_seq` (one lookup).

pub use crate::protocol::views::{AgentSummary, ContextView, DayUsageView, UsageView};

use crate::model::agent::Budget;
use crate::runtime::RuntimeError;

use super::agent::{AgentRecord, AgentStatus};
use super::waiting::{WaitingIntentRecord, WaitingIntentStatus};
use crate::store::{Index, Keyed, ReadCtx, StoreError};

pub fn agent_summary(
    rx: &ReadCtx,
    agent: &AgentRecord,
    data_dir: &std::path::Path,
    policy: &crate::runtime::approvals::policy::ApprovalPolicy,
) -> Result<AgentSummary, StoreError> {
    let id = agent.id.as_str();
    let open = rx.index_list(Index::OpenWorkItems, id)?.len() as u64;
    let total_work_items = rx.count(Keyed::WorkItems, id)?;
    let tasks_active = rx.index_list(Index::ActiveTasks, id)?.len() as u64;
    let intents: Vec<WaitingIntentRecord> = rx.list(Keyed::WaitingIntents, id)?;
    let posture = match super::host::projection::load(rx, id, crate::now_ms())? {
        Some(live) => live.projection.posture(),
        None => super::posture::PostureView {
            posture: super::posture::AgentSchedulingPosture::Archived,
            reason: "agent record missing".into(),
        },
    };
    Ok(AgentSummary {
        id: agent.id.clone(),
        identity: agent.identity(),
        children: super::agents::child_ops::children_view(rx, id)?,
        status: agent.status,
        posture: posture.posture.as_str().to_owned(),
        posture_reason: posture.reason,
        lifecycle_hint: match agent.status {
            AgentStatus::Stopped => Some(
                "stopped: resume is required before new prompts; wake does not override stopped"
                    .to_owned(),
            ),
            AgentStatus::Paused if agent.budget_paused_day.is_some() => Some(
                "paused: daily budget reached; messages queue until the next UTC day or /resume"
                    .to_owned(),
            ),
            AgentStatus::Paused => {
                Some("paused: messages queue but no model turn starts until resumed".to_owned())
            }
            AgentStatus::Booting
            | AgentStatus::AwakeIdle
            | AgentStatus::AwakeRunning
            | AgentStatus::AwaitingTask
            | AgentStatus::Asleep => None,
        },
        queue_depth: rx.queue_pending(id)?.len() as u64,
        last_event_seq: rx.last_seq(id)?,
        work_items_open: open,
        work_items_completed: total_work_items.saturating_sub(open),
        current_work_item_id: agent.current_work_item_id.clone(),
        tasks_active,
        waiting_intents_active: intents
            .iter()
            .filter(|w| w.status == WaitingIntentStatus::Active)
            .count() as u64,
        timers_active: rx.index_list(Index::ActiveTimers, id)?.len() as u64,
        model_override: agent.model_override.clone(),
        model: agent.model_override.clone(),
        execution: super::workspace::snapshot(
            &agent.workspaces,
            &super::agent::home_dir(data_dir, &agent.id),
            policy,
        ),
        context: ContextView {
            window: agent.context.last_prompt.map_or(0, |p| p.window),
            last_prompt_tokens: agent.context.last_prompt.map(|p| p.tokens()),
            percent: agent.context.last_prompt.map(|p| p.percent()),
            compaction_epoch: agent.context.epoch,
            compacted_entries: agent.context.compacted_entries,
        },
        reasoning_effort: None,
        usage: usage_view(agent, Budget::default(), crate::now_ms()),
    })
}

/// An agent's tokens and cost, today's against `global` unless it has a
/// budget of its own; `None` before its first round.
pub fn usage_view(agent: &AgentRecord, global: Budget, now_ms: i64) -> Option<UsageView> {
    use crate::runtime::provider::catalog::usd;
    if agent.total_model_rounds == 0 {
        return None;
    }
    let today = super::budget::day_of(now_ms);
    let spend = agent.spend_today.on(&today);
    let budget = agent.budget.over(global);
    Some(UsageView {
        input_tokens: agent.total_input_tokens,
        output_tokens: agent.total_output_tokens,
        cached_input_tokens: agent.total_cached_input_tokens,
        cache_write_tokens: agent.total_cache_write_tokens,
        reasoning_tokens: agent.total_reasoning_tokens,
        model_rounds: agent.total_model_rounds,
        cost_usd: usd(agent.total_cost_micro_usd),
        unpriced_rounds: agent.total_unpriced_rounds,
        today: DayUsageView {
            day: today.clone(),
            cost_usd: usd(spend.cost_micro_usd),
            tokens: spend.tokens,
            unpriced_rounds: spend.unpriced_rounds,
            budget_usd: budget.daily_micro_usd.map(usd),
            budget_tokens: budget.daily_tokens,
            paused_by_budget: agent.status == AgentStatus::Paused
                && agent.budget_paused_day.as_deref() == Some(today.as_str()),
        },
    })
}

impl crate::runtime::host::RuntimeHost {
    pub(crate) fn summarize(
        &self,
        rx: &crate::store::ReadCtx,
        agent: &AgentRecord,
    ) -> Result<AgentSummary, crate::protocol::ApiError> {
        let mut s = agent_summary(
            rx,
            agent,
            &self.inner.config.data_dir,
            &self.inner.default_policy(),
        )?;
        let provider = (self.inner.config.provider)(agent);
        s.model = Some(provider.model_ref()).filter(|m| !m.is_empty());
        s.reasoning_effort = provider.reasoning_effort();
        s.usage =
            crate::runtime::inspect::usage_view(agent, self.inner.config.budget, crate::now_ms());
        if s.model.is_some() {
            s.context.window = provider.context_budget().window;
        }
        Ok(s)
    }

    /// An agent's summary, for in-process callers (AgentGet).
    pub fn summary_of(&self, agent: &AgentRecord) -> Result<AgentSummary, RuntimeError> {
        let rx = self.store().read()?;
        self.summarize(&rx, agent)
            .map_err(|e| RuntimeError::Invalid(e.message))
    }
}

/// How busy a runtime with these agents is (daemon lifecycle contract).
pub fn activity(agents: &[AgentRecord], summaries: &[AgentSummary]) -> crate::protocol::Activity {
    use crate::protocol::ActivityState;
    let (mut processing, mut waiting, mut tasks) = (0u64, 0u64, 0u64);
    for (a, s) in agents.iter().zip(summaries) {
        tasks += s.tasks_active;
        match a.status {
            AgentStatus::Booting | AgentStatus::AwakeRunning => processing += 1,
            AgentStatus::AwaitingTask => waiting += 1,
            AgentStatus::AwakeIdle
            | AgentStatus::Asleep
            | AgentStatus::Paused
            | AgentStatus::Stopped => {
                if s.posture.starts_with("WaitingFor") || s.tasks_active > 0 {
                    waiting += 1;
                }
            }
        }
    }
    let state = if processing > 0 {
        ActivityState::Processing
    } else if waiting > 0 {
        ActivityState::Waiting
    } else {
        ActivityState::Idle
    };
    crate::protocol::Activity {
        state,
        active_agent_count: agents
            .iter()
            .filter(|a| a.status != AgentStatus::Stopped)
            .count() as u64,
        processing_agent_count: processing,
        waiting_agent_count: waiting,
        active_task_count: tasks,
    }
}

/// The first agent's standing runtime error, as `runtime.status` shows it.
pub fn last_failure(agents: &[AgentRecord]) -> Option<serde_json::Value> {
    agents
        .iter()
        .find_map(|a| a.runtime_error.as_ref().map(|e| (a, e)))
        .map(|(a, e)| {
            serde_json::json!({ "agent_id": a.id, "summary": e, "phase": "runtime_turn",
                                "detail_hint": "holon events --kind runtime_error" })
        })
}

/// `events.page`: up to `limit` (at most `MAX_PAGE`) of `agent_id`'s
/// events from `from_seq`, of one kind when given. `None` when there is no
/// such agent.
pub fn events_page(
    rx: &ReadCtx,
    agent_id: &str,
    from_seq: u64,
    limit: usize,
    kind: Option<&str>,
) -> Result<Option<crate::protocol::EventsPage>, crate::store::StoreError> {
    if rx.agent::<AgentRecord>(agent_id)?.is_none() {
        return Ok(None);
    }
    let start = rx.ledger_start(agent_id)?;
    let (from, limit) = (from_seq.max(1), limit.clamp(1, crate::protocol::MAX_PAGE));
    let events = match kind {
        Some(k) => rx.events_of_kind(agent_id, k, from, limit)?,
        None => rx.events(agent_id, from, limit)?,
    };
    let next_seq = events.last().map_or(from, |e| e.event_seq + 1);
    Ok(Some(crate::protocol::EventsPage {
        events,
        next_seq,
        last_event_seq: rx.last_seq(agent_id)?,
        pruned_before: crate::protocol::EventsPage::pruned_marker(from, start),
    }))
}
