//! The waiting plane in words: waits, timers, wake hints, trigger
//! deliveries and approvals (the arms of `describe` for those kinds).

use super::words::*;
use super::OperatorEvent;
use crate::protocol::events as ev;
use crate::protocol::types::{PolicySource, WaitingIntentStatus, WakeHintOutcome};
use crate::protocol::EventRecord;

pub(super) fn waited_for(p: &ev::WaitingIntentChanged) -> Option<String> {
    p.waiting_intent
        .description
        .as_deref()
        .and_then(nonblank)
        .map(preview)
}

pub(super) fn wait_created(p: &ev::WaitingIntentChanged) -> String {
    let w = &p.waiting_intent;
    let head = match w.description.as_deref().and_then(nonblank) {
        Some(d) => format!("Waiting for: {}", preview(d)),
        None => "Waiting for an external change".to_owned(),
    };
    paren(head, w.source.as_deref())
}

pub(super) fn wait_cancelled(p: &ev::WaitingIntentChanged) -> String {
    match p.waiting_intent.status {
        WaitingIntentStatus::Expired => colon("Wait expired", waited_for(p)),
        _ => colon("Wait cancelled", waited_for(p)),
    }
}

pub(super) fn timer_reason(t: &crate::protocol::types::TimerRecord) -> Option<String> {
    t.reason.as_deref().and_then(nonblank).map(preview)
}

pub(super) fn wake_hint_submitted(p: &ev::WakeHint, e: &EventRecord) -> String {
    let from = e.provenance.source.as_deref().map(|s| format!("from {s}"));
    paren(colon("Wake hint", nonblank(&p.reason).map(preview)), from)
}

pub(super) fn trigger_rotated(p: &ev::TriggerChanged) -> String {
    match &p.previous {
        Some(old) => format!(
            "Trigger URL rotated: {} replaces {}, whose URL no longer works",
            p.trigger.external_trigger_id, old.external_trigger_id
        ),
        None => format!("Trigger URL issued ({})", p.trigger.external_trigger_id),
    }
}

/// "Trigger from ci (pr-7): build failed; satisfies wait_1", with what
/// became of the wake.
pub(super) fn trigger_delivered(p: &ev::TriggerDelivered) -> String {
    let from = match (&p.meta.source, &p.meta.resource) {
        (Some(s), Some(r)) => format!("Trigger from {s} ({r})"),
        (Some(s), None) => format!("Trigger from {s}"),
        (None, Some(r)) => format!("Trigger ({r})"),
        (None, None) => "Trigger delivered".to_owned(),
    };
    let mut out = colon(from, p.meta.summary.as_deref().map(preview));
    if !p.satisfied_waiting_intent_ids.is_empty() {
        out.push_str(&format!(
            "; satisfies {}",
            p.satisfied_waiting_intent_ids.join(", ")
        ));
    }
    match p.outcome {
        WakeHintOutcome::Submitted => {}
        WakeHintOutcome::Coalesced => out.push_str(" (merged into the pending wake)"),
        WakeHintOutcome::Ignored => out.push_str(" (the agent is stopped: no wake)"),
    }
    out
}

/// What waits, with the commands that answer it; why it asks is the body.
pub(super) fn approval_requested(p: &ev::ApprovalChanged, out: &mut OperatorEvent) -> String {
    let a = &p.approval;
    out.body = Some(a.why.clone());
    format!(
        "{} {} waits for approval — /approve {} · /deny {}",
        a.tool_name,
        preview(&a.summary),
        a.id,
        a.id
    )
}

pub(super) fn approval_granted(p: &ev::ApprovalChanged) -> String {
    let a = &p.approval;
    let always = if a.always {
        " (always allowed from now on)"
    } else {
        ""
    };
    format!("Approved {} {}{always}", a.tool_name, preview(&a.summary))
}

pub(super) fn approval_denied(p: &ev::ApprovalChanged) -> String {
    let a = &p.approval;
    let head = format!("Denied {} {}", a.tool_name, preview(&a.summary));
    colon(head, a.note.as_deref().map(preview))
}

pub(super) fn history_lost(p: &ev::HistoryLost) -> String {
    let ranges: Vec<String> = p
        .ranges
        .iter()
        .map(|r| match r.from_seq == r.to_seq {
            true => r.from_seq.to_string(),
            false => format!("{}–{}", r.from_seq, r.to_seq),
        })
        .collect();
    let mut out = match (ranges.is_empty(), p.agent_record_lost) {
        (true, true) => format!(
            "History lost: this agent's record could not be read back by the {}; it was made \
             anew with the defaults, paused until you resume it",
            p.source
        ),
        (_, record) => format!(
            "History lost: {} ({}) could not be read back by the {}{}",
            counted(p.events(), "event", "events"),
            ranges.join(", "),
            p.source,
            match record {
                true => ", nor this agent's record (made anew with the defaults, paused)",
                false => "",
            }
        ),
    };
    if !p.dropped_queue_entries.is_empty() {
        out.push_str(&format!(
            "; {} queued messages whose records were lost were dropped",
            p.dropped_queue_entries.len()
        ));
    }
    out
}

