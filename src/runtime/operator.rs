//! What an operator or a client does to an agent through the host: control
//! actions (pause, resume, stop, wake, abort), the display mode, work
//! items, and operator commands and their tasks. Each is one store
//! transaction with its events, then a wake of the agent's actor.

use std::path::PathBuf;

use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::message::{AdmissionRequest, DeliverySurface};
use crate::model::task::TaskRecord;
use crate::model::work::WorkItemRecord;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::views::{ControlAction, ControlOutcome};
use crate::protocol::{ApiError, ErrorCode, Request, Response, RetrievalStatus, TaskOutput};
use crate::runtime::agent::agent_in;
use crate::runtime::command_tasks::{CommandSpec, TaskOrigin};
use crate::runtime::host::cancel::CancelReason;
use crate::runtime::host::{io_err, RuntimeHost};
use crate::runtime::work_ops::{self, CreateWorkItem, UpdateWorkItem, WorkItemSource};
use crate::runtime::RuntimeError;
use crate::store::{Keyed, Provenance, ReadCtx, StoreError};

/// How a task is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopHow {
    /// TERM, then KILL after the grace period.
    Ask,
    /// KILL at once.
    Force,
}

impl RuntimeHost {
    /// What an operator or a client asks of an agent's work: a prompt,
    /// work items, commands and their tasks, and control actions.
    pub(crate) async fn answer_operator(&self, request: Request) -> Result<Response, ApiError> {
        match request {
            Request::PromptSubmit {
                agent_id,
                text,
                priority,
                request_id,
            } => {
                let surface = DeliverySurface::HttpControlPrompt;
                let req = operator_prompt(&agent_id, &text, priority, surface)?;
                Ok(Response::PromptSubmit(
                    self.submit_once(req, request_id).await?,
                ))
            }
            Request::WorkItemCreate {
                agent_id,
                item,
                request_id,
            } => Ok(Response::WorkItemCreate(
                self.create_work_item_once(&agent_id, item, request_id)
                    .await?,
            )),
            Request::WorkItemPick {
                agent_id,
                work_item_id,
            } => Ok(Response::WorkItemPick(
                self.pick_work_item(&agent_id, &work_item_id).await?,
            )),
            Request::WorkItemUpdate { agent_id, update } => Ok(Response::WorkItemUpdate(
                self.update_work_item(&agent_id, update).await?,
            )),
            Request::WorkItemComplete {
                agent_id,
                work_item_id,
                note,
            } => Ok(Response::WorkItemComplete(
                self.complete_work_item(&agent_id, &work_item_id, note)
                    .await?,
            )),
            Request::TaskRun { agent_id, cmd } => {
                if cmd.trim().is_empty() {
                    return Err(ApiError::new(
                        ErrorCode::InvalidParams,
                        "the command is empty",
                    ));
                }
                Ok(Response::TaskRun(
                    self.run_operator_command(&agent_id, &cmd).await?,
                ))
            }
            Request::TaskStatus { agent_id, task_id } => Ok(Response::TaskStatus(task_in(
                &self.store().read()?,
                &agent_id,
                &task_id,
            )?)),
            Request::TaskOutput {
                agent_id,
                task_id,
                max_bytes,
            } => {
                let task = task_in(&self.store().read()?, &agent_id, &task_id)?;
                Ok(Response::TaskOutput(task_output(task, max_bytes)))
            }
            Request::TaskInput {
                agent_id,
                task_id,
                input,
            } => Ok(Response::TaskInput(
                self.task_input(&agent_id, &task_id, &input).await?,
            )),
            Request::TaskStop { agent_id, task_id } => Ok(Response::TaskStop(
                self.stop_task(&agent_id, &task_id).await?,
            )),
            Request::Control { agent_id, action } => {
                Ok(Response::Control(self.control(&agent_id, action).await?))
            }
            other => Err(other.misrouted()),
        }
    }

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

