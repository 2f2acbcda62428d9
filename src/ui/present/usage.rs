//! Tokens, cost and budgets in words, for `holon status`, `holon agent
//! budget`, the console's `/status` and the event rows. Pure.

use super::compact_count;
use crate::protocol::views::{AgentSummary, BudgetView, UsageView};

/// A daily budget in words: `$5.00 a day, 2000000 tokens a day`; `None`
/// when it sets no limit.
pub fn budget_words(b: &BudgetView) -> Option<String> {
    let parts: Vec<String> = [
        b.daily_usd.map(|d| format!("${d:.2} a day")),
        b.daily_tokens.map(|t| format!("{t} tokens a day")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `tokens 1.2M in (800k cached) / 40k out · $3.10 · today $0.42 of $5.00`
pub fn usage_line(u: &UsageView) -> String {
    fn n(v: u64) -> String {
        match v {
            0..=9_999 => v.to_string(),
            10_000..=999_999 => format!("{}k", v / 1_000),
            _ => format!("{:.1}M", v as f64 / 1_000_000.0),
        }
    }
    let mut line = format!("tokens {} in", n(u.input_tokens));
    if u.cached_input_tokens > 0 {
        line += &format!(" ({} cached)", n(u.cached_input_tokens));
    }
    line += &format!(" / {} out", n(u.output_tokens));
    if u.reasoning_tokens > 0 {
        line += &format!(" ({} reasoning)", n(u.reasoning_tokens));
    }
    line += &match u.unpriced_rounds {
        0 => format!(" · ${:.2}", u.cost_usd),
        k if k == u.model_rounds => " · cost unknown".to_owned(),
        k => format!(" · ${:.2} (+{k} rounds of unknown cost)", u.cost_usd),
    };
    let d = &u.today;
    line += &format!(" · today ${:.2}", d.cost_usd);
    if let Some(b) = d.budget_usd {
        line += &format!(" of ${b:.2}");
    }
    if let Some(b) = d.budget_tokens {
        line += &format!(", {} of {} tokens", n(d.tokens), n(b));
    }
    line
}

/// The one figure of context use, as the status line's `ctx N%`, `/status`
/// and `/context` all give it: the last prompt sent against the model's
/// window (the provider's count when it gave one, else Holon's estimate).
pub fn context_use(percent: Option<u8>, tokens: Option<u64>, window: u64) -> String {
    match (percent, tokens) {
        (Some(p), Some(t)) => format!(
            "context {p}% ({} of the {}-token window at the last prompt)",
            compact_count(t),
            compact_count(window)
        ),
        _ => "context: no prompt sent yet".to_owned(),
    }
}

/// `/status`: the agent's model, context use, tokens and cost.
pub fn status_note(summary: Option<&AgentSummary>) -> String {
    let Some(s) = summary else {
        return "Status: not known yet (the runtime has not answered).".into();
    };
    let mut model = s.model.clone().unwrap_or_else(|| "no model".into());
    if let Some(e) = s.reasoning_effort {
        model = format!("{model} · reasoning {}", e.as_str());
    }
    let context = context_use(
        s.context.percent,
        s.context.last_prompt_tokens,
        s.context.window,
    );
    let mut lines = vec![format!("Status: {model} · {context}")];
    match &s.usage {
        None => lines.push("No model rounds yet.".into()),
        Some(u) => {
            let mut tokens = format!("Tokens: {} in", u.input_tokens);
            if u.cached_input_tokens > 0 {
                tokens += &format!(" ({} cached)", u.cached_input_tokens);
            }
            tokens += &format!(" · {} out", u.output_tokens);
            if u.reasoning_tokens > 0 {
                tokens += &format!(" ({} reasoning)", u.reasoning_tokens);
            }
            tokens += &format!(" · {} rounds", u.model_rounds);
            lines.push(tokens);
            let cost = match u.unpriced_rounds {
                0 => format!("Cost: ${:.4}", u.cost_usd),
                n if n == u.model_rounds => "Cost: unknown (no price for this model)".into(),
                n => format!("Cost: ${:.4} (+{n} rounds of unknown cost)", u.cost_usd),
            };
            let d = &u.today;
            let mut today = format!(" · today ${:.4}", d.cost_usd);
            if let Some(b) = d.budget_usd {
                today += &format!(" of ${b:.2}");
            }
            if let Some(b) = d.budget_tokens {
                today += &format!(", {} of {b} tokens", d.tokens);
            }
            if d.paused_by_budget {
                today += " · paused by the daily budget (/resume runs it anyway)";
            }
            lines.push(cost + &today);
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::views::DayUsageView;

    #[test]
    fn the_usage_line_says_tokens_cost_and_today_against_the_budget() {
        let mut u = UsageView {
            last_turn: None,
            input_tokens: 1_250_000,
            output_tokens: 40_500,
            cached_input_tokens: 800_000,
            cache_write_tokens: 0,
            reasoning_tokens: 12_000,
            model_rounds: 12,
            cost_usd: 3.1,
            unpriced_rounds: 0,
            today: DayUsageView {
                cost_usd: 0.42,
                budget_usd: Some(5.0),
                ..DayUsageView::default()
            },
        };
        assert_eq!(
            usage_line(&u),
            "tokens 1.2M in (800k cached) / 40k out (12k reasoning) · $3.10 · today $0.42 of $5.00"
        );
        u.unpriced_rounds = 12;
        assert!(usage_line(&u).contains("· cost unknown ·"));
        u.unpriced_rounds = 2;
        assert!(usage_line(&u).contains("$3.10 (+2 rounds of unknown cost)"));
    }
}
