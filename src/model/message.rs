//! The message envelope: every input to an agent (operator prompt, timer
//! fire, task result, system tick, ...) is normalised into one
//! `MessageEnvelope` at the admission boundary, with provenance that is never
//! mutated afterwards. Names and values follow the runtime spec's
//! "Message Envelope" section; serialised forms are snake_case.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    OperatorPrompt,
    ChannelEvent,
    WebhookEvent,
    CallbackEvent,
    TimerTick,
    SystemTick,
    TaskResult,
    TaskStatus,
    Control,
    BriefAck,
    BriefResult,
    InternalFollowup,
}

impl MessageKind {
    /// The normalised continuation trigger kind derived from the message
    /// kind (a total classification; continuation policy may still treat
    /// some kinds as non-continuations).
    pub fn trigger_kind(self) -> TriggerKind {
        match self {
            MessageKind::OperatorPrompt | MessageKind::Control => TriggerKind::OperatorInput,
            MessageKind::TaskResult | MessageKind::TaskStatus => TriggerKind::TaskResult,
            MessageKind::ChannelEvent | MessageKind::WebhookEvent | MessageKind::CallbackEvent => {
                TriggerKind::ExternalEvent
            }
            MessageKind::TimerTick => TriggerKind::TimerFire,
            MessageKind::SystemTick => TriggerKind::SystemTick,
            MessageKind::BriefAck | MessageKind::BriefResult | MessageKind::InternalFollowup => {
                TriggerKind::InternalFollowup
            }
        }
    }
}

