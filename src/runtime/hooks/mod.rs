//! Operator hooks: commands the operator configures (`[[hooks.EVENT]]` in
//! `config.toml`) that the runtime runs when something happens. A
//! `pre_tool` hook runs before each tool call it matches and may deny the
//! call with a reason the model sees; it can never approve or rewrite one.
//! Every other event only tells the hook: it runs after the event is
//! committed, off the turn's path.
//!
//! What each part does (the tables as written and as checked are
//! `settings::hooks`):
//! - `input`: the versioned JSON object a hook reads on stdin (pure);
//! - `decide`: what a finished run means (pure);
//! - `run`: one run of one hook, in its own sandbox, bounded in time and
//!   output;
//! - `dispatch`: the runtime's hooks, `pre_tool` on the call's path,
//!   each run recorded as a `hook_ran` event;
//! - `follow`: the other events' hooks, told from the committed events;
//! - `project`: the hooks a workspace's repository proposes
//!   (`.holon/hooks.toml`), in force once the operator approved them.

pub mod decide;
pub mod dispatch;
pub mod follow;
pub mod input;
pub mod project;
pub mod run;

pub use decide::{Decision, Verdict};
