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
        for line in describe(s) {
            out.line(&line)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A server as lines of text (pure).
pub fn describe(s: &McpServerInfo) -> Vec<String> {
    let state = match (&s.reason, s.retry_in_ms) {
        (Some(r), Some(ms)) if ms > 0 => {
            format!("failed: {r} (tried again after {} s)", ms.div_ceil(1000))
        }
        (Some(r), _) => format!("failed: {r}"),
        _ => s.state.clone(),
    };
    let tools = match s.tools.len() {
        0 => String::new(),
        1 => " · 1 tool".to_owned(),
        n => format!(" · {n} tools"),
    };
    let mut lines = vec![format!("{} ({}) {state}{tools}", s.name, s.transport)];
    for t in &s.tools {
        let ro = if t.read_only { "  read-only" } else { "" };
        lines.push(format!("  {}{ro}", t.exposed));
    }
    for d in &s.dropped {
        lines.push(format!("  left out: {} — {}", d.tool, d.reason));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mcp::{McpDroppedTool, McpToolInfo};

    #[test]
    fn a_server_reads_as_lines() {
        let s = McpServerInfo {
            name: "gh".into(),
            transport: "stdio".into(),
            state: "running".into(),
            reason: None,
            retry_in_ms: None,
            tools: vec![McpToolInfo {
                name: "get".into(),
                exposed: "mcp__gh__get".into(),
                read_only: true,
            }],
            dropped: vec![McpDroppedTool {
                tool: "odd".into(),
                reason: "why".into(),
            }],
            log: "/l".into(),
        };
        assert_eq!(
            describe(&s),
            [
                "gh (stdio) running · 1 tool",
                "  mcp__gh__get  read-only",
                "  left out: odd — why"
            ]
        );
        let failed = McpServerInfo {
            state: "failed".into(),
            reason: Some("cannot start `x`".into()),
            retry_in_ms: Some(1500),
            tools: Vec::new(),
            dropped: Vec::new(),
            ..s
        };
        assert_eq!(
            describe(&failed),
            ["gh (stdio) failed: cannot start `x` (tried again after 2 s)"]
        );
    }
}
