//! The control protocol in one place: every request (`api`) and its answer
//! (`answers`), the client interface (`client`), the JSON-RPC 2.0
//! envelope, notifications and subscription methods (`jsonrpc`), and every
//! event kind's payload (`events`, `payloads`). The
//! engine writes events from these types, the socket server and client
//! frame lines only through them, and the console and the presentation
//! layer read them; the wire stays the JSON of docs/protocol.md and
//! docs/events.md.

pub mod answers;
pub mod api;
pub mod child_observability;
pub mod client;
pub mod error;
pub mod events;
pub mod jsonrpc;
pub mod payloads;
pub mod types;
mod validate;
pub mod views;

/// The control protocol's revision, said in `runtime.status`: raised when
/// a change would break a client of the previous one. A console over ssh,
/// WebSocket or a socket refuses a runtime whose revision differs. The
/// enums in answers (an agent's status and posture, a task's status ...)
/// are closed: a new variant is such a change.
pub const REVISION: u32 = 1;

pub use answers::*;
pub use api::*;
pub use client::*;
pub use error::*;

/// A serde enum's wire string (`trusted_operator`), as the protocol
/// writes it; `None` for a value that is not a plain string on the wire.
pub fn wire_name<T: serde::Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The `.rs` files under `dir`, leaving out test files and folders.
    fn sources(dir: &Path) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() && path.file_name().is_some_and(|n| n != "tests") {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && path.file_name().is_some_and(|n| {
                        n != "tests.rs" && !n.to_string_lossy().ends_with("_tests.rs")
                    })
                {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        walk(dir, &mut files);
        files
    }

    /// Each line of `files` (outside their `#[cfg(test)]` part and
    /// comments) that names one of `forbidden`.
    fn naming(files: &[PathBuf], forbidden: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            let mut skip = false;
            for (n, line) in text.lines().enumerate() {
                // An inline `#[cfg(test)] mod x {` ends the code; any other
                // `#[cfg(test)]` (`mod x;`, a helper) leaves out one line.
                if std::mem::take(&mut skip) {
                    match line.trim().starts_with("mod ") && line.trim().ends_with('{') {
                        true => break,
                        false => continue,
                    }
                }
                if line.trim() == "#[cfg(test)]" {
                    skip = true;
                    continue;
                }
                let line = line.split("//").next().unwrap_or_default();
                if forbidden.iter().any(|p| line.contains(p)) {
                    found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
        found
    }

    fn src(dir: &str) -> Vec<PathBuf> {
        let files = sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir));
        assert!(files.len() > 5, "{dir}: {files:?}");
        files
    }

    /// The console and the presentation layer reach the engine only
    /// through the protocol: no `crate::runtime`, `crate::store` or
    /// `crate::app` path in `src/ui` outside its tests.
    #[test]
    fn the_ui_names_the_engine_only_through_the_protocol() {
        let found = naming(
            &src("ui"),
            &["crate::runtime", "crate::store", "crate::app"],
        );
        assert!(
            found.is_empty(),
            "src/ui reaches past the protocol:\n{}",
            found.join("\n")
        );
    }

    /// The protocol is built on the vocabulary alone: it names no engine,
    /// store, binary or client module.
    #[test]
    fn the_protocol_names_only_the_vocabulary() {
        let forbidden = ["crate::runtime", "crate::store", "crate::app", "crate::ui"];
        let found = naming(&src("protocol"), &forbidden);
        assert!(
            found.is_empty(),
            "src/protocol reaches past the vocabulary:\n{}",
            found.join("\n")
        );
    }

    /// The vocabulary is a leaf: it names nothing else of Holon.
    #[test]
    fn the_vocabulary_is_a_leaf() {
        let forbidden = [
            "crate::runtime",
            "crate::store",
            "crate::app",
            "crate::ui",
            "crate::protocol",
        ];
        let found = naming(&src("model"), &forbidden);
        assert!(
            found.is_empty(),
            "src/model names another part of Holon:\n{}",
            found.join("\n")
        );
    }

    /// The console reads typed answers and typed events: untyped JSON
    /// (`serde_json::Value`, string-key lookups) stays rare in `src/ui`,
    /// kept for the raw views of payloads a client cannot know.
    #[test]
    fn the_ui_reads_typed_json() {
        let files = src("ui");
        let values = naming(&files, &["Value"]);
        assert!(
            values.len() <= 10,
            "src/ui names `Value` {} times (at most 10):\n{}",
            values.len(),
            values.join("\n")
        );
        // `.get("k")`, `.pointer("/k")` and `v["k"]` (not a `&["k"]` slice).
        let indexes = |line: &str| {
            let line = line.split_once(": ").map_or(line, |(_, code)| code);
            line.match_indices("[\"").any(|(i, _)| {
                let before = line[..i].chars().next_back();
                before.is_some_and(|c| c.is_alphanumeric() || "_)]".contains(c))
            })
        };
        let lookups: Vec<_> = naming(&files, &[".get(\"", ".pointer(", "[\""])
            .into_iter()
            .filter(|l| !l.contains("[\"") || l.contains(".get(\"") || indexes(l))
            .collect();
        assert!(
            lookups.len() <= 10,
            "src/ui looks up JSON by key {} times (at most 10):\n{}",
            lookups.len(),
            lookups.join("\n")
        );
    }
}
