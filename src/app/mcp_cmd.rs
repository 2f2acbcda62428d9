//! `holon mcp list`: the configured MCP servers. Through the runtime when
//! one runs (each server's state and the tools it offers); otherwise the
//! configuration, every server idle until a runtime's first turn.

use std::process::ExitCode;

use super::commands::Out;
use super::Context;
use crate::model::mcp::McpServerInfo;

pub async fn mcp_list(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    use crate::protocol::{Request, RuntimeClient};
    let (servers, live): (Vec<McpServerInfo>, bool) = match super::daemon::connect(ctx).await {
        Some(client) => (client.call(Request::McpList).await?.take()?, true),
        None => {
            let hub = crate::runtime::mcp::Hub::new(
                ctx.config.mcp_servers.clone(),
                &ctx.paths.data_dir,
                Vec::new(),
            );
            (hub.views(), false)
        }
    };
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&servers)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if servers.is_empty() {
        out.line("no MCP servers are configured ([mcp_servers.NAME] in config.toml)")?;
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
