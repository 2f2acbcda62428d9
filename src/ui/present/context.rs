//! The prompt preview in words: `/context` shows the short form, `holon
//! debug prompt` the whole frame, section by section.

use std::fmt::Write;

use super::{compact_count, counted};
use crate::protocol::types::ConversationItem;
use crate::protocol::types::PromptPreview;

/// Where the window comes from, in plain words.
fn window_source(p: &PromptPreview) -> &'static str {
    use crate::protocol::types::WindowSource as W;
    match p.budget.source {
        W::Environment => "HOLON_CONTEXT_WINDOW",
        W::ModelConfig => "[model] context_window",
        W::ProviderConfig => "provider config",
        W::Server => "the model's server said",
        W::KnownModel => "known model",
        W::Default => "default: model unknown",
    }
}

/// The header both forms share: size, window, budget, compaction.
fn header(p: &PromptPreview) -> Vec<String> {
    let last = p.context.last_prompt;
    let now = super::usage::context_use(
        last.map(|u| u.percent()),
        last.map(|u| u.tokens()),
        last.map_or(p.budget.window, |u| u.window),
    );
    let mut out = vec![
        format!("Context of {}: {now}.", p.agent_id),
        format!(
            "The next prompt would be ~{} tokens, {}% of {}'s {}-token window ({}; prompt budget {}).",
            compact_count(p.total_tokens),
            p.percent_of_window,
            if p.model_ref.is_empty() {
                "the unconfigured model"
            } else {
                &p.model_ref
            },
            compact_count(p.budget.window),
            window_source(p),
            compact_count(p.budget.prompt_budget),
        ),
    ];
    out.push(match &p.summary {
        Some(s) => format!(
            "Compacted: epoch {}, {} folded so far; the summary in effect is {} tokens ({}, {}, \
             {}).",
            s.epoch,
            counted(
                p.context.compacted_entries,
                "transcript entry",
                "transcript entries"
            ),
            compact_count(s.summary_tokens),
            s.source,
            counted(s.folded_turns, "turn", "turns"),
            s.created_at
        ),
        None => "Nothing compacted yet.".to_owned(),
    });
    out.push(match &p.would_fold {
        Some(f) => format!(
            "The next turn will fold {} (~{} tokens of history; ~{} kept verbatim).",
            counted(f.turns as u64, "older turn", "older turns"),
            compact_count(f.tokens_before),
            compact_count(f.tokens_kept)
        ),
        None => "The next turn needs no compaction.".to_owned(),
    });
    out
}

/// `/context`: the header and one line of section sizes.
pub fn summary(p: &PromptPreview) -> String {
    let mut lines = header(p);
    let mut parts: Vec<String> = p
        .sections
        .iter()
        .map(|s| format!("{} {}", s.name.replace('_', " "), compact_count(s.tokens)))
        .collect();
    parts.push(format!(
        "history {} ({})",
        compact_count(p.history_tokens),
        counted(p.history_entries as u64, "entry", "entries")
    ));
    lines.push(format!("Sections: {}.", parts.join(" · ")));
    lines.push("`holon debug prompt` prints the whole frame.".to_owned());
    lines.join("\n")
}

fn item(out: &mut String, i: &ConversationItem) {
    let _ = match i {
        ConversationItem::UserText { text } => writeln!(out, "[input] {text}"),
        ConversationItem::AssistantRound {
            text, tool_calls, ..
        } => {
            let _ = writeln!(out, "[assistant] {text}");
            for c in tool_calls {
                let _ = writeln!(out, "  → {} {}", c.name, c.arguments);
            }
            Ok(())
        }
        ConversationItem::ToolResult {
            tool_name,
            content,
            is_error,
            images,
            ..
        } => {
            let kind = if *is_error { "error" } else { "result" };
            let _ = writeln!(out, "[{tool_name} {kind}] {content}");
            for i in images {
                let _ = writeln!(out, "  + an image ({})", i.mime_type);
            }
            Ok(())
        }
    };
}

/// `holon debug prompt`: the header, then every section's text under a
/// rule naming it and its size, then the verbatim history. With `brief`,
/// the rules only.
pub fn full(p: &PromptPreview, brief: bool) -> String {
    let mut out = header(p).join("\n");
    if let Some(c) = &p.cache {
        let _ = write!(
            out,
            "\nCache: key {}, fingerprint {}, working memory revision {}, compression epoch {}.",
            c.prompt_cache_key,
            c.context_fingerprint,
            c.working_memory_revision,
            c.compression_epoch
        );
    }
    if !p.capabilities.is_empty() {
        let _ = write!(out, "\nWire: {}.", p.capabilities.join(", "));
    }
    out.push('\n');
    for s in &p.sections {
        let _ = writeln!(out, "\n── {} · ~{} tokens ──", s.name, s.tokens);
        if !brief {
            let _ = writeln!(out, "{}", s.text.trim_end());
        }
    }
    let _ = writeln!(
        out,
        "\n── history · {} · ~{} tokens ──",
        counted(p.history_entries as u64, "entry", "entries"),
        p.history_tokens
    );
    if !brief {
        for i in &p.conversation {
            item(&mut out, i);
        }
    }
    out
}
