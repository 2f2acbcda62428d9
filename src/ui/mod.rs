//! The operator console and the shared event-presentation layer. Depends on
//! the `protocol` only; never on runtime
//! internals or the store.

pub mod client;
pub mod present;
pub mod ssh;
pub mod tls;
pub mod tui;
pub mod ws;
