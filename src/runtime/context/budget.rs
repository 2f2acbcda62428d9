//! Token accounting: how big a model's context window is, how much of it
//! the prompt may use, and a cheap estimate of what a prompt will cost
//! before it is sent. The estimate errs on the high side (four ASCII bytes
//! a token, one token for any other character, so CJK text is not
//! undercounted); the provider's reported usage is recorded beside it
//! after each round.

pub use crate::model::context::ContextBudget;

pub use crate::model::context::WindowSource;
use crate::runtime::provider::{ConversationItem, ProviderRequest, ReasoningItem, ToolSpec};

/// The window assumed for a model nobody described.
pub const DEFAULT_WINDOW: u64 = 128_000;
/// The smallest window accepted from configuration.
pub const MIN_WINDOW: u64 = 1_024;
/// The largest window accepted from configuration.
pub const MAX_WINDOW: u64 = 10_000_000;

/// What a replayed reasoning item weighs in a prompt: the thinking text as
/// text; encrypted or redacted content, which is base64 of tokens, at a
/// quarter of its text estimate.
fn reasoning_tokens(item: &ReasoningItem) -> u64 {
    match item {
        ReasoningItem::Thinking { thinking, .. } => estimate_tokens(thinking),
        ReasoningItem::RedactedThinking { model: _, data } => estimate_tokens(data) / 4,
        ReasoningItem::Responses {
            encrypted_content, ..
        } => encrypted_content.as_deref().map_or(0, estimate_tokens) / 4,
    }
}

/// Tokens a piece of text is estimated to cost.
pub fn estimate_tokens(text: &str) -> u64 {
    let (mut ascii, mut other) = (0u64, 0u64);
    for b in text.bytes() {
        if b < 0x80 {
            ascii += 1;
        } else if b & 0xC0 != 0x80 {
            // The first byte of a multi-byte character.
            other += 1;
        }
    }
    ascii.div_ceil(4) + other
}

/// Framing each message costs on every wire (role, separators).
const PER_ITEM: u64 = 4;

pub fn item_tokens(item: &ConversationItem) -> u64 {
    PER_ITEM
        + match item {
            ConversationItem::UserText { text } => estimate_tokens(text),
            ConversationItem::AssistantRound {
                reasoning,
                text,
                tool_calls,
            } => {
                reasoning.iter().map(reasoning_tokens).sum::<u64>()
                    + estimate_tokens(text)
                    + tool_calls
                        .iter()
                        .map(|c| {
                            PER_ITEM
                                + estimate_tokens(&c.name)
                                + estimate_tokens(&c.arguments.to_string())
                        })
                        .sum::<u64>()
            }
            ConversationItem::ToolResult { content, .. } => estimate_tokens(content),
        }
}

pub fn items_tokens(items: &[ConversationItem]) -> u64 {
    items.iter().map(item_tokens).sum()
}

pub fn tools_tokens(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|t| {
            PER_ITEM
                + estimate_tokens(&t.name)
                + estimate_tokens(&t.description)
                + estimate_tokens(&t.input_schema.to_string())
        })
        .sum()
}

/// The estimate of a whole request: system prompt, context blocks, tools
/// and conversation.
pub fn request_tokens(r: &ProviderRequest) -> u64 {
    estimate_tokens(&r.system_prompt)
        + r.context_blocks
            .iter()
            .map(|b| PER_ITEM + estimate_tokens(&b.text))
            .sum::<u64>()
        + tools_tokens(&r.tools)
        + items_tokens(&r.conversation)
}

/// A model's window from the model catalog (`assets/models.toml`), the
/// one table of windows and prices.
pub fn known_window(model_ref: &str) -> Option<u64> {
    crate::runtime::provider::catalog::lookup(model_ref).map(|m| m.context_window)
}

impl ContextBudget {
    pub fn new(window: u64, source: WindowSource) -> ContextBudget {
        let window = window.max(MIN_WINDOW);
        let output_reserve = (window / 8).clamp(256, 16_384);
        let prompt_budget = (window - output_reserve) * 95 / 100;
        ContextBudget {
            window,
            source,
            output_reserve,
            prompt_budget,
        }
    }

    /// The budget of a model with no configured window.
    pub fn for_model(model_ref: &str) -> ContextBudget {
        match known_window(model_ref) {
            Some(w) => ContextBudget::new(w, WindowSource::KnownModel),
            None => ContextBudget::new(DEFAULT_WINDOW, WindowSource::Default),
        }
    }

    /// Percent of the window a prompt of `tokens` uses.
    pub fn percent(&self, tokens: u64) -> u8 {
        (tokens.saturating_mul(100) / self.window.max(1)).min(999) as u8
    }
}

/// Validate a configured window.
pub fn check_window(n: u64) -> Result<u64, String> {
    if (MIN_WINDOW..=MAX_WINDOW).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{n} is out of range: give a number of tokens from {MIN_WINDOW} to {MAX_WINDOW}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_count_ascii_by_four_and_other_characters_by_one() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("上下文"), 3);
        assert_eq!(estimate_tokens("ab上下"), 3);
    }

    #[test]
    fn known_models_and_providers() {
        assert_eq!(known_window("openai/gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("anthropic/claude-sonnet-4-5"), Some(200_000));
        assert_eq!(
            known_window("openrouter/anthropic/claude-3.5-haiku"),
            Some(200_000)
        );
        assert_eq!(known_window("ollama/llama3.2"), Some(8_192));
        assert_eq!(known_window("stub/e2e-model"), None);
        assert_eq!(
            ContextBudget::for_model("stub/x").source,
            WindowSource::Default
        );
    }

    #[test]
    fn the_budget_keeps_a_reserve_and_a_margin() {
        let b = ContextBudget::new(8_192, WindowSource::ModelConfig);
        assert_eq!(b.output_reserve, 1_024);
        assert!(b.prompt_budget < b.window - b.output_reserve);
        assert_eq!(b.percent(4_096), 50);
        // Tiny windows are raised to the minimum rather than underflowing.
        let tiny = ContextBudget::new(10, WindowSource::ModelConfig);
        assert_eq!(tiny.window, MIN_WINDOW);
        assert!(tiny.prompt_budget > 0);
        assert!(check_window(100).is_err());
        assert_eq!(check_window(32_000), Ok(32_000));
    }
}
