//! `holon debug export-fixture` and `holon debug replay`: turn a live
//! agent's records into the scheduler fixture layout (docs/fixtures.md),
//! and rebuild the scheduler projection from such a folder.

use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use super::Context;
use crate::model::agent::AgentRecord;
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
    say!("wrote fixture for `{agent_id}` to {}", dir.display());
    say!("{}", serde_json::to_string(&expected["decision"])?);
    Ok(ExitCode::SUCCESS)
}

pub fn replay(dir: &Path, input: Option<ReplayInput>) -> anyhow::Result<ExitCode> {
    let input = match input {
        Some(i) => i,
        None => read_input_file(dir)?.unwrap_or(ReplayInput::Idle),
    };
    let out = replay_dir(dir, input, crate::now_ms())?;
    say!("{}", serde_json::to_string_pretty(&out)?);
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
        let preview: crate::protocol::views::PromptPreview = serde_json::from_value(answer)?;
        out.line(crate::ui::present::context::full(&preview, brief).trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `holon debug latency`: the last `turns` turns' time, split, from the
/// agent's events (through the running runtime, or the store when none
/// runs). Reads the turn ends first, then every event from the end of
/// the turn before the first one shown.
pub async fn latency(
    ctx: &Context,
    agent: Option<String>,
    turns: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use crate::protocol::{call_typed, EventsPage, Request};
    let agent_id = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let client = super::offline::client(ctx).await?;
    let turns = turns.max(1);
    let page = |from_seq: u64, kind: Option<&str>| Request::EventsPage {
        agent_id: agent_id.clone(),
        from_seq,
        limit: 1000,
        kind: kind.map(str::to_owned),
    };
    // The ends of its turns: where to start reading (the end before the
    // first turn shown, and one more for a message admitted during it).
    let mut ends: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
    let mut from = 1;
    loop {
        let got: EventsPage = call_typed(&*client, page(from, Some("turn_terminal"))).await?;
        let Some(last) = got.events.last() else { break };
        from = last.event_seq + 1;
        for e in &got.events {
            ends.push_back(e.event_seq);
            if ends.len() > turns + 2 {
                ends.pop_front();
            }
        }
    }
    let start = match ends.len() > turns {
        true => ends[0] + 1,
        false => 1,
    };
    let mut events = Vec::new();
    let mut from = start;
    loop {
        let got: EventsPage = call_typed(&*client, page(from, None)).await?;
        let Some(last) = got.events.last() else { break };
        from = last.event_seq + 1;
        events.extend(got.events);
    }
    let report = crate::ui::present::latency::report(&agent_id, &events, turns);
    let mut out = super::commands::Out::new();
    match json {
        true => out.line(&serde_json::to_string_pretty(&report)?)?,
        false => out.line(crate::ui::present::latency::text(&report).trim_end())?,
    }
    Ok(ExitCode::SUCCESS)
}
