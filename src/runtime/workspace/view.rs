//! Reading where agents work: an agent's execution snapshot (what tools,
//! the prompt frame and every client use), and `workspace.list` with the
//! other agents working directly in each checkout (occupancy).

use std::path::Path;

use crate::model::agent::AgentRecord;
use crate::model::approval::ApprovalPolicy;
use crate::model::workspace::ExecutionSnapshot;
use crate::model::workspace::WorkspaceEntry;
use crate::model::workspace::WorkspaceList;
use crate::model::workspace::WorkspaceMode;
use crate::runtime::handle::{HostInner, RuntimeHost};
use crate::runtime::workspace as ws;
use crate::runtime::RuntimeError;
use crate::store::{ReadCtx, StoreError};

impl RuntimeHost {
    /// The agent's execution snapshot.
    pub fn execution_snapshot(&self, agent_id: &str) -> Result<ExecutionSnapshot, RuntimeError> {
        self.inner.execution_of(agent_id)
    }
}

/// `workspace.list`: where `agent` works, each attached checkout with the
/// other agents working directly in it, under the policy of workspaces
/// without their own (`default_policy`).
pub(crate) fn workspace_list(
    rx: &ReadCtx,
    agent: &AgentRecord,
    home: &Path,
    default_policy: &ApprovalPolicy,
) -> Result<WorkspaceList, StoreError> {
    let others: Vec<AgentRecord> = rx.agents()?;
    let state = &agent.workspaces;
    let attached = state
        .attached
        .iter()
        .map(|b| WorkspaceEntry {
            binding: b.clone(),
            active: state.active_id() == b.workspace_id,
            present: Path::new(&b.anchor).is_dir(),
            direct_users: direct_users(&others, &agent.id, &b.anchor),
        })
        .collect();
    let execution = ws::snapshot(state, home, default_policy);
    Ok(WorkspaceList {
        agent_id: agent.id.clone(),
        active_workspace_id: state.active_id().to_owned(),
        execution_root_present: Path::new(&execution.execution_root).is_dir(),
        execution,
        attached,
        retained_worktrees: state.retained_worktrees.clone(),
    })
}

/// Agents other than `me` whose active root is `anchor` itself (direct).
fn direct_users(agents: &[AgentRecord], me: &str, anchor: &str) -> Vec<String> {
    agents
        .iter()
        .filter(|a| a.id != me)
        .filter(|a| {
            a.workspaces
                .active
                .as_ref()
                .is_some_and(|w| w.mode == WorkspaceMode::Direct && w.execution_root == anchor)
        })
        .map(|a| a.id.clone())
        .collect()
}

impl HostInner {
    pub(crate) fn snapshot_of(&self, agent: &AgentRecord) -> ExecutionSnapshot {
        ws::snapshot(
            &agent.workspaces,
            &self.agent_home(&agent.id),
            &self.default_policy(),
        )
    }

    /// The active execution root and cwd for tools: read fresh per call,
    /// so a switch takes effect at the next tool call.
    pub(crate) fn execution_of(&self, agent_id: &str) -> Result<ExecutionSnapshot, RuntimeError> {
        Ok(self.snapshot_of(&self.agent_record(agent_id)?))
    }

    /// The agent's record, or `UnknownAgent`.
    pub(crate) fn agent_record(&self, agent_id: &str) -> Result<AgentRecord, RuntimeError> {
        record_in(&self.store.read()?, agent_id)
    }
}

/// An agent's record as one read snapshot holds it.
pub(crate) fn record_in(
    rx: &crate::store::ReadCtx,
    agent_id: &str,
) -> Result<AgentRecord, RuntimeError> {
    rx.agent(agent_id)?
        .ok_or_else(|| RuntimeError::UnknownAgent {
            agent_id: agent_id.to_owned(),
        })
}
