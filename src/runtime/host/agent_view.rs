//! The requests about one agent itself (`answer_agents`): creating and
//! archiving it, its model, budget, display and skills, and `agent.state`,
//! the coherent bootstrap a console follows its events from (the summary,
//! closure, work items with their plans, tasks, last decision).

use crate::model::agent::AgentRecord;
use crate::model::task::TaskRecord;
use crate::model::work::WorkItemRecord;
use crate::protocol::views::AgentSummary;
use crate::protocol::views::BudgetAnswer;
use crate::protocol::{
    AgentState, ApiError, ErrorCode, ModelChanged, Request, Response, WorkItemEntry,
};
use crate::runtime::handle::RuntimeHost;
use crate::store::{Index, Keyed};

/// Characters of a plan artifact served with `agent.state`.
pub const PLAN_PREVIEW_CHARS: usize = 2000;

/// The error of a missing agent or record, saying which.
pub(super) fn not_found(what: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, what.to_owned())
}

impl RuntimeHost {
    /// The requests about one agent itself: `agent.create`, `.archive`,
    /// `.state`, `.prompt`, `.display`, `.model` and `.budget`
    /// (`agent.status` and `skills.list` are read from the store alone).
    pub(super) async fn answer_agents(&self, request: Request) -> Result<Response, ApiError> {
        match request {
            Request::AgentCreate { agent_id, template } => {
                let req = crate::runtime::agents::ops::NewAgent {
                    agent_id: agent_id.clone(),
                    template,
                    ..Default::default()
                };
                self.create_named_agent(req).await?;
                Ok(Response::AgentCreate(self.summary(&agent_id)?))
            }
            Request::AgentArchive { agent_id } => {
                self.archive_agent(&agent_id, "operator").await?;
                Ok(Response::AgentArchive(self.summary(&agent_id)?))
            }
            Request::AgentState { agent_id } => {
                Ok(Response::AgentState(self.agent_state(&agent_id)?))
            }
            Request::AgentPrompt { agent_id } => {
                Ok(Response::AgentPrompt(self.prompt_preview(&agent_id).await?))
            }
            Request::AgentDisplay { agent_id, mode } => {
                self.set_display_mode(&agent_id, mode).await?;
                Ok(Response::AgentDisplay(self.summary(&agent_id)?))
            }
            Request::AgentModel {
                agent_id,
                model,
                reasoning_effort,
            } => {
                let previous = self.set_model(&agent_id, model, reasoning_effort).await?;
                Ok(Response::AgentModel(ModelChanged {
                    agent: self.summary(&agent_id)?,
                    previous_model_override: previous,
                }))
            }
            Request::AgentBudget {
                agent_id,
                daily_usd,
                daily_tokens,
                clear,
            } => {
                let change = crate::runtime::budget::BudgetChange {
                    daily_usd,
                    daily_tokens,
                    clear,
                };
                Ok(Response::AgentBudget(
                    self.set_budget(agent_id, change).await?,
                ))
            }
            other => Err(other.misrouted()),
        }
    }

    /// `agent.budget`: the agent's own daily budget changed, then what
    /// applies to it now and its spend today.
    async fn set_budget(
        &self,
        agent_id: String,
        change: crate::runtime::budget::BudgetChange,
    ) -> Result<BudgetAnswer, ApiError> {
        let (id, global) = (agent_id.clone(), self.inner.config.budget);
        self.inner
            .store
            .write(move |tx| crate::runtime::budget::set_in(tx, &id, change, global))
            .await
            .map_err(crate::runtime::RuntimeError::from)?;
        // A lower budget may already be reached: the agent's actor
        // decides again.
        self.wake(&agent_id);
        let agent: AgentRecord = self
            .store()
            .read()?
            .agent(&agent_id)?
            .ok_or_else(|| not_found(&format!("no agent `{agent_id}`")))?;
        let today =
            crate::runtime::inspect::usage_view(&agent, global, crate::now_ms()).map(|u| u.today);
        Ok(BudgetAnswer {
            agent_id,
            own: agent.budget.into(),
            applies: agent.budget.over(global).into(),
            today,
        })
    }

    pub(super) fn summary(&self, agent_id: &str) -> Result<AgentSummary, ApiError> {
        let rx = self.store().read()?;
        let agent: AgentRecord = rx
            .agent(agent_id)?
            .ok_or_else(|| not_found(&format!("no agent `{agent_id}`")))?;
        self.summarize(&rx, &agent)
    }

    pub(super) fn agent_state(&self, agent_id: &str) -> Result<AgentState, ApiError> {
        let rx = self.store().read()?;
        let agent: AgentRecord = rx
            .agent(agent_id)?
            .ok_or_else(|| not_found(&format!("no agent `{agent_id}`")))?;
        let mut summary = self.summarize(&rx, &agent)?;
        // `/state.agent` stays what `/status` answers.
        crate::runtime::guidance::name_guidance(&mut summary, &self.inner.agent_home(agent_id));
        let last_event_seq = rx.last_seq(agent_id)?;
        let live = crate::runtime::projection::load(&rx, agent_id, crate::now_ms())?;
        let closure = live.as_ref().map(|l| l.projection.closure());
        let home = self.inner.agent_home(agent_id);
        let with_plan = |w: &WorkItemRecord| {
            let path = crate::runtime::work_ops::plan_path(&home, &w.id);
            let mut entry = WorkItemEntry {
                record: w.clone(),
                plan_preview: None,
                plan_preview_complete: None,
                plan_path: None,
            };
            if let Ok(text) = std::fs::read_to_string(&path) {
                let preview: String = text.chars().take(PLAN_PREVIEW_CHARS).collect();
                entry.plan_preview_complete = Some(preview.len() == text.len());
                entry.plan_preview = Some(preview);
                entry.plan_path = Some(path.display().to_string());
            }
            entry
        };
        let mut work_items: Vec<WorkItemEntry> = Vec::new();
        for w in live
            .as_ref()
            .map(|l| l.work_items.clone())
            .unwrap_or_default()
        {
            work_items.push(with_plan(&w));
        }
        let recent: Vec<WorkItemRecord> = rx.list_recent(Keyed::WorkItems, agent_id, 50)?;
        for w in recent
            .into_iter()
            .filter(|w| w.state == crate::model::work::WorkItemState::Completed)
        {
            work_items.push(WorkItemEntry {
                record: w,
                plan_preview: None,
                plan_preview_complete: None,
                plan_path: None,
            });
        }
        let mut tasks: Vec<TaskRecord> = Vec::new();
        for id in rx.index_list(Index::ActiveTasks, agent_id)? {
            if let Some(t) = rx.get::<TaskRecord>(Keyed::Tasks, agent_id, &id)? {
                tasks.push(t);
            }
        }
        for t in rx.list_recent::<TaskRecord>(Keyed::Tasks, agent_id, 20)? {
            if t.status.is_terminal() {
                tasks.push(t);
            }
        }
        let last_decision = rx
            .events_before(agent_id, last_event_seq + 1, 200)?
            .into_iter()
            .rev()
            .find(|e| e.kind == "scheduler_decision");
        Ok(AgentState {
            agent: summary,
            last_event_seq,
            closure,
            work_items,
            tasks,
            last_decision,
            display_mode: agent.display_mode,
        })
    }
}
