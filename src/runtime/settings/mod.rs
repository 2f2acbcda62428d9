//! The operator's settings each feature reads, as plain data: read from
//! the config file by `app::config` (the hooks and the MCP servers with
//! their checks here, which a repository's `.holon/hooks.toml` and
//! `.mcp.json` go through too; the reviewer's and the limits' checks in
//! `app::config_checks` and `app::config::sections`), carried by the
//! handle's `HostConfig`, and read by the feature they set. A leaf of the
//! runtime: it imports only the model, so the handle carries every
//! feature's settings without naming a feature, and nothing here runs.

pub mod hooks;
pub mod limits;
pub mod mcp;
pub mod reviewer;
