//! A workspace's own servers: its `.mcp.json`, read when an agent working
//! there builds a catalog (and again when the file changes, stopping the
//! servers it defined before), and the operator's approvals. A project's
//! server starts only once its exact command line was approved: a cloned
//! repository must not run commands by being opened, and a changed
//! command line needs approving again.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::server::Server;
use super::Hub;
use crate::model::mcp::{McpApproval, McpStopReason, McpSwitch};
use crate::runtime::settings::mcp::{parse_project, ServerConfig};

/// The largest `.mcp.json` read.
const MAX_FILE: u64 = 1024 * 1024;
/// Workspaces whose `.mcp.json` is kept read; past this, one with no
/// server running is forgotten (read again when needed).
const MAX_PROJECTS: usize = 64;

/// One workspace's `.mcp.json`, as last read.
pub(super) struct Project {
    /// Modification time and length when read.
    stamp: Option<(std::time::SystemTime, u64)>,
    pub(super) servers: Vec<Arc<Server>>,
    /// Entries that cannot be used, and why.
    pub(super) refused: Vec<(String, String)>,
}

/// A short digest naming a workspace's folder for logs and sandboxes.
fn tag(anchor: &Path) -> String {
    let d = Sha256::digest(anchor.as_os_str().as_encoded_bytes());
    d.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

impl Hub {
    /// The servers `anchor`'s `.mcp.json` defines (`None` without one).
    pub(super) fn project(&self, anchor: &Path) -> Option<Arc<Project>> {
        let path = anchor.join(".mcp.json");
        let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file());
        let stamp = meta
            .as_ref()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        let mut projects = self.projects.lock().ok()?;
        if let Some(p) = projects.get(anchor) {
            if p.stamp == stamp {
                return Some(Arc::clone(p));
            }
        }
        let old = projects.remove(anchor);
        if old.is_some() {
            self.ties.epoch.fetch_add(1, Ordering::SeqCst);
        }
        let Some(meta) = meta else {
            // The file is gone: so are its servers.
            stop_later(
                old.map(|o| o.servers.clone()).unwrap_or_default(),
                McpStopReason::ProjectFileChanged,
            );
            return None;
        };
        if old.is_none() && projects.len() >= MAX_PROJECTS {
            // Forget a workspace none of whose servers runs (listing
            // arbitrary directories must not grow this without end).
            let idle = projects
                .iter()
                .find(|(_, p)| p.servers.iter().all(|s| !s.is_running()))
                .map(|(a, _)| a.clone());
            if let Some(a) = idle {
                projects.remove(&a);
            }
        }
        let (servers, mut refused) = if meta.len() > MAX_FILE {
            (
                Vec::new(),
                vec![(
                    ".mcp.json".to_owned(),
                    format!("is larger than {MAX_FILE} bytes"),
                )],
            )
        } else {
            match std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot be read: {e}"))
                .and_then(|text| parse_project(&text, anchor))
            {
                Ok(found) => found,
                Err(why) => (Vec::new(), vec![(".mcp.json".to_owned(), why)]),
            }
        };
        let mut kept = Vec::new();
        let mut before: Vec<Arc<Server>> = old.map(|o| o.servers.clone()).unwrap_or_default();
        for c in servers {
            if self.configured().iter().any(|s| s.config.name == c.name) {
                refused.push((
                    c.name.clone(),
                    "a server of the config file has this name, and it wins".to_owned(),
                ));
                continue;
            }
            // A server the file describes as before goes on as it is.
            if let Some(i) = before.iter().position(|s| s.config == c) {
                kept.push(before.swap_remove(i));
                continue;
            }
            let slot = format!("project-{}/{}", tag(anchor), c.name);
            kept.push(Arc::new(Server::new(c, &self.log_dir, slot, &self.ties)));
        }
        // The rest is no longer described as it was: stopped.
        stop_later(before, McpStopReason::ProjectFileChanged);
        let project = Arc::new(Project {
            stamp,
            servers: kept,
            refused,
        });
        projects.insert(anchor.to_path_buf(), Arc::clone(&project));
        Some(project)
    }

    /// Whether `c` may start: a config server always; a project's once
    /// its command line was approved for its workspace.
    pub(super) fn is_approved(&self, c: &ServerConfig) -> bool {
        let Some(anchor) = &c.project else {
            return true;
        };
        let key = (anchor.clone(), c.name.clone(), c.command_line());
        self.approved.lock().is_ok_and(|a| a.contains(&key))
    }

    /// Why `c` may not run now (`None`: it may): the operator disabled
    /// it, or it is a project's server whose command line is not
    /// approved.
    pub(super) fn held(&self, c: &ServerConfig) -> Option<super::server::Phase> {
        use super::server::Phase;
        let key = (c.project.clone(), c.name.clone());
        if self.disabled.lock().is_ok_and(|d| d.contains(&key)) {
            return Some(Phase::Disabled);
        }
        (!self.is_approved(c)).then_some(Phase::AwaitingApproval)
    }

    /// The servers the operator disabled, as the store records them (at
    /// start, and after each switch).
    pub fn set_disabled(&self, switched: &[McpSwitch]) {
        if let Ok(mut d) = self.disabled.lock() {
            *d = switched
                .iter()
                .filter(|x| x.disabled)
                .map(|x| (x.workspace.as_ref().map(PathBuf::from), x.name.clone()))
                .collect();
        }
        self.ties.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// The server `name` (of `workspace`'s `.mcp.json`, or the config's),
    /// to switch: `Err` says what exists instead.
    pub fn switch_for(
        &self,
        workspace: Option<&Path>,
        name: &str,
        disabled: bool,
    ) -> Result<(McpSwitch, Option<Arc<Server>>), String> {
        let server = match workspace {
            None => self
                .configured()
                .into_iter()
                .find(|s| s.config.name == name),
            Some(w) => self
                .project(w)
                .and_then(|p| p.servers.iter().find(|s| s.config.name == name).cloned()),
        };
        let Some(server) = server else {
            let names: Vec<String> = self.views(workspace).into_iter().map(|v| v.name).collect();
            return Err(format!(
                "no MCP server `{name}`{} (there are: {})",
                workspace
                    .map(|w| format!(" in {}", w.display()))
                    .unwrap_or_default(),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ));
        };
        let switch = McpSwitch {
            workspace: workspace.map(|w| w.display().to_string()),
            name: name.to_owned(),
            disabled,
        };
        Ok((switch, Some(server)))
    }

    /// The approvals recorded in the store (at start, and after each).
    pub fn set_approvals(&self, approvals: &[McpApproval]) {
        if let Ok(mut a) = self.approved.lock() {
            *a = approvals
                .iter()
                .map(|x| {
                    (
                        PathBuf::from(&x.workspace),
                        x.name.clone(),
                        x.command_line.clone(),
                    )
                })
                .collect();
        }
        self.ties.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// What approving `name` of `anchor`'s `.mcp.json` records: its
    /// command line as the file says it now.
    pub fn approval_for(&self, anchor: &Path, name: &str) -> Result<McpApproval, String> {
        let project = self
            .project(anchor)
            .ok_or_else(|| format!("{} has no .mcp.json", anchor.display()))?;
        if let Some((_, why)) = project.refused.iter().find(|(n, _)| n == name) {
            return Err(format!("`{name}` in .mcp.json cannot be used: {why}"));
        }
        let server = project
            .servers
            .iter()
            .find(|s| s.config.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = project
                    .servers
                    .iter()
                    .map(|s| s.config.name.as_str())
                    .collect();
                format!(
                    "{}/.mcp.json defines no server `{name}` (it defines: {})",
                    anchor.display(),
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                )
            })?;
        Ok(McpApproval {
            workspace: anchor.display().to_string(),
            name: name.to_owned(),
            command_line: server.config.command_line(),
        })
    }
}

/// Stop servers a changed `.mcp.json` (or config file) no longer
/// describes as they were.
pub(super) fn stop_later(servers: Vec<Arc<Server>>, why: McpStopReason) {
    // Retired at once: no call still holding one starts it again.
    for s in &servers {
        s.hold(Some(super::server::Phase::Disabled));
    }
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move {
            for s in servers {
                s.stop(why).await;
            }
        });
    }
}
