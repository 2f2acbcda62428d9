//! What asks for the operator: alerts (one row per message, merged),
//! gated calls' approval rows (the oldest waiting one answerable with
//! single keys), and assistant progress that the final brief repeats,
//! hidden.

use super::super::rows::{ApprovalRow, ApprovalState, RowKind};
use super::Conversation;
use crate::model::approval::ApprovalStatus;
use crate::protocol::DisplayMode;
use crate::ui::present::{OperatorEvent, Visibility};

impl Conversation {
    pub(super) fn alert(
        &mut self,
        message_id: Option<String>,
        op: &OperatorEvent,
        brief: Option<&str>,
    ) {
        let mut detail: Vec<String> = op
            .body
            .iter()
            .flat_map(|b| b.lines())
            .map(str::to_owned)
            .collect();
        let summary = whole_summary(&op.summary, &mut detail);
        detail.retain(|d| !d.trim().is_empty() && !summary.contains(d.trim()));
        let existing = message_id
            .as_ref()
            .and_then(|m| self.alerts.get(m).copied());
        if let Some(i) = existing {
            if let RowKind::Alert {
                summary, detail: d, ..
            } = self.rows[i].kind_mut()
            {
                if brief.is_some() {
                    *summary = whole_summary(&op.summary, &mut detail);
                }
                for line in detail {
                    if !d.contains(&line) && !summary.contains(line.trim()) {
                        d.push(line);
                    }
                }
            }
            return;
        }
        let kind = RowKind::Alert {
            summary,
            detail,
            message_id: message_id.clone(),
        };
        let i = self.push(kind, DisplayMode::Info);
        if let Some(m) = message_id {
            self.alerts.insert(m, i);
        }
    }

    /// Assistant progress already repeated by the final brief is hidden.
    pub(super) fn hide_repeated_progress(&mut self, message_id: Option<&str>, brief: &str) {
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let brief = norm(brief);
        for (mid, i) in std::mem::take(&mut self.progress) {
            if mid.as_deref() != message_id {
                continue;
            }
            let RowKind::Event(op) = self.rows[i].kind() else {
                continue;
            };
            let preview = norm(op.body.as_deref().unwrap_or(""));
            let preview = preview
                .split("Requested tools:")
                .next()
                .unwrap_or("")
                .trim();
            let preview = preview.trim_end_matches('…');
            if !preview.is_empty() && brief.starts_with(preview) {
                self.rows[i].hidden = true;
            }
        }
    }

    /// Whether a row still waits for the operator: a call to approve, or
    /// a question asked since their last prompt.
    pub fn needs_operator(&self) -> bool {
        self.rows.iter().any(|r| match r.kind() {
            RowKind::Approval(a) => a.state == ApprovalState::Waiting,
            RowKind::Brief { visibility, .. } => *visibility == Visibility::ActionRequired,
            _ => false,
        })
    }

    /// The row of the waiting call single keys answer: the one the
    /// running turn waits for, else the oldest.
    fn answerable(&self) -> Option<usize> {
        let waiting = |r: &super::Row| matches!(r.kind(), RowKind::Approval(a) if a.state == ApprovalState::Waiting);
        let run = (self.turn.as_ref().filter(|t| t.awaiting)).and_then(|t| t.run_id.clone());
        let awaited = run.and_then(|run| {
            (self.rows.iter()).position(|r| {
                waiting(r) && matches!(r.kind(), RowKind::Approval(a) if a.run_id == run)
            })
        });
        awaited.or_else(|| self.rows.iter().position(waiting))
    }

    /// Mark the call single keys answer (`answerable`).
    pub(super) fn mark_answerable(&mut self) {
        let marked = self.answerable();
        for (i, row) in self.rows.iter_mut().enumerate() {
            let is_marked = matches!(row.kind(), RowKind::Approval(a) if a.keys);
            if (marked == Some(i)) != is_marked {
                if let RowKind::Approval(a) = row.kind_mut() {
                    a.keys = marked == Some(i);
                }
            }
        }
    }

    /// The call the turn `run_id` asked that still waits for the
    /// operator (the turn waits for its answer): its tool and summary.
    pub fn awaited_by(&self, run_id: &str) -> Option<String> {
        self.rows.iter().find_map(|r| match r.kind() {
            RowKind::Approval(a) if a.state == ApprovalState::Waiting && a.run_id == run_id => {
                Some(format!("{} {}", a.tool, a.summary))
            }
            _ => None,
        })
    }

