//! One HTTP attempt against a resolved endpoint: lower the request for its
//! wire format, POST it with the right auth headers, and turn the answer
//! (JSON body or SSE stream) into a [`ParsedRound`] or a classified
//! [`AttemptFailure`] with transport diagnostics.
//!
//! It does not retry or fall back (that is `retry::ProviderChain`). The
//! per-attempt timeout covers connect, headers and the whole body (streams
//! included). Keys go only into headers marked sensitive; URLs in
//! diagnostics are scrubbed and provider messages are redacted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};

use super::classify::{
    classify_status, classify_transport_error, parse_error_body, redact, retry_after_from,
    scrub_url, truncate, ResponseStage,
};
use super::failure::AttemptFailure;
use super::registry::ResolvedEndpoint;
use super::sse::SseParser;
use super::wire::{
    ParsedRound, ProgressSink, StreamDecoder, StreamState, Streaming, WireFailure, WireFormat,
    WireOptions, WireOrigin,
};
use super::{
    anthropic_messages, openai_chat, openai_responses, FailureKind, ProviderRequest,
    ReqwestDiagnostics, TransportDiagnostics,
};

/// Extra time the outer deadline allows beyond reqwest's own timeout, so the
/// reqwest error (with its flags) normally wins.
const DEADLINE_GRACE: Duration = Duration::from_millis(100);

/// Whether a transport stage runs after the response headers arrived (the
/// body or the stream is being read), where a broken connection means the
/// answer was cut short rather than never started.
fn stage_after_headers(stage: &str) -> ResponseStage {
    match stage {
        "read_body" | "stream" => ResponseStage::Body,
        _ => ResponseStage::BeforeHeaders,
    }
}

/// A transport for one resolved endpoint.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    endpoint: ResolvedEndpoint,
    client: reqwest::Client,
    /// Set once the endpoint refused the reasoning setting: later requests
    /// go without it.
    effort_refused: Arc<AtomicBool>,
}

impl HttpTransport {
    pub fn new(endpoint: ResolvedEndpoint, client: reqwest::Client) -> HttpTransport {
        HttpTransport {
            endpoint,
            client,
            effort_refused: Arc::default(),
        }
    }

    /// The reasoning effort requests ask for now.
    pub fn reasoning_effort(&self) -> Option<super::ReasoningEffort> {
        match self.effort_refused.load(Ordering::Relaxed) {
            true => None,
            false => self.endpoint.reasoning_effort,
        }
    }

    /// The endpoint refused the reasoning setting: stop sending it.
    pub fn refuse_effort(&self) {
        self.effort_refused.store(true, Ordering::Relaxed);
    }

