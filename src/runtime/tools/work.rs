//! Work-item tools (CreateWorkItem, PickWorkItem, UpdateWorkItem,
//! CompleteWorkItem, GetWorkItem, ListWorkItems), and the agent's own
//! scheduling state that AgentGet shows.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::{runtime_error, ToolEnv};
use crate::model::agent::AgentRecord;
use crate::model::work::{PlanStatus, TodoItem, WorkItemRecord, WorkItemState};
use crate::protocol::views::WorkItemSource;
use crate::runtime::projection;
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};
use crate::runtime::work_ops;
use crate::store::Keyed;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct CreateArgs {
    /// What this work item should achieve.
    objective: String,
    /// draft, ready (default) or needs_input.
    #[serde(default)]
    plan_status: Option<PlanStatus>,
    /// Initial plan prose; stored as the plan artifact file.
    #[serde(default)]
    plan: Option<String>,
    /// The full checklist.
    #[serde(default)]
    todo_list: Option<Vec<TodoItem>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct IdArgs {
    work_item_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct UpdateArgs {
    work_item_id: String,
    #[serde(default)]
    objective: Option<String>,
    #[serde(default)]
    plan_status: Option<PlanStatus>,
    /// Replaces the whole checklist.
    #[serde(default)]
    todo_list: Option<Vec<TodoItem>>,
    /// What blocks this item; null clears the blocker.
    #[serde(default, deserialize_with = "nullable")]
    #[schemars(with = "Option<String>")]
    blocked_by: Option<Option<String>>,
    /// Milliseconds until a reminder to recheck the blocker.
    #[serde(default)]
    recheck_after: Option<u64>,
}

fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ListArgs {
    /// Include completed items (most recent first, at most 20).
    #[serde(default, deserialize_with = "super::null_as_default")]
    include_completed: bool,
}

/// The plan artifact's descriptor: its path, the whole file's `hash`
/// (sha256) and `bytes`, its `updated_at`, and a bounded `preview`. The
/// file lies in the agent's home, where a command can write: it is read
/// only as a regular file (never through a link, never a FIFO or device
/// that would block or never end), hashed as it streams.
fn plan_artifact(env: &ToolEnv<'_>, item: &WorkItemRecord) -> serde_json::Value {
    let path = work_ops::plan_path(&env.host.agent_home(env.agent_id), &item.id);
    match read_plan(&path) {
        Ok(Some(plan)) => json!({
            "path": path, "hash": plan.hash, "bytes": plan.bytes, "updated_at": plan.updated_at,
            "preview_complete": plan.complete, "preview": plan.preview,
        }),
        Ok(None) | Err(_) => json!(null),
    }
}

struct PlanRead {
    hash: String,
    bytes: u64,
    updated_at: Option<String>,
    preview: String,
    complete: bool,
}

/// The most of a plan shown as its preview, in characters.
const PLAN_PREVIEW_CHARS: usize = 2000;

fn read_plan(path: &std::path::Path) -> std::io::Result<Option<PlanRead>> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    let mut hasher = Sha256::new();
    let mut head: Vec<u8> = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let mut bytes: u64 = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
        if head.len() < PLAN_PREVIEW_CHARS * 4 {
            head.extend_from_slice(&buf[..n]);
        }
    }
    let text = String::from_utf8_lossy(&head);
    let preview: String = text.chars().take(PLAN_PREVIEW_CHARS).collect();
    let updated_at = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| crate::format_ts(d.as_millis() as i64));
    Ok(Some(PlanRead {
        hash: format!("sha256:{:x}", hasher.finalize()),
        complete: preview.len() as u64 == bytes,
        bytes,
        updated_at,
        preview,
    }))
}

fn item_view(env: &ToolEnv<'_>, item: &WorkItemRecord) -> serde_json::Value {
    json!({
        "id": item.id, "objective": item.objective, "state": item.state, "plan_status": item.plan_status,
        "todo_list": item.todo_list, "blocked_by": item.blocked_by, "recheck_at": item.recheck_at,
        "revision": item.revision, "completion_report": item.result_summary,
        "plan_artifact": plan_artifact(env, item),
    })
}

/// A tool that only reads work items, or changes them through the same
/// work-item operations the operator uses: never gated, nothing to confine.
macro_rules! work_tool {
    ($tool:ident, $args:ty, $description:expr) => {
        pub(super) struct $tool;

        impl Tool for $tool {
            const NAME: &'static str = stringify!($tool);
            const DESCRIPTION: &'static str = $description;
            type Args = $args;

            fn gate(&self, _: &$args) -> Gated {
                Gated::No
            }

            fn reach(&self) -> Reach {
                Reach::Runtime
            }

            async fn call(&self, env: &ToolEnv<'_>, args: $args) -> ToolOutcome {
                $tool::run(env, args).await
            }
        }
    };
}

