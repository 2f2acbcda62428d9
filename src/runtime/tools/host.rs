//! What a tool may ask of the runtime (`ToolHost`): the surface every
//! tool call and every gate runs with, not the whole handle. A tool reads
//! and writes the store, reads the configuration and where its agent
//! works, calls the MCP servers, and acts through the same operations the
//! console and the socket use; the actors' registry, the locks, the
//! hooks, the reviewer and the watchers are out of its reach (it may
//! only ask for a turn's cancellation, to stop what it started with it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::model::agent::AgentRecord;
use crate::model::task::{TaskInputReceipt, TaskRecord};
use crate::model::waiting::{TimerRecord, WaitingIntentRecord, WaitingIntentStatus};
use crate::model::workspace::{ExecutionSnapshot, UseOutcome, UseWorkspace};
use crate::model::BoxFuture;
use crate::protocol::AgentSummary;
use crate::runtime::agents::child_ops::{SpawnRequest, Spawned};
use crate::runtime::command_tasks::{CommandSpec, TaskOrigin};
use crate::runtime::handle::cancel::TurnCancel;
use crate::runtime::handle::{HostConfig, HostInner, LiveUpdate, RuntimeHost};
use crate::runtime::operator::StopHow;
use crate::runtime::waiting::ops::NewWait;
use crate::runtime::workspace::reach::{Mover, RootMove};
use crate::runtime::RuntimeError;
use crate::store::Store;

/// The runtime as a tool sees it.
pub(crate) trait ToolHost: Send + Sync {
    fn store(&self) -> &Store;
    fn config(&self) -> &HostConfig;
    /// The agent's home directory.
    fn agent_home(&self, agent_id: &str) -> PathBuf;
    fn agent_record(&self, agent_id: &str) -> Result<AgentRecord, RuntimeError>;
    /// Where the agent works now, read fresh for each call.
    fn execution_of(&self, agent_id: &str) -> Result<ExecutionSnapshot, RuntimeError>;
    /// An agent as `holon status` summarises it, with its children.
    fn summary_of(&self, agent: &AgentRecord) -> Result<AgentSummary, RuntimeError>;
    /// Where a UseWorkspace would move the writable root (the gate's view).
    fn root_move(&self, agent_id: &str, req: &UseWorkspace) -> Result<RootMove, RuntimeError>;
    /// The MCP servers.
    fn mcp(&self) -> &crate::runtime::mcp::Hub;
    /// Progress clients may show while a call runs.
    fn live(&self) -> &broadcast::Sender<LiveUpdate>;
    /// Holon's own directories: never a command's to write.
    fn holon_dirs(&self) -> Vec<PathBuf>;
    /// The running turn's cancellation, when the agent has an actor.
    fn turn_cancel(&self, agent_id: &str) -> Option<Arc<TurnCancel>>;

    fn start_command_task<'a>(
        &'a self,
        agent_id: &'a str,
        spec: CommandSpec,
        origin: TaskOrigin,
    ) -> BoxFuture<'a, Result<TaskRecord, RuntimeError>>;
    /// A command the model waited on becomes a background task.
    fn promote_task<'a>(
        &'a self,
        agent_id: &'a str,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), RuntimeError>>;
    fn stop_task_as<'a>(
        &'a self,
        agent_id: &'a str,
        task_id: &'a str,
        how: StopHow,
    ) -> BoxFuture<'a, Result<TaskRecord, RuntimeError>>;
    fn task_input<'a>(
        &'a self,
        agent_id: &'a str,
        task_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<TaskInputReceipt, RuntimeError>>;
    /// The catalog skills a successful command read or ran become active.
    fn note_skill_use<'a>(
        &'a self,
        agent_id: &'a str,
        cmd: &'a str,
        workdir: &'a Path,
    ) -> BoxFuture<'a, Result<(), RuntimeError>>;
    fn spawn_agent<'a>(
        &'a self,
        parent: &'a str,
        req: SpawnRequest,
    ) -> BoxFuture<'a, Result<Spawned, RuntimeError>>;
    fn create_timer<'a>(
        &'a self,
        agent_id: &'a str,
        delay_ms: u64,
        reason: &'a str,
        work_item_id: Option<String>,
    ) -> BoxFuture<'a, Result<TimerRecord, RuntimeError>>;
    fn create_waiting_intent<'a>(
        &'a self,
        agent_id: &'a str,
        wait: NewWait,
    ) -> BoxFuture<'a, Result<WaitingIntentRecord, RuntimeError>>;
    fn settle_waiting_intent<'a>(
        &'a self,
        agent_id: &'a str,
        intent_id: &'a str,
        status: WaitingIntentStatus,
    ) -> BoxFuture<'a, Result<WaitingIntentRecord, RuntimeError>>;
    fn use_workspace_as<'a>(
        &'a self,
        agent_id: &'a str,
        req: UseWorkspace,
        mover: Mover<'a>,
    ) -> BoxFuture<'a, Result<UseOutcome, RuntimeError>>;
}

