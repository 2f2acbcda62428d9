//! Approval payloads: a gated call asked about, granted or denied. What a
//! granted call did reaches the agent as the `internal_followup` message
//! the record's `result_message_id` names.

use serde::{Deserialize, Serialize};

use crate::model::approval::ApprovalRecord;
/// `default_policy_changed`: the runtime's default policy, after the
/// operator set it (`holon policy`) or returned it to config `[policy]`.
pub use crate::model::approval::DefaultPolicy;

/// `workspace_policy_changed`: a workspace's approval policy was set (or
/// returned to the runtime's: `source` says which applies now).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspacePolicyChanged {
    pub workspace_id: String,
    /// The policy in effect for the workspace now ("always" rules
    /// included).
    pub policy: crate::model::approval::ApprovalPolicy,
    pub source: crate::model::workspace::PolicySource,
    /// What the operator allowed there by answering "always" (already in
    /// `policy`): kept over whichever policy is in force.
    #[serde(
        default,
        skip_serializing_if = "crate::model::approval::AlwaysAllowed::is_empty"
    )]
    pub always: crate::model::approval::AlwaysAllowed,
}

/// `approval_requested`, `approval_granted`, `approval_denied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalChanged {
    /// The record after the change.
    pub approval: ApprovalRecord,
}
