//! External triggers on `RuntimeHost`: the agent's default descriptor
//! (provisioned once, rotated, revoked; old records kept for audit), and a
//! delivery: token checked in constant time, the waits it satisfies
//! settled, a wake hint submitted (never a message), the count and
//! provenance recorded. Each is one store transaction with its events.

use crate::protocol::views::{DeliveryReceipt, RecentDelivery, TriggerView};

use crate::model::agent::AgentRecord;
use crate::model::event::Provenance;
use crate::model::trigger::DeliveryMeta;
use crate::model::trigger::IngressStatus;
use crate::model::trigger::TriggerStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingIntentStatus;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::{ApiError, ErrorCode, Request, Response};
use crate::runtime::agent::agent_in;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::triggers::{satisfied_waits, ExternalTriggerRecord};
use crate::runtime::waiting::ops::wake_hint_in;
use crate::runtime::RuntimeError;
use crate::store::{Keyed, StoreError, WriteCtx};

/// How many recent deliveries `trigger.show` lists.
pub const RECENT_DELIVERIES: usize = 10;

/// A delivery as it arrives.
#[derive(Debug, Clone, Default)]
pub struct Delivery {
    pub meta: DeliveryMeta,
    pub content_type: Option<String>,
    pub body_bytes: u64,
}

/// Why a delivery was refused. Every refusal of a presented token is the
/// same `NotFound`, so a prober learns nothing from the answer.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("no such trigger")]
    NotFound,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

fn active_of(records: &[ExternalTriggerRecord]) -> Option<&ExternalTriggerRecord> {
    records.iter().find(|r| r.is_active())
}

/// Inside a write job: the active descriptor, provisioned when the agent
/// never had one. After a revoke there is none until the operator rotates.
pub(crate) fn ensure_trigger_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
) -> Result<Option<ExternalTriggerRecord>, StoreError> {
    let records: Vec<ExternalTriggerRecord> = tx.list(Keyed::ExternalTriggers, agent_id)?;
    if let Some(active) = active_of(&records) {
        return Ok(Some(active.clone()));
    }
    if !records.is_empty() {
        return Ok(None);
    }
    let record = ExternalTriggerRecord::new(agent_id, &tx.now_ts());
    put_trigger(tx, &record)?;
    let changed = ev::TriggerChanged {
        trigger: record.descriptor.clone(),
        previous: None,
        by: "runtime".into(),
    };
    record_change(tx, agent_id, Event::ExternalTriggerProvisioned(changed))?;
    Ok(Some(record))
}

fn put_trigger(tx: &mut WriteCtx<'_>, record: &ExternalTriggerRecord) -> Result<(), StoreError> {
    let d = &record.descriptor;
    tx.put(
        Keyed::ExternalTriggers,
        &d.target_agent_id,
        &d.external_trigger_id,
        record,
    )
}

fn record_change(tx: &mut WriteCtx<'_>, agent_id: &str, event: Event) -> Result<(), StoreError> {
    tx.append_event(new_event(agent_id, Provenance::default(), event))
        .map(drop)
}

impl RuntimeHost {
    /// `trigger.show`, `.rotate`, `.revoke` and `.deliver` (a delivery
    /// from a client, with the token's check left to the listener).
    pub(crate) async fn answer_triggers(&self, request: Request) -> Result<Response, ApiError> {
        match request {
            Request::TriggerShow { agent_id } => {
                Ok(Response::TriggerShow(self.trigger_show(&agent_id).await?))
            }
            Request::TriggerRotate { agent_id } => Ok(Response::TriggerRotate(
                self.trigger_rotate(&agent_id).await?,
            )),
            Request::TriggerRevoke { agent_id } => Ok(Response::TriggerRevoke(
                self.trigger_revoke(&agent_id).await?,
            )),
            Request::TriggerDeliver { agent_id, meta } => {
                let delivery = Delivery {
                    meta,
                    ..Default::default()
                };
                match self.trigger_deliver(&agent_id, None, delivery).await {
                    Ok(receipt) => Ok(Response::TriggerDeliver(receipt)),
                    Err(DeliveryError::Runtime(e)) => Err(e.into()),
                    Err(e) => Err(ApiError::new(ErrorCode::InvalidParams, e.to_string())),
                }
            }
            other => Err(other.misrouted()),
        }
    }

    /// Where the HTTP listener stands.
    pub fn ingress(&self) -> IngressStatus {
        self.inner.ingress()
    }

