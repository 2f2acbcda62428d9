//! `RuntimeHost` as a `RuntimeClient`: every API request handled in one
//! place, used directly by the embedded console and behind the control
//! socket by attached clients. Subscriptions follow the ledger by cursor:
//! page from `from_seq`, then wait for the next commit of that agent; the
//! broadcast is only a wake-up, so there is no gap and no duplicate, and a
//! subscriber that falls behind is told where to resume instead of growing
//! memory.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::RuntimeHost;
use crate::protocol::{
    AgentState, ApiError, BoxFuture, ErrorCode, ModelChanged, Request, Response, RetrievalStatus,
    RuntimeClient, RuntimeStatus, ShutdownAck, Subscription, SubscriptionItem,
    TaskOutput as TaskOutputAnswer, MAX_PAGE,
};
use crate::runtime::agent::AgentRecord;
use crate::runtime::command_tasks::read_tail;
use crate::runtime::envelope::{AdmissionRequest, DeliverySurface};
use crate::runtime::inspect::{agent_summary, events_page, AgentSummary};
use crate::runtime::tasks::TaskRecord;
use crate::runtime::work_items::WorkItemRecord;
use crate::store::{EventRecord, Index, Keyed, Store};

/// Characters of a plan artifact served with `agent.state`.
pub const PLAN_PREVIEW_CHARS: usize = 2000;

/// Items buffered per subscriber before it counts as lagging.
pub const SUBSCRIPTION_BUFFER: usize = 1024;

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

fn not_found(what: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, what.to_owned())
}

impl RuntimeHost {
    /// The model an agent's next turn uses (override, else this runtime's
    /// default); `None` when none is configured.
    fn effective_model(&self, agent: &AgentRecord) -> Option<String> {
        Some((self.inner.config.provider)(agent).model_ref()).filter(|m| !m.is_empty())
    }

    fn summarize(
        &self,
        rx: &crate::store::ReadCtx,
        agent: &AgentRecord,
    ) -> Result<AgentSummary, ApiError> {
        let mut s = agent_summary(
            rx,
            agent,
            &self.inner.config.data_dir,
            &self.inner.config.policy,
        )?;
        let provider = (self.inner.config.provider)(agent);
        s.model = Some(provider.model_ref()).filter(|m| !m.is_empty());
        if s.model.is_some() {
            s.context.window = provider.context_budget().window;
        }
        Ok(s)
    }

    fn summary(&self, agent_id: &str) -> Result<AgentSummary, ApiError> {
        let rx = self.store().read()?;
        let agent: AgentRecord = rx
            .agent(agent_id)?
            .ok_or_else(|| not_found(&format!("no agent `{agent_id}`")))?;
        self.summarize(&rx, &agent)
    }

    pub fn runtime_status(&self) -> Result<RuntimeStatus, ApiError> {
        let rx = self.store().read()?;
        let agents: Vec<AgentRecord> = rx.agents()?;
        let summaries = agents
            .iter()
            .map(|a| self.summarize(&rx, a))
            .collect::<Result<Vec<_>, _>>()?;
        let activity = crate::runtime::inspect::activity(&agents, &summaries);
        let last_failure = crate::runtime::inspect::last_failure(&agents);
        let info = &self.inner.config.info;
        Ok(RuntimeStatus {
            holon: "holon".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            pid: std::process::id(),
            mode: info.mode.clone(),
            home: info.home.clone(),
            store: self.store().path().display().to_string(),
            socket_path: info.socket_path.clone(),
            started_at: crate::format_ts(self.inner.started_at_ms),
            uptime_ms: u64::try_from(crate::now_ms().saturating_sub(self.inner.started_at_ms))
                .unwrap_or(0),
            default_model: self.effective_model(&AgentRecord::new("", String::new())),
            activity,
            agents: summaries,
            last_failure,
            store_failure: self.store().health(),
            http: self.ingress(),
            pending_approvals: self.approvals(None, false)?.len() as u64,
            config_fingerprint: info.config_fingerprint.clone(),
        })
    }

