//! The control protocol in one place: every request and its answer
//! (`api`), the JSON-RPC 2.0 envelope, notifications and subscription
//! methods (`jsonrpc`), and every event kind's payload (`events`). The
//! engine writes events from these types, the socket server and client
//! frame lines only through them, and the console and the presentation
//! layer read them; the wire stays the JSON of docs/protocol.md and
//! docs/events.md.

pub mod api;
pub mod events;
pub mod jsonrpc;
pub mod payloads;

pub use api::*;

/// A serde enum's wire string (`trusted_operator`), as the protocol
/// writes it; `None` for a value that is not a plain string on the wire.
pub fn wire_name<T: serde::Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}
