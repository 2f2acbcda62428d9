//! `OfflineClient`: the `RuntimeClient` of one-shot commands when no
//! runtime runs. It answers from the store with this command's
//! configuration: status and listings read it, a prompt or work item is
//! admitted durably (it runs when a runtime next starts), events are paged.
//! What only a running runtime can do (a command, a control action, a
//! subscription) is refused with how to start one. So each command is
//! written once, against `RuntimeClient`, whichever client it gets.

use super::paths::Paths;
use super::Context;
use crate::model::agent::AgentRecord;
use crate::model::approval::{DefaultPolicy, DefaultPolicySource};
use crate::model::message::DeliverySurface;
use crate::protocol::views::AgentSummary;
use crate::protocol::views::WorkItemSource;
use crate::protocol::{
    ApiError, BoxFuture, ErrorCode, Request, Response, RuntimeClient, RuntimeStatus, Subscription,
};
use crate::runtime::admission::admit_once;
use crate::runtime::inspect::agent_summary;
use crate::runtime::operator::operator_prompt;
use crate::runtime::pages::{answer_reads, StoreReader};
use crate::runtime::work_ops::create_once;
use crate::store::{ReadCtx, Store};

/// The mode `runtime.status` names for an offline answer.
pub const OFFLINE: &str = "offline";

pub struct OfflineClient {
    store: Store,
    paths: Paths,
    default_model: Option<String>,
    fallback_models: Vec<String>,
    default_policy: DefaultPolicy,
    user_home: Option<std::path::PathBuf>,
    budget: crate::model::agent::Budget,
    default_agent: String,
}

impl OfflineClient {
    pub async fn open(ctx: &Context) -> anyhow::Result<OfflineClient> {
        OfflineClient::with_store(ctx, ctx.open_store_for_reading().await?)
    }

    /// Over a store already open (a read-only one, for listings).
    pub fn with_store(ctx: &Context, store: Store) -> anyhow::Result<OfflineClient> {
        // The operator's default (`holon policy`) where set, else the file's;
        // one that cannot be read is said, never taken for the file's.
        let stored: Option<crate::model::approval::ApprovalPolicy> = store
            .read()?
            .setting(crate::runtime::approvals::DEFAULT_POLICY)?;
        let default_policy = match stored {
            Some(policy) => DefaultPolicy {
                policy,
                source: DefaultPolicySource::Operator,
            },
            None => DefaultPolicy {
                policy: ctx.config.policy.clone(),
                source: DefaultPolicySource::Config,
            },
        };
        Ok(OfflineClient {
            default_policy,
            user_home: ctx.config.user_home.clone(),
            store,
            paths: ctx.paths.clone(),
            default_model: ctx.config.default_model.clone(),
            fallback_models: ctx.config.fallback_models.clone(),
            budget: ctx.config.budget,
            default_agent: ctx.config.default_agent.clone(),
        })
    }

    /// Whether this client answers `request` as a runtime would, so a
    /// one-shot command need not start one for it: what is read from the
    /// store alone, and `trigger.show` (which provisions the trigger on
    /// first ask; with no listener, it has no URL either way).
    pub fn answers_as_runtime(request: &Request) -> bool {
        request.domain().reads_store_only() || matches!(request, Request::TriggerShow { .. })
    }

    fn summary(&self, rx: &ReadCtx, agent: &AgentRecord) -> Result<AgentSummary, ApiError> {
        let mut s = agent_summary(rx, agent, &self.paths.data_dir, &self.default_policy.policy)?;
        s.model = agent
            .model_override
            .clone()
            .or_else(|| self.default_model.clone());
        if s.model.is_some() {
            let source = match agent.model_override {
                Some(_) => "agent_override",
                None => "runtime_default",
            };
            s.model_source = Some(source.to_owned());
            let model = s.model.as_deref().unwrap_or_default();
            // The chain a runtime would build: duplicates and blanks out.
            s.fallback_models =
                crate::runtime::provider::registry::chain_refs(model, &self.fallback_models)
                    .into_iter()
                    .skip(1)
                    .collect();
        }
        // Today's spend against the budget this configuration sets.
        s.usage = crate::runtime::inspect::usage_view(agent, self.budget, crate::now_ms());
        Ok(s)
    }

