//! What `mcp.list` answers: each configured MCP server, where it is, the
//! tools it offers the model and the ones it had to leave out.

use serde::{Deserialize, Serialize};

/// One server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerInfo {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `idle` (not needed yet), `starting`, `running`, `failed`,
    /// `disabled`, `awaiting_approval` (a project's server the operator
    /// has not approved) or `invalid` (a `.mcp.json` entry that cannot be
    /// used; `reason` says why).
    pub state: String,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When a failed server is tried again, at the next need after this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_in_ms: Option<u64>,
    /// The workspace whose `.mcp.json` defines it (absent: the config
    /// file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// A project server's command line, as approving it records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<String>,
    /// The tools the model is offered (as of the last turn that built a
    /// catalog).
    #[serde(default)]
    pub tools: Vec<McpToolInfo>,
    /// Tools left out, and why.
    #[serde(default)]
    pub dropped: Vec<McpDroppedTool>,
    /// The server's stderr log.
    pub log: String,
    /// What the reviewer said of starting it, for this command line (a
    /// project server awaiting approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::ApprovalReview>,
}

/// A tool the model is offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolInfo {
    /// The name the server knows it by.
    pub name: String,
    /// The name the model calls it by (`mcp__<server>__<tool>`).
    pub exposed: String,
    /// The server marks it read-only (`readOnlyHint`): `on_write` runs it
    /// without asking.
    pub read_only: bool,
}

/// A tool the model is not offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpDroppedTool {
    pub tool: String,
    pub reason: String,
}

/// The operator's approval of a workspace's `.mcp.json` server: its exact
/// command line (or URL). A different command line is not approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpApproval {
    /// The workspace's directory (its anchor).
    pub workspace: String,
    pub name: String,
    pub command_line: String,
}

/// A server name: what `mcp__<server>__<tool>` is built from, so the
/// characters every wire format accepts in a tool name, and no `__`
/// (which separates the parts).
pub fn check_server_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !name.contains("__")
        && !name.starts_with('_')
        && !name.ends_with('_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a server name: use 1 to 32 letters, digits, `_` or `-`, without `__` and not starting or ending with `_`"
        ))
    }
}

/// The operator disabling (or enabling again) a server, kept in the store:
/// a disabled server is stopped and offers no tools until enabled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpSwitch {
    /// The workspace of a `.mcp.json` server (absent: the config file's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    pub name: String,
    pub disabled: bool,
}

/// A server came up: `mcp_server_started`, in the ledger of the agent
/// whose turn needed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStarted {
    pub name: String,
    /// The workspace of a `.mcp.json` server (absent: the config file's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// `stdio` or `http`.
    pub transport: String,
    /// The tools it listed (before filters and checks).
    pub tools: usize,
    /// From spawn (or connect) through the handshake and the listing.
    pub startup_ms: u64,
}

/// A server failed to start, or went down: `mcp_server_failed`, in the
/// ledgers of the agents that needed or used it. Its tools answer a tool
/// error until it is started again, at the next need after `retry_in_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerFailed {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    pub reason: String,
    pub retry_in_ms: u64,
    /// Failures in a row (a server up for a minute starts again at 1).
    pub failures: u32,
}

/// Why a running server was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpStopReason {
    /// The runtime stopped.
    Shutdown,
    /// Its `[mcp_servers]` entry changed or went away.
    ConfigChanged,
    /// Its workspace's `.mcp.json` changed or went away.
    ProjectFileChanged,
    /// The operator disabled it.
    Disabled,
}

/// A running server was stopped, its process group with it:
/// `mcp_server_stopped`, in the ledgers of the agents that used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStopped {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    pub reason: McpStopReason,
}

/// The prefix of every MCP tool's name as the model calls it.
pub const TOOL_PREFIX: &str = "mcp__";

/// Whether `name` is an MCP tool's (`mcp__<server>__<tool>`).
pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(TOOL_PREFIX)
}

/// An MCP tool name's server and tool parts (server names hold no `__`,
/// so the first one after the prefix separates them).
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(TOOL_PREFIX)?.split_once("__")
}

/// A running MCP call's progress as its server reports it: transient,
/// shown on the call's row while it runs and never stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpProgress {
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// The server's words, one line of at most 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl McpProgress {
    /// The progress a server reported, its message made one printable
    /// line of at most 200 characters (a server's text is not trusted to
    /// be either).
    pub fn new(progress: f64, total: Option<f64>, message: Option<&str>) -> McpProgress {
        let message = message
            .map(|m| {
                let line: String = m
                    .chars()
                    .filter(|c| !invisible(*c))
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                let line = line.trim();
                match line.chars().count() > 200 {
                    true => line.chars().take(199).chain(['…']).collect(),
                    false => line.to_owned(),
                }
            })
            .filter(|m| !m.is_empty());
        McpProgress {
            progress: finite(progress),
            total: total.map(finite).filter(|t| *t > 0.0),
            message,
        }
    }

    /// `3/10 step 3 of 10`, `42%`, or the message alone when the numbers
    /// say nothing.
    pub fn line(&self) -> String {
        let count = |v: f64| match (v.fract() == 0.0, v.abs() < 1e15) {
            (true, true) => format!("{}", v as i64),
            (false, true) => format!("{v:.1}"),
            // Bounded, however large a server says it is.
            (_, false) => format!("{v:.2e}"),
        };
        let figure = match self.total {
            Some(100.0) => format!("{}%", count(self.progress)),
            Some(t) => format!("{}/{}", count(self.progress), count(t)),
            None => count(self.progress),
        };
        match &self.message {
            Some(m) => format!("{figure} {m}"),
            None => figure,
        }
    }
}

/// Characters that change how text around them reads without showing
/// themselves: bidirectional overrides and isolates, zero-width ones.
fn invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_one_bounded_line() {
        let p = McpProgress::new(3.0, Some(10.0), Some("step\n3\x1b[2J of 10"));
        assert_eq!(p.line(), "3/10 step 3 [2J of 10");
        assert_eq!(McpProgress::new(42.0, Some(100.0), None).line(), "42%");
        assert_eq!(McpProgress::new(1.5, None, Some("  ")).line(), "1.5");
        let long = McpProgress::new(1.0, None, Some(&"x".repeat(500)));
        assert_eq!(long.message.unwrap().chars().count(), 200);
        let odd = McpProgress::new(f64::NAN, Some(f64::INFINITY), None);
        assert_eq!((odd.progress, odd.total), (0.0, None));
        let sly = McpProgress::new(1e300, None, Some("a\u{202e}b\u{200b}c"));
        assert_eq!(sly.line(), "1.00e300 abc");
    }
}
