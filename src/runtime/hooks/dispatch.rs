//! Hooks in the runtime. `pre_tool` hooks run on the call's path, after
//! the call is recorded as started and before the approval gate: the
//! first that refuses ends the call with its reason. The other events'
//! hooks are told by a follower of the committed events (`follow`), off
//! every turn's path, in commit order per agent; a follower that falls
//! behind the broadcast resumes from each agent's ledger, so none is
//! skipped while the runtime runs. Each run is a `hook_ran` event in the
//! ledger of the agent it ran for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio::sync::broadcast::error::RecvError;

use super::decide::{decide, Decision, Exit, Verdict};
use super::input::{bounded, Detail, HookInput};
use super::run::{Ran, Runner};
use super::{HookEvent, HookSpec, Hooks};
use crate::model::event::{EventRecord, Provenance};
use crate::protocol::events::{self as ev, new_event, Event};
use crate::store::Store;

/// Where an agent's hooks start: its execution root (the runtime's
/// answer, given at start so this feature needs nothing of the handle).
pub type WorkspaceOf = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Whether the default policy lets sandboxed commands use the network
/// now (what a hook that does not say gets).
pub type NetworkNow = Box<dyn Fn() -> bool + Send + Sync>;

/// The runtime's hooks: what is configured (replaced when config.toml
/// changes), how they run, and each hook's failures in a row.
pub struct HookHost {
    hooks: RwLock<Arc<Hooks>>,
    pub runner: Runner,
    store: Store,
    workspace_of: WorkspaceOf,
    network_now: NetworkNow,
    failures: Mutex<HashMap<String, u32>>,
    /// The follower, and what tells it to finish.
    follower: Mutex<
        Option<(
            tokio::task::JoinHandle<()>,
            tokio::sync::watch::Sender<bool>,
        )>,
    >,
}

/// How long a stopping runtime waits for the hooks of events already
/// committed (each run has its own limit too).
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

impl HookHost {
    pub fn new(
        hooks: Hooks,
        runner: Runner,
        store: Store,
        workspace_of: WorkspaceOf,
        network_now: NetworkNow,
    ) -> HookHost {
        HookHost {
            hooks: RwLock::new(Arc::new(hooks)),
            runner,
            store,
            workspace_of,
            network_now,
            failures: Mutex::default(),
            follower: Mutex::default(),
        }
    }

    /// Start telling the hooks of the committed events.
    pub fn start(self: &Arc<Self>) {
        // Subscribed before the heads are read: nothing committed between
        // the two is missed, nothing before them is told again.
        let committed = self.store.subscribe();
        let (stop, stopping) = tokio::sync::watch::channel(false);
        // Agents made from now on are told from their first event.
        let since = crate::format_ts(crate::now_ms());
        let heads = heads(&self.store);
        let join = tokio::spawn(follow(
            Arc::downgrade(self),
            committed,
            stopping,
            heads,
            since,
        ));
        *self.follower.lock().unwrap_or_else(|p| p.into_inner()) = Some((join, stop));
    }

    /// At shutdown, once nothing else commits: tell the hooks of the events
    /// already committed, for at most `DRAIN_LIMIT`, then stop.
    pub async fn stop(&self) {
        let follower = self
            .follower
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some((mut join, stop)) = follower else {
            return;
        };
        let _ = stop.send(true);
        if tokio::time::timeout(DRAIN_LIMIT, &mut join).await.is_err() {
            join.abort();
            tracing::warn!(
                "hooks of the last events were still running at shutdown and were stopped"
            );
        }
    }

