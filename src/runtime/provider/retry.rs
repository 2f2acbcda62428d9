//! Retry and fallback over provider candidates (spec: Provider Transport
//! Contract, retry policy and attempt timeline).
//!
//! [`ProviderChain`] implements [`Provider`] over an ordered list of
//! candidates (default model, then fallbacks). Each candidate gets up to
//! `max_retries` retries of retryable failures (timeout, connect, 429,
//! 500/502/503/504/529) with exponential backoff that honours `Retry-After`
//! capped at `max_backoff`; fail-fast failures abort only that candidate;
//! retries exhausted or fail-fast both advance to the next candidate;
//! `ContextLengthExceeded` stops the whole chain. Every attempt is recorded
//! in the [`ProviderAttemptTimeline`], including candidates rejected at
//! resolution. The decisions ([`backoff_delay`], [`decide`]) are pure.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::failure::{candidate_summary, chain_failure, LastFailure};
use super::http::HttpTransport;
use super::refusal::{has_reasoning, reasoning_refused, without_reasoning, Refused};
use super::timeline::{
    aggregate, attempt_record, last_failure, rejected_failure, rejected_record, retry_notice, won,
};
use super::wire::{ProgressSink, Streaming, WireFormat};
use super::{
    AttemptOutcome, BoxFuture, FailureKind, Provider, ProviderAttemptTimeline, ProviderFailure,
    ProviderOutcome, ProviderProgress, ProviderRequest, ReasoningEffort,
};

/// Retry budget, backoff and per-attempt timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt, per candidate.
    pub max_retries: u32,
    /// Backoff before retry `n` (0-based) is `base_backoff * 2^n`.
    pub base_backoff: Duration,
    /// Cap for computed backoff and for `Retry-After`.
    pub max_backoff: Duration,
    /// Bound on one attempt: connect, headers and the whole body.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            base_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            request_timeout: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    pub fn max_attempts(&self) -> u32 {
        self.max_retries.saturating_add(1)
    }
}

/// The wait before retry number `retry_index` (0 = first retry): the
/// server's `Retry-After` when given, else `base * 2^retry_index`; both
/// capped at `max_backoff`.
pub fn backoff_delay(
    policy: &RetryPolicy,
    retry_index: u32,
    retry_after: Option<Duration>,
) -> Duration {
    let wanted = match retry_after {
        Some(d) => d,
        None => policy
            .base_backoff
            .saturating_mul(2u32.saturating_pow(retry_index.min(16))),
    };
    wanted.min(policy.max_backoff)
}

/// Whether another candidate follows the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    Available,
    None,
}

/// What the chain does after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    RetrySameCandidate,
    AdvanceToFallback,
    StopChain,
}

impl NextStep {
    pub fn as_str(self) -> &'static str {
        match self {
            NextStep::RetrySameCandidate => "retry_same_provider",
            NextStep::AdvanceToFallback => "advance_to_fallback",
            NextStep::StopChain => "stop_chain",
        }
    }
}

/// The retry/fallback decision for a failed attempt (1-based `attempt`).
pub fn decide(
    kind: FailureKind,
    attempt: u32,
    max_attempts: u32,
    fallback: Fallback,
) -> (AttemptOutcome, NextStep) {
    let move_on = match fallback {
        Fallback::Available => NextStep::AdvanceToFallback,
        Fallback::None => NextStep::StopChain,
    };
    if kind == FailureKind::ContextLengthExceeded {
        return (AttemptOutcome::FailFastAborted, NextStep::StopChain);
    }
    match (kind.is_retryable(), attempt < max_attempts) {
        (true, true) => (AttemptOutcome::Retrying, NextStep::RetrySameCandidate),
        (true, false) => (AttemptOutcome::RetriesExhausted, move_on),
        (false, _) => (AttemptOutcome::FailFastAborted, move_on),
    }
}

/// One entry of a chain.
#[derive(Debug, Clone)]
pub enum ChainCandidate {
    Ready(HttpTransport),
    /// Failed resolution (missing key, unsupported transport): recorded as a
    /// fail-fast attempt each round, then the chain moves on.
    Rejected {
        model_ref: String,
        failure: ProviderFailure,
    },
}