    /// The HTTP client its requests go through.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub fn endpoint(&self) -> &ResolvedEndpoint {
        &self.endpoint
    }

    pub(crate) fn endpoint_mut(&mut self) -> &mut ResolvedEndpoint {
        &mut self.endpoint
    }

    /// One attempt, bounded by `timeout`.
    pub async fn send(
        &self,
        request: &ProviderRequest,
        progress: ProgressSink<'_>,
        timeout: Duration,
    ) -> Result<ParsedRound, AttemptFailure> {
        let attempt = self.exchange(request, progress, timeout);
        match tokio::time::timeout(timeout + DEADLINE_GRACE, attempt).await {
            Ok(Ok(mut round)) => {
                // Reasoning goes back only to the model that made it.
                for item in &mut round.reasoning {
                    item.stamp(&self.endpoint.model_ref.model);
                }
                Ok(round)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(self.failure(
                FailureKind::Timeout,
                "deadline",
                format!("no complete response within {}s", timeout.as_secs_f64()),
                None,
            )),
        }
    }

    fn body(&self, request: &ProviderRequest) -> serde_json::Value {
        let model = &self.endpoint.model_ref.model;
        let options = WireOptions {
            streaming: self.endpoint.streaming,
            reasoning_effort: self.reasoning_effort(),
            images: self.endpoint.images,
        };
        match self.endpoint.wire {
            WireFormat::OpenaiResponses => openai_responses::request_body(request, model, options),
            WireFormat::AnthropicMessages => {
                anthropic_messages::request_body(request, model, options)
            }
            WireFormat::OpenaiChat => openai_chat::request_body(request, model, options),
        }
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        match self.endpoint.wire {
            WireFormat::OpenaiResponses => Box::<openai_responses::ResponsesStream>::default(),
            WireFormat::AnthropicMessages => Box::<anthropic_messages::MessagesStream>::default(),
            WireFormat::OpenaiChat => Box::<openai_chat::ChatStream>::default(),
        }
    }

    fn parse(&self, value: &serde_json::Value) -> Result<ParsedRound, WireFailure> {
        match self.endpoint.wire {
            WireFormat::OpenaiResponses => openai_responses::parse_response(value),
            WireFormat::AnthropicMessages => anthropic_messages::parse_response(value),
            WireFormat::OpenaiChat => openai_chat::parse_response(value),
        }
    }

    fn secret(&self) -> Option<&str> {
        self.endpoint.api_key.as_ref().map(|k| k.expose())
    }

    async fn exchange(
        &self,
        request: &ProviderRequest,
        progress: ProgressSink<'_>,
        timeout: Duration,
    ) -> Result<ParsedRound, AttemptFailure> {
        let accept = match self.endpoint.streaming {
            Streaming::On => "text/event-stream",
            Streaming::Off => "application/json",
        };
        let mut body = self.body(request);
        if self.endpoint.codex.is_some() {
            codex_shape(&mut body);
        }
        // A ChatGPT sign-in the backend refuses (401) is refreshed once and
        // the request sent again: a token revoked or rotated before it
        // expired.
        let mut refused: Option<String> = None;
        let response = loop {
            let mut builder = self
                .client
                .post(self.endpoint.url())
                .timeout(timeout)
                .header(ACCEPT, accept)
                .json(&body);
            builder = authorized(builder, &self.endpoint)
                .map_err(|why| self.failure(FailureKind::NotConfigured, "build", why, None))?;
            let mut used = None;
            if let Some(sign_in) = &self.endpoint.codex {
                let credentials = match &refused {
                    None => sign_in.credentials(&self.client).await,
                    Some(token) => sign_in.after_refusal(&self.client, token).await,
                };
                let credentials = credentials.map_err(|e| {
                    // The sign-in service out of reach is retried like the
                    // provider's; anything else is the operator's to fix.
                    let kind = match e.transient {
                        true => FailureKind::Connect,
                        false => FailureKind::AuthFailed,
                    };
                    self.failure(kind, "sign_in", e.message, None)
                })?;
                builder = codex_headers(builder, &credentials)
                    .map_err(|why| self.failure(FailureKind::AuthFailed, "sign_in", why, None))?;
                used = Some(credentials.access_token);
            }
            let response = builder
                .send()
                .await
                .map_err(|e| self.reqwest_failure("send", e))?;
            match (response.status().as_u16(), used, &refused) {
                (401, Some(token), None) => refused = Some(token),
                _ => break response,
            }
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            return Err(self.status_failure(response).await);
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if is_sse {
            return self.read_stream(response, progress, status).await;
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.reqwest_failure("read_body", e))?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            let preview = truncate(&redact(&String::from_utf8_lossy(&bytes), self.secret()), 80);
            self.failure(
                FailureKind::InvalidResponse,
                "decode",
                format!("response body is not JSON ({e}): {preview:?}"),
                Some(status),
            )
        })?;
        self.parse(&value)
            .map_err(|w| self.wire_failure("parse", w, Some(status)))
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        progress: ProgressSink<'_>,
        status: u16,
    ) -> Result<ParsedRound, AttemptFailure> {
        let mut parser = SseParser::new();
        let mut decoder = self.decoder();
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|e| self.reqwest_failure("stream", e))?;
            let events = match chunk {
                Some(bytes) => parser.push(&bytes),
                None => {
                    if let Some(event) = std::mem::take(&mut parser).finish() {
                        decoder
                            .on_event(&event, progress)
                            .map_err(|w| self.wire_failure("stream", w, Some(status)))?;
                    }
                    break;
                }
            };
            for event in &events {
                let state = decoder
                    .on_event(event, progress)
                    .map_err(|w| self.wire_failure("stream", w, Some(status)))?;
                match state {
                    StreamState::Continue => {}
                    StreamState::Done => {
                        return decoder
                            .finish()
                            .map_err(|w| self.wire_failure("stream", w, Some(status)));
                    }
                }
            }
        }
        decoder
            .finish()
            .map_err(|w| self.wire_failure("stream", w, Some(status)))
    }

    async fn status_failure(&self, response: reqwest::Response) -> AttemptFailure {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = retry_after_from(
            header("retry-after-ms").as_deref(),
            header("retry-after").as_deref(),
        );
        let text = response.text().await.unwrap_or_default();
        let error = parse_error_body(&text);
        let kind = classify_status(status, &error);
        let message = error
            .message
            .as_deref()
            .map(|m| truncate(&redact(m, self.secret()), 300));
        let detail = match &message {
            Some(m) => format!("HTTP {status}: {m}"),
            None => format!("HTTP {status}"),
        };
        let mut failure = self.failure(kind, "status", detail, Some(status));
        failure.retry_after = retry_after;
        failure.provider_message = message;
        failure
    }

    fn failure(
        &self,
        kind: FailureKind,
        stage: &str,
        detail: String,
        status: Option<u16>,
    ) -> AttemptFailure {
        AttemptFailure {
            kind,
            detail,
            status,
            in_band_after: None,
            retry_after: None,
            provider_message: None,
            diagnostics: TransportDiagnostics {
                stage: stage.to_owned(),
                provider: Some(self.endpoint.model_ref.provider.clone()),
                model_ref: Some(self.endpoint.model_ref.to_string()),
                url: Some(scrub_url(&self.endpoint.url())),
                status,
                reqwest: None,
                source_chain: Vec::new(),
            },
        }
    }

    fn wire_failure(&self, stage: &str, wire: WireFailure, status: Option<u16>) -> AttemptFailure {
        let detail = truncate(&redact(&wire.detail, self.secret()), 300);
        match wire.origin {
            // The provider reported the error inside a successful response:
            // its own type and code decided the kind; the HTTP status is
            // kept as context, never as the cause.
            WireOrigin::ProviderReported => {
                let labelled = match status {
                    Some(s) => format!("in-stream error after HTTP {s}: {detail}"),
                    None => detail.clone(),
                };
                let mut failure = self.failure(wire.kind, stage, labelled, None);
                failure.in_band_after = status;
                failure.diagnostics.status = status;
                failure.provider_message = Some(detail);
                failure
            }
            WireOrigin::Decoder => self.failure(wire.kind, stage, detail, status),
        }
    }

    fn reqwest_failure(&self, stage: &str, error: reqwest::Error) -> AttemptFailure {
        let error = error.without_url();
        let flags = ReqwestDiagnostics {
            is_timeout: error.is_timeout(),
            is_connect: error.is_connect(),
            is_request: error.is_request(),
            is_body: error.is_body(),
            is_decode: error.is_decode(),
            is_redirect: error.is_redirect(),
            status: error.status().map(|s| s.as_u16()),
        };
        let kind = if error.is_builder() {
            FailureKind::NotConfigured
        } else {
            classify_transport_error(&flags, stage_after_headers(stage))
        };
        let mut chain = Vec::new();
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
        while let Some(e) = source {
            chain.push(redact(&e.to_string(), self.secret()));
            source = e.source();
        }
        let detail = chain.last().cloned().unwrap_or_else(|| error.to_string());
        let mut failure = self.failure(kind, stage, detail, flags.status);
        failure.diagnostics.reqwest = Some(flags);
        failure.diagnostics.source_chain = chain;
        failure
    }
}
/// The Codex backend's request shape: no `max_output_tokens` (it refuses
/// one), and `reasoning: null` with `include: []` when no effort is asked
/// (it wants both keys present). `store: false` and `stream: true` are
/// already the Responses lowering's.
pub(super) fn codex_shape(body: &mut serde_json::Value) {
    let Some(obj) = body.as_object_mut() else {
        return;
    };
    obj.remove("max_output_tokens");
    obj.entry("reasoning").or_insert(serde_json::Value::Null);
    obj.entry("include")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    obj.insert("stream".into(), serde_json::Value::Bool(true));
}

