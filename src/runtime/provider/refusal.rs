//! A request the provider refused for its reasoning, and what it can go
//! again without: the reasoning setting (an effort the model does not
//! take) or replayed reasoning (encrypted content it can no longer read).
//! Read from the provider's words; each is tried once by the chain.

use super::{ConversationItem, ProviderRequest};

/// What a provider refused in a request that can go again without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The reasoning setting (an effort the model does not take).
    Effort,
    /// Replayed reasoning (encrypted content it can no longer read).
    Reasoning,
}

impl Refused {
    pub(super) fn words(self) -> &'static str {
        match self {
            Refused::Effort => "reasoning setting",
            Refused::Reasoning => "replayed reasoning",
        }
    }

    /// The attempt's recorded disposition.
    pub fn disposition(self) -> &'static str {
        match self {
            Refused::Effort => "retry_without_reasoning_effort",
            Refused::Reasoning => "retry_without_reasoning_items",
        }
    }
}

/// Whether a client error is a refusal of the request's reasoning, read
/// from the provider's words. Each is tried once: a request that fails
/// again fails as it would have.
pub fn reasoning_refused(detail: &str, effort: bool, reasoning: bool) -> Option<Refused> {
    let d = detail.to_ascii_lowercase();
    if reasoning && (d.contains("encrypted_content") || d.contains("encrypted content")) {
        return Some(Refused::Reasoning);
    }
    let about_effort = ["effort", "thinking"].iter().any(|w| d.contains(w));
    (effort && about_effort).then_some(Refused::Effort)
}

pub(super) fn has_reasoning(request: &ProviderRequest) -> bool {
    request.conversation.iter().any(|i| {
        matches!(i, ConversationItem::AssistantRound { reasoning, .. } if !reasoning.is_empty())
    })
}

/// The request with every replayed reasoning item left out.
pub(super) fn without_reasoning(request: &ProviderRequest) -> ProviderRequest {
    let mut stripped = request.clone();
    for item in &mut stripped.conversation {
        if let ConversationItem::AssistantRound { reasoning, .. } = item {
            reasoning.clear();
        }
    }
    stripped
}