    async fn answer(&self, request: Request) -> Result<Response, ApiError> {
        request.validate_ids()?;
        match request {
            Request::RuntimeStatus => {
                use crate::runtime::inspect::{last_failure_of, status_of, AgentHead};
                let rx = self.store.read()?;
                let heads: Vec<AgentHead> = rx.agents()?;
                let (activity, shown, agent_count) = status_of(&rx, &heads, &self.default_agent)?;
                let agents =
                    crate::runtime::inspect::summaries_of(&rx, shown, |a| self.summary(&rx, a))?;
                Ok(Response::RuntimeStatus(RuntimeStatus {
                    holon: "holon".into(),
                    protocol: crate::protocol::REVISION,
                    version: env!("CARGO_PKG_VERSION").into(),
                    pid: std::process::id(),
                    mode: OFFLINE.into(),
                    home: self.paths.home.as_ref().map(|h| h.display().to_string()),
                    store: self.store.path().display().to_string(),
                    socket_path: None,
                    started_at: crate::format_ts(crate::now_ms()),
                    uptime_ms: 0,
                    activity,
                    default_model: self.default_model.clone(),
                    agents,
                    agent_count,
                    last_failure: last_failure_of(&heads),
                    store_failure: self.store.health(),
                    http: Default::default(),
                    pending_approvals: 0,
                    config_fingerprint: None,
                }))
            }
            _ if request.domain().reads_store_only() => answer_reads(self, request),
            // Provisioned on first ask, as a runtime would; no listener here.
            Request::TriggerShow { agent_id } => Ok(Response::TriggerShow(
                crate::runtime::triggers::ops::show(&self.store, &agent_id, Default::default())
                    .await?,
            )),
            Request::PromptSubmit {
                agent_id,
                text,
                priority,
                request_id,
            } => {
                let req = operator_prompt(&agent_id, &text, priority, DeliverySurface::CliPrompt)?;
                let admitted = admit_once(&self.store, req, request_id).await?;
                Ok(Response::PromptSubmit(admitted))
            }
            Request::WorkItemCreate {
                agent_id,
                item,
                request_id,
            } => {
                let home = self.paths.agent_home(&agent_id);
                let record = create_once(
                    &self.store,
                    &home,
                    &agent_id,
                    item,
                    WorkItemSource::Operator,
                    request_id,
                )
                .await?;
                Ok(Response::WorkItemCreate(record))
            }
            other => Err(needs_runtime(other.method())),
        }
    }
}

impl StoreReader for OfflineClient {
    fn store(&self) -> &Store {
        &self.store
    }

    fn summarize(&self, rx: &ReadCtx, agent: &AgentRecord) -> Result<AgentSummary, ApiError> {
        self.summary(rx, agent)
    }

    fn agent_home(&self, agent_id: &str) -> std::path::PathBuf {
        self.paths.agent_home(agent_id)
    }

    fn default_policy(&self) -> DefaultPolicy {
        self.default_policy.clone()
    }

    fn user_home(&self) -> Option<std::path::PathBuf> {
        self.user_home.clone()
    }
}

fn needs_runtime(what: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Conflict,
        format!("`{what}` needs a running runtime (start one with `holon --detach`)"),
    )
}

impl RuntimeClient for OfflineClient {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Response, ApiError>> {
        Box::pin(self.answer(request))
    }

    fn subscribe(
        &self,
        _agent_id: &str,
        _from_seq: u64,
    ) -> BoxFuture<'_, Result<Subscription, ApiError>> {
        Box::pin(async move { Err(needs_runtime("events.subscribe")) })
    }

    fn transport(&self) -> &'static str {
        OFFLINE
    }
}

/// The client a one-shot command uses: the running runtime's socket when
/// one answers, else the store, offline. A runtime that took the store
/// between the two (it was restarting) is used once it answers: the
/// command waits for it (at most [`RESTART_WAIT`], said on stderr after a
/// second) instead of failing.
pub async fn client(ctx: &Context) -> anyhow::Result<Box<dyn RuntimeClient>> {
    if let Some(c) = super::daemon::connect(ctx).await {
        return Ok(Box::new(c));
    }
    match OfflineClient::open(ctx).await {
        Ok(c) => Ok(Box::new(c)),
        Err(e)
            if matches!(
                e.downcast_ref::<super::StoreHeld>(),
                Some(super::StoreHeld::ByRuntime { .. })
            ) =>
        {
            match connect_waiting(ctx).await {
                Some(c) => Ok(Box::new(c)),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// How long a command waits for a restarting runtime to answer.
pub const RESTART_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The runtime's socket client, waiting for it to answer (a runtime that
/// holds the store but does not answer yet is starting).
async fn connect_waiting(ctx: &Context) -> Option<crate::ui::client::SocketClient> {
    let started = std::time::Instant::now();
    let mut said = false;
    loop {
        if let Some(c) = super::daemon::connect(ctx).await {
            return Some(c);
        }
        let waited = started.elapsed();
        if waited >= RESTART_WAIT {
            return None;
        }
        if !said && waited >= std::time::Duration::from_secs(1) {
            eprintln!(
                "holon: the runtime is starting; waiting for it (up to {} s)",
                RESTART_WAIT.as_secs()
            );
            said = true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
