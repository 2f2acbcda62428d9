//! MCP servers: the tools of the ecosystem, offered to the model beside
//! Holon's own and held to the same approval gate.
//!
//! The servers are the runtime's (`[mcp_servers]` is global config): one
//! process per server, shared by every agent, started on the first turn
//! that builds a catalog, so a runtime whose agents never run a turn pays
//! nothing for them. Each server is supervised (`server`): a failed or
//! exited server is restarted on a later need after a backoff, and while it
//! is down its tools answer a tool error instead of failing the turn. What
//! the model is offered (`names`) and told (`result`) is decided by pure
//! functions.

pub mod config;
pub mod names;
pub mod result;
pub mod server;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::model::approval::Action;
use crate::model::mcp::{McpDroppedTool, McpServerInfo, McpToolInfo};
use crate::model::sandbox::{NetworkAccess, SandboxMode};
use crate::runtime::provider::{ToolCall, ToolSpec};
use crate::runtime::tools::envelope::{tool_error, ToolErrorKind, ToolOutcome};

pub use config::ServerConfig;
use names::{Dropped, Offered};
use server::{CallError, Phase, Sandboxing, Server};

/// What the model was last offered: the tools and what was left out.
#[derive(Default)]
struct Catalog {
    /// The servers' summed generations it was built at.
    generation: u64,
    offered: Vec<Offered>,
    dropped: Vec<Dropped>,
}

/// The runtime's MCP servers.
pub struct Hub {
    servers: Vec<Arc<Server>>,
    catalog: Mutex<Arc<Catalog>>,
    /// How servers started from now on are confined (the runtime's
    /// default policy, read at each catalog).
    sandbox: Mutex<Sandboxing>,
}

impl Hub {
    /// The servers of `configs`, logging under `data_dir/mcp-logs` and
    /// confined beneath `data_dir/mcp`.
    pub fn new(configs: Vec<ServerConfig>, data_dir: &Path, holon_dirs: Vec<PathBuf>) -> Hub {
        let log_dir = data_dir.join("mcp-logs");
        Hub {
            servers: configs
                .into_iter()
                .map(|c| Arc::new(Server::new(c, &log_dir)))
                .collect(),
            catalog: Mutex::new(Arc::default()),
            sandbox: Mutex::new(Sandboxing {
                mode: SandboxMode::WorkspaceWrite,
                network: NetworkAccess::Off,
                required: false,
                root: data_dir.join("mcp"),
                holon_dirs,
            }),
        }
    }

    /// Confine the servers started from now on by `policy` (the runtime's
    /// default) and `required` (`[policy] sandbox_required`).
    pub fn set_sandbox(&self, policy: &crate::model::approval::ApprovalPolicy, required: bool) {
        if let Ok(mut s) = self.sandbox.lock() {
            s.mode = policy.sandbox.unwrap_or(SandboxMode::WorkspaceWrite);
            s.network = policy.network.unwrap_or(NetworkAccess::Off);
            s.required = required;
        }
    }

    fn sandboxing(&self) -> Option<Sandboxing> {
        self.sandbox.lock().ok().map(|s| s.clone())
    }

    fn generation(&self) -> u64 {
        self.servers
            .iter()
            .map(|s| s.generation.load(Ordering::SeqCst))
            .sum()
    }

    fn current(&self) -> Arc<Catalog> {
        self.catalog
            .lock()
            .map(|c| Arc::clone(&c))
            .unwrap_or_default()
    }

    /// Whether the tools may have changed since the catalog was built.
    pub fn stale(&self) -> bool {
        !self.servers.is_empty() && self.current().generation != self.generation()
    }

    /// The MCP tools to offer, starting the servers that are not running
    /// (each within its startup timeout, all at once).
    pub async fn specs(&self) -> Vec<ToolSpec> {
        if self.servers.is_empty() {
            return Vec::new();
        }
        let Some(sandbox) = self.sandboxing() else {
            return Vec::new();
        };
        let enabled: Vec<&Arc<Server>> = self.servers.iter().filter(|s| s.config.enabled).collect();
        let lists = futures_util::future::join_all(enabled.iter().map(|s| s.tools(&sandbox))).await;
        let mut listed = Vec::new();
        for (s, tools) in enabled.iter().zip(lists) {
            let tools = tools.unwrap_or_default();
            let offered = tools.into_iter().filter(|t| s.config.offers(&t.name));
            listed.push((s.config.name.clone(), offered.collect()));
        }
        let (offered, dropped) = names::offer(&listed);
        for d in &dropped {
            tracing::warn!(server = %d.server, tool = %d.tool, reason = %d.reason, "MCP tool not offered");
        }
        let specs = offered
            .iter()
            .map(|o| ToolSpec {
                name: o.exposed.clone(),
                description: o.description.clone(),
                input_schema: o.input_schema.clone(),
                freeform_field: None,
            })
            .collect();
        let built = Catalog {
            generation: self.generation(),
            offered,
            dropped,
        };
        if let Ok(mut c) = self.catalog.lock() {
            *c = Arc::new(built);
        }
        specs
    }

