//! `holon approvals | approve ID | deny ID`: the operator's side of
//! durable approvals. Listing works without a running runtime; answering
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
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let records: Vec<ApprovalRecord> = serde_json::from_value(answer)?;
    println!("{}", lines(&records).join("\n"));
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
        println!("{}", serde_json::to_string_pretty(&rec)?);
    } else {
        println!("{}", answered(&rec));
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
