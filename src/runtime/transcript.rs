//! The transcript ledger: what the model saw and did, turn by turn — the
//! inputs it was given, its assistant rounds with tool calls, the tool
//! results, and runtime failures. Turns rebuild their conversation from
//! the recent transcript, repairing pairs cut by the window or by a crash so
//! that every tool call reaches the provider with exactly one result. A
//! call is recorded as started (a durable `ToolStarted`) just before it
//! runs, so after a crash the model is told the truth: a call that never
//! started is "not executed", one that started but left no result is
//! "started, outcome unknown" (it may have had its effects). Recovery never
//! re-executes a recorded call by itself.

use crate::model::transcript::{TranscriptBody, TranscriptEntry};

use crate::model::usage::ConversationItem;

pub const NOT_EXECUTED: &str =
    "not executed: the runtime stopped before this call ran. Inspect the current \
                                state before deciding whether to call it again.";

/// What the model is told about a call that started but left no result.
pub fn started_outcome_unknown(started_at: &str) -> String {
    format!(
        "started, outcome unknown: the runtime stopped while this call was running (started at \
         {started_at}). It may have had its effects: inspect the current state, and the result \
         of any task it started (delivered separately), before calling it again."
    )
}

/// A call of the latest assistant round still waiting for its result, and
/// when it started (if it did).
struct OpenCall {
    call_id: String,
    tool_name: String,
    started_at: Option<String>,
}

fn close_open(out: &mut Vec<ConversationItem>, open: &mut Vec<OpenCall>) {
    for call in open.drain(..) {
        let content = match &call.started_at {
            Some(at) => started_outcome_unknown(at),
            None => NOT_EXECUTED.to_owned(),
        };
        out.push(ConversationItem::ToolResult {
            call_id: call.call_id,
            tool_name: call.tool_name,
            content,
            is_error: true,
            images: Vec::new(),
        });
    }
}

