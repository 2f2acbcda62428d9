//! The ledger's pages in the console: the history read when an agent is
//! shown (and the live events held while it was read), and older pages
//! fetched when the operator scrolls up near the oldest rows held. Each
//! page is built as a conversation of its own and put in front.

use super::conversation::{Conversation, Scroll};
use super::msg::Effect;
use super::rows::{ApprovalState, RowKind, Tone};
use super::state::{History, Pending, State};
use super::update::{apply_live, call, operator_task};
use crate::protocol::{ApiError, EventRecord, EventsPage, Request, Response};
use crate::ui::present::present_event;

/// Events paged in at a time when the operator scrolls up to the oldest
/// rows the console holds.
pub const OLDER_EVENTS: u64 = 500;

/// Rows from the top at which older ones are paged in.
const OLDER_AHEAD: usize = 200;

/// Scrolled up near the oldest rows the console holds, with older events
/// in the ledger: ask for the page before them (one at a time).
pub(crate) fn load_older(state: &mut State, fx: &mut Vec<Effect>) {
    let c = &state.conversation;
    // Following still after scrolling up: what is held is shorter than
    // the screen (in this display mode), so older rows are wanted too.
    let near_top = match c.scroll {
        Scroll::Anchor { row, .. } => row < OLDER_AHEAD,
        Scroll::Follow => c.rows.len() < OLDER_AHEAD,
    };
    if near_top {
        request_older(state, fx);
    }
}

/// Ask for the page before the oldest rows held, unless there is none or
/// one is on its way (one at a time). Whether it was asked for.
pub(crate) fn request_older(state: &mut State, fx: &mut Vec<Effect>) -> bool {
    let c = &state.conversation;
    if c.first_seq <= 1 || state.older.is_some() || !matches!(state.history, History::Done) {
        return false;
    }
    let upto = c.first_seq - 1;
    let from = c.first_seq.saturating_sub(OLDER_EVENTS).max(1);
    let request = Request::EventsPage {
        agent_id: state.agent_id.clone(),
        from_seq: from,
        limit: (upto - from + 1) as usize,
        kind: None,
    };
    let effect = call(state, request, Pending::Older { from, upto });
    if let Effect::Call { id, .. } = &effect {
        state.older = Some(*id);
    }
    fx.push(effect);
    true
}

/// The page before the oldest rows: built as a conversation of its own
/// and put in front. Where the ledger was pruned, nothing older is left
/// to page in.
pub(super) fn older_arrived(
    state: &mut State,
    from: u64,
    upto: u64,
    result: Result<Response, ApiError>,
    fx: &mut Vec<Effect>,
) {
    let page = match result.and_then(Response::take::<EventsPage>) {
        Ok(p) => p,
        Err(e) => {
            state
                .conversation
                .note(format!("Could not load older turns: {e}"), Tone::Error);
            super::find::page_lost(state, "older turns could not be loaded");
            return;
        }
    };
    let mut older = Conversation::default();
    for e in page.events.iter().filter(|e| e.event_seq <= upto) {
        let typed = e.event();
        let op = present_event(e, &typed);
        let operator_task = operator_task(state, e, &typed);
        older.apply(e, &typed, &op, operator_task);
    }
    // A call still waiting is never handed back to the ledger, so one
    // that waits in an older page was answered later: its row would
    // offer an answer that no longer applies.
    // (The composer keeps the waiting ones: no pass over every row.)
    let waiting: std::collections::HashSet<&str> = state
        .composer
        .approvals
        .iter()
        .map(|(id, _)| id.as_str())
        .collect();
    older.rows.retain(|r| match r.kind() {
        RowKind::Approval(a) => {
            a.state != ApprovalState::Waiting || waiting.contains(a.id.as_str())
        }
        _ => true,
    });
    let first = match page.pruned_before {
        Some(_) => 1,
        None => from,
    };
    // A compaction the page leaves open ends among the rows held, or
    // never did: either way it is not under way.
    older.end_compaction("Context compaction began here");
    let before = state.conversation.rows.len();
    state.conversation.prepend_older(older, first);
    let added = state.conversation.rows.len() - before;
    super::find::page_arrived(state, added, fx);
}

/// The history read when an agent is shown, then the live events held
/// while it was read.
pub(super) fn history_arrived(
    state: &mut State,
    (from, upto): (u64, u64),
    held: Vec<EventRecord>,
    events: Vec<EventRecord>,
    fx: &mut Vec<Effect>,
) {
    let mut hist = Conversation::default();
    for e in events.iter().filter(|e| e.event_seq <= upto) {
        let typed = e.event();
        let op = present_event(e, &typed);
        let operator_task = operator_task(state, e, &typed);
        // An unanswered question in the history still marks the status
        // line (without the bell: it is not news).
        let applied = hist.apply(e, &typed, &op, operator_task);
        if applied.attention {
            state.attention = true;
        } else if op.is_operator_message() || applied.settled {
            state.attention = false;
        }
    }
    hist.applied_seq = hist.applied_seq.max(upto);
    hist.first_seq = from;
    state.conversation.prepend_history(hist);
    state.composer.approvals = state.conversation.waiting_approvals();
    state.history = History::Done;
    for e in held {
        apply_live(state, &e, fx);
    }
    state.dirty = true;
}
