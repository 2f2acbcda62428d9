//! Every API request handled in one place (`RuntimeHost::answer`, typed),
//! used directly by the embedded console and behind the control socket by
//! attached clients; the `RuntimeClient` side (batches, subscriptions) is
//! in `client.rs`.

use serde_json::Value;

use super::RuntimeHost;
use crate::model::agent::AgentRecord;
use crate::model::message::{AdmissionRequest, DeliverySurface};
use crate::model::task::TaskRecord;
use crate::protocol::{
    ApiError, ErrorCode, ModelChanged, Request, Response, RetrievalStatus, ShutdownAck,
    TaskOutput as TaskOutputAnswer,
};
use crate::runtime::command_tasks::read_tail;
use crate::runtime::inspect::{events_page, transcript_page};
use crate::store::Keyed;

/// Items buffered per subscriber before it counts as lagging.
pub const SUBSCRIPTION_BUFFER: usize = 1024;

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

pub(super) fn not_found(what: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, what.to_owned())
}

impl RuntimeHost {
    /// The model an agent's next turn uses (override, else this runtime's
    /// default); `None` when none is configured.
    pub(super) fn effective_model(&self, agent: &AgentRecord) -> Option<String> {
        Some((self.inner.config.provider)(agent).model_ref()).filter(|m| !m.is_empty())
    }

    pub(super) async fn handle(&self, request: Request) -> Result<Value, ApiError> {
        to_value(self.answer(request).await?)
    }

