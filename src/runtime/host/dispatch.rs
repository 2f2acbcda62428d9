//! Where every API request goes (`RuntimeHost::answer`, typed): to the
//! feature that answers its domain, or, for the runtime's own (status,
//! shutdown, the store's backup and prune), answered here. Used directly
//! by the embedded console and behind the control socket by attached
//! clients; the `RuntimeClient` side (batches, subscriptions) is in
//! `client.rs`.

use serde_json::Value;

use crate::model::agent::AgentRecord;
use crate::protocol::{AgentSummary, ApiError, Domain, ErrorCode, Request, Response, ShutdownAck};
use crate::runtime::handle::RuntimeHost;
use crate::runtime::pages::{answer_reads, StoreReader};
use crate::store::ReadCtx;

/// Items buffered per subscriber before it counts as lagging.
pub const SUBSCRIPTION_BUFFER: usize = 1024;

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

impl RuntimeHost {
    pub(super) async fn handle(&self, request: Request) -> Result<Value, ApiError> {
        to_value(self.answer(request).await?)
    }

    /// Perform one request; the answer is typed by its method. Each
    /// feature answers its own domain (`answer_<domain>` beside its
    /// operations; the protocol's table of answers says whose each request
    /// is); what is read from the store alone is answered as the offline
    /// client answers it (`pages::answer_reads`).
    pub async fn answer(&self, request: Request) -> Result<Response, ApiError> {
        // Before any side effect: a hostile id never reaches the disk.
        request.validate_ids()?;
        match request.domain() {
            // `holon policy` with no change reads; a change is the approvals'.
            // The read waits for a change under way (whose policy is in
            // force before it commits, and undone if it does not).
            Domain::PolicyRead => {
                let _settled = self.inner.default_policy_change.lock().await;
                answer_reads(self, request)
            }
            Domain::StoreRead => answer_reads(self, request),
            Domain::Runtime => self.answer_runtime(request).await,
            Domain::Agents => self.answer_agents(request).await,
            Domain::Workspace => self.answer_workspace(request).await,
            Domain::Approvals => self.answer_approvals(request).await,
            Domain::Triggers => self.answer_triggers(request).await,
            Domain::Operator => self.answer_operator(request).await,
            Domain::Mcp => self.answer_mcp(request).await,
        }
    }

    /// `runtime.status`, `runtime.shutdown`, `store.backup` and
    /// `store.prune`: the runtime's own.
    async fn answer_runtime(&self, request: Request) -> Result<Response, ApiError> {
        match request {
            Request::RuntimeStatus => Ok(Response::RuntimeStatus(self.runtime_status()?)),
            Request::RuntimeShutdown => {
                self.request_shutdown();
                Ok(Response::RuntimeShutdown(ShutdownAck {
                    shutting_down: true,
                    commands_left_running: self.commands_outliving(),
                }))
            }
            Request::StoreBackup { copy } => {
                Ok(Response::StoreBackup(self.backup_store(copy).await?))
            }
            Request::StorePrune {
                older_than_days,
                dry_run,
            } => Ok(Response::StorePrune(
                self.prune_store(older_than_days, dry_run).await?,
            )),
            other => Err(other.misrouted()),
        }
    }
}

impl StoreReader for RuntimeHost {
    fn store(&self) -> &crate::store::Store {
        RuntimeHost::store(self)
    }

    fn summarize(&self, rx: &ReadCtx, agent: &AgentRecord) -> Result<AgentSummary, ApiError> {
        RuntimeHost::summarize(self, rx, agent)
    }

    fn agent_home(&self, agent_id: &str) -> std::path::PathBuf {
        self.inner.agent_home(agent_id)
    }

    fn default_policy(&self) -> crate::model::approval::DefaultPolicy {
        self.inner
            .default_policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn user_home(&self) -> Option<std::path::PathBuf> {
        self.inner.config.user_home.clone()
    }
}
