//! One bounded run (`holon run`): admit a prompt with delivery surface
//! `run_once`, follow the agent's ledger until that message's turn is
//! terminal and the agent has settled, and fold what happened into a
//! `RunOnceReport` (spec: `run_once.final_text`, `raw_final_text`,
//! `token_usage`, `provider_attempt_timeline`, `failure_artifact`).
//!
//! "Settled" means: after the message's `turn_terminal`, the actor recorded
//! a waiting decision other than `WaitForTask` — follow-up turns (a promoted
//! command's result re-entering the model, a continue tick) are part of the
//! run; timers, external waits and operator input are not waited for.
//! Everything is read from the event ledger by cursor, woken by the store's
//! commit broadcast, so a lagging subscription loses nothing.
//!
//! Also here: the agent operations the run needs (a private agent, the
//! model override), as `RuntimeHost` methods.

use crate::runtime::agent::agent_in;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::model::agent::AgentRecord;
use crate::model::agent::AgentVisibility;
use crate::model::decision::SchedulerDecisionKind;
use crate::model::decision::TurnTerminalKind;
use crate::model::event::{EventRecord, Provenance};
use crate::model::ids::validate_agent_id;
use crate::model::message::AdmissionRequest;
use crate::model::usage::FailureArtifact;
use crate::model::usage::FailureCategory;
use crate::model::usage::ProviderAttemptTimeline;
use crate::model::usage::TokenUsage;
use crate::protocol::events::{self as ev, new_event, BriefKind, Event};
use crate::protocol::views::Admitted;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::provider::ModelRef;
use crate::runtime::RuntimeError;
use crate::store::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// The run's last turn completed.
    Completed,
    /// The run's last turn was aborted (provider failure, max rounds,
    /// operator abort).
    Failed,
    /// The run did not settle in time.
    TimedOut,
}

/// What a run produced (`holon run --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOnceReport {
    pub outcome: RunOutcome,
    /// The newest completion report of a work item completed during the
    /// run, else `raw_final_text`.
    pub final_text: String,
    /// The last assistant message of the run's last terminal turn.
    pub raw_final_text: String,
    /// The last turn's answer was cut off by the model's output limit
    /// (`truncation_stop_reason` says which limit). Holon does not ask the
    /// model to continue by itself.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncation_stop_reason: Option<String>,
    pub token_usage: TokenUsage,
    /// What the run's rounds cost in US dollars; absent when a round's
    /// cost is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Every provider attempt of the run, in order.
    pub provider_attempt_timeline: ProviderAttemptTimeline,
    pub failure_artifact: Option<FailureArtifact>,
    pub agent_id: String,
    pub message_id: String,
    /// The prompt's own `turn_terminal` payload (kind, rounds, duration).
    pub turn_terminal: Option<Value>,
    /// Turns the run took (the prompt's and any follow-ups).
    pub turns: u32,
    pub completed_work_item_id: Option<String>,
    /// Commands still running when the run ended, which its end stopped (a
    /// run leaves none running): each task's id and command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands_stopped: Vec<StoppedCommand>,
}

/// A command a run's end stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoppedCommand {
    pub task_id: String,
    pub cmd: String,
}

/// The ledger folded so far.
#[derive(Debug, Default)]
struct Fold {
    turn_terminal: Option<Value>,
    last_text: String,
    truncated: Option<String>,
    /// The failure of the last terminal turn, when it was aborted.
    failure: Option<FailureArtifact>,
    /// `runtime_error` artifacts by run id, until their terminal.
    errors: Vec<(String, FailureArtifact)>,
    usage: TokenUsage,
    /// Millionths of a dollar of the priced rounds, and rounds unpriced.
    cost: (u64, u32),
    timeline: ProviderAttemptTimeline,
    turns: u32,
    /// (work item id, completion report) of the newest completion.
    completed: Option<(String, Option<String>)>,
    settled: bool,
}

fn merge_timeline(into: &mut ProviderAttemptTimeline, round: ProviderAttemptTimeline) {
    if into.requested_model_ref.is_empty() {
        into.requested_model_ref = round.requested_model_ref;
    }
    into.attempts.extend(round.attempts);
    if round.active_model_ref.is_some() {
        into.active_model_ref = round.active_model_ref;
    }
    if round.winning_model_ref.is_some() {
        into.winning_model_ref = round.winning_model_ref;
    }
    if let Some(u) = round.aggregated_token_usage {
        into.aggregated_token_usage
            .get_or_insert_with(TokenUsage::default)
            .add(&u);
    }
}

/// Whether a decision recorded after the prompt's turn means the run is
/// over: the agent waits for nothing the run itself started.
fn settles(decision: SchedulerDecisionKind) -> bool {
    match decision {
        SchedulerDecisionKind::StartModelTurn
        | SchedulerDecisionKind::ReduceMessageOnly
        | SchedulerDecisionKind::EmitSystemTick
        | SchedulerDecisionKind::WaitForTask => false,
        SchedulerDecisionKind::WaitForExternalChange
        | SchedulerDecisionKind::WaitForTimer
        | SchedulerDecisionKind::WaitForOperator
        | SchedulerDecisionKind::Sleep
        | SchedulerDecisionKind::StayIdle
        | SchedulerDecisionKind::Stop
        | SchedulerDecisionKind::Noop => true,
    }
}

