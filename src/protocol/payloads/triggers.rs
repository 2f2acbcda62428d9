//! External trigger payloads: a descriptor provisioned, rotated or revoked
//! (never its token), and a delivery with its provenance and what it did.

use serde::{Deserialize, Serialize};

use crate::model::trigger::{DeliveryMeta, DeliveryMode, TriggerDescriptor};
use crate::protocol::views::WakeHintOutcome;

/// `external_trigger_provisioned`, `external_trigger_rotated`,
/// `external_trigger_revoked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerChanged {
    /// The descriptor after the change (the new one for a rotation).
    pub trigger: TriggerDescriptor,
    /// The descriptor it replaced (a rotation), kept for audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<TriggerDescriptor>,
    /// Who asked: `operator`, `runtime`.
    #[serde(default)]
    pub by: String,
}

/// Where a delivery came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryVia {
    /// `POST` to the trigger URL.
    #[default]
    Http,
    /// `holon trigger deliver` (or `trigger.deliver`) from an operator.
    Operator,
}

/// `external_trigger_delivered`: one accepted delivery. The body is never
/// kept or shown to the agent as a message; only its metadata is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerDelivered {
    pub external_trigger_id: String,
    #[serde(default)]
    pub delivery_mode: DeliveryMode,
    #[serde(default)]
    pub via: DeliveryVia,
    /// `source`, `resource`, `summary` as the delivery named them.
    #[serde(flatten)]
    pub meta: DeliveryMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default)]
    pub body_bytes: u64,
    /// The waits this delivery satisfied (empty: a liveness signal only).
    #[serde(default)]
    pub satisfied_waiting_intent_ids: Vec<String>,
    /// The work items those waits are bound to.
    #[serde(default)]
    pub work_item_ids: Vec<String>,
    /// What became of the wake hint: submitted, coalesced into one
    /// pending, or ignored (the agent is stopped).
    pub outcome: WakeHintOutcome,
    /// The descriptor's delivery count after this one.
    #[serde(default)]
    pub trigger_count: u64,
}
