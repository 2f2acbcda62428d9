//! Scheduler replay fixtures: the public on-disk format (documented in
//! `docs/fixtures.md`) that `holon debug export-fixture` writes and
//! `holon debug replay` reads. A fixture folder holds `agent.json` and
//! `ledger/{messages,queue_entries,events,tasks,work_items,waiting_intents,
//! timers,tools,briefs}.jsonl`; any file may be missing and every field but
//! ids is optional with the spec's default. The loader turns the folder
//! into typed records (`FixtureSnapshot`); replay builds the scheduler
//! projection, runs `decide`, derives closure and posture, and returns one
//! JSON object.
//!
//! Invariants: the writer and loader round-trip; "last line per id wins",
//! except that a terminal task status is never reopened by a later
//! non-terminal line; unknown fields are ignored; a malformed line is an
//! error naming its file and line. This module does file I/O only at its
//! edges (`load_dir`, `write_fixture`); replay itself is pure.

mod load;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::{json, Value};

use super::continuation::tick_key_of;
use super::queue::QueueEntry;
use super::scheduler::{
    decide, ProjectionInputs, QueuedMessage, SchedulerInput, SchedulerProjection, ToolExecutionRef,
};
use crate::model::agent::AgentRecord;
use crate::model::decision::TurnTerminalKind;
use crate::model::message::MessageEnvelope;
use crate::model::task::TaskRecord;
use crate::model::waiting::TimerRecord;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::work::WorkItemRecord;

pub use load::load_dir;

/// The ledger files, in the order the writer emits them.
pub const LEDGER_FILES: [&str; 9] = [
    "messages.jsonl",
    "queue_entries.jsonl",
    "events.jsonl",
    "tasks.jsonl",
    "work_items.jsonl",
    "waiting_intents.jsonl",
    "timers.jsonl",
    "tools.jsonl",
    "briefs.jsonl",
];

#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not valid fixture JSON: {message}", path.display())]
    MalformedFile { path: PathBuf, message: String },
    #[error("{}:{line}: malformed line: {message}", path.display())]
    MalformedLine {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("cannot serialise {what} for the fixture: {message}")]
    Serialize { what: String, message: String },
    #[error("unknown replay input `{0}` (expected idle, wake_hint or message)")]
    UnknownInput(String),
}

/// The scheduler input a replay runs with (default `idle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReplayInput {
    #[default]
    Idle,
    WakeHint,
    Message,
}

impl ReplayInput {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayInput::Idle => "idle",
            ReplayInput::WakeHint => "wake_hint",
            ReplayInput::Message => "message",
        }
    }

    pub fn scheduler_input(self) -> SchedulerInput {
        match self {
            ReplayInput::Idle => SchedulerInput::Idle,
            ReplayInput::WakeHint => SchedulerInput::WakeHint,
            ReplayInput::Message => SchedulerInput::Message,
        }
    }
}

impl FromStr for ReplayInput {
    type Err = FixtureError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "idle" => Ok(ReplayInput::Idle),
            "wake_hint" => Ok(ReplayInput::WakeHint),
            "message" => Ok(ReplayInput::Message),
            other => Err(FixtureError::UnknownInput(other.to_owned())),
        }
    }
}

/// Typed records of one agent, as the fixture holds them. Events, tool
/// executions and briefs are kept as raw JSON objects (their record types
/// belong to the store and turn layers); the scheduler reads only the
/// fields `docs/fixtures.md` lists.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureSnapshot {
    pub agent: AgentRecord,
    pub messages: Vec<MessageEnvelope>,
    pub queue_entries: Vec<QueueEntry>,
    pub events: Vec<Value>,
    pub tasks: Vec<TaskRecord>,
    pub work_items: Vec<WorkItemRecord>,
    pub waiting_intents: Vec<WaitingIntentRecord>,
    pub timers: Vec<TimerRecord>,
    pub tools: Vec<Value>,
    pub briefs: Vec<Value>,
}

/// Facts the projection needs that live in the append-only ledgers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LedgerFacts {
    pub emitted_tick_keys: BTreeSet<String>,
    pub last_turn_terminal: Option<TurnTerminalKind>,
    pub runtime_error: Option<String>,
    pub tool_executions: Vec<ToolExecutionRef>,
}

/// What one event line contributes.
enum EventFact {
    TickEmitted(String),
    TurnStarted,
    TurnTerminal(TurnTerminalKind),
    RuntimeError(String),
}

/// A field of an event: `payload.<key>`, else `data.<key>`, else top level.
fn event_field<'a>(event: &'a Value, key: &str) -> Option<&'a Value> {
    event
        .get("payload")
        .and_then(|p| p.get(key))
        .or_else(|| event.get("data").and_then(|d| d.get(key)))
}

