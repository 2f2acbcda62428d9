//! Continuation resolution (spec "Continuation Resolution"): given the
//! closure that existed before a trigger became the active run, classify
//! the trigger as `resume_expected_wait`, `resume_override`,
//! `local_continuation` or `liveness_only`, and say whether it is model
//! visible. Pure; the scheduler owns the final StartModelTurn versus
//! ReduceMessageOnly decision and uses `model_visible` for it.
//!
//! Invariants: a mismatched trigger never satisfies an unrelated waiting
//! reason and stays liveness-only (recorded in evidence); `operator_input`
//! is the only default override; observational messages (`task_status`,
//! `control`, brief acknowledgements) never continue; plain wake hints are
//! liveness signals. Runtime-owned work-queue ticks and internal follow-ups
//! are local continuations that never claim to satisfy a wait. Also owns
//! the system-tick metadata (`tick_reason`, `idempotency_key`) so tick
//! producers and classifiers agree on it.

use crate::model::decision::SystemTickReason;

use serde::{Deserialize, Serialize};

use crate::model::decision::ClosureDecision;
use crate::model::decision::ClosureOutcome;
use crate::model::message::{MessageBody, MessageEnvelope, MessageKind, TriggerKind};
use crate::model::waiting::WaitingReason;

/// Metadata key on a system-tick envelope naming why it was emitted.
pub const TICK_REASON_KEY: &str = "tick_reason";
/// Metadata key on a system-tick envelope holding its idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency_key";

/// The metadata object to put on a system-tick envelope.
pub fn system_tick_metadata(reason: SystemTickReason, idempotency_key: &str) -> serde_json::Value {
    serde_json::json!({ TICK_REASON_KEY: reason.as_str(), IDEMPOTENCY_KEY: idempotency_key })
}

/// The tick reason recorded on a system-tick envelope, if any.
pub fn tick_reason_of(envelope: &MessageEnvelope) -> Option<SystemTickReason> {
    envelope
        .metadata
        .as_ref()
        .and_then(|m| m.get(TICK_REASON_KEY))
        .and_then(serde_json::Value::as_str)
        .and_then(SystemTickReason::parse)
}

/// The idempotency key recorded on an envelope, if any.
pub fn tick_key_of(envelope: &MessageEnvelope) -> Option<&str> {
    envelope
        .metadata
        .as_ref()
        .and_then(|m| m.get(IDEMPOTENCY_KEY))
        .and_then(serde_json::Value::as_str)
}

/// Whether the trigger carries content the model could act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerContent {
    Contentful,
    Empty,
}

impl TriggerContent {
    pub fn of_body(body: &MessageBody) -> Self {
        let contentful = match body {
            MessageBody::Text { text } | MessageBody::Brief { text, .. } => !text.trim().is_empty(),
            MessageBody::Json { value } => !value.is_null(),
        };
        if contentful {
            TriggerContent::Contentful
        } else {
            TriggerContent::Empty
        }
    }
}

/// Where a trigger came from, as far as continuation policy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerProvenance {
    /// An ordinary admitted message of its trigger kind.
    Admitted,
    /// `task_status`, `control`, `brief_ack`, `brief_result`: never a
    /// continuation by themselves.
    Observational,
    /// A runtime-owned work-queue tick (continue_active, queued_available).
    WorkQueueTick,
    /// A system tick converted from a pending wake hint not tied to a
    /// wait (a liveness signal: it satisfies no external wait).
    WakeHintTick,
    /// A system tick converted from a wake hint tied to the waiting intent
    /// it satisfied (a matching trigger delivery).
    WaitingIntentWake,
    /// A runtime-owned `internal_followup` intended for the model.
    RuntimeFollowup,
    /// The operator's answer to an approval, carried to the model as an
    /// `internal_followup` (it satisfies the operator wait it answers).
    ApprovalAnswer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContinuationTrigger {
    pub kind: TriggerKind,
    pub content: TriggerContent,
    pub provenance: TriggerProvenance,
}

