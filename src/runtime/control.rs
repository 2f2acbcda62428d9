//! The operator's control actions on an agent (pause, resume, stop, wake,
//! abort): what each makes of the agent's status (`control_change`,
//! pure), recorded as `control_applied` in one store transaction, then
//! the running turn cancelled and the actor woken. A supervised child is
//! stopped through its parent's task; a stopped parent stops its
//! children.

use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::event::Provenance;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::payloads::CancelReason;
use crate::protocol::views::{ControlAction, ControlOutcome};
use crate::runtime::agent::agent_in;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::RuntimeError;
use crate::store::StoreError;

impl RuntimeHost {
    /// Apply `action` to `agent_id` as the operator.
    pub async fn control(
        &self,
        agent_id: &str,
        action: ControlAction,
    ) -> Result<ControlOutcome, RuntimeError> {
        let current: AgentRecord = self.inner.store.read()?.agent(agent_id)?.ok_or_else(|| {
            RuntimeError::UnknownAgent {
                agent_id: agent_id.to_owned(),
            }
        })?;
        match action {
            ControlAction::Wake => return self.operator_wake(agent_id, current.status).await,
            ControlAction::Abort => {
                if !current.turn_in_progress {
                    return Err(RuntimeError::Invalid(
                        "no turn is in progress to abort".into(),
                    ));
                }
                // Recorded (control_applied) below, then the turn is
                // cancelled.
            }
            ControlAction::Pause | ControlAction::Resume | ControlAction::Stop => {}
        }
        if action == ControlAction::Stop {
            if let Some(outcome) = self.stop_as_child(agent_id).await? {
                return Ok(outcome);
            }
        }
        let id = agent_id.to_owned();
        let outcome = self
            .inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = agent_in(tx, &id)?;
                if agent.archived_at.is_some() && action == ControlAction::Resume {
                    return Err(StoreError::rejected(RuntimeError::Invalid(format!(
                        "agent `{id}` is archived; it cannot be resumed"
                    ))));
                }
                let from = agent.status;
                let awaiting = !agent.turn_awaits.is_empty();
                let (to, note) =
                    control_change(action, from, awaiting).map_err(StoreError::rejected)?;
                agent.status = to;
                crate::runtime::budget::on_control(&mut agent, action, tx.now_ms());
                tx.put_agent(&id, &agent)?;
                let provenance = Provenance {
                    origin: Some("operator".into()),
                    ..Provenance::default()
                };
                let applied = ev::ControlApplied {
                    action,
                    from,
                    to,
                    note: note.to_owned(),
                };
                tx.append_event(new_event(&id, provenance, Event::ControlApplied(applied)))?;
                Ok(ControlOutcome {
                    agent_id: id.clone(),
                    action,
                    from,
                    to,
                    note: note.to_owned(),
                })
            })
            .await?;
        let cancel = match action {
            ControlAction::Stop => Some(CancelReason::AgentStopped),
            ControlAction::Abort => Some(CancelReason::OperatorAbort),
            ControlAction::Pause | ControlAction::Resume | ControlAction::Wake => None,
        };
        if let Some(reason) = cancel {
            if let Some(a) = self.inner.actors().get(agent_id) {
                a.cancel.request(reason);
            }
        }
        let mut outcome = outcome;
        if action == ControlAction::Stop {
            // A stopped parent supervises nothing: its live children stop
            // with it (their worktrees kept when they hold changes).
            let children = self.live_children(agent_id)?;
            for (_, task) in &children {
                self.stop_child(agent_id, task, "stopped: its parent was stopped")
                    .await?;
            }
            if !children.is_empty() {
                outcome.note = format!(
                    "{}; {} child agent(s) stopped with it",
                    outcome.note,
                    children.len()
                );
            }
        }
        self.wake(agent_id);
        Ok(outcome)
    }

    /// `wake`: a wake hint from the operator (refused for a stopped agent);
    /// the agent's status is left as it is.
    async fn operator_wake(
        &self,
        agent_id: &str,
        status: AgentStatus,
    ) -> Result<ControlOutcome, RuntimeError> {
        if status == AgentStatus::Stopped {
            return Err(RuntimeError::AgentStopped {
                agent_id: agent_id.to_owned(),
                status: AgentStatus::Stopped.as_str(),
            });
        }
        let outcome = self
            .wake_hint(agent_id, "operator wake", Some("operator".into()), None)
            .await?;
        Ok(ControlOutcome {
            agent_id: agent_id.to_owned(),
            action: ControlAction::Wake,
            from: status,
            to: status,
            note: format!(
                "wake hint {}",
                crate::protocol::wire_name(&outcome).unwrap_or_default()
            ),
        })
    }

    /// Stopping a supervised child ends it through its parent's task, so
    /// the parent is told (a stopped child would never finish its task).
    /// `None` for an agent no parent supervises.
    async fn stop_as_child(&self, agent_id: &str) -> Result<Option<ControlOutcome>, RuntimeError> {
        let agent = self.inner.agent_record(agent_id)?;
        let Some(task) = self.live_supervision(&agent) else {
            return Ok(None);
        };
        let parent = agent.lineage_parent_agent_id.clone().unwrap_or_default();
        self.stop_child(&parent, &task, "stopped by the operator")
            .await?;
        Ok(Some(ControlOutcome {
            agent_id: agent_id.to_owned(),
            action: ControlAction::Stop,
            from: agent.status,
            to: AgentStatus::Stopped,
            note: format!(
                "child of {parent} stopped and archived; its task {task} is cancelled and \
                 {parent} is told"
            ),
        }))
    }
}

