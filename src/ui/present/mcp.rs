//! MCP servers in words, for `holon mcp list` and the console's `/mcp`:
//! each server's transport and state (with why it failed and when it is
//! tried again), the tools it offers and the ones it left out.

use crate::model::mcp::McpServerInfo;

/// A server as lines of text.
pub fn lines(s: &McpServerInfo) -> Vec<String> {
    let state = match (s.state.as_str(), &s.reason, s.retry_in_ms) {
        ("failed", Some(r), Some(ms)) if ms > 0 => {
            format!("failed: {r} (tried again after {} s)", ms.div_ceil(1000))
        }
        (_, Some(r), _) => format!("{}: {r}", s.state),
        ("awaiting_approval", None, _) => format!(
            "awaiting your approval to run `{}` (holon mcp approve {})",
            s.command_line.as_deref().unwrap_or("?"),
            s.name
        ),
        _ => s.state.clone(),
    };
    let tools = match s.tools.len() {
        0 => String::new(),
        1 => " · 1 tool".to_owned(),
        n => format!(" · {n} tools"),
    };
    let whence = match (&s.workspace, s.transport.is_empty()) {
        (Some(w), true) => format!("{w}/.mcp.json"),
        (Some(w), false) => format!("{}, {w}/.mcp.json", s.transport),
        (None, _) => s.transport.clone(),
    };
    let mut lines = vec![format!("{} ({whence}) {state}{tools}", s.name)];
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
            workspace: None,
            command_line: None,
        };
        assert_eq!(
            lines(&s),
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
            lines(&failed),
            ["gh (stdio) failed: cannot start `x` (tried again after 2 s)"]
        );
        let waiting = McpServerInfo {
            state: "awaiting_approval".into(),
            reason: None,
            workspace: Some("/repo".into()),
            command_line: Some("npx -y srv".into()),
            ..failed
        };
        assert_eq!(
            lines(&waiting),
            ["gh (stdio, /repo/.mcp.json) awaiting your approval to run `npx -y srv` (holon mcp approve gh)"]
        );
    }
}
