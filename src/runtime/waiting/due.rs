//! What comes due while an agent sleeps: its timers fire and its blocked
//! work items' recheck reminders arrive, each admitted once as a message
//! before the actor's next decision. A paused agent whose budget day
//! turned is resumed first.

use crate::model::agent::{AgentRecord, AgentStatus};
use crate::model::event::Provenance;
use crate::model::message::{
    AdmissionContext, AdmissionRequest, DeliverySurface, MessageBody, MessageKind, MessageOrigin,
    Priority,
};
use crate::model::waiting::{TimerRecord, TimerStatus};
use crate::model::work::WorkItemRecord;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::admission::admit_in;
use crate::runtime::projection;
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, Store, StoreError, WriteCtx};

/// Admit due timers as `timer_tick` messages and due recheck reminders as
/// low-priority follow-ups, each once.
pub(crate) async fn fire_due(
    store: &Store,
    agent_id: &str,
    now_ms: i64,
) -> Result<(), RuntimeError> {
    let rx = store.read()?;
    let Some(agent) = rx.agent::<AgentRecord>(agent_id)? else {
        return Ok(());
    };
    if crate::runtime::budget::resumes_at_ms(&agent, now_ms).is_some_and(|at| at <= now_ms) {
        // Resumed (or not, if the day turned back): the step decides again
        // from what is recorded; due timers fire at the next step.
        drop(rx);
        let id = agent_id.to_owned();
        store
            .write(move |tx| crate::runtime::budget::resume_in(tx, &id, now_ms))
            .await?;
        return Ok(());
    }
    if agent.status == AgentStatus::Stopped {
        return Ok(());
    }
    let mut due_timers: Vec<TimerRecord> = Vec::new();
    for timer_id in rx.index_list(Index::ActiveTimers, agent_id)? {
        if let Some(t) = rx.get::<TimerRecord>(Keyed::Timers, agent_id, &timer_id)? {
            if t.status == TimerStatus::Active && t.fire_at_ms <= now_ms {
                due_timers.push(t);
            }
        }
    }
    let open = rx.index_list(Index::OpenWorkItems, agent_id)?;
    let mut due_rechecks = Vec::new();
    for id in open {
        if let Some(w) = rx.get::<WorkItemRecord>(Keyed::WorkItems, agent_id, &id)? {
            if projection::recheck_at_ms(&w).is_some_and(|at| at <= now_ms) {
                due_rechecks.push(w.id);
            }
        }
    }
    drop(rx);
    if due_timers.is_empty() && due_rechecks.is_empty() {
        return Ok(());
    }
    let id = agent_id.to_owned();
    store
        .write(move |tx| {
            for t in &due_timers {
                timer_fired_in(tx, &id, t)?;
            }
            for wid in &due_rechecks {
                recheck_due_in(tx, &id, wid)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// Inside a write: a due timer fires once, as a `timer_tick` message.
fn timer_fired_in(tx: &mut WriteCtx<'_>, id: &str, t: &TimerRecord) -> Result<(), StoreError> {
    let Some(mut timer) = tx.get::<TimerRecord>(Keyed::Timers, id, &t.id)? else {
        return Ok(());
    };
    if timer.status != TimerStatus::Active {
        return Ok(());
    }
    timer.status = TimerStatus::Fired;
    timer.updated_at = tx.now_ts();
    tx.put(Keyed::Timers, id, &timer.id, &timer)?;
    tx.index_remove(Index::ActiveTimers, id, &timer.id)?;
    let provenance = Provenance {
        work_item_id: timer.work_item_id.clone(),
        ..Provenance::default()
    };
    tx.append_event(new_event(
        id,
        provenance,
        Event::TimerFired(ev::TimerEnded {
            timer: timer.clone(),
        }),
    ))?;
    let req = AdmissionRequest {
        agent_id: id.to_owned(),
        kind: MessageKind::TimerTick,
        origin: MessageOrigin::Timer {
            timer_id: timer.id.clone(),
        },
        priority: Priority::Normal,
        body: MessageBody::Text {
            text: format!(
                "Timer fired: {}",
                timer.reason.clone().unwrap_or_else(|| "sleep ended".into())
            ),
        },
        delivery_surface: DeliverySurface::TimerScheduler,
        admission_context: AdmissionContext::RuntimeOwned,
        work_item_id: timer.work_item_id.clone(),
        task_id: None,
        source_refs: [("timer_id".to_owned(), timer.id.clone())]
            .into_iter()
            .collect(),
        metadata: None,
        correlation_id: None,
        causation_id: None,
    };
    admit_in(tx, req, &crate::new_id("msg"))?;
    Ok(())
}

/// What a recheck reminder asks of the agent.
const RECHECK_ASK: &str =
    "Check whether that still holds; update or clear the blocker with UpdateWorkItem.";

/// Inside a write: a blocked work item's recheck reminder, once, as a
/// low-priority follow-up.
fn recheck_due_in(tx: &mut WriteCtx<'_>, id: &str, wid: &str) -> Result<(), StoreError> {
    let Some(mut w) = tx.get::<WorkItemRecord>(Keyed::WorkItems, id, wid)? else {
        return Ok(());
    };
    if projection::recheck_at_ms(&w).is_none() {
        return Ok(());
    }
    w.recheck_consumed_at = Some(tx.now_ts());
    tx.put(Keyed::WorkItems, id, wid, &w)?;
    let due = ev::WorkItemRecheckDue {
        work_item_id: wid.to_owned(),
        blocked_by: w.blocked_by.clone(),
        recheck_at: w.recheck_at.clone(),
    };
    let provenance = Provenance {
        work_item_id: Some(wid.to_owned()),
        ..Provenance::default()
    };
    tx.append_event(new_event(id, provenance, Event::WorkItemRecheckDue(due)))?;
    let text = format!(
        "Recheck reminder: work item {wid} ({}) is blocked by \"{}\". {RECHECK_ASK}",
        w.objective,
        w.blocked_by.clone().unwrap_or_default()
    );
    let req = AdmissionRequest {
        agent_id: id.to_owned(),
        kind: MessageKind::InternalFollowup,
        origin: MessageOrigin::System {
            subsystem: "work_queue".into(),
        },
        priority: Priority::Background,
        body: MessageBody::Text { text },
        delivery_surface: DeliverySurface::RuntimeSystem,
        admission_context: AdmissionContext::RuntimeOwned,
        work_item_id: Some(wid.to_owned()),
        task_id: None,
        source_refs: [("recheck_work_item_id".to_owned(), wid.to_owned())]
            .into_iter()
            .collect(),
        metadata: None,
        correlation_id: None,
        causation_id: None,
    };
    admit_in(tx, req, &crate::new_id("msg"))?;
    Ok(())
}
