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

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};

use crate::runtime::api::{
    ApiError, BoxFuture, ErrorCode, EventRecord, Request, RuntimeClient, Subscription,
    SubscriptionItem,
};

/// Answers are handed over as their JSON text: `call` parses it into a
/// `Value`, `call_raw` not at all (a large events page is decoded once,
/// straight into what the caller wants).
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<String, ApiError>>>>>;

/// One line from the server, with its result left unparsed.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
}
type Subs = Arc<Mutex<HashMap<String, mpsc::Sender<SubscriptionItem>>>>;

pub struct SocketClient {
    path: PathBuf,
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    next_id: AtomicU64,
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
    ApiError::new(ErrorCode::Internal, "the connection to the runtime closed")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SocketClient {
    pub async fn connect(path: &Path) -> std::io::Result<SocketClient> {
        let stream = UnixStream::connect(path).await?;
        let (read, write) = stream.into_split();
        let pending: Pending = Arc::default();
        let subs: Subs = Arc::default();
        let (p, s) = (Arc::clone(&pending), Arc::clone(&subs));
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            let mut ending = closed();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Envelope<'_>>(&line) else {
                    continue;
                };
                // The server says why it is about to close (id null).
                if v.id.as_ref().is_some_and(Value::is_null) {
                    if let Some(e) = &v.error {
                        if let Ok(e) = serde_json::from_value::<ApiError>(e.clone()) {
                            ending = e;
                        }
                        continue;
                    }
                }
                route(v, &p, &s).await;
            }
            for (_, tx) in lock(&p).drain() {
                let _ = tx.send(Err(ending.clone()));
            }
            lock(&s).clear();
        });
        Ok(SocketClient {
            path: path.to_path_buf(),
            writer: tokio::sync::Mutex::new(write),
            next_id: AtomicU64::new(1),
            pending,
            subs,
            reader,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn send(&self, method: &str, params: Value) -> Result<Value, ApiError> {
        let text = self.send_raw(method, params).await?;
        serde_json::from_str(&text).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
    }

    async fn send_raw(&self, method: &str, params: Value) -> Result<String, ApiError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let mut request = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if !params.is_null() {
            request["params"] = params;
        }
        let mut line = request.to_string();
        line.push('\n');
        let written = self.writer.lock().await.write_all(line.as_bytes()).await;
        if written.is_err() {
            lock(&self.pending).remove(&id);
            return Err(closed());
        }
        rx.await.map_err(|_| closed())?
    }
}

async fn route(v: Envelope<'_>, pending: &Pending, subs: &Subs) {
    if let Some(id) = v.id.as_ref().and_then(Value::as_u64) {
        let Some(tx) = lock(pending).remove(&id) else {
            return;
        };
        let result = match (v.result, v.error) {
            (Some(r), _) => Ok(r.get().to_owned()),
            (None, Some(e)) => Err(serde_json::from_value::<ApiError>(e.clone())
                .unwrap_or_else(|_| ApiError::new(ErrorCode::Internal, e.to_string()))),
            (None, None) => Err(ApiError::new(
                ErrorCode::Internal,
                "response without result or error",
            )),
        };
        let _ = tx.send(result);
        return;
    }
    let method = v.method.as_deref().unwrap_or_default();
    let params = v.params.unwrap_or(Value::Null);
    let Some(sub) = params.get("subscription").and_then(Value::as_str) else {
        return;
    };
    let sender = lock(subs).get(sub).cloned();
    let Some(sender) = sender else { return };
    let item = match method {
        "event" => match serde_json::from_value::<EventRecord>(params["event"].clone()) {
            Ok(e) => SubscriptionItem::Event(e),
            Err(_) => return,
        },
        "assistant.delta" => SubscriptionItem::Delta {
            run_id: params["run_id"].as_str().unwrap_or_default().to_owned(),
            text: params["text"].as_str().unwrap_or_default().to_owned(),
        },
        "subscription.lagged" => {
            lock(subs).remove(sub);
            SubscriptionItem::Lagged {
                resume_from: params["resume_from"].as_u64().unwrap_or(1),
            }
        }
        _ => return,
    };
    // Backpressure: wait for the consumer rather than drop (the server
    // cuts us off with `lagged` if we fall too far behind).
    let _ = sender.send(item).await;
}

/// A request as its JSON-RPC method and params.
fn method_and_params(request: &Request) -> Result<(String, Value), ApiError> {
    let v = serde_json::to_value(request)
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    let method = v["method"].as_str().unwrap_or_default().to_owned();
    Ok((method, v.get("params").cloned().unwrap_or(Value::Null)))
}

impl RuntimeClient for SocketClient {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Value, ApiError>> {
        Box::pin(async move {
            let (method, params) = method_and_params(&request)?;
            self.send(&method, params).await
        })
    }

    fn call_raw(&self, request: Request) -> BoxFuture<'_, Result<String, ApiError>> {
        Box::pin(async move {
            let (method, params) = method_and_params(&request)?;
            self.send_raw(&method, params).await
        })
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
            let params =
                json!({ "agent_id": agent_id, "from_seq": from_seq, "subscription": sub_id });
            if let Err(e) = self.send("events.subscribe", params).await {
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