work_tool!(
    CreateWorkItem,
    CreateArgs,
    "Create an open work item for a high-level objective."
);
work_tool!(
    PickWorkItem,
    IdArgs,
    "Make an open work item your current focus."
);
work_tool!(
    UpdateWorkItem,
    UpdateArgs,
    "Update a work item's objective, plan status, checklist or blocker after material progress."
);
work_tool!(
    CompleteWorkItem,
    IdArgs,
    "Mark a work item completed. Put the completion report for the operator in your text of the same round."
);
work_tool!(
    GetWorkItem,
    IdArgs,
    "Read one work item, with its plan artifact and checklist."
);
work_tool!(
    ListWorkItems,
    ListArgs,
    "List work items: current, runnable, waiting, blocked."
);

impl CreateWorkItem {
    async fn run(env: &ToolEnv<'_>, a: CreateArgs) -> ToolOutcome {
        let req = crate::protocol::views::CreateWorkItem {
            objective: a.objective,
            plan_status: a.plan_status,
            plan: a.plan,
            todo_list: a.todo_list,
        };
        let home = env.host.agent_home(env.agent_id);
        match work_ops::create(
            env.host.store(),
            &home,
            env.agent_id,
            req,
            WorkItemSource::Tool,
        )
        .await
        {
            Ok(item) => ToolOutcome::ok(json!({ "ok": true, "work_item": item_view(env, &item) })),
            Err(e) => runtime_error(e),
        }
    }
}

impl PickWorkItem {
    async fn run(env: &ToolEnv<'_>, a: IdArgs) -> ToolOutcome {
        let store = env.host.store();
        match work_ops::pick(store, env.agent_id, &a.work_item_id, WorkItemSource::Tool).await {
            Ok(item) => {
                ToolOutcome::ok(json!({ "ok": true, "current_work_item": item_view(env, &item) }))
            }
            Err(e) => runtime_error(e),
        }
    }
}

impl UpdateWorkItem {
    async fn run(env: &ToolEnv<'_>, a: UpdateArgs) -> ToolOutcome {
        let req = crate::protocol::views::UpdateWorkItem {
            work_item_id: a.work_item_id,
            objective: a.objective,
            plan_status: a.plan_status,
            todo_list: a.todo_list,
            blocked_by: a.blocked_by,
            recheck_after_ms: a.recheck_after,
        };
        match work_ops::update(env.host.store(), env.agent_id, req, WorkItemSource::Tool).await {
            Ok(item) => ToolOutcome::ok(json!({ "ok": true, "work_item": item_view(env, &item) })),
            Err(e) => runtime_error(e),
        }
    }
}

impl CompleteWorkItem {
    async fn run(env: &ToolEnv<'_>, a: IdArgs) -> ToolOutcome {
        let report = env.round_text.trim();
        let summary = (!report.is_empty()).then(|| report.to_owned());
        let store = env.host.store();
        let done = work_ops::complete(
            store,
            env.agent_id,
            &a.work_item_id,
            summary.clone(),
            WorkItemSource::Tool,
        )
        .await;
        match done {
            Ok(item) => {
                let mut out = ToolOutcome::ok(json!({
                    "ok": true, "work_item_id": item.id, "state": item.state,
                    "warning": if summary.is_none() {
                        Some("no completion report: write the report for the operator as text in the same round as CompleteWorkItem")
                    } else { None },
                }));
                out.completed_work_item = summary.map(|_| item.id);
                out
            }
            Err(e) => runtime_error(e),
        }
    }
}

impl GetWorkItem {
    async fn run(env: &ToolEnv<'_>, a: IdArgs) -> ToolOutcome {
        let found = env.host.store().read().and_then(|rx| {
            rx.get::<WorkItemRecord>(Keyed::WorkItems, env.agent_id, &a.work_item_id)
        });
        match found {
            Ok(Some(item)) => {
                ToolOutcome::ok(json!({ "ok": true, "work_item": item_view(env, &item) }))
            }
            Ok(None) => tool_error(
                ToolErrorKind::NotFound,
                format!("no work item `{}`", a.work_item_id),
                Some("ListWorkItems shows the ids"),
                Some("work_item_id"),
                false,
            ),
            Err(e) => tool_error(ToolErrorKind::Failed, e.to_string(), None, None, true),
        }
    }
}

