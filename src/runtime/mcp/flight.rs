//! A call to a server while it is in flight, and what it ends with: its
//! progress sink registered by (connection, token), MCP cancellation sent
//! when it times out or its caller stops waiting; and a server start that
//! its caller gave up on, put back to idle.

use std::time::Duration;

use rmcp::model::ServerResult;
use rmcp::service::RequestHandle;
use rmcp::RoleClient;
use serde_json::Value;

use super::client::{ProgressSink, Watchers};
use super::server::{Phase, Server};

/// Why a call did not return a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The server is down (and why); it is retried on a later need.
    Down(String),
    /// No answer within the tool timeout; the call was cancelled.
    TimedOut(Duration),
    /// The server answered the request with a protocol error.
    Protocol(String),
}

/// A call's result, as JSON content blocks.
pub struct CallResult {
    pub content: Vec<Value>,
    pub structured: Option<Value>,
    pub is_error: bool,
}

/// A call sent and not answered yet, its progress sink registered. Dropped
/// unanswered (the turn that made it was cancelled), it tells the server
/// so in the background.
pub(super) struct InFlight<'a> {
    handle: Option<RequestHandle<RoleClient>>,
    /// Its connection's serial: with the progress token, its key among
    /// the watchers.
    serial: u64,
    watchers: &'a Watchers,
}

pub(super) type Answer = Result<ServerResult, rmcp::ServiceError>;

impl<'a> InFlight<'a> {
    pub(super) fn new(
        handle: RequestHandle<RoleClient>,
        serial: u64,
        progress: Option<ProgressSink>,
        watchers: &'a Watchers,
    ) -> InFlight<'a> {
        if let (Some(sink), Ok(mut w)) = (progress, watchers.lock()) {
            w.insert((serial, handle.progress_token.clone()), sink);
        }
        InFlight {
            handle: Some(handle),
            serial,
            watchers,
        }
    }

    /// The answer, or `None` when none came within `limit` (the call is
    /// still in flight then). `Some(Err)`: the connection closed first.
    pub(super) async fn wait(
        &mut self,
        limit: Duration,
    ) -> Option<Result<Answer, tokio::sync::oneshot::error::RecvError>> {
        let handle = self.handle.as_mut()?;
        let answer = tokio::time::timeout(limit, &mut handle.rx).await.ok()?;
        self.take();
        Some(answer)
    }

    /// Tell the server to stop working on it. Bounded: a server that no
    /// longer reads its stdin would hold the notification behind a full
    /// pipe.
    pub(super) async fn cancel(&mut self, reason: String) {
        if let Some(handle) = self.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), handle.cancel(Some(reason))).await;
        }
    }

    fn take(&mut self) -> Option<RequestHandle<RoleClient>> {
        let handle = self.handle.take()?;
        if let Ok(mut w) = self.watchers.lock() {
            w.remove(&(self.serial, handle.progress_token.clone()));
        }
        Some(handle)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let Some(handle) = self.take() else { return };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let reason = Some("the caller stopped waiting".to_owned());
                let _ = tokio::time::timeout(Duration::from_secs(1), handle.cancel(reason)).await;
            });
        }
    }
}

/// A start in progress: dropped before it ended (its caller gave up), it
/// sets the server idle again instead of leaving it "starting".
pub(super) struct Abandoned<'a>(pub(super) Option<&'a Server>);

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if let Some(server) = self.0.filter(|s| s.phase() == Phase::Starting) {
            server.set_phase(Phase::Idle);
        }
    }
}
