//! System ticks: the messages the scheduler admits on its own (a wake
//! hint to look at, the active work item to continue, queued work to
//! pick), worded for the model, each admitted once per idempotency key
//! inside the write that records the decision.

use crate::model::agent::AgentRecord;
use crate::model::decision::SchedulerDecision;
use crate::model::decision::SystemTickReason;
use crate::model::event::Provenance;
use crate::model::message::{
    AdmissionContext, AdmissionRequest, DeliverySurface, MessageBody, MessageKind, MessageOrigin,
    Priority,
};
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::admission::{admit_in, Outcome};
use crate::runtime::continuation::system_tick_metadata;
use crate::store::{Index, StoreError, WriteCtx};

fn tick_text(
    reason: SystemTickReason,
    objective: Option<&str>,
    work_item_id: Option<&str>,
    hint: Option<&str>,
) -> String {
    match reason {
        SystemTickReason::WakeHint => format!(
            "Wake hint: {}. Something you may be waiting on changed; inspect it and decide what to do.",
            hint.unwrap_or("something changed")
        ),
        SystemTickReason::ContinueActive => format!(
            "Continue your current work item {}: {}",
            work_item_id.unwrap_or("?"),
            objective.unwrap_or("")
        ),
        SystemTickReason::QueuedAvailable => format!(
            "Runnable work is queued (work item {}: {}). Pick it with PickWorkItem when you are ready.",
            work_item_id.unwrap_or("?"),
            objective.unwrap_or("")
        ),
    }
}

/// A wake hint in the tick's words: its reason, then what changed and
/// where, when a trigger's delivery said.
fn hint_line(h: &crate::model::waiting::PendingWakeHint) -> String {
    let mut line = h.reason.clone();
    if let Some(r) = &h.origin.resource {
        line.push_str(&format!(" (resource: {r})"));
    }
    if let Some(s) = h.source.as_deref().filter(|s| *s != "external_trigger") {
        line.push_str(&format!(" from {s}"));
    }
    if h.coalesced_count > 0 {
        line.push_str(&format!("; {} more signals folded in", h.coalesced_count));
    }
    line
}

/// Inside the decision's write: admit the system tick it asks for (a wake
/// hint, a nudge to continue, queued work available) once per idempotency
/// key, with `system_tick_emitted`.
pub(crate) fn emit_tick_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    decision: &SchedulerDecision,
    objective: Option<&str>,
    hint: Option<&crate::model::waiting::PendingWakeHint>,
) -> Result<(), StoreError> {
    let Some(reason) = decision.tick_reason() else {
        return Ok(());
    };
    let key = decision.idempotency_key.clone().unwrap_or_default();
    let mut source_refs = std::collections::BTreeMap::new();
    source_refs.insert("idempotency_key".to_owned(), key.clone());
    if let Some(w) = hint.and_then(|h| h.waiting_intent_id.clone()) {
        source_refs.insert("waiting_intent_id".to_owned(), w);
    }
    // Which outside system to look at: the trigger and what changed there.
    let origin = hint.map(|h| &h.origin);
    if let Some(t) = origin.and_then(|o| o.external_trigger_id.clone()) {
        source_refs.insert("external_trigger_id".to_owned(), t);
    }
    if let Some(r) = origin.and_then(|o| o.resource.clone()) {
        source_refs.insert("resource".to_owned(), r);
    }
    let req = AdmissionRequest {
        agent_id: agent_id.to_owned(),
        kind: MessageKind::SystemTick,
        origin: MessageOrigin::System {
            subsystem: "scheduler".into(),
        },
        priority: Priority::Next,
        body: MessageBody::Text {
            text: tick_text(
                reason,
                objective,
                decision.work_item_id.as_deref(),
                hint.map(hint_line).as_deref(),
            ),
        },
        delivery_surface: DeliverySurface::RuntimeSystem,
        admission_context: AdmissionContext::RuntimeOwned,
        // A queued_available tick names the item but must not bind it.
        work_item_id: match reason {
            SystemTickReason::ContinueActive => decision.work_item_id.clone(),
            SystemTickReason::WakeHint | SystemTickReason::QueuedAvailable => None,
        },
        task_id: None,
        source_refs,
        metadata: Some(system_tick_metadata(reason, &key)),
        correlation_id: origin.and_then(|o| o.external_trigger_id.clone()),
        causation_id: None,
    };
    let message_id = crate::new_id("msg");
    let admitted = match admit_in(tx, req, &message_id)? {
        Outcome::Admitted(a) => a,
        Outcome::Rejected { .. } => return Ok(()),
    };
    if !key.is_empty() {
        let family = crate::runtime::scheduler::tick_key_family(&key);
        tx.index_remove_prefix(Index::TickKeys, agent_id, family)?;
        tx.index_insert(Index::TickKeys, agent_id, &key)?;
    }
    if reason == SystemTickReason::WakeHint {
        if let Some(mut agent) = tx.get_agent::<AgentRecord>(agent_id)? {
            agent.pending_wake_hint = None;
            tx.put_agent(agent_id, &agent)?;
        }
    }
    let provenance = Provenance {
        message_id: Some(admitted.message_id.clone()),
        work_item_id: decision.work_item_id.clone(),
        origin: Some("system".into()),
        ..Provenance::default()
    };
    let tick = ev::SystemTickEmitted {
        reason,
        idempotency_key: key,
        message_id: admitted.message_id,
        work_item_id: decision.work_item_id.clone(),
    };
    tx.append_event(new_event(
        agent_id,
        provenance,
        Event::SystemTickEmitted(tick),
    ))?;
    Ok(())
}
