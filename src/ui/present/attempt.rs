//! A failed provider attempt of a running turn in words: what the
//! console's working row and `holon tail` say while the turn waits on a
//! retry or moves to the next model. Pure.

use crate::model::attempt::{RetryNext, RetryNotice};
use crate::model::usage::FailureKind;

/// The failure in a few plain words.
pub fn failure_words(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::NotConfigured => "not configured",
        FailureKind::UnsupportedTransport => "unsupported transport",
        FailureKind::Timeout => "timed out",
        FailureKind::Connect => "could not connect",
        FailureKind::StreamInterrupted => "stream cut off",
        FailureKind::RateLimited => "rate limited",
        FailureKind::ServerError => "server error",
        FailureKind::AuthFailed => "not authorised",
        FailureKind::ClientError => "request refused",
        FailureKind::InvalidResponse => "unreadable answer",
        FailureKind::ContextLengthExceeded => "context too long",
    }
}

/// `rate limited (429) · retry 2 of 3 in 8s`; once the wait is over
/// (`left_ms` 0) `… · retry 2 of 3`; `left_ms` `None` says the wait as
/// the chain set it. A fallback: `openai/gpt-5: server error (503) ·
/// trying the next model`.
pub fn attempt_line(a: &RetryNotice, left_ms: Option<u64>) -> String {
    let mut what = failure_words(a.failure_kind).to_owned();
    if let Some(status) = a.status {
        what += &format!(" ({status})");
    }
    match a.next {
        RetryNext::Retry => {
            let next = a.attempt.saturating_add(1);
            let mut line = format!("{what} · retry {next} of {}", a.max_attempts.max(next));
            match left_ms.or(a.backoff_ms) {
                // Rounded up: "in 0s" would read as a stall.
                Some(ms) if ms > 0 => line += &format!(" in {}s", ms.div_ceil(1000)),
                _ => {}
            }
            line
        }
        RetryNext::Fallback => format!("{}: {what} · trying the next model", a.model_ref),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(kind: FailureKind, status: Option<u16>, next: RetryNext) -> RetryNotice {
        RetryNotice {
            model_ref: "openai/gpt-5".into(),
            attempt: 1,
            max_attempts: 3,
            failure_kind: kind,
            status,
            next,
            backoff_ms: Some(7_200),
        }
    }

    #[test]
    fn a_retry_says_why_which_attempt_and_how_long_it_waits() {
        let a = failed(FailureKind::RateLimited, Some(429), RetryNext::Retry);
        assert_eq!(
            attempt_line(&a, None),
            "rate limited (429) · retry 2 of 3 in 8s"
        );
        assert_eq!(
            attempt_line(&a, Some(400)),
            "rate limited (429) · retry 2 of 3 in 1s"
        );
        assert_eq!(
            attempt_line(&a, Some(0)),
            "rate limited (429) · retry 2 of 3"
        );
        let cut = failed(FailureKind::StreamInterrupted, None, RetryNext::Retry);
        assert_eq!(attempt_line(&cut, Some(0)), "stream cut off · retry 2 of 3");
    }

    #[test]
    fn a_fallback_names_the_model_that_failed() {
        let a = failed(FailureKind::ServerError, Some(503), RetryNext::Fallback);
        assert_eq!(
            attempt_line(&a, None),
            "openai/gpt-5: server error (503) · trying the next model"
        );
    }
}
