//! One actor per agent: build the projection, `decide`, record the
//! `scheduler_decision` event in the same transaction as the decision's
//! first mutation (so it always precedes the queue change), execute, and
//! then wait — for a wake, the next timer or recheck deadline, or shutdown.
//! Due timers and recheck reminders are admitted as messages before each
//! decision. A waiting decision identical to the last one recorded is not
//! recorded again, so spurious wakes do not flood the ledger.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::watch;

use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::decision::SchedulerDecision;
use crate::model::decision::SchedulerDecisionKind;
use crate::model::event::{NewEvent, Provenance};
use crate::model::message::QueueEntryStatus;
use crate::protocol::events::{self as ev, new_event, Event, SettleDetail};
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::handle::HostInner;
use crate::runtime::projection::{self, LiveProjection};
use crate::runtime::queue::{dequeue_in, settle_in};
use crate::runtime::scheduler::{decide, posture_after, SchedulerInput};
use crate::runtime::turn;
use crate::runtime::RuntimeError;
use crate::store::{StoreError, WriteCtx};

enum Step {
    /// Something changed; decide again at once.
    Continue,
    /// Nothing to do until woken.
    Wait,
    /// The agent was archived: it runs nothing again, so its actor ends
    /// (as a restart would give it none).
    Retire,
}

