//! What an operator or a client does to an agent through the host: the
//! display mode, work items, and operator commands and their tasks (control
//! actions are `control.rs`), and `answer_operator`, which answers those
//! requests. Each is one store transaction with its events, then a wake
//! of the agent's actor.

use std::path::PathBuf;

use crate::model::agent::AgentRecord;
use crate::model::event::Provenance;
use crate::model::message::{AdmissionRequest, DeliverySurface};
use crate::model::task::TaskRecord;
use crate::model::work::WorkItemRecord;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::views::{CreateWorkItem, UpdateWorkItem, WorkItemSource};
use crate::protocol::{ApiError, ErrorCode, Request, Response, RetrievalStatus, TaskOutput};
use crate::runtime::agent::agent_in;
use crate::runtime::command_tasks::{CommandSpec, TaskOrigin};
use crate::runtime::handle::{io_err, RuntimeHost};
use crate::runtime::work_ops;
use crate::runtime::RuntimeError;
use crate::store::{Keyed, ReadCtx};

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
            .tasks()
            .start(agent_id, spec, TaskOrigin::Operator)
            .await
    }

    pub async fn start_command_task(
        &self,
        agent_id: &str,
        spec: CommandSpec,
        origin: TaskOrigin,
    ) -> Result<TaskRecord, RuntimeError> {
        self.inner.tasks().start(agent_id, spec, origin).await
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
        self.inner.tasks().stop(agent_id, task_id, grace).await
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
        self.inner.tasks().input(agent_id, task_id, text).await
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
    let path = task.detail.output_path.as_deref().map(PathBuf::from);
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