/// Turn transcript entries into a provider conversation where every tool
/// call has exactly one result and every result follows its call.
pub fn conversation(entries: &[TranscriptEntry]) -> Vec<ConversationItem> {
    let mut out: Vec<ConversationItem> = Vec::new();
    let mut open: Vec<OpenCall> = Vec::new();
    for e in entries {
        match &e.body {
            TranscriptBody::Input { text } => {
                close_open(&mut out, &mut open);
                out.push(ConversationItem::UserText { text: text.clone() });
            }
            TranscriptBody::AssistantRound {
                reasoning,
                text,
                tool_calls,
                ..
            } => {
                close_open(&mut out, &mut open);
                open = tool_calls
                    .iter()
                    .map(|c| OpenCall {
                        call_id: c.id.clone(),
                        tool_name: c.name.clone(),
                        started_at: None,
                    })
                    .collect();
                out.push(ConversationItem::AssistantRound {
                    reasoning: reasoning.clone(),
                    text: text.clone(),
                    tool_calls: tool_calls.clone(),
                });
            }
            TranscriptBody::ToolResult {
                call_id,
                tool_name,
                content,
                is_error,
                images,
                ..
            } => {
                // A result whose call fell outside the window is dropped.
                if let Some(pos) = open.iter().position(|c| &c.call_id == call_id) {
                    open.remove(pos);
                    out.push(ConversationItem::ToolResult {
                        call_id: call_id.clone(),
                        tool_name: tool_name.clone(),
                        content: content.clone(),
                        is_error: *is_error,
                        images: images.clone(),
                    });
                }
            }
            TranscriptBody::ToolStarted {
                call_id,
                started_at,
                ..
            } => {
                if let Some(call) = open.iter_mut().find(|c| &c.call_id == call_id) {
                    call.started_at = Some(started_at.clone());
                }
            }
            TranscriptBody::RuntimeFailure { summary, .. } => {
                close_open(&mut out, &mut open);
                out.push(ConversationItem::UserText {
                    text: format!("[runtime] the previous turn failed: {summary}"),
                });
            }
            TranscriptBody::TurnCut {
                reason,
                partial_answer,
            } => {
                close_open(&mut out, &mut open);
                // What the model had said when it was cut off, so the
                // operator's next words can refer to it.
                if let Some(text) = partial_answer.as_ref().filter(|t| !t.trim().is_empty()) {
                    out.push(ConversationItem::AssistantRound {
                        reasoning: Vec::new(),
                        text: text.clone(),
                        tool_calls: Vec::new(),
                    });
                }
                out.push(ConversationItem::UserText {
                    text: format!(
                        "[runtime] the previous turn was cut off before it finished: {reason}"
                    ),
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
    use crate::model::usage::ToolCall;

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

    /// A first round with no text that calls `ids`.
    fn calling(ids: &[&str]) -> TranscriptBody {
        TranscriptBody::AssistantRound {
            input_tokens: None,
            output_tokens: None,
            reasoning: Vec::new(),
            round: 1,
            text: String::new(),
            tool_calls: ids.iter().map(|id| call(id)).collect(),
            token_usage: None,
            timeline: None,
        }
    }

    fn result(id: &str) -> TranscriptBody {
        TranscriptBody::ToolResult {
            call_id: id.into(),
            tool_name: "ExecCommand".into(),
            content: "ok".into(),
            is_error: false,
            images: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn a_results_images_are_kept_and_older_rows_have_none() {
        let image = crate::model::usage::ToolImage {
            mime_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let mut with = result("a");
        if let TranscriptBody::ToolResult { images, .. } = &mut with {
            images.push(image.clone());
        }
        let stored = serde_json::to_string(&with).unwrap();
        let read: TranscriptBody = serde_json::from_str(&stored).unwrap();
        let entries = vec![entry(calling(&["a"])), entry(read)];
        let conv = conversation(&entries);
        assert!(
            matches!(&conv[1], ConversationItem::ToolResult { images, .. } if images == &[image])
        );
        // A row written before images were kept reads as having none.
        let old = serde_json::to_string(&result("a")).unwrap();
        assert!(!old.contains("images"), "{old}");
        assert!(matches!(
            serde_json::from_str(&old).unwrap(),
            TranscriptBody::ToolResult { images, .. } if images.is_empty()
        ));
    }

    #[test]
    fn a_turn_cut_off_gives_the_model_what_it_said_and_that_it_was_cut() {
        let cut = |partial: Option<&str>| {
            let entries = vec![
                entry(TranscriptBody::Input {
                    text: "explain".into(),
                }),
                entry(calling(&["a"])),
                entry(TranscriptBody::TurnCut {
                    reason: "aborted by the operator".into(),
                    partial_answer: partial.map(str::to_owned),
                }),
            ];
            conversation(&entries)
        };
        let notice = ConversationItem::UserText {
            text: "[runtime] the previous turn was cut off before it finished: aborted by the operator".into(),
        };
        let said = cut(Some("The loop reads"));
        // The call it was running gets its result first (never run).
        assert!(matches!(&said[2], ConversationItem::ToolResult { call_id, .. } if call_id == "a"));
        assert_eq!(
            said[3..],
            [
                ConversationItem::AssistantRound {
                    reasoning: Vec::new(),
                    text: "The loop reads".into(),
                    tool_calls: Vec::new(),
                },
                notice.clone(),
            ]
        );
        // Nothing, or only blanks, streamed: no empty assistant message.
        assert_eq!(cut(None)[3..], *std::slice::from_ref(&notice));
        assert_eq!(cut(Some(" \n"))[3..], [notice]);
    }

    #[test]
    fn every_call_gets_exactly_one_result() {
        let entries = vec![
            entry(result("orphan")),
            entry(TranscriptBody::Input { text: "hi".into() }),
            entry(calling(&["a", "b"])),
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

    #[test]
    fn a_started_call_without_a_result_is_outcome_unknown_not_unexecuted() {
        let entries = vec![
            entry(calling(&["a", "b", "c"])),
            entry(TranscriptBody::ToolStarted {
                call_id: "a".into(),
                tool_name: "ExecCommand".into(),
                started_at: "T1".into(),
            }),
            entry(result("a")),
            entry(TranscriptBody::ToolStarted {
                call_id: "b".into(),
                tool_name: "ExecCommand".into(),
                started_at: "T2".into(),
            }),
            // The runtime died here: b ran (or was running), c never did.
            entry(TranscriptBody::Input {
                text: "replay".into(),
            }),
        ];
        let results: Vec<(String, String)> = conversation(&entries)
            .into_iter()
            .filter_map(|i| match i {
                ConversationItem::ToolResult {
                    call_id, content, ..
                } => Some((call_id, content)),
                ConversationItem::UserText { .. } | ConversationItem::AssistantRound { .. } => None,
            })
            .collect();
        assert_eq!(results[0], ("a".to_owned(), "ok".to_owned()));
        assert_eq!(results[1], ("b".to_owned(), started_outcome_unknown("T2")));
        assert!(results[1].1.starts_with("started, outcome unknown"));
        assert_eq!(results[2], ("c".to_owned(), NOT_EXECUTED.to_owned()));
    }
}