impl Fold {
    /// Fold one event of the run's agent. Only the kinds that make up the
    /// report matter here; every other kind leaves it as it is.
    fn apply(&mut self, e: &EventRecord, message_id: &str) {
        match e.event() {
            Event::ProviderRoundCompleted(p) => {
                self.usage.add(&p.token_usage);
                match p.cost_usd {
                    Some(c) => self.cost.0 += (c * 1_000_000.0).round() as u64,
                    None => self.cost.1 += 1,
                }
                merge_timeline(&mut self.timeline, p.provider_attempt_timeline);
            }
            Event::RuntimeError(p) => {
                if let Some(u) = &p.token_usage {
                    self.usage.add(u);
                }
                merge_timeline(&mut self.timeline, p.provider_attempt_timeline);
                self.errors.push((p.run_id, p.failure_artifact));
            }
            Event::TurnTerminal(p) => self.turn_ended(e, p, message_id),
            Event::BriefCreated(p) => {
                // An abort without a runtime error: its failure brief says why.
                let b = p.brief;
                if b.kind == BriefKind::Failure && b.failure_artifact.is_none() {
                    if let Some(f) = self.failure.as_mut() {
                        if f.kind == "turn_aborted" && !b.text.is_empty() {
                            f.summary = b.text;
                        }
                    }
                }
            }
            Event::WorkItemCompleted(p) => {
                let item = p.work_item;
                self.completed = Some((item.id, item.result_summary));
            }
            Event::SchedulerDecision(p) if self.turn_terminal.is_some() => {
                self.settled = settles(p.decision.kind);
            }
            _ => {}
        }
    }

    fn turn_ended(&mut self, e: &EventRecord, p: ev::TurnTerminal, message_id: &str) {
        self.turns += 1;
        self.last_text = p.last_assistant_message;
        self.truncated = p.truncation_stop_reason;
        // A cancelled turn records the attempt it dropped here.
        if let Some(t) = p.provider_attempt_timeline {
            merge_timeline(&mut self.timeline, t);
        }
        let run_id = p.run_id;
        self.failure = match p.kind {
            TurnTerminalKind::Completed => None,
            TurnTerminalKind::Aborted | TurnTerminalKind::BaselineOverBudget => Some(
                self.errors
                    .iter()
                    .rev()
                    .find(|(r, _)| *r == run_id)
                    .map(|(_, a)| a.clone())
                    .unwrap_or_else(|| {
                        FailureArtifact::new(
                            FailureCategory::Runtime,
                            "turn_aborted",
                            "the turn was aborted before it completed",
                        )
                    }),
            ),
        };
        if p.message_id == message_id {
            self.turn_terminal = Some(e.payload.clone());
        }
    }

    fn report(
        self,
        agent_id: &str,
        message_id: &str,
        timed_out: Option<Duration>,
    ) -> RunOnceReport {
        let report_text = self
            .completed
            .as_ref()
            .and_then(|(_, report)| report.clone())
            .filter(|r| !r.trim().is_empty());
        let (outcome, failure) = match (timed_out, self.failure) {
            (Some(after), _) => (
                RunOutcome::TimedOut,
                Some(FailureArtifact::new(
                    FailureCategory::Runtime,
                    "run_timeout",
                    format!(
                        "the run did not finish within {}s; agent `{agent_id}` keeps its state \
                         (inspect it with `holon events --agent {agent_id}`)",
                        after.as_secs()
                    ),
                )),
            ),
            (None, Some(f)) => (RunOutcome::Failed, Some(f)),
            (None, None) => (RunOutcome::Completed, None),
        };
        RunOnceReport {
            outcome,
            final_text: report_text.unwrap_or_else(|| self.last_text.clone()),
            raw_final_text: self.last_text,
            truncated: self.truncated.is_some(),
            truncation_stop_reason: self.truncated,
            token_usage: self.usage,
            cost_usd: (self.cost.1 == 0 && self.turns > 0)
                .then(|| crate::runtime::provider::catalog::usd(self.cost.0)),
            provider_attempt_timeline: self.timeline,
            failure_artifact: failure,
            agent_id: agent_id.to_owned(),
            message_id: message_id.to_owned(),
            turn_terminal: self.turn_terminal,
            turns: self.turns,
            completed_work_item_id: self.completed.map(|(id, _)| id),
            commands_stopped: Vec::new(),
        }
    }
}

/// How long a timed-out run waits for its cancelled turn to be recorded.
const CANCEL_SETTLE: Duration = Duration::from_millis(800);

