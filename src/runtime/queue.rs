//! Queue entries: the mutable processing status of an admitted message.
//! Dequeue order is priority band first (interject, next, normal,
//! background), then admission order, stable within a band. On restart
//! `Queued` and `Dequeued` entries replay at the message level; the other
//! statuses never replay.

use crate::model::message::QueueEntryStatus;

use serde::{Deserialize, Serialize};

use crate::model::event::{EventRecord, Provenance};
use crate::model::message::MessageEnvelope;
use crate::model::message::Priority;
use crate::protocol::events::{
    new_event, Event, MessageProcessingStarted, MessageSettled, SettleDetail,
};
use crate::protocol::wire_name;
use crate::store::{Index, Keyed, StoreError, WriteCtx};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueEntry {
    pub message_id: String,
    pub agent_id: String,
    pub priority: Priority,
    pub status: QueueEntryStatus,
    /// Per-agent admission order; the tie-breaker within a priority band.
    pub admission_seq: u64,
    pub enqueued_at: String,
    pub updated_at: String,
    /// The `event_seq` of the message's `message_admitted` event, which
    /// holds its envelope: the envelope is stored once, in the ledger.
    /// `None` for entries admitted before 2026-11-24, whose envelope is a
    /// row of the `messages` table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_seq: Option<u64>,
}

/// A message's envelope, from the `message_admitted` event its entry
/// points at, or for an older entry from the `messages` table. `event`
/// reads the event at a seq; `legacy` the table row.
pub(crate) fn envelope_of(
    entry: &QueueEntry,
    event: impl FnOnce(u64) -> Result<Option<EventRecord>, StoreError>,
    legacy: impl FnOnce() -> Result<Option<MessageEnvelope>, StoreError>,
) -> Result<Option<MessageEnvelope>, StoreError> {
    let Some(seq) = entry.admitted_seq else {
        return legacy();
    };
    match event(seq)?.map(|e| e.event()) {
        Some(Event::MessageAdmitted(admitted)) if admitted.message.id == entry.message_id => {
            Ok(Some(admitted.message))
        }
        Some(_) => Err(StoreError::Storage(format!(
            "event {}/{seq} is not the admission of message {}",
            entry.agent_id, entry.message_id
        ))),
        None => Ok(None),
    }
}

/// The envelope of a message whose entry a write job holds.
pub(crate) fn envelope_in(
    tx: &WriteCtx<'_>,
    entry: &QueueEntry,
) -> Result<Option<MessageEnvelope>, StoreError> {
    let (agent_id, id) = (entry.agent_id.as_str(), entry.message_id.as_str());
    envelope_of(
        entry,
        |seq| tx.event_at(agent_id, seq),
        || tx.get(Keyed::Messages, agent_id, id),
    )
}

fn load_entry(
    tx: &WriteCtx<'_>,
    agent_id: &str,
    message_id: &str,
) -> Result<(QueueEntry, MessageEnvelope), StoreError> {
    let missing = || StoreError::Storage(format!("queue entry {agent_id}/{message_id} is missing"));
    let entry: QueueEntry = tx
        .get(Keyed::QueueEntries, agent_id, message_id)?
        .ok_or_else(missing)?;
    let envelope = envelope_in(tx, &entry)?.ok_or_else(missing)?;
    Ok((entry, envelope))
}

/// `Queued` -> `Dequeued` (a replayed `Dequeued` entry stays as it is),
/// recording `message_processing_started`. Returns the envelope.
pub(crate) fn dequeue_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    message_id: &str,
) -> Result<MessageEnvelope, StoreError> {
    let (mut entry, envelope) = load_entry(tx, agent_id, message_id)?;
    let replay = entry.status == QueueEntryStatus::Dequeued;
    if entry.status == QueueEntryStatus::Queued {
        tx.queue_remove(agent_id, entry.priority.band(), entry.admission_seq)?;
        tx.index_insert(Index::Dequeued, agent_id, message_id)?;
        entry.status = QueueEntryStatus::Dequeued;
        entry.updated_at = tx.now_ts();
        tx.put(Keyed::QueueEntries, agent_id, message_id, &entry)?;
    }
    let started = MessageProcessingStarted {
        message_id: message_id.to_owned(),
        kind: envelope.kind,
        priority: envelope.priority,
        replay,
        queue_status: entry.status,
    };
    tx.append_event(new_event(
        agent_id,
        provenance_of(&envelope),
        Event::MessageProcessingStarted(started),
    ))?;
    Ok(envelope)
}

