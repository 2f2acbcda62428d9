//! `RuntimeHost` as a `RuntimeClient` (the trait the console, the socket
//! server and the tests call): requests go to `dispatch`, a pipelined
//! batch admits its run of prompts in one transaction, and subscriptions
//! follow the ledger by cursor: page from `from_seq`, then wait for the
//! next commit of that agent; the broadcast is only a wake-up, so there is
//! no gap and no duplicate, and a subscriber that falls behind is told
//! where to resume instead of growing memory.

use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::agent_view::not_found;
use super::dispatch::SUBSCRIPTION_BUFFER;
use crate::model::agent::AgentRecord;
use crate::model::event::EventRecord;
use crate::model::message::{AdmissionRequest, DeliverySurface};
use crate::protocol::{
    ApiError, BoxFuture, ErrorCode, Request, Response, RuntimeClient, Subscription,
    SubscriptionItem, MAX_PAGE,
};
use crate::runtime::handle::RuntimeHost;
use crate::runtime::operator::operator_prompt;
use crate::store::Store;

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

/// Streamed assistant text, MCP progress and provider retries of
/// `agent_id`'s turns into its subscription, until the subscriber goes
/// away. An update that does not fit is dropped: it is a preview, and the
/// durable events bring the whole text, the call's result and the
/// attempts.
async fn forward_deltas(
    mut live: tokio::sync::broadcast::Receiver<crate::runtime::handle::LiveUpdate>,
    agent_id: String,
    tx: mpsc::Sender<SubscriptionItem>,
) {
    loop {
        tokio::select! {
            update = live.recv() => match update {
                Ok(crate::runtime::handle::LiveUpdate::AssistantDelta { agent_id: a, run_id, attempt, text }) if a == agent_id => {
                    if let Err(mpsc::error::TrySendError::Closed(_)) =
                        tx.try_send(SubscriptionItem::Delta { run_id, attempt, text })
                    {
                        return;
                    }
                }
                Ok(crate::runtime::handle::LiveUpdate::ProviderRetry { agent_id: a, run_id, attempt, notice }) if a == agent_id => {
                    let item = SubscriptionItem::Retry { run_id, attempt, notice };
                    if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(item) {
                        return;
                    }
                }
                Ok(crate::runtime::handle::LiveUpdate::ToolProgress { agent_id: a, run_id, call_id, progress }) if a == agent_id => {
                    let item = SubscriptionItem::Progress { run_id, call_id, progress };
                    if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(item) {
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
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Response, ApiError>> {
        Box::pin(self.answer(request))
    }

    fn subscribe(
        &self,
        agent_id: &str,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Subscription, ApiError>> {
        let agent_id = agent_id.to_owned();
        Box::pin(async move {
            crate::model::ids::validate(crate::model::ids::IdKind::Agent, &agent_id)
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
            let (store, went_idle) = (self.store().clone(), self.inner.quiet_signal());
            tokio::spawn(async move {
                follow(store, agent_id, from_seq, tx).await;
                // A subscriber gone (a console detached) is work that
                // ended: the quiet runtime gives back what it touched.
                went_idle.notify_one();
            });
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
                run.push(request.validate_ids().and_then(|()| {
                    match request {
                        Request::PromptSubmit {
                            agent_id,
                            text,
                            priority,
                            request_id,
                        } => operator_prompt(
                            &agent_id,
                            &text,
                            priority,
                            DeliverySurface::HttpControlPrompt,
                        )
                        .map(|req| (req, request_id)),
                        other => Err(ApiError::new(
                            ErrorCode::Internal,
                            format!("not a prompt: {other:?}"),
                        )),
                    }
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
            let answer = match request {
                Request::EventsPage {
                    agent_id,
                    from_seq,
                    limit,
                    kind: None,
                } => crate::model::ids::validate(crate::model::ids::IdKind::Agent, &agent_id)
                    .map_err(|m| ApiError::new(ErrorCode::InvalidParams, m))
                    .and_then(|()| self.events_page_raw(&agent_id, from_seq, limit)),
                other => self.handle(other).await.map(|v| v.to_string()),
            };
            // A request served is work done: once the runtime is quiet
            // again, the memory it touched is given back (`quiet`).
            self.inner.request_served();
            answer
        })
    }
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
            "],\"next_seq\":{next},\"last_event_seq\":{}",
            rx.last_seq(agent_id)?
        ));
        if let Some(n) =
            crate::protocol::EventsPage::pruned_marker(from, rx.ledger_start(agent_id)?)
        {
            out.push_str(&format!(",\"pruned_before\":{n}"));
        }
        out.push('}');
        Ok(out)
    }
}
