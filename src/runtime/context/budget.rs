//! Token accounting: a cheap estimate of what a prompt will cost before
//! it is sent (the window it must fit is a `ContextBudget`). The estimate errs
//! on the high side (four ASCII bytes a token, one token for any other
//! character, so CJK text is not undercounted); the provider's reported
//! usage is recorded beside it after each round.

use crate::model::usage::ConversationItem;
use crate::model::usage::ReasoningItem;
use crate::model::usage::ToolImage;
use crate::runtime::provider::{ProviderRequest, ToolSpec};

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
            ConversationItem::ToolResult {
                content, images, ..
            } => estimate_tokens(content) + images.len() as u64 * ToolImage::TOKENS,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::context::{check_window, ContextBudget, WindowSource, MIN_WINDOW};
    use crate::runtime::provider::catalog::known_window;

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
