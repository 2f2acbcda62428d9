//! `holon workspace list | attach | use | detach`: the same socket methods
//! the console uses, sent to the running runtime when there is one; when
//! there is not, `list` is read from the store and the rest go to a
//! runtime started in this process (no agent actors).
//! Paths are made absolute here, against the directory the command runs
//! in, so the runtime's own cwd never matters.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use super::cli::{WorkspaceCommand, WorkspaceOpts};
use super::Context;
use crate::model::workspace::ExecutionSnapshot;
use crate::model::workspace::UseOutcome;
use crate::model::workspace::UseWorkspace;
use crate::model::workspace::WorkspaceList;
use crate::model::workspace::WorkspaceMode;
use crate::model::workspace::AGENT_HOME_ID;
use crate::protocol::{Request, RuntimeClient};
use crate::runtime::handle::RuntimeHost;

/// Run requests in order against the running runtime, else in process.
/// What the offline client answers as a runtime would (reads of the store
/// alone, a trigger's view) is answered from the store, starting nothing:
/// a runtime started here would record its start in every agent's ledger.
pub(super) async fn call_any(ctx: &Context, requests: Vec<Request>) -> anyhow::Result<Vec<Value>> {
    if let Some(client) = super::daemon::connect(ctx).await {
        return call_all(&client, requests).await;
    }
    let store = ctx.open_store_for_reading().await?;
    let offline = requests
        .iter()
        .all(super::offline::OfflineClient::answers_as_runtime);
    if store.read_only().is_some() || offline {
        // Nothing can start on it: what can be read is answered from it,
        // the rest says the store is read-only.
        let client = super::offline::OfflineClient::with_store(ctx, store)?;
        return call_all(&client, requests).await;
    }
    let host = RuntimeHost::start(
        store,
        super::run::runtime_config(ctx, super::run::RUN_ONCE_MODE),
    )
    .await?;
    let result = call_all(&host, requests).await;
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    result
}

/// One request, through `call_any`.
pub(super) async fn call_one(ctx: &Context, request: Request) -> anyhow::Result<Value> {
    Ok(call_any(ctx, vec![request])
        .await?
        .pop()
        .unwrap_or_default())
}

async fn call_all(
    client: &dyn RuntimeClient,
    requests: Vec<Request>,
) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::with_capacity(requests.len());
    for r in requests {
        out.push(crate::protocol::call_json(client, r).await?);
    }
    Ok(out)
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    Ok(if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    })
}