impl ListWorkItems {
    async fn run(env: &ToolEnv<'_>, a: ListArgs) -> ToolOutcome {
        list(env, a.include_completed)
    }
}

fn list(env: &ToolEnv<'_>, include_completed: bool) -> ToolOutcome {
    let result = (|| {
        let rx = env.host.store().read()?;
        let now = crate::now_ms();
        let Some(live) = projection::load(&rx, env.agent_id, now)? else {
            return Ok(json!({ "ok": false }));
        };
        let states = live.projection.work_item_states();
        let mut items = Vec::new();
        for w in &live.work_items {
            let state = states
                .iter()
                .find(|s| s.id == w.id)
                .map(|s| s.state.as_str())
                .unwrap_or("unknown");
            let current = live.agent.current_work_item_id.as_deref() == Some(w.id.as_str());
            items.push(json!({
                "id": w.id, "objective": w.objective, "scheduling_state": state, "current": current,
                "plan_status": w.plan_status, "blocked_by": w.blocked_by, "revision": w.revision,
            }));
        }
        let mut completed = Vec::new();
        if include_completed {
            let all: Vec<WorkItemRecord> = rx.list_recent(Keyed::WorkItems, env.agent_id, 200)?;
            for w in all
                .iter()
                .rev()
                .filter(|w| w.state == WorkItemState::Completed)
                .take(20)
            {
                completed.push(json!({ "id": w.id, "objective": w.objective, "completion_report": w.result_summary }));
            }
        }
        Ok::<_, crate::store::StoreError>(
            json!({ "ok": true, "open": items, "completed": completed }),
        )
    })();
    match result {
        Ok(v) => ToolOutcome::ok(v),
        Err(e) => tool_error(ToolErrorKind::Failed, e.to_string(), None, None, true),
    }
}

/// Your own scheduling state (AgentGet on yourself adds it).
pub(super) fn own_state(env: &ToolEnv<'_>) -> ToolOutcome {
    let result = (|| {
        let rx = env.host.store().read()?;
        let Some(live) = projection::load(&rx, env.agent_id, crate::now_ms())? else {
            return Ok(json!({ "ok": false }));
        };
        let a: &AgentRecord = &live.agent;
        let open_waits: Vec<_> = live
            .projection
            .intents
            .iter()
            .filter(|w| w.status == crate::model::waiting::WaitingIntentStatus::Active)
            .map(|w| {
                json!({
                    "waiting_intent_id": w.id, "description": w.description, "source": w.source,
                    "external_ref": w.external_ref, "work_item_id": w.work_item_id,
                })
            })
            .collect();
        Ok::<_, crate::store::StoreError>(json!({
            "open_waits": open_waits,
            "ok": true, "id": a.id, "status": a.status, "posture": live.projection.posture(),
            "current_work_item_id": a.current_work_item_id, "queue_depth": live.projection.replay_message_ids.len(),
            "active_tasks": live.projection.active_tasks, "closure": live.projection.closure(),
            "token_usage": { "input_tokens": a.total_input_tokens, "output_tokens": a.total_output_tokens, "model_rounds": a.total_model_rounds },
        }))
    })();
    match result {
        Ok(v) => ToolOutcome::ok(v),
        Err(e) => tool_error(ToolErrorKind::Failed, e.to_string(), None, None, true),
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;

    #[test]
    fn a_plan_is_read_hashed_and_bounded_and_never_through_a_link_or_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan.md");
        std::fs::write(&plan, "step one\nstep two\n").unwrap();
        let read = read_plan(&plan).unwrap().unwrap();
        assert_eq!(read.bytes, 18);
        assert!(read.complete && read.preview.starts_with("step one"));
        // sha256 of the bytes, as `sha256sum` prints it.
        assert!(
            read.hash.starts_with("sha256:") && read.hash.len() == 71,
            "{}",
            read.hash
        );
        assert!(read.updated_at.is_some());
        let long = dir.path().join("long.md");
        std::fs::write(&long, "x".repeat(10_000)).unwrap();
        let read = read_plan(&long).unwrap().unwrap();
        assert_eq!((read.bytes, read.complete), (10_000, false));
        assert_eq!(read.preview.chars().count(), PLAN_PREVIEW_CHARS);
        // What a command may have put in its place reads as no plan.
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        assert!(read_plan(&link).is_err());
        let fifo = dir.path().join("fifo.md");
        let c = std::ffi::CString::new(fifo.as_os_str().to_str().unwrap()).unwrap();
        // SAFETY: mkfifo of a NUL-terminated path in a temporary directory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_plan(&fifo).unwrap().is_none());
        assert!(read_plan(&dir.path().join("absent.md")).unwrap().is_none());
    }
}
