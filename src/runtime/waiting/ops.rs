//! The waiting plane's operations on `RuntimeHost`: wake hints (stored as
//! the pending hint, coalesced, ignored for a stopped agent), timers, and
//! waiting intents (created, triggered, cancelled). Each is one store
//! transaction with its events, then a wake of the agent's actor.

use crate::runtime::agent::agent_in;

use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::event::Provenance;
use crate::model::waiting::HintOrigin;
use crate::model::waiting::PendingWakeHint;
use crate::model::waiting::TimerRecord;
use crate::model::waiting::TimerStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingIntentStatus;
use crate::model::waiting::WaitingScope;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::views::WakeHintOutcome;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::RuntimeError;
use crate::store::{Keyed, StoreError, WriteCtx};

/// Inside a write job: store the wake hint as the agent's pending hint, or
/// coalesce it into the one pending (a hint tied to a wait upgrades one
/// that is not), or record it ignored when the agent is stopped. Records
/// its event and says which.
pub(crate) fn wake_hint_in(
    tx: &mut WriteCtx<'_>,
    mut agent: AgentRecord,
    reason: &str,
    source: Option<String>,
    waiting_intent_id: Option<String>,
    origin: HintOrigin,
) -> Result<WakeHintOutcome, StoreError> {
    let id = agent.id.clone();
    let provenance = Provenance {
        source: source.clone(),
        ..Provenance::default()
    };
    let (kind, outcome) = if agent.status == AgentStatus::Stopped {
        (
            Event::WakeHintIgnored as fn(_) -> _,
            WakeHintOutcome::Ignored,
        )
    } else if let Some(hint) = agent.pending_wake_hint.as_mut() {
        hint.coalesced_count += 1;
        if hint.waiting_intent_id.is_none() && waiting_intent_id.is_some() {
            hint.waiting_intent_id = waiting_intent_id.clone();
            hint.reason = reason.to_owned();
            hint.source = source.clone();
            hint.origin = origin;
        }
        (
            Event::WakeHintCoalesced as fn(_) -> _,
            WakeHintOutcome::Coalesced,
        )
    } else {
        let generation = tx.next_counter(&id, "wake_hint_generation")?;
        agent.pending_wake_hint = Some(PendingWakeHint {
            reason: reason.to_owned(),
            source: source.clone(),
            waiting_intent_id: waiting_intent_id.clone(),
            generation,
            coalesced_count: 0,
            received_at: tx.now_ts(),
            origin,
        });
        (
            Event::WakeHintSubmitted as fn(_) -> _,
            WakeHintOutcome::Submitted,
        )
    };
    if outcome != WakeHintOutcome::Ignored {
        tx.put_agent(&id, &agent)?;
    }
    let note = match outcome {
        WakeHintOutcome::Ignored => "agent is stopped; wake does not cross stopped",
        WakeHintOutcome::Coalesced | WakeHintOutcome::Submitted => "",
    };
    let hint = ev::WakeHint {
        reason: reason.to_owned(),
        waiting_intent_id,
        pending: agent.pending_wake_hint.clone(),
        note: note.to_owned(),
    };
    let event: fn(ev::WakeHint) -> Event = kind;
    tx.append_event(new_event(&id, provenance, event(hint)))?;
    Ok(outcome)
}

/// A new waiting intent: what the agent waits for outside the runtime.
#[derive(Debug, Clone, Default)]
pub struct NewWait {
    pub work_item_id: Option<String>,
    pub source: String,
    pub description: String,
    pub external_ref: Option<String>,
    pub external_trigger_id: Option<String>,
}

impl RuntimeHost {
    /// A liveness signal: stored as the pending wake hint (coalescing with
    /// one already pending) and turned into a system tick by the scheduler
    /// when the agent is eligible. Ignored (and recorded) when stopped.
    pub async fn wake_hint(
        &self,
        agent_id: &str,
        reason: &str,
        source: Option<String>,
        waiting_intent_id: Option<String>,
    ) -> Result<WakeHintOutcome, RuntimeError> {
        let (id, reason) = (agent_id.to_owned(), reason.to_owned());
        let outcome = self
            .inner
            .store
            .write(move |tx| {
                let agent: AgentRecord = agent_in(tx, &id)?;
                wake_hint_in(
                    tx,
                    agent,
                    &reason,
                    source.clone(),
                    waiting_intent_id.clone(),
                    HintOrigin::default(),
                )
            })
            .await?;
        self.wake(agent_id);
        Ok(outcome)
    }

