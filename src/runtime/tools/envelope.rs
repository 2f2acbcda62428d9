//! What a tool call returns (`ToolOutcome`) and the shared tool error
//! envelope (`ok: false`, kind, message, hint, field, retryable, bounded
//! details). A leaf: the MCP servers' tools answer in it too, without
//! reaching into the built-in tools.

use serde::Serialize;
use serde_json::{json, Value};

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub content: Value,
    pub is_error: bool,
    /// The turn should end after this round (Sleep).
    pub ends_turn: bool,
    /// A work item this call completed with a same-round report.
    pub completed_work_item: Option<String>,
    /// Images it returned (an MCP server's), beside `content`.
    pub images: Vec<crate::model::usage::ToolImage>,
}

impl ToolOutcome {
    pub fn ok(content: Value) -> Self {
        ToolOutcome {
            content,
            is_error: false,
            ends_turn: false,
            completed_work_item: None,
            images: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    InvalidArguments,
    NotFound,
    Conflict,
    Failed,
    UnknownTool,
}

/// The shared tool error envelope.
pub fn tool_error(
    kind: ToolErrorKind,
    message: impl Into<String>,
    hint: Option<&str>,
    field: Option<&str>,
    retryable: bool,
) -> ToolOutcome {
    let message: String = message.into();
    let bounded: String = message.chars().take(2000).collect();
    ToolOutcome {
        content: json!({
            "ok": false, "kind": kind, "message": bounded, "hint": hint, "field": field,
            "retryable": retryable, "details": Value::Null,
        }),
        is_error: true,
        images: Vec::new(),
        ends_turn: false,
        completed_work_item: None,
    }
}