fn event_fact(event: &Value) -> Result<Option<EventFact>, String> {
    let kind = event
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let text = |key: &str| {
        event_field(event, key)
            .or_else(|| event.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(match kind {
        "system_tick_emitted" => text("idempotency_key").map(EventFact::TickEmitted),
        "turn_started" => Some(EventFact::TurnStarted),
        "turn_terminal" => {
            let raw = event_field(event, "terminal_kind")
                .or_else(|| event_field(event, "kind"))
                .or_else(|| event.get("terminal_kind"))
                .cloned()
                .unwrap_or(Value::String("completed".into()));
            let kind: TurnTerminalKind = serde_json::from_value(raw).map_err(|e| {
                format!(
                    "turn_terminal kind must be completed, aborted or baseline_over_budget ({e})"
                )
            })?;
            Some(EventFact::TurnTerminal(kind))
        }
        // Holon's own ledger names the failure in its artifact; other
        // fixture sources write `message` or `error`.
        "runtime_error" => Some(EventFact::RuntimeError(
            event_field(event, "failure_artifact")
                .and_then(|a| a.get("summary"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| text("message"))
                .or_else(|| text("error"))
                .unwrap_or_else(|| "runtime_error".to_owned()),
        )),
        _ => None,
    })
}

fn tool_ref(tool: &Value) -> Option<ToolExecutionRef> {
    Some(ToolExecutionRef {
        id: tool.get("id")?.as_str()?.to_owned(),
        message_id: tool
            .get("message_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

impl FixtureSnapshot {
    /// Derive the ledger facts. A bad event is reported at its line in the
    /// written `events.jsonl` (one record per line).
    pub fn ledger_facts(&self) -> Result<LedgerFacts, FixtureError> {
        let mut facts = LedgerFacts::default();
        let mut error_active: Option<String> = None;
        for (index, event) in self.events.iter().enumerate() {
            let fact = event_fact(event).map_err(|message| FixtureError::MalformedLine {
                path: PathBuf::from("ledger/events.jsonl"),
                line: index + 1,
                message,
            })?;
            match fact {
                Some(EventFact::TickEmitted(key)) => {
                    facts.emitted_tick_keys.insert(key);
                }
                Some(EventFact::TurnStarted) => {
                    // A newer turn makes the previous terminal stale.
                    facts.last_turn_terminal = None;
                    error_active = None;
                }
                Some(EventFact::TurnTerminal(kind)) => {
                    facts.last_turn_terminal = Some(kind);
                    error_active = None;
                }
                Some(EventFact::RuntimeError(message)) => error_active = Some(message),
                None => {}
            }
        }
        facts.runtime_error = error_active;
        facts.emitted_tick_keys.extend(
            self.messages
                .iter()
                .filter_map(tick_key_of)
                .map(str::to_owned),
        );
        for tool in self.tools.iter().filter_map(tool_ref) {
            match facts.tool_executions.iter_mut().find(|t| t.id == tool.id) {
                Some(existing) => *existing = tool,
                None => facts.tool_executions.push(tool),
            }
        }
        Ok(facts)
    }

    /// Build the scheduler projection these records describe.
    pub fn projection(&self, now_ms: i64) -> Result<SchedulerProjection, FixtureError> {
        let facts = self.ledger_facts()?;
        let queue: Vec<QueuedMessage<'_>> = self
            .queue_entries
            .iter()
            .filter_map(|entry| {
                self.messages
                    .iter()
                    .find(|m| m.id == entry.message_id)
                    .map(|envelope| QueuedMessage { entry, envelope })
            })
            .collect();
        Ok(SchedulerProjection::build(
            ProjectionInputs {
                agent: &self.agent,
                queue: &queue,
                work_items: &self.work_items,
                tasks: &self.tasks,
                waiting_intents: &self.waiting_intents,
                timers: &self.timers,
                tool_executions: &facts.tool_executions,
                emitted_tick_keys: &facts.emitted_tick_keys,
                last_turn_terminal: facts.last_turn_terminal,
                runtime_error: facts.runtime_error.as_deref(),
                pending_approvals: &[],
                queued_beyond: &[],
            },
            now_ms,
        ))
    }
}

fn serialize<T: serde::Serialize>(what: &str, value: &T) -> Result<Value, FixtureError> {
    serde_json::to_value(value).map_err(|e| FixtureError::Serialize {
        what: what.to_owned(),
        message: e.to_string(),
    })
}

/// Replay typed records: projection, decision, closure and posture as the
/// replay JSON object.
pub fn replay_snapshot(
    snapshot: &FixtureSnapshot,
    input: ReplayInput,
    now_ms: i64,
) -> Result<Value, FixtureError> {
    let projection = snapshot.projection(now_ms)?;
    let decision = decide(&projection, input.scheduler_input());
    let closure = projection.closure();
    let posture = projection.posture();
    // A message reduced without a turn: whether its content is kept for
    // the agent's next model turn (never dropped unsaid).
    let carried = match decision.kind {
        crate::model::decision::SchedulerDecisionKind::ReduceMessageOnly => decision
            .message_id
            .as_deref()
            .and_then(|m| snapshot.messages.iter().find(|e| e.id == m))
            .map(|envelope| {
                let trigger =
                    crate::runtime::continuation::ContinuationTrigger::from_envelope(envelope);
                crate::runtime::continuation::carried_for_model(&trigger, &decision.evidence)
            }),
        _ => None,
    };
    let mut out = json!({
        "projection": serialize("projection", &projection)?,
        "decision": {
            "kind": decision.kind.as_str(),
            "reason": decision.reason.as_str(),
            "model_reentry": decision.model_reentry,
            "liveness_only": decision.liveness_only,
            "work_item_id": decision.work_item_id,
            "task_id": decision.task_id,
            "evidence": decision.evidence,
        },
        "closure": {
            "outcome": closure.outcome.as_str(),
            "waiting_reason": serialize("closure waiting reason", &closure.waiting_reason)?,
            "work_signal": serialize("closure work signal", &closure.work_signal)?,
        },
        "posture": posture.posture.as_str(),
    });
    if let Some(carried) = carried {
        out["decision"]["carried_for_model"] = json!(carried);
    }
    Ok(out)
}

/// Load a fixture folder and replay it.
pub fn replay_dir(dir: &Path, input: ReplayInput, now_ms: i64) -> Result<Value, FixtureError> {
    replay_snapshot(&load_dir(dir)?, input, now_ms)
}

/// The optional per-case `input` file (`idle`, `wake_hint` or `message`).
pub fn read_input_file(dir: &Path) -> Result<Option<ReplayInput>, FixtureError> {
    let path = dir.join("input");
    match std::fs::read_to_string(&path) {
        Ok(text) => text.parse().map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FixtureError::Read { path, source }),
    }
}

fn write_file(path: PathBuf, text: &str) -> Result<(), FixtureError> {
    std::fs::write(&path, text).map_err(|source| FixtureError::Write { path, source })
}

fn jsonl<T: serde::Serialize>(what: &str, records: &[T]) -> Result<String, FixtureError> {
    let mut out = String::new();
    for record in records {
        let line = serde_json::to_string(record).map_err(|e| FixtureError::Serialize {
            what: what.to_owned(),
            message: e.to_string(),
        })?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// Write typed records in the fixture layout (every ledger file, possibly
/// empty). `load_dir` reads back an equal snapshot.
pub fn write_fixture(dir: &Path, snapshot: &FixtureSnapshot) -> Result<(), FixtureError> {
    let ledger = dir.join("ledger");
    std::fs::create_dir_all(&ledger).map_err(|source| FixtureError::Write {
        path: ledger.clone(),
        source,
    })?;
    let agent =
        serde_json::to_string_pretty(&snapshot.agent).map_err(|e| FixtureError::Serialize {
            what: "agent".to_owned(),
            message: e.to_string(),
        })?;
    write_file(dir.join("agent.json"), &format!("{agent}\n"))?;
    let s = snapshot;
    let bodies = [
        jsonl("messages", &s.messages)?,
        jsonl("queue entries", &s.queue_entries)?,
        jsonl("events", &s.events)?,
        jsonl("tasks", &s.tasks)?,
        jsonl("work items", &s.work_items)?,
        jsonl("waiting intents", &s.waiting_intents)?,
        jsonl("timers", &s.timers)?,
        jsonl("tools", &s.tools)?,
        jsonl("briefs", &s.briefs)?,
    ];
    for (name, body) in LEDGER_FILES.iter().zip(bodies) {
        write_file(ledger.join(name), &body)?;
    }
    Ok(())
}

/// `holon debug export-fixture`: write the records, replay the written
/// folder with `idle` and store the result as `expected.json`.
pub fn export_fixture(
    dir: &Path,
    snapshot: &FixtureSnapshot,
    now_ms: i64,
) -> Result<Value, FixtureError> {
    write_fixture(dir, snapshot)?;
    let expected = replay_dir(dir, ReplayInput::Idle, now_ms)?;
    let text = serde_json::to_string_pretty(&expected).map_err(|e| FixtureError::Serialize {
        what: "expected.json".to_owned(),
        message: e.to_string(),
    })?;
    write_file(dir.join("expected.json"), &format!("{text}\n"))?;
    Ok(expected)
}
