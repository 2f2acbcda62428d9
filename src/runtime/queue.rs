//! Queue entries: the mutable processing status of an admitted message.
//! Dequeue order is priority band first (interject, next, normal,
//! background), then admission order, stable within a band. On restart
//! `Queued` and `Dequeued` entries replay at the message level; the other
//! statuses never replay.

use serde::{Deserialize, Serialize};

use super::admission::provenance_of;
use super::envelope::MessageEnvelope;
use super::envelope::Priority;
use crate::protocol::events::{
    new_event, Event, MessageProcessingStarted, MessageSettled, SettleDetail,
};
use crate::store::{Index, Keyed, StoreError, WriteCtx};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueEntryStatus {
    Queued,
    Dequeued,
    Processed,
    Aborted,
    Interjected,
    Dropped,
}

impl QueueEntryStatus {
    /// Whether a message in this status is replayed after a restart.
    pub fn replays_on_restart(self) -> bool {
        match self {
            QueueEntryStatus::Queued | QueueEntryStatus::Dequeued => true,
            QueueEntryStatus::Processed
            | QueueEntryStatus::Aborted
            | QueueEntryStatus::Interjected
            | QueueEntryStatus::Dropped => false,
        }
    }

    pub fn is_pending(self) -> bool {
        self == QueueEntryStatus::Queued
    }
}

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
    let envelope: MessageEnvelope = tx
        .get(Keyed::Messages, agent_id, message_id)?
        .ok_or_else(missing)?;
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
}