/// Move a message to a final status (`Processed`, `Aborted`, `Interjected`
/// or `Dropped`) with its event. From `Queued` or `Dequeued`.
pub(crate) fn settle_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    message_id: &str,
    status: QueueEntryStatus,
    detail: SettleDetail,
) -> Result<(), StoreError> {
    let (mut entry, envelope) = load_entry(tx, agent_id, message_id)?;
    let event: fn(MessageSettled) -> Event = match status {
        QueueEntryStatus::Processed => Event::MessageProcessed,
        QueueEntryStatus::Aborted => Event::MessageAborted,
        QueueEntryStatus::Interjected => Event::MessageInterjected,
        QueueEntryStatus::Dropped => Event::MessageDropped,
        QueueEntryStatus::Queued | QueueEntryStatus::Dequeued => {
            return Err(StoreError::Storage(format!(
                "{status:?} is not a final queue status"
            )))
        }
    };
    match entry.status {
        QueueEntryStatus::Queued => {
            tx.queue_remove(agent_id, entry.priority.band(), entry.admission_seq)?;
        }
        QueueEntryStatus::Dequeued => {
            tx.index_remove(Index::Dequeued, agent_id, message_id)?;
        }
        QueueEntryStatus::Processed
        | QueueEntryStatus::Aborted
        | QueueEntryStatus::Interjected
        | QueueEntryStatus::Dropped => return Ok(()),
    }
    let from = entry.status;
    entry.status = status;
    entry.updated_at = tx.now_ts();
    tx.put(Keyed::QueueEntries, agent_id, message_id, &entry)?;
    let settled = MessageSettled {
        message_id: message_id.to_owned(),
        from,
        queue_status: status,
        detail,
    };
    tx.append_event(new_event(
        agent_id,
        provenance_of(&envelope),
        event(settled),
    ))?;
    Ok(())
}

/// Event provenance carried from a message envelope.
pub fn provenance_of(env: &MessageEnvelope) -> Provenance {
    Provenance {
        origin: Some(env.origin.label().to_owned()),
        trust: wire_name(&env.trust),
        authority_class: wire_name(&env.authority_class),
        delivery_surface: env.delivery_surface.as_ref().and_then(wire_name),
        admission_context: env.admission_context.as_ref().and_then(wire_name),
        source: None,
        message_id: Some(env.id.clone()),
        task_id: env.task_id.clone(),
        work_item_id: env.work_item_id.clone(),
        correlation_id: env.correlation_id.clone(),
        causation_id: env.causation_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_classification_matches_the_contract() {
        use QueueEntryStatus::*;
        let replayed: Vec<_> = [Queued, Dequeued, Processed, Aborted, Interjected, Dropped]
            .into_iter()
            .filter(|s| s.replays_on_restart())
            .collect();
        assert_eq!(replayed, vec![Queued, Dequeued]);
    }

    /// An envelope is stored once, in its admission event, and found there
    /// whether that event is still a row or sealed into a block; an entry
    /// admitted before that (envelope in `messages`) still finds its own.
    #[tokio::test]
    async fn an_envelope_is_stored_once_and_older_entries_still_find_theirs() {
        use crate::model::message::{normalize, AdmissionRequest, DeliverySurface};
        let dir = tempfile::tempdir().unwrap();
        let store =
            crate::store::Store::open(&dir.path().join("s.redb"), Default::default()).unwrap();
        crate::runtime::admission::ensure_agent(&store, "a")
            .await
            .unwrap();
        let prompt = |i: usize| {
            AdmissionRequest::operator_prompt(
                "a",
                &format!("prompt {i}: look at the failing build and report what broke"),
                Priority::Normal,
                DeliverySurface::CliPrompt,
            )
        };
        let mut ids = Vec::new();
        for i in 0..300 {
            let a = crate::runtime::admission::admit(&store, prompt(i))
                .await
                .unwrap();
            ids.push(a.message_id);
        }
        // As a store written before 2026-11-24 left it: the envelope in
        // `messages`, an entry without `admitted_seq`.
        let legacy = store
            .write(move |tx| {
                let env = normalize(prompt(300), "msg_legacy".into(), tx.now_ts());
                let entry = QueueEntry {
                    message_id: env.id.clone(),
                    agent_id: "a".into(),
                    priority: env.priority,
                    status: QueueEntryStatus::Queued,
                    admission_seq: 1_000,
                    enqueued_at: env.created_at.clone(),
                    updated_at: env.created_at.clone(),
                    admitted_seq: None,
                };
                tx.put(Keyed::Messages, "a", &env.id, &env)?;
                tx.put(Keyed::QueueEntries, "a", &env.id, &entry)?;
                tx.queue_push("a", env.priority.band(), 1_000, &env.id)?;
                Ok(env.id)
            })
            .await
            .unwrap();
        ids.push(legacy);
        let rx = store.read().unwrap();
        assert_eq!(rx.count(Keyed::Messages, "a").unwrap_or(0), 1);
        // The read path, all at once.
        let entries: Vec<QueueEntry> = ids
            .iter()
            .map(|id| {
                rx.get(Keyed::QueueEntries, "a", id)
                    .unwrap()
                    .unwrap_or_else(|| panic!("no entry {id}"))
            })
            .collect();
        let envelopes = crate::runtime::projection::envelopes_of(&rx, "a", &entries).unwrap();
        let got: Vec<&str> = envelopes.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(got, ids.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(envelopes[7].body.preview(200).contains("prompt 7:"));
        drop(rx);
        // The write path: each dequeue reads its envelope.
        let want = ids.clone();
        store
            .write(move |tx| {
                for (i, id) in want.iter().enumerate() {
                    let env = dequeue_in(tx, "a", id)?;
                    assert_eq!(&env.id, id);
                    assert!(env.body.preview(200).contains(&format!("prompt {i}:")));
                }
                Ok(())
            })
            .await
            .unwrap();
    }
}
