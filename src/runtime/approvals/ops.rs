//! Durable approvals on `RuntimeHost`. A gated tool call is recorded as
//! `approval_requested` before anything runs; the turn waits a while for
//! the answer (`turn/join.rs`), then yields, and the agent waits for the
//! operator. The answer goes through the runtime
//! (first answer wins): a grant runs the call and carries its result back
//! to the agent as an `internal_followup` naming the approval; a denial
//! carries the operator's note. A grant whose call was cut short by a
//! restart is told to the agent as such at the next start.

use std::collections::BTreeMap;

use super::policies::in_force;
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::approval::always_rule;
use crate::model::approval::always_tool;
use crate::model::approval::Action;
use crate::model::approval::ApprovalRecord;
use crate::model::approval::ApprovalStatus;
use crate::model::event::Provenance;
use crate::model::message::{
    AdmissionContext, AdmissionRequest, DeliverySurface, MessageBody, MessageKind, MessageOrigin,
    Priority,
};
use crate::model::usage::ToolCall;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::{ApiError, Request, Response};
use crate::runtime::admission::{admit_in, Outcome};
use crate::runtime::agent::agent_in;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::tools::{self, Gated, ToolEnv};
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, StoreError, WriteCtx};

/// How much of a granted call's result the follow-up carries.
const RESULT_CHARS: usize = 16_000;

/// Who answered an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answerer {
    /// A person, through any client.
    Operator,
    /// The reviewer model, under `[policy] reviewer_may`, with its reason.
    Reviewer { model: String, reason: String },
}

impl Answerer {
    /// Who, as the agent is told.
    fn who(&self) -> String {
        match self {
            Answerer::Operator => "The operator".into(),
            Answerer::Reviewer { model, .. } => format!("The operator's reviewer ({model})"),
        }
    }
}

pub(super) fn changed(
    tx: &mut WriteCtx<'_>,
    rec: &ApprovalRecord,
    kind: fn(ev::ApprovalChanged) -> Event,
) -> Result<(), StoreError> {
    let provenance = Provenance {
        message_id: Some(rec.message_id.clone()),
        work_item_id: rec.work_item_id.clone(),
        ..Provenance::default()
    };
    let payload = ev::ApprovalChanged {
        approval: rec.clone(),
    };
    tx.append_event(new_event(&rec.agent_id, provenance, kind(payload)))
        .map(drop)
}

/// Inside a write job: carry `text` to the agent as the approval's answer
/// (model-visible; it satisfies the operator wait) and close the record.
fn answer_in(
    tx: &mut WriteCtx<'_>,
    rec: &mut ApprovalRecord,
    text: String,
) -> Result<(), StoreError> {
    let req = AdmissionRequest {
        agent_id: rec.agent_id.clone(),
        kind: MessageKind::InternalFollowup,
        origin: MessageOrigin::System {
            subsystem: "approvals".into(),
        },
        priority: Priority::Next,
        body: MessageBody::Text { text },
        delivery_surface: DeliverySurface::RuntimeSystem,
        admission_context: AdmissionContext::RuntimeOwned,
        work_item_id: rec.work_item_id.clone(),
        task_id: None,
        source_refs: BTreeMap::from([
            ("approval_id".to_owned(), rec.id.clone()),
            ("call_id".to_owned(), rec.call_id.clone()),
        ]),
        metadata: None,
        correlation_id: None,
        causation_id: Some(rec.message_id.clone()),
    };
    let message_id = crate::new_id("msg");
    if let Outcome::Admitted(a) = admit_in(tx, req, &message_id)? {
        rec.result_message_id = Some(a.message_id);
    }
    tx.put(Keyed::Approvals, &rec.agent_id, &rec.id, &*rec)?;
    tx.index_remove(Index::OpenApprovals, &rec.agent_id, &rec.id)
        .map(drop)
}

fn load(
    tx: &WriteCtx<'_>,
    agent_id: &str,
    approval_id: &str,
) -> Result<ApprovalRecord, StoreError> {
    tx.get(Keyed::Approvals, agent_id, approval_id)?
        .ok_or_else(|| {
            StoreError::rejected(RuntimeError::UnknownApproval {
                approval_id: approval_id.to_owned(),
            })
        })
}

