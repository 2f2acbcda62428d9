//! Tests of the console core: update flows (messages in, effects and
//! state out) and snapshots of every view at 80x24 and 120x40.

mod approval_wait;
mod approvals;
mod every_kind;
mod fixtures;
mod flows;
mod mcp_progress;
mod overlay_flows;
mod paging;
mod plans_and_priorities;
mod quit_lapse;
mod runtimes;
mod snapshots;
mod status_width;
mod streaming;
