//! The admission boundary: turning an `AdmissionRequest` into a durable
//! `Queued` message in one transaction (the `message_admitted` event, the
//! envelope's one copy; the queue entry that records its `admitted_seq`;
//! the dequeue index), and making sure
//! agents exist. A stopped agent refuses external admission with resume
//! guidance, and the refusal itself is recorded as `message_rejected`.

use crate::protocol::views::Admitted;

use crate::runtime::agent::agent_in;

use super::queue::{provenance_of, QueueEntry};
use super::RuntimeError;
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::event::Provenance;
use crate::model::ids::validate_agent_id;
use crate::model::message::QueueEntryStatus;
use crate::model::message::{normalize, AdmissionRequest};
use crate::protocol::events::{new_event, AgentCreated, Event, MessageAdmitted, MessageRejected};
use crate::store::{Keyed, Store, StoreError, WriteCtx};

/// Create the default agent if it does not exist (recording
/// `agent_created`, kind `default`) and return its record. Other agents are
/// created by name (`RuntimeHost::create_named_agent`).
pub async fn ensure_agent(store: &Store, agent_id: &str) -> Result<AgentRecord, RuntimeError> {
    validate_agent_id(agent_id).map_err(RuntimeError::InvalidAgentId)?;
    let id = agent_id.to_owned();
    let record = store.write(move |tx| ensure_agent_in(tx, &id)).await?;
    Ok(record)
}

pub(crate) fn ensure_agent_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
) -> Result<AgentRecord, StoreError> {
    if let Some(existing) = tx.get_agent::<AgentRecord>(agent_id)? {
        return Ok(existing);
    }
    let mut record = AgentRecord::new(agent_id, tx.now_ts());
    record.kind = crate::model::agent::AgentKind::Default;
    create_agent_in(tx, &record, None)?;
    Ok(record)
}

/// The refusal of an agent id that is taken.
pub(crate) fn agent_exists(id: &str) -> RuntimeError {
    RuntimeError::Invalid(format!(
        "agent `{id}` already exists; choose another id (`holon agent list` shows them)"
    ))
}

/// Record an agent's creation: its record and `agent_created` with the
/// template provenance. Refused when the id is taken.
pub(crate) fn create_agent_in(
    tx: &mut WriteCtx<'_>,
    record: &AgentRecord,
    template: Option<crate::model::agent::TemplateProvenance>,
) -> Result<(), StoreError> {
    if tx.get_agent::<AgentRecord>(&record.id)?.is_some() {
        return Err(StoreError::rejected(agent_exists(&record.id)));
    }
    tx.put_agent(&record.id, record)?;
    let created = AgentCreated {
        agent: record.clone(),
        template,
    };
    tx.append_event(new_event(
        &record.id,
        Provenance::default(),
        Event::AgentCreated(created),
    ))?;
    Ok(())
}

pub(crate) enum Outcome {
    Admitted(Admitted),
    Rejected { status: AgentStatus },
}

/// Admit one message. Acknowledged only after its durable commit.
pub async fn admit(store: &Store, req: AdmissionRequest) -> Result<Admitted, RuntimeError> {
    admit_once(store, req, None).await
}

/// The key under which a client's request id is remembered.
pub(crate) fn client_request_key(method: &str, request_id: &str) -> String {
    format!("{method}:{request_id}")
}

/// `admit`, once per client `request_id`: a retried request (same id) gets
/// the first answer back and admits nothing new. The id and the admission
/// are written in the same transaction.
pub async fn admit_once(
    store: &Store,
    req: AdmissionRequest,
    request_id: Option<String>,
) -> Result<Admitted, RuntimeError> {
    let mut answers = admit_many(store, vec![(req, request_id)]).await?;
    answers
        .pop()
        .unwrap_or_else(|| Err(RuntimeError::Invalid("nothing was admitted".into())))
}