impl RuntimeHost {
    /// The run's deadline passed: cancel the agent's turn (dropping an
    /// in-flight provider request) and fold what the cancellation records,
    /// so the report carries the attempt timeline. Bounded by
    /// `CANCEL_SETTLE`; the report is a timeout either way.
    async fn cancel_run(
        &self,
        agent_id: &str,
        fold: &mut Fold,
        cursor: &mut u64,
        message_id: &str,
    ) -> Result<(), RuntimeError> {
        let mut commits = self.inner.store.subscribe();
        self.cancel_turn(
            agent_id,
            crate::protocol::payloads::CancelReason::RunTimeout,
        );
        let until = tokio::time::Instant::now() + CANCEL_SETTLE;
        let start_turns = fold.turns;
        loop {
            let page = self.inner.store.read()?.events(agent_id, *cursor, 512)?;
            if let Some(last) = page.last() {
                *cursor = last.event_seq + 1;
            }
            for e in &page {
                fold.apply(e, message_id);
            }
            if fold.turns > start_turns {
                return Ok(());
            }
            if tokio::time::timeout_at(until, commits.recv())
                .await
                .is_err()
            {
                return Ok(());
            }
        }
    }

    /// The host internals, for in-crate drivers that call tools directly
    /// (benchmarks).
    #[cfg(feature = "bench")]
    pub(crate) fn inner(&self) -> &std::sync::Arc<crate::runtime::handle::HostInner> {
        &self.inner
    }

    /// Create a runtime-private agent (e.g. `holon run`'s temporary one)
    /// and start its actor. Refused when the id is taken.
    pub async fn create_private_agent(&self, agent_id: &str) -> Result<AgentRecord, RuntimeError> {
        validate_agent_id(agent_id).map_err(RuntimeError::InvalidAgentId)?;
        let id = agent_id.to_owned();
        let record = self
            .inner
            .store
            .write(move |tx| {
                let mut record = AgentRecord::new(&id, tx.now_ts());
                record.visibility = AgentVisibility::Private;
                crate::runtime::admission::create_agent_in(tx, &record, None)?;
                Ok(record)
            })
            .await?;
        self.spawn_actor(agent_id);
        Ok(record)
    }

    /// Set (or clear) the model an agent's turns use instead of the
    /// runtime default; returns the previous override. Takes effect at the
    /// agent's next turn.
    pub async fn set_model_override(
        &self,
        agent_id: &str,
        model: Option<String>,
    ) -> Result<Option<String>, RuntimeError> {
        self.set_model(agent_id, model, None).await
    }

    /// The agent's model (null: the runtime default) and, when `effort` is
    /// given, its own reasoning effort; one `model_override_changed` when
    /// either changes. Returns the previous model override.
    pub async fn set_model(
        &self,
        agent_id: &str,
        model: Option<String>,
        effort: Option<crate::model::usage::EffortChoice>,
    ) -> Result<Option<String>, RuntimeError> {
        if let Some(m) = &model {
            ModelRef::parse(m).map_err(RuntimeError::Invalid)?;
        }
        let id = agent_id.to_owned();
        let previous = self
            .inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = agent_in(tx, &id)?;
                let from = agent.model_override.clone();
                let effort_from = agent.reasoning_effort_override;
                let effort_to = effort.map_or(effort_from, |e| e.effort());
                if from == model && effort_from == effort_to {
                    return Ok(from);
                }
                agent.model_override = model.clone();
                agent.reasoning_effort_override = effort_to;
                tx.put_agent(&id, &agent)?;
                let changed = ev::ModelOverrideChanged {
                    from: from.clone(),
                    to: model.clone(),
                    effort_from,
                    effort_to,
                };
                tx.append_event(new_event(
                    &id,
                    Provenance::default(),
                    Event::ModelOverrideChanged(changed),
                ))?;
                Ok(from)
            })
            .await?;
        Ok(previous)
    }

    /// Admit `req` (its delivery surface should be `run_once`) and wait —
    /// at most `timeout` — until its turn is terminal and the agent has
    /// settled; then report. A timeout is a report too (`TimedOut`).
    pub async fn run_once(
        &self,
        req: AdmissionRequest,
        timeout: Duration,
    ) -> Result<RunOnceReport, RuntimeError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let agent_id = req.agent_id.clone();
        let mut commits = self.inner.store.subscribe();
        let Admitted {
            message_id,
            event_seq,
            ..
        } = self.submit(req).await?;
        let mut fold = Fold::default();
        let mut cursor = event_seq;
        loop {
            let page = self.inner.store.read()?.events(&agent_id, cursor, 512)?;
            if let Some(last) = page.last() {
                cursor = last.event_seq + 1;
            }
            for e in &page {
                fold.apply(e, &message_id);
            }
            if fold.settled {
                return Ok(fold.report(&agent_id, &message_id, None));
            }
            if page.len() == 512 {
                continue;
            }
            // Woken by the next commit; a lagged receiver just re-reads.
            match tokio::time::timeout_at(deadline, commits.recv()).await {
                Err(_) => {
                    self.cancel_run(&agent_id, &mut fold, &mut cursor, &message_id)
                        .await?;
                    return Ok(fold.report(&agent_id, &message_id, Some(timeout)));
                }
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => {
                    return Err(RuntimeError::Store(StoreError::Closed))
                }
                Ok(_) => {}
            }
        }
    }
}