impl ContinuationTrigger {
    /// Classify an admitted envelope.
    pub fn from_envelope(envelope: &MessageEnvelope) -> Self {
        let provenance = match envelope.kind {
            MessageKind::TaskStatus
            | MessageKind::Control
            | MessageKind::BriefAck
            | MessageKind::BriefResult => TriggerProvenance::Observational,
            MessageKind::InternalFollowup if envelope.source_refs.contains_key("approval_id") => {
                TriggerProvenance::ApprovalAnswer
            }
            MessageKind::InternalFollowup => TriggerProvenance::RuntimeFollowup,
            MessageKind::SystemTick => match tick_reason_of(envelope) {
                Some(SystemTickReason::WakeHint)
                    if envelope.source_refs.contains_key("waiting_intent_id") =>
                {
                    TriggerProvenance::WaitingIntentWake
                }
                Some(SystemTickReason::WakeHint) => TriggerProvenance::WakeHintTick,
                Some(SystemTickReason::ContinueActive | SystemTickReason::QueuedAvailable) => {
                    TriggerProvenance::WorkQueueTick
                }
                None => TriggerProvenance::Admitted,
            },
            MessageKind::OperatorPrompt
            | MessageKind::ChannelEvent
            | MessageKind::WebhookEvent
            | MessageKind::CallbackEvent
            | MessageKind::TimerTick
            | MessageKind::TaskResult => TriggerProvenance::Admitted,
        };
        ContinuationTrigger {
            kind: envelope.kind.trigger_kind(),
            content: TriggerContent::of_body(&envelope.body),
            provenance,
        }
    }

    /// Content gates model visibility only for external events and system
    /// ticks other than work-queue ticks (which exist to make runnable work
    /// model-reentry); operator input, task results, timer fires and
    /// follow-ups are model-visible by kind.
    fn content_allows_model(&self) -> bool {
        if self.provenance == TriggerProvenance::WorkQueueTick {
            return true;
        }
        match self.kind {
            TriggerKind::ExternalEvent | TriggerKind::SystemTick => {
                self.content == TriggerContent::Contentful
            }
            TriggerKind::OperatorInput
            | TriggerKind::TaskResult
            | TriggerKind::TimerFire
            | TriggerKind::InternalFollowup => true,
        }
    }

    /// Whether this trigger is the kind that satisfies `reason`.
    fn satisfies(&self, reason: WaitingReason) -> bool {
        match reason {
            WaitingReason::AwaitingOperatorInput => {
                self.kind == TriggerKind::OperatorInput
                    || self.provenance == TriggerProvenance::ApprovalAnswer
            }
            WaitingReason::AwaitingTaskResult => self.kind == TriggerKind::TaskResult,
            WaitingReason::AwaitingTimer => self.kind == TriggerKind::TimerFire,
            WaitingReason::AwaitingExternalChange => {
                self.kind == TriggerKind::ExternalEvent
                    || self.provenance == TriggerProvenance::WaitingIntentWake
            }
        }
    }
}

/// `ContinuationResolution.class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContinuationClass {
    ResumeExpectedWait,
    ResumeOverride,
    LocalContinuation,
    LivenessOnly,
}

impl ContinuationClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ContinuationClass::ResumeExpectedWait => "resume_expected_wait",
            ContinuationClass::ResumeOverride => "resume_override",
            ContinuationClass::LocalContinuation => "local_continuation",
            ContinuationClass::LivenessOnly => "liveness_only",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinuationResolution {
    pub trigger_kind: TriggerKind,
    pub class: ContinuationClass,
    pub model_visible: bool,
    pub prior_closure_outcome: ClosureOutcome,
    pub prior_waiting_reason: Option<WaitingReason>,
    pub matched_waiting_reason: bool,
    pub evidence: Vec<String>,
}

fn trigger_label(kind: TriggerKind) -> &'static str {
    match kind {
        TriggerKind::OperatorInput => "operator_input",
        TriggerKind::TaskResult => "task_result",
        TriggerKind::ExternalEvent => "external_event",
        TriggerKind::TimerFire => "timer_fire",
        TriggerKind::InternalFollowup => "internal_followup",
        TriggerKind::SystemTick => "system_tick",
    }
}

