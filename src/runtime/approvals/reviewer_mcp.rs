//! The reviewer on a repository's `.mcp.json` servers. A project server
//! waits for the operator's approval of its exact command line; when the
//! workspace has a reviewer, it is asked first, once per command line,
//! after a turn there builds its tool catalog. Its verdict is a durable
//! record (the store setting `MCP_REVIEWS`, and `mcp_server_reviewed` in
//! the agent's ledger), shown by `holon mcp list`. Under `reviewer_may`
//! an allow approves the server (as `holon mcp approve` would, for that
//! command line only) once its hold is over: a person who disables the
//! server meanwhile (`holon mcp disable`) keeps it stopped. A deny or an
//! ask only annotates; the operator decides.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::review;
use super::reviewer::{spend, Asked, Claim};
use crate::model::agent::AgentStatus;
use crate::model::event::Provenance;
use crate::model::review::{ApprovalReview, McpServerReview, ReviewVerdict, ReviewerMay};
use crate::protocol::events::{new_event, Event};
use crate::runtime::handle::RuntimeHost;
use crate::runtime::mcp::ops::{record_approval_by, reviews_in, MCP_REVIEWS};
use crate::runtime::RuntimeError;

/// One server's command line, as the reviewer is asked about it.
#[derive(Clone)]
struct Subject {
    agent_id: String,
    workspace_id: String,
    workspace: String,
    name: String,
    command_line: String,
    /// Why nothing would confine it, when nothing would: an HTTP server
    /// (the runtime itself connects), or a sandbox that is off or cannot
    /// be made. The reviewer's word on it is then advice only.
    unconfined: Option<&'static str>,
}

impl Subject {
    fn is(&self, r: &McpServerReview) -> bool {
        r.workspace == self.workspace && r.name == self.name && r.command_line == self.command_line
    }

    /// What the review's claim is named (one at a time per command line).
    fn claim(&self) -> String {
        let d = crate::runtime::proposal::digest(&format!(
            "{}\n{}\n{}",
            self.workspace, self.name, self.command_line
        ));
        format!("mcp:{}", &d[..16])
    }
}

impl RuntimeHost {
    /// After a turn built its catalog: have the reviewer look at each
    /// server of the agent's workspace's `.mcp.json` that awaits the
    /// operator's approval (nothing when no reviewer reviews there).
    pub(crate) fn review_mcp_soon(&self, agent_id: &str) {
        let config = self.inner.reviewer().config();
        let (Ok(agent), Ok(place)) = (
            self.inner.agent_record(agent_id),
            self.inner.execution_of(agent_id),
        ) else {
            return;
        };
        if place.workspace_id == crate::model::workspace::AGENT_HOME_ID
            || self
                .reviewer_model(&config, &agent, &place.workspace_id)
                .is_none()
        {
            return;
        }
        let anchor = place.workspace_anchor.clone();
        let waiting = self
            .inner
            .mcp()
            .views(Some(Path::new(&anchor)))
            .into_iter()
            .filter(|v| v.state == "awaiting_approval" && v.workspace.as_deref() == Some(&anchor));
        for v in waiting {
            let Some(command_line) = v.command_line else {
                continue;
            };
            let subject = Subject {
                agent_id: agent_id.to_owned(),
                workspace_id: place.workspace_id.clone(),
                workspace: anchor.clone(),
                name: v.name,
                command_line,
                unconfined: unconfined(self, &place, &v.transport),
            };
            let key = subject.claim();
            if !self.inner.reviewer().claim(&key) {
                continue;
            }
            let weak = std::sync::Arc::downgrade(&self.inner);
            self.inner.reviewer().spawn(async move {
                let Some(inner) = weak.upgrade() else { return };
                let host = RuntimeHost { inner };
                let _claim = Claim(host.clone(), key);
                if let Err(e) = host.review_mcp(&subject).await {
                    tracing::warn!(server = %subject.name, error = %e, "an MCP server's review could not be recorded");
                }
            });
        }
    }

