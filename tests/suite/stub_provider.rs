//! A scripted stub model provider: a real HTTP/1.1 server on 127.0.0.1
//! (ephemeral port) that answers each request with the next canned
//! response of its script (status, headers, JSON / raw / SSE body, optional
//! delay) and records every request (method, path, headers, JSON body).
//! Responses are `Connection: close`; SSE bodies are written event by event
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
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    // A client that gave up (timeout) makes writes fail: fine.
                    let _ = serve(socket, state).await;
                });
            }
        });
        StubServer {
            base: format!("http://{addr}"),
            state,
            task,
        }
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

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
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
    let raw_body = &buf[body_start..buf.len().min(body_start + length)];
    let body = serde_json::from_slice(raw_body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw_body).into_owned()));
    let canned = {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        let answer = match (st.script.pop_front(), &st.responder) {
            (Some(c), _) => Some(c),
            (None, Some(r)) => Some(r(&body)),
            (None, None) => None,
        };
        st.requests.push(Recorded {
            method,
            path,
            headers,
            body,
        });
        answer
    };
    let canned = canned.unwrap_or_else(|| {
        Canned::json(
            418,
            serde_json::json!({"error": {"message": "stub script exhausted"}}),
        )
    });
    tokio::time::sleep(canned.delay).await;
    let mut head = format!("HTTP/1.1 {} Stub\r\nConnection: close\r\n", canned.status);
    for (k, v) in &canned.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match canned.body {
        Body::Json(v) => write_whole(&mut socket, head, "application/json", &v.to_string()).await?,
        Body::Raw(s) => write_whole(&mut socket, head, "application/json", &s).await?,
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
                return Ok(());
            }
        }
    }
    socket.shutdown().await
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
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
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

/// The request every test sends, and the protocol invariants each recorded
/// request must satisfy (model, auth header, tools named verbatim, every
/// tool call answered by exactly one result, in place).
pub mod invariants {
    use holon::runtime::provider::{ConversationItem, ProviderRequest, ToolCall, ToolSpec};
    use serde_json::{json, Value};

    use super::Recorded;

    pub const TOOLS: [&str; 2] = ["ExecCommand", "ReadFile"];

