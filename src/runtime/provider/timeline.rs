//! The attempt timeline's records: each attempt of the provider chain as
//! it is recorded (answered, failed, a candidate rejected before any
//! attempt), the round that won, what the turn is told of a retry, and
//! the chain's last failure.

use std::time::Instant;

use super::failure::{AttemptFailure, LastFailure};
use super::retry::{millis, now_ts, NextStep};
use super::{
    AttemptOutcome, ProviderAttemptRecord, ProviderAttemptTimeline, ProviderFailure,
    ProviderOutcome, ProviderRound, RetryNext, RetryNotice, TokenUsage, TransportDiagnostics,
};

/// The timeline's tokens, summed over its attempts.
pub(super) fn aggregate(timeline: &ProviderAttemptTimeline) -> Option<TokenUsage> {
    let mut total: Option<TokenUsage> = None;
    for usage in timeline
        .attempts
        .iter()
        .filter_map(|a| a.token_usage.as_ref())
    {
        total.get_or_insert_with(TokenUsage::default).add(usage);
    }
    total
}

/// A candidate the chain could not use, as the chain's last failure.
pub(super) fn rejected_failure(model_ref: &str, failure: &ProviderFailure) -> LastFailure {
    LastFailure {
        kind: failure.kind,
        model_ref: model_ref.to_owned(),
        provider: failure.artifact.provider.clone().unwrap_or_default(),
        status: None,
        source_chain: Vec::new(),
        metadata: failure.artifact.metadata.clone(),
    }
}

/// An attempt just answered (`clock` started when it was sent), as it is
/// recorded when it succeeded; a failure fills in the rest.
pub(super) fn attempt_record(
    endpoint: &super::registry::ResolvedEndpoint,
    (attempt, max_attempts): (u32, u32),
    started_at: String,
    clock: Instant,
) -> ProviderAttemptRecord {
    ProviderAttemptRecord {
        provider: endpoint.model_ref.provider.clone(),
        model_ref: endpoint.model_ref.to_string(),
        attempt,
        max_attempts,
        started_at: Some(started_at),
        completed_at: Some(now_ts()),
        duration_ms: Some(millis(clock.elapsed())),
        failure_kind: None,
        disposition: None,
        outcome: AttemptOutcome::Succeeded,
        advanced_to_fallback: false,
        backoff_ms: None,
        token_usage: None,
        transport_diagnostics: None,
    }
}

/// The round an attempt returned, with the timeline that won it.
pub(super) fn won(
    mut timeline: ProviderAttemptTimeline,
    mut record: ProviderAttemptRecord,
    parsed: super::wire::ParsedRound,
    model_ref: String,
) -> ProviderOutcome {
    record.disposition = Some("return_round".to_owned());
    record.token_usage = parsed.usage;
    timeline.attempts.push(record);
    timeline.winning_model_ref = Some(model_ref.clone());
    timeline.aggregated_token_usage = aggregate(&timeline);
    let round = ProviderRound {
        reasoning: parsed.reasoning,
        text: parsed.text,
        tool_calls: parsed.tool_calls,
        token_usage: parsed.usage,
        stop_reason: parsed.stop_reason,
        model_ref,
    };
    ProviderOutcome {
        result: Ok(round),
        timeline,
    }
}

/// What the turn is told of a failed attempt that is retried or handed to
/// the next candidate; none when the chain stops (the turn's failure
/// tells the rest).
pub(super) fn retry_notice(
    record: &ProviderAttemptRecord,
    failure: &AttemptFailure,
    next: NextStep,
) -> Option<RetryNotice> {
    let next = match next {
        NextStep::RetrySameCandidate => RetryNext::Retry,
        NextStep::AdvanceToFallback => RetryNext::Fallback,
        NextStep::StopChain => return None,
    };
    Some(RetryNotice {
        model_ref: record.model_ref.clone(),
        attempt: record.attempt,
        max_attempts: record.max_attempts,
        failure_kind: failure.kind,
        status: failure.status,
        next,
        backoff_ms: record.backoff_ms,
    })
}

/// A candidate rejected before any attempt (it could not be resolved),
/// as the timeline records it.
pub(super) fn rejected_record(
    model_ref: &str,
    failure: &ProviderFailure,
    outcome: AttemptOutcome,
    next: NextStep,
) -> ProviderAttemptRecord {
    let provider = failure.artifact.provider.clone().unwrap_or_default();
    ProviderAttemptRecord {
        provider: provider.clone(),
        model_ref: model_ref.to_owned(),
        attempt: 1,
        max_attempts: 1,
        started_at: None,
        completed_at: None,
        duration_ms: None,
        failure_kind: Some(failure.kind),
        disposition: Some(next.as_str().to_owned()),
        outcome,
        advanced_to_fallback: next == NextStep::AdvanceToFallback,
        backoff_ms: None,
        token_usage: None,
        transport_diagnostics: Some(TransportDiagnostics {
            stage: "candidate_selection".to_owned(),
            provider: Some(provider),
            model_ref: Some(model_ref.to_owned()),
            ..TransportDiagnostics::default()
        }),
    }
}

/// The chain's last failure, from a failed attempt at `endpoint`.
pub(super) fn last_failure(
    endpoint: &super::registry::ResolvedEndpoint,
    failure: &AttemptFailure,
    attempts: u32,
) -> LastFailure {
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("attempts".to_owned(), attempts.to_string());
    metadata.insert("stage".to_owned(), failure.diagnostics.stage.clone());
    metadata.insert("wire".to_owned(), endpoint.wire.as_str().to_owned());
    if let Some(url) = &failure.diagnostics.url {
        metadata.insert("url".to_owned(), url.clone());
    }
    if let Some(msg) = &failure.provider_message {
        metadata.insert("provider_message".to_owned(), msg.clone());
    }
    if let Some(status) = failure.in_band_after {
        metadata.insert("in_stream_after_http_status".to_owned(), status.to_string());
    }
    metadata.insert("detail".to_owned(), failure.detail.clone());
    LastFailure {
        kind: failure.kind,
        model_ref: endpoint.model_ref.to_string(),
        provider: endpoint.model_ref.provider.clone(),
        status: failure.status,
        source_chain: failure.diagnostics.source_chain.clone(),
        metadata,
    }
}