    fn agent_state(&self, agent_id: &str) -> Result<AgentState, ApiError> {
        let rx = self.store().read()?;
        let agent: AgentRecord = rx
            .agent(agent_id)?
            .ok_or_else(|| not_found(&format!("no agent `{agent_id}`")))?;
        let summary = self.summarize(&rx, &agent)?;
        let last_event_seq = rx.last_seq(agent_id)?;
        let live = super::projection::load(&rx, agent_id, crate::now_ms())?;
        let closure = live
            .as_ref()
            .map(|l| json!(l.projection.closure()))
            .unwrap_or(Value::Null);
        let home = self.inner.agent_home(agent_id);
        let with_plan = |w: &WorkItemRecord| {
            let mut v = json!(w);
            let path = crate::runtime::work_ops::plan_path(&home, &w.id);
            if let Ok(text) = std::fs::read_to_string(&path) {
                let preview: String = text.chars().take(PLAN_PREVIEW_CHARS).collect();
                v["plan_preview_complete"] = json!(preview.len() == text.len());
                v["plan_preview"] = json!(preview);
                v["plan_path"] = json!(path);
            }
            v
        };
        let mut work_items: Vec<Value> = Vec::new();
        for w in live
            .as_ref()
            .map(|l| l.work_items.clone())
            .unwrap_or_default()
        {
            work_items.push(with_plan(&w));
        }
        let recent: Vec<WorkItemRecord> = rx.list_recent(Keyed::WorkItems, agent_id, 50)?;
        for w in recent
            .into_iter()
            .filter(|w| w.state == crate::runtime::work_items::WorkItemState::Completed)
        {
            work_items.push(json!(w));
        }
        let mut tasks: Vec<Value> = Vec::new();
        for id in rx.index_list(Index::ActiveTasks, agent_id)? {
            if let Some(t) = rx.get::<TaskRecord>(Keyed::Tasks, agent_id, &id)? {
                tasks.push(json!(t));
            }
        }
        for t in rx.list_recent::<TaskRecord>(Keyed::Tasks, agent_id, 20)? {
            if t.status.is_terminal() {
                tasks.push(json!(t));
            }
        }
        let last_decision = rx
            .events_before(agent_id, last_event_seq + 1, 200)?
            .into_iter()
            .rev()
            .find(|e| e.kind == "scheduler_decision");
        Ok(AgentState {
            agent: summary,
            last_event_seq,
            closure,
            work_items,
            tasks,
            last_decision,
            display_mode: agent.display_mode,
        })
    }

    async fn handle(&self, request: Request) -> Result<Value, ApiError> {
        to_value(self.answer(request).await?)
    }

