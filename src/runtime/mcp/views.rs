//! What `mcp.list` answers: every server the runtime knows (the config's,
//! and each workspace's `.mcp.json` it has read), its state and the tools
//! its workspace's last catalog offered.

use std::path::Path;

use super::server::{Phase, Server};
use super::{Catalog, Hub};
use crate::model::mcp::{McpDroppedTool, McpServerInfo, McpToolInfo};

fn info(s: &Server, catalog: &Catalog) -> McpServerInfo {
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
        Phase::AwaitingApproval => ("awaiting_approval", None, None),
    };
    McpServerInfo {
        review: None,
        name: name.clone(),
        transport: s.config.transport_name().into(),
        state: state.into(),
        reason,
        retry_in_ms,
        workspace: s.config.project.as_ref().map(|p| p.display().to_string()),
        command_line: s.config.project.as_ref().map(|_| s.config.command_line()),
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
}

impl Hub {
    /// Every configured server, then the servers of each workspace read so
    /// far (reading `anchor`'s `.mcp.json` first, when given), with their
    /// state and tools.
    pub fn views(&self, anchor: Option<&Path>) -> Vec<McpServerInfo> {
        if let Some(a) = anchor {
            self.project(a);
        }
        let projects: Vec<_> = self
            .projects
            .lock()
            .map(|p| {
                p.values()
                    .flat_map(|p| p.servers.clone())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let configured = self.configured();
        for s in configured
            .iter()
            .filter(|s| s.config.enabled)
            .chain(projects.iter())
        {
            s.hold(self.held(&s.config));
        }
        let global = self.current(None);
        let mut out: Vec<McpServerInfo> = configured
            .iter()
            .map(|s| {
                // The tools of a catalog that offered them: the config's
                // servers offer the same in every workspace.
                let catalogs = self.catalogs.lock().ok();
                let any = catalogs.as_ref().and_then(|c| {
                    c.values()
                        .find(|c| c.offered.iter().any(|o| o.server == s.config.name))
                        .cloned()
                });
                info(s, any.as_deref().unwrap_or(&global))
            })
            .collect();
        let projects: Vec<_> = self
            .projects
            .lock()
            .map(|p| p.iter().map(|(a, p)| (a.clone(), p.clone())).collect())
            .unwrap_or_default();
        for (anchor, project) in projects {
            let catalog = self.current(Some(&anchor));
            for s in &project.servers {
                out.push(info(s, &catalog));
            }
            for (name, reason) in &project.refused {
                out.push(McpServerInfo {
                    review: None,
                    name: name.clone(),
                    transport: String::new(),
                    state: "invalid".into(),
                    reason: Some(reason.clone()),
                    retry_in_ms: None,
                    workspace: Some(anchor.display().to_string()),
                    command_line: None,
                    tools: Vec::new(),
                    dropped: Vec::new(),
                    log: String::new(),
                });
            }
        }
        out
    }
}
