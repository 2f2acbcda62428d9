//! Approvals in words, for `holon approvals`, `holon approve/deny` and
//! the console's `/approvals`.

use crate::protocol::types::{ApprovalRecord, ApprovalStatus};

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
                a.tool_name,
                a.summary
            );
            match a.status {
                ApprovalStatus::Pending => line.push_str(&format!(
                    " — {} (since {}; in {})",
                    a.why, a.requested_at, a.workspace_id
                )),
                ApprovalStatus::Granted | ApprovalStatus::Denied => {
                    if let Some(n) = &a.note {
                        line.push_str(&format!(" — \"{n}\""));
                    }
                }
            }
            line
        })
        .collect()
}

/// What an answer did.
pub fn answered(a: &ApprovalRecord) -> String {
    match a.status {
        ApprovalStatus::Granted => format!(
            "approved {} {} for {}{}; the result went to the agent",
            a.tool_name,
            a.summary,
            a.agent_id,
            if a.always {
                " (and calls like it from now on)"
            } else {
                ""
            }
        ),
        ApprovalStatus::Denied => format!(
            "denied {} {} for {}; the agent was told",
            a.tool_name, a.summary, a.agent_id
        ),
        ApprovalStatus::Pending => format!("{} is still pending", a.id),
    }
}
