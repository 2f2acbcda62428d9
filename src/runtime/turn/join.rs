//! What joins a running turn at a safe point, and a turn that waits there
//! for the operator's answer to an approval it asked.
//!
//! Two kinds of message join a turn instead of starting one: a trusted
//! operator prompt with `interject` priority, and the answer to an
//! approval this run asked (the `internal_followup` the answer admitted,
//! which the approval's record names). Each is settled `Interjected` with
//! the run and given to the model as input, so an answer reaches the model
//! in the turn that asked instead of starting another.
//!
//! A round whose only reason to end the turn is a call waiting for
//! approval waits at its safe point, up to `[policy] approval_wait_secs`,
//! for the answer (or an interjection). It stops waiting, and the turn
//! ends as it always did, when anything else is queued for the agent, the
//! turn is cancelled, the runtime holds new turns, a timer falls due, or
//! the time is up; the
//! answer then starts a turn of its own. Every model round is recorded
//! before the wait, so a turn cut there is settled, never replayed
//! (`parked_in`, at recovery).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{render_input, transcript_in};
use crate::model::agent::{AgentRecord, AgentStatus};
use crate::model::approval::ApprovalRecord;
use crate::model::message::{
    AdmissionContext, MessageEnvelope, MessageKind, MessageOrigin, Priority, QueueEntryStatus,
    TrustLevel,
};
use crate::model::transcript::TranscriptBody;
use crate::protocol::events::{self as ev, new_event, Event, SettleDetail};
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::handle::HostInner;
use crate::runtime::queue::{settle_in, QueueEntry};
use crate::runtime::RuntimeError;
use crate::store::{Keyed, StoreError, WriteCtx};

/// How often a waiting turn looks whether the runtime holds new turns (a
/// flag nothing announces); answers and queued input wake it at once.
const HELD_CHECK: Duration = Duration::from_secs(1);

/// A queued message, as a running turn sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Queued {
    /// A trusted operator prompt with `interject` priority.
    Interjection,
    /// The answer to this run's approval of that id.
    Answer(String),
    /// Anything else: it waits for the turn to end.
    Other,
}

/// What a turn waiting for its approvals' answers does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// Every awaited answer is in, or the operator interjected: join.
    Join,
    /// Nothing yet: wait.
    Wait,
    /// Other input waits for this turn: end it, so that input is not held.
    Release,
}

/// Pure: whether a turn waiting for the answers to `awaited` goes on.
pub(super) fn hold(queued: &[Queued], awaited: &[String]) -> Hold {
    if queued.contains(&Queued::Other) {
        return Hold::Release;
    }
    let answered = awaited.iter().all(|id| {
        queued
            .iter()
            .any(|q| matches!(q, Queued::Answer(a) if a == id))
    });
    match answered || queued.contains(&Queued::Interjection) {
        true => Hold::Join,
        false => Hold::Wait,
    }
}

/// Pure: what a queued message is to the run `run_id`. `approval` reads
/// the approval a follow-up names.
fn classify(
    priority: Priority,
    env: &MessageEnvelope,
    run_id: &str,
    approval: impl FnOnce(&str) -> Option<ApprovalRecord>,
) -> Queued {
    if priority == Priority::Interject
        && env.kind == MessageKind::OperatorPrompt
        && env.trust == TrustLevel::TrustedOperator
    {
        return Queued::Interjection;
    }
    let runtime_owned = env.kind == MessageKind::InternalFollowup
        && env.admission_context == Some(AdmissionContext::RuntimeOwned)
        && matches!(&env.origin, MessageOrigin::System { subsystem } if subsystem == "approvals");
    let Some(id) = env.source_refs.get("approval_id").filter(|_| runtime_owned) else {
        return Queued::Other;
    };
    // The approval's own record names the message that answered it: only
    // that message is its answer.
    match approval(id) {
        Some(rec)
            if rec.run_id == run_id
                && rec.result_message_id.as_deref() == Some(env.id.as_str()) =>
        {
            Queued::Answer(rec.id)
        }
        _ => Queued::Other,
    }
}

