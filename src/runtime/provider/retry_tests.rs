//! Retry, backoff and fallback decisions of the provider chain.

use super::*;

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(350),
        request_timeout: Duration::from_secs(1),
    }
}

#[test]
fn backoff_is_exponential_and_capped() {
    let p = policy();
    assert_eq!(backoff_delay(&p, 0, None), Duration::from_millis(100));
    assert_eq!(backoff_delay(&p, 1, None), Duration::from_millis(200));
    assert_eq!(backoff_delay(&p, 2, None), Duration::from_millis(350));
    assert_eq!(backoff_delay(&p, 40, None), Duration::from_millis(350));
}

#[test]
fn retry_after_is_honoured_but_capped() {
    let p = policy();
    assert_eq!(
        backoff_delay(&p, 0, Some(Duration::from_millis(20))),
        Duration::from_millis(20)
    );
    assert_eq!(
        backoff_delay(&p, 0, Some(Duration::from_secs(30))),
        Duration::from_millis(350)
    );
    assert_eq!(backoff_delay(&p, 1, Some(Duration::ZERO)), Duration::ZERO);
}

#[test]
fn default_policy_matches_spec() {
    let p = RetryPolicy::default();
    assert_eq!(p.max_retries, 2);
    assert_eq!(p.max_attempts(), 3);
}

#[test]
fn decisions() {
    use AttemptOutcome::*;
    use NextStep::*;
    let d = |k, a| decide(k, a, 3, Fallback::Available);
    assert_eq!(
        d(FailureKind::ServerError, 1),
        (Retrying, RetrySameCandidate)
    );
    assert_eq!(d(FailureKind::Timeout, 2), (Retrying, RetrySameCandidate));
    assert_eq!(
        d(FailureKind::RateLimited, 3),
        (RetriesExhausted, AdvanceToFallback)
    );
    assert_eq!(
        d(FailureKind::AuthFailed, 1),
        (FailFastAborted, AdvanceToFallback)
    );
    assert_eq!(
        d(FailureKind::InvalidResponse, 1),
        (FailFastAborted, AdvanceToFallback)
    );
    assert_eq!(
        d(FailureKind::ContextLengthExceeded, 1),
        (FailFastAborted, StopChain)
    );
    assert_eq!(
        decide(FailureKind::Connect, 3, 3, Fallback::None),
        (RetriesExhausted, StopChain)
    );
    assert_eq!(
        decide(FailureKind::ClientError, 1, 3, Fallback::None),
        (FailFastAborted, StopChain)
    );
}
