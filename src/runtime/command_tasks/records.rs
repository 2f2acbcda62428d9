//! The store side of command tasks: one transition with its
//! `task_status_changed` event, a re-entry task's result queued once (in
//! the same transaction that marks it queued), and the tail of an output
//! file.

use std::path::Path;

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
        let detail = &next.detail;
        let changed = ev::TaskStatusChanged {
            task_id: task_id.to_owned(),
            kind: next.kind,
            from: current.status,
            to: next.status,
            summary: next.summary.clone(),
            cmd: detail.cmd.clone(),
            exit_status: detail.exit_status,
            signal: detail.signal,
            duration_ms: detail.duration_ms,
            output_preview: detail
                .output_preview
                .clone()
                .filter(|_| next.status.is_terminal()),
            output_truncated: detail.output_truncated,
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
    let detail = &task.detail;
    let wants = detail.terminal_reentry.unwrap_or(false);
    if !task.status.is_terminal() || !wants || detail.result_message_id.is_some() {
        return Ok(None);
    }
    let message_id = crate::new_id("msg");
    let text = match &detail.child_agent_id {
        Some(child) => format!(
            "Task {task_id} (child agent {child}: {}) {}.\n{}",
            detail.label.as_deref().unwrap_or("delegated work"),
            match task.status {
                TaskStatus::Completed => "completed; its final report follows".to_owned(),
                other => format!(
                    "ended {}: {}",
                    format!("{other:?}").to_lowercase(),
                    task.summary.clone().unwrap_or_default()
                ),
            },
            detail.child_result.as_deref().unwrap_or("")
        ),
        None => format!(
            "Task {task_id} ({}) finished: {}.\n{}",
            detail.cmd.as_deref().unwrap_or("command"),
            task.summary
                .clone()
                .unwrap_or_else(|| format!("{:?}", task.status).to_lowercase()),
            detail.output_preview.as_deref().unwrap_or("")
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
            task.detail.result_message_id = Some(a.message_id.clone());
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
