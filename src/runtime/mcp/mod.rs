//! MCP servers: the tools of the ecosystem, offered to the model beside
//! Holon's own and held to the same approval gate.
//!
//! The servers are the runtime's: those of `[mcp_servers]` (global
//! config) serve every agent; those a workspace's `.mcp.json` defines
//! (`project`) serve the agents working in it, and only once the operator
//! approved their command line, since opening a cloned repository must
//! not run its commands. One process per server, started on the first
//! turn that builds a catalog, so a runtime whose agents never run a turn
//! pays nothing for them. Each server is supervised (`server`): a failed
//! or exited server is restarted on a later need after a backoff, and
//! while it is down its tools answer a tool error instead of failing the
//! turn. What the model is offered (`names`) and told (`result`) is
//! decided by pure functions. The operator's requests (the list, approve,
//! disable) are answered in `ops`, which keeps them in the store; the
//! servers' settings are `settings::mcp`.

mod client;
mod filter;
mod flight;
mod media;
pub mod names;
pub mod ops;
mod process;
mod project;
pub mod report;
pub mod result;
pub mod server;
mod views;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::model::approval::{Action, ApprovalPolicy};
use crate::model::sandbox::{NetworkAccess, SandboxMode};
use crate::model::usage::ToolCall;
use crate::runtime::provider::ToolSpec;
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

use crate::model::mcp::McpStopReason;
use crate::runtime::settings::mcp::ServerConfig;
pub use client::ProgressSink;
use flight::CallError;
use names::{Dropped, Offered};
use process::Sandboxing;
use project::Project;
use server::{Server, Ties};

/// What the model was last offered in one workspace: the tools and what
/// was left out.
#[derive(Default)]
struct Catalog {
    /// The servers' summed generations it was built at.
    generation: u64,
    offered: Vec<Offered>,
    dropped: Vec<Dropped>,
}

/// The runtime's MCP servers.
pub struct Hub {
    /// The config file's servers (replaced when it changes).
    servers: std::sync::RwLock<Vec<Arc<Server>>>,
    /// Each workspace's `.mcp.json` servers, by anchor, as last read.
    projects: Mutex<BTreeMap<PathBuf, Arc<Project>>>,
    /// Approved project servers: (anchor, name, command line).
    approved: Mutex<std::collections::BTreeSet<(PathBuf, String, String)>>,
    /// Servers the operator disabled: (workspace for a project's, name).
    disabled: Mutex<std::collections::BTreeSet<(Option<PathBuf>, String)>>,
    /// The epoch (`ties.epoch`): bumped by anything that may change what
    /// a catalog offers (a server's tool list or failure, an approval, a
    /// switch, a config change, a `.mcp.json` read again; not a plain
    /// start); a catalog built at an older one is stale. And where the
    /// servers tell what happens to them (`ties.reporter`).
    ties: Ties,
    /// The last catalog of each workspace (`None`: no workspace known).
    catalogs: Mutex<BTreeMap<Option<PathBuf>, Arc<Catalog>>>,
    /// How servers started from now on are confined (the runtime's
    /// default policy, read at each catalog).
    sandbox: Mutex<Sandboxing>,
    log_dir: PathBuf,
}

