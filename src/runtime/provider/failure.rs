//! Operator-facing failure text and artifacts for provider rounds: the
//! failure of one attempt ([`AttemptFailure`], with its transport
//! diagnostics), the one-line summary per failed candidate (what happened
//! and what to do), and the final [`FailureArtifact`] of a chain.
//!
//! Invariant: nothing here contains an API key. Transports redact provider
//! messages and scrub URLs before an `AttemptFailure` exists; summaries only
//! name variables (`OPENAI_API_KEY`), never values.

use std::collections::BTreeMap;
use std::time::Duration;

use super::registry::ResolvedEndpoint;
use super::{FailureArtifact, FailureKind, ModelRef, ProviderFailure, TransportDiagnostics};

/// Why one attempt failed.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptFailure {
    pub kind: FailureKind,
    /// Technical detail (redacted), e.g. `HTTP 400: max_tokens too large`.
    pub detail: String,
    /// The HTTP status that caused the failure. `None` when the provider
    /// reported the error inside a successful response (see
    /// `in_band_after`): that status is not the cause.
    pub status: Option<u16>,
    /// Set when the error arrived inside a successful response (an SSE
    /// `error` event, or an error object in a 200 body): the HTTP status
    /// the response had. Summaries label it, never present it as the cause.
    pub in_band_after: Option<u16>,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
    /// The provider's own error message (redacted, truncated).
    pub provider_message: Option<String>,
    pub diagnostics: TransportDiagnostics,
}

/// The artifact `kind` string for a failure kind.
pub fn artifact_kind(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::NotConfigured => "provider_not_configured",
        FailureKind::UnsupportedTransport => "provider_unsupported_transport",
        FailureKind::Timeout => "provider_timeout",
        FailureKind::Connect => "provider_connect_failed",
        FailureKind::StreamInterrupted => "provider_stream_interrupted",
        FailureKind::RateLimited => "provider_rate_limited",
        FailureKind::ServerError => "provider_server_error",
        FailureKind::AuthFailed => "provider_auth_failed",
        FailureKind::ClientError => "provider_request_rejected",
        FailureKind::InvalidResponse => "provider_invalid_response",
        FailureKind::ContextLengthExceeded => "context_length_exceeded",
    }
}

/// A failure found while resolving a candidate (before any request).
pub fn config_failure<const N: usize>(
    kind: FailureKind,
    model_ref: &ModelRef,
    summary: String,
    metadata: [(&str, String); N],
) -> ProviderFailure {
    let known = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let model = if model_ref.provider.is_empty() {
        known(&model_ref.model)
    } else {
        Some(model_ref.to_string())
    };
    ProviderFailure {
        kind,
        artifact: FailureArtifact {
            category: kind.category(),
            kind: artifact_kind(kind).to_owned(),
            summary,
            provider: known(&model_ref.provider),
            model_ref: model,
            status: None,
            task_id: None,
            exit_status: None,
            source_chain: Vec::new(),
            metadata: metadata
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        },
    }
}

fn attempts_text(attempts: u32) -> String {
    match attempts {
        1 => "1 attempt".to_owned(),
        n => format!("{n} attempts"),
    }
}

fn status_text(failure: &AttemptFailure) -> String {
    match (failure.status, failure.in_band_after) {
        (Some(s), _) => format!(" ({s})"),
        (None, Some(s)) => format!(" (in-stream error after HTTP {s})"),
        (None, None) => String::new(),
    }
}

/// One line for a candidate whose attempts failed: what happened, then what
/// the operator should do.
pub fn candidate_summary(
    endpoint: &ResolvedEndpoint,
    failure: &AttemptFailure,
    attempts: u32,
    timeout: Duration,
) -> String {
    let m = &endpoint.model_ref;
    let provider = &m.provider;
    let tries = attempts_text(attempts);
    let status = status_text(failure);
    let url = failure
        .diagnostics
        .url
        .clone()
        .unwrap_or_else(|| endpoint.url());
    let said = failure
        .provider_message
        .as_deref()
        .map_or_else(String::new, |msg| format!(": {msg}"));
    match failure.kind {
        // A ChatGPT sign-in: what was wrong with it, and how to sign in.
        FailureKind::AuthFailed if endpoint.codex.is_some() => {
            match failure.diagnostics.stage == "sign_in" {
                true => format!("{m}: {}", failure.detail),
                false => format!(
                    "{m}: the Codex backend refused the ChatGPT sign-in{status}: run `holon login \
                 openai-codex` again"
                ),
            }
        }
        FailureKind::AuthFailed => match &endpoint.api_key {
            Some(key) => format!("{m}: authentication failed{status}: check {}", key.env()),
            None => format!(
                "{m}: authentication failed{status}: the endpoint wants credentials; \
                 set api_key_env in [providers.{provider}]"
            ),
        },
        FailureKind::RateLimited => format!(
            "{m}: rate limited{status} after {tries}: wait and retry, or check the account's quota"
        ),
        FailureKind::ServerError => format!(
            "{m}: provider server error{status} after {tries}: the provider is having trouble; \
             retry later or configure a fallback model"
        ),
        FailureKind::Timeout => format!(
            "{m}: no complete response within {}s after {tries}: check the network and the \
             provider's status, or raise the request timeout",
            timeout.as_secs_f64()
        ),
        FailureKind::Connect => format!(
            "{m}: connection to {url} failed after {tries} ({}): check the network and {}",
            failure.detail, endpoint.base_url_source
        ),
        FailureKind::StreamInterrupted => format!(
            "{m}: the response from {url} was cut short after {tries} ({}): the connection \
             dropped mid-response; check the network and the provider's status",
            failure.detail
        ),
        FailureKind::ClientError => format!(
            "{m}: request rejected{status}{said}; check the model name and request settings"
        ),
        FailureKind::InvalidResponse => format!(
            "{m}: invalid response from {url} ({}); check that the endpoint speaks {}",
            failure.detail,
            endpoint.wire.as_str()
        ),
        FailureKind::UnsupportedTransport => format!(
            "{m}: endpoint does not support this request{status}; check that {url} speaks {}",
            endpoint.wire.as_str()
        ),
        FailureKind::ContextLengthExceeded => format!(
            "{m}: context length exceeded: the conversation no longer fits the model's context \
             window; compact the context or start a new work item"
        ),
        FailureKind::NotConfigured => format!("{m}: {}", failure.detail),
    }
}

