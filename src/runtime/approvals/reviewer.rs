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
//! Reviews run off the turn's path (one task per request, at most
//! `SLOTS` at once). A restart resumes them: a pending request with no
//! review is reviewed again; one reviewed whose verdict had not yet
//! answered it is answered now, without asking the model twice.

use std::path::PathBuf;
use std::time::Instant;

use super::review::{self, Answer, ReviewerConfig};
use crate::model::approval::{ApprovalRecord, ApprovalReview, ApprovalStatus, ReviewVerdict};
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::agent::{AgentRecord, AgentStatus};
use crate::runtime::host::RuntimeHost;
use crate::runtime::provider::ProviderProgress;
use crate::runtime::RuntimeError;
use crate::store::{Keyed, Provenance};

/// The policy text of `file`, or why there is none to review under: a
/// reviewer without the operator's written word decides nothing.
fn policy_text(file: Option<&PathBuf>) -> Result<String, String> {
    let Some(file) = file else {
        return Err("no policy file is configured".into());
    };
    match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => {
            Err(format!("the policy {} is empty", file.display()))
        }
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "there is no policy at {}: write the operator's policy there",
            file.display()
        )),
        Err(e) => Err(format!("the policy {} cannot be read: {e}", file.display())),
    }
}

/// A review's claim on its request, given back when it ends.
struct Claim(RuntimeHost, String);

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.inner.reviewer.release(&self.1);
    }
}

impl RuntimeHost {
    /// Wait until no review runs (tests and benchmarks).
    pub async fn reviews_settled(&self) {
        self.inner.reviewer.settled().await;
    }

    /// Have the reviewer look at `rec`, off the caller's path (nothing
    /// when no reviewer is configured).
    pub(crate) fn review_soon(&self, rec: &ApprovalRecord) {
        if self.inner.reviewer.config().is_none() || !self.inner.reviewer.claim(&rec.id) {
            return;
        }
        // A weak handle: a review never keeps a stopping runtime alive.
        let weak = std::sync::Arc::downgrade(&self.inner);
        let (agent_id, approval_id) = (rec.agent_id.clone(), rec.id.clone());
        self.inner.reviewer.spawn(async move {
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
        if self.inner.reviewer.config().is_none() {
            return;
        }
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
        let Some(config) = self.inner.reviewer.config() else {
            return Ok(());
        };
        let _slot = self.inner.reviewer.slots.acquire().await;
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
        if let Some(done) = rec.review.clone() {
            drop(rx);
            // Recorded before a restart, not yet acted on: only when the
            // reach it had and the reach in force now both let it answer.
            if !done.applied && done.may.answers(done.verdict) && config.may.answers(done.verdict) {
                self.apply(&rec, &done).await?;
            }
            return Ok(());
        }
        let recent: Vec<crate::model::transcript::TranscriptEntry> =
            rx.list_recent(Keyed::Transcript, agent_id, 12)?;
        drop(rx);
        let started = Instant::now();
        let (policy, answer, usage, answered_by) = self.ask(&config, &rec, &agent, &recent).await;
        let latency_ms = started.elapsed().as_millis() as u64;
        let model = answered_by.unwrap_or_else(|| config.model.clone());
        let cost = usage.and_then(|u| self.inner.config.pricing.cost_micro_usd(&model, &u));
        let review = ApprovalReview {
            reviewed_by: "reviewer".into(),
            model: model.clone(),
            verdict: answer.verdict,
            reason: answer.reason,
            fallback: answer.fallback,
            policy_digest: review::digest(policy.as_deref()),
            may: config.may,
            applied: false,
            latency_ms,
            input_tokens: usage.map_or(0, |u| u.input_tokens),
            output_tokens: usage.map_or(0, |u| u.output_tokens),
            cost_usd: cost.map(crate::runtime::provider::catalog::usd),
            reviewed_at: crate::format_ts(crate::now_ms()),
        };
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
                // The reviewer's round is spent like any other, on the
                // agent's day and budget.
                if let (Some(u), Some(mut agent)) = (usage, tx.get_agent::<AgentRecord>(&id)?) {
                    let day = crate::runtime::budget::budget_day(&agent, tx.now_ms());
                    crate::runtime::budget::add_round(&mut agent, &day, &u, cost);
                    tx.put_agent(&id, &agent)?;
                }
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
        if let Some(rec) = recorded {
            if rec.status == ApprovalStatus::Pending && config.may.answers(review.verdict) {
                self.apply(&rec, &review).await?;
            }
        }
        Ok(())
    }

    /// Ask the reviewer model: the policy it was given, its answer, its
    /// tokens, and the model that answered.
    async fn ask(
        &self,
        config: &ReviewerConfig,
        rec: &ApprovalRecord,
        agent: &AgentRecord,
        recent: &[crate::model::transcript::TranscriptEntry],
    ) -> (
        Option<String>,
        Answer,
        Option<crate::model::usage::TokenUsage>,
        Option<String>,
    ) {
        let policy = match policy_text(config.policy_file.as_ref()) {
            Ok(p) => Some(p),
            Err(why) => return (None, Answer::ask(why), None, None),
        };
        if rec.arguments.to_string().len() > review::MAX_REQUEST_BYTES {
            let why = format!(
                "the call's arguments are over {} KiB, too large to review",
                review::MAX_REQUEST_BYTES / 1024
            );
            return (policy, Answer::ask(why), None, None);
        }
        let global = self.inner.config.budget;
        if let crate::runtime::budget::Verdict::Pause(_) | crate::runtime::budget::Verdict::Paused =
            crate::runtime::budget::verdict(agent, crate::now_ms(), global)
        {
            let why = "the agent's daily budget is spent, so the reviewer was not asked";
            return (policy, Answer::ask(why), None, None);
        }
        let mut as_reviewer = agent.clone();
        as_reviewer.model_override = Some(config.model.clone());
        as_reviewer.reasoning_effort_override = None;
        let provider = (self.inner.config.provider)(&as_reviewer);
        let request = review::request(rec, policy.as_deref(), recent);
        let quiet = |_: ProviderProgress| {};
        let outcome = tokio::time::timeout(config.timeout, provider.round(&request, &quiet)).await;
        let answer = match outcome {
            Err(_) => Answer::ask(format!(
                "the reviewer did not answer within {} s",
                config.timeout.as_secs()
            )),
            Ok(o) => match o.result {
                Err(f) => Answer::ask(format!("the reviewer failed: {}", f.artifact.summary)),
                Ok(round) => {
                    // A fallback model answering in the reviewer's place
                    // is no review.
                    let answer = match round.model_ref == config.model {
                        true => review::parse(&round.text, &rec.id, !round.tool_calls.is_empty()),
                        false => Answer::ask(format!(
                            "{} answered in the reviewer's place (a fallback), so its word \
                             does not count",
                            round.model_ref
                        )),
                    };
                    return (policy, answer, round.token_usage, Some(round.model_ref));
                }
            },
        };
        (policy, answer, None, None)
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