    /// Remember the console's display mode for this agent (survives
    /// restarts); records `display_mode_changed`.
    pub async fn set_display_mode(
        &self,
        agent_id: &str,
        mode: crate::model::agent::DisplayMode,
    ) -> Result<AgentRecord, RuntimeError> {
        let id = agent_id.to_owned();
        Ok(self
            .inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = agent_in(tx, &id)?;
                let from = agent.display_mode;
                agent.display_mode = mode;
                tx.put_agent(&id, &agent)?;
                let changed = ev::DisplayModeChanged { from, to: mode };
                tx.append_event(new_event(
                    &id,
                    Provenance::default(),
                    Event::DisplayModeChanged(changed),
                ))?;
                Ok(agent)
            })
            .await?)
    }

    // ---- work items (operator / control plane) --------------------------

    pub async fn create_work_item(
        &self,
        agent_id: &str,
        req: CreateWorkItem,
    ) -> Result<WorkItemRecord, RuntimeError> {
        self.create_work_item_once(agent_id, req, None).await
    }

    /// `create_work_item`, once per client `request_id`.
    pub async fn create_work_item_once(
        &self,
        agent_id: &str,
        req: CreateWorkItem,
        request_id: Option<String>,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r = work_ops::create_once(
            &self.inner.store,
            &self.inner.agent_home(agent_id),
            agent_id,
            req,
            WorkItemSource::Operator,
            request_id,
        )
        .await?;
        self.wake(agent_id);
        Ok(r)
    }

    pub async fn pick_work_item(
        &self,
        agent_id: &str,
        work_item_id: &str,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r = work_ops::pick(
            &self.inner.store,
            agent_id,
            work_item_id,
            WorkItemSource::Operator,
        )
        .await?;
        self.wake(agent_id);
        Ok(r)
    }

    pub async fn update_work_item(
        &self,
        agent_id: &str,
        req: UpdateWorkItem,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r =
            work_ops::update(&self.inner.store, agent_id, req, WorkItemSource::Operator).await?;
        self.wake(agent_id);
        Ok(r)
    }

    pub async fn complete_work_item(
        &self,
        agent_id: &str,
        work_item_id: &str,
        note: Option<String>,
    ) -> Result<WorkItemRecord, RuntimeError> {
        let r = work_ops::complete(
            &self.inner.store,
            agent_id,
            work_item_id,
            note,
            WorkItemSource::Operator,
        )
        .await?;
        self.wake(agent_id);
        Ok(r)
    }

    // ---- tasks ------------------------------------------------------------

    /// `!CMD` from the operator: a command task in the agent's current
    /// directory (its active workspace's cwd), shown to the operator, not
    /// re-entered into the model.
    pub async fn run_operator_command(
        &self,
        agent_id: &str,
        cmd: &str,
    ) -> Result<TaskRecord, RuntimeError> {
        let workdir = PathBuf::from(self.inner.execution_of(agent_id)?.cwd);
        std::fs::create_dir_all(&workdir)
            .map_err(io_err(format!("creating {}", workdir.display())))?;
        // The operator can answer a prompt it asks (the tasks overlay's
        // input line, `task.input`); stop it if it waits for nothing.
        let spec = CommandSpec {
            cmd: cmd.to_owned(),
            workdir,
            accepts_input: true,
            launch: Default::default(),
            // The operator's own command: never sandboxed.
            sandbox: None,
        };
        self.inner
            .tasks
            .start(agent_id, spec, TaskOrigin::Operator)
            .await
    }

    pub async fn start_command_task(
        &self,
        agent_id: &str,
        spec: CommandSpec,
        origin: TaskOrigin,
    ) -> Result<TaskRecord, RuntimeError> {
        self.inner.tasks.start(agent_id, spec, origin).await
    }

    pub async fn stop_task(
        &self,
        agent_id: &str,
        task_id: &str,
    ) -> Result<TaskRecord, RuntimeError> {
        self.stop_task_as(agent_id, task_id, StopHow::Ask).await
    }

    /// Stop a task: asked (TERM, then KILL after the grace period) or
    /// forced (KILL at once). A child agent's task stops its child either
    /// way (its turn is cancelled, not signalled).
    pub async fn stop_task_as(
        &self,
        agent_id: &str,
        task_id: &str,
        how: StopHow,
    ) -> Result<TaskRecord, RuntimeError> {
        if self.child_task(agent_id, task_id).is_ok() {
            return self
                .stop_child(agent_id, task_id, "stopped by TaskStop")
                .await;
        }
        let grace = match how {
            StopHow::Ask => self.inner.config.stop_grace,
            StopHow::Force => std::time::Duration::ZERO,
        };
        self.inner.tasks.stop(agent_id, task_id, grace).await
    }

    pub async fn task_input(
        &self,
        agent_id: &str,
        task_id: &str,
        text: &str,
    ) -> Result<crate::model::task::TaskInputReceipt, RuntimeError> {
        if self.child_task(agent_id, task_id).is_ok() {
            return self.child_input(agent_id, task_id, text).await;
        }
        self.inner.tasks.input(agent_id, task_id, text).await
    }
}

/// A task of an agent's, or what the client is told of a missing one.
fn task_in(rx: &ReadCtx, agent_id: &str, task_id: &str) -> Result<TaskRecord, ApiError> {
    rx.get(Keyed::Tasks, agent_id, task_id)?.ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            format!("no task `{task_id}` for agent `{agent_id}`"),
        )
    })
}

/// `task.output`: the tail of a task's output file, at most `max_bytes`
/// (64 KiB unless asked, never over 1 MiB), ready once the task ended.
fn task_output(task: TaskRecord, max_bytes: Option<u64>) -> TaskOutput {
    let path = task
        .detail
        .as_ref()
        .and_then(|d| d.get("output_path"))
        .and_then(|p| p.as_str())
        .map(PathBuf::from);
    let max = max_bytes.unwrap_or(64 * 1024).min(1024 * 1024);
    let (output, output_bytes, truncated) = path
        .as_deref()
        .map(|p| crate::runtime::command_tasks::read_tail(p, max))
        .unwrap_or_default();
    let retrieval_status = match task.status.is_terminal() {
        true => RetrievalStatus::Success,
        false => RetrievalStatus::NotReady,
    };
    TaskOutput {
        task,
        output,
        output_bytes,
        truncated,
        retrieval_status,
    }
}

/// An operator prompt from a client, refused when empty (the runtime and
/// the offline client both admit through this).
pub(crate) fn operator_prompt(
    agent_id: &str,
    text: &str,
    priority: crate::model::message::Priority,
    surface: DeliverySurface,
) -> Result<AdmissionRequest, ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidParams,
            "the prompt is empty",
        ));
    }
    Ok(AdmissionRequest::operator_prompt(
        agent_id, text, priority, surface,
    ))
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
