//! `holon mcp`: the MCP servers. `list` goes through the runtime when one
//! runs (each server's state and the tools it offers); otherwise it reads
//! the configuration and the `.mcp.json`, every server idle until a
//! runtime's first turn. `approve` lets a `.mcp.json` server start: through
//! the runtime, or written to the store here when none runs.

use std::path::PathBuf;
use std::process::ExitCode;

use super::commands::Out;
use super::Context;
use crate::model::mcp::{McpApproval, McpServerInfo, McpSwitch};
use crate::protocol::{Request, RuntimeClient};

/// The workspace `dir` (default: here) belongs to, as the runtime names
/// it: a git repository's main checkout, else the directory itself. Its
/// `.mcp.json` is the one the runtime reads.
pub(super) fn project_dir(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let start = match dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let found = crate::runtime::workspace::session::discover(&start)
        .map_err(|e| anyhow::anyhow!("{}: {e}", start.display()))?;
    Ok(found.anchor)
}

pub async fn mcp_list(ctx: &Context, dir: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let project = project_dir(dir)?;
    let (servers, live): (Vec<McpServerInfo>, bool) = match super::daemon::connect(ctx).await {
        Some(client) => {
            let workspace = Some(project.display().to_string());
            (
                client.call(Request::McpList { workspace }).await?.take()?,
                true,
            )
        }
        None => (probed(ctx, &project).await?, false),
    };
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&servers)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if servers.is_empty() {
        out.line(
            "no MCP servers are configured ([mcp_servers.NAME] in config.toml, or a .mcp.json)",
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if !live {
        out.line(
            "no runtime is running: each server was started here as a runtime would start it, \
             asked for its tools, and stopped",
        )?;
    }
    for s in &servers {
        for line in crate::ui::present::mcp::lines(s) {
            out.line(&line)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// With no runtime: each server the runtime would start for `project`
/// started here the same way (its sandbox, its environment, its startup
/// timeout, all at once), asked for its tools, and stopped; a server that
/// cannot start shows `failed` with why, one not approved or switched off
/// is not started. Like Claude Code's `mcp list`.
async fn probed(ctx: &Context, project: &std::path::Path) -> anyhow::Result<Vec<McpServerInfo>> {
    let hub = offline_hub(ctx).await?;
    hub.set_sandbox(&ctx.config.policy, ctx.config.sandbox_required);
    let _ = hub.specs(Some(project), "mcp-list", None).await;
    let views = hub.views(Some(project));
    hub.stop().await;
    Ok(views)
}

/// The hub as the runtime would start it: the config's servers, and the
/// approvals and switches recorded in the store.
async fn offline_hub(ctx: &Context) -> anyhow::Result<crate::runtime::mcp::Hub> {
    use crate::runtime::mcp::ops::{approvals_in, disabled_in};
    let hub = crate::runtime::mcp::Hub::new(
        ctx.config.mcp_servers.clone(),
        &ctx.paths.data_dir,
        super::run::holon_dirs(ctx),
    );
    if ctx.paths.store_file().exists() {
        let store = ctx.open_store().await?;
        let read = approvals_in(&store).and_then(|a| Ok((a, disabled_in(&store)?)));
        store.close().await?;
        let (approvals, disabled) = read?;
        hub.set_approvals(&approvals);
        hub.set_disabled(&disabled);
    }
    Ok(hub)
}

/// What the operator's command records when no runtime runs.
enum Recorded {
    Approval(McpApproval),
    Switch(McpSwitch),
}

/// Record on the store opened here (no runtime runs), closed either way.
async fn record_offline(ctx: &Context, what: Recorded) -> anyhow::Result<()> {
    use crate::runtime::mcp::ops::{record_approval, record_switch};
    let store = ctx.open_store().await?;
    let done = match what {
        Recorded::Approval(a) => record_approval(&store, a).await.map(drop),
        Recorded::Switch(s) => record_switch(&store, s).await.map(drop),
    };
    store.close().await?;
    Ok(done?)
}

/// `holon mcp disable|enable NAME`: through the runtime, or written to the
/// store here when none runs.
pub async fn mcp_switch(
    ctx: &Context,
    name: &str,
    dir: Option<PathBuf>,
    disabled: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let global = dir.is_none() && ctx.config.mcp_servers.iter().any(|s| s.name == name);
    let workspace = match global {
        true => None,
        false => Some(project_dir(dir)?),
    };
    let switch: McpSwitch = match super::daemon::connect(ctx).await {
        Some(client) => client
            .call(Request::McpDisable {
                name: name.to_owned(),
                workspace: workspace.as_ref().map(|w| w.display().to_string()),
                disabled,
            })
            .await?
            .take()?,
        None => {
            let hub = offline_hub(ctx).await?;
            let (switch, _) = hub
                .switch_for(workspace.as_deref(), name, disabled)
                .map_err(|e| anyhow::anyhow!(e))?;
            record_offline(ctx, Recorded::Switch(switch.clone())).await?;
            switch
        }
    };
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&switch)?)?;
    } else {
        let verb = if switch.disabled {
            "disabled"
        } else {
            "enabled"
        };
        let whose = switch
            .workspace
            .as_deref()
            .map(|w| format!(" of {w}"))
            .unwrap_or_default();
        out.line(&format!("{verb} `{}`{whose}", switch.name))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The line the operator confirms: `--expect` as given, or, on a
/// terminal, the one shown after they answer yes. Elsewhere nothing is
/// approved unasked.
fn confirmed(name: &str, line: &str, expect: Option<String>) -> anyhow::Result<String> {
    if let Some(e) = expect {
        return Ok(e);
    }
    let shown = format!("`{name}` would run: {line}");
    yes_on_terminal(&shown, "approve it?", "that line")?;
    Ok(line.to_owned())
}

/// Show `shown` and ask `question` on the terminal; an error unless the
/// answer is yes, or when there is no terminal to ask on (then `--expect`
/// with `what` approves instead).
pub(super) fn yes_on_terminal(shown: &str, question: &str, what: &str) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    let stdin = std::io::stdin();
    anyhow::ensure!(
        stdin.is_terminal(),
        "{shown}\napproving needs your confirmation: run this on a terminal, or pass --expect \
         with {what}"
    );
    eprint!("{shown}\n{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    anyhow::ensure!(matches!(answer.trim(), "y" | "Y" | "yes"), "not approved");
    Ok(())
}

pub async fn mcp_approve(
    ctx: &Context,
    name: &str,
    dir: Option<PathBuf>,
    expect: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let project = project_dir(dir)?;
    anyhow::ensure!(
        project.join(".mcp.json").is_file(),
        "this workspace has no .mcp.json at its root"
    );
    let approval: McpApproval = match super::daemon::connect(ctx).await {
        Some(client) => {
            // Approve what the operator confirmed, and only that: the
            // runtime refuses if the file says something else by then.
            let workspace = project.display().to_string();
            let servers: Vec<McpServerInfo> = client
                .call(Request::McpList {
                    workspace: Some(workspace.clone()),
                })
                .await?
                .take()?;
            let shown = servers
                .iter()
                .find(|s| s.name == name && s.workspace.as_deref() == Some(workspace.as_str()))
                .and_then(|s| s.command_line.clone())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{workspace}/.mcp.json has no usable server `{name}` (holon mcp list)"
                    )
                })?;
            let line = confirmed(name, &shown, expect)?;
            client
                .call(Request::McpApprove {
                    name: name.to_owned(),
                    workspace,
                    command_line: Some(line),
                })
                .await?
                .take()?
        }
        None => {
            let hub = offline_hub(ctx).await?;
            let current = hub
                .approval_for(&project, name)
                .map_err(|e| anyhow::anyhow!(e))?;
            let line = confirmed(name, &current.command_line, expect)?;
            // Read again after the answer: what the file says now must be
            // what was confirmed.
            let approval = hub
                .approval_for(&project, name)
                .and_then(|a| crate::runtime::mcp::ops::same_line(a, Some(&line)))
                .map_err(|e| anyhow::anyhow!(e))?;
            record_offline(ctx, Recorded::Approval(approval.clone())).await?;
            approval
        }
    };
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&approval)?)?;
    } else {
        out.line(&format!(
            "approved `{}` of {} to run: {}",
            approval.name, approval.workspace, approval.command_line
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
