//! What a round's answer streams while the provider writes it: the live
//! preview for consoles, numbered by the run's provider attempt so a
//! retry or a fallback model starts it over, and the text kept when the
//! turn is cut off (`turn_terminal.partial_answer`); and, while the chain
//! waits to retry a failed attempt or moves to the next model, a notice
//! of that.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::runtime::handle::LiveUpdate;
use crate::runtime::provider::ProviderProgress;

/// How much of a cut-off answer is kept for the operator.
const PARTIAL_BYTES: usize = 16 * 1024;

/// One provider call's stream (a round, or its second pass after "prompt
/// too long"). `attempts` is the run's: each call, and each attempt after
/// a call's first, gets the next number.
pub(super) struct Stream {
    live: broadcast::Sender<LiveUpdate>,
    agent_id: String,
    run_id: String,
    attempts: Arc<AtomicU32>,
    current: Mutex<Current>,
}

/// The attempt streaming now.
struct Current {
    attempt: u32,
    /// Nothing has happened in this call yet: its first attempt keeps
    /// the number the call was given.
    fresh: bool,
    /// What the attempt streamed (at most `PARTIAL_BYTES`).
    text: String,
}

impl Stream {
    pub(super) fn new(
        live: broadcast::Sender<LiveUpdate>,
        agent_id: &str,
        run_id: &str,
        attempts: Arc<AtomicU32>,
    ) -> Stream {
        let attempt = attempts.fetch_add(1, Ordering::Relaxed) + 1;
        Stream {
            live,
            agent_id: agent_id.to_owned(),
            run_id: run_id.to_owned(),
            attempts,
            current: Mutex::new(Current {
                attempt,
                fresh: true,
                text: String::new(),
            }),
        }
    }

    /// Take the provider's progress: an attempt that starts forgets what
    /// the one before streamed; text is kept and sent on.
    pub(super) fn progress(&self, p: ProviderProgress) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        match p {
            ProviderProgress::AttemptStarted if current.fresh => current.fresh = false,
            ProviderProgress::AttemptStarted => {
                current.attempt = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
                current.text.clear();
                // Consoles start the answer over now, not at the new
                // attempt's first text (it may write none).
                let _ = self.live.send(LiveUpdate::AssistantDelta {
                    agent_id: self.agent_id.clone(),
                    run_id: self.run_id.clone(),
                    attempt: current.attempt,
                    text: String::new(),
                });
            }
            ProviderProgress::TextDelta(text) => {
                current.fresh = false;
                // At most `PARTIAL_BYTES`, cut at a character.
                let room = PARTIAL_BYTES.saturating_sub(current.text.len());
                let mut end = room.min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                current.text.push_str(&text[..end]);
                let _ = self.live.send(LiveUpdate::AssistantDelta {
                    agent_id: self.agent_id.clone(),
                    run_id: self.run_id.clone(),
                    attempt: current.attempt,
                    text,
                });
            }
            ProviderProgress::Retrying(notice) => {
                // What the failed attempt wrote is not the answer: consoles
                // drop it now, and an abort while the chain waits keeps
                // none of it.
                current.text.clear();
                let _ = self.live.send(LiveUpdate::ProviderRetry {
                    agent_id: self.agent_id.clone(),
                    run_id: self.run_id.clone(),
                    attempt: current.attempt,
                    notice,
                });
            }
        }
    }

    /// The run's number of the attempt streaming now (the last one, once
    /// the call has answered).
    pub(super) fn attempt(&self) -> u32 {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .attempt
    }

    /// What the current attempt streamed, if anything but blanks.
    pub(super) fn partial(&self) -> Option<String> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let text = &current.text;
        (!text.trim().is_empty()).then(|| text.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> (Stream, broadcast::Receiver<LiveUpdate>, Arc<AtomicU32>) {
        let (live, rx) = broadcast::channel(64);
        let attempts = Arc::new(AtomicU32::new(0));
        let s = Stream::new(live, "main", "run_1", Arc::clone(&attempts));
        (s, rx, attempts)
    }

    fn attempts_of(s: &Stream) -> Arc<AtomicU32> {
        Arc::clone(&s.attempts)
    }

    fn sent(rx: &mut broadcast::Receiver<LiveUpdate>) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        while let Ok(LiveUpdate::AssistantDelta { attempt, text, .. }) = rx.try_recv() {
            out.push((attempt, text));
        }
        out
    }

    #[test]
    fn a_retry_starts_the_answer_over() {
        let (s, mut rx, attempts) = stream();
        s.progress(ProviderProgress::AttemptStarted);
        s.progress(ProviderProgress::TextDelta("Hello wor".into()));
        s.progress(ProviderProgress::AttemptStarted);
        assert_eq!(s.partial(), None, "the cut attempt's text is not kept");
        s.progress(ProviderProgress::TextDelta("Hel".into()));
        assert_eq!(s.partial().as_deref(), Some("Hel"));
        assert_eq!(
            sent(&mut rx),
            [
                (1, "Hello wor".to_owned()),
                (2, String::new()),
                (2, "Hel".to_owned())
            ],
            "consoles hear of the new attempt before its text"
        );
        assert_eq!((attempts.load(Ordering::Relaxed), s.attempt()), (2, 2));
    }

    #[test]
    fn attempts_are_numbered_across_the_run() {
        let (first, mut rx, attempts) = stream();
        first.progress(ProviderProgress::AttemptStarted);
        first.progress(ProviderProgress::TextDelta("a".into()));
        // The next round: its first attempt gets the next number.
        let second = Stream::new(first.live.clone(), "main", "run_1", attempts);
        second.progress(ProviderProgress::AttemptStarted);
        second.progress(ProviderProgress::TextDelta("b".into()));
        // A provider that never says when an attempt starts (scripted).
        let third = Stream::new(first.live.clone(), "main", "run_1", attempts_of(&second));
        third.progress(ProviderProgress::TextDelta("c".into()));
        assert_eq!(
            sent(&mut rx),
            [
                (1, "a".to_owned()),
                (2, "b".to_owned()),
                (3, "c".to_owned())
            ]
        );
    }

    #[test]
    fn a_failed_attempt_is_told_and_its_text_is_not_kept() {
        use crate::model::attempt::{RetryNext, RetryNotice};
        let (s, mut rx, _) = stream();
        s.progress(ProviderProgress::AttemptStarted);
        s.progress(ProviderProgress::TextDelta("An early draft".into()));
        let notice = RetryNotice {
            model_ref: "s/m".into(),
            attempt: 1,
            max_attempts: 3,
            failure_kind: crate::model::usage::FailureKind::StreamInterrupted,
            status: None,
            next: RetryNext::Retry,
            backoff_ms: Some(1_000),
        };
        s.progress(ProviderProgress::Retrying(notice.clone()));
        // Cut off while the chain waits: nothing of the failed attempt.
        assert_eq!(s.partial(), None);
        let _delta = rx.try_recv();
        match rx.try_recv() {
            Ok(LiveUpdate::ProviderRetry {
                attempt, notice: n, ..
            }) => {
                assert_eq!((attempt, n), (1, notice), "the run's attempt that failed");
            }
            other => panic!("no retry notice: {other:?}"),
        }
    }

    #[test]
    fn the_kept_text_is_bounded_at_a_character() {
        let (s, _rx, _) = stream();
        s.progress(ProviderProgress::AttemptStarted);
        s.progress(ProviderProgress::TextDelta("é".repeat(PARTIAL_BYTES)));
        let kept = s.partial().expect("kept");
        assert_eq!(kept.len(), PARTIAL_BYTES);
        assert!(kept.chars().all(|c| c == 'é'));
    }
}
