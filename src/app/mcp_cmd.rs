//! `holon mcp`: the MCP servers. `list` goes through the runtime when one
//! runs (each server's state and the tools it offers); otherwise it reads
//! the configuration and the `.mcp.json`, every server idle until a
//! runtime's first turn. `approve` lets a `.mcp.json` server start: through
//! the runtime, or written to the store here when none runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::commands::Out;
use super::Context;
use crate::model::mcp::{McpApproval, McpServerInfo};
use crate::protocol::{Request, RuntimeClient};

/// The directory of the `.mcp.json` nearest above `dir` (default: here),
/// as the runtime names workspaces: canonical.
fn project_dir(dir: Option<PathBuf>) -> anyhow::Result<Option<PathBuf>> {
    let start = match dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let start = start
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("{}: {e}", start.display()))?;
    Ok(start
        .ancestors()
        .find(|d| d.join(".mcp.json").is_file())
        .map(Path::to_path_buf))
}

pub async fn mcp_list(ctx: &Context, dir: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let project = project_dir(dir)?;
    let (servers, live): (Vec<McpServerInfo>, bool) = match super::daemon::connect(ctx).await {
        Some(client) => {
            let workspace = project.as_ref().map(|p| p.display().to_string());
            (
                client.call(Request::McpList { workspace }).await?.take()?,
                true,
            )
        }
        None => {
            let hub = crate::runtime::mcp::Hub::new(
                ctx.config.mcp_servers.clone(),
                &ctx.paths.data_dir,
                Vec::new(),
            );
            if ctx.paths.store_file().exists() {
                let store = ctx.open_store().await?;
                hub.set_approvals(&crate::runtime::host::mcp::approvals_in(&store)?);
                store.close().await?;
            }
            (hub.views(project.as_deref()), false)
        }
    };
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&servers)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if servers.is_empty() {
        out.line(
            "no MCP servers are configured ([mcp_servers.NAME] in config.toml, or a .mcp.json)",
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if !live {
        out.line("no runtime is running: servers start with a runtime's first turn")?;
    }
    for s in &servers {
        for line in crate::ui::present::mcp::lines(s) {
            out.line(&line)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn mcp_approve(
    ctx: &Context,
    name: &str,
    dir: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let Some(project) = project_dir(dir)? else {
        anyhow::bail!("no .mcp.json here or in a directory above");
    };
    let approval: McpApproval = match super::daemon::connect(ctx).await {
        Some(client) => client
            .call(Request::McpApprove {
                name: name.to_owned(),
                workspace: project.display().to_string(),
            })
            .await?
            .take()?,
        None => {
            let hub = crate::runtime::mcp::Hub::new(
                ctx.config.mcp_servers.clone(),
                &ctx.paths.data_dir,
                Vec::new(),
            );
            let approval = hub
                .approval_for(&project, name)
                .map_err(|e| anyhow::anyhow!(e))?;
            let store = ctx.open_store().await?;
            let done = crate::runtime::host::mcp::record_approval(&store, approval.clone()).await;
            store.close().await?;
            done?;
            approval
        }
    };
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&approval)?)?;
    } else {
        out.line(&format!(
            "approved `{}` of {} to run: {}",
            approval.name, approval.workspace, approval.command_line
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
