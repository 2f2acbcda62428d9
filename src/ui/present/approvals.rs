//! Approvals in words, for `holon approvals`, `holon approve/deny` and
//! the console's `/approvals`.

use super::words::printable;
use crate::protocol::types::{ApprovalRecord, ApprovalStatus};

/// A field the model (or an MCP server) wrote, as one line the terminal
/// cannot be made to misread: escapes and hidden characters shown,
/// newlines shown as `⏎` rather than breaking the line.
fn field(s: &str) -> String {
    printable(s).replace('\n', " ⏎ ")
}

/// One line per approval, pending first as given.
pub fn lines(records: &[ApprovalRecord]) -> Vec<String> {
    if records.is_empty() {
        return vec!["no approvals are waiting".to_owned()];
    }
    records
        .iter()
        .map(|a| {
            let mut line = format!(
                "{}  {}  {} {} {}",
                a.id,
                a.agent_id,
                a.status.as_str(),
                field(&a.tool_name),
                field(&a.summary)
            );
            match a.status {
                ApprovalStatus::Pending => line.push_str(&format!(
                    " — {} (since {}; in {})",
                    field(&a.why),
                    a.requested_at,
                    a.workspace_id
                )),
                ApprovalStatus::Granted | ApprovalStatus::Denied => {
                    if let Some(n) = &a.note {
                        line.push_str(&format!(" — \"{}\"", field(n)));
                    }
                }
            }
            line
        })
        .collect()
}

/// What an answer did.
pub fn answered(a: &ApprovalRecord) -> String {
    let (tool, summary) = (field(&a.tool_name), field(&a.summary));
    match a.status {
        ApprovalStatus::Granted => format!(
            "approved {} {} for {}{}; the result went to the agent",
            tool,
            summary,
            a.agent_id,
            if a.always {
                " (and calls like it from now on)"
            } else {
                ""
            }
        ),
        ApprovalStatus::Denied => format!(
            "denied {} {} for {}; the agent was told",
            tool, summary, a.agent_id
        ),
        ApprovalStatus::Pending => format!("{} is still pending", a.id),
    }
}