    /// A conversation with a finished parallel tool round whose results arrive
    /// out of order around an operator message, plus one call never answered.
    pub fn request() -> ProviderRequest {
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({"arg": id}),
            malformed_arguments: None,
        };
        let result = |id: &str, name: &str| ConversationItem::ToolResult {
            call_id: id.into(),
            tool_name: name.into(),
            content: format!("result of {id}"),
            is_error: false,
        };
        ProviderRequest {
        system_prompt: "You are Holon.".into(),
        context_blocks: Vec::new(),
        conversation: vec![
            ConversationItem::UserText { text: "look around".into() },
            ConversationItem::AssistantRound {
                text: "Looking.".into(),
                tool_calls: vec![call("call_1", "ExecCommand"), call("call_2", "ReadFile"), call("call_3", "ExecCommand")],
            },
            result("call_2", "ReadFile"),
            ConversationItem::UserText { text: "operator: hurry".into() },
            result("call_1", "ExecCommand"),
        ],
        tools: TOOLS
            .iter()
            .map(|n| ToolSpec {
                name: (*n).into(),
                description: format!("{n} tool"),
                input_schema: json!({"type": "object", "properties": {"arg": {"type": "string"}}, "required": ["arg"]}),
                freeform_field: None,
            })
            .collect(),
        max_output_tokens: Some(512),
        prompt_cache_key: None,
    }
    }

    #[derive(Clone, Copy)]
    pub enum Wire {
        Responses,
        Anthropic,
        Chat,
    }

    #[derive(Clone, Copy)]
    pub enum Auth<'a> {
        Bearer(&'a str),
        AnthropicKey(&'a str),
        None,
    }

    fn ids(values: impl Iterator<Item = Value>, key: &str) -> Vec<String> {
        values
            .filter_map(|v| v[key].as_str().map(str::to_owned))
            .collect()
    }

    /// The invariants every request must satisfy, whatever the test.
    pub fn check_request(r: &Recorded, wire: Wire, auth: Auth<'_>, model: &str) {
        assert_eq!(r.method, "POST");
        assert_eq!(r.body["model"], model, "model in {}", r.body);
        match auth {
            Auth::Bearer(key) => assert_eq!(
                r.headers.get("authorization"),
                Some(&format!("Bearer {key}"))
            ),
            Auth::AnthropicKey(key) => {
                assert_eq!(r.headers.get("x-api-key").map(String::as_str), Some(key));
                assert_eq!(
                    r.headers.get("anthropic-version").map(String::as_str),
                    Some("2023-06-01")
                );
                assert!(!r.headers.contains_key("authorization"));
            }
            Auth::None => assert!(
                !r.headers.contains_key("authorization") && !r.headers.contains_key("x-api-key")
            ),
        }
        let tools = r.body["tools"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = tools
            .iter()
            .filter_map(|t| match wire {
                Wire::Chat => t["function"]["name"].as_str(),
                Wire::Responses | Wire::Anthropic => t["name"].as_str(),
            })
            .collect();
        assert_eq!(names, TOOLS, "tool names verbatim");
        match wire {
            Wire::Responses => check_responses_pairing(&r.body),
            Wire::Anthropic => check_anthropic_pairing(&r.body),
            Wire::Chat => check_chat_pairing(&r.body),
        }
    }

    fn check_responses_pairing(body: &Value) {
        assert_eq!(responses_pairing(body), 3);
    }

    /// The same for OpenAI Responses `input` items: one output per call,
    /// after it, and no orphan outputs. Returns the number of calls.
    pub fn responses_pairing(body: &Value) -> usize {
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let of = |ty: &str| ids(input.iter().filter(|i| i["type"] == ty).cloned(), "call_id");
        let calls = of("function_call");
        for id in &calls {
            let call_at = input
                .iter()
                .position(|i| i["type"] == "function_call" && i["call_id"] == *id);
            let outputs: Vec<usize> = input
                .iter()
                .enumerate()
                .filter(|(_, i)| i["type"] == "function_call_output" && i["call_id"] == *id)
                .map(|(n, _)| n)
                .collect();
            assert_eq!(outputs.len(), 1, "exactly one output for {id}");
            assert!(call_at < Some(outputs[0]), "output after call {id}");
        }
        assert_eq!(
            of("function_call_output").len(),
            calls.len(),
            "no orphan outputs"
        );
        calls.len()
    }

    fn check_anthropic_pairing(body: &Value) {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(msgs.first().map(|m| m["role"].clone()), Some(json!("user")));
        for pair in msgs.windows(2) {
            assert_ne!(pair[0]["role"], pair[1]["role"], "roles alternate");
        }
        for (n, m) in msgs.iter().enumerate() {
            let content = m["content"].as_array().cloned().unwrap_or_default();
            let uses = ids(
                content.iter().filter(|b| b["type"] == "tool_use").cloned(),
                "id",
            );
            if uses.is_empty() {
                continue;
            }
            let next = msgs
                .get(n + 1)
                .map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .unwrap_or_default();
            let results = ids(next.iter().take(uses.len()).cloned(), "tool_use_id");
            assert_eq!(
                results, uses,
                "tool_result blocks first in the next user message, one per tool_use"
            );
            let all = next.iter().filter(|b| b["type"] == "tool_result").count();
            assert_eq!(all, uses.len());
        }
    }

    fn check_chat_pairing(body: &Value) {
        assert_eq!(chat_pairing(body), 3);
    }

    /// Every tool call in a Chat Completions request is answered by exactly
    /// one `role: tool` message, in the run of tool messages right after it,
    /// and no result answers a call that is not there. Returns the number of
    /// calls.
    pub fn chat_pairing(body: &Value) -> usize {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let mut all_calls = Vec::new();
        for (n, m) in msgs.iter().enumerate() {
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["id"].as_str().map(str::to_owned))
                .collect();
            if calls.is_empty() {
                continue;
            }
            let answers = ids(
                msgs.iter()
                    .skip(n + 1)
                    .take_while(|m| m["role"] == "tool")
                    .cloned(),
                "tool_call_id",
            );
            assert_eq!(
                answers, calls,
                "one role:tool message per call, right after the assistant message"
            );
            all_calls.extend(calls);
        }
        let results = msgs.iter().filter(|m| m["role"] == "tool").count();
        assert_eq!(results, all_calls.len(), "no orphan results");
        all_calls.len()
    }
}