    /// Set by the process that owns the listener once it binds (or fails).
    pub fn set_ingress(&self, status: IngressStatus) {
        *self.inner.ingress.lock().unwrap_or_else(|p| p.into_inner()) = status;
    }

    /// The id of the agent's active trigger when `presented` is its token
    /// (a read; ingress checks this before spending rate budget).
    pub fn trigger_token_valid(
        &self,
        agent_id: &str,
        presented: &str,
    ) -> Result<Option<String>, RuntimeError> {
        let rx = self.inner.store.read()?;
        let records: Vec<ExternalTriggerRecord> = rx.list(Keyed::ExternalTriggers, agent_id)?;
        Ok(active_of(&records)
            .filter(|r| r.token_matches(presented))
            .map(|r| r.id().to_owned()))
    }

    /// The agent's trigger (provisioned on first ask) and what it did.
    pub async fn trigger_show(&self, agent_id: &str) -> Result<TriggerView, RuntimeError> {
        show(&self.inner.store, agent_id, self.ingress()).await
    }

    fn trigger_view(&self, agent_id: &str) -> Result<TriggerView, RuntimeError> {
        view_in(&self.inner.store.read()?, agent_id, self.ingress())
    }

    /// The URL for the agent's prompt: provisioned on first need, only
    /// while the listener is up (a URL nobody can reach is not offered).
    pub(crate) async fn trigger_url_for_prompt(
        &self,
        agent_id: &str,
    ) -> Result<Option<String>, RuntimeError> {
        let ingress = self.ingress();
        if ingress.base_url.is_none() {
            return Ok(None);
        }
        let id = agent_id.to_owned();
        let existing = {
            let rx = self.inner.store.read()?;
            let records: Vec<ExternalTriggerRecord> = rx.list(Keyed::ExternalTriggers, agent_id)?;
            if records.is_empty() {
                None
            } else {
                Some(active_of(&records).cloned())
            }
        };
        let active = match existing {
            Some(active) => active,
            None => {
                self.inner
                    .store
                    .write(move |tx| ensure_trigger_in(tx, &id))
                    .await?
            }
        };
        Ok(active.and_then(|r| ingress.trigger_url(agent_id, &r.token)))
    }

    /// Replace the active descriptor (or issue one after a revoke): the
    /// old URL stops working at once; the old record stays, `rotated`.
    pub async fn trigger_rotate(&self, agent_id: &str) -> Result<TriggerView, RuntimeError> {
        self.retire_trigger(agent_id, TriggerStatus::Rotated).await
    }

    /// Revoke the active descriptor (spec CancelExternalTrigger): its URL
    /// fails from now on and no new one is issued until a rotate.
    pub async fn trigger_revoke(&self, agent_id: &str) -> Result<TriggerView, RuntimeError> {
        self.retire_trigger(agent_id, TriggerStatus::Revoked).await
    }

    /// Retire the active descriptor as `to`; a rotation issues its
    /// successor in the same transaction.
    async fn retire_trigger(
        &self,
        agent_id: &str,
        to: TriggerStatus,
    ) -> Result<TriggerView, RuntimeError> {
        let id = agent_id.to_owned();
        self.inner
            .store
            .write(move |tx| {
                agent_in(tx, &id)?;
                let records: Vec<ExternalTriggerRecord> = tx.list(Keyed::ExternalTriggers, &id)?;
                let now = tx.now_ts();
                let fresh =
                    (to == TriggerStatus::Rotated).then(|| ExternalTriggerRecord::new(&id, &now));
                let retired = match active_of(&records).cloned() {
                    Some(mut old) => {
                        old.descriptor.status = to;
                        old.descriptor.replaced_by = fresh.as_ref().map(|f| f.id().to_owned());
                        old.descriptor.updated_at = now;
                        put_trigger(tx, &old)?;
                        Some(old.descriptor)
                    }
                    None if fresh.is_some() => None,
                    None => {
                        return Err(StoreError::rejected(RuntimeError::Invalid(format!(
                            "agent `{id}` has no active trigger to revoke"
                        ))))
                    }
                };
                let event = match (fresh, retired) {
                    (Some(fresh), previous) => {
                        put_trigger(tx, &fresh)?;
                        Event::ExternalTriggerRotated(ev::TriggerChanged {
                            trigger: fresh.descriptor,
                            previous,
                            by: "operator".into(),
                        })
                    }
                    (None, Some(revoked)) => Event::ExternalTriggerRevoked(ev::TriggerChanged {
                        trigger: revoked,
                        previous: None,
                        by: "operator".into(),
                    }),
                    (None, None) => return Ok(()),
                };
                record_change(tx, &id, event)
            })
            .await?;
        self.trigger_view(agent_id)
    }

