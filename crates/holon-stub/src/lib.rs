//! The one stub model provider of Holon's tests and benchmarks: a real
//! HTTP/1.1 server on 127.0.0.1 (ephemeral port) that answers each request
//! with the next canned response of its script (status, headers, JSON / raw
//! / SSE body, optional delay), then from its responder, and records every
//! request (method, path, headers, JSON body). Responses are
//! `Connection: close`, except a load stub's (`StubServer::serving`:
//! keep-alive, nothing recorded). SSE bodies are written event by event
//! with a short pause so clients really see a stream. Builders for canned
//! bodies in all three wire formats live in [`canned`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One SSE event: optional `event:` name and the `data:` payload.
pub type Frame = (Option<String>, String);

#[derive(Debug, Clone)]
pub enum Body {
    Json(Value),
    Raw(String),
    Sse(Vec<Frame>),
}

#[derive(Debug, Clone)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// Wait before answering at all.
    pub delay: Duration,
    /// Wait before the last SSE frame (the terminal event).
    pub stall: Duration,
    /// Drop the connection after this many SSE frames.
    pub cut: Option<Cut>,
}

/// How a stream is cut short.
#[derive(Debug, Clone, Copy)]
pub enum Cut {
    /// Chunked transfer encoding, and the socket closes without the final
    /// chunk: the client's HTTP layer sees a broken body (a reset).
    Reset(usize),
    /// A close-delimited body that simply ends early: the HTTP exchange is
    /// complete but the stream never sent its terminal event.
    Eof(usize),
}

impl Canned {
    pub fn json(status: u16, body: Value) -> Canned {
        Canned {
            status,
            headers: Vec::new(),
            body: Body::Json(body),
            delay: Duration::ZERO,
            stall: Duration::ZERO,
            cut: None,
        }
    }

    pub fn raw(status: u16, body: &str) -> Canned {
        Canned {
            status,
            headers: Vec::new(),
            body: Body::Raw(body.to_owned()),
            delay: Duration::ZERO,
            stall: Duration::ZERO,
            cut: None,
        }
    }

