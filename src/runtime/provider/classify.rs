//! Pure classification of provider failures into [`FailureKind`]: HTTP
//! status plus error body, provider error codes seen inside streams,
//! reqwest error flags, `Retry-After` headers. Also the two scrubbing
//! helpers every diagnostic passes through (URL without credentials, text
//! without the API key).
//!
//! Nothing here performs I/O or reads the clock. The retry decision itself
//! is `FailureKind::is_retryable`; this module only decides the kind.

use std::time::Duration;

use super::{FailureKind, ReqwestDiagnostics};

/// HTTP 5xx statuses that are retried (others fail fast).
pub const RETRYABLE_5XX: [u16; 5] = [500, 502, 503, 504, 529];

/// The useful fields of a provider error body, whatever its dialect:
/// OpenAI `{"error":{"message","type","code"}}`, Anthropic
/// `{"type":"error","error":{"type","message"}}`, or looser
/// `{"error":"..."}` / `{"message":"..."}` / `{"detail":"..."}` shapes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderErrorBody {
    pub code: Option<String>,
    pub error_type: Option<String>,
    pub message: Option<String>,
}

fn string_or_number(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Extracts a [`ProviderErrorBody`] from an error response body. Non-JSON
/// bodies become the (trimmed) message.
pub fn parse_error_body(body: &str) -> ProviderErrorBody {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        let trimmed = body.trim();
        return ProviderErrorBody {
            message: (!trimmed.is_empty()).then(|| truncate(trimmed, 300)),
            ..ProviderErrorBody::default()
        };
    };
    error_from_value(&value)
}

/// Like [`parse_error_body`], for an already parsed JSON value (an error
/// object or an envelope holding one under `error`).
pub fn error_from_value(value: &serde_json::Value) -> ProviderErrorBody {
    let inner = match value.get("error") {
        Some(serde_json::Value::String(s)) => {
            return ProviderErrorBody {
                message: Some(s.clone()),
                ..ProviderErrorBody::default()
            }
        }
        Some(obj @ serde_json::Value::Object(_)) => obj,
        Some(_) | None => value,
    };
    let message = string_or_number(inner.get("message"))
        .or_else(|| string_or_number(inner.get("detail")))
        .or_else(|| string_or_number(value.get("message")));
    ProviderErrorBody {
        code: string_or_number(inner.get("code")),
        error_type: string_or_number(inner.get("type")),
        message,
    }
}

/// Whether an error message says the prompt no longer fits the model.
pub fn mentions_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context window",
        "context length",
        "context_length_exceeded",
        "context limit",
        "maximum context",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// Classifies a provider error code/type (as found in error bodies and
/// stream error events). `None` when the code says nothing decisive.
pub fn classify_error_code(error: &ProviderErrorBody) -> Option<FailureKind> {
    let names = [error.code.as_deref(), error.error_type.as_deref()];
    for name in names.into_iter().flatten() {
        let kind = match name {
            "context_length_exceeded" | "string_above_max_length" => {
                Some(FailureKind::ContextLengthExceeded)
            }
            "rate_limit_exceeded" | "rate_limit_error" | "insufficient_quota" => {
                Some(FailureKind::RateLimited)
            }
            "server_error" | "api_error" | "overloaded_error" | "internal_error" => {
                Some(FailureKind::ServerError)
            }
            "invalid_api_key" | "authentication_error" | "permission_error" => {
                Some(FailureKind::AuthFailed)
            }
            "not_found_error" | "model_not_found" | "request_too_large" => {
                Some(FailureKind::ClientError)
            }
            _ => None,
        };
        if kind.is_some() {
            return kind;
        }
    }
    let overflow = error
        .message
        .as_deref()
        .is_some_and(mentions_context_overflow);
    let invalid_request = names
        .into_iter()
        .flatten()
        .any(|n| n == "invalid_request_error" || n == "invalid_request");
    // An in-stream `invalid_request_error` is the same refusal as its
    // HTTP 400 twin, and classified the same way.
    match (invalid_request, overflow) {
        (true, true) => Some(FailureKind::ContextLengthExceeded),
        (true, false) => Some(FailureKind::ClientError),
        (false, _) => None,
    }
}

