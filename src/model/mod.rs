//! The vocabulary: the records and enums that travel between the engine,
//! the store, the protocol and every client (agents' messages, work items,
//! tasks, waits, approvals). Data and the small methods that read it, no
//! rules and no I/O: this module imports nothing else of Holon, so the
//! protocol and the clients can name these types without reaching into the
//! engine (a test holds that). The engine re-exports them under their old
//! paths (`model::message` is `model::message`).

pub mod agent;
pub mod approval;
pub mod attempt;
pub mod backup;
pub mod brief;
pub mod context;
pub mod decision;
pub mod event;
pub mod ids;
pub mod mcp;
pub mod message;
pub mod process;
pub mod proposal;
pub mod retention;
pub mod review;
pub mod sandbox;
pub mod skill;
pub mod task;
pub mod text;
pub mod transcript;
pub mod trigger;
pub mod usage;
pub mod waiting;
pub mod work;
pub mod working;
pub mod workspace;

/// A boxed, sendable future: what the client interface and the provider
/// interface return.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
