//! The integration suites, one module per concern, compiled into the one
//! test binary `tests/all.rs`.

mod agents;
mod approvals;
mod carried;
mod cli;
mod clock_back;
mod command_family;
mod console_e2e;
mod console_editor_e2e;
mod context;
mod control_socket;
mod daemon_lifecycle;
mod doctor;
mod frame_memory;
mod hardening;
mod http_inspect;
mod long_life;
mod mcp;
mod mcp_calls;
mod mcp_surfaces;
mod models;
mod protocol_contract;
mod provider_codex;
mod provider_edges;
mod provider_transports;
mod pty;
mod remote_attach;
mod retention;
mod retention_cli;
mod retention_edges;
mod runtime_core;
mod runtime_restart;
mod sandbox;
mod sandbox_escapes;
mod scheduler_fixtures;
mod store_durability;
mod store_migration;
mod stream_attempts;
#[allow(dead_code)]
pub mod stub_provider;
mod support;
mod task_survival;
mod tool_errors;
mod transcript_cli;
mod triggers;
mod turn_e2e;
mod workspaces;