/// Classifies a non-success HTTP status with its parsed error body.
pub fn classify_status(status: u16, error: &ProviderErrorBody) -> FailureKind {
    match status {
        401 | 403 => FailureKind::AuthFailed,
        429 => FailureKind::RateLimited,
        400..=499 => {
            let overflow = error.code.as_deref() == Some("context_length_exceeded")
                || (status == 400
                    && error
                        .message
                        .as_deref()
                        .is_some_and(mentions_context_overflow));
            if overflow {
                FailureKind::ContextLengthExceeded
            } else {
                FailureKind::ClientError
            }
        }
        s if RETRYABLE_5XX.contains(&s) => FailureKind::ServerError,
        // "Not implemented" / "HTTP version not supported": the endpoint
        // does not speak this contract.
        501 | 505 => FailureKind::UnsupportedTransport,
        // Other 5xx are deterministic server refusals: fail fast.
        500..=599 => FailureKind::ClientError,
        _ => FailureKind::InvalidResponse,
    }
}

/// Where in the exchange a transport error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseStage {
    /// Connecting, sending, or waiting for the response headers.
    BeforeHeaders,
    /// Reading the body or the SSE stream of a response that had started.
    Body,
}

/// Classifies a reqwest error by its flags (timeout, connect, body, ...)
/// and where it happened. Once the headers arrived, any error that is not
/// a timeout means the answer was cut short (reqwest reports a reset or an
/// early EOF while decoding the body as a "decode" error): that is a
/// retryable `StreamInterrupted`, not a response in the wrong format.
pub fn classify_transport_error(flags: &ReqwestDiagnostics, stage: ResponseStage) -> FailureKind {
    if flags.is_timeout {
        FailureKind::Timeout
    } else if stage == ResponseStage::Body {
        FailureKind::StreamInterrupted
    } else if flags.is_connect || flags.is_request || flags.is_body {
        FailureKind::Connect
    } else if flags.is_decode {
        FailureKind::InvalidResponse
    } else if flags.is_redirect {
        FailureKind::ClientError
    } else {
        FailureKind::Connect
    }
}

/// Parses a `Retry-After` value in (possibly fractional) seconds. HTTP-date
/// values are not honoured (the exponential backoff applies instead).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// The server's requested delay: `retry-after-ms` (OpenAI) wins over
/// `retry-after` (seconds).
pub fn retry_after_from(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
) -> Option<Duration> {
    let from_ms = retry_after_ms
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0));
    from_ms.or_else(|| retry_after.and_then(parse_retry_after))
}

/// A URL safe to record: no user info, no query, no fragment.
pub fn scrub_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            // Both setters only fail for URLs that cannot have credentials.
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "(invalid url)".to_owned(),
    }
}

/// `text` with every occurrence of `secret` replaced.
pub fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 4 => text.replace(s, "[redacted]"),
        Some(_) | None => text.to_owned(),
    }
}