pub async fn run(ctx: &Context, cmd: WorkspaceCommand) -> anyhow::Result<ExitCode> {
    let agent_of = |o: &WorkspaceOpts| {
        o.agent
            .clone()
            .unwrap_or_else(|| ctx.config.default_agent.clone())
    };
    let (opts, request) = match &cmd {
        WorkspaceCommand::List(o) => (
            o,
            Request::WorkspaceList {
                agent_id: agent_of(o),
            },
        ),
        WorkspaceCommand::Attach { path, opts } => (
            opts,
            Request::WorkspaceAttach {
                agent_id: agent_of(opts),
                path: absolute(path)?.display().to_string(),
            },
        ),
        WorkspaceCommand::Use {
            target,
            isolated,
            opts,
        } => (
            opts,
            Request::WorkspaceUse {
                agent_id: agent_of(opts),
                target: UseWorkspace::from_target(
                    target,
                    match isolated {
                        true => WorkspaceMode::Isolated,
                        false => WorkspaceMode::Direct,
                    },
                    &std::env::current_dir()?,
                ),
            },
        ),
        WorkspaceCommand::Detach { workspace_id, opts } => (
            opts,
            Request::WorkspaceDetach {
                agent_id: agent_of(opts),
                workspace_id: workspace_id.clone(),
            },
        ),
        WorkspaceCommand::Policy {
            workspace_id,
            change,
            opts,
        } => (
            opts,
            Request::WorkspacePolicy {
                agent_id: agent_of(opts),
                workspace_id: workspace_id.clone(),
                change: super::approval_cmd::policy_change(change)?,
            },
        ),
    };
    let agent_id = agent_of(opts);
    // Explicit targeting never creates an agent (`holon agent create`).
    let answer = call_one(ctx, request).await?;
    if opts.json {
        say!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    for line in human(&cmd, &agent_id, answer)? {
        // Paths a model chose: shown, never acted on by the terminal.
        say!("{}", crate::model::text::escape_hidden(&line));
    }
    Ok(ExitCode::SUCCESS)
}

fn human(cmd: &WorkspaceCommand, agent: &str, answer: Value) -> anyhow::Result<Vec<String>> {
    Ok(match cmd {
        WorkspaceCommand::List(_) => {
            let list: WorkspaceList = serde_json::from_value(answer)?;
            let mut lines = list_lines(&list);
            // A runtime finds a vanished root only when it starts, then
            // moves the agent home and records why: until then, say so.
            // The agent home is made when the runtime first starts. The
            // root is looked for where the runtime runs, not here.
            let root = &list.execution.execution_root;
            if list.active_workspace_id != AGENT_HOME_ID && !list.execution_root_present {
                lines.push(format!(
                    "{root} is gone: the runtime moves {agent} to its agent home when it next starts"
                ));
            }
            lines
        }
        WorkspaceCommand::Attach { .. } => vec![format!(
            "attached {} to {agent} as {} (not active; `holon workspace use {}` makes it so)",
            answer["anchor"].as_str().unwrap_or("?"),
            answer["workspace_id"].as_str().unwrap_or("?"),
            answer["workspace_id"].as_str().unwrap_or("?"),
        )],
        WorkspaceCommand::Use { .. } => {
            let out: UseOutcome = serde_json::from_value(answer)?;
            let mut lines = vec![format!(
                "{agent} now works in {}",
                where_line(&out.execution)
            )];
            lines.extend(out.note);
            for w in out.retained {
                lines.push(format!(
                    "kept worktree {} (branch {}): it has changes to review",
                    w.worktree_path, w.worktree_branch
                ));
            }
            lines
        }
        WorkspaceCommand::Detach { .. } => vec![format!(
            "detached {} from {agent}; nothing on disk was touched",
            answer["workspace_id"].as_str().unwrap_or("?")
        )],
        WorkspaceCommand::Policy { .. } => {
            let c: crate::protocol::payloads::WorkspacePolicyChanged =
                serde_json::from_value(answer)?;
            let whose = match c.source {
                crate::model::workspace::PolicySource::Workspace => "its own policy",
                crate::model::workspace::PolicySource::Runtime => {
                    "the runtime's default: holon policy"
                }
            };
            let mut lines = super::approval_cmd::policy_lines(&c.workspace_id, whose, &c.policy);
            let a = &c.always;
            let allowed: Vec<String> = (a.allow_commands.iter())
                .chain(&a.allow_paths)
                .chain(&a.allow_tools)
                .cloned()
                .collect();
            if !allowed.is_empty() {
                // Beside the allow-lists, before the sandbox line.
                let at = lines.len().saturating_sub(1);
                lines.insert(
                    at,
                    format!(
                        "of which your \"always\" answers allowed: {} (kept whatever policy is in \
                     force; --reset forgets them)",
                        super::approval_cmd::shown(&allowed)
                    ),
                );
            }
            lines
        }
    })
}

fn where_line(s: &ExecutionSnapshot) -> String {
    match &s.worktree {
        _ if s.workspace_id == AGENT_HOME_ID => format!("its agent home {}", s.execution_root),
        Some(w) => format!(
            "{} (isolated worktree {} on branch {})",
            s.workspace_id, w.worktree_path, w.worktree_branch
        ),
        None => format!("{} ({}, cwd {})", s.workspace_id, s.execution_root, s.cwd),
    }
}

pub fn list_lines(l: &WorkspaceList) -> Vec<String> {
    let mut lines = vec![format!("{}: {}", l.agent_id, where_line(&l.execution))];
    let home_mark = if l.active_workspace_id == AGENT_HOME_ID {
        "*"
    } else {
        " "
    };
    lines.push(format!("{home_mark} {AGENT_HOME_ID:<28} (built in)"));
    for e in &l.attached {
        let mut tail = String::new();
        if !e.present {
            tail.push_str("  [missing]");
        }
        if !e.direct_users.is_empty() {
            tail.push_str(&format!(
                "  [also used directly by {}]",
                e.direct_users.join(", ")
            ));
        }
        let mark = if e.active { "*" } else { " " };
        lines.push(format!(
            "{mark} {:<28} {}{}{tail}",
            e.binding.workspace_id,
            e.binding.anchor,
            if e.binding.git { "" } else { "  (not git)" }
        ));
    }
    for w in &l.retained_worktrees {
        lines.push(format!(
            "  kept worktree {} (branch {}, of {})",
            w.worktree_path, w.worktree_branch, w.workspace_id
        ));
    }
    lines
}
