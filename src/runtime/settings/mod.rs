//! The operator's settings each feature reads, as plain data: parsed and
//! checked from the config file by `app::config` (each section beside
//! its checks here), carried by the handle's `HostConfig`, and read by
//! the feature they set. A leaf of the runtime: it imports only the
//! model, so the handle carries every feature's settings without naming
//! a feature, and nothing here runs.

pub mod hooks;
pub mod limits;
pub mod mcp;
pub mod reviewer;