/// At most `max` characters of `s`, with an ellipsis when cut.
pub fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> ProviderErrorBody {
        parse_error_body(s)
    }

    #[test]
    fn status_classification() {
        let none = ProviderErrorBody::default();
        assert_eq!(classify_status(401, &none), FailureKind::AuthFailed);
        assert_eq!(classify_status(403, &none), FailureKind::AuthFailed);
        assert_eq!(classify_status(429, &none), FailureKind::RateLimited);
        assert_eq!(classify_status(400, &none), FailureKind::ClientError);
        assert_eq!(classify_status(404, &none), FailureKind::ClientError);
        assert_eq!(classify_status(408, &none), FailureKind::ClientError);
        for s in RETRYABLE_5XX {
            assert_eq!(classify_status(s, &none), FailureKind::ServerError);
        }
        assert_eq!(
            classify_status(501, &none),
            FailureKind::UnsupportedTransport
        );
        assert_eq!(classify_status(507, &none), FailureKind::ClientError);
        assert_eq!(classify_status(302, &none), FailureKind::InvalidResponse);
        assert!(!classify_status(507, &none).is_retryable());
    }

    #[test]
    fn context_length_from_openai_and_anthropic_bodies() {
        let openai = body(
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        );
        assert_eq!(openai.code.as_deref(), Some("context_length_exceeded"));
        assert_eq!(
            classify_status(400, &openai),
            FailureKind::ContextLengthExceeded
        );
        let anthropic = body(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208000 tokens > 200000 maximum"}}"#,
        );
        assert_eq!(
            anthropic.error_type.as_deref(),
            Some("invalid_request_error")
        );
        assert_eq!(
            classify_status(400, &anthropic),
            FailureKind::ContextLengthExceeded
        );
        let other = body(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}"#,
        );
        assert_eq!(classify_status(400, &other), FailureKind::ClientError);
    }

    #[test]
    fn loose_error_bodies() {
        assert_eq!(
            body(r#"{"error":"model not found"}"#).message.as_deref(),
            Some("model not found")
        );
        assert_eq!(
            body(r#"{"detail":"nope"}"#).message.as_deref(),
            Some("nope")
        );
        assert_eq!(
            body("  upstream broke \n").message.as_deref(),
            Some("upstream broke")
        );
        assert_eq!(
            body(r#"{"error":{"code":400,"message":"x"}}"#)
                .code
                .as_deref(),
            Some("400")
        );
        assert_eq!(body(""), ProviderErrorBody::default());
    }

    #[test]
    fn stream_error_codes() {
        let e = |code: &str| ProviderErrorBody {
            code: Some(code.into()),
            ..Default::default()
        };
        assert_eq!(
            classify_error_code(&e("context_length_exceeded")),
            Some(FailureKind::ContextLengthExceeded)
        );
        assert_eq!(
            classify_error_code(&e("rate_limit_exceeded")),
            Some(FailureKind::RateLimited)
        );
        assert_eq!(
            classify_error_code(&e("server_error")),
            Some(FailureKind::ServerError)
        );
        assert_eq!(classify_error_code(&e("whatever")), None);
        let invalid = ProviderErrorBody {
            error_type: Some("invalid_request_error".into()),
            message: Some("max_tokens: field required".into()),
            ..Default::default()
        };
        assert_eq!(
            classify_error_code(&invalid),
            Some(FailureKind::ClientError),
            "an in-stream invalid_request_error is its HTTP 400 twin"
        );
        let overloaded = ProviderErrorBody {
            error_type: Some("overloaded_error".into()),
            ..Default::default()
        };
        assert_eq!(
            classify_error_code(&overloaded),
            Some(FailureKind::ServerError)
        );
    }

    #[test]
    fn transport_flags() {
        let f = |t, c, b| ReqwestDiagnostics {
            is_timeout: t,
            is_connect: c,
            is_body: b,
            ..Default::default()
        };
        let before = ResponseStage::BeforeHeaders;
        let body = ResponseStage::Body;
        assert_eq!(
            classify_transport_error(&f(true, true, false), before),
            FailureKind::Timeout
        );
        assert_eq!(
            classify_transport_error(&f(false, true, false), before),
            FailureKind::Connect
        );
        assert_eq!(
            classify_transport_error(&f(false, false, true), before),
            FailureKind::Connect
        );
        let decode = ReqwestDiagnostics {
            is_decode: true,
            ..Default::default()
        };
        assert_eq!(
            classify_transport_error(&decode, before),
            FailureKind::InvalidResponse
        );
        // After the headers, a reset or early EOF cuts the answer short.
        assert_eq!(
            classify_transport_error(&decode, body),
            FailureKind::StreamInterrupted
        );
        assert_eq!(
            classify_transport_error(&f(false, false, true), body),
            FailureKind::StreamInterrupted
        );
        assert_eq!(
            classify_transport_error(&f(true, false, true), body),
            FailureKind::Timeout
        );
        assert!(FailureKind::StreamInterrupted.is_retryable());
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(
            retry_after_from(Some("250"), Some("9")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after_from(None, Some("9")),
            Some(Duration::from_secs(9))
        );
        assert_eq!(retry_after_from(Some("junk"), None), None);
    }

    #[test]
    fn scrubbing() {
        assert_eq!(
            scrub_url("https://user:pw@example.com/v1/responses?key=sk-1#x"),
            "https://example.com/v1/responses"
        );
        assert_eq!(
            redact("bad key sk-secret-1", Some("sk-secret-1")),
            "bad key [redacted]"
        );
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hi", 2), "hi");
    }
}
