//! The agent's external trigger in words, for `holon trigger show` and the
//! console's `/trigger`: its URL (marked as the capability secret it is),
//! the listener, open waits, recent deliveries and retired descriptors.

use crate::protocol::types::{DeliveryReceipt, TriggerView, WakeHintOutcome};

fn outcome(o: WakeHintOutcome) -> &'static str {
    match o {
        WakeHintOutcome::Submitted => "woke the agent",
        WakeHintOutcome::Coalesced => "merged into the pending wake",
        WakeHintOutcome::Ignored => "recorded; the agent is stopped",
    }
}

/// One line per fact, label first.
pub fn lines(v: &TriggerView) -> Vec<String> {
    let mut out = vec![format!("agent     {}", v.agent_id)];
    match &v.trigger {
        Some(t) => out.push(format!(
            "trigger   {} ({}, {} deliveries{})",
            t.external_trigger_id,
            t.status.as_str(),
            t.trigger_count,
            t.last_triggered_at
                .as_deref()
                .map(|at| format!(", last {at}"))
                .unwrap_or_default()
        )),
        None => out.push("trigger   none active (revoked); rotate issues a new URL".to_owned()),
    }
    match &v.trigger_url {
        Some(url) => {
            out.push(format!("url       {url}"));
            out.push("          a capability secret: whoever holds it can wake this agent".into());
        }
        None if v.trigger.is_some() => out.push(
            "url       not served now: start the runtime (`holon --detach`) to serve it".into(),
        ),
        None => {}
    }
    out.push(format!("http      {}", v.ingress.describe()));
    for w in &v.open_waits {
        out.push(format!(
            "waiting   {}: {} (source {}, ref {})",
            w.id,
            w.description.as_deref().unwrap_or(""),
            w.source.as_deref().unwrap_or("?"),
            w.external_ref.as_deref().unwrap_or("any")
        ));
    }
    for d in &v.recent_deliveries {
        let p = &d.delivery;
        let mut line = format!(
            "delivery  {}  {}{}{}: {}",
            d.at,
            p.meta.source.as_deref().unwrap_or("(no source)"),
            p.meta
                .resource
                .as_deref()
                .map(|r| format!(" {r}"))
                .unwrap_or_default(),
            p.meta
                .summary
                .as_deref()
                .map(|s| format!(" \"{s}\""))
                .unwrap_or_default(),
            outcome(p.outcome),
        );
        if !p.satisfied_waiting_intent_ids.is_empty() {
            line.push_str(&format!(
                "; satisfied {}",
                p.satisfied_waiting_intent_ids.join(", ")
            ));
        }
        out.push(line);
    }
    for h in &v.history {
        out.push(format!(
            "retired   {} {} at {}",
            h.external_trigger_id,
            h.status.as_str(),
            h.updated_at
        ));
    }
    out
}

/// What a delivery did, in one or two lines.
pub fn receipt(r: &DeliveryReceipt) -> String {
    let mut s = format!(
        "delivered to {} through {} (delivery {}): {}",
        r.agent_id,
        r.external_trigger_id,
        r.trigger_count,
        outcome(r.outcome)
    );
    if !r.satisfied_waiting_intent_ids.is_empty() {
        s.push_str(&format!(
            "\nsatisfied {}",
            r.satisfied_waiting_intent_ids.join(", ")
        ));
    }
    s
}
