//! `agent.status` and `agent.state`: an agent's summary, and the
//! coherent bootstrap a console follows its events from (the summary,
//! closure, work items with their plans, tasks, last decision).

use super::dispatch::not_found;
use super::RuntimeHost;
use crate::model::agent::AgentRecord;
use crate::model::task::TaskRecord;
use crate::model::work::WorkItemRecord;
use crate::protocol::{AgentState, ApiError, WorkItemEntry};
use crate::runtime::inspect::AgentSummary;
use crate::store::{Index, Keyed};

/// Characters of a plan artifact served with `agent.state`.
pub const PLAN_PREVIEW_CHARS: usize = 2000;

impl RuntimeHost {
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
        super::watch::name_guidance(&mut summary, &self.inner.agent_home(agent_id));
        let last_event_seq = rx.last_seq(agent_id)?;
        let live = super::projection::load(&rx, agent_id, crate::now_ms())?;
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
