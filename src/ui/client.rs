//! `SocketClient`: the `RuntimeClient` over the control socket. One
//! connection carries requests (matched to responses by id) and event
//! notifications (routed by subscription id, which the client chooses so a
//! subscription is registered before its first event can arrive). When the
//! connection ends every pending request fails and every subscription
//! stream ends; the console reconnects and resumes from its last
//! `event_seq`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};

use crate::protocol::jsonrpc::{
    Incoming, IncomingLine, Notification, RequestLine, SubscribeParams, SubscriptionRequest,
    UnsubscribeParams,
};
use crate::protocol::{
    ApiError, BoxFuture, Request, Response, RuntimeClient, Subscription, SubscriptionItem,
};

/// Answers are handed over as their JSON text: `call` parses it into a
/// `Value`, `call_raw` not at all (a large events page is decoded once,
/// straight into what the caller wants).
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<String, ApiError>>>>>;
type Subs = Arc<Mutex<HashMap<String, mpsc::Sender<SubscriptionItem>>>>;

pub struct SocketClient {
    path: PathBuf,
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    next_id: Arc<AtomicU64>,
    pending: Pending,
    subs: Subs,
    /// The task reading the connection: it owns the read half, so it is
    /// stopped when the client is dropped, which closes the connection
    /// (the server then ends its subscriptions).
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SocketClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn closed() -> ApiError {
    ApiError::transport("the connection to the runtime closed")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SocketClient {
    pub async fn connect(path: &Path) -> std::io::Result<SocketClient> {
        let stream = UnixStream::connect(path).await?;
        SocketClient::over(stream, path.to_path_buf())
    }

    /// A client over an already connected stream (`path` names it: the
    /// socket's path, or the WebSocket URL it is bridged from).
    pub fn over(stream: UnixStream, path: PathBuf) -> std::io::Result<SocketClient> {
        let (read, write) = stream.into_split();
        let pending: Pending = Arc::default();
        let subs: Subs = Arc::default();
        let (p, s) = (Arc::clone(&pending), Arc::clone(&subs));
        let writer = Arc::new(tokio::sync::Mutex::new(write));
        let next_id = Arc::new(AtomicU64::new(1));
        let (w, ids) = (Arc::clone(&writer), Arc::clone(&next_id));
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(read);
            let mut buf = Vec::new();
            let mut ending = closed();
            while let Some(line) = next_line(&mut lines, &mut buf).await {
                let Ok(v) = serde_json::from_slice::<IncomingLine<'_>>(line) else {
                    continue;
                };
                match v.classify() {
                    Incoming::Response { id, result } => {
                        if let Some(tx) = lock(&p).remove(&id) {
                            let _ = tx.send(result);
                        }
                    }
                    // The server closing (a restart, giving way at its
                    // limit) leaves what was asked unanswered: a transport
                    // failure, which a prompt's re-send covers.
                    Incoming::Closing(e) => {
                        ending = ApiError {
                            failure: crate::protocol::Failure::Transport,
                            ..e
                        }
                    }
                    Incoming::Notification(n) => {
                        // A stream nobody reads any more (its view moved
                        // on): the runtime stops sending it.
                        if let Some(gone) = route(n, &s).await {
                            let id = ids.fetch_add(1, Ordering::Relaxed);
                            let call = SubscriptionRequest::Unsubscribe(UnsubscribeParams {
                                subscription: gone,
                            });
                            // Written aside: this task must go on reading
                            // whatever a write waits for.
                            if let Ok(line) = RequestLine::new(id, &call).encode() {
                                let w = Arc::clone(&w);
                                tokio::spawn(async move {
                                    let _ = w.lock().await.write_all(line.as_bytes()).await;
                                });
                            }
                        }
                    }
                    Incoming::Other => {}
                }
            }
            for (_, tx) in lock(&p).drain() {
                let _ = tx.send(Err(ending.clone()));
            }
            lock(&s).clear();
        });
        Ok(SocketClient {
            path,
            writer,
            next_id,
            pending,
            subs,
            reader,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn send<P: Serialize>(&self, call: &P) -> Result<String, ApiError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = RequestLine::new(id, call).encode()?;
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let written = self.writer.lock().await.write_all(line.as_bytes()).await;
        if written.is_err() {
            lock(&self.pending).remove(&id);
            return Err(closed());
        }
        rx.await.map_err(|_| closed())?
    }
}

/// The longest line a runtime may send (an events page is the largest):
/// a far side that floods without a newline ends the connection instead
/// of filling memory.
const MAX_INCOMING_LINE: u64 = 64 * 1024 * 1024;

/// The next line (without its newline), or `None` at the end of the
/// connection or past `MAX_INCOMING_LINE`.
async fn next_line<'b, R>(reader: &mut R, buf: &'b mut Vec<u8>) -> Option<&'b [u8]>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    buf.clear();
    // One large page does not keep its buffer for the connection's life.
    if buf.capacity() > 4 * 1024 * 1024 {
        buf.shrink_to(64 * 1024);
    }
    let n = reader
        .take(MAX_INCOMING_LINE + 1)
        .read_until(b'\n', buf)
        .await
        .ok()?;
    match buf.last() {
        _ if n == 0 => None,
        Some(b'\n') => Some(&buf[..buf.len() - 1]),
        // The end came without a newline: the last line, whole.
        _ if (n as u64) <= MAX_INCOMING_LINE => Some(&buf[..]),
        _ => {
            tracing::warn!("the runtime sent a line over {MAX_INCOMING_LINE} bytes; closing");
            None
        }
    }
}

