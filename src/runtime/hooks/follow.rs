//! The follower of the committed events: which events tell which hooks
//! (`told`, pure), and one task per runtime that tells them off every
//! turn's path, in commit order per agent. It keeps each agent's next
//! `event_seq`; a follower that falls behind the broadcast reads each
//! agent's ledger back from there, so none is skipped while the runtime
//! runs, and at shutdown it tells what was already committed.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use tokio::sync::broadcast::error::RecvError;

use super::dispatch::{record_in, run_one, HookHost};
use super::input::{bounded, Detail, HookInput};
use crate::model::event::EventRecord;
use crate::protocol::events::Event;
use crate::runtime::settings::hooks::HookEvent;
use crate::store::Store;

/// The hook event a committed event tells, with what the input says of
/// it (pure); `None` for every other event.
pub fn told(e: &EventRecord) -> Option<(HookEvent, Detail)> {
    let told = match e.event() {
        Event::ToolExecuted(p) => (
            HookEvent::PostTool,
            Detail::Result {
                run_id: p.run_id,
                call_id: p.call_id,
                tool: p.tool_name,
                args: p.arguments,
                is_error: p.is_error,
                duration_ms: p.duration_ms,
                result_preview: p.result_preview,
            },
        ),
        Event::TurnTerminal(p) => (
            HookEvent::TurnEnd,
            Detail::Turn {
                run_id: p.run_id,
                message_id: p.message_id,
                outcome: p.kind.as_str().to_owned(),
            },
        ),
        Event::ApprovalRequested(p) => (
            HookEvent::ApprovalRequested,
            Detail::Approval {
                approval_id: p.approval.id,
                tool: p.approval.tool_name,
                summary: bounded(&p.approval.summary),
                reason: bounded(&p.approval.why),
            },
        ),
        Event::BriefCreated(p) => (
            HookEvent::Brief,
            Detail::Brief {
                brief_id: p.brief.id,
                kind: word(&p.brief.kind),
                text: bounded(&p.brief.text),
            },
        ),
        Event::AgentStateChanged(p) => {
            use crate::model::agent::AgentStatus as S;
            let went_idle = matches!(p.from, S::AwakeRunning | S::AwaitingTask)
                && matches!(p.to, S::Asleep | S::AwakeIdle);
            if !went_idle {
                return None;
            }
            (
                HookEvent::AgentIdle,
                Detail::Idle {
                    status: word(&p.to),
                },
            )
        }
        Event::MessageAdmitted(p) => {
            use crate::model::message::{MessageBody, MessageKind};
            if p.message.kind != MessageKind::OperatorPrompt {
                return None;
            }
            let text = match &p.message.body {
                MessageBody::Text { text } => bounded(text),
                _ => String::new(),
            };
            (
                HookEvent::PromptSubmitted,
                Detail::Prompt {
                    message_id: p.message.id,
                    text,
                },
            )
        }
        _ => return None,
    };
    Some(told)
}

/// A value's serde name (`asleep`, `result`).
fn word<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The kinds `told` reads: every other event is passed over undecoded.
const TOLD_KINDS: [&str; 6] = [
    "tool_executed",
    "turn_terminal",
    "approval_requested",
    "brief_created",
    "agent_state_changed",
    "message_admitted",
];

/// Tell the hooks of every committed event, until told to stop. Each agent's
/// next `event_seq` to look at is kept; after a lag each agent's ledger
/// is read from it (agents created since start from their first event).
pub(super) async fn follow(
    host: Weak<HookHost>,
    mut events: tokio::sync::broadcast::Receiver<Arc<EventRecord>>,
    mut stopping: tokio::sync::watch::Receiver<bool>,
    mut next: HashMap<String, u64>,
    since: String,
) {
    loop {
        let got = tokio::select! {
            got = events.recv() => got,
            _ = stopping.changed() => {
                // What was committed before the stop is still told.
                let Some(inner) = host.upgrade() else { return };
                loop {
                    use tokio::sync::broadcast::error::TryRecvError;
                    match events.try_recv() {
                        Ok(e) => tell(&inner, &mut next, &e).await,
                        Err(TryRecvError::Lagged(_)) => catch_up(&inner, &mut next, &since).await,
                        Err(TryRecvError::Empty | TryRecvError::Closed) => return,
                    }
                }
            }
        };
        let Some(inner) = host.upgrade() else { return };
        match got {
            Ok(e) => tell(&inner, &mut next, &e).await,
            Err(RecvError::Lagged(_)) => catch_up(&inner, &mut next, &since).await,
            Err(RecvError::Closed) => return,
        }
    }
}

/// Each agent's next `event_seq` now: where the follower starts.
pub(super) fn heads(store: &Store) -> HashMap<String, u64> {
    let Ok(read) = store.read() else {
        return HashMap::new();
    };
    let agents: Vec<crate::model::agent::AgentRecord> = read.agents().unwrap_or_default();
    agents
        .into_iter()
        .filter_map(|a| head_of(store, &a.id).map(|head| (a.id, head)))
        .collect()
}

