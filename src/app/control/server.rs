//! The control server, shaped like mini-redis: a listener that accepts, a
//! connection that frames lines (bounded), a request parsed from each
//! frame, one handler (the runtime's `RuntimeClient`), and a shutdown
//! signal threaded through. A bad line gets a JSON-RPC error and the
//! connection stays; an oversized line gets an error and a close; a client
//! that does not read only ever blocks itself: its subscriptions are cut
//! off with "lagged, resume from N" and memory stays bounded. Who holds a
//! connection slot, and who gives way at the limit, is `slots`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedReadHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::request::{parse_line, EchoId, Line, NULL_ID};
use super::slots::{Held, Slot, Slots, Watch};
use super::{ServerLimits, MAX_LINE, OUTBOUND_BUFFER, OUTBOUND_BYTES};
use crate::protocol::jsonrpc::{
    error_line, result_line, DeltaParams, EventParams, LaggedParams, Notification, ProgressParams,
    RetryParams, SubscribeParams, Subscribed, SubscriptionRequest, Unsubscribed,
};
use crate::protocol::{ApiError, ErrorCode, Request, RuntimeClient, SubscriptionItem};

/// Serve connections until `shutdown` turns true, at most
/// `limits.max_connections` at once.
pub async fn serve(
    listener: UnixListener,
    client: Arc<dyn RuntimeClient>,
    mut shutdown: watch::Receiver<bool>,
    limits: ServerLimits,
) {
    let slots = Arc::new(Slots::new(limits.max_connections.max(1)));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if let Err(why) = super::peer::admitted(&stream) {
                        tracing::warn!(%why, "control connection refused");
                        tokio::spawn(forbid(stream, why));
                        continue;
                    }
                    let Some(slot) = slots.take() else {
                        tokio::spawn(refuse(stream, limits.max_connections));
                        continue;
                    };
                    let client = Arc::clone(&client);
                    let shutdown = shutdown.clone();
                    let held = Held::new(&slots, slot.id);
                    tokio::spawn(async move {
                        let watch = slot.watch.clone();
                        connection_watched(stream, client, shutdown, limits.idle_timeout, watch)
                            .await;
                        drop(held);
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    break;
                }
            }
        }
    }
}

async fn forbid(mut stream: UnixStream, why: String) {
    let line = error_line(NULL_ID, ErrorCode::Forbidden, &why) + "\n";
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        stream.write_all(line.as_bytes()),
    )
    .await;
}

async fn refuse(mut stream: UnixStream, max: usize) {
    let line = error_line(
        NULL_ID,
        ErrorCode::Busy,
        &format!(
            "the runtime already serves its maximum of {max} control connections, every one \
             following an agent (`[server] max_connections`); close a console or raise the limit"
        ),
    ) + "\n";
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        stream.write_all(line.as_bytes()),
    )
    .await;
}

/// A line read from the client, bounded by `MAX_LINE`.
enum Frame {
    Line(Vec<u8>),
    TooLong,
    Eof,
}

async fn read_frame(
    reader: &mut BufReader<OwnedReadHalf>,
    buf: &mut Vec<u8>,
) -> std::io::Result<Frame> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() {
                Frame::Eof
            } else {
                Frame::Line(std::mem::take(buf))
            });
        }
        match available.iter().position(|b| *b == b'\n') {
            Some(i) => {
                buf.extend_from_slice(&available[..i]);
                reader.consume(i + 1);
                if buf.len() > MAX_LINE {
                    return Ok(Frame::TooLong);
                }
                return Ok(Frame::Line(std::mem::take(buf)));
            }
            None => {
                let n = available.len();
                buf.extend_from_slice(available);
                reader.consume(n);
                if buf.len() > MAX_LINE {
                    return Ok(Frame::TooLong);
                }
            }
        }
    }
}

/// A request id as JSON text, echoed exactly as the client wrote it (a
/// number larger than 2^53, or than u64, survives untouched).
const MAX_PIPELINED: usize = 64;

/// The requests a pipelining client has already sent: `first`, then every
/// whole line already buffered, up to `MAX_PIPELINED`. Never waits for
/// the socket.
async fn burst(
    first: &[u8],
    reader: &mut BufReader<OwnedReadHalf>,
    buf: &mut Vec<u8>,
) -> Vec<Line> {
    let mut lines = vec![parse_line(first)];
    while lines.len() < MAX_PIPELINED && reader.buffer().contains(&b'\n') {
        match read_frame(reader, buf).await {
            Ok(Frame::Line(l)) if l.iter().all(u8::is_ascii_whitespace) => {}
            Ok(Frame::Line(l)) => lines.push(parse_line(&l)),
            _ => break,
        }
    }
    lines
}