    async fn review_mcp(&self, s: &Subject) -> Result<(), RuntimeError> {
        let config = self.inner.reviewer().config();
        let slot = self.inner.reviewer().slots.acquire().await;
        if let Some(done) = reviews_in(&self.inner.store)?.into_iter().find(|r| s.is(r)) {
            drop(slot);
            // Asked before (a restart, or another turn): asked once; an
            // allow not yet acted on is, if the reach still lets it.
            if !done.acted
                && done.review.may.answers(done.review.verdict)
                && config.may.answers(done.review.verdict)
            {
                self.hold_then_approve(s, &done).await?;
            }
            return Ok(());
        }
        let agent = self.inner.agent_record(&s.agent_id)?;
        // Paused, or denied too often in a row: not asked now, and nothing
        // recorded, so a later turn asks once that is over.
        if matches!(agent.status, AgentStatus::Paused | AgentStatus::Stopped)
            || self.inner.reviewer().denied_too_often(&s.agent_id)
        {
            return Ok(());
        }
        let Some(model) = self.reviewer_model(&config, &agent, &s.workspace_id) else {
            return Ok(());
        };
        let started = Instant::now();
        let id = format!("mcp-server {}", s.name);
        let asked = match self.policy_for(&config, &agent, &s.workspace_id) {
            Err(why) => Asked::unasked(None, why),
            Ok(policy) => {
                let (confinement, reach) = match s.unconfined {
                    Some(why) => (why, "advice only: the operator decides"),
                    None => (
                        "it would run in the agent's sandbox, as the agent's commands do",
                        "as the policy allows",
                    ),
                };
                let document = json!({
                    "approval_id": id,
                    "agent_id": s.agent_id,
                    "request": "start an MCP server that the repository's .mcp.json defines; \
                                its tools would be offered to the agent",
                    "server": s.name,
                    "command_line": s.command_line,
                    "workspace": s.workspace,
                    "defined_by": "the repository's .mcp.json, which the agent may have written",
                    "confinement": confinement,
                    "your_verdict_counts": reach,
                });
                let request = review::request_for(document, &id, Some(&policy.text));
                self.consult(&config, &model, &agent, request, &id, policy)
                    .await
            }
        };
        let (mut review, usage, cost) = self.record_of(&config, model, asked, started);
        if s.unconfined.is_some() {
            // Advice only: nothing confines what it reaches.
            review.may = ReviewerMay::Advise;
            review.runs_at = None;
        }
        let record = McpServerReview {
            workspace: s.workspace.clone(),
            name: s.name.clone(),
            command_line: s.command_line.clone(),
            review,
            acted: false,
        };
        let (r, agent_id) = (record.clone(), s.agent_id.clone());
        let recorded = self
            .inner
            .store
            .write(move |tx| {
                let mut all: Vec<McpServerReview> = tx.setting(MCP_REVIEWS)?.unwrap_or_default();
                // One verdict per command line, whatever raced.
                if all.iter().any(|x| {
                    x.workspace == r.workspace
                        && x.name == r.name
                        && x.command_line == r.command_line
                }) {
                    return Ok(false);
                }
                // A server's verdict on an earlier command line is over.
                all.retain(|x| !(x.workspace == r.workspace && x.name == r.name));
                all.push(r.clone());
                tx.put_setting(MCP_REVIEWS, Some(&all))?;
                spend(tx, &agent_id, usage, cost)?;
                let e = Event::McpServerReviewed(r.clone());
                tx.append_event(new_event(&agent_id, Provenance::default(), e))?;
                Ok(true)
            })
            .await?;
        drop(slot);
        if recorded && record.review.may.answers(record.review.verdict) {
            self.hold_then_approve(s, &record).await?;
        }
        Ok(())
    }

