//! The store side of command tasks: one transition with its
//! `task_status_changed` event, a re-entry task's result queued once (in
//! the same transaction that marks it queued), and the tail of an output
//! file.

use std::path::Path;

use serde_json::json;

use crate::model::event::Provenance;
use crate::model::message::{
    AdmissionContext, AdmissionRequest, DeliverySurface, MessageBody, MessageKind, MessageOrigin,
    Priority,
};
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::admission::{admit_in, Outcome};
use crate::runtime::tasks::{apply_transition, TaskTransition, TransitionOutcome};
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, StoreError, WriteCtx};

/// The tail of an output file, at most `max` bytes, lossy UTF-8, and
/// whether it was cut.
pub fn read_tail(path: &Path, max: u64) -> (String, u64, bool) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return (String::new(), 0, false);
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return (String::new(), len, false);
    }
    let mut buf = Vec::with_capacity(max as usize);
    let _ = f.take(max).read_to_end(&mut buf);
    (String::from_utf8_lossy(&buf).into_owned(), len, start > 0)
}

/// Persist one transition of one task with its `task_status_changed` event.
pub(crate) fn transition_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    task_id: &str,
    transition: TaskTransition,
) -> Result<TransitionOutcome, StoreError> {
    let current: TaskRecord = tx.get(Keyed::Tasks, agent_id, task_id)?.ok_or_else(|| {
        StoreError::rejected(RuntimeError::UnknownTask {
            task_id: task_id.to_owned(),
        })
    })?;
    let outcome = apply_transition(&current, transition, &tx.now_ts())
        .map_err(|e| StoreError::Storage(e.to_string()))?;
    if let TransitionOutcome::Applied(next) = &outcome {
        tx.put(Keyed::Tasks, agent_id, task_id, next)?;
        if next.status.is_terminal() {
            tx.index_remove(Index::ActiveTasks, agent_id, task_id)?;
        }
        let detail = next.detail.clone().unwrap_or_default();
        let text = |key: &str| detail.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let changed = ev::TaskStatusChanged {
            task_id: task_id.to_owned(),
            kind: next.kind,
            from: current.status,
            to: next.status,
            summary: next.summary.clone(),
            cmd: text("cmd"),
            exit_status: detail.get("exit_status").and_then(|v| v.as_i64()),
            duration_ms: detail.get("duration_ms").and_then(|v| v.as_u64()),
            output_preview: text("output_preview").filter(|_| next.status.is_terminal()),
            output_truncated: detail.get("output_truncated").and_then(|v| v.as_bool()),
        };
        let provenance = Provenance {
            task_id: Some(task_id.to_owned()),
            work_item_id: next.work_item_id.clone(),
            ..Provenance::default()
        };
        tx.append_event(new_event(
            agent_id,
            provenance,
            Event::TaskStatusChanged(changed),
        ))?;
    }
    Ok(outcome)
}

/// Queue the task-result message of a terminal re-entry task, once, and
/// remember its id on the task (same transaction).
pub(crate) fn queue_result_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    task_id: &str,
) -> Result<Option<String>, StoreError> {
    let Some(mut task) = tx.get::<TaskRecord>(Keyed::Tasks, agent_id, task_id)? else {
        return Ok(None);
    };
    let mut detail = task.detail.clone().unwrap_or_else(|| json!({}));
    let wants = detail
        .get("terminal_reentry")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    if !task.status.is_terminal() || !wants || detail.get("result_message_id").is_some() {
        return Ok(None);
    }
    let message_id = crate::new_id("msg");
    let text = match detail.get("child_agent_id").and_then(|c| c.as_str()) {
        Some(child) => format!(
            "Task {task_id} (child agent {child}: {}) {}.\n{}",
            detail
                .get("label")
                .and_then(|l| l.as_str())
                .unwrap_or("delegated work"),
            match task.status {
                TaskStatus::Completed => "completed; its final report follows".to_owned(),
                other => format!(
                    "ended {}: {}",
                    format!("{other:?}").to_lowercase(),
                    task.summary.clone().unwrap_or_default()
                ),
            },
            detail
                .get("child_result")
                .and_then(|c| c.as_str())
                .unwrap_or("")
        ),
        None => format!(
            "Task {task_id} ({}) finished: {}.\n{}",
            detail
                .get("cmd")
                .and_then(|c| c.as_str())
                .unwrap_or("command"),
            task.summary
                .clone()
                .unwrap_or_else(|| format!("{:?}", task.status).to_lowercase()),
            detail
                .get("output_preview")
                .and_then(|c| c.as_str())
                .unwrap_or("")
        ),
    };
    let req = AdmissionRequest {
        agent_id: agent_id.to_owned(),
        kind: MessageKind::TaskResult,
        origin: MessageOrigin::Task {
            task_id: task_id.to_owned(),
        },
        priority: Priority::Next,
        body: MessageBody::Text { text },
        delivery_surface: DeliverySurface::TaskRejoin,
        admission_context: AdmissionContext::RuntimeOwned,
        work_item_id: task.work_item_id.clone(),
        task_id: Some(task_id.to_owned()),
        source_refs: [("task_result_id".to_owned(), task_id.to_owned())]
            .into_iter()
            .collect(),
        metadata: None,
        correlation_id: None,
        causation_id: task.parent_message_id.clone(),
    };
    match admit_in(tx, req, &message_id)? {
        Outcome::Admitted(a) => {
            if let Some(obj) = detail.as_object_mut() {
                obj.insert("result_message_id".into(), json!(a.message_id));
            }
            task.detail = Some(detail);
            tx.put(Keyed::Tasks, agent_id, task_id, &task)?;
            let provenance = Provenance {
                task_id: Some(task_id.to_owned()),
                message_id: Some(a.message_id.clone()),
                ..Provenance::default()
            };
            let queued = ev::TaskResultQueued {
                task_id: task_id.to_owned(),
                message_id: a.message_id.clone(),
            };
            tx.append_event(new_event(
                agent_id,
                provenance,
                Event::TaskResultQueued(queued),
            ))?;
            Ok(Some(a.message_id))
        }
        // A stopped agent refuses the result; the refusal is recorded.
        Outcome::Rejected { .. } => Ok(None),
    }
}