pub(super) async fn run(
    inner: Arc<HostInner>,
    agent_id: String,
    wake: Arc<crate::runtime::handle::ActorWake>,
    cancel: Arc<TurnCancel>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut last_recorded: Option<serde_json::Value> = None;
    let mut failures = 0u32;
    loop {
        if *shutdown.borrow() {
            Box::pin(at_rest_on_shutdown(&inner, &agent_id)).await;
            break;
        }
        let now = crate::now_ms();
        let seen = wake.seen();
        // Boxed: a decision and its turn are a large future, and an idle
        // actor (most of a thousand) should hold only its wait.
        let step = Box::pin(async {
            crate::runtime::waiting::due::fire_due(&inner.store, &agent_id, now).await?;
            let rx = inner.store.read()?;
            let Some(live) = projection::load(&rx, &agent_id, now)? else {
                return Ok::<_, RuntimeError>((Step::Wait, None));
            };
            drop(rx);
            if live.agent.archived_at.is_some() {
                return Ok((Step::Retire, None));
            }
            let input = if !live.projection.pending_inputs().is_empty() {
                SchedulerInput::Message
            } else if live.projection.wake_hint().is_some() {
                SchedulerInput::WakeHint
            } else {
                SchedulerInput::Idle
            };
            let decision = decide(&live.projection, input);
            let deadline = live.next_deadline(now);
            let step = execute(
                &inner,
                &agent_id,
                &live,
                decision,
                &cancel,
                &mut last_recorded,
            )
            .await?;
            Ok((step, deadline))
        })
        .await;
        let deadline = match step {
            Ok((Step::Retire, _)) => {
                inner.retire_actor(&agent_id);
                inner.actor_settled();
                break;
            }
            Ok((Step::Continue, _)) => {
                failures = 0;
                continue;
            }
            Ok((Step::Wait, deadline)) => {
                failures = 0;
                wake.settle(seen);
                inner.actor_settled();
                deadline
            }
            Err(e) => {
                // A store failure (disk full, I/O error): log, back off, and
                // decide again; nothing was acknowledged that was not written.
                failures = failures.saturating_add(1);
                tracing::error!(agent_id, error = %e, failures, "agent step failed");
                Some(Duration::from_millis(
                    200u64.saturating_mul(1 << failures.min(8)),
                ))
            }
        };
        // Clock time to wall time: less when the clock runs faster, and
        // never while it is paused (an advance wakes the actor).
        let sleep = async {
            match deadline.and_then(crate::clock::wall) {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wake.notified() => {}
            _ = sleep => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// The runtime stops between a turn's end and the decision that would
/// have moved the agent off `awake_running` (a turn aborted as the
/// console quits): say what is true while nothing runs, as recovery
/// would at the next start.
async fn at_rest_on_shutdown(inner: &Arc<HostInner>, agent_id: &str) {
    // A read first: a stop with nothing to say writes nothing.
    let running = |a: &AgentRecord| a.status == AgentStatus::AwakeRunning && !a.turn_in_progress;
    let seen = inner
        .store
        .read()
        .and_then(|rx| rx.agent::<AgentRecord>(agent_id));
    if !matches!(&seen, Ok(Some(a)) if running(a)) {
        return;
    }
    let id = agent_id.to_owned();
    let wrote = inner
        .store
        .write(move |tx| {
            let Some(mut agent) = tx.get_agent::<AgentRecord>(&id)? else {
                return Ok(());
            };
            if !running(&agent) {
                return Ok(());
            }
            let from = agent.status;
            let to = from.at_rest();
            agent.status = to;
            tx.put_agent(&id, &agent)?;
            let changed = ev::AgentStateChanged {
                from,
                to,
                cause: SchedulerDecisionKind::StayIdle,
            };
            tx.append_event(new_event(
                &id,
                Provenance::default(),
                Event::AgentStateChanged(changed),
            ))
            .map(drop)
        })
        .await;
    if let Err(e) = wrote {
        tracing::warn!(agent_id, error = %e, "cannot record the agent at rest at shutdown");
    }
}

/// The continuation a message-taking decision derived, from its evidence
/// (`continuation:CLASS`, `message_kind:KIND`).
fn continuation_of(
    d: &SchedulerDecision,
    at: &str,
) -> Option<crate::model::agent::LastContinuation> {
    let tagged = |tag: &str| {
        d.evidence
            .iter()
            .find_map(|e| e.strip_prefix(tag))
            .map(str::to_owned)
    };
    Some(crate::model::agent::LastContinuation {
        class: tagged("continuation:")?,
        model_visible: d.model_reentry,
        message_id: d.message_id.clone()?,
        message_kind: tagged("message_kind:"),
        at: at.to_owned(),
    })
}

fn decision_event(decision: &SchedulerDecision, live: &LiveProjection) -> NewEvent {
    let provenance = Provenance {
        message_id: decision.message_id.clone(),
        work_item_id: decision.work_item_id.clone(),
        task_id: decision.task_id.clone(),
        ..Provenance::default()
    };
    let made = ev::SchedulerDecisionMade {
        decision: decision.clone(),
        posture: live.projection.posture(),
        status: live.agent.status,
    };
    new_event(&live.agent.id, provenance, Event::SchedulerDecision(made))
}

/// Write the control posture the decision implies (scheduler helpers are
/// the only writers of running/idle/awaiting/asleep).
fn write_posture(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    decision: &SchedulerDecision,
) -> Result<(), StoreError> {
    let Some(mut agent) = tx.get_agent::<AgentRecord>(agent_id)? else {
        return Ok(());
    };
    if let Some(next) = posture_after(agent.status, decision) {
        let from = agent.status;
        agent.status = next;
        tx.put_agent(agent_id, &agent)?;
        let changed = ev::AgentStateChanged {
            from,
            to: next,
            cause: decision.kind,
        };
        tx.append_event(new_event(
            agent_id,
            Provenance::default(),
            Event::AgentStateChanged(changed),
        ))?;
    }
    Ok(())
}

async fn execute(
    inner: &Arc<HostInner>,
    agent_id: &str,
    live: &LiveProjection,
    decision: SchedulerDecision,
    cancel: &Arc<TurnCancel>,
    last_recorded: &mut Option<serde_json::Value>,
) -> Result<Step, RuntimeError> {
    let event = decision_event(&decision, live);
    match decision.kind {
        SchedulerDecisionKind::StartModelTurn => {
            let Some(message_id) = decision.message_id.clone() else {
                return Ok(Step::Wait);
            };
            // Held for a hand-over: the message stays queued for the
            // runtime that takes over.
            if inner.turns_held.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(Step::Wait);
            }
            *last_recorded = None;
            start_turn(inner, agent_id, message_id, &decision, event, cancel).await
        }
        SchedulerDecisionKind::ReduceMessageOnly => {
            let Some(message_id) = decision.message_id.clone() else {
                return Ok(Step::Wait);
            };
            *last_recorded = None;
            reduce_only(inner, agent_id, message_id, &decision, event).await?;
            Ok(Step::Continue)
        }
        SchedulerDecisionKind::EmitSystemTick => {
            *last_recorded = None;
            let id = agent_id.to_owned();
            let d = decision.clone();
            let objective = decision
                .work_item_id
                .as_ref()
                .and_then(|w| live.work_items.iter().find(|i| &i.id == w))
                .map(|i| i.objective.clone());
            let hint = live.agent.pending_wake_hint.clone();
            inner
                .store
                .write(move |tx| {
                    tx.append_event(event.clone())?;
                    crate::runtime::waiting::ticks::emit_tick_in(
                        tx,
                        &id,
                        &d,
                        objective.as_deref(),
                        hint.as_ref(),
                    )
                })
                .await?;
            Ok(Step::Continue)
        }
        SchedulerDecisionKind::WaitForTask
        | SchedulerDecisionKind::WaitForExternalChange
        | SchedulerDecisionKind::WaitForTimer
        | SchedulerDecisionKind::WaitForOperator
        | SchedulerDecisionKind::Sleep
        | SchedulerDecisionKind::StayIdle
        | SchedulerDecisionKind::Stop
        | SchedulerDecisionKind::Noop => {
            if crate::runtime::agents::child_life::is_done(&live.agent, decision.kind) {
                let host = crate::runtime::handle::RuntimeHost::from_inner(inner);
                host.settle_finished_child(&live.agent).await?;
                return Ok(Step::Continue);
            }
            let fingerprint = json!([
                decision.kind.as_str(),
                decision.reason,
                decision.evidence,
                live.agent.status
            ]);
            let changes_posture = posture_after(live.agent.status, &decision).is_some();
            if last_recorded.as_ref() != Some(&fingerprint) || changes_posture {
                let (id, d) = (agent_id.to_owned(), decision.clone());
                inner
                    .store
                    .write(move |tx| {
                        tx.append_event(event.clone())?;
                        write_posture(tx, &id, &d)
                    })
                    .await?;
                *last_recorded = Some(fingerprint);
            }
            Ok(Step::Wait)
        }
    }
}

/// Start a model turn on `message_id`: taken off the queue with the
/// decision recorded, unless the daily budget is already reached (the
/// agent is paused and the message stays queued); then the turn runs.
async fn start_turn(
    inner: &Arc<HostInner>,
    agent_id: &str,
    message_id: String,
    decision: &SchedulerDecision,
    event: NewEvent,
    cancel: &Arc<TurnCancel>,
) -> Result<Step, RuntimeError> {
    cancel.reset();
    let run_id = crate::new_id("run");
    let (id, mid, rid, d) = (
        agent_id.to_owned(),
        message_id,
        run_id.clone(),
        decision.clone(),
    );
    let global = inner.config.budget;
    let envelope = inner
        .store
        .write(move |tx| {
            // A daily budget already reached pauses the agent here,
            // before the message is taken: it stays queued.
            if !crate::runtime::budget::enforce_in(tx, &id, global)? {
                return Ok(None);
            }
            tx.append_event(event.clone())?;
            let envelope = dequeue_in(tx, &id, &mid)?;
            write_posture(tx, &id, &d)?;
            if let Some(mut agent) = tx.get_agent::<AgentRecord>(&id)? {
                agent.turn_in_progress = true;
                agent.current_run_id = Some(rid.clone());
                agent.last_wake_reason = Some(format!("{:?}", envelope.kind).to_lowercase());
                agent.last_continuation = continuation_of(&d, &tx.now_ts());
                tx.put_agent(&id, &agent)?;
            }
            Ok(Some(envelope))
        })
        .await?;
    let Some(envelope) = envelope else {
        return Ok(Step::Continue);
    };
    turn::run(inner, agent_id, &run_id, envelope, cancel).await?;
    Ok(Step::Continue)
}

/// Settle `message_id` without a turn (liveness only), its content kept
/// for the next turn when it has some.
async fn reduce_only(
    inner: &Arc<HostInner>,
    agent_id: &str,
    message_id: String,
    decision: &SchedulerDecision,
    event: NewEvent,
) -> Result<(), RuntimeError> {
    let (id, mid) = (agent_id.to_owned(), message_id);
    let evidence = decision.evidence.clone();
    let d = decision.clone();
    inner
        .store
        .write(move |tx| {
            tx.append_event(event.clone())?;
            let envelope = dequeue_in(tx, &id, &mid)?;
            // Liveness-only means it starts no turn, never that its
            // content may be lost: a contentful message that arrived
            // while the agent waited on something else is kept for
            // its next turn.
            let trigger =
                crate::runtime::continuation::ContinuationTrigger::from_envelope(&envelope);
            let carried = crate::runtime::continuation::carried_for_model(&trigger, &evidence);
            if let Some(mut agent) = tx.get_agent::<AgentRecord>(&id)? {
                agent.last_continuation = continuation_of(&d, &tx.now_ts());
                if carried {
                    agent.carry_for_model(&mid);
                }
                tx.put_agent(&id, &agent)?;
            }
            settle_in(
                tx,
                &id,
                &mid,
                QueueEntryStatus::Processed,
                SettleDetail {
                    reduced_without_turn: Some(true),
                    evidence: Some(evidence.clone()),
                    carried_for_model: carried.then_some(true),
                    ..SettleDetail::default()
                },
            )
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// An idle actor holds its loop's future: a thousand agents cost a
    /// thousand of them, so the decision and its turn are boxed per step
    /// (unboxed, the future was ~9.8 KB).
    #[test]
    fn an_idle_actor_holds_a_small_future() {
        fn size<A, B, C, D, E, Fut>(_: impl Fn(A, B, C, D, E) -> Fut) -> usize {
            std::mem::size_of::<Fut>()
        }
        let bytes = size(super::run);
        assert!(bytes <= 2048, "the actor's future is {bytes} bytes");
    }
}
