//! The operator console and the shared event-presentation layer. Depends on
//! `runtime::api` types only (and the event vocabulary); never on runtime
//! internals or the store.

pub mod client;
pub mod present;
pub mod tui;
