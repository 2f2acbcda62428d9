//! The transcript ledger: what the model saw and did, turn by turn — the
//! inputs it was given, its assistant rounds with tool calls, the tool
//! results, and runtime failures. Turns rebuild their conversation from
//! the recent transcript, repairing pairs cut by the window or by a crash so
//! that every tool call reaches the provider with exactly one result. A call
//! recorded without a result (the runtime died while running it) is shown
//! to the model as "not executed": recovery never re-executes a recorded
//! call by itself.

use serde::{Deserialize, Serialize};

use super::provider::{ConversationItem, ProviderAttemptTimeline, TokenUsage, ToolCall};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    pub id: String,
    pub agent_id: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    pub ts: String,
    #[serde(flatten)]
    pub body: TranscriptBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TranscriptBody {
    /// A message given to the model, rendered with its provenance.
    Input { text: String },
    AssistantRound {
        round: u32,
        text: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_usage: Option<TokenUsage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeline: Option<ProviderAttemptTimeline>,
    },
    ToolResult {
        call_id: String,
        tool_name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
    RuntimeFailure {
        summary: String,
        #[serde(default)]
        failure_artifact: serde_json::Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeline: Option<ProviderAttemptTimeline>,
    },
}

pub const NOT_EXECUTED: &str =
    "not executed: the runtime stopped before this call ran. Inspect the current \
                                state before deciding whether to call it again.";

/// Turn transcript entries into a provider conversation where every tool
/// call has exactly one result and every result follows its call.
pub fn conversation(entries: &[TranscriptEntry]) -> Vec<ConversationItem> {
    let mut out: Vec<ConversationItem> = Vec::new();
    // Calls of the latest assistant round still waiting for their results.
    let mut open: Vec<(String, String)> = Vec::new();
    let close_open = |out: &mut Vec<ConversationItem>, open: &mut Vec<(String, String)>| {
        for (call_id, tool_name) in open.drain(..) {
            out.push(ConversationItem::ToolResult {
                call_id,
                tool_name,
                content: NOT_EXECUTED.to_owned(),
                is_error: true,
            });
        }
    };
    for e in entries {
        match &e.body {
            TranscriptBody::Input { text } => {
                close_open(&mut out, &mut open);
                out.push(ConversationItem::UserText { text: text.clone() });
            }
            TranscriptBody::AssistantRound {
                text, tool_calls, ..
            } => {
                close_open(&mut out, &mut open);
                open = tool_calls
                    .iter()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
                out.push(ConversationItem::AssistantRound {
                    text: text.clone(),
                    tool_calls: tool_calls.clone(),
                });
            }
            TranscriptBody::ToolResult {
                call_id,
                tool_name,
                content,
                is_error,
            } => {
                // A result whose call fell outside the window is dropped.
                if let Some(pos) = open.iter().position(|(id, _)| id == call_id) {
                    open.remove(pos);
                    out.push(ConversationItem::ToolResult {
                        call_id: call_id.clone(),
                        tool_name: tool_name.clone(),
                        content: content.clone(),
                        is_error: *is_error,
                    });
                }
            }
            TranscriptBody::RuntimeFailure { summary, .. } => {
                close_open(&mut out, &mut open);
                out.push(ConversationItem::UserText {
                    text: format!("[runtime] the previous turn failed: {summary}"),
                });
            }
        }
    }
    close_open(&mut out, &mut open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(body: TranscriptBody) -> TranscriptEntry {
        TranscriptEntry {
            id: crate::new_id("tr"),
            agent_id: "main".into(),
            run_id: "run_1".into(),
            message_id: None,
            ts: "t".into(),
            body,
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "ExecCommand".into(),
            arguments: serde_json::json!({}),
            malformed_arguments: None,
        }
    }

    fn result(id: &str) -> TranscriptBody {
        TranscriptBody::ToolResult {
            call_id: id.into(),
            tool_name: "ExecCommand".into(),
            content: "ok".into(),
            is_error: false,
        }
    }

    #[test]
    fn every_call_gets_exactly_one_result() {
        let entries = vec![
            entry(result("orphan")),
            entry(TranscriptBody::Input { text: "hi".into() }),
            entry(TranscriptBody::AssistantRound {
                round: 1,
                text: String::new(),
                tool_calls: vec![call("a"), call("b")],
                token_usage: None,
                timeline: None,
            }),
            entry(result("a")),
            entry(result("a")),
        ];
        let conv = conversation(&entries);
        let results: Vec<(&str, &str)> = conv
            .iter()
            .filter_map(|i| match i {
                ConversationItem::ToolResult {
                    call_id, content, ..
                } => Some((call_id.as_str(), content.as_str())),
                ConversationItem::UserText { .. } | ConversationItem::AssistantRound { .. } => None,
            })
            .collect();
        assert_eq!(results, vec![("a", "ok"), ("b", NOT_EXECUTED)]);
        assert!(
            matches!(conv.first(), Some(ConversationItem::UserText { .. })),
            "orphan result dropped"
        );
    }
}
