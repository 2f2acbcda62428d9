//! The JSON-RPC 2.0 envelope of the control protocol as types: the request
//! line a client writes, the response and error lines a server writes, the
//! notifications of a subscription, and the subscription methods' own
//! params and results. The server and `SocketClient` both build and read
//! lines only through these, so the two sides cannot drift apart.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::api::{EventRecord, Request};
use super::error::{ApiError, ErrorCode};

/// The protocol version every line carries.
pub const VERSION: &str = "2.0";

/// A request line as a client writes it: the request's own
/// `method`/`params` beside the envelope's `jsonrpc` and `id`.
#[derive(Debug, Serialize)]
pub struct RequestLine<'a, P: Serialize> {
    pub jsonrpc: &'static str,
    pub id: u64,
    #[serde(flatten)]
    pub call: &'a P,
}

impl<'a, P: Serialize> RequestLine<'a, P> {
    pub fn new(id: u64, call: &'a P) -> RequestLine<'a, P> {
        RequestLine {
            jsonrpc: VERSION,
            id,
            call,
        }
    }

    /// The line's JSON text, newline-terminated.
    pub fn encode(&self) -> Result<String, ApiError> {
        let mut line = serde_json::to_string(self)
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        line.push('\n');
        Ok(line)
    }
}

/// A request the protocol serves besides `Request`: a subscription's
/// start and end belong to a connection, not to the runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum SubscriptionRequest {
    #[serde(rename = "events.subscribe")]
    Subscribe(SubscribeParams),
    #[serde(rename = "events.unsubscribe")]
    Unsubscribe(UnsubscribeParams),
}

/// `events.subscribe`: follow `agent_id` from `from_seq` (default 1). The
/// client may name the subscription so it is registered before the first
/// event can arrive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribeParams {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<String>,
}

/// The answer to `events.subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribed {
    pub subscription: String,
    pub agent_id: String,
    pub from_seq: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsubscribeParams {
    pub subscription: String,
}

/// The answer to `events.unsubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unsubscribed {
    pub unsubscribed: String,
}

/// What a server sends unasked, on a subscription: `method` names the
/// variant, `params` is its struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
#[allow(clippy::large_enum_variant)]
pub enum Notification {
    /// One ledger event, in `event_seq` order with no gap.
    #[serde(rename = "event")]
    Event(EventParams),
    /// The subscriber fell behind and was cut off; nothing is lost:
    /// subscribe again from `resume_from`.
    #[serde(rename = "subscription.lagged")]
    Lagged(LaggedParams),
    /// Assistant text of a running turn as the model writes it
    /// (transient: dropped rather than queued for a slow subscriber).
    #[serde(rename = "assistant.delta")]
    AssistantDelta(DeltaParams),
    /// An MCP server's progress on a running call (transient, dropped
    /// like a delta).
    #[serde(rename = "tool.progress")]
    ToolProgress(ProgressParams),
    /// A provider attempt of a running turn failed and the chain retries
    /// it or moves to the next model (transient, dropped like a delta).
    #[serde(rename = "provider.retry")]
    ProviderRetry(RetryParams),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventParams {
    pub subscription: String,
    pub event: EventRecord,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaggedParams {
    pub subscription: String,
    pub resume_from: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaParams {
    pub subscription: String,
    pub run_id: String,
    /// The run's provider attempt the text belongs to (from 1): when it
    /// changes, the answer starts over (a retry or a fallback model).
    #[serde(default)]
    pub attempt: u32,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressParams {
    pub subscription: String,
    pub run_id: String,
    pub call_id: String,
    pub progress: crate::model::mcp::McpProgress,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryParams {
    pub subscription: String,
    pub run_id: String,
    /// The run's provider attempt that failed: its streamed text is not
    /// the answer.
    pub attempt: u32,
    pub notice: crate::model::attempt::RetryNotice,
}

impl Notification {
    /// The notification's line (without the newline).
    pub fn encode(&self) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            jsonrpc: &'static str,
            #[serde(flatten)]
            body: &'a Notification,
        }
        let line = Line {
            jsonrpc: VERSION,
            body: self,
        };
        // Strings, numbers and records of plain data: this cannot fail.
        serde_json::to_string(&line).unwrap_or_default()
    }

    pub fn subscription(&self) -> &str {
        match self {
            Notification::Event(p) => &p.subscription,
            Notification::Lagged(p) => &p.subscription,
            Notification::AssistantDelta(p) => &p.subscription,
            Notification::ToolProgress(p) => &p.subscription,
            Notification::ProviderRetry(p) => &p.subscription,
        }
    }

    /// A notification read from its `method` and `params` text: the
    /// params are parsed once, straight into the method's struct (an event
    /// notification is the hot path of an attached console). `None` for a
    /// method this client does not know or params that do not fit.
    fn read(method: &str, params: &RawValue) -> Option<Notification> {
        let text = params.get();
        match method {
            "event" => serde_json::from_str(text).ok().map(Notification::Event),
            "subscription.lagged" => serde_json::from_str(text).ok().map(Notification::Lagged),
            "assistant.delta" => serde_json::from_str(text)
                .ok()
                .map(Notification::AssistantDelta),
            "tool.progress" => serde_json::from_str(text)
                .ok()
                .map(Notification::ToolProgress),
            "provider.retry" => serde_json::from_str(text)
                .ok()
                .map(Notification::ProviderRetry),
            _ => None,
        }
    }
}

/// A line as a client reads it from the server: a response (`id` with
/// `result` or `error`) or a notification (`method` and `params`). The
/// result stays unparsed JSON text so a large answer is decoded once,
/// straight into what the caller wants.
#[derive(Debug, Deserialize)]
pub struct IncomingLine<'a> {
    /// Absent for a notification; `Some(Null)` for `"id":null`.
    #[serde(default, deserialize_with = "present")]
    pub id: Option<serde_json::Value>,
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
    #[serde(default)]
    pub error: Option<ErrorObject>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
}

/// A member that is there, even as `null` (plain `Option` reads `null` as
/// absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// What an incoming line is. Notifications are the common case on a
/// subscribed connection, so they are not boxed.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Incoming {
    /// The answer to request `id`.
    Response {
        id: u64,
        result: Result<String, ApiError>,
    },
    /// The server says why it is closing the connection (`id` null).
    Closing(ApiError),
    Notification(Notification),
    /// A line this client does not understand (a newer server's
    /// notification, an id it never sent): skipped.
    Other,
}

impl IncomingLine<'_> {
    pub fn classify(self) -> Incoming {
        match &self.id {
            Some(serde_json::Value::Null) => {
                return match self.error {
                    Some(e) => Incoming::Closing(e.into()),
                    None => Incoming::Other,
                }
            }
            Some(id) => {
                let Some(id) = id.as_u64() else {
                    return Incoming::Other;
                };
                let result = match (self.result, self.error) {
                    (Some(r), _) => Ok(r.get().to_owned()),
                    (None, Some(e)) => Err(e.into()),
                    (None, None) => Err(ApiError::new(
                        ErrorCode::Internal,
                        "response without result or error",
                    )),
                };
                return Incoming::Response { id, result };
            }
            None => {}
        }
        let (Some(method), Some(params)) = (self.method, self.params) else {
            return Incoming::Other;
        };
        // An unknown method or a malformed notification is skipped, never
        // a crash.
        match Notification::read(&method, params) {
            Some(n) => Incoming::Notification(n),
            None => Incoming::Other,
        }
    }
}

