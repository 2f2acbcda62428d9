//! What a tool call returns (`ToolOutcome`) and the shared tool error
//! envelope (`ok: false`, tool_name, kind, message, hint, field,
//! retryable, bounded details). A leaf: the MCP servers' tools answer in it
//! too, without reaching into the built-in tools. Every call's outcome is
//! finished (`finish`) before anyone sees it: the envelope names its tool,
//! and details too large to echo become a preview with a digest.

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
    /// What the model is shown instead of `content` as JSON (a batch's
    /// grouped receipt); `content` stays the canonical, recorded result.
    pub model_text: Option<String>,
}

impl ToolOutcome {
    pub fn ok(content: Value) -> Self {
        ToolOutcome {
            content,
            is_error: false,
            ends_turn: false,
            completed_work_item: None,
            images: Vec::new(),
            model_text: None,
        }
    }

    /// The text the model is given for this call.
    pub fn text(&self) -> String {
        match &self.model_text {
            Some(text) => text.clone(),
            None => self.content.to_string(),
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

/// Details larger than this (as JSON text) are replaced by a preview and
/// a digest.
pub const MAX_DETAILS_BYTES: usize = 4096;
/// Characters of oversized details kept as their preview.
const DETAILS_PREVIEW_CHARS: usize = 1000;

/// Finish a call's outcome: an error envelope names its tool (`tool_name`,
/// unless the tool named itself) and its `details`, when they are too
/// large to echo, become `{preview, bytes, sha256}`.
pub fn finish(outcome: &mut ToolOutcome, tool_name: &str) {
    if !outcome.is_error {
        return;
    }
    let Some(obj) = outcome.content.as_object_mut() else {
        return;
    };
    if obj.get("ok") != Some(&Value::Bool(false)) {
        return;
    }
    obj.entry("tool_name")
        .or_insert_with(|| Value::String(tool_name.to_owned()));
    // The input field at fault, where only the details named it.
    let named = obj.get("details").and_then(|d| d.get("field")).cloned();
    if let Some(field) = named.filter(|f| f.is_string()) {
        if obj.get("field").is_none_or(Value::is_null) {
            obj.insert("field".into(), field);
        }
    }
    let Some(details) = obj.get_mut("details").filter(|d| !d.is_null()) else {
        return;
    };
    let text = details.to_string();
    if text.len() > MAX_DETAILS_BYTES {
        use sha2::{Digest, Sha256};
        let digest: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        *details = json!({
            "preview": text.chars().take(DETAILS_PREVIEW_CHARS).collect::<String>(),
            "bytes": text.len(),
            "sha256": digest,
        });
    }
}

/// The structured error of a finished outcome: its envelope, when it
/// failed with one.
pub fn error_of(outcome: &ToolOutcome) -> Option<Value> {
    let obj = outcome.content.as_object()?;
    (outcome.is_error && obj.get("ok") == Some(&Value::Bool(false)))
        .then(|| outcome.content.clone())
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
        ..ToolOutcome::ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_error_names_its_tool_and_bounds_its_details() {
        let mut o = tool_error(ToolErrorKind::Failed, "no", None, None, false);
        o.content["details"] = json!({"lines": "x".repeat(10_000)});
        finish(&mut o, "ExecCommand");
        assert_eq!(o.content["tool_name"], "ExecCommand");
        let d = &o.content["details"];
        assert_eq!(d["bytes"].as_u64(), Some(10_012));
        assert_eq!(d["sha256"].as_str().map(str::len), Some(64));
        assert_eq!(d["preview"].as_str().map(|p| p.chars().count()), Some(1000));
        assert_eq!(
            error_of(&o).map(|e| e["kind"].clone()),
            Some(json!("failed"))
        );

        // The field the details name becomes the envelope's.
        let mut field = tool_error(ToolErrorKind::InvalidArguments, "bad", None, None, false);
        field.content["details"] = json!({"field": "workdir"});
        finish(&mut field, "ExecCommand");
        assert_eq!(field.content["field"], "workdir");

        // A tool that named itself keeps its name; small details stay.
        let mut named = tool_error(ToolErrorKind::Conflict, "stale", None, None, false);
        named.content["tool_name"] = json!("ApplyPatch");
        named.content["details"] = json!({"hunk": 2});
        finish(&mut named, "other");
        assert_eq!(named.content["tool_name"], "ApplyPatch");
        assert_eq!(named.content["details"], json!({"hunk": 2}));

        // Not an error envelope: untouched.
        let mut ok = ToolOutcome::ok(json!({"ok": true}));
        finish(&mut ok, "Sleep");
        assert_eq!(ok.content, json!({"ok": true}));
        assert_eq!(error_of(&ok), None);
    }
}
