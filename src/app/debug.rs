//! `holon debug export-fixture` and `holon debug replay`: turn a live
//! agent's records into the scheduler fixture layout (docs/fixtures.md),
//! and rebuild the scheduler projection from such a folder.

use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use super::Context;
use crate::runtime::agent::AgentRecord;
use crate::runtime::fixture::{
    export_fixture, read_input_file, replay_dir, FixtureSnapshot, ReplayInput,
};
use crate::store::Keyed;

pub async fn export(ctx: &Context, agent: Option<String>, dir: &Path) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store().await?;
    let agent_id = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let rx = store.read()?;
    let Some(agent) = rx.agent::<AgentRecord>(&agent_id)? else {
        anyhow::bail!("no agent `{agent_id}`; list agents with `holon status`");
    };
    let mut events = Vec::new();
    let mut from = 1;
    loop {
        let page = rx.events(&agent_id, from, 5000)?;
        let Some(last) = page.last() else { break };
        from = last.event_seq + 1;
        for e in page {
            events.push(serde_json::to_value(&e)?);
        }
    }
    // A brief's record is its `brief_created` event.
    let briefs = events
        .iter()
        .filter(|e| e["kind"] == "brief_created")
        .map(|e| e["payload"]["brief"].clone())
        .collect();
    // A message's envelope is its `message_admitted` event's (stores
    // before 2026-11-24 also kept a copy in the `messages` table).
    let messages = events
        .iter()
        .filter(|e| e["kind"] == "message_admitted")
        .map(|e| serde_json::from_value(e["payload"]["message"].clone()))
        .collect::<Result<_, _>>()?;
    let snapshot = FixtureSnapshot {
        messages,
        queue_entries: rx.list(Keyed::QueueEntries, &agent_id)?,
        events,
        tasks: rx.list(Keyed::Tasks, &agent_id)?,
        work_items: rx.list(Keyed::WorkItems, &agent_id)?,
        waiting_intents: rx.list(Keyed::WaitingIntents, &agent_id)?,
        timers: rx.list(Keyed::Timers, &agent_id)?,
        tools: rx.list::<Value>(Keyed::ToolExecutions, &agent_id)?,
        briefs,
        agent,
    };
    let expected = export_fixture(dir, &snapshot, crate::now_ms())?;
    println!("wrote fixture for `{agent_id}` to {}", dir.display());
    println!("{}", serde_json::to_string(&expected["decision"])?);
    Ok(ExitCode::SUCCESS)
}

pub fn replay(dir: &Path, input: Option<ReplayInput>) -> anyhow::Result<ExitCode> {
    let input = match input {
        Some(i) => i,
        None => read_input_file(dir)?.unwrap_or(ReplayInput::Idle),
    };
    let out = replay_dir(dir, input, crate::now_ms())?;
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}

/// `holon debug prompt`: the frame the agent's next turn would send, from
/// the running runtime or from the store when none runs.
pub async fn prompt(
    ctx: &Context,
    agent: Option<String>,
    json: bool,
    brief: bool,
) -> anyhow::Result<ExitCode> {
    let agent_id = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let request = crate::protocol::Request::AgentPrompt { agent_id };
    let answer = super::workspace_cmd::call_one(ctx, request).await?;
    let mut out = super::commands::Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&answer)?)?;
    } else {
        let preview: crate::runtime::turn::prompt::PromptPreview = serde_json::from_value(answer)?;
        out.line(crate::ui::present::context::full(&preview, brief).trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}