    fn find(&self, exposed: &str) -> Option<(Offered, Arc<Server>)> {
        let catalog = self.current();
        let offered = catalog.offered.iter().find(|o| o.exposed == exposed)?;
        let server = self
            .servers
            .iter()
            .find(|s| s.config.name == offered.server)?;
        Some((offered.clone(), Arc::clone(server)))
    }

    /// What the approval gate sees of a call: every MCP tool is a tool
    /// action, a write unless the server says it only reads.
    pub fn gate(&self, call: &ToolCall) -> Option<Action> {
        self.find(&call.name).map(|(o, s)| Action::Tool {
            name: o.exposed,
            read_only: o.read_only,
            approval: s.config.approval,
        })
    }

    /// Run one call; `max_bytes` bounds the text the model gets back.
    pub async fn call(&self, call: &ToolCall, max_bytes: usize) -> ToolOutcome {
        // A call approved before a restart may come before any turn has
        // built the catalog again.
        let mut found = self.find(&call.name);
        if found.is_none() && self.current().offered.is_empty() {
            self.specs().await;
            found = self.find(&call.name);
        }
        let Some((offered, server)) = found else {
            return tool_error(
                ToolErrorKind::UnknownTool,
                format!("there is no tool named `{}`", call.name),
                Some("use one of the tools listed in the request"),
                None,
                false,
            );
        };
        let arguments = match &call.arguments {
            Value::Null => None,
            Value::Object(m) => Some(m.clone()),
            _ => {
                return tool_error(
                    ToolErrorKind::InvalidArguments,
                    format!("{} takes a JSON object of arguments", call.name),
                    Some("check the tool's JSON schema"),
                    None,
                    false,
                )
            }
        };
        let Some(sandbox) = self.sandboxing() else {
            return tool_error(
                ToolErrorKind::Failed,
                "the MCP servers' settings are unreadable",
                None,
                None,
                false,
            );
        };
        match server.call(&sandbox, &offered.tool, arguments).await {
            Ok(r) => result::outcome(
                &offered.exposed,
                &r.content,
                r.structured.as_ref(),
                r.is_error,
                max_bytes,
            ),
            Err(CallError::Down(why)) => tool_error(
                ToolErrorKind::Failed,
                format!("MCP server `{}` is not available: {why}", offered.server),
                Some("the server is restarted on a later call; go on without it meanwhile"),
                None,
                true,
            ),
            Err(CallError::TimedOut(limit)) => tool_error(
                ToolErrorKind::Failed,
                format!(
                    "{} gave no result within {} s and was cancelled",
                    call.name,
                    limit.as_secs()
                ),
                Some("the server's tool_timeout_secs bounds each call"),
                None,
                true,
            ),
            Err(CallError::Protocol(why)) => tool_error(
                ToolErrorKind::Failed,
                format!("MCP server `{}` refused the call: {why}", offered.server),
                None,
                None,
                false,
            ),
        }
    }

    /// Every configured server, its state and the tools it offers.
    pub fn views(&self) -> Vec<McpServerInfo> {
        let catalog = self.current();
        self.servers
            .iter()
            .map(|s| {
                let name = &s.config.name;
                let (state, reason, retry_in_ms) = match s.phase() {
                    Phase::Idle => ("idle", None, None),
                    Phase::Starting => ("starting", None, None),
                    Phase::Running => ("running", None, None),
                    Phase::Failed {
                        reason,
                        retry_in_ms,
                    } => ("failed", Some(reason), Some(retry_in_ms)),
                    Phase::Disabled => ("disabled", None, None),
                };
                McpServerInfo {
                    name: name.clone(),
                    transport: s.config.transport_name().into(),
                    state: state.into(),
                    reason,
                    retry_in_ms,
                    tools: catalog
                        .offered
                        .iter()
                        .filter(|o| &o.server == name)
                        .map(|o| McpToolInfo {
                            name: o.tool.clone(),
                            exposed: o.exposed.clone(),
                            read_only: o.read_only,
                        })
                        .collect(),
                    dropped: catalog
                        .dropped
                        .iter()
                        .filter(|d| &d.server == name)
                        .map(|d| McpDroppedTool {
                            tool: d.tool.clone(),
                            reason: d.reason.clone(),
                        })
                        .collect(),
                    log: s.log_path().display().to_string(),
                }
            })
            .collect()
    }

    /// Stop every server (runtime shutdown).
    pub async fn stop(&self) {
        futures_util::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }
}
