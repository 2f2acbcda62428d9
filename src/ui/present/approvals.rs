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
            if let Some(r) = &a.review {
                let pending = a.status == crate::model::approval::ApprovalStatus::Pending;
                let words = super::review_words(r, pending);
                line.push_str(&format!("\n    {}", field(&words)));
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

/// `holon approvals audit`: one line per reviewed request, newest first:
/// when, the verdict and whether it answered, the model, the request,
/// its cost and the policy's digest (its first 12 hex digits).
pub fn audit_lines(records: &[ApprovalRecord]) -> Vec<String> {
    let reviewed: Vec<(&ApprovalRecord, &crate::model::review::ApprovalReview)> = records
        .iter()
        .filter_map(|a| a.review.as_ref().map(|r| (a, r)))
        .collect();
    if reviewed.is_empty() {
        return vec!["no reviewed approvals in that range".to_owned()];
    }
    reviewed
        .into_iter()
        .map(|(a, r)| {
            let answered = match (r.applied, a.status) {
                (true, _) => "answered by the reviewer".to_owned(),
                (false, ApprovalStatus::Pending) => "waiting for a person".to_owned(),
                (false, s) => format!("{} by a person", s.as_str()),
            };
            let cost = r.cost_usd.map(|c| format!(" ${c:.4}")).unwrap_or_default();
            let digest: String = r.policy_digest.chars().take(12).collect();
            let why = match (&r.fallback, r.reason.is_empty()) {
                (Some(f), _) => f.clone(),
                (None, _) => r.reason.clone(),
            };
            format!(
                "{}  {}  {} ({answered})  {}  {} {} {}  — {}  [{} ms, {}+{} tokens{cost}, policy {digest}]",
                r.reviewed_at,
                a.id,
                r.verdict.as_str(),
                field(&r.model),
                a.agent_id,
                field(&a.tool_name),
                field(&a.summary),
                field(&why),
                r.latency_ms,
                r.input_tokens,
                r.output_tokens,
            )
        })
        .collect()
}