/// The waiting-reason vocabulary as written in evidence.
pub fn waiting_reason_label(reason: WaitingReason) -> &'static str {
    match reason {
        WaitingReason::AwaitingOperatorInput => "awaiting_operator_input",
        WaitingReason::AwaitingExternalChange => "awaiting_external_change",
        WaitingReason::AwaitingTaskResult => "awaiting_task_result",
        WaitingReason::AwaitingTimer => "awaiting_timer",
    }
}

/// Whether a message settled without a turn carries content the model
/// must still see (invariant: liveness-only means it starts no turn,
/// never that its content may be lost). That is a message with content of
/// its own: admitted (a command's or a child's result, an external event,
/// a timer the model set), an approval's answer (the outcome of a granted
/// call, or a denial), or the wake of a wait the model recorded; one that
/// did not match what the agent waited for (`mismatched_trigger`, only
/// ever said of a contentful trigger). Observational messages, empty wake
/// signals and the runtime's own ticks are liveness alone: a tick for a
/// trigger delivery the agent did not wait for names a delivery (recorded
/// for the operator), which the model asked to be woken for only when it
/// matches.
pub fn carried_for_model(trigger: &ContinuationTrigger, evidence: &[String]) -> bool {
    let contentful = match trigger.provenance {
        TriggerProvenance::Admitted
        | TriggerProvenance::ApprovalAnswer
        | TriggerProvenance::WaitingIntentWake => true,
        TriggerProvenance::Observational
        | TriggerProvenance::WakeHintTick
        | TriggerProvenance::WorkQueueTick
        | TriggerProvenance::RuntimeFollowup => false,
    };
    contentful
        && evidence
            .iter()
            .any(|e| e.starts_with("mismatched_trigger:"))
}

/// Resolve a trigger against the closure that existed before it ran.
pub fn resolve_continuation(
    trigger: &ContinuationTrigger,
    prior: &ClosureDecision,
) -> ContinuationResolution {
    let mut evidence = vec![
        format!("trigger:{}", trigger_label(trigger.kind)),
        format!("prior_closure:{}", prior.outcome.as_str()),
    ];
    let waiting = match (prior.outcome, prior.waiting_reason) {
        (ClosureOutcome::Waiting, Some(reason)) => Some(reason),
        (ClosureOutcome::Waiting, None)
        | (ClosureOutcome::Completed, _)
        | (ClosureOutcome::Continuable, _)
        | (ClosureOutcome::Failed, _) => None,
    };
    let matched = waiting.is_some_and(|reason| trigger.satisfies(reason));
    let class = classify(trigger, waiting, matched, &mut evidence);
    ContinuationResolution {
        trigger_kind: trigger.kind,
        class,
        model_visible: class != ContinuationClass::LivenessOnly,
        prior_closure_outcome: prior.outcome,
        prior_waiting_reason: prior.waiting_reason,
        matched_waiting_reason: matched,
        evidence,
    }
}

