//! An MCP server's image made one the providers take (pure): its base64
//! decoded, its bytes read as a PNG, JPEG or still WebP image (the type
//! from the bytes, not the server's label) whose header gives its size,
//! at most 8,000 pixels a side and 3.75 MiB. An image a provider would
//! refuse would fail every later request of the conversation, so anything
//! doubtful (a GIF, which may be animated, included) becomes a note.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine;
use serde_json::Value;

use crate::model::usage::ToolImage;

/// Images kept from one result; more become notes.
pub const MAX_IMAGES: usize = 4;
/// The largest image kept, decoded: 3.75 MiB, 5 MiB as base64 (what the
/// strictest provider takes).
pub const MAX_IMAGE_BYTES: usize = 3_932_160;
/// The longest side kept, in pixels.
pub const MAX_SIDE: u32 = 8_000;

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
    let (mime_type, size) = read_header(&bytes)?;
    match size {
        Some((w, h)) if w > MAX_SIDE || h > MAX_SIDE => {
            return Err(format!("{w}x{h} pixels, over {MAX_SIDE} a side"))
        }
        Some((w, h)) if w > 0 && h > 0 => {}
        _ => return Err("its header gives no size (cut short or damaged)".into()),
    }
    Ok(ToolImage {
        mime_type: mime_type.to_owned(),
        data: STANDARD.encode(&bytes),
    })
}

/// The image type the bytes begin with, and its width and height as its
/// header gives them (`None`: the header is cut short or damaged).
type Header = (&'static str, Option<(u32, u32)>);

fn read_header(b: &[u8]) -> Result<Header, String> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        let size = (b.get(12..16) == Some(b"IHDR"))
            .then(|| Some((be32(b, 16)?, be32(b, 20)?)))
            .flatten();
        Ok(("image/png", size))
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        Ok(("image/jpeg", jpeg_size(b)))
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Err("a GIF (it may be animated, which providers refuse)".into())
    } else if b.len() >= 16 && b.starts_with(b"RIFF") && &b[8..12] == b"WEBP" {
        Ok(("image/webp", webp_size(b)?))
    } else {
        Err("not a PNG, JPEG or WebP image".into())
    }
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 2)
        .map(|s| u32::from(u16::from_be_bytes([s[0], s[1]])))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 3)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], 0]))
}

/// A JPEG's size, from its first start-of-frame segment.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    while at + 4 <= b.len() {
        if b[at] != 0xff {
            return None;
        }
        let marker = b[at + 1];
        // Fill bytes, and markers that carry no length.
        if marker == 0xff {
            at += 1;
            continue;
        }
        if marker == 0x01 || (0xd0..=0xd9).contains(&marker) {
            at += 2;
            continue;
        }
        let sof = (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if sof {
            return Some((be16(b, at + 7)?, be16(b, at + 5)?));
        }
        at += 2 + be16(b, at + 2)? as usize;
    }
    None
}

/// A WebP's size; an animated one is refused.
fn webp_size(b: &[u8]) -> Result<Option<(u32, u32)>, String> {
    let size = match &b[12..16] {
        b"VP8 " => (|| {
            let w = u32::from(u16::from_le_bytes([*b.get(26)?, *b.get(27)?]) & 0x3fff);
            let h = u32::from(u16::from_le_bytes([*b.get(28)?, *b.get(29)?]) & 0x3fff);
            Some((w, h))
        })(),
        b"VP8L" => b.get(21..25).map(|s| {
            let bits = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
            ((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
        }),
        b"VP8X" => {
            if b.get(20).is_some_and(|flags| flags & 0x02 != 0) {
                return Err("an animated WebP, which providers refuse".into());
            }
            (|| Some((le24(b, 24)? + 1, le24(b, 27)? + 1)))()
        }
        _ => None,
    };
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block(bytes: &[u8], mime: &str) -> Value {
        json!({"type": "image", "data": STANDARD.encode(bytes), "mimeType": mime})
    }

    /// A PNG's signature and IHDR chunk start, `w` by `h`.
    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0]);
        b
    }

    /// A JPEG with an APP0 segment, then a baseline frame `w` by `h`.
    fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut b = vec![0xff, 0xd8, 0xff, 0xe0, 0, 4, b'J', b'F'];
        b.extend([0xff, 0xc0, 0, 11, 8]);
        b.extend(h.to_be_bytes());
        b.extend(w.to_be_bytes());
        b.extend([1, 1, 0x11, 0]);
        b
    }

    #[test]
    fn the_type_and_size_come_from_the_bytes() {
        let p = image(&block(&png(640, 480), "image/png")).unwrap();
        assert_eq!(p.mime_type, "image/png");
        // Mislabelled: the bytes win.
        let j = image(&block(&jpeg(800, 600), "image/png")).unwrap();
        assert_eq!(j.mime_type, "image/jpeg");
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        lossless.extend(((99u32) | (49 << 14)).to_le_bytes());
        let w = image(&block(&lossless, "image/webp")).unwrap();
        assert_eq!(w.mime_type, "image/webp");
        assert_eq!(read_header(&lossless).unwrap().1, Some((100, 50)));
        assert_eq!(read_header(&jpeg(800, 600)).unwrap().1, Some((800, 600)));
    }

    #[test]
    fn doubtful_images_are_refused_with_the_reason() {
        let refused = |bytes: &[u8]| image(&block(bytes, "image/png")).unwrap_err();
        assert_eq!(refused(b"II*\0abcd"), "not a PNG, JPEG or WebP image");
        assert!(refused(b"GIF89a\x01\0\x01\0").starts_with("a GIF"));
        assert_eq!(refused(&png(9000, 10)), "9000x10 pixels, over 8000 a side");
        assert!(refused(&png(0, 10)).contains("no size"));
        // The signature alone: cut short.
        assert!(refused(b"\x89PNG\r\n\x1a\n").contains("no size"));
        assert!(refused(&[0xff, 0xd8, 0xff, 0xe0, 1]).contains("no size"));
        let mut animated = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\x02".to_vec();
        animated.extend([0; 9]);
        assert!(refused(&animated).starts_with("an animated WebP"));
        let junk = image(&json!({"type": "image", "data": "**not base64**"}));
        assert_eq!(junk.unwrap_err(), "its data is not base64");
        let mut huge = png(10, 10);
        huge.resize(MAX_IMAGE_BYTES + 1, 0);
        assert_eq!(refused(&huge), "over the 3.75 MiB an image may be");
    }

    #[test]
    fn unpadded_base64_is_taken_and_sent_padded() {
        let data = STANDARD_NO_PAD.encode(png(1, 1));
        assert!(!data.ends_with('='));
        let i = image(&json!({"type": "image", "data": data})).unwrap();
        assert!(i.data.ends_with('='));
    }
}
