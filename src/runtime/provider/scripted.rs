//! A provider that answers from a script, for tests and for reproducing
//! turns without a model: each round pops the next scripted answer and
//! every request is recorded. When the script runs out it fails the round
//! (an honest `invalid_response`), so a test never hangs on it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{
    AttemptOutcome, BoxFuture, FailureArtifact, FailureKind, Provider, ProviderAttemptTimeline,
    ProviderFailure, ProviderOutcome, ProviderProgress, ProviderRequest, ProviderRound, TokenUsage,
    ToolCall,
};

/// One scripted answer.
#[derive(Clone)]
pub enum Scripted {
    Reply {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    Fail(FailureKind, String),
    /// Wait this long, then answer with the inner script entry.
    Delay(Duration, Box<Scripted>),
    /// Answer computed from the request, as a model reading its context
    /// would (e.g. to use an id the runtime just created).
    With(Arc<dyn Fn(&ProviderRequest) -> Scripted + Send + Sync>),
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scripted::Reply { text, tool_calls } => f
                .debug_struct("Reply")
                .field("text", text)
                .field("tool_calls", tool_calls)
                .finish(),
            Scripted::Fail(k, s) => f.debug_tuple("Fail").field(k).field(s).finish(),
            Scripted::Delay(d, inner) => f.debug_tuple("Delay").field(d).field(inner).finish(),
            Scripted::With(_) => f.write_str("With(..)"),
        }
    }
}

impl Scripted {
    pub fn text(t: &str) -> Scripted {
        Scripted::Reply {
            text: t.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    pub fn tools(text: &str, calls: &[(&str, serde_json::Value)]) -> Scripted {
        Scripted::Reply {
            text: text.to_owned(),
            tool_calls: calls
                .iter()
                .map(|(name, args)| ToolCall {
                    id: crate::new_id("call"),
                    name: (*name).to_owned(),
                    arguments: args.clone(),
                    malformed_arguments: None,
                })
                .collect(),
        }
    }
}

#[derive(Default)]
pub struct ScriptedProvider {
    script: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<ProviderRequest>>,
    window: Option<u64>,
    /// Keep no copy of the requests (a long simulation), only count them.
    forget: bool,
    served: std::sync::atomic::AtomicU64,
}

impl ScriptedProvider {
    pub fn new(script: impl IntoIterator<Item = Scripted>) -> ScriptedProvider {
        ScriptedProvider {
            script: Mutex::new(script.into_iter().collect()),
            requests: Mutex::default(),
            window: None,
            forget: false,
            served: Default::default(),
        }
    }

    /// Keep no copy of the requests, only their count (`served`): what a
    /// long simulation needs, whose memory is measured.
    pub fn forgetting(mut self) -> ScriptedProvider {
        self.forget = true;
        self
    }

    /// Requests answered so far.
    pub fn served(&self) -> u64 {
        self.served.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Pretend to be a model with this context window.
    pub fn with_context_window(mut self, window: u64) -> ScriptedProvider {
        self.window = Some(window);
        self
    }

    pub fn push(&self, s: Scripted) {
        self.script
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(s);
    }

    pub fn requests(&self) -> Vec<ProviderRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

fn failure(kind: FailureKind, summary: String) -> ProviderFailure {
    let wire = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut artifact = FailureArtifact::new(kind.category(), &wire, summary);
    artifact.provider = Some("scripted".into());
    artifact.model_ref = Some("scripted/test".into());
    ProviderFailure { kind, artifact }
}

impl Provider for ScriptedProvider {
    fn model_ref(&self) -> String {
        "scripted/test".into()
    }

    fn context_budget(&self) -> crate::model::context::ContextBudget {
        use crate::model::context::ContextBudget;
        use crate::model::context::WindowSource;
        match self.window {
            Some(w) => ContextBudget::new(w, WindowSource::ProviderConfig),
            None => ContextBudget::for_model(&self.model_ref()),
        }
    }

    fn round<'a>(
        &'a self,
        request: &'a ProviderRequest,
        progress: &'a (dyn Fn(ProviderProgress) + Send + Sync),
    ) -> BoxFuture<'a, ProviderOutcome> {
        Box::pin(async move {
            self.served
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if !self.forget {
                self.requests
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(request.clone());
            }
            let mut next = self
                .script
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front();
            loop {
                match next {
                    Some(Scripted::Delay(d, inner)) => {
                        tokio::time::sleep(d).await;
                        next = Some(*inner);
                    }
                    Some(Scripted::With(f)) => next = Some(f(request)),
                    other => {
                        next = other;
                        break;
                    }
                }
            }
            let usage = TokenUsage {
                input_tokens: 10,
                output_tokens: 5,
                total_tokens: 15,
                ..TokenUsage::default()
            };
            let (result, outcome, kind) = match next {
                Some(Scripted::Reply { text, tool_calls }) => {
                    if !text.is_empty() {
                        progress(ProviderProgress::TextDelta(text.clone()));
                    }
                    let round = ProviderRound {
                        reasoning: Vec::new(),
                        text,
                        tool_calls,
                        token_usage: Some(usage),
                        stop_reason: None,
                        model_ref: self.model_ref(),
                    };
                    (Ok(round), AttemptOutcome::Succeeded, None)
                }
                Some(Scripted::Fail(kind, summary)) => (
                    Err(failure(kind, summary)),
                    AttemptOutcome::FailFastAborted,
                    Some(kind),
                ),
                Some(Scripted::Delay(..)) | Some(Scripted::With(..)) | None => {
                    let k = FailureKind::InvalidResponse;
                    (
                        Err(failure(
                            k,
                            "the scripted provider has no answer left".into(),
                        )),
                        AttemptOutcome::FailFastAborted,
                        Some(k),
                    )
                }
            };
            let usage = result.as_ref().ok().and_then(|r| r.token_usage);
            let timeline =
                ProviderAttemptTimeline::single_attempt(&self.model_ref(), outcome, kind, usage);
            ProviderOutcome { result, timeline }
        })
    }
}
