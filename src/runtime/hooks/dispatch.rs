//! Hooks in the runtime. `pre_tool` hooks run on the call's path, after
//! the call is recorded as started and before the approval gate: the
//! first that refuses ends the call with its reason. The other events'
//! hooks are told by the follower of the committed events (`follow.rs`).
//! Each run is a `hook_ran` event in the ledger of the agent it ran for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::decide::{decide, Decision, Exit, Verdict};
use super::follow::{follow, heads};
use super::input::{Detail, HookInput};
use super::run::{Ran, Runner};
use crate::model::event::Provenance;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::settings::hooks::{HookEvent, HookSpec, Hooks};
use crate::store::Store;

/// Where an agent works: its execution root, and the root of the
/// workspace the operator attached (`None` in its own home), whose
/// repository may propose hooks. The runtime's answer, given at start so
/// this feature needs nothing of the handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPlace {
    pub execution_root: String,
    pub anchor: Option<String>,
}

pub type WorkspaceOf = Box<dyn Fn(&str) -> Option<AgentPlace> + Send + Sync>;

/// Whether the default policy lets sandboxed commands use the network
/// now (what a hook that does not say gets).
pub type NetworkNow = Box<dyn Fn() -> bool + Send + Sync>;

/// The runtime's hooks: what is configured (replaced when config.toml
/// changes), how they run, and each hook's failures in a row.
pub struct HookHost {
    hooks: RwLock<Arc<Hooks>>,
    pub runner: Runner,
    pub(super) store: Store,
    pub(super) workspace_of: WorkspaceOf,
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
/// committed (each run has its own limit too). Short enough that a
/// runtime's whole shutdown fits in the wait `holon daemon stop` gives it
/// before signalling (10 s): a hook still running past it is killed with
/// its process group by the runtime, never left behind by a SIGKILL.
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

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

    /// The hooks for `agent_id` now: the operator's, then those its
    /// workspace's repository proposes, when approved as they are now.
    pub fn for_agent(&self, agent_id: &str) -> Arc<Hooks> {
        use crate::model::proposal::ProposalKind;
        let operator = self.current();
        let approved = match crate::runtime::proposal::approved_in(&self.store) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read which proposed hooks are approved");
                return operator;
            }
        };
        if !approved.iter().any(|a| a.kind == ProposalKind::Hooks) {
            return operator;
        }
        let anchor = (self.workspace_of)(agent_id).and_then(|p| p.anchor);
        let project =
            anchor.and_then(|a| super::project::in_force(std::path::Path::new(&a), &approved));
        match project {
            Some(p) if !p.is_empty() => {
                let mut all = (*operator).clone();
                all.hooks.extend(p.hooks);
                Arc::new(all)
            }
            _ => operator,
        }
    }

    /// Where `agent_id`'s hooks are told it works (its execution root).
    pub(super) fn root_of(&self, agent_id: &str) -> Option<String> {
        (self.workspace_of)(agent_id).map(|p| p.execution_root)
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
pub(super) async fn run_one(
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
        call: &crate::model::usage::ToolCall,
    ) -> PreTool {
        let hooks = self.for_agent(agent_id);
        let matching = hooks.matching(HookEvent::PreTool, Some(&call.name));
        let mut out = PreTool::default();
        if matching.is_empty() {
            return out;
        }
        let input = HookInput::new(
            HookEvent::PreTool,
            agent_id,
            self.root_of(agent_id),
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

impl crate::runtime::handle::HostInner {
    /// The operator's hooks and how they run.
    pub(crate) fn hooks(&self) -> &Arc<HookHost> {
        self.part()
    }
}
