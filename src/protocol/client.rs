//! The one client interface (`RuntimeClient`), in-process, over the socket
//! or offline, with what a subscription yields and the shared follow loop.

use super::answers::Response;
use super::api::{BoxFuture, EventRecord, Request};
use super::error::{ApiError, ErrorCode};
use crate::model::attempt::RetryNotice;

/// What an event subscription yields. Events are the common case, so they
/// are not boxed to shrink the rare `Lagged`.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum SubscriptionItem {
    Event(EventRecord),
    /// The subscriber fell too far behind and was cut off; subscribe again
    /// from `resume_from` (nothing is lost: the ledger has it).
    Lagged {
        resume_from: u64,
    },
    /// Assistant text of a running turn as the model writes it: transient
    /// (never in the ledger; the round's durable event carries the text),
    /// dropped rather than queued when the subscriber is behind.
    Delta {
        run_id: String,
        /// The run's provider attempt (from 1; 0 from a runtime that
        /// does not say): when it changes, the answer starts over.
        attempt: u32,
        text: String,
    },
    /// An MCP server's progress on a running call: transient like a delta.
    Progress {
        run_id: String,
        call_id: String,
        progress: crate::model::mcp::McpProgress,
    },
    /// The run's provider `attempt` failed and the chain retries it or
    /// moves to the next model: transient like a delta.
    Retry {
        run_id: String,
        attempt: u32,
        notice: RetryNotice,
    },
}

/// A live stream of one agent's events, in `event_seq` order with no gap.
pub struct Subscription {
    pub rx: tokio::sync::mpsc::Receiver<SubscriptionItem>,
}

impl Subscription {
    /// The next item; `None` when the stream ended (connection or runtime
    /// gone).
    pub async fn next(&mut self) -> Option<SubscriptionItem> {
        self.rx.recv().await
    }
}

/// The one client interface, in-process or over the socket.
pub trait RuntimeClient: Send + Sync {
    /// Perform one request; the answer is typed by its method. An error
    /// says whether the server refused it, the transport failed, or the
    /// answer did not decode (`ApiError::failure`).
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Response, ApiError>>;

    /// Follow an agent's events from `from_seq` (inclusive).
    fn subscribe(
        &self,
        agent_id: &str,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Subscription, ApiError>>;

    /// "embedded" or "attached", for the console's status line.
    fn transport(&self) -> &'static str;

    /// `call`, answered as JSON text: what the socket server sends. A
    /// client may answer some requests without building a `Value` (an
    /// events page splices the stored events in as they are).
    fn call_raw(&self, request: Request) -> BoxFuture<'_, Result<String, ApiError>> {
        Box::pin(async move {
            let answer = self.call(request).await?;
            serde_json::to_string(&answer)
                .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
        })
    }

    /// Several requests in order, answered in order (what a pipelining
    /// socket client sent before its first answer). A client may run them
    /// together where that keeps their order's meaning.
    fn call_batch(&self, requests: Vec<Request>) -> BoxFuture<'_, Vec<Result<String, ApiError>>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(requests.len());
            for r in requests {
                out.push(self.call_raw(r).await);
            }
            out
        })
    }
}

/// Follow `agent_id`'s events from `from_seq` (inclusive), through lags
/// (a lagged subscription is resumed where it stopped: no gap, no
/// duplicate, and `on` is never handed a `Lagged`), handing each item to
/// `on` until it answers `Break` or the stream
/// ends (the runtime went away). Returns the next sequence to resume from;
/// `Err` when the subscription could not be made. The one follow loop of
/// every client: the console, `holon events --follow`, `holon attach`.
pub async fn follow<F, Fut>(
    client: &dyn RuntimeClient,
    agent_id: &str,
    from_seq: u64,
    mut on: F,
) -> Result<u64, ApiError>
where
    F: FnMut(SubscriptionItem) -> Fut,
    Fut: std::future::Future<Output = std::ops::ControlFlow<()>>,
{
    let mut next = from_seq;
    let mut sub = client.subscribe(agent_id, next).await?;
    loop {
        let Some(item) = sub.next().await else {
            return Ok(next);
        };
        match &item {
            SubscriptionItem::Event(e) => next = e.event_seq + 1,
            SubscriptionItem::Lagged { resume_from } => {
                next = *resume_from;
                sub = client.subscribe(agent_id, next).await?;
                continue;
            }
            SubscriptionItem::Delta { .. }
            | SubscriptionItem::Progress { .. }
            | SubscriptionItem::Retry { .. } => {}
        }
        if on(item).await.is_break() {
            return Ok(next);
        }
    }
}

/// `call`, for a caller that wants the answer as the type it carries.
pub async fn call_typed<T: 'static>(
    client: &dyn RuntimeClient,
    request: Request,
) -> Result<T, ApiError> {
    client.call(request).await?.take::<T>()
}

/// `call`, for a caller that prints the answer as JSON.
pub async fn call_json(
    client: &dyn RuntimeClient,
    request: Request,
) -> Result<serde_json::Value, ApiError> {
    let answer = client.call(request).await?;
    serde_json::to_value(answer).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

/// The attempts of a run whose streamed text is done (its round was
/// recorded, its turn ended): deltas of them still on their way are late.
/// Every client that shows deltas keeps one. Unnumbered deltas (attempt
/// 0, from a runtime that does not number them) are never late by it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClosedAttempts(Option<(String, u32)>);

impl ClosedAttempts {
    /// `run_id`'s attempts up to `attempt` are done.
    pub fn close_through(&mut self, run_id: &str, attempt: u32) {
        let last = match &self.0 {
            Some((run, last)) if run == run_id => (*last).max(attempt),
            _ => attempt,
        };
        self.0 = Some((run_id.to_owned(), last));
    }

    /// Whether a delta of `run_id`'s `attempt` is late.
    pub fn is_late(&self, run_id: &str, attempt: u32) -> bool {
        (self.0.as_ref())
            .is_some_and(|(run, last)| run == run_id && attempt > 0 && attempt <= *last)
    }
}