/// Answer a burst in order. Consecutive calls run as one batch (a run of
/// prompts is admitted in one commit); `Err` when the client is gone.
async fn answer(
    lines: Vec<Line>,
    client: &dyn RuntimeClient,
    out: &Outbound,
    subscriptions: &mut HashMap<String, JoinHandle<()>>,
) -> Result<(), ()> {
    let mut batch: Vec<(EchoId, bool, Request)> = Vec::new();
    let mut pending = lines.into_iter().peekable();
    while let Some(line) = pending.next() {
        let answers: Vec<String> = match line {
            Line::Reply(r) => vec![r],
            Line::Subscription {
                rid,
                has_id,
                method,
                params,
            } => {
                let outcome = subscription(&method, params, client, out, subscriptions).await;
                reply(&rid, has_id, outcome).into_iter().collect()
            }
            Line::Call {
                rid,
                has_id,
                request,
            } => {
                batch.push((rid, has_id, request));
                if matches!(pending.peek(), Some(Line::Call { .. })) {
                    continue;
                }
                let (ids, requests): (Vec<_>, Vec<_>) = std::mem::take(&mut batch)
                    .into_iter()
                    .map(|(rid, has_id, r)| ((rid, has_id), r))
                    .unzip();
                let outcomes = client.call_batch(requests).await;
                ids.into_iter()
                    .zip(outcomes)
                    .filter_map(|((rid, has_id), outcome)| reply(&rid, has_id, outcome))
                    .collect()
            }
        };
        for a in answers {
            out.send(a).await?;
        }
    }
    Ok(())
}

/// How often a connection that stopped reading is checked for a hang-up.
const HANGUP_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A connection's outbound queue: lines, and the bytes they hold (so a
/// client that stops reading holds at most `OUTBOUND_BYTES` of events).
#[derive(Clone)]
struct Outbound {
    lines: mpsc::Sender<String>,
    queued: Arc<std::sync::atomic::AtomicUsize>,
}

impl Outbound {
    /// Queue a reply, waiting for room.
    async fn send(&self, line: String) -> Result<(), ()> {
        self.queued
            .fetch_add(line.len(), std::sync::atomic::Ordering::Relaxed);
        self.lines.send(line).await.map_err(|_| ())
    }

    /// Queue an event line unless the client is too far behind (by lines
    /// or by bytes): `Err(true)` means "lagged", `Err(false)` "gone".
    fn try_send_event(&self, line: String) -> Result<(), bool> {
        use std::sync::atomic::Ordering;
        if self.queued.load(Ordering::Relaxed) + line.len() > OUTBOUND_BYTES {
            return Err(true);
        }
        let len = line.len();
        match self.lines.try_send(line) {
            Ok(()) => {
                self.queued.fetch_add(len, Ordering::Relaxed);
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(true),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(false),
        }
    }
}

/// Slots for connections served on another transport (a WebSocket
/// bridged onto a socket pair), given way by the socket's rule: at the
/// limit the oldest that follows nothing closes for a new one; only when
/// every one follows an agent is a new one refused.
#[derive(Clone)]
pub(crate) struct ConnectionSlots(Arc<Slots>);

/// A slot taken, held until the connection it admits ends. One not yet
/// served can already be asked to give way: it closes when it starts.
pub(crate) struct Admission {
    slot: Slot,
    _held: Held,
}

impl ConnectionSlots {
    pub(crate) fn new(max: usize) -> ConnectionSlots {
        ConnectionSlots(Arc::new(Slots::new(max.max(1))))
    }

