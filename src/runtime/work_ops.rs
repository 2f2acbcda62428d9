//! Work-item operations: create, pick, update, complete. The model's tools,
//! the console and the control socket all call these; each is one store
//! transaction that writes the new snapshot (with `revision` + 1) and the
//! event it caused. The plan body lives in the agent home as
//! `work-items/<id>/plan.md` and is written before the transaction, so a
//! committed record never points at a missing file.

use crate::model::work::WorkItemError;
use crate::protocol::views::{CreateWorkItem, UpdateWorkItem, WorkItemSource};

use crate::runtime::agent::agent_in;
use std::path::{Path, PathBuf};

use super::scheduler::work_queue_tick_family;
use super::RuntimeError;
use crate::model::agent::AgentRecord;
use crate::model::decision::SystemTickReason;
use crate::model::event::Provenance;
use crate::model::work::{WorkItemRecord, WorkItemState};
use crate::protocol::events::{self as ev, new_event, Event};
use crate::store::{Index, Keyed, Store, StoreError, WriteCtx};

/// Default fallback recheck delay when `blocked_by` is set without
/// `recheck_after` (spec: "the runtime assigns a default fallback recheck
/// deadline").
pub const DEFAULT_RECHECK_MS: u64 = 30 * 60 * 1000;

impl From<WorkItemError> for RuntimeError {
    fn from(e: WorkItemError) -> Self {
        RuntimeError::WorkItem(e)
    }
}

fn reject(e: WorkItemError) -> StoreError {
    StoreError::rejected(RuntimeError::WorkItem(e))
}

/// `<agent_home>/work-items/<id>/plan.md`.
pub fn plan_path(agent_home: &Path, work_item_id: &str) -> PathBuf {
    agent_home
        .join("work-items")
        .join(work_item_id)
        .join("plan.md")
}

fn write_plan(agent_home: &Path, work_item_id: &str, plan: &str) -> Result<(), RuntimeError> {
    let path = plan_path(agent_home, work_item_id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| RuntimeError::Io {
            what: format!("creating {}", dir.display()),
            message: e.to_string(),
        })?;
    }
    std::fs::write(&path, plan).map_err(|e| RuntimeError::Io {
        what: format!("writing {}", path.display()),
        message: e.to_string(),
    })
}

fn load_open(tx: &WriteCtx<'_>, agent_id: &str, id: &str) -> Result<WorkItemRecord, StoreError> {
    let item: WorkItemRecord = tx
        .get(Keyed::WorkItems, agent_id, id)?
        .ok_or_else(|| reject(WorkItemError::Unknown(id.to_owned())))?;
    if item.state == WorkItemState::Completed {
        return Err(reject(WorkItemError::Completed(id.to_owned())));
    }
    Ok(item)
}

fn provenance(work_item_id: &str) -> Provenance {
    Provenance {
        work_item_id: Some(work_item_id.to_owned()),
        ..Provenance::default()
    }
}

pub async fn create(
    store: &Store,
    agent_home: &Path,
    agent_id: &str,
    req: CreateWorkItem,
    source: WorkItemSource,
) -> Result<WorkItemRecord, RuntimeError> {
    create_once(store, agent_home, agent_id, req, source, None).await
}

/// `create`, once per client `request_id`: a retried request gets the
/// work item the first one created (written in the same transaction).
pub async fn create_once(
    store: &Store,
    agent_home: &Path,
    agent_id: &str,
    req: CreateWorkItem,
    source: WorkItemSource,
    request_id: Option<String>,
) -> Result<WorkItemRecord, RuntimeError> {
    let objective = req.objective.trim().to_owned();
    if objective.is_empty() {
        return Err(WorkItemError::EmptyObjective.into());
    }
    let key = request_id
        .as_deref()
        .map(|r| super::admission::client_request_key("work_item.create", r));
    if let Some(key) = &key {
        let rx = store.read()?;
        if let Some(id) = rx.get::<String>(Keyed::ClientRequests, agent_id, key)? {
            if let Some(first) = rx.get::<WorkItemRecord>(Keyed::WorkItems, agent_id, &id)? {
                return Ok(first);
            }
        }
    }
    let id = crate::new_id("work");
    if let Some(plan) = &req.plan {
        write_plan(agent_home, &id, plan)?;
    }
    let agent_id = agent_id.to_owned();
    let record = store
        .write(move |tx| {
            let agent = agent_in(tx, &agent_id)?;
            let now = tx.now_ts();
            let record = WorkItemRecord {
                id: id.clone(),
                agent_id: agent_id.clone(),
                // Filed under the workspace it was written in (memory
                // search scopes by it).
                workspace_id: agent.workspaces.active_id().to_owned(),
                objective: objective.clone(),
                state: WorkItemState::Open,
                plan_status: req.plan_status.unwrap_or_default(),
                todo_list: req.todo_list.clone().unwrap_or_default(),
                blocked_by: None,
                recheck_at: None,
                recheck_consumed_at: None,
                result_summary: None,
                revision: 1,
                created_at: now.clone(),
                updated_at: now,
            };
            if let Some(key) = &key {
                // A concurrent twin may have won since the read above.
                if let Some(first) = tx.get::<String>(Keyed::ClientRequests, &agent_id, key)? {
                    if let Some(w) =
                        tx.get::<WorkItemRecord>(Keyed::WorkItems, &agent_id, &first)?
                    {
                        return Ok(w);
                    }
                }
                tx.put(Keyed::ClientRequests, &agent_id, key, &id)?;
            }
            tx.put(Keyed::WorkItems, &agent_id, &id, &record)?;
            tx.index_insert(Index::OpenWorkItems, &agent_id, &id)?;
            let created = ev::WorkItemCreated {
                work_item: record.clone(),
                source,
                has_plan: req.plan.is_some(),
            };
            tx.append_event(new_event(
                &agent_id,
                provenance(&id),
                Event::WorkItemCreated(created),
            ))?;
            Ok(record)
        })
        .await?;
    Ok(record)
}