    /// The calls waiting for the operator: the one single keys answer
    /// first (`answerable`), then the others oldest first: (id, summary).
    pub fn waiting_approvals(&self) -> Vec<(String, String)> {
        let first = self.answerable();
        let mut out: Vec<(usize, (String, String))> = self
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r.kind() {
                RowKind::Approval(a) if a.state == ApprovalState::Waiting => {
                    Some((i, (a.id.clone(), format!("{} {}", a.tool, a.summary))))
                }
                _ => None,
            })
            .collect();
        out.sort_by_key(|(i, _)| Some(*i) != first);
        out.into_iter().map(|(_, x)| x).collect()
    }
}

/// The row of a gated call, from its approval record.
pub(super) fn approval_row(a: &crate::model::approval::ApprovalRecord) -> ApprovalRow {
    use crate::model::approval::{always_rule, Action};
    let text = |k: &str| {
        a.arguments
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let escape = a.arguments.get("escalate").and_then(|v| v.as_bool()) == Some(true);
    let cmd = match a.tool_name.as_str() {
        "ExecCommand" => text("cmd"),
        _ => None,
    };
    let patch = match a.tool_name.as_str() {
        "ApplyPatch" => text("patch"),
        _ => None,
    };
    let always_adds = match (&cmd, &patch) {
        (Some(c), _) if !escape => match always_rule(&Action::Command(c.clone())) {
            (Some(rule), _) => Some(format!("`{rule}`")),
            _ => None,
        },
        (_, Some(_)) => Some(format!("writing {}", a.summary.trim_matches('`'))),
        _ if crate::model::mcp::is_mcp_tool(&a.tool_name) => {
            Some(format!("the tool `{}`", a.tool_name))
        }
        _ => None,
    };
    ApprovalRow {
        id: a.id.clone(),
        run_id: a.run_id.clone(),
        tool: a.tool_name.clone(),
        summary: a.summary.clone(),
        why: a.why.clone(),
        workspace_id: a.workspace_id.clone(),
        cmd,
        justification: text("justification").filter(|_| escape),
        patch,
        always_adds,
        review: (a.review.as_ref()).map(|r| {
            let pending = a.status == ApprovalStatus::Pending;
            crate::ui::present::review_words(r, pending)
        }),
        by_reviewer: a.review.as_ref().is_some_and(|r| r.applied),
        keys: false,
        state: match a.status {
            ApprovalStatus::Pending => ApprovalState::Waiting,
            ApprovalStatus::Granted => ApprovalState::Approved { always: a.always },
            ApprovalStatus::Denied => ApprovalState::Denied {
                note: a.note.clone(),
            },
        },
    }
}

/// A summary cut short (`Turn failed: the provider said …`) whose whole
/// text is a line of the detail: that line completes the summary and
/// leaves the detail, so a failure is said once, not cut then repeated.
pub(super) fn whole_summary(summary: &str, detail: &mut Vec<String>) -> String {
    let Some(stem) = summary.strip_suffix('…') else {
        return summary.to_owned();
    };
    let stem = stem.trim_end();
    for (i, line) in detail.iter().enumerate() {
        let line_t = line.trim();
        let probe: String = line_t.chars().take(20).collect();
        if probe.chars().count() < 8 {
            continue;
        }
        if let Some(at) = stem.find(&probe) {
            if line_t.starts_with(&stem[at..]) {
                let whole = format!("{}{line_t}", &stem[..at]);
                detail.remove(i);
                return whole;
            }
        }
    }
    summary.to_owned()
}

#[cfg(test)]
mod whole_summary_tests {
    use super::whole_summary;

    #[test]
    fn a_cut_summary_is_completed_by_its_detail_line() {
        let full = "the provider refused the request: the model `gpt-x` does not exist or you \
                    have no access to it";
        let mut detail = vec![
            full.to_owned(),
            "provider_error · openai · gpt-x".to_owned(),
        ];
        let cut = format!("Turn failed: {}…", &full[..40]);
        assert_eq!(
            whole_summary(&cut, &mut detail),
            format!("Turn failed: {full}")
        );
        assert_eq!(detail, ["provider_error · openai · gpt-x"]);
        // Not cut, or no line completes it: as it was.
        let mut other = vec!["something else entirely".to_owned()];
        assert_eq!(
            whole_summary("Turn failed: short", &mut other),
            "Turn failed: short"
        );
        assert_eq!(
            whole_summary("Turn failed: abc…", &mut other),
            "Turn failed: abc…"
        );
        assert_eq!(other.len(), 1);
    }
}