/// What a control action makes of an agent's status `from`, and the note
/// that says so; `awaiting`: its turn waits for an approval's answer.
fn control_change(
    action: ControlAction,
    from: AgentStatus,
    awaiting: bool,
) -> Result<(AgentStatus, &'static str), RuntimeError> {
    let change = match action {
        ControlAction::Pause if from == AgentStatus::Stopped => {
            return Err(RuntimeError::Invalid(
                "the agent is stopped; resume it before pausing".into(),
            ))
        }
        ControlAction::Pause => (
            AgentStatus::Paused,
            "admitted input waits and no new model turn starts until resumed; tasks keep running",
        ),
        ControlAction::Resume => match from {
            AgentStatus::Paused | AgentStatus::Stopped => {
                (AgentStatus::AwakeIdle, "admitted input runs again")
            }
            AgentStatus::Booting
            | AgentStatus::AwakeIdle
            | AgentStatus::AwakeRunning
            | AgentStatus::AwaitingTask
            | AgentStatus::Asleep => (from, "already running"),
        },
        ControlAction::Stop => (
            AgentStatus::Stopped,
            "new prompts are refused until resumed; a running turn is cancelled",
        ),
        // A turn waiting for an approval's answer has nothing
        // in flight: it stops waiting, and the call stays open.
        ControlAction::Abort if awaiting => (
            from,
            "the turn stops waiting for your answer; the call stays open",
        ),
        ControlAction::Abort => (
            from,
            "the turn stops now: an in-flight model request is dropped and no \
             further tool starts",
        ),
        ControlAction::Wake => (from, ""),
    };
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_moves_the_status_it_says_and_no_other() {
        use AgentStatus as S;
        use ControlAction as A;
        let to = |action, from, awaiting| control_change(action, from, awaiting).map(|c| c.0);
        assert_eq!(to(A::Pause, S::AwakeRunning, false).ok(), Some(S::Paused));
        assert!(to(A::Pause, S::Stopped, false).is_err(), "resume first");
        assert_eq!(to(A::Resume, S::Paused, false).ok(), Some(S::AwakeIdle));
        assert_eq!(to(A::Resume, S::Stopped, false).ok(), Some(S::AwakeIdle));
        assert_eq!(to(A::Resume, S::Asleep, false).ok(), Some(S::Asleep));
        assert_eq!(to(A::Stop, S::AwaitingTask, false).ok(), Some(S::Stopped));
        // An abort leaves the status to the turn's end.
        assert_eq!(
            to(A::Abort, S::AwakeRunning, false).ok(),
            Some(S::AwakeRunning)
        );
        let waiting = control_change(A::Abort, S::AwakeRunning, true).map(|c| c.1);
        assert!(waiting.is_ok_and(|note| note.contains("call stays open")));
    }
}
