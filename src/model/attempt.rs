//! A provider attempt that failed while its turn runs, as clients are
//! told at once: the console says the turn is waiting on a retry (a rate
//! limit may hold it for a minute) instead of only "thinking". Transient:
//! the turn's provider-attempt timeline records every attempt for good.

use serde::{Deserialize, Serialize};

use super::usage::FailureKind;

/// What the chain does after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryNext {
    /// The same model again, after `backoff_ms`.
    Retry,
    /// The next configured model.
    Fallback,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryNotice {
    /// The model that failed.
    pub model_ref: String,
    /// Its attempt that failed (from 1) and how many it is given.
    pub attempt: u32,
    pub max_attempts: u32,
    pub failure_kind: FailureKind,
    /// The HTTP status, when the endpoint answered with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub next: RetryNext,
    /// How long the chain waits before it retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
}