    /// Perform one request; the answer is typed by its method.
    pub async fn answer(&self, request: Request) -> Result<Response, ApiError> {
        // Before any side effect: a hostile id never reaches the disk.
        request.validate_ids()?;
        match request {
            Request::RuntimeStatus => Ok(Response::RuntimeStatus(self.runtime_status()?)),
            Request::RuntimeShutdown => {
                self.request_shutdown();
                Ok(Response::RuntimeShutdown(ShutdownAck {
                    shutting_down: true,
                }))
            }
            Request::AgentsList => {
                let rx = self.store().read()?;
                let mut out = Vec::new();
                for a in rx.agents::<AgentRecord>()? {
                    out.push(self.summarize(&rx, &a)?);
                }
                Ok(Response::AgentsList(out))
            }
            Request::AgentCreate { agent_id } => {
                self.create_agent(&agent_id).await?;
                Ok(Response::AgentCreate(self.summary(&agent_id)?))
            }
            Request::AgentStatus { agent_id } => {
                Ok(Response::AgentStatus(self.summary(&agent_id)?))
            }
            Request::AgentState { agent_id } => {
                Ok(Response::AgentState(self.agent_state(&agent_id)?))
            }
            Request::AgentPrompt { agent_id } => {
                Ok(Response::AgentPrompt(self.prompt_preview(&agent_id).await?))
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
                let delivery = super::trigger_ops::Delivery {
                    meta,
                    ..Default::default()
                };
                match self.trigger_deliver(&agent_id, None, delivery).await {
                    Ok(receipt) => Ok(Response::TriggerDeliver(receipt)),
                    Err(super::trigger_ops::DeliveryError::Runtime(e)) => Err(e.into()),
                    Err(e) => Err(ApiError::new(ErrorCode::InvalidParams, e.to_string())),
                }
            }
            Request::PromptSubmit {
                agent_id,
                text,
                priority,
                request_id,
            } => {
                let req = operator_prompt(&agent_id, &text, priority)?;
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
            Request::AgentModel { agent_id, model } => {
                let previous = self.set_model_override(&agent_id, model).await?;
                let agent = self.summary(&agent_id)?;
                Ok(Response::AgentModel(ModelChanged {
                    agent,
                    previous_model_override: previous,
                }))
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

/// Follow one agent's ledger from `from_seq` into `tx`, forever (until the
/// receiver or the store goes away). On a full buffer the subscriber gets
/// `Lagged` with the first undelivered sequence and the stream ends.
pub async fn follow(
    store: Store,
    agent_id: String,
    from_seq: u64,
    tx: mpsc::Sender<SubscriptionItem>,
) {
    let mut wake = store.subscribe();
    let mut cursor = from_seq.max(1);
    loop {
        let page: Vec<EventRecord> = match store
            .read()
            .and_then(|rx| rx.events(&agent_id, cursor, 256))
        {
            Ok(p) => p,
            // The store was closed (shutdown or hand-over): stop.
            Err(crate::store::StoreError::Closed) => return,
            Err(e) => {
                tracing::warn!(error = %e, "subscription read failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if page.is_empty() {
            // Wait for the agent's next commit, or for the subscriber to go
            // away (then stop at once: this task must not keep the store
            // alive for nobody).
            loop {
                tokio::select! {
                    r = wake.recv() => match r {
                        Ok(e) if e.agent_id == agent_id => break,
                        Ok(_) => continue,
                        Err(RecvError::Lagged(_)) => break,
                        Err(RecvError::Closed) => return,
                    },
                    _ = tx.closed() => return,
                }
            }
            continue;
        }
        for e in page {
            let seq = e.event_seq;
            match tx.try_send(SubscriptionItem::Event(e)) {
                Ok(()) => cursor = seq + 1,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let _ = tx.send(SubscriptionItem::Lagged { resume_from: seq }).await;
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
    }
}

/// Streamed assistant text of `agent_id`'s turns into its subscription,
/// until the subscriber goes away. A delta that does not fit is dropped:
/// it is a preview, and the durable round brings the whole text.
async fn forward_deltas(
    mut live: tokio::sync::broadcast::Receiver<super::LiveUpdate>,
    agent_id: String,
    tx: mpsc::Sender<SubscriptionItem>,
) {
    loop {
        tokio::select! {
            update = live.recv() => match update {
                Ok(super::LiveUpdate::AssistantDelta { agent_id: a, run_id, text }) if a == agent_id => {
                    if let Err(mpsc::error::TrySendError::Closed(_)) =
                        tx.try_send(SubscriptionItem::Delta { run_id, text })
                    {
                        return;
                    }
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            _ = tx.closed() => return,
        }
    }
}

impl RuntimeClient for RuntimeHost {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Value, ApiError>> {
        Box::pin(self.handle(request))
    }

    fn subscribe(
        &self,
        agent_id: &str,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Subscription, ApiError>> {
        let agent_id = agent_id.to_owned();
        Box::pin(async move {
            crate::runtime::ids::validate(crate::runtime::ids::IdKind::Agent, &agent_id)
                .map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))?;
            if self
                .store()
                .read()?
                .agent::<AgentRecord>(&agent_id)?
                .is_none()
            {
                return Err(not_found(&format!("no agent `{agent_id}`")));
            }
            let (tx, rx) = mpsc::channel(SUBSCRIPTION_BUFFER);
            tokio::spawn(forward_deltas(
                self.subscribe_live(),
                agent_id.clone(),
                tx.clone(),
            ));
            tokio::spawn(follow(self.store().clone(), agent_id, from_seq, tx));
            Ok(Subscription { rx })
        })
    }

    fn transport(&self) -> &'static str {
        "embedded"
    }

    /// A run of `prompt.submit` requests is admitted in one transaction
    /// (one commit for a pipelining client's burst); anything else runs
    /// one by one, in order.
    fn call_batch(&self, requests: Vec<Request>) -> BoxFuture<'_, Vec<Result<String, ApiError>>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(requests.len());
            let mut run: Vec<Result<(AdmissionRequest, Option<String>), ApiError>> = Vec::new();
            let mut pending = requests.into_iter().peekable();
            while let Some(request) = pending.next() {
                if !matches!(request, Request::PromptSubmit { .. }) {
                    out.push(self.call_raw(request).await);
                    continue;
                }
                run.push(request.validate_ids().and_then(|()| match request {
                    Request::PromptSubmit {
                        agent_id,
                        text,
                        priority,
                        request_id,
                    } => operator_prompt(&agent_id, &text, priority).map(|req| (req, request_id)),
                    other => Err(ApiError::new(
                        ErrorCode::Internal,
                        format!("not a prompt: {other:?}"),
                    )),
                }));
                if matches!(pending.peek(), Some(Request::PromptSubmit { .. })) {
                    continue;
                }
                out.extend(self.admit_run(std::mem::take(&mut run)).await);
            }
            out
        })
    }

    fn call_raw(&self, request: Request) -> BoxFuture<'_, Result<String, ApiError>> {
        Box::pin(async move {
            match request {
                Request::EventsPage {
                    agent_id,
                    from_seq,
                    limit,
                    kind: None,
                } => {
                    crate::runtime::ids::validate(crate::runtime::ids::IdKind::Agent, &agent_id)
                        .map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))?;
                    self.events_page_raw(&agent_id, from_seq, limit)
                }
                other => self.handle(other).await.map(|v| v.to_string()),
            }
        })
    }
}

/// An operator prompt from a client, refused when empty.
fn operator_prompt(
    agent_id: &str,
    text: &str,
    priority: crate::runtime::envelope::Priority,
) -> Result<AdmissionRequest, ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidParams,
            "the prompt is empty",
        ));
    }
    Ok(AdmissionRequest::operator_prompt(
        agent_id,
        text,
        priority,
        DeliverySurface::HttpControlPrompt,
    ))
}

