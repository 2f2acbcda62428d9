//! `holon trigger show | rotate | revoke | deliver`: the agent's external
//! trigger through the same socket methods the console uses: the running
//! runtime, else (no URL then) the store for `show` and a runtime started
//! in this process for the rest.

use std::process::ExitCode;

use super::cli::TriggerCommand;
use super::Context;
use crate::model::trigger::DeliveryMeta;
use crate::protocol::views::{DeliveryReceipt, TriggerView};
use crate::protocol::Request;
use crate::ui::present::trigger;

pub async fn run(ctx: &Context, cmd: TriggerCommand) -> anyhow::Result<ExitCode> {
    let agent = |a: &Option<String>| {
        a.clone()
            .unwrap_or_else(|| ctx.config.default_agent.clone())
    };
    let (request, json) = match &cmd {
        TriggerCommand::Show(o) => (
            Request::TriggerShow {
                agent_id: agent(&o.agent),
            },
            o.json,
        ),
        TriggerCommand::Rotate(o) => (
            Request::TriggerRotate {
                agent_id: agent(&o.agent),
            },
            o.json,
        ),
        TriggerCommand::Revoke(o) => (
            Request::TriggerRevoke {
                agent_id: agent(&o.agent),
            },
            o.json,
        ),
        TriggerCommand::Deliver {
            opts,
            source,
            resource,
            summary,
        } => (
            Request::TriggerDeliver {
                agent_id: agent(&opts.agent),
                meta: DeliveryMeta {
                    source: source.clone(),
                    resource: resource.clone(),
                    summary: summary.clone(),
                },
            },
            opts.json,
        ),
    };
    let deliver = matches!(cmd, TriggerCommand::Deliver { .. });
    let answer = super::workspace_cmd::call_one(ctx, request).await?;
    if json {
        say!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    if deliver {
        let r: DeliveryReceipt = serde_json::from_value(answer)?;
        say!("{}", trigger::receipt(&r));
    } else {
        let view: TriggerView = serde_json::from_value(answer)?;
        say!("{}", trigger::lines(&view).join("\n"));
    }
    Ok(ExitCode::SUCCESS)
}
