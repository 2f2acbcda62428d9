//! Durable approvals: a gated tool call waits for the operator as a record
//! in the store, not a prompt in one terminal. It survives detach, attach
//! and restart; it is answered through the runtime (any console, the CLI,
//! a script over the socket), first answer wins.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    #[default]
    Pending,
    /// Approved; the call ran (or is running: `result_message_id` unset).
    Granted,
    Denied,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Granted => "granted",
            ApprovalStatus::Denied => "denied",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub id: String,
    pub agent_id: String,
    #[serde(default)]
    pub status: ApprovalStatus,
    pub tool_name: String,
    pub call_id: String,
    pub arguments: serde_json::Value,
    /// One line for lists: the command, or the files a patch writes.
    pub summary: String,
    /// Why the policy asks.
    pub why: String,
    /// Where the call would run when it was asked.
    pub workspace_id: String,
    pub execution_root: String,
    /// The turn and message the call came from.
    pub run_id: String,
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    pub requested_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<String>,
    /// The operator's note (a denial's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Approved with "always": the allow-list now covers calls like it.
    #[serde(default)]
    pub always: bool,
    /// The message that carried the outcome back to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_message_id: Option<String>,
}
