//! What a brief may carry besides its text: attachments (the contract's
//! `BriefAttachment`), each a reference to a file Holon kept, with its kind,
//! name, size and digest.

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    #[default]
    File,
    Log,
    Diff,
    Image,
    Json,
}

impl AttachmentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AttachmentKind::File => "file",
            AttachmentKind::Log => "log",
            AttachmentKind::Diff => "diff",
            AttachmentKind::Image => "image",
            AttachmentKind::Json => "json",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BriefAttachment {
    pub kind: AttachmentKind,
    pub name: String,
    /// Where Holon keeps the attached content (a copy, by its digest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Where it was attached from, relative to its root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    pub size_bytes: u64,
    /// `sha256:<hex>` of the content.
    pub digest: String,
}

impl BriefAttachment {
    /// One line: `name (kind, size, sha256:abcdef12)`.
    pub fn line(&self) -> String {
        let size = match self.size_bytes {
            n if n < 1024 => format!("{n} B"),
            n if n < 1024 * 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
            n => format!("{:.1} MiB", n as f64 / 1048576.0),
        };
        let short: String = self.digest.chars().take(15).collect();
        format!("{} ({}, {size}, {short})", self.name, self.kind.as_str())
    }
}