    /// After what is left of its hold, let an allow approve the server for
    /// its command line, unless a person disabled it meanwhile or the
    /// reach was lowered.
    async fn hold_then_approve(
        &self,
        s: &Subject,
        r: &McpServerReview,
    ) -> Result<(), RuntimeError> {
        if r.review.verdict != ReviewVerdict::Allow || s.unconfined.is_some() {
            return Ok(());
        }
        wait_hold(&r.review).await;
        // What changed in the hold: a lower reach, no reviewer here, a
        // paused agent (then the next look acts on it).
        let config = self.inner.reviewer().config();
        let agent = self.inner.agent_record(&s.agent_id)?;
        if !config.may.answers(r.review.verdict)
            || self
                .reviewer_model(&config, &agent, &s.workspace_id)
                .is_none()
            || matches!(agent.status, AgentStatus::Paused | AgentStatus::Stopped)
        {
            return Ok(());
        }
        // From here it is acted on once, whatever follows.
        self.mark_acted(r).await?;
        let disabled = crate::runtime::mcp::ops::disabled_in(&self.inner.store)?;
        if disabled
            .iter()
            .any(|d| d.workspace.as_deref() == Some(r.workspace.as_str()) && d.name == r.name)
        {
            return Ok(());
        }
        let approved = crate::runtime::mcp::ops::approvals_in(&self.inner.store)?;
        if approved.iter().any(|a| {
            a.workspace == r.workspace && a.name == r.name && a.command_line == r.command_line
        }) {
            return Ok(());
        }
        // Only the command line reviewed: the file may say another now.
        let approval = match self
            .inner
            .mcp()
            .approval_for(Path::new(&r.workspace), &r.name)
            .and_then(|a| crate::runtime::mcp::ops::same_line(a, Some(&r.command_line)))
        {
            Ok(a) => a,
            Err(why) => {
                tracing::info!(server = %r.name, %why, "a reviewed MCP server changed; not approved");
                return Ok(());
            }
        };
        let all = record_approval_by(&self.inner.store, approval, "reviewer").await?;
        self.inner.mcp().set_approvals(&all);
        Ok(())
    }
}

impl RuntimeHost {
    /// Record that `r`'s allow was acted on (explained by the approval,
    /// or the operator's switch, that follows or came before).
    async fn mark_acted(&self, r: &McpServerReview) -> Result<(), RuntimeError> {
        let r = r.clone();
        self.inner
            .store
            .write(move |tx| {
                let mut all: Vec<McpServerReview> = tx.setting(MCP_REVIEWS)?.unwrap_or_default();
                for x in &mut all {
                    if x.workspace == r.workspace
                        && x.name == r.name
                        && x.command_line == r.command_line
                    {
                        x.acted = true;
                    }
                }
                tx.put_setting(MCP_REVIEWS, Some(&all))
            })
            .await?;
        Ok(())
    }
}

/// Why nothing would confine a server of `transport` started for an agent
/// at `place`, when nothing would.
fn unconfined(
    host: &RuntimeHost,
    place: &crate::model::workspace::ExecutionSnapshot,
    transport: &str,
) -> Option<&'static str> {
    use crate::model::sandbox::SandboxMode;
    if transport == "http" {
        return Some(
            "none: the runtime itself connects to this URL, outside any sandbox, and sends it \
             the arguments of the agent's calls to its tools",
        );
    }
    let off = host.inner.default_policy().sandbox == Some(SandboxMode::Off)
        || place.policy.sandbox_mode() == SandboxMode::Off;
    let kernel = crate::runtime::sandbox::Support::probe().missing.is_some()
        && !host.inner.config.sandbox_required;
    (off || kernel).then_some(
        "none: the sandbox is off here, or the kernel cannot make one, so it would run with \
         everything your user can reach",
    )
}

/// Sleep until `review`'s hold is over (at once when it has none).
pub(super) async fn wait_hold(review: &ApprovalReview) {
    let at = review
        .runs_at
        .as_deref()
        .and_then(crate::runtime::scheduler::parse_ts_ms);
    if let Some(wait) = at.map(|at| at - crate::now_ms()).filter(|w| *w > 0) {
        tokio::time::sleep(std::time::Duration::from_millis(wait as u64)).await;
    }
}
