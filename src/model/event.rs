//! The ledger envelope of one runtime event: what the store appends and what
//! every subscriber and replay reader receives. Provenance travels beside
//! the payload so clients can index replayed records without parsing it.

use serde::{Deserialize, Serialize};

/// Replay provenance (runtime spec, Local Operator Console Contract): every
/// field that is known for the event's cause. Strings keep the store free of
/// runtime types; the runtime fills them from its typed envelope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authority_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_surface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<String>,
}

/// One appended event. `event_seq` is assigned by the writer inside the
/// commit that records the change; it is contiguous per agent from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub event_seq: u64,
    pub id: String,
    pub ts: String,
    pub kind: String,
    pub agent_id: String,
    #[serde(default)]
    pub provenance: Provenance,
    #[serde(default)]
    pub payload: serde_json::Value,
}

/// An event to append: everything but the sequence, id and timestamp, which
/// the writer assigns.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub agent_id: String,
    pub kind: &'static str,
    pub provenance: Provenance,
    pub payload: serde_json::Value,
}