/// How a candidate looks to `provider_doctor` and the like.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateStatus {
    pub model_ref: String,
    pub state: CandidateState,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CandidateState {
    Ready {
        wire: WireFormat,
        url: String,
        streaming: Streaming,
    },
    Rejected {
        kind: FailureKind,
        summary: String,
    },
}

/// A [`Provider`] with retry and fallback over its candidates.
#[derive(Debug, Clone)]
pub struct ProviderChain {
    requested: String,
    candidates: Vec<ChainCandidate>,
    policy: RetryPolicy,
    /// The window the operator set for every model (`HOLON_CONTEXT_WINDOW`,
    /// `[model] context_window`): nothing is asked then.
    budget: Option<crate::model::context::ContextBudget>,
    /// Each model's own window (its endpoint's `context_window`, else the
    /// catalog's, else the default), in chain order.
    windows: Vec<(String, crate::model::context::ContextBudget)>,
    /// What models' servers said of their windows: model ref -> (the
    /// window, if one was said; when to ask again, ms).
    learned: Arc<std::sync::Mutex<Learned>>,
}

/// Model ref -> (the window its server said, if any; when to ask again, ms).
type Learned = std::collections::BTreeMap<String, (Option<u64>, i64)>;

pub(super) fn now_ts() -> String {
    crate::format_ts(crate::now_ms())
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl ProviderChain {
    pub fn new(
        requested: String,
        candidates: Vec<ChainCandidate>,
        policy: RetryPolicy,
    ) -> ProviderChain {
        ProviderChain {
            requested,
            candidates,
            policy,
            budget: None,
            windows: Vec::new(),
            learned: Arc::default(),
        }
    }

    /// Each model's own window, in chain order (the smallest applies).
    pub fn with_model_windows(
        mut self,
        windows: Vec<(String, crate::model::context::ContextBudget)>,
    ) -> ProviderChain {
        self.windows = windows;
        self
    }

    /// Set the context window every request of this chain must fit.
    pub fn with_context_budget(
        mut self,
        budget: crate::model::context::ContextBudget,
    ) -> ProviderChain {
        self.budget = Some(budget);
        self
    }

    /// Ask every endpoint of the chain that takes it, and has no effort
    /// of its own, for `effort` (`[model] reasoning_effort`).
    pub fn with_reasoning_effort(mut self, effort: Option<ReasoningEffort>) -> ProviderChain {
        for candidate in &mut self.candidates {
            if let ChainCandidate::Ready(transport) = candidate {
                transport.endpoint_mut().default_reasoning_effort(effort);
            }
        }
        self
    }

    /// The agent's own effort, asked of every endpoint that takes one or
    /// was configured with one.
    pub fn with_agent_effort(mut self, effort: ReasoningEffort) -> ProviderChain {
        for candidate in &mut self.candidates {
            if let ChainCandidate::Ready(transport) = candidate {
                let endpoint = transport.endpoint_mut();
                if endpoint.takes_reasoning_effort() || endpoint.reasoning_effort.is_some() {
                    endpoint.reasoning_effort = Some(effort);
                }
            }
        }
        self
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub fn describe(&self) -> Vec<CandidateStatus> {
        self.candidates
            .iter()
            .map(|c| match c {
                ChainCandidate::Ready(t) => CandidateStatus {
                    model_ref: t.endpoint().model_ref.to_string(),
                    state: CandidateState::Ready {
                        wire: t.endpoint().wire,
                        url: super::classify::scrub_url(&t.endpoint().url()),
                        streaming: t.endpoint().streaming,
                    },
                },
                ChainCandidate::Rejected { model_ref, failure } => CandidateStatus {
                    model_ref: model_ref.clone(),
                    state: CandidateState::Rejected {
                        kind: failure.kind,
                        summary: failure.artifact.summary.clone(),
                    },
                },
            })
            .collect()
    }

    async fn run(&self, request: &ProviderRequest, progress: ProgressSink<'_>) -> ProviderOutcome {
        let mut timeline = ProviderAttemptTimeline {
            requested_model_ref: self.requested.clone(),
            ..ProviderAttemptTimeline::default()
        };
        let mut summaries = Vec::new();
        let mut last: Option<LastFailure> = None;
        let count = self.candidates.len();
        'candidates: for (index, candidate) in self.candidates.iter().enumerate() {
            let fallback = if index + 1 < count {
                Fallback::Available
            } else {
                Fallback::None
            };
            let transport = match candidate {
                ChainCandidate::Ready(t) => t,
                ChainCandidate::Rejected { model_ref, failure } => {
                    let (outcome, next) = decide(failure.kind, 1, 1, fallback);
                    timeline
                        .attempts
                        .push(rejected_record(model_ref, failure, outcome, next));
                    summaries.push(failure.artifact.summary.clone());
                    last = Some(rejected_failure(model_ref, failure));
                    continue;
                }
            };
            let endpoint = transport.endpoint();
            let model_ref = endpoint.model_ref.to_string();
            timeline.active_model_ref = Some(model_ref.clone());
            let max_attempts = self.policy.max_attempts();
            // A request the endpoint refused for its reasoning is sent once
            // more without it (the same attempt number).
            let mut degraded: Option<ProviderRequest> = None;
            let mut attempt = 0;
            while attempt < max_attempts {
                attempt += 1;
                let started_at = now_ts();
                let clock = Instant::now();
                let sent = degraded.as_ref().unwrap_or(request);
                progress(ProviderProgress::AttemptStarted);
                let result = transport
                    .send(sent, progress, self.policy.request_timeout)
                    .await;
                let mut record =
                    attempt_record(endpoint, (attempt, max_attempts), started_at, clock);
                let failure = match result {
                    Ok(parsed) => return won(timeline, record, parsed, model_ref),
                    Err(f) => f,
                };
                let refused = match failure.kind {
                    FailureKind::ClientError => reasoning_refused(
                        &failure.detail,
                        transport.reasoning_effort().is_some(),
                        degraded.is_none() && has_reasoning(sent),
                    ),
                    _ => None,
                };
                if let Some(what) = refused {
                    tracing::warn!(
                        model_ref = %model_ref,
                        detail = %failure.detail,
                        "the provider refused the request's {}; sending it once more without",
                        what.words()
                    );
                    match what {
                        Refused::Effort => transport.refuse_effort(),
                        Refused::Reasoning => degraded = Some(without_reasoning(request)),
                    }
                    record.failure_kind = Some(failure.kind);
                    record.outcome = AttemptOutcome::Retrying;
                    record.disposition = Some(what.disposition().to_owned());
                    record.transport_diagnostics = Some(failure.diagnostics.clone());
                    timeline.attempts.push(record);
                    attempt -= 1;
                    continue;
                }
                let (outcome, next) = decide(failure.kind, attempt, max_attempts, fallback);
                tracing::warn!(
                    model_ref = %model_ref,
                    attempt,
                    kind = ?failure.kind,
                    status = ?failure.status,
                    next = next.as_str(),
                    detail = %failure.detail,
                    "provider attempt failed"
                );
                record.failure_kind = Some(failure.kind);
                record.outcome = outcome;
                record.disposition = Some(next.as_str().to_owned());
                record.advanced_to_fallback = next == NextStep::AdvanceToFallback;
                record.transport_diagnostics = Some(failure.diagnostics.clone());
                let backoff = match next {
                    NextStep::RetrySameCandidate => Some(backoff_delay(
                        &self.policy,
                        attempt - 1,
                        failure.retry_after,
                    )),
                    NextStep::AdvanceToFallback | NextStep::StopChain => None,
                };
                record.backoff_ms = backoff.map(millis);
                if let Some(notice) = retry_notice(&record, &failure, next) {
                    progress(ProviderProgress::Retrying(notice));
                }
                timeline.attempts.push(record);
                if let Some(wait) = backoff {
                    tokio::time::sleep(wait).await;
                    continue;
                }
                let timeout = self.policy.request_timeout;
                summaries.push(candidate_summary(endpoint, &failure, attempt, timeout));
                last = Some(last_failure(endpoint, &failure, attempt));
                match next {
                    NextStep::StopChain => break 'candidates,
                    NextStep::AdvanceToFallback | NextStep::RetrySameCandidate => {
                        continue 'candidates
                    }
                }
            }
        }
        timeline.aggregated_token_usage = aggregate(&timeline);
        let failure = match last {
            Some(last) => chain_failure(&summaries, last),
            None => super::not_configured_failure(),
        };
        ProviderOutcome {
            result: Err(failure),
            timeline,
        }
    }
}

impl Provider for ProviderChain {
    fn model_ref(&self) -> String {
        self.requested.clone()
    }

    fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        self.candidates.iter().find_map(|c| match c {
            ChainCandidate::Ready(t) => Some(t.reasoning_effort()),
            ChainCandidate::Rejected { .. } => None,
        })?
    }

    fn prompt_capabilities(&self) -> Vec<&'static str> {
        self.candidates
            .iter()
            .find_map(|c| match c {
                ChainCandidate::Ready(t) => Some(t.endpoint().wire.prompt_capabilities().to_vec()),
                ChainCandidate::Rejected { .. } => None,
            })
            .unwrap_or_else(|| vec!["full_request_only"])
    }

    fn fallback_models(&self) -> Vec<String> {
        self.candidates
            .iter()
            .skip(1)
            .map(|c| match c {
                ChainCandidate::Ready(t) => t.endpoint().model_ref.to_string(),
                ChainCandidate::Rejected { model_ref, .. } => model_ref.clone(),
            })
            .collect()
    }

    fn context_budget(&self) -> crate::model::context::ContextBudget {
        use crate::model::context::ContextBudget;
        use crate::model::context::WindowSource;
        if let Some(b) = self.budget {
            return b;
        }
        // Every model of the chain may answer: fit the smallest window,
        // taking what a server said over the catalog's guess.
        let learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        self.windows
            .iter()
            .map(|(r, own)| match learned.get(r) {
                Some((Some(w), _)) if own.source != WindowSource::ProviderConfig => {
                    ContextBudget::new(*w, WindowSource::Server)
                }
                _ => *own,
            })
            .min_by_key(|b| b.window)
            .unwrap_or_else(|| ContextBudget::for_model(&self.requested))
    }

    fn window_questions(&self, now_ms: i64) -> Vec<super::WindowQuestion> {
        use crate::model::context::WindowSource;
        if self.budget.is_some() {
            return Vec::new();
        }
        let learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        self.candidates
            .iter()
            .filter_map(|c| match c {
                ChainCandidate::Ready(t) => Some(t.endpoint()),
                ChainCandidate::Rejected { .. } => None,
            })
            .filter(|e| {
                let r = e.model_ref.to_string();
                let own = self.windows.iter().find(|(m, _)| *m == r).map(|(_, b)| b);
                own.is_none_or(|b| b.source != WindowSource::ProviderConfig)
                    && learned.get(&r).is_none_or(|(_, until)| *until <= now_ms)
            })
            .filter_map(|e| {
                super::window_ask::window_ask_for(e).map(|ask| super::WindowQuestion {
                    model_ref: e.model_ref.to_string(),
                    ask,
                })
            })
            .collect()
    }

    fn ask_window<'a>(
        &'a self,
        question: &'a super::WindowQuestion,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move {
            let transport = self.candidates.iter().find_map(|c| match c {
                ChainCandidate::Ready(t)
                    if t.endpoint().model_ref.to_string() == question.model_ref =>
                {
                    Some(t)
                }
                _ => None,
            });
            match transport {
                Some(t) => {
                    super::window_ask::ask_window(t.client(), t.endpoint(), &question.ask).await
                }
                None => Err(format!("{} is not part of this chain", question.model_ref)),
            }
        })
    }

    fn learn_window(&self, model_ref: &str, window: Option<u64>, until_ms: i64) {
        let mut learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        learned.insert(model_ref.to_owned(), (window, until_ms));
    }

    fn round<'a>(
        &'a self,
        request: &'a ProviderRequest,
        progress: &'a (dyn Fn(ProviderProgress) + Send + Sync),
    ) -> BoxFuture<'a, ProviderOutcome> {
        Box::pin(self.run(request, progress))
    }
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