/// Hand a notification to its subscription's stream; the subscription's
/// id when its stream is gone (dropped by its reader).
async fn route(n: Notification, subs: &Subs) -> Option<String> {
    let sender = lock(subs).get(n.subscription()).cloned()?;
    let id = n.subscription().to_owned();
    let item = match n {
        Notification::Event(p) => SubscriptionItem::Event(p.event),
        Notification::AssistantDelta(p) => SubscriptionItem::Delta {
            run_id: p.run_id,
            attempt: p.attempt,
            text: p.text,
        },
        Notification::ToolProgress(p) => SubscriptionItem::Progress {
            run_id: p.run_id,
            call_id: p.call_id,
            progress: p.progress,
        },
        Notification::ProviderRetry(p) => SubscriptionItem::Retry {
            run_id: p.run_id,
            attempt: p.attempt,
            notice: p.notice,
        },
        Notification::Lagged(p) => {
            lock(subs).remove(&p.subscription);
            SubscriptionItem::Lagged {
                resume_from: p.resume_from,
            }
        }
    };
    // Backpressure: wait for the consumer rather than drop (the server
    // cuts us off with `lagged` if we fall too far behind).
    match sender.send(item).await {
        Ok(()) => None,
        Err(_) => {
            lock(subs).remove(&id);
            Some(id)
        }
    }
}

impl RuntimeClient for SocketClient {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Response, ApiError>> {
        Box::pin(async move {
            let text = self.send(&request).await?;
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                ApiError::decode(format!(
                    "the answer to `{}` is not JSON: {e}",
                    request.method()
                ))
            })?;
            Response::decode(&request, &value)
        })
    }

    fn call_raw(&self, request: Request) -> BoxFuture<'_, Result<String, ApiError>> {
        Box::pin(async move { self.send(&request).await })
    }

    fn subscribe(
        &self,
        agent_id: &str,
        from_seq: u64,
    ) -> BoxFuture<'_, Result<Subscription, ApiError>> {
        let agent_id = agent_id.to_owned();
        Box::pin(async move {
            let sub_id = crate::new_id("sub");
            let (tx, rx) = mpsc::channel(1024);
            lock(&self.subs).insert(sub_id.clone(), tx);
            let request = SubscriptionRequest::Subscribe(SubscribeParams {
                agent_id,
                from_seq: Some(from_seq),
                subscription: Some(sub_id.clone()),
            });
            if let Err(e) = self.send(&request).await {
                lock(&self.subs).remove(&sub_id);
                return Err(e);
            }
            Ok(Subscription { rx })
        })
    }

    fn transport(&self) -> &'static str {
        "attached"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Failure;

    /// A runtime that goes away is a transport failure, not the server's
    /// answer; a runtime that answers garbage is a decoding failure.
    #[tokio::test]
    async fn failures_say_where_they_happened() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let (ours, theirs) = UnixStream::pair().unwrap();
        let client = SocketClient::over(ours, PathBuf::from("test.sock")).unwrap();
        // The server reads one request and answers it with the wrong shape.
        let server = tokio::spawn(async move {
            let (read, mut write) = theirs.into_split();
            let mut lines = BufReader::new(read).lines();
            let line = lines.next_line().await.unwrap().unwrap();
            let id = serde_json::from_str::<serde_json::Value>(&line).unwrap()["id"].clone();
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"holon": 7}});
            write
                .write_all(format!("{answer}\n").as_bytes())
                .await
                .unwrap();
            // Then it goes away.
        });
        let decode = client.call(Request::RuntimeStatus).await.err();
        assert_eq!(decode.map(|e| e.failure), Some(Failure::Decode));
        server.await.unwrap();
        let gone = client.call(Request::RuntimeStatus).await.err();
        assert_eq!(gone.map(|e| e.failure), Some(Failure::Transport));
    }

    /// A stream its reader dropped (the view moved on) is unsubscribed at
    /// the next notification, so a kept connection does not carry it on.
    #[tokio::test]
    async fn a_dropped_stream_is_unsubscribed() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let (ours, theirs) = UnixStream::pair().unwrap();
        let client = SocketClient::over(ours, PathBuf::from("test.sock")).unwrap();
        let (dropped, gone) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let (read, mut write) = theirs.into_split();
            let mut lines = BufReader::new(read).lines();
            let line = lines.next_line().await.unwrap().unwrap();
            let asked: serde_json::Value = serde_json::from_str(&line).unwrap();
            let sub = asked["params"]["subscription"].clone();
            let ok = serde_json::json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"subscription": sub}});
            write.write_all(format!("{ok}\n").as_bytes()).await.unwrap();
            // Once the reader is gone: a delta for it.
            gone.await.unwrap();
            let delta = serde_json::json!({"jsonrpc": "2.0", "method": "assistant.delta",
                "params": {"subscription": sub, "run_id": "run_1", "attempt": 1, "text": "x"}});
            write
                .write_all(format!("{delta}\n").as_bytes())
                .await
                .unwrap();
            let next = lines.next_line().await.unwrap().unwrap();
            (
                sub,
                serde_json::from_str::<serde_json::Value>(&next).unwrap(),
            )
        });
        let subscription = client.subscribe("main", 1).await.unwrap();
        drop(subscription);
        dropped.send(()).unwrap();
        let (sub, next) = tokio::time::timeout(std::time::Duration::from_secs(5), server)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(next["method"], "events.unsubscribe", "{next}");
        assert_eq!(next["params"]["subscription"], sub);
    }
}