    pub fn sse(frames: Vec<Frame>) -> Canned {
        Canned {
            status: 200,
            headers: Vec::new(),
            body: Body::Sse(frames),
            delay: Duration::ZERO,
            stall: Duration::ZERO,
            cut: None,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Canned {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn stall_before_last(mut self, stall: Duration) -> Canned {
        self.stall = stall;
        self
    }

    pub fn delay(mut self, delay: Duration) -> Canned {
        self.delay = delay;
        self
    }

    pub fn cut(mut self, cut: Cut) -> Canned {
        self.cut = Some(cut);
        self
    }
}

/// A request as the stub saw it. Header names are lower-cased.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

/// Computes the answer from the request, once the script is empty.
pub type Responder = Arc<dyn Fn(&Value) -> Canned + Send + Sync>;

#[derive(Default)]
struct State {
    script: VecDeque<Canned>,
    requests: Vec<Recorded>,
    responder: Option<Responder>,
    /// A load generator's stub: connections stay open for the next
    /// request, and requests are not recorded.
    serving: bool,
    /// Fixed answers by path (`/api/show`), for every request to it and
    /// before the script.
    routes: BTreeMap<String, Canned>,
}

pub struct StubServer {
    base: String,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl StubServer {
    /// A stub that answers every request with `responder(body)`.
    pub async fn responding(responder: Responder) -> StubServer {
        let stub = StubServer::start(Vec::new()).await;
        stub.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .responder = Some(responder);
        stub
    }

    /// A stub for load: every request answered by `responder` on
    /// keep-alive connections (as a provider's HTTP client keeps them),
    /// nothing recorded, so memory stays flat however long it runs.
    pub async fn serving(responder: Responder) -> StubServer {
        let stub = StubServer::start(Vec::new()).await;
        {
            let mut st = stub.state.lock().unwrap_or_else(|e| e.into_inner());
            st.responder = Some(responder);
            st.serving = true;
        }
        stub
    }

    pub async fn start(script: Vec<Canned>) -> StubServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind stub: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("stub addr: {e}"));
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            requests: Vec::new(),
            responder: None,
            serving: false,
            routes: BTreeMap::new(),
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                let _ = socket.set_nodelay(true);
                tokio::spawn(async move {
                    // A client that gave up (timeout) makes writes fail: fine.
                    let (mut socket, mut buf) = (socket, Vec::new());
                    while let Ok(true) = serve(&mut socket, &mut buf, &state).await {}
                });
            }
        });
        StubServer {
            base: format!("http://{addr}"),
            state,
            task,
        }
    }

    /// Answer every request to `path` with `canned` (before the script,
    /// which such requests leave as it is).
    pub fn route(&self, path: &str, canned: Canned) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .routes
            .insert(path.to_owned(), canned);
    }

    /// `http://127.0.0.1:<port>`
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `127.0.0.1:<port>`
    pub fn host_port(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .requests
            .clone()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Answer one request on `socket` (`buf` holds bytes already read);
/// `true` when the connection stays open for the next one.
async fn serve(
    socket: &mut TcpStream,
    buf: &mut Vec<u8>,
    state: &Arc<Mutex<State>>,
) -> std::io::Result<bool> {
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(false);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buf.len() < body_start + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let end = buf.len().min(body_start + length);
    let raw_body = &buf[body_start..end];
    let body = serde_json::from_slice(raw_body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw_body).into_owned()));
    buf.drain(..end);
    // What a runtime asks of a model's server besides rounds (its model
    // list, Ollama's `/api/show` and `/api/ps`): answered 404 and left out of the
    // record, unless a test routes the path.
    let question = (method == "GET" && (path.ends_with("/models") || path.ends_with("/api/ps")))
        || (method == "POST" && path.ends_with("/api/show"));
    let routed = state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .routes
        .get(&path)
        .cloned();
    if routed.is_none() && question {
        let head = "HTTP/1.1 404 Stub\r\nConnection: close\r\n".to_owned();
        write_whole(
            socket,
            head,
            "application/json",
            r#"{"error":"not routed"}"#,
        )
        .await?;
        return Ok(false);
    }
    let (canned, serving) = {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        let answer = match routed {
            Some(c) => Some(c),
            None => match (st.script.pop_front(), &st.responder) {
                (Some(c), _) => Some(c),
                (None, Some(r)) => Some(r(&body)),
                (None, None) => None,
            },
        };
        if !st.serving {
            st.requests.push(Recorded {
                method,
                path,
                headers,
                body,
            });
        }
        (answer, st.serving)
    };
    let canned = canned.unwrap_or_else(|| {
        Canned::json(
            418,
            serde_json::json!({"error": {"message": "stub script exhausted"}}),
        )
    });
    // A zero sleep still waits for the timer's next tick (about 1 ms):
    // an answer without a delay goes out at once.
    if !canned.delay.is_zero() {
        tokio::time::sleep(canned.delay).await;
    }
    let keep_alive = serving && !matches!(canned.body, Body::Sse(_));
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let mut head = format!(
        "HTTP/1.1 {} Stub\r\nConnection: {connection}\r\n",
        canned.status
    );
    for (k, v) in &canned.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match canned.body {
        Body::Json(v) => write_whole(socket, head, "application/json", &v.to_string()).await?,
        Body::Raw(s) => write_whole(socket, head, "application/json", &s).await?,
        Body::Sse(frames) => {
            head.push_str("Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n");
            let chunked = matches!(canned.cut, Some(Cut::Reset(_)));
            if chunked {
                head.push_str("Transfer-Encoding: chunked\r\n");
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.flush().await?;
            let keep = match canned.cut {
                Some(Cut::Reset(n) | Cut::Eof(n)) => n,
                None => usize::MAX,
            };
            let last = frames.len().saturating_sub(1);
            for (n, (event, data)) in frames.into_iter().enumerate().take(keep) {
                if n == last {
                    tokio::time::sleep(canned.stall).await;
                }
                let mut text = String::new();
                if let Some(e) = event {
                    text.push_str(&format!("event: {e}\n"));
                }
                text.push_str(&format!("data: {data}\n\n"));
                if chunked {
                    text = format!("{:x}\r\n{text}\r\n", text.len());
                }
                socket.write_all(text.as_bytes()).await?;
                socket.flush().await?;
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            if chunked {
                // No terminating chunk: the connection just goes away.
                return Ok(false);
            }
        }
    }
    if keep_alive {
        return Ok(true);
    }
    socket.shutdown().await.map(|()| false)
}

async fn write_whole(
    socket: &mut TcpStream,
    mut head: String,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    head.push_str(&format!(
        "Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    head.push_str(body);
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await
}

/// Canned provider answers in each wire format. Tool calls are given as
/// `(id, name, arguments JSON text)`.
pub mod canned {
    use serde_json::{json, Value};

    use super::Frame;

    pub type Call<'a> = (&'a str, &'a str, &'a str);

    fn frame(event: Option<&str>, data: Value) -> Frame {
        (event.map(str::to_owned), data.to_string())
    }

    pub fn responses_json(text: &str, calls: &[Call]) -> Value {
        let mut output = Vec::new();
        if !text.is_empty() {
            output.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
        }
        for (id, name, args) in calls {
            output.push(
                json!({"type": "function_call", "call_id": id, "name": name, "arguments": args}),
            );
        }
        json!({"id": "resp_1", "status": "completed", "output": output,
               "usage": {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}})
    }

    pub fn responses_sse(deltas: &[&str], calls: &[Call]) -> Vec<Frame> {
        let mut frames = Vec::new();
        for d in deltas {
            frames.push(frame(
                Some("response.output_text.delta"),
                json!({"type": "response.output_text.delta", "delta": d}),
            ));
        }
        let text: String = deltas.concat();
        let final_response = responses_json(&text, calls);
        for item in final_response["output"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            frames.push(frame(
                Some("response.output_item.done"),
                json!({"type": "response.output_item.done", "item": item}),
            ));
        }
        let mut completed = final_response;
        completed["output"] = json!([]);
        frames.push(frame(
            Some("response.completed"),
            json!({"type": "response.completed", "response": completed}),
        ));
        frames
    }

    pub fn anthropic_json(text: &str, calls: &[Call]) -> Value {
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for (id, name, args) in calls {
            let input: Value = serde_json::from_str(args).unwrap_or_else(|e| panic!("{e}"));
            content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        }
        let stop = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
               "stop_reason": stop, "usage": {"input_tokens": 20, "output_tokens": 5}})
    }

    /// Tool arguments are streamed in two fragments each.
    pub fn anthropic_sse(deltas: &[&str], calls: &[Call]) -> Vec<Frame> {
        let mut f = vec![frame(
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_1", "content": [], "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        )];
        let mut index = 0;
        if !deltas.is_empty() {
            f.push(frame(Some("content_block_start"), json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
            f.push(frame(None, json!({"type": "ping"})));
            for d in deltas {
                f.push(frame(Some("content_block_delta"), json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}})));
            }
            f.push(frame(
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": 0}),
            ));
            index = 1;
        }
        for (id, name, args) in calls {
            f.push(frame(Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
            let mid = args.len() / 2;
            for part in [&args[..mid], &args[mid..]] {
                f.push(frame(Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}})));
            }
            f.push(frame(
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        let stop = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        f.push(frame(Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}})));
        f.push(frame(Some("message_stop"), json!({"type": "message_stop"})));
        f
    }

    pub fn chat_json(text: &str, calls: &[Call]) -> Value {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
        let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
               "usage": {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}})
    }

    /// Parallel tool calls are interleaved by `index`, arguments in pieces.
    pub fn chat_sse(deltas: &[&str], calls: &[Call]) -> Vec<Frame> {
        let chunk = |delta: Value, finish: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        let mut f = Vec::new();
        for d in deltas {
            f.push(frame(None, chunk(json!({"content": d}), Value::Null)));
        }
        for (i, (id, name, _)) in calls.iter().enumerate() {
            f.push(frame(None, chunk(json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}), Value::Null)));
        }
        for (i, (_, _, args)) in calls.iter().enumerate() {
            let mid = args.len() / 2;
            for part in [&args[..mid], &args[mid..]] {
                f.push(frame(
                    None,
                    chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": part}}]}),
                        Value::Null,
                    ),
                ));
            }
        }
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        f.push(frame(None, chunk(json!({}), json!(finish))));
        f.push(frame(None, json!({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}})));
        f.push((None, "[DONE]".to_owned()));
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ask(socket: &mut TcpStream, body: &str) -> String {
        let request = format!(
            "POST /v1/x HTTP/1.1\r\nHost: stub\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(request.as_bytes()).await;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    return String::from_utf8_lossy(&buf[..end + 4 + length]).into_owned();
                }
            }
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).into_owned(),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    #[tokio::test]
    async fn a_load_stub_keeps_the_connection_and_records_nothing() {
        let echo: Responder = Arc::new(|body: &Value| Canned::json(200, body.clone()));
        let stub = StubServer::serving(echo).await;
        let mut socket = TcpStream::connect(stub.host_port())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let one = ask(&mut socket, r#"{"n":1}"#).await;
        let two = ask(&mut socket, r#"{"n":2}"#).await;
        assert!(
            one.contains("Connection: keep-alive") && one.ends_with(r#"{"n":1}"#),
            "{one}"
        );
        assert!(
            two.ends_with(r#"{"n":2}"#),
            "the same connection answers again: {two}"
        );
        assert!(stub.requests().is_empty());
    }

    #[tokio::test]
    async fn a_scripted_stub_answers_once_per_connection_and_records() {
        let stub =
            StubServer::start(vec![Canned::json(201, serde_json::json!({"ok": true}))]).await;
        let mut socket = TcpStream::connect(stub.host_port())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let one = ask(&mut socket, r#"{"q":1}"#).await;
        assert!(
            one.starts_with("HTTP/1.1 201") && one.contains("Connection: close"),
            "{one}"
        );
        let recorded = stub.requests();
        assert_eq!(recorded.len(), 1);
        assert_eq!(recorded[0].body, serde_json::json!({"q": 1}));
    }
}