impl Hub {
    /// The servers of `configs`, logging under `data_dir/mcp-logs` and
    /// confined beneath `data_dir/mcp`.
    pub fn new(configs: Vec<ServerConfig>, data_dir: &Path, holon_dirs: Vec<PathBuf>) -> Hub {
        let log_dir = data_dir.join("mcp-logs");
        let ties = Ties::default();
        Hub {
            servers: std::sync::RwLock::new(
                configs
                    .into_iter()
                    .map(|c| {
                        let slot = c.name.clone();
                        Arc::new(Server::new(c, &log_dir, slot, &ties))
                    })
                    .collect(),
            ),
            projects: Mutex::default(),
            approved: Mutex::default(),
            disabled: Mutex::default(),
            ties,
            catalogs: Mutex::default(),
            sandbox: Mutex::new(Sandboxing {
                mode: SandboxMode::WorkspaceWrite,
                network: NetworkAccess::Off,
                required: false,
                root: data_dir.join("mcp"),
                holon_dirs,
            }),
            log_dir,
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

    fn sandboxing(&self) -> Sandboxing {
        self.sandbox
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The servers an agent working in `anchor` may use: the config's,
    /// then the workspace's approved project servers.
    /// The config file's servers, as they are now.
    fn configured(&self) -> Vec<Arc<Server>> {
        self.servers
            .read()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Take the config file's servers as `configs` now say (the file
    /// changed): a server described as before goes on; the others are
    /// stopped, and new ones start on their first need.
    pub fn reconfigure(&self, configs: Vec<ServerConfig>) {
        let mut before = self.configured();
        let mut now = Vec::new();
        for c in configs {
            match before.iter().position(|s| s.config == c) {
                Some(i) => now.push(before.swap_remove(i)),
                None => {
                    let slot = c.name.clone();
                    now.push(Arc::new(Server::new(c, &self.log_dir, slot, &self.ties)));
                }
            }
        }
        if let Ok(mut s) = self.servers.write() {
            *s = now;
        }
        project::stop_later(before, McpStopReason::ConfigChanged);
        self.ties.epoch.fetch_add(1, Ordering::SeqCst);
    }

    fn servers_for(&self, anchor: Option<&Path>) -> Vec<Arc<Server>> {
        let configured = self.configured();
        let project = anchor.and_then(|a| self.project(a));
        // A config server added since the file was read wins its name.
        let project_servers = project
            .iter()
            .flat_map(|p| p.servers.iter())
            .filter(|p| !configured.iter().any(|c| c.config.name == p.config.name));
        configured
            .iter()
            .filter(|s| s.config.enabled)
            .chain(project_servers)
            .filter(|s| {
                let held = self.held(&s.config);
                s.hold(held.clone());
                held.is_none()
            })
            .cloned()
            .collect()
    }

    /// The epoch, after reading `anchor`'s `.mcp.json` again if it
    /// changed.
    fn generation(&self, anchor: Option<&Path>) -> u64 {
        if let Some(a) = anchor {
            self.project(a);
        }
        self.ties.epoch.load(Ordering::SeqCst)
    }

    fn current(&self, anchor: Option<&Path>) -> Arc<Catalog> {
        self.catalogs
            .lock()
            .ok()
            .and_then(|c| c.get(&anchor.map(Path::to_path_buf)).cloned())
            .unwrap_or_default()
    }

    /// Whether the tools offered in `anchor` may have changed since its
    /// catalog was built.
    pub fn stale(&self, anchor: Option<&Path>) -> bool {
        self.current(anchor).generation != self.generation(anchor)
    }

    /// The MCP tools to offer `agent` working in `anchor`, starting the
    /// servers that are not running (each within its startup timeout, all
    /// at once): the config file's under the runtime's sandbox, the
    /// workspace's `.mcp.json` ones under `workspace_policy` (its own
    /// policy, where it has one).
    pub async fn specs(
        &self,
        anchor: Option<&Path>,
        agent: &str,
        workspace_policy: Option<&ApprovalPolicy>,
    ) -> Vec<ToolSpec> {
        let generation = self.generation(anchor);
        let enabled = self.servers_for(anchor);
        if enabled.is_empty() {
            self.keep(
                anchor,
                Catalog {
                    generation,
                    ..Catalog::default()
                },
            );
            return Vec::new();
        }
        let sandbox = self.sandboxing();
        let project_sandbox = sandbox.under(workspace_policy);
        let sandbox_of = |s: &Server| match s.config.project {
            Some(_) => &project_sandbox,
            None => &sandbox,
        };
        let lists =
            futures_util::future::join_all(enabled.iter().map(|s| s.tools(sandbox_of(s), agent)))
                .await;
        let mut listed = Vec::new();
        for (s, tools) in enabled.iter().zip(lists) {
            let tools = tools.unwrap_or_default();
            let offered = tools.into_iter().filter(|t| s.config.offers(&t.name));
            listed.push((s.config.name.clone(), offered.collect()));
        }
        let (offered, dropped) = names::offer(&listed);
        for d in &dropped {
            tracing::debug!(server = %d.server, tool = %d.tool, reason = %d.reason, "MCP tool not offered");
        }
        let specs = offered.iter().map(Offered::spec).collect();
        // Built at the epoch read before the servers were asked: a change
        // meanwhile leaves it stale, and the next round builds it again.
        self.keep(
            anchor,
            Catalog {
                generation,
                offered,
                dropped,
            },
        );
        specs
    }

    /// The MCP tools last offered in `anchor`, as the model saw them,
    /// without starting or asking any server (empty before the first
    /// turn built a catalog there).
    pub fn last_offered(&self, anchor: Option<&Path>) -> Vec<ToolSpec> {
        self.current(anchor)
            .offered
            .iter()
            .map(Offered::spec)
            .collect()
    }

    /// Keep `catalog` unless a newer one was built meanwhile.
    fn keep(&self, anchor: Option<&Path>, catalog: Catalog) {
        if let Ok(mut c) = self.catalogs.lock() {
            let key = anchor.map(Path::to_path_buf);
            if c.get(&key)
                .is_none_or(|old| old.generation <= catalog.generation)
            {
                c.insert(key, Arc::new(catalog));
            }
        }
    }

    fn find(&self, anchor: Option<&Path>, exposed: &str) -> Option<(Offered, Arc<Server>)> {
        let catalog = self.current(anchor);
        let offered = catalog.offered.iter().find(|o| o.exposed == exposed)?;
        // The server of that name now, and only if it still offers the
        // tool (a reload may have disabled it since the catalog).
        let server = self
            .servers_for(anchor)
            .into_iter()
            .find(|s| s.config.name == offered.server && s.config.offers(&offered.tool))?;
        Some((offered.clone(), server))
    }

    /// What the approval gate sees of a call: every MCP tool is a tool
    /// action, a write unless the server says it only reads.
    ///
    /// A name this workspace's catalog does not hold (it was rebuilt since
    /// the model was offered the tool, say while its server was down) is
    /// judged as a write of the server its name points to, so a call never
    /// passes the gate because the catalog changed under it.
    pub fn gate(&self, anchor: Option<&Path>, call: &ToolCall) -> Option<Action> {
        if let Some((o, s)) = self.find(anchor, &call.name) {
            return Some(Action::Tool {
                name: o.exposed,
                read_only: o.read_only,
                approval: s.config.approval,
            });
        }
        // Any other MCP name is a write, of its server's mode when the name
        // points to one: the gate never lets a call by because it could not
        // place it.
        let named = crate::model::mcp::split_tool_name(&call.name).map(|(server, _)| server);
        let server = self
            .servers_for(anchor)
            .into_iter()
            .find(|s| named == Some(s.config.name.as_str()));
        Some(Action::Tool {
            name: call.name.clone(),
            read_only: false,
            approval: server.and_then(|s| s.config.approval),
        })
    }

    /// Run one call; `max_bytes` bounds the text the model gets back.
    pub async fn call(
        &self,
        anchor: Option<&Path>,
        agent: &str,
        workspace_policy: Option<&ApprovalPolicy>,
        call: &ToolCall,
        max_bytes: usize,
        progress: Option<ProgressSink>,
    ) -> ToolOutcome {
        // A call approved before a restart may come before any turn has
        // built the catalog again.
        let mut found = self.find(anchor, &call.name);
        if found.is_none() && self.current(anchor).offered.is_empty() {
            self.specs(anchor, agent, workspace_policy).await;
            found = self.find(anchor, &call.name);
        }
        let Some((offered, server)) = found else {
            // A tool of a server that is down (its catalog lost its
            // tools when it went): retryable, with the server's state and
            // why, not an unknown tool.
            if let Some(down) = self.down_server(anchor, &call.name) {
                return down;
            }
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
        let sandbox = match server.config.project {
            Some(_) => self.sandboxing().under(workspace_policy),
            None => self.sandboxing(),
        };
        match server
            .call(&sandbox, agent, &offered.tool, arguments, progress)
            .await
        {
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

    /// The answer to a call of `name` when its server (the one the name
    /// points to) is configured here but not running: its state, its last
    /// failure and when it is tried again. `None`: no such server, or it
    /// runs (the name is then simply unknown).
    fn down_server(&self, anchor: Option<&Path>, name: &str) -> Option<ToolOutcome> {
        let (server, tool) = crate::model::mcp::split_tool_name(name)?;
        let view = self.views(anchor).into_iter().find(|v| v.name == server)?;
        if view.state == "running" {
            return None;
        }
        // Only the operator can bring these back.
        let operator = match view.state.as_str() {
            "awaiting_approval" => {
                Some("it runs once the operator approves it (holon mcp approve)")
            }
            "disabled" => Some("the operator switched it off (holon mcp enable brings it back)"),
            "invalid" => Some("its .mcp.json entry cannot be used as written"),
            _ => None,
        };
        let why = view
            .reason
            .as_deref()
            .map(|r| format!(" (last failure: {r})"))
            .unwrap_or_default();
        let hint = match (operator, view.retry_in_ms) {
            (Some(o), _) => format!("{o}; go on without it"),
            (None, Some(ms)) => format!(
                "it is started again on a call after {} s; go on without it meanwhile",
                ms.div_ceil(1000)
            ),
            (None, None) => {
                "it is started again on a later call; go on without it meanwhile".to_owned()
            }
        };
        Some(tool_error(
            ToolErrorKind::Failed,
            format!(
                "MCP server `{server}` is {}{why}: `{tool}` cannot be called now",
                view.state.replace('_', " ")
            ),
            Some(&hint),
            None,
            operator.is_none(),
        ))
    }

    /// Listen to what happens to the servers (the runtime records it).
    pub fn reports(&self) -> tokio::sync::mpsc::UnboundedReceiver<report::Report> {
        self.ties.reporter.listen()
    }

    /// Stop telling what happens to the servers: the listener's stream
    /// ends after what was told.
    pub fn close_reports(&self) {
        self.ties.reporter.close();
    }

    /// Stop every server (runtime shutdown).
    pub async fn stop(&self) {
        let projects: Vec<Arc<Server>> = self
            .projects
            .lock()
            .map(|p| p.values().flat_map(|p| p.servers.clone()).collect())
            .unwrap_or_default();
        let configured = self.configured();
        let all = configured.iter().chain(projects.iter());
        futures_util::future::join_all(all.map(|s| s.stop(McpStopReason::Shutdown))).await;
    }
}

impl crate::runtime::handle::HostInner {
    /// The MCP servers (`[mcp_servers]`), started on first need.
    pub(crate) fn mcp(&self) -> &Hub {
        self.part()
    }
}
