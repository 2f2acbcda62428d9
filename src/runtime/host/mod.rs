//! The top of the runtime: what starts and recovers it and what an
//! actor runs (`lifecycle.rs`, the one place that reaches every feature),
//! the per-agent actor (`actor.rs`), the client surface (`dispatch.rs`,
//! `client.rs`, `status.rs`, `agent_view.rs`), store upkeep, the watcher
//! of guidance and config files, `holon run`, and giving memory back when
//! quiet. Each feature answers its own requests (`mcp::ops`,
//! `approvals::ops`, …); `dispatch.rs` routes to them. The handle every
//! feature holds is `runtime::handle`.

mod actor;
mod agent_view;
pub mod client;
pub mod dispatch;
mod lifecycle;
mod quiet;
pub(crate) use quiet::release_free_heap;
pub mod run_once;
mod status;
pub mod upkeep;
pub mod watch;