/// The agent's queued messages as the run sees them: those that could
/// join, then at most one `Other` standing for everything behind them.
fn queued_now(
    inner: &Arc<HostInner>,
    agent_id: &str,
    run_id: &str,
) -> Result<Vec<Queued>, RuntimeError> {
    let rx = inner.store.read()?;
    let mut entries = Vec::new();
    let mut out = Vec::new();
    for (band, _, mid) in rx.queue_pending(agent_id)? {
        // Only these two bands can hold what joins; the queue is in band
        // order, so the first message past them is one that does not (and
        // a deep queue behind it is never read).
        if band != Priority::Interject.band() && band != Priority::Next.band() {
            out.push(Queued::Other);
            break;
        }
        entries.extend(rx.get::<QueueEntry>(Keyed::QueueEntries, agent_id, &mid)?);
    }
    let envelopes = crate::runtime::projection::envelopes_of(&rx, agent_id, &entries)?;
    for entry in &entries {
        // An entry whose envelope is gone is not this turn's to take.
        let Some(env) = envelopes.iter().find(|e| e.id == entry.message_id) else {
            out.push(Queued::Other);
            continue;
        };
        let approval = |id: &str| rx.get(Keyed::Approvals, agent_id, id).ok().flatten();
        out.push(classify(entry.priority, env, run_id, approval));
    }
    Ok(out)
}

/// Inside a write job: take every queued interjection and answer to this
/// run's approvals into the run, in queue order; their text for the model.
fn join_in(tx: &mut WriteCtx<'_>, agent_id: &str, run_id: &str) -> Result<Vec<String>, StoreError> {
    let mut joined = Vec::new();
    for (band, _, mid) in tx.queue_pending(agent_id)? {
        if band != Priority::Interject.band() && band != Priority::Next.band() {
            break;
        }
        let Some(entry) = tx.get::<QueueEntry>(Keyed::QueueEntries, agent_id, &mid)? else {
            continue;
        };
        let Some(env) = crate::runtime::queue::envelope_in(tx, &entry)? else {
            continue;
        };
        let mut approval = None;
        if let Some(id) = env.source_refs.get("approval_id") {
            approval = tx.get::<ApprovalRecord>(Keyed::Approvals, agent_id, id)?;
        }
        if classify(entry.priority, &env, run_id, |_| approval) == Queued::Other {
            continue;
        }
        let text = render_input(&env);
        transcript_in(
            tx,
            agent_id,
            run_id,
            Some(&mid),
            TranscriptBody::Input { text: text.clone() },
        )?;
        joined.push(text);
        let detail = SettleDetail {
            run_id: Some(run_id.to_owned()),
            ..SettleDetail::default()
        };
        settle_in(tx, agent_id, &mid, QueueEntryStatus::Interjected, detail)?;
    }
    // The turn goes on: it no longer waits.
    if !joined.is_empty() {
        if let Some(mut agent) = tx.get_agent::<AgentRecord>(agent_id)? {
            if !agent.turn_awaits.is_empty() {
                agent.turn_awaits.clear();
                tx.put_agent(agent_id, &agent)?;
            }
        }
    }
    Ok(joined)
}

/// Safe point: interjections and answers to this run's approvals join the
/// running turn. Returns their text as the model sees it.
pub(super) async fn at_safe_point(
    inner: &Arc<HostInner>,
    agent_id: &str,
    run_id: &str,
) -> Result<Vec<String>, RuntimeError> {
    // Most rounds have nothing to join: only a message of these two bands
    // could be, and a read finds out first, so they cost no write.
    let bands = [Priority::Interject.band(), Priority::Next.band()];
    let pending = inner.store.read()?.queue_pending(agent_id)?;
    if !pending.iter().any(|(band, _, _)| bands.contains(band)) {
        return Ok(Vec::new());
    }
    if !queued_now(inner, agent_id, run_id)?
        .iter()
        .any(|q| *q != Queued::Other)
    {
        return Ok(Vec::new());
    }
    let (id, rid) = (agent_id.to_owned(), run_id.to_owned());
    Ok(inner.store.write(move |tx| join_in(tx, &id, &rid)).await?)
}

/// The turn that waits.
pub(super) struct Waiting<'a> {
    pub inner: &'a Arc<HostInner>,
    pub agent_id: &'a str,
    pub run_id: &'a str,
    pub message_id: &'a str,
    pub cancel: &'a TurnCancel,
}

