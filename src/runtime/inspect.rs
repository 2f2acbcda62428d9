//! Read-only inspection: the `AgentSummary` projection behind `holon
//! status`, built from current-state tables only. It never scans the event
//! ledger: the event count is the agent's last `event_seq` (one lookup).

use crate::protocol::views::{AgentSummary, ContextView, DayUsageView, UsageView};

use crate::model::agent::Budget;
use crate::runtime::RuntimeError;

use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingIntentStatus;
use crate::store::{Index, Keyed, ReadCtx, StoreError};

/// When the agent's earliest active timer fires (RFC 3339).
fn next_timer(rx: &ReadCtx, agent_id: &str) -> Result<Option<String>, StoreError> {
    let mut earliest: Option<i64> = None;
    for id in rx.index_list(Index::ActiveTimers, agent_id)? {
        let timer: Option<crate::model::waiting::TimerRecord> =
            rx.get(Keyed::Timers, agent_id, &id)?;
        if let Some(t) = timer {
            earliest = Some(earliest.map_or(t.fire_at_ms, |e| e.min(t.fire_at_ms)));
        }
    }
    Ok(earliest.map(crate::format_ts))
}

pub fn agent_summary(
    rx: &ReadCtx,
    agent: &AgentRecord,
    data_dir: &std::path::Path,
    policy: &crate::model::approval::ApprovalPolicy,
) -> Result<AgentSummary, StoreError> {
    let id = agent.id.as_str();
    let open = rx.index_list(Index::OpenWorkItems, id)?.len() as u64;
    let total_work_items = rx.count(Keyed::WorkItems, id)?;
    let tasks_active = rx.index_list(Index::ActiveTasks, id)?.len() as u64;
    let intents: Vec<WaitingIntentRecord> = rx.list(Keyed::WaitingIntents, id)?;
    let posture = match super::projection::load(rx, id, crate::now_ms())? {
        Some(live) => live.projection.posture(),
        None => crate::model::decision::PostureView {
            posture: crate::model::decision::AgentSchedulingPosture::Archived,
            reason: "agent record missing".into(),
        },
    };
    Ok(AgentSummary {
        id: agent.id.clone(),
        lost_events: agent.lost_events.iter().map(|r| r.len()).sum(),
        identity: agent.identity(),
        children: super::agents::child_view::children_view(rx, id)?,
        status: agent.status,
        posture: posture.posture,
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
        model_source: None,
        fallback_models: Vec::new(),
        sleeping_until: match agent.status {
            AgentStatus::Asleep => next_timer(rx, id)?,
            _ => None,
        },
        loaded_agents_md: Vec::new(),
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
        total_message_count: rx.counter(id, "admission_seq")?,
        last_continuation: agent.last_continuation.clone(),
        execution_profile: crate::model::usage::ExecutionProfileView::of(
            &agent.turn_profile,
            &agent.tool_latency,
        ),
    })
}