    pub fn current(&self) -> Arc<Hooks> {
        self.hooks.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Take the hooks of a changed config file (from the next event on).
    pub fn replace(&self, hooks: Hooks) {
        *self.hooks.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(hooks);
    }

    /// Count a run: its failures in a row, this one included.
    fn count(&self, hook: &str, failed: bool) -> u32 {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        match failed {
            true => {
                let n = map.entry(hook.to_owned()).or_default();
                *n += 1;
                *n
            }
            false => {
                map.remove(hook);
                0
            }
        }
    }
}

/// What a run of `hook` records.
fn ran_event(
    hook: &HookSpec,
    input: &HookInput,
    ran: &Ran,
    decision: &Decision,
    failures: u32,
    about_seq: Option<u64>,
) -> ev::HookRan {
    let (call_id, run_id) = match &input.detail {
        Detail::Call {
            call_id, run_id, ..
        }
        | Detail::Result {
            call_id, run_id, ..
        } => (Some(call_id.clone()), Some(run_id.clone())),
        Detail::Turn { run_id, .. } => (None, Some(run_id.clone())),
        _ => (None, None),
    };
    let (exit_code, signal, timed_out) = match ran.finished.exit {
        Exit::Code(c) => (Some(c), None, false),
        Exit::Signal(s) => (None, Some(s), false),
        Exit::TimedOut(_) => (None, None, true),
        Exit::NotStarted(_) => (None, None, false),
    };
    let (outcome, reason, error) = match &decision.verdict {
        Verdict::Allow => (ev::HookOutcome::Allowed, None, None),
        Verdict::Deny(r) => (ev::HookOutcome::Denied, Some(r.clone()), None),
        Verdict::Done => (ev::HookOutcome::Done, None, None),
        Verdict::Failed(e) => (ev::HookOutcome::Failed, None, Some(e.clone())),
    };
    ev::HookRan {
        hook: hook.name.clone(),
        event: hook.event.as_str().to_owned(),
        tool: input.tool().map(str::to_owned),
        call_id,
        run_id,
        about_seq,
        outcome,
        refused: decision.refuse.is_some(),
        exit_code,
        signal,
        timed_out,
        duration_ms: ran.duration_ms,
        reason,
        error,
        sandboxed: ran.sandboxed,
        output_bytes: ran.output_bytes,
        failures,
    }
}

/// Run `hook` for `agent_id`: what it decided, and its `hook_ran`.
async fn run_one(
    host: &HookHost,
    hook: &HookSpec,
    input: &HookInput,
    about_seq: Option<u64>,
) -> (Decision, ev::HookRan) {
    let ran = host.runner.run(hook, input, (host.network_now)()).await;
    let decision = decide(hook.event, &hook.name, hook.on_error, &ran.finished);
    let failed = matches!(decision.verdict, Verdict::Failed(_));
    let failures = host.count(&hook.name, failed);
    if failures == 1 {
        if let Verdict::Failed(why) = &decision.verdict {
            tracing::warn!(hook = %hook.name, event = %hook.event, %why, "a hook failed");
        }
    }
    let payload = ran_event(hook, input, &ran, &decision, failures, about_seq);
    (decision, payload)
}

/// Append `runs` to `agent_id`'s ledger (in a transaction of the caller's).
pub fn record_in(
    tx: &mut crate::store::WriteCtx<'_>,
    agent_id: &str,
    runs: &[ev::HookRan],
) -> Result<(), crate::store::StoreError> {
    for run in runs {
        tx.append_event(new_event(
            agent_id,
            Provenance::default(),
            Event::HookRan(run.clone()),
        ))?;
    }
    Ok(())
}

/// What the `pre_tool` hooks of one call said: the first refusal (the
/// hook's name and its reason), and every run, to record with the call's
/// result (one commit for both).
#[derive(Debug, Default)]
pub struct PreTool {
    pub refused: Option<(String, String)>,
    pub runs: Vec<ev::HookRan>,
}

impl HookHost {
    /// Run the `pre_tool` hooks that match this call, in order, until one
    /// refuses it.
    pub async fn pre_tool(
        &self,
        agent_id: &str,
        run_id: &str,
        call: &crate::runtime::provider::ToolCall,
    ) -> PreTool {
        let hooks = self.current();
        let matching = hooks.matching(HookEvent::PreTool, Some(&call.name));
        let mut out = PreTool::default();
        if matching.is_empty() {
            return out;
        }
        let input = HookInput::new(
            HookEvent::PreTool,
            agent_id,
            (self.workspace_of)(agent_id),
            Detail::Call {
                run_id: run_id.to_owned(),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                args: call.arguments.clone(),
            },
        );
        for hook in matching {
            let (decision, run) = run_one(self, hook, &input, None).await;
            out.runs.push(run);
            if let Some(reason) = decision.refuse {
                out.refused = Some((hook.name.clone(), reason));
                break;
            }
        }
        out
    }
}

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
async fn follow(
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
fn heads(store: &Store) -> HashMap<String, u64> {
    let Ok(read) = store.read() else {
        return HashMap::new();
    };
    let agents: Vec<crate::runtime::agent::AgentRecord> = read.agents().unwrap_or_default();
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
    let hooks = host.current();
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
        workspace: (host.workspace_of)(&e.agent_id),
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
    let agents: Vec<crate::runtime::agent::AgentRecord> =
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
