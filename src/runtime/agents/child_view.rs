//! What a parent sees of its children: the `child_supervision` projection
//! shared by SpawnAgent, TaskStatus, TaskOutput, AgentGet, `agent show`
//! and the console, and the reads behind it (live children through the
//! active-task index, the latest finished ones through the child-task
//! index).

use crate::protocol::views::ChildSupervision;

use crate::model::agent::AgentRecord;
use crate::model::event::EventRecord;
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::protocol::events as ev;
use crate::store::{Index, Keyed, ReadCtx, StoreError};

/// The child a `child_agent_task` supervises.
pub fn child_of(task: &TaskRecord) -> Option<String> {
    task.detail.child_agent_id.clone()
}

/// The text of a child's latest brief, from its newest `brief_created`
/// events (`events_of_kind_latest(child, "brief_created", 1)`).
pub(super) fn latest_brief(newest: Vec<EventRecord>) -> Option<String> {
    newest.into_iter().rev().find_map(|e| match e.event() {
        ev::Event::BriefCreated(created) => Some(created.brief.text),
        _ => None,
    })
}

/// `s` cut to `n` characters (an ellipsis marks the cut).
pub(super) fn bounded(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// The supervision projection of one child task.
pub fn child_supervision(
    rx: &ReadCtx,
    task: &TaskRecord,
) -> Result<Option<ChildSupervision>, StoreError> {
    let detail = &task.detail;
    let Some(child_id) = detail.child_agent_id.as_deref() else {
        return Ok(None);
    };
    let Some(child) = rx.agent::<AgentRecord>(child_id)? else {
        return Ok(None);
    };
    let posture = match crate::runtime::projection::load(rx, child_id, crate::now_ms())? {
        Some(live) => live.projection.posture(),
        None => crate::model::decision::PostureView {
            posture: crate::model::decision::AgentSchedulingPosture::Archived,
            reason: "no record".into(),
        },
    };
    let current_work_item = match &child.current_work_item_id {
        Some(w) => rx
            .get::<crate::model::work::WorkItemRecord>(Keyed::WorkItems, child_id, w)?
            .map(|w| w.objective),
        None => None,
    };
    Ok(Some(ChildSupervision {
        parent_agent_id: task.agent_id.clone(),
        child_agent_id: child_id.to_owned(),
        supervision_task_id: task.id.clone(),
        cleanup_owner: "supervision_task".to_owned(),
        followup_target: "parent_supervisor".to_owned(),
        label: detail.label.clone().unwrap_or_default(),
        task_status: task.status,
        child_status: child.status,
        current_work_item_id: child.current_work_item_id.clone(),
        posture: posture.posture,
        posture_reason: posture.reason,
        archived: child.archived_at.is_some(),
        workspace_mode: detail.workspace_mode.unwrap_or_default(),
        current_work_item,
        model_rounds: child.total_model_rounds,
        input_tokens: child.total_input_tokens,
        output_tokens: child.total_output_tokens,
        queue_depth: rx.queue_pending(child_id)?.len() as u64,
        tasks_active: rx.index_list(Index::ActiveTasks, child_id)?.len() as u64,
        last_brief: latest_brief(rx.events_of_kind_latest(
            child_id,
            ev::EventKind::BriefCreated.as_str(),
            1,
        )?)
        .map(|b| bounded(&b, 2_000)),
        worktree: detail.worktree.clone(),
    }))
}

/// Finished children shown beside the live ones.
const RECENT_CHILDREN: usize = 3;

/// The parent's live child tasks (read through the active-task index, so
/// the cost follows what runs now, not history).
pub fn live_child_tasks(rx: &ReadCtx, parent: &str) -> Result<Vec<TaskRecord>, StoreError> {
    let mut out = Vec::new();
    for id in rx.index_list(Index::ActiveTasks, parent)? {
        if let Some(t) = rx.get::<TaskRecord>(Keyed::Tasks, parent, &id)? {
            if t.kind == TaskKind::ChildAgentTask {
                out.push(t);
            }
        }
    }
    Ok(out)
}

/// What a parent's summary and AgentGet show of its children: every live
/// one, then the latest `RECENT_CHILDREN` finished ones.
pub fn children_view(rx: &ReadCtx, parent: &str) -> Result<Vec<ChildSupervision>, StoreError> {
    let mut tasks = live_child_tasks(rx, parent)?;
    let mut done = Vec::new();
    for id in rx.index_list(Index::ChildTasks, parent)?.iter().rev() {
        if done.len() == RECENT_CHILDREN {
            break;
        }
        if let Some(t) = rx.get::<TaskRecord>(Keyed::Tasks, parent, id)? {
            if t.status.is_terminal() {
                done.push(t);
            }
        }
    }
    done.reverse();
    tasks.extend(done);
    let mut out = Vec::with_capacity(tasks.len());
    for t in &tasks {
        if let Some(s) = child_supervision(rx, t)? {
            out.push(s);
        }
    }
    Ok(out)
}