/// What the chain knows about its last failed candidate.
#[derive(Debug, Clone)]
pub struct LastFailure {
    pub kind: FailureKind,
    pub model_ref: String,
    pub provider: String,
    pub status: Option<u16>,
    pub source_chain: Vec<String>,
    pub metadata: BTreeMap<String, String>,
}

/// The final failure of a round: every candidate's summary in order, the
/// kind and details of the last.
pub fn chain_failure(summaries: &[String], last: LastFailure) -> ProviderFailure {
    let summary = match summaries.split_first() {
        Some((first, rest)) => rest
            .iter()
            .fold(first.clone(), |acc, s| format!("{acc}; fallback {s}")),
        None => "no provider candidate was tried".to_owned(),
    };
    ProviderFailure {
        kind: last.kind,
        artifact: FailureArtifact {
            category: last.kind.category(),
            kind: artifact_kind(last.kind).to_owned(),
            summary,
            provider: Some(last.provider),
            model_ref: Some(last.model_ref),
            status: last.status,
            task_id: None,
            exit_status: None,
            source_chain: last.source_chain,
            metadata: last.metadata,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::provider::registry::ApiKey;
    use crate::runtime::provider::wire::{Streaming, WireFormat};

    fn endpoint(key: Option<ApiKey>) -> ResolvedEndpoint {
        ResolvedEndpoint {
            model_ref: ModelRef {
                provider: "openai".into(),
                model: "gpt-4.1".into(),
            },
            wire: WireFormat::OpenaiResponses,
            base_url: "https://api.openai.com/v1".into(),
            base_url_source: "built-in default".into(),
            api_key: key,
            streaming: Streaming::Off,
            reasoning_effort: None,
            images: true,
            codex: None,
        }
    }

    fn failure(kind: FailureKind, status: Option<u16>) -> AttemptFailure {
        AttemptFailure {
            kind,
            detail: "x".into(),
            status,
            in_band_after: None,
            retry_after: None,
            provider_message: Some("bad field".into()),
            diagnostics: TransportDiagnostics::default(),
        }
    }

    #[test]
    fn auth_summary_names_the_variable() {
        let ep = endpoint(Some(ApiKey::new("OPENAI_API_KEY", "sk-secret")));
        let s = candidate_summary(
            &ep,
            &failure(FailureKind::AuthFailed, Some(401)),
            1,
            Duration::from_secs(1),
        );
        assert_eq!(
            s,
            "openai/gpt-4.1: authentication failed (401): check OPENAI_API_KEY"
        );
        assert!(!s.contains("sk-secret"));
    }

    #[test]
    fn other_summaries_say_what_to_do() {
        let ep = endpoint(None);
        let t = Duration::from_secs(2);
        let s = candidate_summary(&ep, &failure(FailureKind::ServerError, Some(503)), 3, t);
        assert!(s.contains("(503) after 3 attempts"), "{s}");
        let s = candidate_summary(&ep, &failure(FailureKind::ClientError, Some(400)), 1, t);
        assert!(s.contains("rejected (400): bad field"), "{s}");
        let s = candidate_summary(
            &ep,
            &failure(FailureKind::ContextLengthExceeded, Some(400)),
            1,
            t,
        );
        assert!(s.contains("compact"), "{s}");
    }

    #[test]
    fn chain_failure_joins_candidates() {
        let f = chain_failure(
            &["a: x".to_owned(), "b: y".to_owned()],
            LastFailure {
                kind: FailureKind::ServerError,
                model_ref: "b".into(),
                provider: "p".into(),
                status: Some(500),
                source_chain: vec![],
                metadata: BTreeMap::new(),
            },
        );
        assert_eq!(f.artifact.summary, "a: x; fallback b: y");
        assert_eq!(f.artifact.kind, "provider_server_error");
    }
}