    /// One delivery through the agent's active trigger. `token` is what
    /// the caller presented (HTTP ingress); `None` is an operator's
    /// delivery through the control socket, which provisions the trigger
    /// if the agent never had one.
    pub async fn trigger_deliver(
        &self,
        agent_id: &str,
        token: Option<String>,
        delivery: Delivery,
    ) -> Result<DeliveryReceipt, DeliveryError> {
        let meta = delivery
            .meta
            .clone()
            .checked()
            .map_err(DeliveryError::Invalid)?;
        let via = if token.is_some() {
            ev::DeliveryVia::Http
        } else {
            ev::DeliveryVia::Operator
        };
        let id = agent_id.to_owned();
        let result = self
            .inner
            .store
            .write(move |tx| {
                let Some(agent) = tx.get_agent::<AgentRecord>(&id)? else {
                    return Err(StoreError::rejected(not_found_or_unknown(&id, via)));
                };
                let active = match &token {
                    Some(presented) => {
                        let records: Vec<ExternalTriggerRecord> =
                            tx.list(Keyed::ExternalTriggers, &id)?;
                        match active_of(&records) {
                            Some(r) if r.token_matches(presented) => r.clone(),
                            _ => return Err(StoreError::rejected(DeliveryError::NotFound)),
                        }
                    }
                    None => ensure_trigger_in(tx, &id)?.ok_or_else(|| {
                        StoreError::rejected(DeliveryError::Invalid(format!(
                            "agent `{id}`'s trigger is revoked; `holon trigger rotate` issues a new one"
                        )))
                    })?,
                };
                deliver_in(tx, agent, active, &meta, &delivery, via)
            })
            .await;
        match result {
            Ok(receipt) => {
                self.wake(agent_id);
                Ok(receipt)
            }
            Err(StoreError::Rejected(inner)) => Err(match inner.downcast::<DeliveryError>() {
                Ok(d) => *d,
                Err(other) => DeliveryError::Runtime(StoreError::Rejected(other).into()),
            }),
            Err(e) => Err(DeliveryError::Runtime(e.into())),
        }
    }
}

fn not_found_or_unknown(agent_id: &str, via: ev::DeliveryVia) -> DeliveryError {
    match via {
        ev::DeliveryVia::Http => DeliveryError::NotFound,
        ev::DeliveryVia::Operator => DeliveryError::Runtime(RuntimeError::UnknownAgent {
            agent_id: agent_id.to_owned(),
        }),
    }
}

