//! Asking: the record of a gated call, written with its event before
//! anything runs, and what the model is told while the call waits for
//! the operator's answer; and finding what was asked (which agent holds
//! an approval, which are pending).

use serde_json::json;

use crate::model::agent::AgentRecord;
use crate::model::approval::{Action, ApprovalRecord, ApprovalStatus};
use crate::model::usage::ToolCall;
use crate::protocol::events::Event;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::tools::{self, Gated, ToolEnv};
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, ReadCtx, StoreError, WriteCtx};

use super::ops::changed;

/// Inside a write job: record a new pending approval and its event.
pub(crate) fn request_in(tx: &mut WriteCtx<'_>, rec: &ApprovalRecord) -> Result<(), StoreError> {
    tx.put(Keyed::Approvals, &rec.agent_id, &rec.id, rec)?;
    tx.index_insert(Index::OpenApprovals, &rec.agent_id, &rec.id)?;
    changed(tx, rec, Event::ApprovalRequested)
}

/// The record for a gated call, before anything runs.
pub(crate) fn approval_for(
    env: &ToolEnv<'_>,
    run_id: &str,
    call: &ToolCall,
    why: String,
    snapshot: &crate::model::workspace::ExecutionSnapshot,
) -> ApprovalRecord {
    let summary = match tools::gate_of(env.host, env.agent_id, call) {
        Gated::By(Action::Command(c)) => format!("`{c}`"),
        Gated::By(Action::Commands(cmds)) => cmds
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", then "),
        Gated::By(Action::Write(paths)) => paths.join(", "),
        Gated::By(Action::Escape { cmd, justification }) => {
            format!("run outside the sandbox: `{cmd}` — {justification}")
        }
        Gated::By(Action::Workspace { path }) => {
            crate::runtime::workspace::reach::workspace_summary(&path)
        }
        Gated::By(Action::Tool { name, .. }) => {
            let args: String = call.arguments.to_string().chars().take(200).collect();
            format!("`{name}` {args}")
        }
        Gated::No => call.name.clone(),
    };
    ApprovalRecord {
        id: crate::new_id("apr"),
        agent_id: env.agent_id.to_owned(),
        status: ApprovalStatus::Pending,
        tool_name: call.name.clone(),
        call_id: call.id.clone(),
        arguments: call.arguments.clone(),
        summary: bounded_summary(&summary),
        // The policy's reason repeats the command: bounded the same way.
        why: bounded_summary(&why),
        workspace_id: snapshot.workspace_id.clone(),
        execution_root: snapshot.execution_root.clone(),
        run_id: run_id.to_owned(),
        message_id: env.message_id.to_owned(),
        work_item_id: env.turn_work_item_id.clone(),
        requested_at: crate::format_ts(crate::now_ms()),
        answered_at: None,
        note: None,
        always: false,
        result_message_id: None,
        review: None,
    }
}

/// A summary kept whole up to 300 characters; past that cut, and the
/// cut said (`approval_text`).
pub(crate) fn bounded_summary(summary: &str) -> String {
    crate::model::approval::approval_text(summary)
}

/// What the model is told when its call waits for approval.
pub(crate) fn awaiting(rec: &ApprovalRecord) -> serde_json::Value {
    json!({
        "ok": false, "status": "awaiting_approval", "approval_id": rec.id,
        "message": format!(
            "{} {} was not run: the operator must approve it ({}). Do not ask again: the \
             operator's answer (and, if approved, the result) comes back to you as a message, \
             in this turn when it comes soon, else in a new one.",
            rec.tool_name, rec.summary, rec.why
        ),
    })
}

impl RuntimeHost {
    /// The agent an approval belongs to: `agent_id` when given, else the
    /// one whose records hold the id.
    pub fn approval_agent(
        &self,
        agent_id: Option<String>,
        approval_id: &str,
    ) -> Result<String, RuntimeError> {
        if let Some(a) = agent_id {
            return Ok(a);
        }
        let rx = self.inner.store.read()?;
        for a in rx.agents::<AgentRecord>()? {
            if rx
                .get::<ApprovalRecord>(Keyed::Approvals, &a.id, approval_id)?
                .is_some()
            {
                return Ok(a.id);
            }
        }
        Err(RuntimeError::UnknownApproval {
            approval_id: approval_id.to_owned(),
        })
    }

    /// Pending approvals (all of them with `include_answered`, newest
    /// first), of one agent or of every agent.
    pub fn approvals(
        &self,
        agent_id: Option<&str>,
        include_answered: bool,
    ) -> Result<Vec<ApprovalRecord>, RuntimeError> {
        let rx = self.inner.store.read()?;
        Ok(approvals_in(&rx, agent_id, include_answered)?)
    }
}

/// Pending approvals (all of them with `include_answered`, newest first),
/// of one agent or of every agent, as a read snapshot holds them.
pub(crate) fn approvals_in(
    rx: &ReadCtx,
    agent_id: Option<&str>,
    include_answered: bool,
) -> Result<Vec<ApprovalRecord>, StoreError> {
    let agents: Vec<String> = match agent_id {
        Some(a) => vec![a.to_owned()],
        None => rx
            .agents::<AgentRecord>()?
            .into_iter()
            .map(|a| a.id)
            .collect(),
    };
    let mut out = Vec::new();
    for a in agents {
        let recs: Vec<ApprovalRecord> = if include_answered {
            rx.list_recent(Keyed::Approvals, &a, 50)?
        } else {
            let ids = rx.index_list(Index::OpenApprovals, &a)?;
            let mut v = Vec::with_capacity(ids.len());
            for i in ids {
                if let Some(r) = rx.get::<ApprovalRecord>(Keyed::Approvals, &a, &i)? {
                    v.push(r);
                }
            }
            v
        };
        out.extend(
            recs.into_iter()
                .filter(|r| include_answered || r.status == ApprovalStatus::Pending),
        );
    }
    out.sort_by(|a, b| b.requested_at.cmp(&a.requested_at));
    Ok(out)
}