/// An agent's tokens and cost, today's against `global` unless it has a
/// budget of its own; `None` before its first round.
pub fn usage_view(agent: &AgentRecord, global: Budget, now_ms: i64) -> Option<UsageView> {
    use crate::runtime::provider::catalog::usd;
    if agent.total_model_rounds == 0 {
        return None;
    }
    let today = super::budget::budget_day(agent, now_ms);
    let spend = agent.spend_today.on(&today);
    let budget = agent.budget.over(global);
    Some(UsageView {
        last_turn: agent.last_turn_usage,
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

impl crate::runtime::handle::RuntimeHost {
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
        if s.model.is_some() {
            let source = match agent.model_override {
                Some(_) => "agent_override",
                None => "runtime_default",
            };
            s.model_source = Some(source.to_owned());
            s.fallback_models = provider.fallback_models();
        }
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

/// The most agents `runtime.status` summarizes (the busiest first); the
/// rest are counted (`agent_count`) and listed by `agents.list`.
pub const STATUS_AGENTS: usize = 50;

/// What `runtime.status` and `agents.list` read of every agent to count,
/// filter and rank it: a summary is built only for the agents shown.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct AgentHead {
    pub id: String,
    #[serde(default)]
    pub status: AgentStatus,
    #[serde(default)]
    pub visibility: crate::model::agent::AgentVisibility,
    #[serde(default)]
    pub archived_at: Option<String>,
    #[serde(default)]
    pub runtime_error: Option<String>,
    #[serde(default)]
    pub runtime_error_at: Option<String>,
    /// Inside a model turn (whatever its status says: a paused agent's
    /// turn runs on, and a finished turn's agent stays `awake_running`
    /// until its next decision).
    #[serde(default)]
    pub turn_in_progress: bool,
}

impl AgentHead {
    /// Listed by status and `agents.list`: public and not archived
    /// (private children show under their parents).
    pub fn listed(&self) -> bool {
        self.visibility == crate::model::agent::AgentVisibility::Public
            && self.archived_at.is_none()
    }
}

/// What a status tells first: the default agent (always shown), then
/// running agents, then waiting or failing ones, then paused ones, then
/// the rest.
fn status_rank(h: &AgentHead, default_agent: &str, waiting: bool) -> u8 {
    match h.status {
        _ if h.id == default_agent => 0,
        AgentStatus::Booting | AgentStatus::AwakeRunning => 1,
        AgentStatus::AwaitingTask => 2,
        _ if waiting || h.runtime_error.is_some() => 2,
        AgentStatus::Paused => 3,
        AgentStatus::AwakeIdle | AgentStatus::Asleep | AgentStatus::Stopped => 4,
    }
}

/// The agents with something open that could make their posture a wait
/// (a timer, an approval, a work item, a message in flight): read in one
/// pass over each index, which hold current state only.
fn open_somewhere(rx: &ReadCtx) -> Result<std::collections::HashSet<String>, StoreError> {
    let mut out = std::collections::HashSet::new();
    for index in [
        Index::ActiveTimers,
        Index::OpenApprovals,
        Index::OpenWorkItems,
        Index::Dequeued,
    ] {
        out.extend(rx.index_counts(index)?.into_keys());
    }
    Ok(out)
}

/// How busy the runtime is (daemon lifecycle contract) and which agents a
/// status summarizes (at most `STATUS_AGENTS`, the busiest first), from
/// every agent's head.
pub fn status_of(
    rx: &ReadCtx,
    heads: &[AgentHead],
    default_agent: &str,
) -> Result<(crate::protocol::Activity, Vec<String>, u64), StoreError> {
    use crate::protocol::ActivityState;
    let (mut processing, mut waiting, mut tasks) = (0u64, 0u64, 0u64);
    let turns = heads.iter().filter(|h| h.turn_in_progress).count() as u64;
    let mut ranked = Vec::new();
    let task_counts = rx.index_counts(Index::ActiveTasks)?;
    let open = open_somewhere(rx)?;
    // Only these agents' postures are derived: a thousand idle agents
    // cost one pass over each index and a lookup of their waits.
    let may_wait = |id: &str| -> Result<bool, StoreError> {
        Ok(open.contains(id) || rx.has_any(Keyed::WaitingIntents, id)?)
    };
    for h in heads {
        let active = task_counts.get(&h.id).copied().unwrap_or(0);
        tasks += active;
        let waits = match h.status {
            AgentStatus::Booting | AgentStatus::AwakeRunning => {
                processing += 1;
                false
            }
            AgentStatus::AwaitingTask => {
                waiting += 1;
                true
            }
            AgentStatus::AwakeIdle
            | AgentStatus::Asleep
            | AgentStatus::Paused
            | AgentStatus::Stopped => {
                let waits = active > 0
                    || (may_wait(&h.id)?
                        && super::projection::load(rx, &h.id, crate::now_ms())?.is_some_and(|l| {
                            use crate::model::decision::AgentSchedulingPosture as P;
                            matches!(
                                l.projection.posture().posture,
                                P::WaitingForTask | P::WaitingForExternal | P::WaitingForOperator
                            )
                        }));
                waiting += u64::from(waits);
                waits
            }
        };
        if h.listed() {
            ranked.push((status_rank(h, default_agent, waits), h.id.clone()));
        }
    }
    let listed = ranked.len() as u64;
    ranked.sort();
    ranked.truncate(STATUS_AGENTS);
    let state = if processing > 0 {
        ActivityState::Processing
    } else if waiting > 0 {
        ActivityState::Waiting
    } else {
        ActivityState::Idle
    };
    let activity = crate::protocol::Activity {
        state,
        active_agent_count: heads
            .iter()
            .filter(|a| a.status != AgentStatus::Stopped)
            .count() as u64,
        processing_agent_count: processing,
        waiting_agent_count: waiting,
        active_task_count: tasks,
        running_turn_count: turns,
        // The host's to say (its actors), not the store's.
        settled: false,
    };
    Ok((
        activity,
        ranked.into_iter().map(|(_, id)| id).collect(),
        listed,
    ))
}

/// The first agent's standing runtime error, as `runtime.status` shows it.
pub fn last_failure_of(heads: &[AgentHead]) -> Option<serde_json::Value> {
    heads
        .iter()
        .find_map(|a| a.runtime_error.as_ref().map(|e| (a, e)))
        .map(|(a, e)| {
            serde_json::json!({ "agent_id": a.id, "summary": e, "phase": "runtime_turn",
                                "occurred_at": a.runtime_error_at,
                                "detail_hint": "holon events --kind runtime_error" })
        })
}

/// Summaries of these agents, by id, as `summarize` makes them (the
/// runtime's and the offline client's differ in what they know of the
/// model); an id with no record left is skipped.
pub fn summaries_of<E: From<StoreError>>(
    rx: &ReadCtx,
    ids: impl IntoIterator<Item = String>,
    mut summarize: impl FnMut(&AgentRecord) -> Result<AgentSummary, E>,
) -> Result<Vec<AgentSummary>, E> {
    let mut out = Vec::new();
    for id in ids {
        if let Some(agent) = rx.agent::<AgentRecord>(&id)? {
            out.push(summarize(&agent)?);
        }
    }
    Ok(out)
}

/// `agents.list`: one page, summarized by `summarize`.
pub fn agents_page<E: From<StoreError>>(
    rx: &ReadCtx,
    limit: Option<usize>,
    cursor: Option<&str>,
    query: Option<&str>,
    summarize: impl FnMut(&AgentRecord) -> Result<AgentSummary, E>,
) -> Result<crate::protocol::AgentsPage, E> {
    let heads: Vec<AgentHead> = rx.agents()?;
    let (page, next_cursor, total) = list_page(&heads, cursor, query, limit.unwrap_or(LIST_PAGE));
    let ids = page.into_iter().map(|h| h.id.clone());
    Ok(crate::protocol::AgentsPage {
        agents: summaries_of(rx, ids, summarize)?,
        next_cursor,
        total,
    })
}

/// The default and largest page of `agents.list`.
pub const LIST_PAGE: usize = 100;
pub const LIST_PAGE_MAX: usize = 1000;

/// One page of listed agents in id order: after `cursor`, whose id
/// contains `query` (any case), at most `limit`; with the cursor of the
/// next page and how many match in all.
pub fn list_page<'h>(
    heads: &'h [AgentHead],
    cursor: Option<&str>,
    query: Option<&str>,
    limit: usize,
) -> (Vec<&'h AgentHead>, Option<String>, u64) {
    let query = query.map(str::to_lowercase).filter(|q| !q.is_empty());
    let mut matching: Vec<&AgentHead> = heads
        .iter()
        .filter(|h| h.listed())
        .filter(|h| {
            query
                .as_deref()
                .is_none_or(|q| h.id.to_lowercase().contains(q))
        })
        .collect();
    matching.sort_by(|a, b| a.id.cmp(&b.id));
    let total = matching.len() as u64;
    let limit = limit.clamp(1, LIST_PAGE_MAX);
    let page: Vec<&AgentHead> = matching
        .into_iter()
        .filter(|h| cursor.is_none_or(|c| h.id.as_str() > c))
        .take(limit + 1)
        .collect();
    let more = page.len() > limit;
    let page: Vec<&AgentHead> = page.into_iter().take(limit).collect();
    let next = more.then(|| page.last().map(|h| h.id.clone())).flatten();
    (page, next, total)
}

#[cfg(test)]
mod list_tests {
    use super::*;

    fn head(id: &str) -> AgentHead {
        AgentHead {
            id: id.into(),
            status: AgentStatus::Asleep,
            visibility: crate::model::agent::AgentVisibility::Public,
            archived_at: None,
            runtime_error: None,
            runtime_error_at: None,
            turn_in_progress: false,
        }
    }

    #[test]
    fn a_list_pages_by_id_and_filters_by_any_case() {
        let mut heads: Vec<AgentHead> = (0..250).map(|i| head(&format!("a-{i:03}"))).collect();
        heads.push(head("reviewer"));
        let mut hidden = head("child");
        hidden.visibility = crate::model::agent::AgentVisibility::Private;
        heads.push(hidden);
        let (page, next, total) = list_page(&heads, None, None, 100);
        assert_eq!((page.len(), total), (100, 251));
        assert_eq!(next.as_deref(), Some("a-099"));
        let (page, next, _) = list_page(&heads, Some("a-199"), None, 100);
        assert_eq!(page.len(), 51, "the rest, the last page");
        assert_eq!(page.last().map(|h| h.id.as_str()), Some("reviewer"));
        assert_eq!(next, None);
        let (page, next, total) = list_page(&heads, None, Some("VIEW"), 100);
        assert_eq!(
            page.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
            ["reviewer"]
        );
        assert_eq!((next, total), (None, 1));
        let (page, _, _) = list_page(&heads, None, Some("child"), 100);
        assert!(page.is_empty(), "private agents are not listed");
    }

    #[test]
    fn a_status_names_the_busy_and_the_default_agent_first() {
        let mut busy = head("a-busy");
        busy.status = AgentStatus::AwakeRunning;
        assert_eq!(status_rank(&head("main"), "main", false), 0);
        assert!(
            status_rank(&busy, "main", false) > 0,
            "fifty running agents never push the default agent out"
        );
        assert_eq!(status_rank(&busy, "main", false), 1);
        assert_eq!(status_rank(&head("b"), "main", true), 2);
        let mut paused = head("c");
        paused.status = AgentStatus::Paused;
        assert_eq!(status_rank(&paused, "main", false), 3);
        assert_eq!(status_rank(&head("b"), "main", false), 4);
    }
}