    /// A timer that fires `delay_ms` from now (e.g. `Sleep(duration_ms)`).
    pub async fn create_timer(
        &self,
        agent_id: &str,
        delay_ms: u64,
        reason: &str,
        work_item_id: Option<String>,
    ) -> Result<TimerRecord, RuntimeError> {
        let (id, reason) = (agent_id.to_owned(), reason.to_owned());
        let timer_id = crate::new_id("timer");
        let record = self
            .inner
            .store
            .write(move |tx| {
                let now = tx.now_ts();
                let record = TimerRecord {
                    id: timer_id.clone(),
                    agent_id: id.clone(),
                    status: TimerStatus::Active,
                    fire_at_ms: tx
                        .now_ms()
                        .saturating_add(i64::try_from(delay_ms).unwrap_or(i64::MAX)),
                    work_item_id: work_item_id.clone(),
                    reason: Some(reason.clone()),
                    created_at: now.clone(),
                    updated_at: now,
                };
                tx.put(Keyed::Timers, &id, &timer_id, &record)?;
                tx.index_insert(crate::store::Index::ActiveTimers, &id, &timer_id)?;
                let provenance = Provenance {
                    work_item_id: work_item_id.clone(),
                    ..Provenance::default()
                };
                let created = ev::TimerCreated {
                    timer: record.clone(),
                    delay_ms,
                };
                tx.append_event(new_event(&id, provenance, Event::TimerCreated(created)))?;
                Ok(record)
            })
            .await?;
        self.wake(agent_id);
        Ok(record)
    }

    /// Record that progress depends on something outside (agent-scoped, or
    /// bound to a work item, which then stops being runnable).
    pub async fn create_waiting_intent(
        &self,
        agent_id: &str,
        wait: NewWait,
    ) -> Result<WaitingIntentRecord, RuntimeError> {
        let id = agent_id.to_owned();
        let NewWait {
            work_item_id,
            source,
            description,
            external_ref,
            external_trigger_id,
        } = wait;
        let intent_id = crate::new_id("wait");
        let record = self
            .inner
            .store
            .write(move |tx| {
                let now = tx.now_ts();
                let record = WaitingIntentRecord {
                    id: intent_id.clone(),
                    agent_id: id.clone(),
                    status: WaitingIntentStatus::Active,
                    scope: if work_item_id.is_some() {
                        WaitingScope::WorkItem
                    } else {
                        WaitingScope::Agent
                    },
                    work_item_id: work_item_id.clone(),
                    source: Some(source.clone()),
                    description: Some(description.clone()),
                    external_ref: external_ref.clone(),
                    external_trigger_id: external_trigger_id.clone(),
                    trigger_count: 0,
                    created_at: now.clone(),
                    updated_at: now,
                };
                tx.put(Keyed::WaitingIntents, &id, &intent_id, &record)?;
                let provenance = Provenance {
                    work_item_id: work_item_id.clone(),
                    source: Some(source.clone()),
                    ..Provenance::default()
                };
                let created = ev::WaitingIntentChanged {
                    waiting_intent: record.clone(),
                };
                tx.append_event(new_event(
                    &id,
                    provenance,
                    Event::WaitingIntentCreated(created),
                ))?;
                Ok(record)
            })
            .await?;
        self.wake(agent_id);
        Ok(record)
    }

    /// Resolve (`triggered`) or cancel a waiting intent. Triggering also
    /// submits a wake hint tied to it.
    pub async fn settle_waiting_intent(
        &self,
        agent_id: &str,
        intent_id: &str,
        status: WaitingIntentStatus,
    ) -> Result<WaitingIntentRecord, RuntimeError> {
        let (id, wid) = (agent_id.to_owned(), intent_id.to_owned());
        let record = self
            .inner
            .store
            .write(move |tx| {
                let mut rec: WaitingIntentRecord =
                    tx.get(Keyed::WaitingIntents, &id, &wid)?.ok_or_else(|| {
                        StoreError::rejected(RuntimeError::Invalid(format!(
                            "no waiting intent `{wid}`"
                        )))
                    })?;
                rec.status = status;
                rec.updated_at = tx.now_ts();
                if status == WaitingIntentStatus::Triggered {
                    rec.trigger_count += 1;
                }
                tx.put(Keyed::WaitingIntents, &id, &wid, &rec)?;
                let event: fn(ev::WaitingIntentChanged) -> Event = match status {
                    WaitingIntentStatus::Triggered | WaitingIntentStatus::Resolved => {
                        Event::WaitingIntentTriggered
                    }
                    WaitingIntentStatus::Cancelled
                    | WaitingIntentStatus::Expired
                    | WaitingIntentStatus::Active => Event::WaitingIntentCancelled,
                };
                let provenance = Provenance {
                    work_item_id: rec.work_item_id.clone(),
                    ..Provenance::default()
                };
                let changed = ev::WaitingIntentChanged {
                    waiting_intent: rec.clone(),
                };
                tx.append_event(new_event(&id, provenance, event(changed)))?;
                Ok(rec)
            })
            .await?;
        if status == WaitingIntentStatus::Triggered {
            self.wake_hint(
                agent_id,
                "waiting intent triggered",
                record.source.clone(),
                Some(record.id.clone()),
            )
            .await?;
        } else {
            self.wake(agent_id);
        }
        Ok(record)
    }
}
