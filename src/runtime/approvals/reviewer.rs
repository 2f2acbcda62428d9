//! The reviewer: a model (`[policy] reviewer`) that reads each approval
//! request under the operator's written policy and gives a verdict. The
//! verdict is a durable record on the approval (`approval_reviewed`);
//! `[policy] reviewer_may` says how far it goes: `advise` only annotates
//! (a person answers), `deny_only` lets its "deny" answer, and
//! `allow_and_deny` lets both answer. A reviewer that fails, times out,
//! answers what cannot be read, or whose agent's budget is spent comes
//! to `ask`, never to `allow`. A person can answer at any time; the first
//! answer wins, so an allowed call still runs exactly once.
//!
//! A workspace's policy may name its own reviewer, or none
//! (`holon workspace policy ID --reviewer`); the written policy is the
//! operator's with the workspace's own added (`written.rs`). An allow
//! that answers is held `[policy] reviewer_hold_secs` before the call
//! runs, so a person can still deny it.
//!
//! Reviews run off the turn's path (one task per request, at most
//! `SLOTS` at once; `reviewer_state.rs`). A restart resumes them: a pending request with no
//! review is reviewed again; one reviewed whose verdict had not yet
//! answered it is answered now (after what is left of its hold), without
//! asking the model twice.

use std::time::Instant;

use crate::model::usage::TokenUsage;

use super::review::{self, Answer};
use super::written::{self, Written};
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::approval::{ApprovalRecord, ApprovalStatus};
use crate::model::event::Provenance;
use crate::model::review::{ApprovalReview, ReviewVerdict, ReviewerChoice};
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::handle::RuntimeHost;
use crate::runtime::provider::ProviderProgress;
use crate::runtime::settings::reviewer::ReviewerConfig;
use crate::runtime::RuntimeError;
use crate::store::Keyed;

/// What asking the reviewer came to: the policy it was given, its
/// answer, its tokens, and the model that answered.
pub(super) struct Asked {
    pub policy: Option<Written>,
    pub answer: Answer,
    pub usage: Option<TokenUsage>,
    pub answered_by: Option<String>,
}

impl Asked {
    /// Not asked: `ask`, and why.
    pub fn unasked(policy: Option<Written>, why: String) -> Asked {
        Asked {
            policy,
            answer: Answer::ask(why),
            usage: None,
            answered_by: None,
        }
    }
}

/// The reviewer's round, spent like any other on the agent's day and
/// budget (in the caller's transaction).
pub(super) fn spend(
    tx: &mut crate::store::WriteCtx<'_>,
    agent_id: &str,
    usage: Option<TokenUsage>,
    cost: Option<u64>,
) -> Result<(), crate::store::StoreError> {
    if let (Some(u), Some(mut agent)) = (usage, tx.get_agent::<AgentRecord>(agent_id)?) {
        let day = crate::runtime::budget::budget_day(&agent, tx.now_ms());
        crate::runtime::budget::add_round(&mut agent, &day, &u, cost);
        tx.put_agent(agent_id, &agent)?;
    }
    Ok(())
}

/// A review's claim on its request, given back when it ends.
pub(super) struct Claim(pub RuntimeHost, pub String);

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.inner.reviewer().release(&self.1);
    }
}

impl RuntimeHost {
    /// Wait until no review runs (tests and benchmarks).
    pub async fn reviews_settled(&self) {
        self.inner.reviewer().settled().await;
    }

    /// The model that reviews requests of `agent` in `workspace_id`: the
    /// reviewer its policy in force names, else `[policy] reviewer`.
    pub(super) fn reviewer_model(
        &self,
        config: &ReviewerConfig,
        agent: &AgentRecord,
        workspace_id: &str,
    ) -> Option<String> {
        let runtime = self.inner.default_policy();
        let (policy, _) = agent.workspaces.policy_in_force(workspace_id, &runtime);
        ReviewerChoice::model(policy.reviewer.as_ref(), config.model.as_deref()).map(str::to_owned)
    }