/// Wait for the answers to `awaited` (approvals this round asked) and
/// join them, or an interjection, into the turn. Empty when the turn
/// should end instead: the wait is off (or the clock is paused), other
/// input is queued or a wake hint pending, a timer falls due, the agent
/// was paused or stopped, the turn was cancelled, the runtime holds new
/// turns, the daily budget allows no further request, or the time ran
/// out. While it waits, the agent's record says so (`turn_awaits`, with
/// `turn_awaiting_approval`): a turn cut off there is settled at the next
/// start, not replayed.
pub(super) async fn wait_for_answers(
    w: &Waiting<'_>,
    awaited: &[String],
) -> Result<Vec<String>, RuntimeError> {
    let (inner, agent_id, run_id) = (w.inner, w.agent_id, w.run_id);
    let wait = inner.config.approval_wait;
    // A paused clock (a simulation) would never let the time run out.
    let wall = crate::clock::wall(wait);
    let Some(wait) = wall.filter(|_| !awaited.is_empty() && !wait.is_zero()) else {
        return Ok(Vec::new());
    };
    let deadline = tokio::time::Instant::now() + wait;
    // Subscribed before looking, so nothing committed in between is missed.
    let mut events = inner.store.subscribe();
    {
        let (id, rid, mid) = (
            agent_id.to_owned(),
            run_id.to_owned(),
            w.message_id.to_owned(),
        );
        let approval_ids = awaited.to_vec();
        let wait_ms = u64::try_from(inner.config.approval_wait.as_millis()).unwrap_or(u64::MAX);
        inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = crate::runtime::agent::agent_in(tx, &id)?;
                agent.turn_awaits = approval_ids.clone();
                tx.put_agent(&id, &agent)?;
                let provenance = crate::model::event::Provenance {
                    message_id: Some(mid.clone()),
                    ..Default::default()
                };
                let waiting = ev::TurnAwaitingApproval {
                    run_id: rid.clone(),
                    message_id: mid.clone(),
                    approval_ids: approval_ids.clone(),
                    wait_ms,
                };
                tx.append_event(new_event(
                    &id,
                    provenance,
                    Event::TurnAwaitingApproval(waiting),
                ))?;
                Ok(())
            })
            .await?;
    }
    let (mut look, mut until) = (true, deadline);
    loop {
        if w.cancel.reason().is_some() || inner.turns_held.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        if look {
            until = deadline;
            let rx = inner.store.read()?;
            let now = crate::now_ms();
            let Some(live) = crate::runtime::projection::load(&rx, agent_id, now)? else {
                return Ok(Vec::new());
            };
            drop(rx);
            let at_rest = matches!(
                live.agent.status,
                AgentStatus::Paused | AgentStatus::Stopped
            );
            if at_rest || live.agent.pending_wake_hint.is_some() {
                return Ok(Vec::new());
            }
            // A timer, a recheck or a budget resume due meanwhile: the
            // wait ends then, so the actor sees to it on time.
            if let Some(due) = live.next_deadline(now).and_then(crate::clock::wall) {
                until = until.min(tokio::time::Instant::now() + due);
            }
            match hold(&queued_now(inner, agent_id, run_id)?, awaited) {
                Hold::Release => return Ok(Vec::new()),
                // Only when a request may follow: else the answers stay
                // queued and start a turn of their own.
                Hold::Join if !super::budget_allows(inner, agent_id).await? => {
                    return Ok(Vec::new())
                }
                Hold::Join => {
                    let joined = at_safe_point(inner, agent_id, run_id).await?;
                    if !joined.is_empty() {
                        return Ok(joined);
                    }
                }
                Hold::Wait => {}
            }
        }
        let agent_event = async {
            loop {
                match events.recv().await {
                    Ok(e) if e.agent_id == agent_id => return,
                    Ok(_) => {}
                    // Missed some: look again.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await
                    }
                }
            }
        };
        tokio::select! {
            _ = agent_event => look = true,
            _ = w.cancel.cancelled() => return Ok(Vec::new()),
            _ = tokio::time::sleep_until(until) => return Ok(Vec::new()),
            // Only the hold on new turns is looked at: nothing committed.
            _ = tokio::time::sleep(HELD_CHECK) => look = false,
        }
    }
}

/// Inside recovery's write job: the message of a turn cut off while it
/// waited for the answers to `awaits` (the agent's `turn_awaits`) is
/// settled instead of replayed. Its model rounds are all recorded, and
/// the answers come to the agent as messages of their own (an answer
/// already admitted stays queued), as they do for a turn that ended.
/// Returns the message settled, if it was still to replay.
pub(crate) fn parked_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    run_id: &str,
    awaits: &[String],
    dequeued: &[String],
) -> Result<Option<String>, StoreError> {
    for id in awaits {
        let Some(rec) = tx.get::<ApprovalRecord>(Keyed::Approvals, agent_id, id)? else {
            continue;
        };
        if rec.run_id != run_id || !dequeued.contains(&rec.message_id) {
            continue;
        }
        let detail = SettleDetail {
            run_id: Some(run_id.to_owned()),
            evidence: Some(vec![format!("waited_on_approval:{}", rec.id)]),
            ..SettleDetail::default()
        };
        settle_in(
            tx,
            agent_id,
            &rec.message_id,
            QueueEntryStatus::Processed,
            detail,
        )?;
        return Ok(Some(rec.message_id));
    }
    Ok(None)
}

#[cfg(test)]
#[path = "join_tests.rs"]
mod tests;
