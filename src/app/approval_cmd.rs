//! `holon approvals | approve ID | deny ID | policy`: the operator's side
//! of durable approvals, and the default policy that decides what asks. Listing works without a running runtime; answering
//! needs it (answers go through the runtime, which runs the approved call
//! and tells the agent), so an answer can never be lost to a stopped one.

use std::process::ExitCode;

use serde_json::Value;

use super::Context;
use crate::protocol::types::ApprovalRecord;
use crate::protocol::Request;
use crate::ui::present::approvals::{answered, lines};

pub async fn list(
    ctx: &Context,
    agent: Option<String>,
    all: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let request = Request::ApprovalsList {
        agent_id: agent,
        include_answered: all,
    };
    let answer = super::workspace_cmd::call_one(ctx, request).await?;
    if json {
        say!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let records: Vec<ApprovalRecord> = serde_json::from_value(answer)?;
    say!("{}", lines(&records).join("\n"));
    Ok(ExitCode::SUCCESS)
}

async fn answer(ctx: &Context, request: Request, json: bool) -> anyhow::Result<ExitCode> {
    let Some(client) = super::daemon::connect(ctx).await else {
        anyhow::bail!(
            "no runtime is running: answers go through it (it runs the approved call and tells \
             the agent); start it with `holon --detach`, then answer"
        );
    };
    let rec: ApprovalRecord = crate::protocol::call_typed(&client, request).await?;
    if json {
        say!("{}", serde_json::to_string_pretty(&rec)?);
    } else {
        say!("{}", answered(&rec));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn approve(
    ctx: &Context,
    approval_id: String,
    always: bool,
    agent_id: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let request = Request::ApprovalApprove {
        approval_id,
        agent_id,
        always,
    };
    answer(ctx, request, json).await
}

pub async fn deny(
    ctx: &Context,
    approval_id: String,
    note: Option<String>,
    agent_id: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let request = Request::ApprovalDeny {
        approval_id,
        agent_id,
        note,
    };
    answer(ctx, request, json).await
}

/// `holon policy`: show or change the runtime's default policy. It goes
/// through the running runtime when there is one (every agent's next call
/// follows it), else to the store directly.
pub async fn default_policy(
    ctx: &Context,
    change: &super::cli::PolicyArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use crate::model::approval::{DefaultPolicy, DefaultPolicySource};
    let request = Request::RuntimePolicy {
        change: policy_change(change)?,
    };
    let answer = super::workspace_cmd::call_one(ctx, request).await?;
    if json {
        say!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let d: DefaultPolicy = serde_json::from_value(answer)?;
    let whose = match d.source {
        DefaultPolicySource::Operator => {
            "set with holon policy; --reset returns to config [policy]"
        }
        DefaultPolicySource::Config => "config [policy]",
    };
    let mut out = policy_lines("default", whose, &d.policy);
    out.push(
        "every workspace without its own policy follows it (holon workspace policy ID sets one)"
            .into(),
    );
    say!("{}", out.join("\n"));
    Ok(ExitCode::SUCCESS)
}

/// The change `--approval`, `--sandbox`, ... ask for, or why one is not a
/// value.
pub fn policy_change(
    a: &super::cli::PolicyArgs,
) -> anyhow::Result<crate::model::approval::PolicyChange> {
    use crate::model::approval::Approval;
    use crate::model::sandbox::{NetworkAccess, SandboxMode};
    fn parse<T>(
        v: &Option<String>,
        f: fn(&str) -> Option<T>,
        what: &str,
        choices: &str,
    ) -> anyhow::Result<Option<T>> {
        match v.as_deref() {
            None => Ok(None),
            Some(s) => f(s)
                .map(Some)
                .ok_or_else(|| anyhow::anyhow!("`{s}` is not {what}: {choices}")),
        }
    }
    Ok(crate::model::approval::PolicyChange {
        approval: parse(
            &a.approval,
            Approval::parse,
            "an approval mode",
            Approval::CHOICES,
        )?,
        sandbox: parse(
            &a.sandbox,
            SandboxMode::parse,
            "a sandbox mode",
            SandboxMode::CHOICES,
        )?,
        network: parse(
            &a.network,
            NetworkAccess::parse,
            "a network setting",
            NetworkAccess::CHOICES,
        )?,
        reviewer: match a.reviewer.as_deref() {
            None => None,
            Some(r) => {
                crate::model::review::ReviewerChoice::parse(r).map_err(anyhow::Error::msg)?;
                Some(r.trim().to_owned())
            }
        },
        allow_commands: a.allow_commands.clone(),
        allow_paths: a.allow_paths.clone(),
        reset: a.reset,
        forget: a.forget.clone(),
    })
}

/// Rules as the operator reads them: a rule can come from a command the
/// model ran, so anything that could act on the terminal is escaped.
pub fn shown(rules: &[String]) -> String {
    let rules: Vec<_> = rules
        .iter()
        .map(|r| crate::model::text::escape_hidden(r))
        .collect();
    rules.join(", ")
}

/// A policy in a few lines: `NAME: approval MODE (WHOSE)`, its allow-lists
/// and how model commands are confined.
pub fn policy_lines(
    name: &str,
    whose: &str,
    p: &crate::model::approval::ApprovalPolicy,
) -> Vec<String> {
    use crate::model::sandbox::SandboxMode;
    let mut lines = vec![format!(
        "{name}: approval {} ({whose})",
        p.approval.as_str()
    )];
    if !p.allow_commands.is_empty() {
        lines.push(format!("never asks for: {}", shown(&p.allow_commands)));
    }
    if !p.allow_paths.is_empty() {
        lines.push(format!(
            "patches write freely under: {}",
            shown(&p.allow_paths)
        ));
    }
    if !p.allow_tools.is_empty() {
        lines.push(format!(
            "MCP tools that never ask: {}",
            shown(&p.allow_tools)
        ));
    }
    let sandbox = p.sandbox.unwrap_or_default();
    let network = p.network.unwrap_or_default();
    lines.push(format!(
        "model commands: sandbox {}, network {}{}",
        sandbox.as_str(),
        network.as_str(),
        match sandbox {
            SandboxMode::Off => " (they reach what your user can)",
            _ => " (an escape asks unless approval is `never`)",
        }
    ));
    if let Some(r) = &p.reviewer {
        lines.push(format!(
            "reviewer: {}",
            crate::model::text::escape_hidden(r.label())
        ));
    }
    lines
}

/// `holon policy rules`: what the operator's "always" answers allowed, in
/// each of the agent's workspaces, and how to remove one.
pub async fn rules(ctx: &Context, opts: &super::cli::WorkspaceOpts) -> anyhow::Result<ExitCode> {
    use crate::model::workspace::WorkspaceList;
    use crate::model::workspace::AGENT_HOME_ID;
    use crate::protocol::payloads::WorkspacePolicyChanged;
    let agent_id = opts
        .agent
        .clone()
        .unwrap_or_else(|| ctx.config.default_agent.clone());
    let list = Request::WorkspaceList {
        agent_id: agent_id.clone(),
    };
    let list: WorkspaceList =
        serde_json::from_value(super::workspace_cmd::call_one(ctx, list).await?)?;
    let mut ids = vec![(AGENT_HOME_ID.to_owned(), "the agent's home".to_owned())];
    ids.extend(
        list.attached
            .iter()
            .filter(|w| w.binding.workspace_id != AGENT_HOME_ID)
            .map(|w| (w.binding.workspace_id.clone(), w.binding.anchor.clone())),
    );
    let requests: Vec<Request> = ids
        .iter()
        .map(|(id, _)| Request::WorkspacePolicy {
            agent_id: agent_id.clone(),
            workspace_id: id.clone(),
            change: Default::default(),
        })
        .collect();
    let answers = super::workspace_cmd::call_any(ctx, requests).await?;
    let mut rows = Vec::new();
    for ((id, anchor), answer) in ids.iter().zip(answers) {
        let p: WorkspacePolicyChanged = serde_json::from_value(answer)?;
        let kinds = [
            (&p.always.allow_commands, "command prefix"),
            (&p.always.allow_paths, "patch path"),
            (&p.always.allow_tools, "MCP tool"),
        ];
        for (list, kind) in kinds {
            for rule in list {
                rows.push((id.clone(), anchor.clone(), rule.clone(), kind));
            }
        }
    }
    if opts.json {
        let out: Vec<Value> = rows
            .iter()
            .map(|(id, anchor, rule, kind)| {
                serde_json::json!({"workspace_id": id, "anchor": anchor, "rule": rule, "kind": kind})
            })
            .collect();
        say!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        say!(
            "{agent_id} has no \"always\" rules: approving a call with `a a` in the console (or \
             `holon approve ID --always`) adds one."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut last = None;
    for (id, anchor, rule, kind) in &rows {
        if last != Some(id) {
            say!("{id} ({}):", crate::model::text::escape_hidden(anchor));
            last = Some(id);
        }
        // A rule comes from a command the model ran: shown escaped.
        let shown = crate::model::text::escape_hidden(rule);
        // The command names the rule exactly (never what it looked like),
        // and `=` keeps a rule starting with `-` an argument.
        let word = crate::model::text::shell_word(rule);
        say!("  {shown}  ({kind})  remove: holon workspace policy {id} --forget={word}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `holon approvals audit`: every reviewed request (from the
/// `approval_reviewed` events, so none is missed however old), newest
/// first, within `--since` and of `--verdict`.
pub async fn audit(
    ctx: &Context,
    agent: Option<String>,
    since: Option<String>,
    verdict: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use crate::protocol::events::Event;
    let from_day = match &since {
        Some(s) => {
            Some(super::usage_cmd::since_day(s, crate::now_ms()).map_err(anyhow::Error::msg)?)
        }
        None => None,
    };
    let verdict = match verdict.as_deref() {
        None => None,
        Some(v) => Some(
            crate::model::review::ReviewVerdict::parse(v)
                .ok_or_else(|| anyhow::anyhow!("--verdict {v}: give allow, deny or ask"))?,
        ),
    };
    let client = super::offline::client(ctx).await?;
    let agents = match agent {
        Some(a) => vec![a],
        None => super::usage_cmd::agent_ids(&*client).await?,
    };
    // Each request's latest record: its review, and how it was answered
    // since (the reviewer's word, or a person's).
    let mut latest: std::collections::BTreeMap<String, (String, ApprovalRecord)> =
        std::collections::BTreeMap::new();
    for agent in &agents {
        for kind in ["approval_reviewed", "approval_granted", "approval_denied"] {
            super::usage_cmd::for_each_event(&*client, agent, kind, |e| {
                let (Event::ApprovalReviewed(p)
                | Event::ApprovalGranted(p)
                | Event::ApprovalDenied(p)) = e.event()
                else {
                    return;
                };
                let key = format!("{agent}/{}", p.approval.id);
                if latest.get(&key).is_none_or(|(ts, _)| e.ts >= *ts) {
                    latest.insert(key, (e.ts.clone(), p.approval));
                }
            })
            .await?;
        }
    }
    let mut reviewed: Vec<ApprovalRecord> = latest
        .into_values()
        .map(|(_, rec)| rec)
        .filter(|rec| {
            let Some(r) = &rec.review else { return false };
            let day = r.reviewed_at.get(..10).unwrap_or("");
            from_day.as_deref().is_none_or(|d| day >= d) && verdict.is_none_or(|v| v == r.verdict)
        })
        .collect();
    reviewed.sort_by(|a, b| {
        let at = |r: &ApprovalRecord| r.review.as_ref().map(|v| v.reviewed_at.clone());
        at(b).cmp(&at(a))
    });
    if json {
        say!("{}", serde_json::to_string_pretty(&reviewed)?);
    } else {
        say!(
            "{}",
            crate::ui::present::approvals::audit_lines(&reviewed).join("\n")
        );
    }
    Ok(ExitCode::SUCCESS)
}