/// The runtime's own: each a call of the operation every client uses.
impl ToolHost for Arc<HostInner> {
    fn store(&self) -> &Store {
        &self.store
    }

    fn config(&self) -> &HostConfig {
        &self.config
    }

    fn agent_home(&self, agent_id: &str) -> PathBuf {
        HostInner::agent_home(self, agent_id)
    }

    fn agent_record(&self, agent_id: &str) -> Result<AgentRecord, RuntimeError> {
        HostInner::agent_record(self, agent_id)
    }

    fn execution_of(&self, agent_id: &str) -> Result<ExecutionSnapshot, RuntimeError> {
        HostInner::execution_of(self, agent_id)
    }

    fn summary_of(&self, agent: &AgentRecord) -> Result<AgentSummary, RuntimeError> {
        RuntimeHost::from_inner(self).summary_of(agent)
    }

    fn root_move(&self, agent_id: &str, req: &UseWorkspace) -> Result<RootMove, RuntimeError> {
        HostInner::root_move(self, agent_id, req)
    }

    fn mcp(&self) -> &crate::runtime::mcp::Hub {
        HostInner::mcp(self)
    }

    fn live(&self) -> &broadcast::Sender<LiveUpdate> {
        &self.live
    }

    fn holon_dirs(&self) -> Vec<PathBuf> {
        self.tasks().holon_dirs()
    }

    fn turn_cancel(&self, agent_id: &str) -> Option<Arc<TurnCancel>> {
        self.actors().get(agent_id).map(|a| Arc::clone(&a.cancel))
    }

    fn start_command_task<'a>(
        &'a self,
        agent_id: &'a str,
        spec: CommandSpec,
        origin: TaskOrigin,
    ) -> BoxFuture<'a, Result<TaskRecord, RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .start_command_task(agent_id, spec, origin)
                .await
        })
    }

    fn promote_task<'a>(
        &'a self,
        agent_id: &'a str,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(self.tasks().promote(agent_id, task_id))
    }

    fn stop_task_as<'a>(
        &'a self,
        agent_id: &'a str,
        task_id: &'a str,
        how: StopHow,
    ) -> BoxFuture<'a, Result<TaskRecord, RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .stop_task_as(agent_id, task_id, how)
                .await
        })
    }

    fn task_input<'a>(
        &'a self,
        agent_id: &'a str,
        task_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<TaskInputReceipt, RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .task_input(agent_id, task_id, text)
                .await
        })
    }

    fn note_skill_use<'a>(
        &'a self,
        agent_id: &'a str,
        cmd: &'a str,
        workdir: &'a Path,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .note_skill_use(agent_id, cmd, workdir)
                .await
        })
    }

    fn spawn_agent<'a>(
        &'a self,
        parent: &'a str,
        req: SpawnRequest,
    ) -> BoxFuture<'a, Result<Spawned, RuntimeError>> {
        Box::pin(async move { RuntimeHost::from_inner(self).spawn_agent(parent, req).await })
    }

    fn create_timer<'a>(
        &'a self,
        agent_id: &'a str,
        delay_ms: u64,
        reason: &'a str,
        work_item_id: Option<String>,
    ) -> BoxFuture<'a, Result<TimerRecord, RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .create_timer(agent_id, delay_ms, reason, work_item_id)
                .await
        })
    }

    fn create_waiting_intent<'a>(
        &'a self,
        agent_id: &'a str,
        wait: NewWait,
    ) -> BoxFuture<'a, Result<WaitingIntentRecord, RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .create_waiting_intent(agent_id, wait)
                .await
        })
    }

    fn settle_waiting_intent<'a>(
        &'a self,
        agent_id: &'a str,
        intent_id: &'a str,
        status: WaitingIntentStatus,
    ) -> BoxFuture<'a, Result<WaitingIntentRecord, RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .settle_waiting_intent(agent_id, intent_id, status)
                .await
        })
    }

    fn use_workspace_as<'a>(
        &'a self,
        agent_id: &'a str,
        req: UseWorkspace,
        mover: Mover<'a>,
    ) -> BoxFuture<'a, Result<UseOutcome, RuntimeError>> {
        Box::pin(async move {
            RuntimeHost::from_inner(self)
                .use_workspace_as(agent_id, req, mover)
                .await
        })
    }
}