/// Make an open work item the agent's current focus.
pub async fn pick(
    store: &Store,
    agent_id: &str,
    work_item_id: &str,
    source: WorkItemSource,
) -> Result<WorkItemRecord, RuntimeError> {
    let (agent_id, id) = (agent_id.to_owned(), work_item_id.to_owned());
    let record = store
        .write(move |tx| {
            let item = load_open(tx, &agent_id, &id)?;
            let mut agent: AgentRecord = agent_in(tx, &agent_id)?;
            let previous = agent.current_work_item_id.replace(id.clone());
            tx.put_agent(&agent_id, &agent)?;
            let picked = ev::WorkItemPicked {
                work_item_id: id.clone(),
                revision: item.revision,
                objective: item.objective.clone(),
                previous_work_item_id: previous,
                source,
            };
            tx.append_event(new_event(
                &agent_id,
                provenance(&id),
                Event::WorkItemPicked(picked),
            ))?;
            Ok(item)
        })
        .await?;
    Ok(record)
}

pub async fn update(
    store: &Store,
    agent_id: &str,
    req: UpdateWorkItem,
    source: WorkItemSource,
) -> Result<WorkItemRecord, RuntimeError> {
    if let Some(o) = &req.objective {
        if o.trim().is_empty() {
            return Err(WorkItemError::EmptyObjective.into());
        }
    }
    let agent_id = agent_id.to_owned();
    let record = store
        .write(move |tx| {
            let mut item = load_open(tx, &agent_id, &req.work_item_id)?;
            let mut changed = Vec::new();
            if let Some(o) = &req.objective {
                item.objective = o.trim().to_owned();
                changed.push("objective");
            }
            if let Some(p) = req.plan_status {
                item.plan_status = p;
                changed.push("plan_status");
            }
            if let Some(t) = &req.todo_list {
                item.todo_list = t.clone();
                changed.push("todo_list");
            }
            match &req.blocked_by {
                Some(Some(b)) if !b.trim().is_empty() => {
                    item.blocked_by = Some(b.trim().to_owned());
                    let delay = req
                        .recheck_after_ms
                        .filter(|d| *d > 0)
                        .unwrap_or(DEFAULT_RECHECK_MS);
                    let at = tx
                        .now_ms()
                        .saturating_add(i64::try_from(delay).unwrap_or(i64::MAX));
                    item.recheck_at = Some(crate::format_ts(at));
                    item.recheck_consumed_at = None;
                    changed.push("blocked_by");
                }
                Some(_) => {
                    item.blocked_by = None;
                    item.recheck_at = None;
                    item.recheck_consumed_at = None;
                    changed.push("blocked_by");
                }
                None => {}
            }
            item.revision += 1;
            item.updated_at = tx.now_ts();
            tx.put(Keyed::WorkItems, &agent_id, &item.id, &item)?;
            let updated = ev::WorkItemUpdated {
                work_item: item.clone(),
                changed: changed.iter().map(|c| (*c).to_owned()).collect(),
                source,
            };
            tx.append_event(new_event(
                &agent_id,
                provenance(&item.id),
                Event::WorkItemUpdated(updated),
            ))?;
            Ok(item)
        })
        .await?;
    Ok(record)
}

/// Mark a work item completed: clears the blocker and recheck, clears it
/// from current focus, records the result summary when one is given.
pub async fn complete(
    store: &Store,
    agent_id: &str,
    work_item_id: &str,
    result_summary: Option<String>,
    source: WorkItemSource,
) -> Result<WorkItemRecord, RuntimeError> {
    let (agent_id, id) = (agent_id.to_owned(), work_item_id.to_owned());
    let record = store
        .write(move |tx| {
            let mut item = load_open(tx, &agent_id, &id)?;
            item.state = WorkItemState::Completed;
            item.blocked_by = None;
            item.recheck_at = None;
            item.recheck_consumed_at = None;
            item.result_summary = result_summary.clone().filter(|s| !s.trim().is_empty());
            item.revision += 1;
            item.updated_at = tx.now_ts();
            tx.put(Keyed::WorkItems, &agent_id, &id, &item)?;
            tx.index_remove(Index::OpenWorkItems, &agent_id, &id)?;
            // A completed item gets no more ticks: what they were keyed by
            // goes with it.
            for reason in [
                SystemTickReason::ContinueActive,
                SystemTickReason::QueuedAvailable,
            ] {
                let family = work_queue_tick_family(reason, &id);
                tx.index_remove_prefix(Index::TickKeys, &agent_id, &family)?;
            }
            if let Some(mut agent) = tx.get_agent::<AgentRecord>(&agent_id)? {
                if agent.current_work_item_id.as_deref() == Some(id.as_str()) {
                    agent.current_work_item_id = None;
                    tx.put_agent(&agent_id, &agent)?;
                }
            }
            let completed = ev::WorkItemCompleted {
                work_item: item.clone(),
                source,
            };
            tx.append_event(new_event(
                &agent_id,
                provenance(&id),
                Event::WorkItemCompleted(completed),
            ))?;
            Ok(item)
        })
        .await?;
    Ok(record)
}
