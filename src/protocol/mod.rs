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
pub mod client;
pub mod events;
pub mod jsonrpc;
pub mod payloads;
pub mod types;

pub use answers::*;
pub use api::*;
pub use client::*;

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
    /// The console and the presentation layer reach the engine only
    /// through the protocol: no `crate::runtime`, `crate::store` or
    /// `crate::app` path in `src/ui` outside its tests.
    #[test]
    fn the_ui_names_the_engine_only_through_the_protocol() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() && path.file_name().is_some_and(|n| n != "tests") {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && path.file_name().is_some_and(|n| n != "tests.rs")
                {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ui"),
            &mut files,
        );
        assert!(files.len() > 20, "{files:?}");
        let mut found = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                let line = line.split("//").next().unwrap_or_default();
                if ["crate::runtime", "crate::store", "crate::app"]
                    .iter()
                    .any(|p| line.contains(p))
                {
                    found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "src/ui reaches past the protocol:\n{}",
            found.join("\n")
        );
    }
}
