//! MCP servers in words: for `holon mcp list` and the console's `/mcp`,
//! each server's transport and state (with why it failed and when it is
//! tried again), the tools it offers and the ones it left out; and the
//! rows of an MCP call and of a server starting, failing and stopping.

use serde_json::Value;

use super::describe_turns::tool_hint;
use super::words::*;
use super::OperatorEvent;
use crate::model::mcp::{
    McpServerFailed, McpServerInfo, McpServerStarted, McpServerStopped, McpStopReason,
};
use crate::protocol::events as ev;

/// An MCP call: `server · tool[ failed][: hint] (duration)[ → result]`,
/// the result's first line (or the error's message).
pub(super) fn executed(
    p: &ev::ToolExecuted,
    server: &str,
    tool: &str,
    out: &mut OperatorEvent,
) -> String {
    out.title = format!("{server} · {tool}");
    out.body = body(Some(&p.result_preview));
    let head = match p.is_error {
        true => format!("{server} · {tool} failed"),
        false => format!("{server} · {tool}"),
    };
    let hint = tool_hint(tool, &p.arguments);
    let line = paren(colon(head, hint), Some(duration(p.duration_ms)));
    let result: Option<Value> = serde_json::from_str(&p.result_preview).ok();
    let said = result.as_ref().and_then(|r| {
        let key = if p.is_error { "message" } else { "text" };
        r.get(key)?.as_str().and_then(nonblank).map(|t| {
            let first = t.lines().next().unwrap_or(t);
            one_line(first, 60)
        })
    });
    match said {
        Some(s) => format!("{line} → {s}"),
        None => line,
    }
}

/// ` of WORKSPACE` for a `.mcp.json` server, else nothing.
pub(super) fn of_workspace(workspace: Option<&str>) -> String {
    workspace.map(|w| format!(" of {w}")).unwrap_or_default()
}

pub(super) fn started(p: &McpServerStarted) -> String {
    format!(
        "MCP server `{}`{} started over {} ({}, {} ms)",
        p.name,
        of_workspace(p.workspace.as_deref()),
        p.transport,
        counted(p.tools as u64, "tool", "tools"),
        p.startup_ms
    )
}

pub(super) fn failed(p: &McpServerFailed) -> String {
    format!(
        "MCP server `{}`{} failed: {} (tried again after {} s)",
        p.name,
        of_workspace(p.workspace.as_deref()),
        p.reason,
        p.retry_in_ms.div_ceil(1000)
    )
}

pub(super) fn stopped(p: &McpServerStopped) -> String {
    let why = match p.reason {
        McpStopReason::Shutdown => "the runtime stopped",
        McpStopReason::ConfigChanged => "its config changed",
        McpStopReason::ProjectFileChanged => "its .mcp.json changed",
        McpStopReason::Disabled => "disabled by the operator",
    };
    format!(
        "MCP server `{}`{} stopped: {why}",
        p.name,
        of_workspace(p.workspace.as_deref())
    )
}

/// What the reviewer said of starting a project server (in `state`):
/// its allow approves it under `allow_and_deny`, after its hold, unless
/// the operator disables the server first; anything else is advice.
pub fn review_words(r: &crate::model::review::ApprovalReview, state: &str) -> String {
    use crate::model::review::{ReviewVerdict, ReviewerMay};
    let why = match (&r.fallback, r.reason.is_empty()) {
        (Some(f), _) => format!(" ({f})"),
        (None, false) => format!(": {}", r.reason),
        (None, true) => String::new(),
    };
    let waiting = state == "awaiting_approval";
    let effect = match (r.verdict, r.may, &r.runs_at) {
        _ if !waiting => String::new(),
        (ReviewVerdict::Allow, ReviewerMay::AllowAndDeny, Some(t)) => format!(
            " — it approves it at {} UTC unless you disable it first",
            t.get(11..19).unwrap_or(t)
        ),
        _ if waiting => " — advice only: you decide".to_owned(),
        _ => String::new(),
    };
    format!(
        "reviewer {} says {}{why}{effect}",
        r.model,
        r.verdict.as_str()
    )
}

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
    if let Some(r) = &s.review {
        let words = review_words(r, &s.state);
        lines.push(format!("  {}", crate::model::text::escape_hidden(&words)));
    }
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
            review: None,
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
            review: None,
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
            review: None,
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
