//! Queue entries: the mutable processing status of an admitted message.
//! Dequeue order is priority band first (interject, next, normal,
//! background), then admission order, stable within a band. On restart
//! `Queued` and `Dequeued` entries replay at the message level; the other
//! statuses never replay.

use serde::{Deserialize, Serialize};

use super::envelope::Priority;

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