fn deliver_in(
    tx: &mut WriteCtx<'_>,
    agent: AgentRecord,
    mut trigger: ExternalTriggerRecord,
    meta: &DeliveryMeta,
    delivery: &Delivery,
    via: ev::DeliveryVia,
) -> Result<DeliveryReceipt, StoreError> {
    let id = agent.id.clone();
    let now = tx.now_ts();
    let waits: Vec<WaitingIntentRecord> = tx.list(Keyed::WaitingIntents, &id)?;
    let satisfied = satisfied_waits(&waits, trigger.id(), meta);
    let mut work_item_ids = Vec::new();
    for wait in waits.into_iter().filter(|w| satisfied.contains(&w.id)) {
        let mut wait = wait;
        wait.status = WaitingIntentStatus::Triggered;
        wait.trigger_count += 1;
        wait.updated_at = now.clone();
        tx.put(Keyed::WaitingIntents, &id, &wait.id, &wait)?;
        if let Some(w) = &wait.work_item_id {
            work_item_ids.push(w.clone());
        }
        let provenance = Provenance {
            work_item_id: wait.work_item_id.clone(),
            source: wait.source.clone(),
            ..Provenance::default()
        };
        let changed = ev::WaitingIntentChanged {
            waiting_intent: wait,
        };
        tx.append_event(new_event(
            &id,
            provenance,
            Event::WaitingIntentTriggered(changed),
        ))?;
    }
    let d = &mut trigger.descriptor;
    d.trigger_count += 1;
    d.last_triggered_at = Some(now.clone());
    d.updated_at = now;
    put_trigger(tx, &trigger)?;
    let d = &trigger.descriptor;
    let reason = match (&meta.summary, &meta.source) {
        (Some(s), _) => s.clone(),
        (None, Some(source)) => format!("external trigger from {source}"),
        (None, None) => "external trigger".to_owned(),
    };
    let source = meta.source.clone().or(Some("external_trigger".into()));
    let origin = crate::model::waiting::HintOrigin {
        external_trigger_id: Some(d.external_trigger_id.clone()),
        delivery_mode: serde_json::to_value(d.delivery_mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned)),
        resource: meta.resource.clone(),
        content_type: delivery.content_type.clone(),
        body_bytes: delivery.body_bytes,
        waiting_intent_ids: satisfied.clone(),
    };
    let outcome = wake_hint_in(
        tx,
        agent,
        &reason,
        source,
        satisfied.first().cloned(),
        origin,
    )?;
    let delivered = ev::TriggerDelivered {
        external_trigger_id: d.external_trigger_id.clone(),
        delivery_mode: d.delivery_mode,
        via,
        meta: meta.clone(),
        content_type: delivery.content_type.clone(),
        body_bytes: delivery.body_bytes,
        satisfied_waiting_intent_ids: satisfied.clone(),
        work_item_ids: work_item_ids.clone(),
        outcome,
        trigger_count: d.trigger_count,
    };
    let provenance = Provenance {
        source: meta.source.clone(),
        work_item_id: work_item_ids.first().cloned(),
        ..Provenance::default()
    };
    tx.append_event(new_event(
        &id,
        provenance,
        Event::ExternalTriggerDelivered(delivered),
    ))?;
    Ok(DeliveryReceipt {
        agent_id: id,
        external_trigger_id: d.external_trigger_id.clone(),
        outcome,
        satisfied_waiting_intent_ids: satisfied,
        trigger_count: d.trigger_count,
    })
}

/// `trigger.show`: the agent's trigger, provisioned on first ask, and what
/// it did, with where the listener stands (`ingress`). The offline client
/// answers it the same way, with no listener.
pub(crate) async fn show(
    store: &crate::store::Store,
    agent_id: &str,
    ingress: IngressStatus,
) -> Result<TriggerView, RuntimeError> {
    let id = agent_id.to_owned();
    let needs_write = {
        let rx = store.read()?;
        if rx.agent::<AgentRecord>(agent_id)?.is_none() {
            return Err(RuntimeError::UnknownAgent {
                agent_id: agent_id.to_owned(),
            });
        }
        rx.list::<ExternalTriggerRecord>(Keyed::ExternalTriggers, agent_id)?
            .is_empty()
    };
    if needs_write {
        store
            .write(move |tx| ensure_trigger_in(tx, &id).map(drop))
            .await?;
    }
    view_in(&store.read()?, agent_id, ingress)
}

/// The agent's trigger as one read snapshot holds it.
fn view_in(
    rx: &crate::store::ReadCtx,
    agent_id: &str,
    ingress: IngressStatus,
) -> Result<TriggerView, RuntimeError> {
    let mut records: Vec<ExternalTriggerRecord> = rx.list(Keyed::ExternalTriggers, agent_id)?;
    records.sort_by(|a, b| b.descriptor.created_at.cmp(&a.descriptor.created_at));
    let active = active_of(&records).cloned();
    let trigger_url = active
        .as_ref()
        .and_then(|r| ingress.trigger_url(agent_id, &r.token));
    let history = records
        .iter()
        .filter(|r| !r.is_active())
        .map(|r| r.descriptor.clone())
        .collect();
    let kind = ev::EventKind::ExternalTriggerDelivered.as_str();
    let mut recent_deliveries: Vec<RecentDelivery> = rx
        .events_of_kind_latest(agent_id, kind, RECENT_DELIVERIES)?
        .into_iter()
        .filter_map(|e| match e.event() {
            Event::ExternalTriggerDelivered(delivery) => Some(RecentDelivery {
                event_seq: e.event_seq,
                at: e.ts.clone(),
                delivery,
            }),
            _ => None,
        })
        .collect();
    recent_deliveries.reverse();
    let open_waits = rx
        .list::<WaitingIntentRecord>(Keyed::WaitingIntents, agent_id)?
        .into_iter()
        .filter(|w| w.status == WaitingIntentStatus::Active)
        .collect();
    Ok(TriggerView {
        agent_id: agent_id.to_owned(),
        trigger: active.map(|r| r.descriptor),
        trigger_url,
        ingress,
        history,
        recent_deliveries,
        open_waits,
    })
}