/// `ContinuationResolution.triggerKind` vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerKind {
    OperatorInput,
    TaskResult,
    ExternalEvent,
    TimerFire,
    InternalFollowup,
    SystemTick,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MessageOrigin {
    Operator {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actor_id: Option<String>,
    },
    Channel {
        channel_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sender_id: Option<String>,
    },
    Webhook {
        source: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event_type: Option<String>,
    },
    Callback {
        descriptor_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    Timer {
        timer_id: String,
    },
    System {
        subsystem: String,
    },
    Task {
        task_id: String,
    },
}

impl MessageOrigin {
    /// Trust defaults from the spec: operator -> trusted_operator; system,
    /// task and timer -> trusted_system; callback and webhook ->
    /// trusted_integration; channel -> untrusted_external.
    pub fn default_trust(&self) -> TrustLevel {
        match self {
            MessageOrigin::Operator { .. } => TrustLevel::TrustedOperator,
            MessageOrigin::System { .. }
            | MessageOrigin::Task { .. }
            | MessageOrigin::Timer { .. } => TrustLevel::TrustedSystem,
            MessageOrigin::Callback { .. } | MessageOrigin::Webhook { .. } => {
                TrustLevel::TrustedIntegration
            }
            MessageOrigin::Channel { .. } => TrustLevel::UntrustedExternal,
        }
    }

    /// Authority is derived at admission, never accepted from a caller.
    pub fn authority_class(&self) -> AuthorityClass {
        match self {
            MessageOrigin::Operator { .. } => AuthorityClass::OperatorInstruction,
            MessageOrigin::System { .. }
            | MessageOrigin::Task { .. }
            | MessageOrigin::Timer { .. } => AuthorityClass::RuntimeInstruction,
            MessageOrigin::Callback { .. } | MessageOrigin::Webhook { .. } => {
                AuthorityClass::IntegrationSignal
            }
            MessageOrigin::Channel { .. } => AuthorityClass::ExternalEvidence,
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            MessageOrigin::Operator { .. } => "operator",
            MessageOrigin::Channel { .. } => "channel",
            MessageOrigin::Webhook { .. } => "webhook",
            MessageOrigin::Callback { .. } => "callback",
            MessageOrigin::Timer { .. } => "timer",
            MessageOrigin::System { .. } => "system",
            MessageOrigin::Task { .. } => "task",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustLevel {
    TrustedOperator,
    TrustedSystem,
    TrustedIntegration,
    UntrustedExternal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorityClass {
    OperatorInstruction,
    RuntimeInstruction,
    IntegrationSignal,
    ExternalEvidence,
}

/// Scheduling hint, not a trust signal. Ordered from most to least urgent;
/// `Ord` follows that order so a lower value dequeues first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Interject,
    Next,
    #[default]
    Normal,
    Background,
}

impl Priority {
    /// The queue band: 0 (interject) dequeues before 3 (background).
    pub fn band(self) -> u8 {
        match self {
            Priority::Interject => 0,
            Priority::Next => 1,
            Priority::Normal => 2,
            Priority::Background => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Interject => "interject",
            Priority::Next => "next",
            Priority::Normal => "normal",
            Priority::Background => "background",
        }
    }
}

impl std::str::FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "interject" => Ok(Priority::Interject),
            "next" => Ok(Priority::Next),
            "normal" => Ok(Priority::Normal),
            "background" => Ok(Priority::Background),
            other => Err(format!(
                "unknown priority `{other}` (expected interject, next, normal or background)"
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliverySurface {
    CliPrompt,
    RunOnce,
    HttpPublicEnqueue,
    HttpWebhook,
    HttpCallbackEnqueue,
    HttpCallbackWake,
    HttpControlPrompt,
    TimerScheduler,
    RuntimeSystem,
    TaskRejoin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdmissionContext {
    PublicUnauthenticated,
    ControlAuthenticated,
    ExternalTriggerCapability,
    LocalProcess,
    RuntimeOwned,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageBody {
    Text {
        text: String,
    },
    Json {
        value: serde_json::Value,
    },
    Brief {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        text: String,
    },
}

impl MessageBody {
    /// A one-line preview for listings; never the full body.
    pub fn preview(&self, max_chars: usize) -> String {
        let raw = match self {
            MessageBody::Text { text } | MessageBody::Brief { text, .. } => text.clone(),
            MessageBody::Json { value } => value.to_string(),
        };
        let one_line: String = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.chars().count() <= max_chars {
            one_line
        } else {
            let cut: String = one_line.chars().take(max_chars.saturating_sub(1)).collect();
            format!("{cut}…")
        }
    }
}

/// One normalised input. Immutable once admitted: the queue entry carries
/// the mutable processing status, the envelope keeps provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEnvelope {
    pub id: String,
    pub agent_id: String,
    pub created_at: String,
    pub kind: MessageKind,
    pub origin: MessageOrigin,
    pub trust: TrustLevel,
    pub authority_class: AuthorityClass,
    pub priority: Priority,
    pub trigger_kind: TriggerKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub source_refs: BTreeMap<String, String>,
    pub body: MessageBody,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_surface: Option<DeliverySurface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_context: Option<AdmissionContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<String>,
}

impl MessageEnvelope {
    /// The timer this message came from: a timer's own tick, or the
    /// `timer_id` another origin names (a trigger's wait).
    pub fn timer_id(&self) -> Option<String> {
        match &self.origin {
            MessageOrigin::Timer { timer_id } => Some(timer_id.clone()),
            MessageOrigin::Operator { .. }
            | MessageOrigin::Channel { .. }
            | MessageOrigin::Webhook { .. }
            | MessageOrigin::Callback { .. }
            | MessageOrigin::System { .. }
            | MessageOrigin::Task { .. } => self.source_refs.get("timer_id").cloned(),
        }
    }
}

/// What an ingress asks to admit, before normalisation. Trust, authority and
/// trigger kind are derived here, not accepted from the caller.
#[derive(Debug, Clone)]
pub struct AdmissionRequest {
    pub agent_id: String,
    pub kind: MessageKind,
    pub origin: MessageOrigin,
    pub priority: Priority,
    pub body: MessageBody,
    pub delivery_surface: DeliverySurface,
    pub admission_context: AdmissionContext,
    /// Binding fields: honoured only for runtime-owned admission.
    pub work_item_id: Option<String>,
    pub task_id: Option<String>,
    pub source_refs: BTreeMap<String, String>,
    pub metadata: Option<serde_json::Value>,
    pub correlation_id: Option<String>,
    pub causation_id: Option<String>,
}

impl AdmissionRequest {
    /// An operator prompt typed at a CLI or console.
    pub fn operator_prompt(
        agent_id: &str,
        text: &str,
        priority: Priority,
        surface: DeliverySurface,
    ) -> Self {
        AdmissionRequest {
            agent_id: agent_id.to_owned(),
            kind: MessageKind::OperatorPrompt,
            origin: MessageOrigin::Operator { actor_id: None },
            priority,
            body: MessageBody::Text {
                text: text.to_owned(),
            },
            delivery_surface: surface,
            admission_context: AdmissionContext::LocalProcess,
            work_item_id: None,
            task_id: None,
            source_refs: BTreeMap::new(),
            metadata: None,
            correlation_id: None,
            causation_id: None,
        }
    }
}

/// Normalise an admission request into an envelope. Public (non
/// runtime-owned) ingress may contribute provenance in `source_refs` and
/// `metadata`, but never work-item or task binding: those are dropped here
/// so public metadata cannot become trusted routing.
pub fn normalize(req: AdmissionRequest, id: String, created_at: String) -> MessageEnvelope {
    let runtime_owned = req.admission_context == AdmissionContext::RuntimeOwned;
    let (work_item_id, task_id) = if runtime_owned {
        (req.work_item_id, req.task_id)
    } else {
        (None, None)
    };
    let task_id = match (&req.origin, task_id) {
        (MessageOrigin::Task { task_id }, None) if runtime_owned => Some(task_id.clone()),
        (_, t) => t,
    };
    MessageEnvelope {
        id,
        agent_id: req.agent_id,
        created_at,
        kind: req.kind,
        trust: req.origin.default_trust(),
        authority_class: req.origin.authority_class(),
        origin: req.origin,
        priority: req.priority,
        trigger_kind: req.kind.trigger_kind(),
        work_item_id,
        task_id,
        source_refs: req.source_refs,
        body: req.body,
        metadata: req.metadata,
        delivery_surface: Some(req.delivery_surface),
        admission_context: Some(req.admission_context),
        correlation_id: req.correlation_id,
        causation_id: req.causation_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_prompt_gets_operator_trust_and_authority() {
        let req = AdmissionRequest::operator_prompt(
            "main",
            "hello",
            Priority::Normal,
            DeliverySurface::CliPrompt,
        );
        let env = normalize(req, "msg_1".into(), "t".into());
        assert_eq!(env.trust, TrustLevel::TrustedOperator);
        assert_eq!(env.authority_class, AuthorityClass::OperatorInstruction);
        assert_eq!(env.trigger_kind, TriggerKind::OperatorInput);
        assert_eq!(env.delivery_surface, Some(DeliverySurface::CliPrompt));
    }

    #[test]
    fn public_ingress_cannot_bind_work_items_or_tasks() {
        let mut req = AdmissionRequest::operator_prompt(
            "main",
            "x",
            Priority::Normal,
            DeliverySurface::HttpPublicEnqueue,
        );
        req.origin = MessageOrigin::Channel {
            channel_id: "c".into(),
            sender_id: None,
        };
        req.kind = MessageKind::ChannelEvent;
        req.admission_context = AdmissionContext::PublicUnauthenticated;
        req.work_item_id = Some("work_1".into());
        req.task_id = Some("task_1".into());
        let env = normalize(req, "msg_1".into(), "t".into());
        assert_eq!(env.work_item_id, None);
        assert_eq!(env.task_id, None);
        assert_eq!(env.trust, TrustLevel::UntrustedExternal);
        assert_eq!(env.authority_class, AuthorityClass::ExternalEvidence);
    }

    #[test]
    fn runtime_owned_task_result_binds_task_from_origin() {
        let req = AdmissionRequest {
            agent_id: "main".into(),
            kind: MessageKind::TaskResult,
            origin: MessageOrigin::Task {
                task_id: "task_9".into(),
            },
            priority: Priority::Next,
            body: MessageBody::Text {
                text: "done".into(),
            },
            delivery_surface: DeliverySurface::TaskRejoin,
            admission_context: AdmissionContext::RuntimeOwned,
            work_item_id: Some("work_2".into()),
            task_id: None,
            source_refs: BTreeMap::new(),
            metadata: None,
            correlation_id: None,
            causation_id: None,
        };
        let env = normalize(req, "msg_2".into(), "t".into());
        assert_eq!(env.task_id.as_deref(), Some("task_9"));
        assert_eq!(env.work_item_id.as_deref(), Some("work_2"));
        assert_eq!(env.trust, TrustLevel::TrustedSystem);
        assert_eq!(env.authority_class, AuthorityClass::RuntimeInstruction);
    }

    #[test]
    fn priority_bands_order_interject_first() {
        let mut v = vec![
            Priority::Background,
            Priority::Normal,
            Priority::Interject,
            Priority::Next,
        ];
        v.sort();
        assert_eq!(
            v,
            vec![
                Priority::Interject,
                Priority::Next,
                Priority::Normal,
                Priority::Background
            ]
        );
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueEntryStatus {
    Queued,
    Dequeued,
    Processed,
    Aborted,
    Interjected,
    Dropped,
}

impl QueueEntryStatus {
    /// Whether a message in this status is replayed after a restart.
    pub fn replays_on_restart(self) -> bool {
        match self {
            QueueEntryStatus::Queued | QueueEntryStatus::Dequeued => true,
            QueueEntryStatus::Processed
            | QueueEntryStatus::Aborted
            | QueueEntryStatus::Interjected
            | QueueEntryStatus::Dropped => false,
        }
    }

    pub fn is_pending(self) -> bool {
        self == QueueEntryStatus::Queued
    }
}