/// The approval must still be pending and its agent able to act on it.
fn pending(rec: &ApprovalRecord, agent: &AgentRecord) -> Result<(), StoreError> {
    if rec.status != ApprovalStatus::Pending {
        return Err(StoreError::rejected(RuntimeError::ApprovalAnswered {
            approval_id: rec.id.clone(),
            status: rec.status.as_str(),
        }));
    }
    if agent.status == AgentStatus::Stopped {
        return Err(StoreError::rejected(RuntimeError::AgentStopped {
            agent_id: agent.id.clone(),
            status: "stopped",
        }));
    }
    Ok(())
}

impl RuntimeHost {
    /// `approval.approve` and `.deny`, the policies (`workspace.policy`,
    /// `runtime.policy`) and a workspace's proposals (`proposal.show`,
    /// `.adopt`); `approvals.list` is read from the store alone.
    pub(crate) async fn answer_approvals(&self, request: Request) -> Result<Response, ApiError> {
        match request {
            Request::ApprovalApprove {
                approval_id,
                agent_id,
                always,
            } => {
                let agent = self.approval_agent(agent_id, &approval_id)?;
                Ok(Response::ApprovalApprove(
                    self.approve(&agent, &approval_id, always).await?,
                ))
            }
            Request::ApprovalDeny {
                approval_id,
                agent_id,
                note,
            } => {
                let agent = self.approval_agent(agent_id, &approval_id)?;
                Ok(Response::ApprovalDeny(
                    self.deny(&agent, &approval_id, note).await?,
                ))
            }
            Request::WorkspacePolicy {
                agent_id,
                workspace_id,
                change,
            } => Ok(Response::WorkspacePolicy(
                self.set_workspace_policy(&agent_id, &workspace_id, change)
                    .await?,
            )),
            Request::RuntimePolicy { change } => {
                Ok(Response::RuntimePolicy(self.default_policy(change).await?))
            }
            Request::ProposalShow { workspace, kind } => Ok(Response::ProposalShow(
                self.proposal(std::path::Path::new(&workspace), kind)?,
            )),
            Request::ProposalAdopt {
                workspace,
                kind,
                digest,
                approved,
            } => Ok(Response::ProposalAdopt(
                self.adopt_proposal(std::path::Path::new(&workspace), kind, &digest, approved)
                    .await?,
            )),
            other => Err(other.misrouted()),
        }
    }

    /// Approve and run the call. `always` extends the workspace's
    /// allow-list so calls like it no longer ask.
    pub async fn approve(
        &self,
        agent_id: &str,
        approval_id: &str,
        always: bool,
    ) -> Result<ApprovalRecord, RuntimeError> {
        self.approve_as(agent_id, approval_id, always, Answerer::Operator)
            .await
    }