/// `agent_id`'s next `event_seq` now (`None`: its ledger cannot be read).
fn head_of(store: &Store, agent_id: &str) -> Option<u64> {
    let last = store
        .read()
        .ok()?
        .events_before(agent_id, u64::MAX, 1)
        .ok()?;
    Some(last.last().map_or(0, |e| e.event_seq + 1))
}

async fn tell(host: &HookHost, next: &mut HashMap<String, u64>, e: &EventRecord) {
    let at = next.entry(e.agent_id.clone()).or_insert(0);
    if e.event_seq < *at {
        return;
    }
    *at = e.event_seq + 1;
    if !TOLD_KINDS.contains(&e.kind.as_str()) {
        return;
    }
    let hooks = host.for_agent(&e.agent_id);
    if hooks.is_empty() {
        return;
    }
    let Some((event, detail)) = told(e) else {
        return;
    };
    let input = HookInput::new(event, &e.agent_id, None, detail);
    let matching = hooks.matching(event, input.tool());
    if matching.is_empty() {
        return;
    }
    let input = HookInput {
        workspace: host.root_of(&e.agent_id),
        ..input
    };
    for hook in matching {
        let (_, run) = run_one(host, hook, &input, Some(e.event_seq)).await;
        let id = e.agent_id.clone();
        let recorded = host
            .store
            .write(move |tx| record_in(tx, &id, std::slice::from_ref(&run)))
            .await;
        if let Err(err) = recorded {
            tracing::warn!(hook = %hook.name, %err, "could not record a hook's run");
        }
    }
}

/// After a lag: every agent's ledger from where the follower was.
async fn catch_up(host: &HookHost, next: &mut HashMap<String, u64>, since: &str) {
    let agents: Vec<crate::model::agent::AgentRecord> =
        match host.store.read().and_then(|r| r.agents()) {
            Ok(a) => a,
            Err(err) => {
                tracing::warn!(%err, "hooks: cannot list agents to catch up");
                return;
            }
        };
    for agent in agents {
        if !next.contains_key(&agent.id) {
            // Unknown to the follower: an agent made since it started
            // is told from its first event; one whose head could not be
            // read at the start, from its head now (never its history).
            let start = match agent.created_at.as_str() >= since {
                true => 0,
                false => head_of(&host.store, &agent.id).unwrap_or(u64::MAX),
            };
            next.insert(agent.id.clone(), start);
        }
        loop {
            let from = next.get(&agent.id).copied().unwrap_or(u64::MAX);
            let page = match host
                .store
                .read()
                .and_then(|r| r.events(&agent.id, from, 256))
            {
                Ok(p) => p,
                Err(_) => break,
            };
            if page.is_empty() {
                break;
            }
            for e in &page {
                tell(host, next, e).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden sample of `kind` (tests/fixtures/events).
    fn sample(kind: &str) -> EventRecord {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/events/{kind}.json"));
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    }

    #[test]
    fn committed_events_tell_their_hooks() {
        let cases = [
            ("tool_executed", HookEvent::PostTool),
            ("turn_terminal", HookEvent::TurnEnd),
            ("approval_requested", HookEvent::ApprovalRequested),
            ("brief_created", HookEvent::Brief),
            ("message_admitted", HookEvent::PromptSubmitted),
        ];
        for (kind, event) in cases {
            let e = sample(kind);
            assert!(TOLD_KINDS.contains(&kind));
            let (told_event, detail) = told(&e).unwrap_or_else(|| panic!("{kind} told nothing"));
            assert_eq!(told_event, event, "{kind}");
            let input = serde_json::to_value(HookInput::new(event, &e.agent_id, None, detail));
            let input = input.unwrap_or_default();
            assert!(
                input.as_object().is_some_and(|o| o.len() > 5),
                "{kind}: {input}"
            );
        }
        // Tool events carry the call, whole.
        let Some((_, Detail::Result { tool, args, .. })) = told(&sample("tool_executed")) else {
            panic!("no result");
        };
        assert!(!tool.is_empty() && !args.is_null());
    }

    #[test]
    fn only_an_agent_that_worked_goes_idle() {
        let mut e = sample("agent_state_changed");
        // The sample dozes off from idle: not an agent that just worked.
        assert!(told(&e).is_none());
        e.payload["from"] = "awake_running".into();
        assert_eq!(
            told(&e),
            Some((
                HookEvent::AgentIdle,
                Detail::Idle {
                    status: "asleep".into()
                }
            ))
        );
        e.payload["from"] = "booting".into();
        e.payload["to"] = "awake_idle".into();
        assert!(told(&e).is_none(), "a start is not an agent going idle");
    }

    #[test]
    fn prompts_from_elsewhere_are_not_operator_prompts() {
        let mut e = sample("message_admitted");
        e.payload["message"]["kind"] = "task_result".into();
        assert!(told(&e).is_none());
        assert!(told(&sample("tool_started")).is_none());
    }
}