/// A ChatGPT sign-in's headers: the bearer token and the account, both
/// kept out of every log.
pub(super) fn codex_headers(
    mut builder: reqwest::RequestBuilder,
    credentials: &super::codex_auth::Credentials,
) -> Result<reqwest::RequestBuilder, String> {
    let sensitive = |text: &str, what: &str| {
        let mut value = HeaderValue::from_str(text)
            .map_err(|_| format!("the ChatGPT sign-in's {what} is not a valid header"))?;
        value.set_sensitive(true);
        Ok::<_, String>(value)
    };
    let bearer = sensitive(
        &format!("Bearer {}", credentials.access_token),
        "access token",
    )?;
    builder = builder
        .header(reqwest::header::AUTHORIZATION, bearer)
        .header("OpenAI-Beta", "responses=experimental")
        .header("originator", "holon");
    if let Some(account) = &credentials.account_id {
        builder = builder.header("chatgpt-account-id", sensitive(account, "account")?);
    }
    Ok(builder)
}

/// `builder` with the endpoint's credential in the header its wire
/// expects (marked sensitive, so it never reaches a log), and the API
/// version Anthropic asks for; why not, when the key cannot be a header.
pub(super) fn authorized(
    mut builder: reqwest::RequestBuilder,
    endpoint: &ResolvedEndpoint,
) -> Result<reqwest::RequestBuilder, String> {
    if let Some(key) = &endpoint.api_key {
        let value = match endpoint.wire {
            WireFormat::AnthropicMessages => key.expose().to_owned(),
            WireFormat::OpenaiResponses | WireFormat::OpenaiChat => {
                format!("Bearer {}", key.expose())
            }
        };
        let Ok(mut value) = HeaderValue::from_str(&value) else {
            return Err(format!(
                "{} contains characters not allowed in an HTTP header",
                key.env()
            ));
        };
        value.set_sensitive(true);
        builder = match endpoint.wire {
            WireFormat::AnthropicMessages => builder.header("x-api-key", value),
            WireFormat::OpenaiResponses | WireFormat::OpenaiChat => {
                builder.header(reqwest::header::AUTHORIZATION, value)
            }
        };
    }
    if endpoint.wire == WireFormat::AnthropicMessages {
        builder = builder.header("anthropic-version", anthropic_messages::API_VERSION);
    }
    Ok(builder)
}
