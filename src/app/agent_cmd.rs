//! `holon agent list | create | show | archive` and `holon skills list`:
//! the same socket methods the console uses, against the running runtime,
//! else read from the store (a listing, an agent shown) or answered by
//! one started in this process.

use std::process::ExitCode;

use super::cli::{AgentCommand, SkillsCommand};
use super::Context;
use crate::model::skill::SkillView;
use crate::protocol::{AgentSummary, Request};
use crate::ui::present::agents;

/// Every listed agent (matching `query`), page after page.
async fn all_agents(ctx: &Context, query: Option<String>) -> anyhow::Result<Vec<AgentSummary>> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let answer = super::workspace_cmd::call_one(
            ctx,
            Request::AgentsList {
                limit: Some(crate::runtime::inspect::LIST_PAGE_MAX),
                cursor: cursor.take(),
                query: query.clone(),
            },
        )
        .await?;
        let page: crate::protocol::AgentsPage = serde_json::from_value(answer)?;
        out.extend(page.agents);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
}

pub async fn run(ctx: &Context, cmd: AgentCommand) -> anyhow::Result<ExitCode> {
    let Some((request, json)) = cmd.request() else {
        // A listing: every page of it.
        let AgentCommand::List { json, query } = &cmd else {
            unreachable!("only a listing has no single request")
        };
        let all = all_agents(ctx, query.clone()).await?;
        match json {
            true => say!("{}", serde_json::to_string_pretty(&all)?),
            false => say!("{}", agents::list_lines(&all).join("\n")),
        }
        return Ok(ExitCode::SUCCESS);
    };
    let answer = super::workspace_cmd::call_one(ctx, request).await?;
    if json {
        say!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let AgentCommand::Budget { .. } = cmd {
        let b: crate::protocol::views::BudgetAnswer = serde_json::from_value(answer)?;
        say!("{}", budget_lines(&b).join("\n"));
        return Ok(ExitCode::SUCCESS);
    }
    let lines = {
        let one: AgentSummary = serde_json::from_value(answer)?;
        let mut v = agents::show_lines(&one);
        match &cmd {
            AgentCommand::Create { .. } => v.insert(0, format!("created {}", one.id)),
            AgentCommand::Archive { .. } => v.insert(0, format!("archived {}", one.id)),
            AgentCommand::List { .. } | AgentCommand::Show { .. } | AgentCommand::Budget { .. } => {
            }
        }
        v
    };
    say!("{}", lines.join("\n"));
    Ok(ExitCode::SUCCESS)
}

impl AgentCommand {
    /// The one request the command makes; `None` for a listing, which
    /// pages (`all_agents`).
    fn request(&self) -> Option<(Request, bool)> {
        Some(match self {
            AgentCommand::List { .. } => return None,
            AgentCommand::Create {
                agent_id,
                template,
                json,
            } => (
                Request::AgentCreate {
                    agent_id: agent_id.clone(),
                    template: template.clone(),
                },
                *json,
            ),
            AgentCommand::Show { agent_id, json } => (
                Request::AgentStatus {
                    agent_id: agent_id.clone(),
                },
                *json,
            ),
            AgentCommand::Archive { agent_id, json } => (
                Request::AgentArchive {
                    agent_id: agent_id.clone(),
                },
                *json,
            ),
            AgentCommand::Budget {
                agent_id,
                daily_usd,
                daily_tokens,
                clear,
                json,
            } => (
                Request::AgentBudget {
                    agent_id: agent_id.clone(),
                    daily_usd: *daily_usd,
                    daily_tokens: *daily_tokens,
                    clear: *clear,
                },
                *json,
            ),
        })
    }
}

/// `holon agent budget`: what applies, where it comes from, and today.
fn budget_lines(b: &crate::protocol::views::BudgetAnswer) -> Vec<String> {
    use crate::ui::present::usage::budget_words;
    let words = |v| budget_words(v).unwrap_or_else(|| "none".into());
    let mut out = vec![
        format!("{}: budget {}", b.agent_id, words(&b.applies)),
        format!("  its own: {}", words(&b.own)),
    ];
    if let Some(d) = &b.today {
        let paused = if d.paused_by_budget {
            " · paused by it"
        } else {
            ""
        };
        out.push(format!(
            "  today ({}): ${:.2}, {} tokens{paused}",
            d.day, d.cost_usd, d.tokens
        ));
    }
    out
}

pub async fn skills(ctx: &Context, cmd: SkillsCommand) -> anyhow::Result<ExitCode> {
    let SkillsCommand::List { agent, json } = cmd;
    let agent = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let request = Request::SkillsList {
        agent_id: agent.clone(),
    };
    let answer = super::workspace_cmd::call_one(ctx, request).await?;
    if json {
        say!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let skills: Vec<SkillView> = serde_json::from_value(answer)?;
    say!("{}", agents::skill_lines(&agent, &skills).join("\n"));
    Ok(ExitCode::SUCCESS)
}
