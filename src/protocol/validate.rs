//! Every id a request carries, checked before anything is read, created
//! or written: a hostile id never reaches the disk.

use super::api::Request;
use super::error::{ApiError, ErrorCode};

impl Request {
    /// Every id the request carries, checked against the documented rules
    /// before anything is read, created or written. Exhaustive: a new
    /// request fails to compile until its ids are considered. A table by
    /// design: one arm per request.
    pub fn validate_ids(&self) -> Result<(), ApiError> {
        use crate::model::ids::{validate, IdKind};
        let check = |kind, id: &str| {
            validate(kind, id).map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))
        };
        match self {
            Request::RuntimeStatus
            | Request::RuntimeShutdown
            | Request::AgentsList {
                cursor: None,
                query: None,
                ..
            }
            | Request::RuntimePolicy { .. }
            | Request::StoreBackup { .. }
            | Request::StorePrune { .. }
            | Request::McpList { workspace: None } => Ok(()),
            Request::McpList {
                workspace: Some(workspace),
            } => workspace_dir(workspace),
            Request::McpApprove {
                name, workspace, ..
            } => {
                crate::model::mcp::check_server_name(name)
                    .map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))?;
                workspace_dir(workspace)
            }
            Request::McpDisable {
                name, workspace, ..
            } => {
                crate::model::mcp::check_server_name(name)
                    .map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))?;
                workspace.as_deref().map_or(Ok(()), workspace_dir)
            }
            Request::ProposalShow { workspace, .. } => workspace_dir(workspace),
            Request::ProposalAdopt {
                workspace, digest, ..
            } => {
                let hex = digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit());
                match hex {
                    true => workspace_dir(workspace),
                    false => Err(ApiError::new(
                        ErrorCode::InvalidParams,
                        "digest must be a SHA-256 in hex (64 characters)",
                    )),
                }
            }
            Request::AgentsList { cursor, query, .. } => {
                if let Some(c) = cursor {
                    check(IdKind::Agent, c)?;
                }
                match query {
                    Some(q) if q.chars().count() > 200 => Err(ApiError::new(
                        ErrorCode::InvalidParams,
                        "query is longer than 200 characters",
                    )),
                    _ => Ok(()),
                }
            }
            Request::ApprovalsList { agent_id, .. } => match agent_id {
                Some(a) => check(IdKind::Agent, a),
                None => Ok(()),
            },
            Request::ApprovalApprove {
                approval_id,
                agent_id,
                ..
            }
            | Request::ApprovalDeny {
                approval_id,
                agent_id,
                ..
            } => {
                if let Some(a) = agent_id {
                    check(IdKind::Agent, a)?;
                }
                check(IdKind::Approval, approval_id)
            }
            Request::WorkspacePolicy {
                agent_id,
                workspace_id,
                ..
            } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::Workspace, workspace_id)
            }
            Request::PromptSubmit {
                agent_id,
                request_id,
                ..
            }
            | Request::WorkItemCreate {
                agent_id,
                request_id,
                ..
            } => {
                check(IdKind::Agent, agent_id)?;
                match request_id {
                    Some(r) => check(IdKind::Request, r),
                    None => Ok(()),
                }
            }
            Request::AgentCreate { agent_id, .. }
            | Request::AgentArchive { agent_id }
            | Request::SkillsList { agent_id }
            | Request::AgentStatus { agent_id }
            | Request::AgentState { agent_id }
            | Request::AgentPrompt { agent_id }
            | Request::AgentTranscript { agent_id, .. }
            | Request::TaskRun { agent_id, .. }
            | Request::Control { agent_id, .. }
            | Request::AgentDisplay { agent_id, .. }
            | Request::AgentBudget { agent_id, .. }
            | Request::WorkspaceList { agent_id }
            | Request::WorkspaceFiles { agent_id }
            | Request::TriggerShow { agent_id }
            | Request::TriggerRotate { agent_id }
            | Request::TriggerRevoke { agent_id }
            | Request::TriggerDeliver { agent_id, .. }
            | Request::WorkspaceAttach { agent_id, .. } => check(IdKind::Agent, agent_id),
            Request::EventsPage { agent_id, kind, .. } => {
                check(IdKind::Agent, agent_id)?;
                match kind.as_deref() {
                    Some(k) if crate::protocol::events::EventKind::parse(k).is_none() => {
                        Err(ApiError::new(
                            ErrorCode::InvalidParams,
                            format!(
                                "`{}` is not an event kind (docs/events.md lists them)",
                                k.escape_debug()
                            ),
                        ))
                    }
                    _ => Ok(()),
                }
            }
            Request::AgentModel {
                agent_id, model, ..
            } => {
                check(IdKind::Agent, agent_id)?;
                match model {
                    Some(m) => crate::model::ids::check_model_ref(m)
                        .map(|_| ())
                        .map_err(|e| ApiError::new(ErrorCode::InvalidParams, e)),
                    None => Ok(()),
                }
            }
            Request::WorkspaceUse { agent_id, target } => {
                check(IdKind::Agent, agent_id)?;
                match &target.workspace_id {
                    Some(w) => check(IdKind::Workspace, w),
                    None => Ok(()),
                }
            }
            Request::WorkspaceDetach {
                agent_id,
                workspace_id,
            } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::Workspace, workspace_id)
            }
            Request::WorkItemPick {
                agent_id,
                work_item_id,
            }
            | Request::WorkItemComplete {
                agent_id,
                work_item_id,
                ..
            } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::WorkItem, work_item_id)
            }
            Request::WorkItemUpdate { agent_id, update } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::WorkItem, &update.work_item_id)
            }
            Request::TaskStatus { agent_id, task_id }
            | Request::TaskOutput {
                agent_id, task_id, ..
            }
            | Request::TaskInput {
                agent_id, task_id, ..
            }
            | Request::TaskStop { agent_id, task_id } => {
                check(IdKind::Agent, agent_id)?;
                check(IdKind::Task, task_id)
            }
        }
    }
}

/// A workspace directory named by a client: absolute, and without `..`.
fn workspace_dir(path: &str) -> Result<(), ApiError> {
    let p = std::path::Path::new(path);
    let upward = p
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    match p.is_absolute() && !upward {
        true => Ok(()),
        false => Err(ApiError::new(
            ErrorCode::InvalidParams,
            "workspace must be an absolute path without `..`",
        )),
    }
}
