//! The waiting-plane tools: RecordExternalWait (a durable waiting intent,
//! so the agent's posture becomes WaitingForExternal with its evidence and
//! a delivery through its trigger naming the same source and reference
//! satisfies it) and CancelExternalWait. Neither touches the trigger
//! capability itself.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::{runtime_error, ToolEnv};
use crate::model::trigger::MAX_META_CHARS;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingIntentStatus;
use crate::model::work::{WorkItemRecord, WorkItemState};
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};
use crate::runtime::triggers::ExternalTriggerRecord;
use crate::runtime::waiting::ops::NewWait;
use crate::store::Keyed;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct RecordArgs {
    /// What you are waiting for, for the operator (e.g. "CI for PR 12").
    description: String,
    /// The system that will deliver to your trigger URL (e.g. "ci",
    /// "github"); a delivery must name the same `source`.
    source: String,
    /// What there you wait on (a PR number, a pipeline id); a delivery
    /// must name it as its `resource`.
    external_ref: String,
    /// Only deliveries through this trigger satisfy the wait.
    #[serde(default, deserialize_with = "super::null_as_default")]
    external_trigger_id: Option<String>,
    /// The work item this wait blocks (it stops being runnable until the
    /// wait is satisfied or cancelled).
    #[serde(default, deserialize_with = "super::null_as_default")]
    work_item_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct CancelArgs {
    /// The wait to cancel (from RecordExternalWait or AgentGet).
    waiting_intent_id: String,
}

fn invalid(message: String, field: &str) -> ToolOutcome {
    tool_error(
        ToolErrorKind::InvalidArguments,
        message,
        None,
        Some(field),
        false,
    )
}

/// Non-empty, single-line, bounded.
fn text(value: &str, field: &str) -> Result<String, ToolOutcome> {
    let v = value.trim();
    if v.is_empty() {
        return Err(invalid(format!("`{field}` is empty"), field));
    }
    if v.chars().count() > MAX_META_CHARS || v.chars().any(char::is_control) {
        return Err(invalid(
            format!("`{field}` must be one line of at most {MAX_META_CHARS} characters"),
            field,
        ));
    }
    Ok(v.to_owned())
}

fn check(env: &ToolEnv<'_>, a: RecordArgs) -> Result<NewWait, ToolOutcome> {
    let wait = NewWait {
        description: text(&a.description, "description")?,
        source: text(&a.source, "source")?,
        external_ref: Some(text(&a.external_ref, "external_ref")?),
        external_trigger_id: a.external_trigger_id,
        work_item_id: a.work_item_id,
    };
    let failed = |e: crate::store::StoreError| {
        tool_error(ToolErrorKind::Failed, e.to_string(), None, None, true)
    };
    let rx = env.host.store().read().map_err(failed)?;
    if let Some(w) = &wait.work_item_id {
        let item: Option<WorkItemRecord> =
            rx.get(Keyed::WorkItems, env.agent_id, w).map_err(failed)?;
        match item {
            Some(i) if i.state != WorkItemState::Completed => {}
            Some(_) => {
                return Err(invalid(
                    format!("work item `{w}` is completed"),
                    "work_item_id",
                ))
            }
            None => return Err(invalid(format!("no work item `{w}`"), "work_item_id")),
        }
    }
    if let Some(t) = &wait.external_trigger_id {
        let trigger: Option<ExternalTriggerRecord> = rx
            .get(Keyed::ExternalTriggers, env.agent_id, t)
            .map_err(failed)?;
        if trigger.is_none() {
            return Err(invalid(format!("no trigger `{t}`"), "external_trigger_id"));
        }
    }
    Ok(wait)
}

pub(super) struct RecordExternalWait;

impl Tool for RecordExternalWait {
    const NAME: &'static str = "RecordExternalWait";
    const DESCRIPTION: &'static str = "Record that progress waits on an outside system (CI, a review). A delivery to your trigger URL naming this source and external_ref satisfies it and wakes you; other deliveries do not. End the turn with Sleep afterwards.";
    type Args = RecordArgs;

    fn gate(&self, _: &RecordArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: RecordArgs) -> ToolOutcome {
        let wait = match check(env, args) {
            Ok(w) => w,
            Err(e) => return e,
        };
        let host = env.host;
        match host.create_waiting_intent(env.agent_id, wait).await {
            Ok(w) => ToolOutcome::ok(json!({
                "ok": true, "waiting_intent_id": w.id, "status": w.status,
                "satisfied_by": {
                    "source": w.source, "resource": w.external_ref,
                    "external_trigger_id": w.external_trigger_id,
                },
                "next": "end the turn with Sleep; a matching delivery wakes you",
            })),
            Err(e) => runtime_error(e),
        }
    }
}

pub(super) struct CancelExternalWait;

impl Tool for CancelExternalWait {
    const NAME: &'static str = "CancelExternalWait";
    const DESCRIPTION: &'static str =
        "Cancel a wait recorded with RecordExternalWait that no longer applies.";
    type Args = CancelArgs;

    fn gate(&self, _: &CancelArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, a: CancelArgs) -> ToolOutcome {
        let existing: Result<Option<WaitingIntentRecord>, _> = env
            .host
            .store()
            .read()
            .and_then(|rx| rx.get(Keyed::WaitingIntents, env.agent_id, &a.waiting_intent_id));
        match existing {
            Ok(Some(w)) if w.status == WaitingIntentStatus::Active => {
                let host = env.host;
                let cancelled = WaitingIntentStatus::Cancelled;
                match host
                    .settle_waiting_intent(env.agent_id, &a.waiting_intent_id, cancelled)
                    .await
                {
                    Ok(w) => ToolOutcome::ok(
                        json!({ "ok": true, "waiting_intent_id": w.id, "status": w.status }),
                    ),
                    Err(e) => runtime_error(e),
                }
            }
            Ok(Some(w)) => tool_error(
                ToolErrorKind::Conflict,
                format!("wait `{}` is already {:?}", w.id, w.status).to_lowercase(),
                None,
                Some("waiting_intent_id"),
                false,
            ),
            Ok(None) => tool_error(
                ToolErrorKind::NotFound,
                format!("no wait `{}`", a.waiting_intent_id),
                Some("AgentGet lists your open waits"),
                Some("waiting_intent_id"),
                false,
            ),
            Err(e) => tool_error(ToolErrorKind::Failed, e.to_string(), None, None, true),
        }
    }
}
