//! Turn cancellation: one handle per actor that the operator's abort, an
//! agent stop, a `holon run --timeout` deadline and runtime shutdown all go
//! through. A request is remembered (the turn sees it at its next safe
//! point) and also wakes whatever the turn is awaiting right now, so an
//! in-flight provider request is dropped at once instead of running to its
//! end. The first reason given wins until the next turn resets the handle.

use crate::protocol::payloads::CancelReason;

use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

impl CancelReason {
    fn code(self) -> u8 {
        match self {
            CancelReason::OperatorAbort => 1,
            CancelReason::AgentStopped => 2,
            CancelReason::RunTimeout => 3,
            CancelReason::RuntimeShutdown => 4,
            CancelReason::DailyBudget => 5,
        }
    }

    fn from_code(code: u8) -> Option<CancelReason> {
        match code {
            1 => Some(CancelReason::OperatorAbort),
            2 => Some(CancelReason::AgentStopped),
            3 => Some(CancelReason::RunTimeout),
            4 => Some(CancelReason::RuntimeShutdown),
            5 => Some(CancelReason::DailyBudget),
            _ => None,
        }
    }

    /// Completes "Turn ..." in the failure brief.
    pub fn describe(self) -> &'static str {
        match self {
            CancelReason::OperatorAbort => "aborted by the operator",
            CancelReason::AgentStopped => "aborted because the agent was stopped",
            CancelReason::RunTimeout => "cancelled: the run's --timeout ran out",
            CancelReason::RuntimeShutdown => {
                "interrupted by runtime shutdown; its message runs again when the runtime restarts"
            }
            CancelReason::DailyBudget => {
                "paused before its next model request: the agent reached its daily budget"
            }
        }
    }

    /// The wire name recorded on `turn_terminal` and `control_applied`.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::OperatorAbort => "operator_abort",
            CancelReason::AgentStopped => "agent_stopped",
            CancelReason::RunTimeout => "run_timeout",
            CancelReason::RuntimeShutdown => "runtime_shutdown",
            CancelReason::DailyBudget => "daily_budget",
        }
    }
}

/// The cancellation handle of one actor's turns.
#[derive(Debug, Default)]
pub struct TurnCancel {
    reason: AtomicU8,
    notify: Notify,
}

impl TurnCancel {
    /// Ask the current (or next started) turn to stop. The first reason
    /// since the last `reset` is kept.
    pub fn request(&self, reason: CancelReason) {
        let _ = self
            .reason
            .compare_exchange(0, reason.code(), Ordering::SeqCst, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// The pending request, if any.
    pub fn reason(&self) -> Option<CancelReason> {
        CancelReason::from_code(self.reason.load(Ordering::SeqCst))
    }

    /// Forget a request (a new turn starts clean), unless the runtime is
    /// shutting down: that one stays until the actor is gone.
    pub fn reset(&self) {
        let _ = self
            .reason
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                (CancelReason::from_code(c) != Some(CancelReason::RuntimeShutdown)).then_some(0)
            });
    }

    /// Resolves once a cancellation is requested (at once if one is
    /// pending).
    pub async fn cancelled(&self) -> CancelReason {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Register before checking, so a request between the check and
            // the await is not missed.
            notified.as_mut().enable();
            if let Some(r) = self.reason() {
                return r;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn first_reason_wins_and_shutdown_survives_reset() {
        let c = TurnCancel::default();
        assert_eq!(c.reason(), None);
        c.request(CancelReason::OperatorAbort);
        c.request(CancelReason::RunTimeout);
        assert_eq!(c.reason(), Some(CancelReason::OperatorAbort));
        c.reset();
        assert_eq!(c.reason(), None);
        c.request(CancelReason::RuntimeShutdown);
        c.reset();
        assert_eq!(c.reason(), Some(CancelReason::RuntimeShutdown));
    }

    #[tokio::test]
    async fn cancelled_wakes_a_waiter_and_returns_at_once_when_pending() {
        let c = Arc::new(TurnCancel::default());
        let waiter = tokio::spawn({
            let c = Arc::clone(&c);
            async move { c.cancelled().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        c.request(CancelReason::AgentStopped);
        let got = tokio::time::timeout(Duration::from_secs(1), waiter).await;
        assert!(matches!(got, Ok(Ok(CancelReason::AgentStopped))), "{got:?}");
        // Already pending: no wait at all.
        let again = tokio::time::timeout(Duration::from_millis(50), c.cancelled()).await;
        assert_eq!(again.ok(), Some(CancelReason::AgentStopped));
    }
}
