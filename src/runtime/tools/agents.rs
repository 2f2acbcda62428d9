//! SpawnAgent and AgentGet (spec "Agent Identity And Visibility Contract"):
//! delegation to a private child (or creation of a public named agent),
//! and inspection of agent-plane state. The parent acts on a child with
//! the task tools through the returned `supervision_task_id`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::handler::{Gated, Reach, Tool};
use super::host::ToolHost;
use super::{runtime_error, ToolEnv};
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentVisibility;
use crate::model::agent::ProfilePreset;
use crate::model::task::ChildWorkspaceMode;
use crate::runtime::agents::child_ops::SpawnRequest;
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SpawnArgs {
    /// `private_child` (default): a private child with its own context,
    /// supervised through the returned task handle. `public_named`: a new
    /// self-owned public agent named `agent_id`.
    #[serde(default)]
    preset: Option<ProfilePreset>,
    /// The work to delegate (required for private_child; optional first
    /// message for public_named).
    #[serde(default)]
    initial_message: Option<String>,
    /// The new agent's id (public_named only).
    #[serde(default)]
    agent_id: Option<String>,
    /// private_child only: `inherit` (default) works in your active
    /// workspace; `worktree` in its own managed git worktree, removed when
    /// clean and kept for review when it holds changes.
    #[serde(default)]
    workspace_mode: Option<ChildWorkspaceMode>,
    // Text fields the contract forbids (`initial_message` is the one
    // caller-provided text): accepted here only to be refused by name,
    // and absent from the schema.
    #[serde(default, deserialize_with = "given")]
    #[schemars(skip)]
    prompt: bool,
    #[serde(default, deserialize_with = "given")]
    #[schemars(skip)]
    summary: bool,
    #[serde(default, deserialize_with = "given")]
    #[schemars(skip)]
    task_summary: bool,
    #[serde(default, deserialize_with = "given")]
    #[schemars(skip)]
    work_item: bool,
}

/// Whether a field was given at all (`null` included).
fn given<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl SpawnArgs {
    /// The first forbidden field the call gave.
    fn forbidden(&self) -> Option<&'static str> {
        [
            ("prompt", self.prompt),
            ("summary", self.summary),
            ("task_summary", self.task_summary),
            ("work_item", self.work_item),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentGetArgs {
    /// The agent to inspect: yourself when absent, one of your children,
    /// or a public agent.
    #[serde(default)]
    agent_id: Option<String>,
}

pub(super) struct SpawnAgent;

impl Tool for SpawnAgent {
    const NAME: &'static str = "SpawnAgent";
    const DESCRIPTION: &'static str = "Delegate bounded work to a private child agent with its own context (preset \
             private_child, the default, with initial_message). It runs in the background; its final \
             report comes back to you as a task result. Use TaskStatus/TaskOutput/TaskInput/TaskStop \
             with the returned supervision_task_id. preset public_named creates a new public agent \
             (agent_id required).";
    type Args = SpawnArgs;

    /// A child is Holon's own supervised agent: its commands and patches
    /// pass the gate of the workspace it works in.
    fn gate(&self, _: &SpawnArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: SpawnArgs) -> ToolOutcome {
        spawn(env, args).await
    }
}

pub(super) struct AgentGet;

impl Tool for AgentGet {
    const NAME: &'static str = "AgentGet";
    const DESCRIPTION: &'static str =
        "Inspect an agent: identity (kind, visibility, ownership, preset, lineage), a compact \
             summary and each child's supervision snapshot; for yourself also status, posture, \
             focus, queue, tasks and open waits.";
    type Args = AgentGetArgs;

    fn gate(&self, _: &AgentGetArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: AgentGetArgs) -> ToolOutcome {
        agent_get(env, args).await
    }
}

fn spawn_error(e: crate::runtime::RuntimeError) -> ToolOutcome {
    match e {
        crate::runtime::RuntimeError::Invalid(m)
        | crate::runtime::RuntimeError::InvalidAgentId(m) => {
            tool_error(ToolErrorKind::InvalidArguments, m, None, None, false)
        }
        other => runtime_error(other),
    }
}

async fn spawn(env: &ToolEnv<'_>, a: SpawnArgs) -> ToolOutcome {
    if let Some(f) = a.forbidden() {
        return tool_error(
            ToolErrorKind::InvalidArguments,
            format!("SpawnAgent does not take `{f}`: put the work in `initial_message`, its one text field"),
            Some("SpawnAgent {\"initial_message\": \"...\"}"),
            Some(f),
            false,
        );
    }
    let req = SpawnRequest {
        preset: a.preset.unwrap_or(ProfilePreset::PrivateChild),
        initial_message: a.initial_message,
        agent_id: a.agent_id,
        workspace_mode: a.workspace_mode.unwrap_or_default(),
        parent_message_id: Some(env.message_id.to_owned()),
        work_item_id: env.turn_work_item_id.clone(),
    };
    let host = env.host;
    match host.spawn_agent(env.agent_id, req).await {
        Ok(s) => {
            let mut v = json!({ "ok": true });
            if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), json!(s)) {
                obj.extend(more);
            }
            if s.child_agent_id.is_some() {
                v["note"] = json!("the child runs in the background; its final report arrives as this task's result");
            }
            ToolOutcome::ok(v)
        }
        Err(e) => spawn_error(e),
    }
}

/// What AgentGet shows of an agent it may see.
pub(crate) fn agent_view(
    host: &dyn ToolHost,
    agent: &AgentRecord,
) -> Result<Value, crate::runtime::RuntimeError> {
    // The summary carries the children (live, then the latest finished).
    let mut summary = host.summary_of(agent)?;
    let children = std::mem::take(&mut summary.children);
    Ok(json!({
        "agent_id": agent.id,
        "identity": agent.identity(),
        "summary": summary,
        "children": children,
    }))
}

async fn agent_get(env: &ToolEnv<'_>, a: AgentGetArgs) -> ToolOutcome {
    let host = env.host;
    let target = a.agent_id.unwrap_or_else(|| env.agent_id.to_owned());
    let not_found = || {
        tool_error(
            ToolErrorKind::NotFound,
            format!("no agent `{target}` visible to you"),
            Some("you can see yourself, your children and public agents"),
            Some("agent_id"),
            false,
        )
    };
    let agent = match env.host.agent_record(&target) {
        Ok(a) => a,
        Err(_) => return not_found(),
    };
    let visible = agent.id == env.agent_id
        || agent.visibility == AgentVisibility::Public
        || agent.lineage_parent_agent_id.as_deref() == Some(env.agent_id);
    if !visible {
        return not_found();
    }
    let view = match agent_view(host, &agent) {
        Ok(v) => v,
        Err(e) => return runtime_error(e),
    };
    if agent.id != env.agent_id {
        return ToolOutcome::ok(json!({ "ok": true, "agent": view }));
    }
    // Yourself: your scheduling state too (focus, waits, closure, tokens).
    let mut own = super::work::own_state(env);
    if let Some(obj) = own.content.as_object_mut() {
        obj.insert("agent".into(), view);
    }
    own
}
