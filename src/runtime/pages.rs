//! The pages clients read an agent's history in: its events
//! (`events.page`) and its transcript (`agent.transcript`), read-only and
//! bounded.

use crate::model::agent::AgentRecord;
use crate::store::{Keyed, ReadCtx, StoreError};

/// `events.page`: up to `limit` (at most `MAX_PAGE`) of `agent_id`'s
/// events from `from_seq`, of one kind when given. `None` when there is no
/// such agent.
pub fn events_page(
    rx: &ReadCtx,
    agent_id: &str,
    from_seq: u64,
    limit: usize,
    kind: Option<&str>,
) -> Result<Option<crate::protocol::EventsPage>, crate::store::StoreError> {
    let Some(agent) = rx.agent::<AgentRecord>(agent_id)? else {
        return Ok(None);
    };
    let start = rx.ledger_start(agent_id)?;
    let (from, limit) = (from_seq.max(1), limit.clamp(1, crate::protocol::MAX_PAGE));
    let events = match kind {
        Some(k) => rx.events_of_kind(agent_id, k, from, limit)?,
        None => rx.events(agent_id, from, limit)?,
    };
    let next_seq = events.last().map_or(from, |e| e.event_seq + 1);
    let last_event_seq = rx.last_seq(agent_id)?;
    // The recorded losses this page spans (to the ledger's end when it
    // is the last page).
    let span_end = match events.len() < limit {
        true => last_event_seq,
        false => next_seq.saturating_sub(1),
    };
    let lost = agent
        .lost_events
        .iter()
        .filter(|r| r.to_seq >= from && r.from_seq <= span_end)
        .copied()
        .collect();
    Ok(Some(crate::protocol::EventsPage {
        events,
        next_seq,
        last_event_seq,
        pruned_before: crate::protocol::EventsPage::pruned_marker(from, start),
        lost,
    }))
}

/// `agent.transcript`: the newest `limit` entries (default 50, at most
/// 1,000), oldest first, each image named by its type with its data left
/// out.
pub fn transcript_page(
    rx: &ReadCtx,
    agent_id: &str,
    limit: Option<usize>,
) -> Result<crate::protocol::TranscriptPage, StoreError> {
    use crate::model::transcript::{TranscriptBody, TranscriptEntry};
    let limit = limit.unwrap_or(50).clamp(1, 1000);
    let mut entries: Vec<TranscriptEntry> =
        rx.list_recent(Keyed::Transcript, agent_id, limit + 1)?;
    let more = entries.len() > limit;
    if more {
        entries.remove(0);
    }
    for e in &mut entries {
        if let TranscriptBody::ToolResult { images, .. } = &mut e.body {
            images.iter_mut().for_each(|i| i.data.clear());
        }
    }
    Ok(crate::protocol::TranscriptPage {
        agent_id: agent_id.to_owned(),
        entries,
        more,
    })
}