fn classify(
    trigger: &ContinuationTrigger,
    waiting: Option<WaitingReason>,
    matched: bool,
    evidence: &mut Vec<String>,
) -> ContinuationClass {
    if trigger.provenance == TriggerProvenance::Observational {
        evidence.push("observational_message".to_owned());
        return ContinuationClass::LivenessOnly;
    }
    if !trigger.content_allows_model() {
        evidence.push("trigger_not_contentful".to_owned());
        if let Some(reason) = waiting.filter(|_| matched) {
            evidence.push(format!("liveness_for:{}", waiting_reason_label(reason)));
        }
        return ContinuationClass::LivenessOnly;
    }
    let Some(reason) = waiting else {
        return ContinuationClass::LocalContinuation;
    };
    let label = waiting_reason_label(reason);
    if matched {
        evidence.push(format!("matched_waiting_reason:{label}"));
        return ContinuationClass::ResumeExpectedWait;
    }
    match trigger.provenance {
        TriggerProvenance::WorkQueueTick | TriggerProvenance::RuntimeFollowup => {
            evidence.push(format!(
                "runtime_owned_continuation_does_not_satisfy:{label}"
            ));
            return ContinuationClass::LocalContinuation;
        }
        TriggerProvenance::Admitted
        | TriggerProvenance::WakeHintTick
        | TriggerProvenance::WaitingIntentWake
        | TriggerProvenance::ApprovalAnswer
        | TriggerProvenance::Observational => {}
    }
    if trigger.kind == TriggerKind::OperatorInput {
        evidence.push(format!("operator_input_overrides:{label}"));
        return ContinuationClass::ResumeOverride;
    }
    evidence.push(format!(
        "mismatched_trigger:{}:{label}",
        trigger_label(trigger.kind)
    ));
    ContinuationClass::LivenessOnly
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::decision::RuntimePosture;

    fn closure(outcome: ClosureOutcome, reason: Option<WaitingReason>) -> ClosureDecision {
        ClosureDecision {
            outcome,
            waiting_reason: reason,
            work_signal: None,
            runtime_posture: RuntimePosture::Awake,
            evidence: Vec::new(),
        }
    }

    fn trig(kind: TriggerKind, provenance: TriggerProvenance) -> ContinuationTrigger {
        ContinuationTrigger {
            kind,
            content: TriggerContent::Contentful,
            provenance,
        }
    }

    /// A contentful trigger that arrives while the agent waits on
    /// something else starts no turn, and is kept for the next one; an
    /// observational or empty one is liveness alone.
    #[test]
    fn a_mismatched_contentful_trigger_is_carried_for_the_model() {
        let waiting = |r| closure(ClosureOutcome::Waiting, Some(r));
        let carried = |kind, provenance, reason| {
            let trigger = trig(kind, provenance);
            let r = resolve_continuation(&trigger, &waiting(reason));
            (r.model_visible, carried_for_model(&trigger, &r.evidence))
        };
        let admitted = TriggerProvenance::Admitted;
        // A task result during a timer; an external event, and a child's
        // result (a task result), while awaiting the operator.
        for (kind, reason) in [
            (TriggerKind::TaskResult, WaitingReason::AwaitingTimer),
            (
                TriggerKind::ExternalEvent,
                WaitingReason::AwaitingOperatorInput,
            ),
            (
                TriggerKind::TaskResult,
                WaitingReason::AwaitingOperatorInput,
            ),
            (TriggerKind::TimerFire, WaitingReason::AwaitingTaskResult),
        ] {
            assert_eq!(
                carried(kind, admitted, reason),
                (false, true),
                "{kind:?} {reason:?}"
            );
        }
        // What was waited for runs a turn itself; what carries nothing is
        // liveness alone.
        assert_eq!(
            carried(
                TriggerKind::TaskResult,
                admitted,
                WaitingReason::AwaitingTaskResult
            ),
            (true, false)
        );
        assert_eq!(
            carried(
                TriggerKind::TaskResult,
                TriggerProvenance::Observational,
                WaitingReason::AwaitingTimer
            ),
            (false, false)
        );
        let empty = ContinuationTrigger {
            kind: TriggerKind::ExternalEvent,
            content: TriggerContent::Empty,
            provenance: admitted,
        };
        let r = resolve_continuation(&empty, &waiting(WaitingReason::AwaitingTaskResult));
        assert!(!r.model_visible && !carried_for_model(&empty, &r.evidence));
        // An approval's answer while the agent waits on a task is content.
        assert_eq!(
            carried(
                TriggerKind::InternalFollowup,
                TriggerProvenance::ApprovalAnswer,
                WaitingReason::AwaitingTaskResult
            ),
            (false, true)
        );
        // The runtime's tick for a trigger delivery the agent did not
        // wait for names it; the delivery is the operator's record.
        let tick = trig(TriggerKind::ExternalEvent, TriggerProvenance::WakeHintTick);
        let r = resolve_continuation(&tick, &waiting(WaitingReason::AwaitingTaskResult));
        assert!(!carried_for_model(&tick, &r.evidence));
    }

    const REASONS: [WaitingReason; 4] = [
        WaitingReason::AwaitingOperatorInput,
        WaitingReason::AwaitingExternalChange,
        WaitingReason::AwaitingTaskResult,
        WaitingReason::AwaitingTimer,
    ];

    /// The matrix of admitted contentful triggers against every waiting
    /// reason: exactly the expected pair resumes, operator input overrides
    /// the rest, everything else stays liveness-only.
    #[test]
    fn continuation_matrix_for_admitted_triggers() {
        let expected_pair = [
            (
                TriggerKind::OperatorInput,
                WaitingReason::AwaitingOperatorInput,
            ),
            (TriggerKind::TaskResult, WaitingReason::AwaitingTaskResult),
            (
                TriggerKind::ExternalEvent,
                WaitingReason::AwaitingExternalChange,
            ),
            (TriggerKind::TimerFire, WaitingReason::AwaitingTimer),
        ];
        for (kind, _) in expected_pair {
            for reason in REASONS {
                let r = resolve_continuation(
                    &trig(kind, TriggerProvenance::Admitted),
                    &closure(ClosureOutcome::Waiting, Some(reason)),
                );
                let is_expected = expected_pair.contains(&(kind, reason));
                let want = if is_expected {
                    ContinuationClass::ResumeExpectedWait
                } else if kind == TriggerKind::OperatorInput {
                    ContinuationClass::ResumeOverride
                } else {
                    ContinuationClass::LivenessOnly
                };
                assert_eq!(r.class, want, "{kind:?} vs {reason:?}");
                assert_eq!(r.matched_waiting_reason, is_expected);
                assert_eq!(r.model_visible, want != ContinuationClass::LivenessOnly);
                assert_eq!(r.prior_waiting_reason, Some(reason));
                if want == ContinuationClass::LivenessOnly {
                    let label = format!(
                        "mismatched_trigger:{}:{}",
                        trigger_label(kind),
                        waiting_reason_label(reason)
                    );
                    assert!(r.evidence.contains(&label), "{:?}", r.evidence);
                }
            }
        }
    }

    #[test]
    fn operator_input_is_the_only_admitted_override() {
        for kind in [
            TriggerKind::TaskResult,
            TriggerKind::ExternalEvent,
            TriggerKind::TimerFire,
            TriggerKind::SystemTick,
        ] {
            for reason in REASONS {
                let r = resolve_continuation(
                    &trig(kind, TriggerProvenance::Admitted),
                    &closure(ClosureOutcome::Waiting, Some(reason)),
                );
                assert_ne!(r.class, ContinuationClass::ResumeOverride, "{kind:?}");
            }
        }
    }

    #[test]
    fn wake_hint_ticks_satisfy_only_external_waits_and_plain_ones_stay_liveness() {
        let contentful = trig(
            TriggerKind::SystemTick,
            TriggerProvenance::WaitingIntentWake,
        );
        let ext = closure(
            ClosureOutcome::Waiting,
            Some(WaitingReason::AwaitingExternalChange),
        );
        let r = resolve_continuation(&contentful, &ext);
        assert_eq!(r.class, ContinuationClass::ResumeExpectedWait);
        let plain = ContinuationTrigger {
            content: TriggerContent::Empty,
            ..contentful
        };
        let r = resolve_continuation(&plain, &ext);
        assert_eq!(r.class, ContinuationClass::LivenessOnly);
        assert!(r.matched_waiting_reason);
        assert!(!r.model_visible);
        let task_wait = closure(
            ClosureOutcome::Waiting,
            Some(WaitingReason::AwaitingTaskResult),
        );
        let r = resolve_continuation(&contentful, &task_wait);
        assert_eq!(r.class, ContinuationClass::LivenessOnly);
        assert!(!r.matched_waiting_reason);
        // A wake hint not tied to the wait (a mismatched trigger delivery)
        // is recorded as mismatched and stays liveness-only.
        let unrelated = trig(TriggerKind::SystemTick, TriggerProvenance::WakeHintTick);
        let r = resolve_continuation(&unrelated, &ext);
        assert_eq!(r.class, ContinuationClass::LivenessOnly);
        assert!(!r.matched_waiting_reason);
        assert!(
            r.evidence
                .iter()
                .any(|e| e.starts_with("mismatched_trigger")),
            "{:?}",
            r.evidence
        );
        // With nothing awaited it is a local continuation: it wakes a
        // sleeping agent into a turn.
        let r = resolve_continuation(&unrelated, &closure(ClosureOutcome::Completed, None));
        assert_eq!(r.class, ContinuationClass::LocalContinuation);
        assert!(r.model_visible);
    }

    #[test]
    fn observational_messages_never_continue() {
        for outcome in [ClosureOutcome::Completed, ClosureOutcome::Continuable] {
            let r = resolve_continuation(
                &trig(TriggerKind::TaskResult, TriggerProvenance::Observational),
                &closure(outcome, None),
            );
            assert_eq!(r.class, ContinuationClass::LivenessOnly);
        }
        let r = resolve_continuation(
            &trig(TriggerKind::TaskResult, TriggerProvenance::Observational),
            &closure(
                ClosureOutcome::Waiting,
                Some(WaitingReason::AwaitingTaskResult),
            ),
        );
        assert_eq!(r.class, ContinuationClass::LivenessOnly);
        assert!(r.evidence.contains(&"observational_message".to_owned()));
    }

    #[test]
    fn runtime_owned_ticks_continue_locally_without_satisfying_waits() {
        for provenance in [
            TriggerProvenance::WorkQueueTick,
            TriggerProvenance::RuntimeFollowup,
        ] {
            let kind = match provenance {
                TriggerProvenance::WorkQueueTick => TriggerKind::SystemTick,
                _ => TriggerKind::InternalFollowup,
            };
            for reason in REASONS {
                let r = resolve_continuation(
                    &trig(kind, provenance),
                    &closure(ClosureOutcome::Waiting, Some(reason)),
                );
                assert_eq!(r.class, ContinuationClass::LocalContinuation);
                assert!(!r.matched_waiting_reason);
            }
        }
    }

    #[test]
    fn not_waiting_means_local_continuation_when_contentful() {
        for outcome in [
            ClosureOutcome::Completed,
            ClosureOutcome::Continuable,
            ClosureOutcome::Failed,
        ] {
            let r = resolve_continuation(
                &trig(TriggerKind::TimerFire, TriggerProvenance::Admitted),
                &closure(outcome, None),
            );
            assert_eq!(r.class, ContinuationClass::LocalContinuation);
            assert!(r.model_visible);
            let empty_event = ContinuationTrigger {
                content: TriggerContent::Empty,
                ..trig(TriggerKind::ExternalEvent, TriggerProvenance::Admitted)
            };
            let r = resolve_continuation(&empty_event, &closure(outcome, None));
            assert_eq!(r.class, ContinuationClass::LivenessOnly);
        }
    }

    #[test]
    fn envelope_classification_reads_kind_body_and_tick_metadata() {
        let mut env = crate::model::message::normalize(
            crate::model::message::AdmissionRequest::operator_prompt(
                "a",
                "",
                crate::model::message::Priority::Normal,
                crate::model::message::DeliverySurface::CliPrompt,
            ),
            "m".into(),
            "t".into(),
        );
        env.kind = MessageKind::SystemTick;
        assert_eq!(
            ContinuationTrigger::from_envelope(&env).provenance,
            TriggerProvenance::Admitted
        );
        env.metadata = Some(system_tick_metadata(
            SystemTickReason::ContinueActive,
            "work_queue:continue_active:w:1",
        ));
        let t = ContinuationTrigger::from_envelope(&env);
        assert_eq!(t.provenance, TriggerProvenance::WorkQueueTick);
        assert_eq!(t.content, TriggerContent::Empty);
        assert_eq!(tick_key_of(&env), Some("work_queue:continue_active:w:1"));
        env.kind = MessageKind::TaskStatus;
        assert_eq!(
            ContinuationTrigger::from_envelope(&env).provenance,
            TriggerProvenance::Observational
        );
    }
}
