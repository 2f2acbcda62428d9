//! An MCP server's image made one the providers take (pure): its base64
//! decoded, its bytes checked to be a PNG, JPEG, GIF or WebP image (the
//! type is read from the bytes, not the server's label), bounded in size.
//! An image a provider would refuse would fail every later request of the
//! conversation, so anything doubtful becomes a note instead.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine;
use serde_json::Value;

use crate::model::usage::ToolImage;

/// Images kept from one result; more become notes.
pub const MAX_IMAGES: usize = 4;
/// The largest image kept, decoded: 3.75 MiB, 5 MiB as base64 (what the
/// strictest provider takes).
pub const MAX_IMAGE_BYTES: usize = 3_932_160;

/// The image of an MCP `image` content block, or why it is not kept.
pub fn image(block: &Value) -> Result<ToolImage, String> {
    let data = block.get("data").and_then(Value::as_str).unwrap_or("");
    // Checked before decoding: a huge block is refused without the copy.
    if data.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
        return Err("over the 3.75 MiB an image may be".into());
    }
    let bytes = STANDARD
        .decode(data)
        .or_else(|_| STANDARD_NO_PAD.decode(data))
        .map_err(|_| "its data is not base64".to_owned())?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err("over the 3.75 MiB an image may be".into());
    }
    let Some(mime_type) = sniff(&bytes) else {
        return Err("not a PNG, JPEG, GIF or WebP image".into());
    };
    Ok(ToolImage {
        mime_type: mime_type.to_owned(),
        data: STANDARD.encode(&bytes),
    })
}

/// The image type the bytes begin with.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block(bytes: &[u8], mime: &str) -> Value {
        json!({"type": "image", "data": STANDARD.encode(bytes), "mimeType": mime})
    }

    #[test]
    fn the_type_comes_from_the_bytes() {
        let png = image(&block(b"\x89PNG\r\n\x1a\nrest", "image/png")).unwrap();
        assert_eq!(png.mime_type, "image/png");
        // Mislabelled: the bytes win.
        let jpeg = image(&block(&[0xff, 0xd8, 0xff, 0xe0, 1], "image/png")).unwrap();
        assert_eq!(jpeg.mime_type, "image/jpeg");
        let webp = image(&block(b"RIFF\0\0\0\0WEBPVP8 ", "image/webp")).unwrap();
        assert_eq!(webp.mime_type, "image/webp");
        assert_eq!(
            image(&block(b"GIF89a..", "image/gif")).unwrap().mime_type,
            "image/gif"
        );
    }

    #[test]
    fn doubtful_images_are_refused_with_the_reason() {
        let tiff = image(&block(b"II*\0abcd", "image/tiff"));
        assert_eq!(tiff.unwrap_err(), "not a PNG, JPEG, GIF or WebP image");
        let junk = image(&json!({"type": "image", "data": "**not base64**"}));
        assert_eq!(junk.unwrap_err(), "its data is not base64");
        let mut huge = b"\x89PNG\r\n\x1a\n".to_vec();
        huge.resize(MAX_IMAGE_BYTES + 1, 0);
        let big = image(&block(&huge, "image/png"));
        assert_eq!(big.unwrap_err(), "over the 3.75 MiB an image may be");
    }

    #[test]
    fn unpadded_base64_is_taken_and_sent_padded() {
        let data = STANDARD_NO_PAD.encode(b"\x89PNG\r\n\x1a\nxy");
        assert!(!data.ends_with('='));
        let i = image(&json!({"type": "image", "data": data})).unwrap();
        assert!(i.data.ends_with('='));
    }
}