    /// `approve`, answered by `by`.
    pub(crate) async fn approve_as(
        &self,
        agent_id: &str,
        approval_id: &str,
        always: bool,
        by: Answerer,
    ) -> Result<ApprovalRecord, RuntimeError> {
        let by_reviewer = matches!(by, Answerer::Reviewer { .. });
        let (id, aid) = (agent_id.to_owned(), approval_id.to_owned());
        let default_policy = self.inner.default_policy();
        let inner = std::sync::Arc::clone(&self.inner);
        let rec = self
            .inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = agent_in(tx, &id)?;
                let mut rec = load(tx, &id, &aid)?;
                pending(&rec, &agent)?;
                rec.status = ApprovalStatus::Granted;
                rec.answered_at = Some(tx.now_ts());
                if let (true, Some(review)) = (by_reviewer, rec.review.as_mut()) {
                    review.applied = true;
                }
                // "Always" is recorded only when it extends the allow-list: a
                // compound command has no rule that could cover it.
                rec.always = false;
                if always {
                    if let Some(action) = always_action(&inner, &rec) {
                        let (command, paths) = always_rule(&action);
                        let tool = always_tool(&action);
                        // The rule is kept apart from the workspace's
                        // policy and added to whichever is in force there,
                        // so a later default still reaches it.
                        let mut rules = (agent.workspaces.always.get(&rec.workspace_id).cloned())
                            .unwrap_or_default();
                        rec.always = command.is_some() || !paths.is_empty() || tool.is_some();
                        // Nothing written when no rule is new.
                        if rules.add(command, paths, tool) {
                            agent
                                .workspaces
                                .always
                                .insert(rec.workspace_id.clone(), rules);
                            let changed = in_force(&agent, &rec.workspace_id, &default_policy);
                            tx.put_agent(&id, &agent)?;
                            tx.append_event(new_event(
                                &id,
                                Provenance::default(),
                                Event::WorkspacePolicyChanged(changed),
                            ))?;
                        }
                    }
                }
                tx.put(Keyed::Approvals, &id, &aid, &rec)?;
                changed(tx, &rec, Event::ApprovalGranted)?;
                Ok(rec)
            })
            .await?;
        if !by_reviewer {
            // A person answered: the reviewer is asked again.
            self.inner.reviewer().count(agent_id, false);
        }
        let (text, ran) = self.run_granted(&rec, &by).await;
        let rec = self
            .inner
            .store
            .write(move |tx| {
                let mut done = rec.clone();
                // The call that ran is recorded as any call is: the
                // console shows its command or its diff.
                if let Some((call, outcome, ms)) = &ran {
                    tools::executed_in(
                        tx,
                        &done.agent_id,
                        &done.run_id,
                        &done.message_id,
                        call,
                        outcome,
                        *ms,
                    )?;
                }
                answer_in(tx, &mut done, text.clone())?;
                Ok(done)
            })
            .await?;
        self.wake(agent_id);
        Ok(rec)
    }

    /// Run a granted call where it was asked, and say what it did.
    async fn run_granted(
        &self,
        rec: &ApprovalRecord,
        by: &Answerer,
    ) -> (
        String,
        Option<(ToolCall, crate::runtime::tool_outcome::ToolOutcome, u64)>,
    ) {
        let head = format!(
            "[approval {}] {} approved {} {}",
            rec.id,
            by.who(),
            rec.tool_name,
            rec.summary
        );
        let now = self.inner.execution_of(&rec.agent_id);
        match now {
            Ok(s) if s.execution_root == rec.execution_root => {}
            Ok(s) => {
                let text = format!(
                    "{head}, but it was not run: you now work in {} (asked in {}). Ask again \
                     from where it should run.",
                    s.execution_root, rec.execution_root
                );
                return (text, None);
            }
            Err(e) => return (format!("{head}, but it was not run: {e}"), None),
        }
        let call = call_of(rec);
        let env = ToolEnv {
            host: &self.inner,
            agent_id: &rec.agent_id,
            message_id: &rec.message_id,
            turn_work_item_id: rec.work_item_id.clone(),
            round_text: "",
            granted: true,
            approved: Some(&rec.summary),
        };
        let t0 = std::time::Instant::now();
        let mut outcome = tools::execute(&env, &call, None).await;
        crate::runtime::tool_outcome::finish(&mut outcome, &call.name);
        let ms = t0.elapsed().as_millis() as u64;
        let result: String = outcome.text().chars().take(RESULT_CHARS).collect();
        // The result reaches the agent as a message, which is text: an
        // image the tool returned is named, not shown.
        let images = match outcome.images.len() {
            0 => String::new(),
            n => format!(
                " ({n} image{} the tool returned cannot be shown in this message; call it \
                 again to see them)",
                if n == 1 { "" } else { "s" }
            ),
        };
        let text = format!(
            "{head}; it ran. Result of call {}: {result}{images}",
            rec.call_id
        );
        (text, Some((call, outcome, ms)))
    }

    /// Deny the call; the agent is told, with the operator's note.
    pub async fn deny(
        &self,
        agent_id: &str,
        approval_id: &str,
        note: Option<String>,
    ) -> Result<ApprovalRecord, RuntimeError> {
        self.deny_as(agent_id, approval_id, note, Answerer::Operator)
            .await
    }

    /// `deny`, answered by `by`.
    pub(crate) async fn deny_as(
        &self,
        agent_id: &str,
        approval_id: &str,
        note: Option<String>,
        by: Answerer,
    ) -> Result<ApprovalRecord, RuntimeError> {
        let by_person = matches!(by, Answerer::Operator);
        let (id, aid) = (agent_id.to_owned(), approval_id.to_owned());
        let note = note.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
        let rec = self
            .inner
            .store
            .write(move |tx| {
                let agent: AgentRecord = agent_in(tx, &id)?;
                let mut rec = load(tx, &id, &aid)?;
                pending(&rec, &agent)?;
                rec.status = ApprovalStatus::Denied;
                rec.answered_at = Some(tx.now_ts());
                rec.note = note.clone();
                if let (Answerer::Reviewer { .. }, Some(review)) = (&by, rec.review.as_mut()) {
                    review.applied = true;
                }
                changed(tx, &rec, Event::ApprovalDenied)?;
                let text = format!(
                    "[approval {}] {} denied {} {}{}. Do not run it again without \
                     asking; change the approach or ask the operator.",
                    rec.id,
                    by.who(),
                    rec.tool_name,
                    rec.summary,
                    note.as_deref()
                        .map(|n| format!(": \"{n}\""))
                        .unwrap_or_default()
                );
                answer_in(tx, &mut rec, text)?;
                Ok(rec)
            })
            .await?;
        if by_person {
            // A person answered: the reviewer is asked again.
            self.inner.reviewer().count(agent_id, false);
        }
        self.wake(agent_id);
        Ok(rec)
    }

    /// At start: a grant whose call's outcome never reached the agent (the
    /// runtime stopped while it ran) is told to the agent as such. Pending
    /// approvals stay pending: nothing runs without an answer.
    pub(crate) async fn recover_approvals(&self, agent_id: &str) -> Result<(), RuntimeError> {
        let id = agent_id.to_owned();
        self.inner
            .store
            .write(move |tx| {
                for aid in tx.index_list(Index::OpenApprovals, &id)? {
                    let Some(mut rec) = tx.get::<ApprovalRecord>(Keyed::Approvals, &id, &aid)?
                    else {
                        tx.index_remove(Index::OpenApprovals, &id, &aid)?;
                        continue;
                    };
                    if rec.status != ApprovalStatus::Granted {
                        continue;
                    }
                    let by = match rec.review.as_ref().filter(|r| r.applied) {
                        Some(r) => Answerer::Reviewer {
                            model: r.model.clone(),
                            reason: r.reason.clone(),
                        },
                        None => Answerer::Operator,
                    };
                    let text = format!(
                        "[approval {}] {} approved {} {}, but the runtime stopped while it \
                         ran: its effects are unknown. Check before running it again.",
                        rec.id,
                        by.who(),
                        rec.tool_name,
                        rec.summary
                    );
                    answer_in(tx, &mut rec, text)?;
                }
                Ok(())
            })
            .await?;
        Ok(())
    }
}

/// The call a record holds, to gate or run again.
fn call_of(rec: &ApprovalRecord) -> ToolCall {
    ToolCall {
        id: rec.call_id.clone(),
        name: rec.tool_name.clone(),
        arguments: rec.arguments.clone(),
        malformed_arguments: None,
    }
}

/// What "always" is judged on: an MCP tool by its name alone (the
/// workspace's catalog need not be built after a restart), another tool
/// by what its gate sees.
fn always_action(
    host: &dyn crate::runtime::tools::host::ToolHost,
    rec: &ApprovalRecord,
) -> Option<Action> {
    if crate::model::mcp::is_mcp_tool(&rec.tool_name) {
        return Some(Action::Tool {
            name: rec.tool_name.clone(),
            read_only: false,
            approval: None,
        });
    }
    match tools::gate_of(host, &rec.agent_id, &call_of(rec)) {
        Gated::By(action) => Some(action),
        Gated::No => None,
    }
}