    pub(crate) fn take(&self) -> Option<Admission> {
        let slot = self.0.take()?;
        let held = Held::new(&self.0, slot.id);
        Some(Admission { slot, _held: held })
    }
}

/// Serve one connection admitted on `ConnectionSlots` (the socket pair a
/// WebSocket connection is bridged onto) until it ends or gives way.
pub(crate) async fn admitted(
    stream: UnixStream,
    client: Arc<dyn RuntimeClient>,
    shutdown: watch::Receiver<bool>,
    idle_timeout: std::time::Duration,
    admission: Admission,
) {
    let watch = admission.slot.watch.clone();
    connection_watched(stream, client, shutdown, idle_timeout, watch).await;
    drop(admission);
}

async fn connection_watched(
    stream: UnixStream,
    client: Arc<dyn RuntimeClient>,
    mut shutdown: watch::Receiver<bool>,
    idle_timeout: std::time::Duration,
    watch: Watch,
) {
    let (read, mut write) = stream.into_split();
    let (lines, mut out_rx) = mpsc::channel::<String>(OUTBOUND_BUFFER);
    let out = Outbound {
        lines,
        queued: Arc::default(),
    };
    let queued = Arc::clone(&out.queued);
    let writer = tokio::spawn(async move {
        while let Some(line) = out_rx.recv().await {
            let len = line.len();
            let ok = write.write_all(line.as_bytes()).await.is_ok()
                && write.write_all(b"\n").await.is_ok();
            queued.fetch_sub(len, std::sync::atomic::Ordering::Relaxed);
            if !ok {
                break;
            }
        }
        let _ = write.shutdown().await;
    });
    let mut reader = BufReader::new(read);
    let mut buf = Vec::new();
    let mut subscriptions: HashMap<String, JoinHandle<()>> = HashMap::new();
    loop {
        // Only a connection with nothing to follow can be idle.
        let idle = async {
            if subscriptions.is_empty() {
                tokio::time::sleep(idle_timeout).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let frame = tokio::select! {
            f = read_frame(&mut reader, &mut buf) => f,
            _ = idle => {
                let msg = format!(
                    "closing a connection idle for {} s (no request, no subscription)",
                    idle_timeout.as_secs()
                );
                let _ = out.send(error_line(NULL_ID, ErrorCode::Busy, &msg)).await;
                break;
            }
            _ = watch.evicted() => {
                let msg = "closing: the runtime is at its connection limit and this connection \
                           follows nothing (reconnect when needed)";
                let _ = out.send(error_line(NULL_ID, ErrorCode::Busy, msg)).await;
                for (_, h) in subscriptions.drain() {
                    h.abort();
                }
                break;
            }
            _ = shutdown.changed() => {
                // Tell the client why the connection ends (-32005), rather
                // than just closing it.
                let _ = out
                    .send(error_line(NULL_ID, ErrorCode::ShuttingDown, "the runtime is shutting down"))
                    .await;
                break;
            }
        };
        match frame {
            Ok(Frame::Line(line)) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let lines = burst(&line, &mut reader, &mut buf).await;
                // Busy answering (perhaps subscribing) is not idle: not
                // evicted meanwhile.
                watch.set_following(true);
                let answered = answer(lines, &*client, &out, &mut subscriptions).await;
                watch.set_following(subscriptions.values().any(|h| !h.is_finished()));
                if answered.is_err() {
                    break;
                }
            }
            Ok(Frame::TooLong) => {
                let msg = format!("request line exceeds {MAX_LINE} bytes; closing the connection");
                let _ = out
                    .send(error_line(NULL_ID, ErrorCode::InvalidRequest, &msg))
                    .await;
                for (_, h) in subscriptions.drain() {
                    h.abort();
                }
                break;
            }
            // Half-closed or gone: stop reading; subscriptions keep the
            // connection open until the client closes it.
            Ok(Frame::Eof) | Err(_) => break,
        }
    }
    drop(out);
    if *shutdown.borrow() {
        for (_, h) in subscriptions.drain() {
            h.abort();
        }
    }
    // A half-closed client still reads its subscriptions; one that is gone
    // entirely shows as a hang-up, checked once a second, so an idle dead
    // subscriber does not hold its connection until its agent's next event.
    let mut writer = writer;
    let stream: &tokio::net::UnixStream = reader.get_ref().as_ref();
    let hung_up = async {
        if subscriptions.is_empty() {
            return std::future::pending::<()>().await;
        }
        loop {
            tokio::time::sleep(HANGUP_CHECK).await;
            match stream.ready(tokio::io::Interest::WRITABLE).await {
                Ok(r) if r.is_write_closed() => return,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    };
    tokio::select! {
        _ = &mut writer => {}
        _ = hung_up => writer.abort(),
    }
    for (_, h) in subscriptions.drain() {
        h.abort();
    }
}

/// The reply line for an outcome; `None` for a notification (no id) that
/// succeeded.
fn reply(rid: &str, has_id: bool, outcome: Result<String, ApiError>) -> Option<String> {
    match (has_id, outcome) {
        (false, Ok(_)) => None,
        (true, Ok(result)) => Some(result_line(rid, &result)),
        (_, Err(e)) => Some(error_line(rid, e.code, &e.message)),
    }
}

/// `events.subscribe` and `events.unsubscribe` on this connection.
async fn subscription(
    method: &str,
    params: Value,
    client: &dyn RuntimeClient,
    out: &Outbound,
    subscriptions: &mut HashMap<String, JoinHandle<()>>,
) -> Result<String, ApiError> {
    let tagged = json!({ "method": method, "params": params });
    let request = serde_json::from_value::<SubscriptionRequest>(tagged).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidParams,
            format!("invalid params for `{method}`: {e}"),
        )
    })?;
    let answer = match request {
        SubscriptionRequest::Subscribe(params) => {
            serde_json::to_string(&subscribe(params, client, out, subscriptions).await?)
        }
        SubscriptionRequest::Unsubscribe(params) => {
            match subscriptions.remove(&params.subscription) {
                Some(h) => {
                    h.abort();
                    serde_json::to_string(&Unsubscribed {
                        unsubscribed: params.subscription,
                    })
                }
                None => {
                    return Err(ApiError::new(
                        ErrorCode::NotFound,
                        format!(
                            "no subscription `{}` on this connection",
                            params.subscription
                        ),
                    ))
                }
            }
        }
    };
    answer.map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

async fn subscribe(
    params: SubscribeParams,
    client: &dyn RuntimeClient,
    out: &Outbound,
    subscriptions: &mut HashMap<String, JoinHandle<()>>,
) -> Result<Subscribed, ApiError> {
    let SubscribeParams {
        agent_id,
        from_seq,
        subscription,
    } = params;
    let from_seq = from_seq.unwrap_or(1);
    let sub_id = match subscription {
        Some(s) if !s.is_empty() => s,
        _ => crate::new_id("sub"),
    };
    if subscriptions.contains_key(&sub_id) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("subscription `{sub_id}` already exists"),
        ));
    }
    let mut sub = client.subscribe(&agent_id, from_seq).await?;
    let out = out.clone();
    let id = sub_id.clone();
    let handle = tokio::spawn(async move {
        let lagged = |resume_from| {
            tracing::info!(
                subscription = ?id,
                resume_from,
                "a subscriber that fell behind was cut off; it resumes from the ledger"
            );
            Notification::Lagged(LaggedParams {
                subscription: id.clone(),
                resume_from,
            })
        };
        while let Some(item) = sub.next().await {
            let (line, last) = match item {
                SubscriptionItem::Event(event) => {
                    let seq = event.event_seq;
                    let n = Notification::Event(EventParams {
                        subscription: id.clone(),
                        event,
                    });
                    (n.encode(), Some(seq))
                }
                SubscriptionItem::Lagged { resume_from } => {
                    let _ = out.send(lagged(resume_from).encode()).await;
                    return;
                }
                // Previews (`last` is `None`): the ledger's events bring
                // what they show.
                SubscriptionItem::Delta {
                    run_id,
                    attempt,
                    text,
                } => {
                    let n = Notification::AssistantDelta(DeltaParams {
                        subscription: id.clone(),
                        run_id,
                        attempt,
                        text,
                    });
                    (n.encode(), None)
                }
                SubscriptionItem::Progress {
                    run_id,
                    call_id,
                    progress,
                } => {
                    let n = Notification::ToolProgress(ProgressParams {
                        subscription: id.clone(),
                        run_id,
                        call_id,
                        progress,
                    });
                    (n.encode(), None)
                }
                SubscriptionItem::Retry {
                    run_id,
                    attempt,
                    notice,
                } => {
                    let n = Notification::ProviderRetry(RetryParams {
                        subscription: id.clone(),
                        run_id,
                        attempt,
                        notice,
                    });
                    (n.encode(), None)
                }
            };
            match (out.try_send_event(line), last) {
                (Ok(()), _) => {}
                // A preview is dropped when the client is behind, never a
                // reason to cut the subscription.
                (Err(true), None) => {}
                (Err(true), Some(resume_from)) => {
                    // The client is not reading: cut the subscription off
                    // and tell it where to resume once it does.
                    let _ = out.send(lagged(resume_from).encode()).await;
                    return;
                }
                (Err(false), _) => return,
            }
        }
    });
    subscriptions.insert(sub_id.clone(), handle);
    Ok(Subscribed {
        subscription: sub_id,
        agent_id,
        from_seq,
    })
}
