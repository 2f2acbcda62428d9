//! What the model is told of an MCP tool's result (pure): the server's
//! text, its structured content, its images (checked, beside the text,
//! each with a note), a note for each audio clip, image left out or
//! resource it cannot read as text, all within the tool output budget; a
//! result the server marks `isError` becomes the tool error envelope.

use serde_json::{json, Value};

use super::media::{self, MAX_IMAGES};
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

const MAX_NOTES: usize = 20;

/// The outcome of a call that returned `content` (MCP content blocks, as
/// JSON), `structured` and `is_error`, bounded to `max_bytes` of text.
pub fn outcome(
    exposed: &str,
    content: &[Value],
    structured: Option<&Value>,
    is_error: bool,
    max_bytes: usize,
) -> ToolOutcome {
    let mut text = String::new();
    let mut notes = Vec::new();
    let mut images = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""));
            }
            // A failed call's images are not kept: it is told as an error.
            Some("image") if is_error => {}
            Some("image") if images.len() < MAX_IMAGES => match media::image(block) {
                Ok(image) => {
                    notes.push(media_note("image", block, "attached"));
                    images.push(image);
                }
                Err(why) => notes.push(media_note("image", block, &format!("not shown: {why}"))),
            },
            Some("image") => notes.push(media_note(
                "image",
                block,
                "not shown: 4 images are kept from one result",
            )),
            Some("audio") => notes.push(media_note("audio", block, "not shown")),
            Some("resource") => {
                let r = block.get("resource").unwrap_or(&Value::Null);
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t);
                    }
                    None => notes.push(format!(
                        "[resource {} ({})]",
                        r.get("uri").and_then(Value::as_str).unwrap_or("?"),
                        r.get("mimeType")
                            .and_then(Value::as_str)
                            .unwrap_or("binary"),
                    )),
                }
            }
            Some("resource_link") => notes.push(format!(
                "[resource link {}]",
                block.get("uri").and_then(Value::as_str).unwrap_or("?")
            )),
            other => notes.push(format!(
                "[a content block of type {} was left out]",
                other.unwrap_or("unknown")
            )),
        }
    }
    // Notes are bounded too: at most 20, each one line of 300 characters.
    let more = notes.len().saturating_sub(MAX_NOTES);
    notes.truncate(MAX_NOTES);
    for n in &mut notes {
        if n.chars().count() > 300 {
            *n = n.chars().take(299).chain(std::iter::once('…')).collect();
        }
    }
    if more > 0 {
        notes.push(format!("[{more} more blocks left out]"));
    }
    let full = text.len();
    let (text, truncated) = cut(text, max_bytes);
    if is_error {
        let mut message = text;
        if message.is_empty() {
            message = format!("{exposed} failed and gave no message");
        }
        return tool_error(
            ToolErrorKind::Failed,
            message,
            Some("the MCP server reported this error"),
            None,
            false,
        );
    }
    let mut body = json!({"ok": true, "text": text});
    if truncated {
        body["truncated"] = json!({"shown_bytes": max_bytes, "total_bytes": full});
    }
    if !notes.is_empty() {
        body["attachments"] = json!(notes);
    }
    if let Some(s) = structured {
        let rendered = s.to_string();
        if rendered.len() <= max_bytes.saturating_sub(body.to_string().len()) {
            body["structured_content"] = s.clone();
        } else {
            body["structured_content_omitted"] = json!({"bytes": rendered.len()});
        }
    }
    ToolOutcome {
        images,
        ..ToolOutcome::ok(body)
    }
}

fn media_note(kind: &str, block: &Value, what: &str) -> String {
    let mime = block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("unknown type");
    // base64: three bytes in every four characters.
    let bytes = block
        .get("data")
        .and_then(Value::as_str)
        .map_or(0, |d| d.trim_end_matches('=').len() * 3 / 4);
    format!("[{kind}: {mime}, {bytes} bytes, {what}]")
}

/// `text` cut to at most `max` bytes on a character boundary.
fn cut(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_blocks_join_and_structured_content_rides_along() {
        let o = outcome(
            "mcp__s__t",
            &[
                json!({"type": "text", "text": "a"}),
                json!({"type": "text", "text": "b"}),
            ],
            Some(&json!({"n": 1})),
            false,
            1000,
        );
        assert!(!o.is_error);
        assert_eq!(o.content["text"], "a\nb");
        assert_eq!(o.content["structured_content"], json!({"n": 1}));
    }

    /// A 1x1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

    #[test]
    fn images_ride_beside_the_text_with_a_note_each() {
        let png = json!({"type": "image", "data": PNG, "mimeType": "image/png"});
        let bad = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
        let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"});
        let mut blocks = vec![bad, audio];
        blocks.extend(std::iter::repeat_n(png, 5));
        let o = outcome("mcp__s__t", &blocks, None, false, 1000);
        assert_eq!(o.images.len(), 4);
        assert_eq!(o.images[0].mime_type, "image/png");
        let notes = o.content["attachments"].as_array().cloned().unwrap();
        assert_eq!(
            notes[0],
            "[image: image/png, 3 bytes, not shown: not a PNG, JPEG or WebP image]"
        );
        assert_eq!(notes[1], "[audio: audio/wav, 3 bytes, not shown]");
        assert_eq!(notes[2], "[image: image/png, 68 bytes, attached]");
        assert_eq!(
            notes[6],
            "[image: image/png, 68 bytes, not shown: 4 images are kept from one result]"
        );
        // A failed call's images are not kept.
        let failed = outcome("mcp__s__t", &blocks, None, true, 1000);
        assert!(failed.images.is_empty());
    }

    #[test]
    fn large_results_are_bounded_and_say_so() {
        let big = "é".repeat(1000);
        let o = outcome(
            "mcp__s__t",
            &[json!({"type": "text", "text": big})],
            Some(&json!({"x": "y".repeat(500)})),
            false,
            101,
        );
        assert_eq!(o.content["text"].as_str().map(str::len), Some(100));
        assert_eq!(o.content["truncated"]["total_bytes"], 2000);
        assert!(o.content.get("structured_content").is_none());
        assert!(o.content["structured_content_omitted"]["bytes"].as_u64() > Some(500));
    }

    #[test]
    fn notes_are_bounded_in_number_and_length() {
        let link = |i: usize| json!({"type": "resource_link", "uri": format!("file:///{}{i}", "x".repeat(500))});
        let blocks: Vec<Value> = (0..25).map(link).collect();
        let o = outcome("mcp__s__t", &blocks, None, false, 1000);
        let notes = o.content["attachments"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(notes.len(), 21);
        assert!(notes
            .iter()
            .all(|n| n.as_str().map_or(0, |s| s.chars().count()) <= 300));
        assert_eq!(notes[20], "[5 more blocks left out]");
    }

    #[test]
    fn server_errors_use_the_envelope() {
        let o = outcome(
            "mcp__s__t",
            &[json!({"type": "text", "text": "no such repo"})],
            None,
            true,
            1000,
        );
        assert!(o.is_error);
        assert_eq!(o.content["kind"], "failed");
        assert_eq!(o.content["message"], "no such repo");
        let silent = outcome("mcp__s__t", &[], None, true, 1000);
        assert_eq!(
            silent.content["message"],
            "mcp__s__t failed and gave no message"
        );
    }
}
