//! `holon models` (the model catalog, with which credentials are present)
//! and `holon usage` (tokens and cost by day, agent and model, read from
//! the ledger's `provider_round_completed` events).

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde::Serialize;

use super::commands::Out;
use super::Context;
use crate::protocol::events::{Event, ProviderRoundCompleted};
use crate::protocol::{call_typed, EventsPage, Request};
use crate::runtime::provider::catalog::{self, CatalogModel};

/// One catalog entry as `holon models` shows it.
#[derive(Debug, Serialize)]
struct ModelRow<'a> {
    #[serde(flatten)]
    model: &'a CatalogModel,
    /// The built-in provider that serves it (`openai/<model>`).
    provider: &'static str,
    /// The variable its key is read from, and whether it is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    credential_env: Option<&'static str>,
    credential_present: bool,
    /// Whether `[pricing]` overrides a model of this name.
    price_overridden: bool,
}

pub async fn models(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let rows: Vec<ModelRow<'_>> = catalog::builtin()
        .iter()
        .map(|m| {
            let (provider, env) = catalog::route(&m.vendor);
            let present = env.is_none_or(|v| std::env::var(v).is_ok_and(|k| !k.trim().is_empty()));
            let overridden = ctx.config.pricing.overrides.keys().any(|r| {
                r.rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with(&m.model))
            });
            ModelRow {
                model: m,
                provider,
                credential_env: env,
                credential_present: present,
                price_overridden: overridden,
            }
        })
        .collect();
    let configured = configured_windows(ctx).await?;
    let mut out = Out::new();
    if json {
        let all = serde_json::json!({ "configured": configured, "catalog": rows });
        out.line(&serde_json::to_string_pretty(&all)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !configured.is_empty() {
        out.line("CONFIGURED           WINDOW")?;
        for c in &configured {
            out.line(&format!("{:<20} {}", c.model_ref, c.window.describe()))?;
        }
        out.line("")?;
    }
    out.line(&format!(
        "{:<20} {:>9} {:>8} {:>24}  {:<10} {}",
        "MODEL", "WINDOW", "MAX OUT", "$/MTOK IN/CACHED/OUT", "REASONING", "ROUTE"
    ))?;
    for r in &rows {
        let m = r.model;
        let name = match &m.provider {
            Some(p) => format!("{p}/*"),
            None => format!("{}*", m.model),
        };
        let price = match m.price() {
            Some(p) => format!(
                "{}/{}/{}",
                dollars(p.input_per_mtok),
                p.cached_input_per_mtok.map_or("-".into(), dollars),
                dollars(p.output_per_mtok)
            ),
            None => "unknown".into(),
        };
        let key = match (r.credential_env, r.credential_present) {
            (None, _) => String::new(),
            (Some(v), true) => format!(" ({v} set)"),
            (Some(v), false) => format!(" ({v} missing)"),
        };
        out.line(&format!(
            "{:<20} {:>9} {:>8} {:>24}  {:<10} {}/…{key}{}",
            name,
            m.context_window,
            m.max_output.map_or("-".into(), |n| n.to_string()),
            price,
            if m.reasoning { "yes" } else { "" },
            r.provider,
            if r.price_overridden {
                " · price overridden"
            } else {
                ""
            },
        ))?;
    }
    out.line("")?;
    out.line(
        "Prices are list prices in dollars per million tokens; override one with \
         [pricing.\"PROVIDER/MODEL\"] in config.toml.",
    )?;
    Ok(ExitCode::SUCCESS)
}

/// A model the configuration uses (the default, each fallback), with its
/// window and where the size comes from.
#[derive(Debug, Serialize)]
struct ConfiguredModel {
    model_ref: String,
    /// `default` or `fallback`.
    role: &'static str,
    window: crate::runtime::provider::checkup::WindowReport,
}

/// The configured models' windows, each asked of its server where it may
/// say (bounded, all at once).
async fn configured_windows(ctx: &Context) -> anyhow::Result<Vec<ConfiguredModel>> {
    let config = &ctx.config;
    let mut refs: Vec<(String, &'static str)> = Vec::new();
    for (r, role) in config
        .default_model
        .iter()
        .map(|m| (m, "default"))
        .chain(config.fallback_models.iter().map(|m| (m, "fallback")))
    {
        if !refs.iter().any(|(x, _)| x == r) {
            refs.push((r.clone(), role));
        }
    }
    let env = super::providers::provider_env(config);
    let policy = crate::runtime::provider::retry::RetryPolicy::default();
    let client = crate::runtime::provider::registry::http_client(&policy)
        .map_err(|f| anyhow::anyhow!(f.artifact.summary))?;
    let windows = futures_util::future::join_all(refs.iter().map(|(r, _)| {
        crate::runtime::provider::checkup::window(
            r,
            &env,
            &config.providers,
            config.context_window,
            &client,
        )
    }))
    .await;
    Ok(refs
        .into_iter()
        .zip(windows)
        .map(|((model_ref, role), window)| ConfiguredModel {
            model_ref,
            role,
            window,
        })
        .collect())
}

fn dollars(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A row of `holon usage`: one day, agent and model.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct UsageRow {
    pub day: String,
    pub agent_id: String,
    pub model_ref: String,
    pub rounds: u64,
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    /// Cost of the priced rounds.
    pub cost_usd: f64,
    /// Rounds of unknown cost.
    pub unpriced_rounds: u64,
}

/// Adds one round to its row.
pub fn fold(
    rows: &mut BTreeMap<(String, String, String), UsageRow>,
    agent: &str,
    ts: &str,
    p: &ProviderRoundCompleted,
) {
    fold_usage(rows, agent, ts, &p.model_ref, &p.token_usage, p.cost_usd);
}

/// Adds one model call (a round, or the context summariser's) to its row.
fn fold_usage(
    rows: &mut BTreeMap<(String, String, String), UsageRow>,
    agent: &str,
    ts: &str,
    model_ref: &str,
    u: &crate::model::usage::TokenUsage,
    cost_usd: Option<f64>,
) {
    let day = ts.get(..10).unwrap_or(ts).to_owned();
    let key = (day.clone(), agent.to_owned(), model_ref.to_owned());
    let row = rows.entry(key).or_insert_with(|| UsageRow {
        day,
        agent_id: agent.to_owned(),
        model_ref: model_ref.to_owned(),
        ..UsageRow::default()
    });
    row.rounds += 1;
    row.input_tokens += u.input_tokens;
    row.cached_input_tokens += u.cached_input_tokens;
    row.output_tokens += u.output_tokens;
    row.reasoning_tokens += u.reasoning_tokens;
    match cost_usd {
        Some(c) => row.cost_usd += c,
        None => row.unpriced_rounds += 1,
    }
}

/// `--since`: `7d` (the last seven days, today included) or a date.
pub fn since_day(since: &str, today_ms: i64) -> Result<String, String> {
    if let Some(days) = since.strip_suffix('d') {
        let n: i64 = days
            .parse()
            .ok()
            .filter(|n| (1..=36_600).contains(n))
            .ok_or_else(|| format!("--since {since}: give days as 1d to 36600d, or a date"))?;
        return Ok(crate::runtime::budget::day_of(
            today_ms - (n - 1) * 86_400_000,
        ));
    }
    let ok = since.len() == 10
        && since.chars().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    match ok {
        true => Ok(since.to_owned()),
        false => Err(format!(
            "--since {since}: give a date (2026-11-01) or days (7d)"
        )),
    }
}

pub async fn usage(
    ctx: &Context,
    agent: Option<String>,
    since: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let from_day = match &since {
        Some(s) => Some(since_day(s, crate::now_ms()).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let client = super::offline::client(ctx).await?;
    let agents: Vec<String> = match agent {
        Some(a) => vec![a],
        None => agent_ids(&*client).await?,
    };
    let mut rows = BTreeMap::new();
    for agent in &agents {
        // Turn rounds, the context summariser's calls, and the reviewer's.
        for kind in [
            "provider_round_completed",
            "context_compacted",
            "approval_reviewed",
        ] {
            for_each_event(&*client, agent, kind, |e| {
                if from_day
                    .as_deref()
                    .is_some_and(|d| e.ts.get(..10).unwrap_or("") < d)
                {
                    return;
                }
                match e.event() {
                    Event::ProviderRoundCompleted(p) => fold(&mut rows, agent, &e.ts, &p),
                    Event::ContextCompacted(c) => {
                        if let Some(u) = &c.summariser_token_usage {
                            let model = c.summariser_model_ref.as_deref().unwrap_or("(summariser)");
                            fold_usage(&mut rows, agent, &e.ts, model, u, c.summariser_cost_usd);
                        }
                    }
                    // The reviewer's calls, on the agent's day as its own,
                    // shown as the reviewer's.
                    Event::ApprovalReviewed(p) => {
                        let Some(r) = &p.approval.review else { return };
                        if r.input_tokens + r.output_tokens == 0 {
                            return;
                        }
                        let u = crate::model::usage::TokenUsage {
                            input_tokens: r.input_tokens,
                            output_tokens: r.output_tokens,
                            ..Default::default()
                        };
                        let model = format!("{} (reviewer)", r.model);
                        fold_usage(&mut rows, agent, &e.ts, &model, &u, r.cost_usd);
                    }
                    _ => {}
                }
            })
            .await?;
        }
    }
    let rows: Vec<UsageRow> = rows.into_values().collect();
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    out.line(&format!(
        "{:<10} {:<14} {:<28} {:>6} {:>10} {:>10} {:>9} {:>9} {:>10}",
        "DAY", "AGENT", "MODEL", "ROUNDS", "INPUT", "CACHED", "OUTPUT", "REASON", "COST"
    ))?;
    let mut total = UsageRow::default();
    for r in &rows {
        out.line(&usage_line(r))?;
        total.rounds += r.rounds;
        total.input_tokens += r.input_tokens;
        total.cached_input_tokens += r.cached_input_tokens;
        total.output_tokens += r.output_tokens;
        total.reasoning_tokens += r.reasoning_tokens;
        total.cost_usd += r.cost_usd;
        total.unpriced_rounds += r.unpriced_rounds;
    }
    if rows.is_empty() {
        out.line("(no model rounds recorded)")?;
    } else {
        total.day = "total".into();
        out.line(&usage_line(&total))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn usage_line(r: &UsageRow) -> String {
    let cost = match (r.unpriced_rounds, r.rounds) {
        (0, _) => format!("${:.4}", r.cost_usd),
        (u, n) if u == n => "unknown".into(),
        (u, _) => format!("${:.4}+{u}?", r.cost_usd),
    };
    format!(
        "{:<10} {:<14} {:<28} {:>6} {:>10} {:>10} {:>9} {:>9} {:>10}",
        r.day,
        r.agent_id,
        r.model_ref,
        r.rounds,
        r.input_tokens,
        r.cached_input_tokens,
        r.output_tokens,
        r.reasoning_tokens,
        cost
    )
}

/// Every event of `kind` in `agent`'s ledger, oldest first, page by
/// page, each given to `each`.
pub(super) async fn for_each_event(
    client: &dyn crate::protocol::RuntimeClient,
    agent: &str,
    kind: &str,
    mut each: impl FnMut(&crate::protocol::EventRecord),
) -> anyhow::Result<()> {
    let mut from = 1;
    loop {
        let req = Request::EventsPage {
            agent_id: agent.to_owned(),
            from_seq: from,
            limit: 1000,
            kind: Some(kind.into()),
        };
        let page: EventsPage = call_typed(client, req).await?;
        let Some(last) = page.events.last() else {
            return Ok(());
        };
        from = last.event_seq + 1;
        page.events.iter().for_each(&mut each);
    }
}

/// Every agent's id, page by page (`agents.list`).
pub(super) async fn agent_ids(
    client: &dyn crate::protocol::RuntimeClient,
) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let page: crate::protocol::AgentsPage = call_typed(
            client,
            Request::AgentsList {
                limit: Some(crate::runtime::inspect::LIST_PAGE_MAX),
                cursor: cursor.take(),
                query: None,
            },
        )
        .await?;
        ids.extend(page.agents.into_iter().map(|a| a.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break Ok(ids),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_days_or_a_date() {
        // 2026-11-25T12:00:00Z
        let noon = 1_795_608_000_000;
        assert_eq!(since_day("1d", noon).unwrap(), "2026-11-25");
        assert_eq!(since_day("7d", noon).unwrap(), "2026-11-19");
        assert_eq!(since_day("2026-11-01", noon).unwrap(), "2026-11-01");
        for bad in ["0d", "xd", "2026/11/01", "yesterday", ""] {
            assert!(since_day(bad, noon).is_err(), "{bad}");
        }
    }

    #[test]
    fn rounds_fold_by_day_agent_and_model_and_unknown_cost_is_counted() {
        let round = |model: &str, cost| ProviderRoundCompleted {
            run_id: String::new(),
            round: 1,
            model_ref: model.into(),
            token_usage: crate::model::usage::TokenUsage {
                input_tokens: 100,
                output_tokens: 10,
                cached_input_tokens: 40,
                ..Default::default()
            },
            provider_attempt_timeline: Default::default(),
            context_build_ms: 0,
            provider_round_ms: 0,
            stop_reason: None,
            prompt_tokens_estimate: 0,
            context_window: 0,
            prompt_budget: 0,
            cost_usd: cost,
            ..Default::default()
        };
        let mut rows = BTreeMap::new();
        fold(
            &mut rows,
            "main",
            "2026-11-25T10:00:00.000Z",
            &round("openai/gpt-5", Some(0.5)),
        );
        fold(
            &mut rows,
            "main",
            "2026-11-25T11:00:00.000Z",
            &round("openai/gpt-5", Some(0.25)),
        );
        fold(
            &mut rows,
            "main",
            "2026-11-25T12:00:00.000Z",
            &round("stub/x", None),
        );
        fold(
            &mut rows,
            "main",
            "2026-11-26T00:00:01.000Z",
            &round("openai/gpt-5", Some(1.0)),
        );
        let rows: Vec<UsageRow> = rows.into_values().collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            (rows[0].day.as_str(), rows[0].rounds, rows[0].cost_usd),
            ("2026-11-25", 2, 0.75)
        );
        assert_eq!(rows[0].cached_input_tokens, 80);
        assert_eq!(
            (rows[1].model_ref.as_str(), rows[1].unpriced_rounds),
            ("stub/x", 1)
        );
        assert_eq!(
            usage_line(&rows[1]).trim_end().rsplit(' ').next(),
            Some("unknown")
        );
        assert_eq!(rows[2].day, "2026-11-26");
    }
}