    /// Perform one request; the answer is typed by its method.
    pub async fn answer(&self, request: Request) -> Result<Response, ApiError> {
        // Before any side effect: a hostile id never reaches the disk.
        request.validate_ids()?;
        match request {
            Request::RuntimeStatus => Ok(Response::RuntimeStatus(self.runtime_status()?)),
            Request::StoreBackup { copy } => {
                Ok(Response::StoreBackup(self.backup_store(copy).await?))
            }
            Request::McpList { workspace } => Ok(Response::McpList(
                self.mcp_servers(workspace.as_deref().map(std::path::Path::new)),
            )),
            Request::McpDisable {
                name,
                workspace,
                disabled,
            } => Ok(Response::McpDisable(
                self.mcp_disable(
                    workspace.as_deref().map(std::path::Path::new),
                    &name,
                    disabled,
                )
                .await?,
            )),
            Request::ProposalShow { workspace, kind } => Ok(Response::ProposalShow(
                self.proposal(std::path::Path::new(&workspace), kind)?,
            )),
            Request::ProposalAdopt {
                workspace,
                kind,
                digest,
                approved,
            } => Ok(Response::ProposalAdopt(
                self.adopt_proposal(std::path::Path::new(&workspace), kind, &digest, approved)
                    .await?,
            )),
            Request::McpApprove {
                name,
                workspace,
                command_line,
            } => Ok(Response::McpApprove(
                self.mcp_approve(
                    std::path::Path::new(&workspace),
                    &name,
                    command_line.as_deref(),
                )
                .await?,
            )),
            Request::StorePrune {
                older_than_days,
                dry_run,
            } => Ok(Response::StorePrune(
                self.prune_store(older_than_days, dry_run).await?,
            )),
            Request::RuntimeShutdown => {
                self.request_shutdown();
                Ok(Response::RuntimeShutdown(ShutdownAck {
                    shutting_down: true,
                    commands_left_running: self.commands_outliving(),
                }))
            }
            Request::AgentsList {
                limit,
                cursor,
                query,
            } => {
                let rx = self.store().read()?;
                let page = crate::runtime::inspect::agents_page(
                    &rx,
                    limit,
                    cursor.as_deref(),
                    query.as_deref(),
                    |a| self.summarize(&rx, a),
                )?;
                Ok(Response::AgentsList(page))
            }
            Request::AgentCreate { agent_id, template } => {
                let req = crate::runtime::agents::ops::NewAgent {
                    agent_id: agent_id.clone(),
                    template,
                    ..Default::default()
                };
                self.create_named_agent(req).await?;
                Ok(Response::AgentCreate(self.summary(&agent_id)?))
            }
            Request::AgentArchive { agent_id } => {
                self.archive_agent(&agent_id, "operator").await?;
                Ok(Response::AgentArchive(self.summary(&agent_id)?))
            }
            Request::SkillsList { agent_id } => {
                let agent = self.inner.agent_record(&agent_id)?;
                let catalog = self.skill_catalog(&agent)?;
                Ok(Response::SkillsList(crate::runtime::agents::skills::views(
                    &catalog,
                    &agent.skills,
                )))
            }
            Request::AgentStatus { agent_id } => {
                let mut s = self.summary(&agent_id)?;
                super::watch::name_guidance(&mut s, &self.inner.agent_home(&agent_id));
                Ok(Response::AgentStatus(s))
            }
            Request::AgentState { agent_id } => {
                Ok(Response::AgentState(self.agent_state(&agent_id)?))
            }
            Request::AgentPrompt { agent_id } => {
                Ok(Response::AgentPrompt(self.prompt_preview(&agent_id).await?))
            }
            Request::AgentTranscript { agent_id, limit } => {
                let rx = self.store().read()?;
                if rx.agent::<AgentRecord>(&agent_id)?.is_none() {
                    return Err(not_found(&format!("no agent `{agent_id}`")));
                }
                Ok(Response::AgentTranscript(transcript_page(
                    &rx, &agent_id, limit,
                )?))
            }
            Request::WorkspaceFiles { agent_id } => {
                let root =
                    std::path::PathBuf::from(self.inner.execution_of(&agent_id)?.execution_root);
                let list = tokio::task::spawn_blocking(move || {
                    crate::runtime::workspace::files::walk(
                        &root,
                        crate::runtime::workspace::files::MAX_LISTED,
                    )
                })
                .await
                .map_err(|e| crate::runtime::RuntimeError::Io {
                    what: "listing the workspace's files".into(),
                    message: e.to_string(),
                })?;
                Ok(Response::WorkspaceFiles(list))
            }
            Request::WorkspaceList { agent_id } => {
                Ok(Response::WorkspaceList(self.list_workspaces(&agent_id)?))
            }
            Request::WorkspaceAttach { agent_id, path } => Ok(Response::WorkspaceAttach(
                self.attach_workspace(&agent_id, std::path::Path::new(&path))
                    .await?,
            )),
            Request::WorkspaceUse { agent_id, target } => Ok(Response::WorkspaceUse(
                self.use_workspace(&agent_id, target).await?,
            )),
            Request::WorkspaceDetach {
                agent_id,
                workspace_id,
            } => Ok(Response::WorkspaceDetach(
                self.detach_workspace(&agent_id, &workspace_id).await?,
            )),
            Request::ApprovalsList {
                agent_id,
                include_answered,
            } => Ok(Response::ApprovalsList(
                self.approvals(agent_id.as_deref(), include_answered)?,
            )),
            Request::ApprovalApprove {
                approval_id,
                agent_id,
                always,
            } => {
                let agent = self.approval_agent(agent_id, &approval_id)?;
                Ok(Response::ApprovalApprove(
                    self.approve(&agent, &approval_id, always).await?,
                ))
            }
            Request::ApprovalDeny {
                approval_id,
                agent_id,
                note,
            } => {
                let agent = self.approval_agent(agent_id, &approval_id)?;
                Ok(Response::ApprovalDeny(
                    self.deny(&agent, &approval_id, note).await?,
                ))
            }
            Request::WorkspacePolicy {
                agent_id,
                workspace_id,
                change,
            } => Ok(Response::WorkspacePolicy(
                self.set_workspace_policy(&agent_id, &workspace_id, change)
                    .await?,
            )),
            Request::RuntimePolicy { change } => {
                Ok(Response::RuntimePolicy(self.default_policy(change).await?))
            }
            Request::TriggerShow { agent_id } => {
                Ok(Response::TriggerShow(self.trigger_show(&agent_id).await?))
            }
            Request::TriggerRotate { agent_id } => Ok(Response::TriggerRotate(
                self.trigger_rotate(&agent_id).await?,
            )),
            Request::TriggerRevoke { agent_id } => Ok(Response::TriggerRevoke(
                self.trigger_revoke(&agent_id).await?,
            )),
            Request::TriggerDeliver { agent_id, meta } => {
                let delivery = crate::runtime::triggers::ops::Delivery {
                    meta,
                    ..Default::default()
                };
                match self.trigger_deliver(&agent_id, None, delivery).await {
                    Ok(receipt) => Ok(Response::TriggerDeliver(receipt)),
                    Err(crate::runtime::triggers::ops::DeliveryError::Runtime(e)) => Err(e.into()),
                    Err(e) => Err(ApiError::new(ErrorCode::InvalidParams, e.to_string())),
                }
            }
            Request::PromptSubmit {
                agent_id,
                text,
                priority,
                request_id,
            } => {
                let req = operator_prompt(
                    &agent_id,
                    &text,
                    priority,
                    DeliverySurface::HttpControlPrompt,
                )?;
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
            Request::TaskStatus { agent_id, task_id } => {
                let rx = self.store().read()?;
                let t: TaskRecord =
                    rx.get(Keyed::Tasks, &agent_id, &task_id)?.ok_or_else(|| {
                        not_found(&format!("no task `{task_id}` for agent `{agent_id}`"))
                    })?;
                Ok(Response::TaskStatus(t))
            }
            Request::TaskOutput {
                agent_id,
                task_id,
                max_bytes,
            } => {
                let rx = self.store().read()?;
                let t: TaskRecord =
                    rx.get(Keyed::Tasks, &agent_id, &task_id)?.ok_or_else(|| {
                        not_found(&format!("no task `{task_id}` for agent `{agent_id}`"))
                    })?;
                let path = t
                    .detail
                    .as_ref()
                    .and_then(|d| d.get("output_path"))
                    .and_then(|p| p.as_str())
                    .map(std::path::PathBuf::from);
                let max = max_bytes.unwrap_or(64 * 1024).min(1024 * 1024);
                let (output, bytes, truncated) = path
                    .as_deref()
                    .map(|p| read_tail(p, max))
                    .unwrap_or_default();
                let retrieval_status = match t.status.is_terminal() {
                    true => RetrievalStatus::Success,
                    false => RetrievalStatus::NotReady,
                };
                Ok(Response::TaskOutput(TaskOutputAnswer {
                    task: t,
                    output,
                    output_bytes: bytes,
                    truncated,
                    retrieval_status,
                }))
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
            Request::AgentDisplay { agent_id, mode } => {
                self.set_display_mode(&agent_id, mode).await?;
                Ok(Response::AgentDisplay(self.summary(&agent_id)?))
            }
            Request::AgentModel {
                agent_id,
                model,
                reasoning_effort,
            } => {
                let previous = self.set_model(&agent_id, model, reasoning_effort).await?;
                let agent = self.summary(&agent_id)?;
                Ok(Response::AgentModel(ModelChanged {
                    agent,
                    previous_model_override: previous,
                }))
            }
            Request::AgentBudget {
                agent_id,
                daily_usd,
                daily_tokens,
                clear,
            } => {
                let change = crate::runtime::budget::BudgetChange {
                    daily_usd,
                    daily_tokens,
                    clear,
                };
                let (id, global) = (agent_id.clone(), self.inner.config.budget);
                self.inner
                    .store
                    .write(move |tx| crate::runtime::budget::set_in(tx, &id, change, global))
                    .await
                    .map_err(crate::runtime::RuntimeError::from)?;
                // A lower budget may already be reached: the agent's actor
                // decides again.
                self.wake(&agent_id);
                let agent: AgentRecord = self
                    .store()
                    .read()?
                    .agent(&agent_id)?
                    .ok_or_else(|| not_found(&format!("no agent `{agent_id}`")))?;
                let global = self.inner.config.budget;
                let today = crate::runtime::inspect::usage_view(&agent, global, crate::now_ms())
                    .map(|u| u.today);
                Ok(Response::AgentBudget(
                    crate::protocol::views::BudgetAnswer {
                        agent_id,
                        own: agent.budget.into(),
                        applies: agent.budget.over(global).into(),
                        today,
                    },
                ))
            }
            Request::Control { agent_id, action } => {
                Ok(Response::Control(self.control(&agent_id, action).await?))
            }
            Request::EventsPage {
                agent_id,
                from_seq,
                limit,
                kind,
            } => {
                let rx = self.store().read()?;
                let page = events_page(&rx, &agent_id, from_seq, limit, kind.as_deref())?;
                let page = page.ok_or_else(|| not_found(&format!("no agent `{agent_id}`")))?;
                Ok(Response::EventsPage(page))
            }
        }
    }
}

/// An operator prompt from a client, refused when empty (the runtime's
/// dispatch and the offline client both admit through this).
pub fn operator_prompt(
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
