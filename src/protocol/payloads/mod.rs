//! The payload of every event kind, as the engine writes it and every
//! client reads it. A key the engine always writes, `null` when it has no
//! value, is a plain `Option`; a key only some producers write is skipped
//! when absent. Fields marked `#[serde(default)]` read as their default
//! when a record written by an older runtime lacks them, so a long-lived
//! ledger stays readable across upgrades; the rest (records, enums) must
//! be there, else the event reads as `Event::Unreadable`. docs/events.md
//! documents these fields; a test checks that every field of every sampled
//! payload is named on the kind's row there.

mod approvals;
mod messages;
mod runtime;
mod triggers;
mod turns;
mod work;
mod workspaces;

pub use approvals::*;
pub use messages::*;
pub use runtime::*;
pub use triggers::*;
pub use turns::*;
pub use work::*;
pub use workspaces::*;