/// Admit several messages in one transaction, in the order given (a
/// client's pipelined burst shares one commit), each answered as
/// `admit_once` would answer it: an unknown or stopped agent refuses its
/// own message, not the others. An error of the store fails them all.
pub async fn admit_many(
    store: &Store,
    reqs: Vec<(AdmissionRequest, Option<String>)>,
) -> Result<Vec<Result<Admitted, RuntimeError>>, RuntimeError> {
    /// One message's fate inside the transaction.
    enum One {
        Done(Outcome),
        Unknown,
    }
    let mut answers: Vec<Option<Result<Admitted, RuntimeError>>> = Vec::with_capacity(reqs.len());
    let mut jobs = Vec::with_capacity(reqs.len());
    for (i, (req, request_id)) in reqs.into_iter().enumerate() {
        match validate_agent_id(&req.agent_id) {
            Ok(()) => {
                answers.push(None);
                jobs.push((i, req, request_id, crate::new_id("msg")));
            }
            Err(e) => answers.push(Some(Err(RuntimeError::InvalidAgentId(e)))),
        }
    }
    if jobs.is_empty() {
        return Ok(answers.into_iter().flatten().collect());
    }
    let batch = jobs.clone();
    let outcomes = store
        .write(move |tx| {
            let mut out = Vec::with_capacity(batch.len());
            for (_, req, request_id, message_id) in &batch {
                let agent_id = &req.agent_id;
                if tx.get_agent::<AgentRecord>(agent_id)?.is_none() {
                    out.push(One::Unknown);
                    continue;
                }
                let key = request_id
                    .as_deref()
                    .map(|r| client_request_key("prompt.submit", r));
                if let Some(key) = &key {
                    if let Some(first) = tx.get::<Admitted>(Keyed::ClientRequests, agent_id, key)? {
                        out.push(One::Done(Outcome::Admitted(first)));
                        continue;
                    }
                }
                let outcome = admit_in(tx, req.clone(), message_id)?;
                if let (Some(key), Outcome::Admitted(a)) = (&key, &outcome) {
                    tx.put(Keyed::ClientRequests, agent_id, key, a)?;
                }
                out.push(One::Done(outcome));
            }
            Ok(out)
        })
        .await?;
    for ((i, req, _, _), one) in jobs.into_iter().zip(outcomes) {
        let agent_id = req.agent_id;
        answers[i] = Some(match one {
            One::Done(Outcome::Admitted(a)) => Ok(a),
            One::Done(Outcome::Rejected { status }) => Err(RuntimeError::AgentStopped {
                agent_id,
                status: status.as_str(),
            }),
            One::Unknown => Err(RuntimeError::UnknownAgent { agent_id }),
        });
    }
    Ok(answers.into_iter().flatten().collect())
}

pub(crate) fn admit_in(
    tx: &mut WriteCtx<'_>,
    req: AdmissionRequest,
    message_id: &str,
) -> Result<Outcome, StoreError> {
    let agent_id = req.agent_id.clone();
    let agent: AgentRecord = agent_in(tx, &agent_id)?;
    let envelope = normalize(req, message_id.to_owned(), tx.now_ts());
    if agent.status == AgentStatus::Stopped {
        let rejected = MessageRejected {
            message_id: envelope.id.clone(),
            reason: "agent_stopped".into(),
            hint: "the agent is stopped: resume it first (`/resume` or the resume control); wake does not cross stopped".into(),
            kind: envelope.kind,
            body_preview: envelope.body.preview(120),
        };
        tx.append_event(new_event(
            &agent_id,
            provenance_of(&envelope),
            Event::MessageRejected(rejected),
        ))?;
        return Ok(Outcome::Rejected {
            status: agent.status,
        });
    }
    let admission_seq = tx.next_counter(&agent_id, "admission_seq")?;
    let mut entry = QueueEntry {
        message_id: envelope.id.clone(),
        agent_id: agent_id.clone(),
        priority: envelope.priority,
        status: QueueEntryStatus::Queued,
        admission_seq,
        enqueued_at: envelope.created_at.clone(),
        updated_at: envelope.created_at.clone(),
        admitted_seq: None,
    };
    let (message_id, priority) = (envelope.id.clone(), envelope.priority);
    let provenance = provenance_of(&envelope);
    // The envelope's one stored copy is this event; the entry points at it.
    let event_seq = tx.append_event(new_event(
        &agent_id,
        provenance,
        Event::MessageAdmitted(MessageAdmitted {
            message: envelope,
            queue_status: QueueEntryStatus::Queued,
            admission_seq,
        }),
    ))?;
    entry.admitted_seq = Some(event_seq);
    tx.put(Keyed::QueueEntries, &agent_id, &message_id, &entry)?;
    tx.queue_push(&agent_id, priority.band(), admission_seq, &message_id)?;
    Ok(Outcome::Admitted(Admitted {
        message_id,
        agent_id,
        event_seq,
        admission_seq,
        queue_status: QueueEntryStatus::Queued,
        priority,
    }))
}
