//! A tool's images as a request carries them: the newest of the
//! conversation, up to what one request may hold, and the line a result's
//! text gains for images it does not carry (left out of this request, or
//! on a wire or endpoint that takes none).

use std::borrow::Cow;

use serde_json::{json, Value};

use super::wire::{Exchange, PairedResult};

impl PairedResult<'_> {
    /// The result's text as a wire sends it: with a line for images left
    /// out of this request, and, on a wire that carries no images
    /// (`carries_images` false), for its images too.
    pub fn text(&self, carries_images: bool) -> Cow<'_, str> {
        let unsent = match carries_images {
            true => 0,
            false => self.images.len(),
        };
        let mut notes = Vec::new();
        if unsent > 0 {
            notes.push(format!(
                "[{unsent} image{} not shown: this provider's format carries no images in \
                 tool results]",
                plural(unsent)
            ));
        }
        if self.images_left_out > 0 {
            notes.push(format!(
                "[{} image{} not re-sent: a request carries only the newest 20]",
                self.images_left_out,
                plural(self.images_left_out)
            ));
        }
        if notes.is_empty() {
            return Cow::Borrowed(&self.content);
        }
        Cow::Owned(format!("{}\n{}", self.content, notes.join("\n")))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The images one request carries: the newest 20, 20 MiB of base64 at
/// most (providers refuse more, or shrink each image when there are
/// more). Older ones are left out, and their results say so.
const MAX_REQUEST_IMAGES: usize = 20;
const MAX_REQUEST_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// Leave out the images past a request's share, oldest first.
pub(super) fn share_images(out: &mut [Exchange<'_>]) {
    let (mut count, mut bytes) = (0, 0);
    for exchange in out.iter_mut().rev() {
        let Exchange::ToolResults(results) = exchange else {
            continue;
        };
        for r in results.iter_mut().rev() {
            let before = r.images.len();
            // Newest first within a result too: its first images stay.
            let mut kept = 0;
            for image in &r.images {
                let fits = count < MAX_REQUEST_IMAGES
                    && bytes + image.data.len() <= MAX_REQUEST_IMAGE_BYTES;
                if !fits {
                    break;
                }
                count += 1;
                bytes += image.data.len();
                kept += 1;
            }
            r.images.truncate(kept);
            r.images_left_out = before - kept;
        }
    }
}

/// An Anthropic `tool_result`'s content: the text, then each image as a
/// base64 block.
pub(super) fn messages_parts(text: &str, r: &PairedResult<'_>) -> Value {
    let mut parts = vec![json!({"type": "text", "text": text})];
    parts.extend(r.images.iter().map(|i| {
        json!({"type": "image", "source": {"type": "base64", "media_type": i.mime_type, "data": i.data}})
    }));
    Value::Array(parts)
}

/// A Responses `function_call_output`'s output: the text, then each image
/// as a data URL.
pub(super) fn responses_parts(text: &str, r: &PairedResult<'_>) -> Value {
    let mut parts = vec![json!({"type": "input_text", "text": text})];
    parts.extend(r.images.iter().map(|i| {
        json!({"type": "input_image", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)})
    }));
    Value::Array(parts)
}