pub(super) fn store_pruned(p: &ev::AgentPruned) -> String {
    let by = match p.by {
        crate::model::retention::PruneBy::Operator => "by the operator",
        crate::model::retention::PruneBy::RetainDays => "for [store] retain_days",
    };
    let mut parts = Vec::new();
    if p.events > 0 {
        parts.push(format!("events {}-{}", p.from_seq, p.to_seq));
    }
    if p.transcript_entries > 0 {
        parts.push(counted(
            p.transcript_entries,
            "transcript entry",
            "transcript entries",
        ));
    }
    if p.tool_executions > 0 {
        parts.push(counted(
            p.tool_executions,
            "tool execution",
            "tool executions",
        ));
    }
    if p.queue_entries > 0 {
        parts.push(counted(
            p.queue_entries,
            "settled queue entry",
            "settled queue entries",
        ));
    }
    format!(
        "Pruned {} older than {} ({} bytes, {by}); history starts at seq {}",
        parts.join(", "),
        p.older_than,
        p.bytes,
        p.ledger_start
    )
}

pub(super) fn default_policy_changed(p: &ev::DefaultPolicy) -> String {
    use crate::model::approval::DefaultPolicySource;
    let whose = match p.source {
        DefaultPolicySource::Operator => "set by the operator",
        DefaultPolicySource::Config => "config [policy]",
    };
    let mut s = format!(
        "Default approval policy is now {} ({whose}); workspaces without their own follow it",
        p.policy.approval.as_str()
    );
    if !p.policy.allow_commands.is_empty() {
        s.push_str(&format!(
            "; allowed: {}",
            p.policy.allow_commands.join(", ")
        ));
    }
    s
}

pub(super) fn policy_changed(p: &ev::WorkspacePolicyChanged) -> String {
    let whose = match p.source {
        PolicySource::Workspace => "its own",
        PolicySource::Runtime => "the runtime's",
    };
    let mut s = format!(
        "Approval policy of {} is now {} ({whose})",
        p.workspace_id,
        p.policy.approval.as_str()
    );
    if !p.policy.allow_commands.is_empty() {
        s.push_str(&format!(
            "; allowed: {}",
            p.policy.allow_commands.join(", ")
        ));
    }
    if let Some(r) = &p.policy.reviewer {
        s.push_str(&format!("; reviewer: {}", r.label()));
    }
    s
}

/// A reviewer's verdict in words: who, what, why, and whether its word
/// answered the request, which is still `pending` or not (one line; the
/// console, the CLI and the events say it alike).
pub fn review_words(r: &crate::model::review::ApprovalReview, pending: bool) -> String {
    use crate::model::review::{ReviewVerdict, ReviewerMay};
    let why = match (&r.fallback, r.reason.is_empty()) {
        (Some(f), _) => format!(" ({f})"),
        (None, false) => format!(": {}", r.reason),
        (None, true) => String::new(),
    };
    let held = r.runs_at.as_deref().filter(|_| pending).map(|t| {
        let clock = t.get(11..19).unwrap_or(t);
        format!(" — it approves at {clock} UTC unless a person answers first")
    });
    let effect = match (r.applied, r.verdict, r.may) {
        (true, ReviewVerdict::Allow, _) => " — it approved the call",
        (false, ReviewVerdict::Allow, ReviewerMay::AllowAndDeny) if held.is_some() => {
            held.as_deref().unwrap_or_default()
        }
        (true, ReviewVerdict::Deny, _) => " — it denied the call",
        (false, ReviewVerdict::Ask, _) => " — a person decides",
        (false, _, ReviewerMay::Advise) => {
            " — advice only (reviewer_may = advise): a person decides"
        }
        (false, ReviewVerdict::Allow, ReviewerMay::DenyOnly) => {
            " — advice only (reviewer_may = deny_only): a person decides"
        }
        (false, _, _) => " — a person answered first",
        (true, ReviewVerdict::Ask, _) => "",
    };
    format!(
        "reviewer {} says {}{why}{effect}",
        r.model,
        r.verdict.as_str()
    )
}

pub(super) fn approval_reviewed(p: &ev::ApprovalChanged, out: &mut OperatorEvent) -> String {
    let a = &p.approval;
    let Some(r) = &a.review else {
        return format!("Reviewed {} {}", a.tool_name, preview(&a.summary));
    };
    let from = match r.policy_from.is_empty() {
        true => String::new(),
        false => format!(
            " from {}",
            crate::model::text::escape_hidden(&r.policy_from.join(" + "))
        ),
    };
    let pending = a.status == crate::model::approval::ApprovalStatus::Pending;
    out.body = Some(format!(
        "{}\npolicy sha256 {}{from} · {} ms · {} in / {} out tokens{}",
        review_words(r, pending),
        r.policy_digest,
        r.latency_ms,
        r.input_tokens,
        r.output_tokens,
        r.cost_usd
            .map(|c| format!(" · ${c:.4}"))
            .unwrap_or_default()
    ));
    format!(
        "{} {}: {}",
        a.tool_name,
        preview(&a.summary),
        review_words(r, pending)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_record_is_said_with_or_without_lost_events() {
        let mut p = ev::HistoryLost {
            source: "salvage of /tmp/x.redb".into(),
            agent_record_lost: true,
            ..Default::default()
        };
        assert_eq!(
            history_lost(&p),
            "History lost: this agent's record could not be read back by the salvage of \
             /tmp/x.redb; it was made anew with the defaults, paused until you resume it"
        );
        p.ranges = vec![crate::model::retention::LostRange {
            from_seq: 4,
            to_seq: 9,
        }];
        assert_eq!(
            history_lost(&p),
            "History lost: 6 events (4–9) could not be read back by the salvage of \
             /tmp/x.redb, nor this agent's record (made anew with the defaults, paused)"
        );
    }
}
