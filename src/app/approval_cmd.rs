//! `holon approvals | approve ID | deny ID | policy`: the operator's side
//! of durable approvals, and the default policy that decides what asks. Listing works without a running runtime; answering
//! needs it (answers go through the runtime, which runs the approved call
//! and tells the agent), so an answer can never be lost to a stopped one.

use std::process::ExitCode;

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
        allow_commands: a.allow_commands.clone(),
        allow_paths: a.allow_paths.clone(),
        reset: a.reset,
    })
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
        lines.push(format!("never asks for: {}", p.allow_commands.join(", ")));
    }
    if !p.allow_paths.is_empty() {
        lines.push(format!(
            "patches write freely under: {}",
            p.allow_paths.join(", ")
        ));
    }
    if !p.allow_tools.is_empty() {
        lines.push(format!(
            "MCP tools that never ask: {}",
            p.allow_tools.join(", ")
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
    lines
}