impl RuntimeHost {
    /// Admit checked prompts in one transaction; the unchecked ones keep
    /// their error. Answers in order.
    async fn admit_run(
        &self,
        run: Vec<Result<(AdmissionRequest, Option<String>), ApiError>>,
    ) -> Vec<Result<String, ApiError>> {
        let valid: Vec<(AdmissionRequest, Option<String>)> = run
            .iter()
            .filter_map(|r| r.as_ref().ok().cloned())
            .collect();
        let mut admitted =
            match crate::runtime::admission::admit_many(&self.inner.store, valid).await {
                Ok(answers) => answers.into_iter(),
                Err(e) => {
                    let e = ApiError::from(e);
                    return run.into_iter().map(|_| Err(e.clone())).collect();
                }
            };
        let mut woken = std::collections::BTreeSet::new();
        let out = run
            .into_iter()
            .map(|r| {
                r.and_then(|(req, _)| {
                    woken.insert(req.agent_id);
                    let answer = admitted.next().unwrap_or_else(|| {
                        Err(crate::runtime::RuntimeError::Invalid("no answer".into()))
                    });
                    answer
                        .map_err(ApiError::from)
                        .map(|a| serde_json::to_string(&a).unwrap_or_default())
                })
            })
            .collect();
        for agent in woken {
            self.wake(&agent);
        }
        out
    }

    /// `events.page` as JSON text: the stored events spliced in as they
    /// are (no decode and re-encode), the same shape as `handle` answers.
    fn events_page_raw(
        &self,
        agent_id: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<String, ApiError> {
        let rx = self.store().read()?;
        if rx.agent::<AgentRecord>(agent_id)?.is_none() {
            return Err(not_found(&format!("no agent `{agent_id}`")));
        }
        let from = from_seq.max(1);
        let page = rx.events_raw(agent_id, from, limit.clamp(1, MAX_PAGE))?;
        let next = page.last().map(|(seq, _)| seq + 1).unwrap_or(from);
        let bytes: usize = page.iter().map(|(_, b)| b.len() + 1).sum();
        let mut out = String::with_capacity(bytes + 64);
        out.push_str("{\"events\":[");
        for (i, (_, b)) in page.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // Stored by the writer as serde_json text: valid UTF-8 JSON.
            out.push_str(&String::from_utf8_lossy(b));
        }
        out.push_str(&format!(
            "],\"next_seq\":{next},\"last_event_seq\":{}}}",
            rx.last_seq(agent_id)?
        ));
        Ok(out)
    }
}