    /// Have the reviewer look at `rec`, off the caller's path (nothing
    /// when no reviewer reviews its workspace).
    pub(crate) fn review_soon(&self, rec: &ApprovalRecord) {
        let config = self.inner.reviewer().config();
        let Ok(agent) = self.inner.agent_record(&rec.agent_id) else {
            return;
        };
        if self
            .reviewer_model(&config, &agent, &rec.workspace_id)
            .is_none()
            || !self.inner.reviewer().claim(&rec.id)
        {
            return;
        }
        // A weak handle: a review never keeps a stopping runtime alive.
        let weak = std::sync::Arc::downgrade(&self.inner);
        let (agent_id, approval_id) = (rec.agent_id.clone(), rec.id.clone());
        self.inner.reviewer().spawn(async move {
            let Some(inner) = weak.upgrade() else { return };
            let host = RuntimeHost { inner };
            // Released however the review ends (stopped at shutdown too).
            let _claim = Claim(host.clone(), approval_id.clone());
            let reviewed = host.review(&agent_id, &approval_id).await;
            if let Err(e) = reviewed {
                tracing::warn!(approval = %approval_id, error = %e, "a review could not be recorded");
            }
        });
    }

    /// At start: review each pending request that has none, and answer
    /// those whose recorded verdict had not answered them yet.
    pub(crate) fn resume_reviews(&self) {
        let pending = match self.approvals(None, false) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list approvals to resume their reviews");
                return;
            }
        };
        for rec in pending {
            self.review_soon(&rec);
        }
    }

    async fn review(&self, agent_id: &str, approval_id: &str) -> Result<(), RuntimeError> {
        let config = self.inner.reviewer().config();
        let slot = self.inner.reviewer().slots.acquire().await;
        let rx = self.inner.store.read()?;
        let Some(rec) = rx.get::<ApprovalRecord>(Keyed::Approvals, agent_id, approval_id)? else {
            return Ok(());
        };
        if rec.status != ApprovalStatus::Pending {
            return Ok(());
        }
        let Some(agent) = rx.agent::<AgentRecord>(agent_id)? else {
            return Ok(());
        };
        // A paused or stopped agent is the operator's to resume: nothing
        // is asked or answered for it meanwhile.
        if matches!(agent.status, AgentStatus::Paused | AgentStatus::Stopped) {
            return Ok(());
        }
        // Switched off here since it was asked: a person decides.
        let Some(model) = self.reviewer_model(&config, &agent, &rec.workspace_id) else {
            return Ok(());
        };
        if let Some(done) = rec.review.clone() {
            drop((rx, slot));
            // Recorded before a restart, not yet acted on: only when the
            // reach it had and the reach in force now both let it answer.
            if !done.applied && done.may.answers(done.verdict) && config.may.answers(done.verdict) {
                self.hold_then_apply(&rec, &done).await?;
            }
            return Ok(());
        }
        let recent: Vec<crate::model::transcript::TranscriptEntry> =
            rx.list_recent(Keyed::Transcript, agent_id, 12)?;
        drop(rx);
        let started = Instant::now();
        let asked = match self.policy_for(&config, &agent, &rec.workspace_id) {
            Err(why) => Asked::unasked(None, why),
            Ok(_) if rec.arguments.to_string().len() > review::MAX_REQUEST_BYTES => {
                let why = format!(
                    "the call's arguments are over {} KiB, too large to review",
                    review::MAX_REQUEST_BYTES / 1024
                );
                Asked::unasked(None, why)
            }
            Ok(policy) => {
                let request = review::request(&rec, Some(&policy.text), &recent);
                self.consult(&config, &model, &agent, request, &rec.id, policy)
                    .await
            }
        };
        let (review, usage, cost) = self.record_of(&config, model, asked, started);
        let answers = config.may.answers(review.verdict);
        let (id, aid, r) = (agent_id.to_owned(), approval_id.to_owned(), review.clone());
        let recorded = self
            .inner
            .store
            .write(move |tx| {
                let Some(mut rec) = tx.get::<ApprovalRecord>(Keyed::Approvals, &id, &aid)? else {
                    return Ok(None);
                };
                // One verdict per request, whatever raced.
                if rec.review.is_some() {
                    return Ok(None);
                }
                rec.review = Some(r.clone());
                tx.put(Keyed::Approvals, &id, &aid, &rec)?;
                spend(tx, &id, usage, cost)?;
                tx.append_event(new_event(
                    &id,
                    Provenance::default(),
                    Event::ApprovalReviewed(ev::ApprovalChanged {
                        approval: rec.clone(),
                    }),
                ))?;
                Ok(Some(rec))
            })
            .await?;
        drop(slot);
        if let Some(rec) = recorded {
            // Counted once recorded: a verdict that lost a race is none.
            match review.verdict {
                ReviewVerdict::Deny if answers => self.inner.reviewer().count(agent_id, true),
                ReviewVerdict::Allow => self.inner.reviewer().count(agent_id, false),
                _ => {}
            }
            if rec.status == ApprovalStatus::Pending && answers {
                self.hold_then_apply(&rec, &review).await?;
            }
        }
        Ok(())
    }

    /// Wait out what is left of the verdict's hold, then let it answer
    /// if it still may: a person who answered meanwhile wins, and a reach
    /// lowered meanwhile holds.
    async fn hold_then_apply(
        &self,
        rec: &ApprovalRecord,
        review: &ApprovalReview,
    ) -> Result<(), RuntimeError> {
        if review.runs_at.is_some() {
            super::reviewer_mcp::wait_hold(review).await;
            // What changed in the hold: a lower reach, or no reviewer here.
            let config = self.inner.reviewer().config();
            let agent = self.inner.agent_record(&rec.agent_id)?;
            if !config.may.answers(review.verdict)
                || self
                    .reviewer_model(&config, &agent, &rec.workspace_id)
                    .is_none()
            {
                return Ok(());
            }
        }
        self.apply(rec, review).await
    }

    /// The written policy for a request of `agent` in `workspace_id`:
    /// the operator's parts, then the repository's approved proposal; or
    /// why there is none to review under (a person decides).
    pub(super) fn policy_for(
        &self,
        config: &ReviewerConfig,
        agent: &AgentRecord,
        workspace_id: &str,
    ) -> Result<Written, String> {
        let mut parts = written::operator_parts(config, workspace_id)?;
        // The repository's proposal, when the operator approved its text.
        if let Some(b) = agent.workspaces.binding(workspace_id) {
            let approved = crate::runtime::proposal::approved_in(&self.inner.store)
                .map_err(|e| e.to_string())?;
            parts.extend(super::proposals::policy_part(
                std::path::Path::new(&b.anchor),
                &approved,
            ));
        }
        written::compose(parts).ok_or_else(|| written::where_to_write(config, workspace_id))
    }

    /// Ask `model` the reviewer's question `request` about `id` (unless
    /// the agent's budget is spent): its answer, its tokens, and the model
    /// that answered.
    pub(super) async fn consult(
        &self,
        config: &ReviewerConfig,
        model: &str,
        agent: &AgentRecord,
        request: crate::runtime::provider::ProviderRequest,
        id: &str,
        policy: Written,
    ) -> Asked {
        let global = self.inner.config.budget;
        if let crate::runtime::budget::Verdict::Pause(_) | crate::runtime::budget::Verdict::Paused =
            crate::runtime::budget::verdict(agent, crate::now_ms(), global)
        {
            let why = "the agent's daily budget is spent, so the reviewer was not asked";
            return Asked::unasked(Some(policy), why.into());
        }
        if self.inner.reviewer().denied_too_often(&agent.id) {
            let why = format!(
                "the reviewer denied this agent's last {} requests in a row, so a person decides \
                 this one",
                super::reviewer_state::MAX_DENIALS_IN_A_ROW
            );
            return Asked::unasked(Some(policy), why);
        }
        let mut as_reviewer = agent.clone();
        as_reviewer.model_override = Some(model.to_owned());
        as_reviewer.reasoning_effort_override = None;
        let provider = (self.inner.config.provider)(&as_reviewer);
        let quiet = |_: ProviderProgress| {};
        let outcome = tokio::time::timeout(config.timeout, provider.round(&request, &quiet)).await;
        let why = match outcome {
            Err(_) => format!(
                "the reviewer did not answer within {} s",
                config.timeout.as_secs()
            ),
            Ok(o) => match o.result {
                Err(f) => format!("the reviewer failed: {}", f.artifact.summary),
                Ok(round) => {
                    // A fallback model answering in the reviewer's place
                    // is no review.
                    let answer = match round.model_ref == model {
                        true => review::parse(&round.text, id, !round.tool_calls.is_empty()),
                        false => Answer::ask(format!(
                            "{} answered in the reviewer's place (a fallback), so its word \
                             does not count",
                            round.model_ref
                        )),
                    };
                    return Asked {
                        policy: Some(policy),
                        answer,
                        usage: round.token_usage,
                        answered_by: Some(round.model_ref),
                    };
                }
            },
        };
        Asked::unasked(Some(policy), why)
    }

    /// The durable record of what `model` was asked and answered, with
    /// its tokens and cost. An allow that answers under `reviewer_may`
    /// is held (`runs_at`) for a person to deny it.
    pub(super) fn record_of(
        &self,
        config: &ReviewerConfig,
        model: String,
        asked: Asked,
        started: Instant,
    ) -> (ApprovalReview, Option<TokenUsage>, Option<u64>) {
        let Asked {
            policy,
            answer,
            usage,
            answered_by,
        } = asked;
        let model = answered_by.unwrap_or(model);
        let answers = config.may.answers(answer.verdict);
        let hold_ms = config.hold.as_millis() as i64;
        let runs_at = (answers && answer.verdict == ReviewVerdict::Allow && hold_ms > 0)
            .then(|| crate::format_ts(crate::now_ms() + hold_ms));
        let cost = usage.and_then(|u| self.inner.config.pricing.cost_micro_usd(&model, &u));
        let review = ApprovalReview {
            reviewed_by: "reviewer".into(),
            model,
            verdict: answer.verdict,
            reason: answer.reason,
            fallback: answer.fallback,
            policy_digest: review::digest(policy.as_ref().map(|w| w.text.as_str())),
            policy_from: policy.map(|w| w.from).unwrap_or_default(),
            may: config.may,
            applied: false,
            runs_at,
            latency_ms: started.elapsed().as_millis() as u64,
            input_tokens: usage.map_or(0, |u| u.input_tokens),
            output_tokens: usage.map_or(0, |u| u.output_tokens),
            cost_usd: cost.map(crate::runtime::provider::catalog::usd),
            reviewed_at: crate::format_ts(crate::now_ms()),
        };
        (review, usage, cost)
    }

    /// Let a verdict that answers under `reviewer_may` answer `rec`. A
    /// person who answered first wins: then nothing happens.
    async fn apply(
        &self,
        rec: &ApprovalRecord,
        review: &ApprovalReview,
    ) -> Result<(), RuntimeError> {
        // Paused meanwhile: the operator's to resume.
        let status = self.inner.agent_record(&rec.agent_id)?.status;
        if matches!(status, AgentStatus::Paused | AgentStatus::Stopped) {
            return Ok(());
        }
        let by = super::ops::Answerer::Reviewer {
            model: review.model.clone(),
            reason: review.reason.clone(),
        };
        let answered = match review.verdict {
            ReviewVerdict::Allow => self.approve_as(&rec.agent_id, &rec.id, false, by).await,
            ReviewVerdict::Deny => {
                self.deny_as(&rec.agent_id, &rec.id, Some(review.reason.clone()), by)
                    .await
            }
            ReviewVerdict::Ask => return Ok(()),
        };
        match answered {
            Ok(_) => Ok(()),
            // Answered by a person meanwhile, or the agent was stopped.
            Err(RuntimeError::ApprovalAnswered { .. } | RuntimeError::AgentStopped { .. }) => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