/// The `error` member of a response. An unknown code (a newer server's)
/// reads as an internal error with the server's message kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
}

impl From<ErrorObject> for ApiError {
    fn from(e: ErrorObject) -> ApiError {
        let code = ErrorCode::try_from(e.code).unwrap_or(ErrorCode::Internal);
        ApiError::new(code, e.message)
    }
}

impl From<&ApiError> for ErrorObject {
    fn from(e: &ApiError) -> ErrorObject {
        ErrorObject {
            code: e.code.into(),
            message: e.message.clone(),
        }
    }
}

/// A response line answering `id` (JSON text exactly as the client wrote
/// it) with `result` (JSON text).
pub fn result_line(id: &str, result: &str) -> String {
    format!(r#"{{"jsonrpc":"{VERSION}","id":{id},"result":{result}}}"#)
}

/// An error line answering `id` (JSON text; `null` when the request's id
/// could not be read).
pub fn error_line(id: &str, code: ErrorCode, message: &str) -> String {
    let error = ErrorObject {
        code: code.into(),
        message: message.to_owned(),
    };
    let error = serde_json::to_string(&error).unwrap_or_default();
    format!(r#"{{"jsonrpc":"{VERSION}","id":{id},"error":{error}}}"#)
}

/// A request as a line, for clients that write `Request`s.
pub fn request_line(id: u64, request: &Request) -> Result<String, ApiError> {
    RequestLine::new(id, request).encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_line_is_the_request_with_the_envelope() {
        let line = request_line(
            7,
            &Request::AgentStatus {
                agent_id: "main".into(),
            },
        )
        .unwrap_or_default();
        assert_eq!(
            line,
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"agent.status\",\"params\":{\"agent_id\":\"main\"}}\n"
        );
        let unit = request_line(8, &Request::RuntimeStatus).unwrap_or_default();
        assert_eq!(
            unit,
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"runtime.status\"}\n"
        );
        let sub = SubscriptionRequest::Subscribe(SubscribeParams {
            agent_id: "main".into(),
            from_seq: Some(3),
            subscription: Some("sub_1".into()),
        });
        assert_eq!(
            RequestLine::new(9, &sub).encode().unwrap_or_default(),
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"events.subscribe\",\"params\":{\"agent_id\":\"main\",\"from_seq\":3,\"subscription\":\"sub_1\"}}\n"
        );
    }

    #[test]
    fn notifications_round_trip_through_a_client_read() {
        let samples = [
            Notification::Lagged(LaggedParams {
                subscription: "sub_1".into(),
                resume_from: 42,
            }),
            Notification::AssistantDelta(DeltaParams {
                subscription: "sub_1".into(),
                run_id: "run_1".into(),
                attempt: 2,
                text: "Hel".into(),
            }),
            Notification::ToolProgress(ProgressParams {
                subscription: "sub_1".into(),
                run_id: "run_1".into(),
                call_id: "call_1".into(),
                progress: crate::model::mcp::McpProgress::new(2.0, Some(5.0), Some("indexing")),
            }),
            Notification::ProviderRetry(RetryParams {
                subscription: "sub_1".into(),
                run_id: "run_1".into(),
                attempt: 3,
                notice: crate::model::attempt::RetryNotice {
                    model_ref: "openai/gpt-5".into(),
                    attempt: 1,
                    max_attempts: 3,
                    failure_kind: crate::model::usage::FailureKind::RateLimited,
                    status: Some(429),
                    next: crate::model::attempt::RetryNext::Retry,
                    backoff_ms: Some(8_000),
                },
            }),
            Notification::Event(EventParams {
                subscription: "sub_2".into(),
                event: EventRecord {
                    event_seq: 3,
                    id: "evt_1".into(),
                    ts: "2026-11-23T00:00:00.000Z".into(),
                    kind: "agent_created".into(),
                    agent_id: "main".into(),
                    provenance: Default::default(),
                    payload: serde_json::json!({ "agent": { "id": "main" } }),
                },
            }),
        ];
        for n in samples {
            let line = n.encode();
            assert!(
                line.starts_with("{\"jsonrpc\":\"2.0\",\"method\":"),
                "{line}"
            );
            let read: IncomingLine<'_> = serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("{line}: {e}");
            });
            match read.classify() {
                Incoming::Notification(back) => assert_eq!(back, n),
                other => panic!("{line} read as {other:?}"),
            }
        }
    }

    #[test]
    fn a_delta_without_its_attempt_reads_as_attempt_zero() {
        let line = r#"{"jsonrpc":"2.0","method":"assistant.delta","params":{"subscription":"sub_1","run_id":"run_1","text":"Hel"}}"#;
        let read: IncomingLine<'_> = serde_json::from_str(line).expect("a line");
        match read.classify() {
            Incoming::Notification(Notification::AssistantDelta(p)) => {
                assert_eq!((p.attempt, p.text.as_str()), (0, "Hel"));
            }
            other => panic!("read as {other:?}"),
        }
    }

    #[test]
    fn golden_lines_keep_their_shape() {
        let lagged = Notification::Lagged(LaggedParams {
            subscription: "sub_1".into(),
            resume_from: 42,
        });
        assert_eq!(
            lagged.encode(),
            r#"{"jsonrpc":"2.0","method":"subscription.lagged","params":{"subscription":"sub_1","resume_from":42}}"#
        );
        assert_eq!(
            result_line("\"a\"", "{\"ok\":true}"),
            r#"{"jsonrpc":"2.0","id":"a","result":{"ok":true}}"#
        );
        assert_eq!(
            error_line("null", ErrorCode::Busy, "full \"now\""),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32006,"message":"full \"now\""}}"#
        );
    }

    #[test]
    fn responses_closings_and_strangers_are_told_apart() {
        let read = |line: &str| match serde_json::from_str::<IncomingLine<'_>>(line) {
            Ok(l) => l.classify(),
            Err(e) => panic!("{line}: {e}"),
        };
        match read(r#"{"jsonrpc":"2.0","id":4,"result":{"a":[1,2]}}"#) {
            Incoming::Response { id: 4, result } => {
                assert_eq!(result.ok().as_deref(), Some(r#"{"a":[1,2]}"#))
            }
            other => panic!("{other:?}"),
        }
        match read(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32001,"message":"no agent"}}"#) {
            Incoming::Response { id: 5, result } => assert_eq!(
                result.err(),
                Some(ApiError::new(ErrorCode::NotFound, "no agent"))
            ),
            other => panic!("{other:?}"),
        }
        // A newer server's error code keeps its message.
        match read(r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32099,"message":"new"}}"#) {
            Incoming::Response { result, .. } => {
                assert_eq!(
                    result.err(),
                    Some(ApiError::new(ErrorCode::Internal, "new"))
                )
            }
            other => panic!("{other:?}"),
        }
        match read(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32006,"message":"full"}}"#) {
            Incoming::Closing(e) => assert_eq!(e.code, ErrorCode::Busy),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            read(r#"{"jsonrpc":"2.0","method":"something.new","params":{"subscription":"s"}}"#),
            Incoming::Other
        ));
    }
}
