//! What `mcp.list` answers: each configured MCP server, where it is, the
//! tools it offers the model and the ones it had to leave out.

use serde::{Deserialize, Serialize};

/// One server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerInfo {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `idle` (not needed yet), `starting`, `running`, `failed` or
    /// `disabled`.
    pub state: String,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When a failed server is tried again, at the next need after this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_in_ms: Option<u64>,
    /// The tools the model is offered (as of the last turn that built a
    /// catalog).
    #[serde(default)]
    pub tools: Vec<McpToolInfo>,
    /// Tools left out, and why.
    #[serde(default)]
    pub dropped: Vec<McpDroppedTool>,
    /// The server's stderr log.
    pub log: String,
}

/// A tool the model is offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolInfo {
    /// The name the server knows it by.
    pub name: String,
    /// The name the model calls it by (`mcp__<server>__<tool>`).
    pub exposed: String,
    /// The server marks it read-only (`readOnlyHint`): `on_write` runs it
    /// without asking.
    pub read_only: bool,
}

/// A tool the model is not offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpDroppedTool {
    pub tool: String,
    pub reason: String,
}
