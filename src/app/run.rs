//! `holon run PROMPT`: one bounded run. The runtime starts in this process
//! on the store (refused, saying to attach, when a runtime already holds
//! it), the prompt is admitted with delivery
//! surface `run_once` — by default to a temporary private agent
//! (`run-<id>`, stopped afterwards so no later runtime resumes it) — and
//! the command waits, bounded by `--timeout`, until that prompt's turn is
//! terminal and the agent has settled, then shuts the runtime down. Only
//! that agent runs: other agents are recovered but get no actor, so their
//! queues wait for a real runtime.
//!
//! Output: the final text on stdout (the newest completion report of a
//! work item completed in the run, else the last assistant message), or
//! the failure summary on stderr with exit code 1. `--json` prints one
//! object: `final_text`, `raw_final_text`, `token_usage`,
//! `provider_attempt_timeline`, `failure_artifact`, `agent_id`,
//! `message_id`, `turn_terminal` (plus `outcome`, `turns`,
//! `completed_work_item_id`).
//!
//! Also here: the runtime's `HostConfig` for a process that owns the store
//! (`runtime_config`): a provider source that a config-file change swaps
//! in place, and the config watch that triggers it.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::cli::RunArgs;
use super::config::{Config, Env};
use super::providers::provider_source;
use super::Context;
use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::runtime::exec_env::ExecEnvPolicy;
use crate::runtime::handle::ActorScope;
use crate::runtime::handle::{CommandsFate, HostConfig, ProviderSource, RuntimeHost, RuntimeInfo};
use crate::runtime::handle::{ConfigReloader, ConfigWatch, Reloaded};
use crate::runtime::host::run_once::{RunOnceReport, RunOutcome, StoppedCommand};
use crate::runtime::provider::ModelRef;

pub(super) const RUN_ONCE_MODE: &str = "run_once";

/// How long shutdown may wait for a turn still in a provider call.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The sections of the config file an edit changed: those whose values as
/// written differ (a comment or a new layout changes none), and those
/// whose effective values differ (a setting the environment decides as
/// well).
pub fn changed_sections(old: &Config, new: &Config) -> Vec<String> {
    let mut changed: BTreeSet<&str> = old
        .written
        .keys()
        .chain(new.written.keys())
        .filter(|section| old.written.get(*section) != new.written.get(*section))
        .map(String::as_str)
        .collect();
    if old.default_agent != new.default_agent {
        changed.insert("runtime");
    }
    if old.default_model != new.default_model
        || old.fallback_models != new.fallback_models
        || old.context_window != new.context_window
    {
        changed.insert("model");
    }
    if old.providers != new.providers {
        changed.insert("providers");
    }
    if old.mcp_servers != new.mcp_servers {
        changed.insert("mcp_servers");
    }
    if old.hooks != new.hooks {
        changed.insert("hooks");
    }
    if old.reviewer != new.reviewer {
        // `[policy] reviewer`, `reviewer_policy`, ...
        changed.insert("policy");
    }
    if old.log_filter != new.log_filter {
        changed.insert("log");
    }
    if old.alt_screen != new.alt_screen
        || old.notify != new.notify
        || old.notify_method != new.notify_method
    {
        changed.insert("console");
    }
    changed.into_iter().map(str::to_owned).collect()
}

type ReloadState = Arc<RwLock<(Config, ProviderSource)>>;

/// A provider source that follows the config file: on a change to the
/// model or providers sections the chain is rebuilt, and the next turn
/// uses it. Other sections are reported but need a restart.
pub fn reloadable_provider_source(ctx: &Context) -> (ProviderSource, ConfigWatch) {
    reloadable_with(ctx, Env::capture)
}

fn reloadable_with(ctx: &Context, env: fn() -> Env) -> (ProviderSource, ConfigWatch) {
    let state: ReloadState = Arc::new(RwLock::new((
        ctx.config.clone(),
        provider_source(&ctx.config),
    )));
    let current = Arc::clone(&state);
    let source: ProviderSource = Arc::new(move |agent| {
        let inner = current.read().unwrap_or_else(|p| p.into_inner()).1.clone();
        inner(agent)
    });
    let file = ctx.paths.config_file();
    let path = file.clone();
    let reload: ConfigReloader = Arc::new(move || {
        let new = Config::load(&file, &env()).map_err(|e| e.to_string())?;
        let mut guard = state.write().unwrap_or_else(|p| p.into_inner());
        let changed = changed_sections(&guard.0, &new);
        if changed.iter().any(|c| c == "model" || c == "providers") {
            guard.1 = provider_source(&new);
        }
        // What is applied live is decided on the effective values.
        let old = &guard.0;
        let mcp_servers = (old.mcp_servers != new.mcp_servers).then(|| new.mcp_servers.clone());
        let hooks = (old.hooks != new.hooks).then(|| new.hooks.clone());
        let reviewer = (old.reviewer != new.reviewer).then(|| new.reviewer.clone());
        guard.0 = new;
        Ok(Reloaded {
            changed,
            mcp_servers,
            hooks,
            reviewer,
        })
    });
    (source, ConfigWatch { path, reload })
}

/// Holon's directories besides its data directory (the home, config,
/// run and log directories, the store): never writable from a sandbox.
pub fn holon_dirs(ctx: &Context) -> Vec<std::path::PathBuf> {
    [
        ctx.paths.home.clone(),
        Some(ctx.paths.config_dir.clone()),
        Some(ctx.paths.run_dir.clone()),
        Some(ctx.paths.log_dir.clone()),
        Some(ctx.paths.store_file()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The `HostConfig` of a process that owns the store.
pub fn runtime_config(ctx: &Context, mode: &str) -> HostConfig {
    let (source, watch) = reloadable_provider_source(ctx);
    // The watch is on the config directory: make sure it exists, so a
    // config file created later is noticed.
    if let Err(e) = std::fs::create_dir_all(&ctx.paths.config_dir) {
        tracing::warn!(dir = %ctx.paths.config_dir.display(), error = %e, "cannot create the config directory");
    }
    let mut config = HostConfig::new(ctx.paths.data_dir.clone(), source);
    config.config_watch = Some(watch);
    config.mcp_servers = ctx.config.mcp_servers.clone();
    config.mcp_tool_share = ctx.config.mcp_tool_share;
    config.hooks = ctx.config.hooks.clone();
    config.reviewer = ctx.config.reviewer.clone();
    config.approval_wait = match mode {
        // Nobody answers a one-shot run while it waits: it ends at once.
        RUN_ONCE_MODE => std::time::Duration::ZERO,
        _ => ctx.config.approval_wait,
    };
    config.exec_env = ExecEnvPolicy {
        passthrough: ctx.config.exec_env_passthrough.iter().cloned().collect(),
        sandboxed: ctx.config.policy_env.iter().cloned().collect(),
        credentials: ctx
            .config
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone())
            .collect(),
    };
    config.tool_output = ctx.config.tool_output;
    config.policy = ctx.config.policy.clone();
    config.sandbox_required = ctx.config.sandbox_required;
    config.unix_sockets = ctx.config.policy_unix_sockets.clone();
    config.holon_dirs = holon_dirs(ctx);
    config.default_agent = ctx.config.default_agent.clone();
    config.user_home = ctx.config.user_home.clone();
    config.agent_limits = ctx.config.agent_limits;
    config.pricing = ctx.config.pricing.clone();
    config.budget = ctx.config.budget;
    config.backups = crate::runtime::handle::BackupSchedule {
        every: ctx.config.store_backup_every,
        keep: ctx.config.store_backup_keep,
    };
    config.retain_days = ctx.config.store_retain_days;
    config.stale_reminder =
        crate::runtime::context::stale::StaleConfig::from(|k| std::env::var(k).ok());
    // Commands run under `holon __hold` (this very program, even once an
    // upgrade replaced its file: `/proc/self/exe`), so they outlive a
    // runtime that stops or dies; a daemon leaves them running when it
    // stops, a console's own runtime stops them, a one-shot run leaves
    // alone those it did not start.
    let this = std::path::Path::new("/proc/self/exe");
    config.holder = match this.exists() {
        true => Some(this.to_path_buf()),
        false => std::env::current_exe().ok(),
    };
    config.commands = match mode {
        "daemon" | "foreground" => CommandsFate::Outlive,
        RUN_ONCE_MODE => CommandsFate::OwnOnly,
        _ => CommandsFate::StopAtExit,
    };
    if mode == RUN_ONCE_MODE {
        // Only the agent the run talks to gets an actor (started later).
        config.actors = ActorScope::Only(Vec::new());
    }
    config.info = RuntimeInfo {
        mode: mode.to_owned(),
        home: ctx.paths.home.as_ref().map(|h| h.display().to_string()),
        socket_path: None,
        config_fingerprint: None,
    };
    config
}

/// Open the store and start a runtime that serves `socket_path` (already
/// bound by the caller). A start that fails removes the socket it bound,
/// so nothing is left that looks like a runtime.
pub async fn start_serving_host(
    ctx: &Context,
    mode: &str,
    socket_path: &std::path::Path,
    config_fingerprint: Option<String>,
) -> anyhow::Result<RuntimeHost> {
    let started = async {
        let store = ctx.open_store_to_serve().await?;
        let mut config = runtime_config(ctx, mode);
        config.info.socket_path = Some(socket_path.display().to_string());
        config.info.config_fingerprint = config_fingerprint;
        Ok::<_, anyhow::Error>(RuntimeHost::start(store, config).await?)
    }
    .await;
    if started.is_err() {
        let _ = std::fs::remove_file(socket_path);
    }
    started
}

/// The agent the run talks to, and whether it exists only for this run.
enum RunAgent {
    Temporary(String),
    Existing(String),
}

impl RunAgent {
    fn id(&self) -> &str {
        match self {
            RunAgent::Temporary(id) | RunAgent::Existing(id) => id,
        }
    }
}

async fn choose_agent(host: &RuntimeHost, args: &RunArgs) -> anyhow::Result<RunAgent> {
    let Some(id) = &args.agent else {
        let short: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        let id = format!("run-{short}");
        host.create_private_agent(&id).await?;
        return Ok(RunAgent::Temporary(id));
    };
    let existing = host
        .store()
        .read()?
        .agent::<crate::model::agent::AgentRecord>(id)?;
    if let Some(a) = &existing {
        if a.archived_at.is_some() {
            anyhow::bail!("agent `{id}` is archived; create another with `holon agent create`");
        }
        if a.visibility == crate::model::agent::AgentVisibility::Private {
            anyhow::bail!(
                "agent `{id}` is private (a child or a run's temporary agent); `holon run --agent` \
                 targets public agents"
            );
        }
    }
    let exists = existing.is_some();
    if !exists && !args.create_agent {
        anyhow::bail!(
            "no agent `{id}`; pass --create-agent to create it, or omit --agent for a temporary one"
        );
    }
    // Creates it when missing; either way starts its actor (the runtime
    // started with no actors).
    host.create_agent(id).await?;
    Ok(RunAgent::Existing(id.clone()))
}

pub async fn run(ctx: &Context, args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty");
    }
    if let Some(m) = &args.model {
        ModelRef::parse(m).map_err(anyhow::Error::msg)?;
    }
    warn_unsandboxed(ctx);
    let store = ctx.open_store().await?;
    let host = RuntimeHost::start(store, runtime_config(ctx, RUN_ONCE_MODE)).await?;
    let result = run_in(&host, &args).await;
    if tokio::time::timeout(SHUTDOWN_GRACE, host.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("shutdown did not finish in time; exiting anyway");
        return finish(result, &args);
    }
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    finish(result, &args)
}

/// Said on the terminal, not only in the log: a kernel that cannot
/// sandbox leaves the model's commands unconfined (or refused, with
/// `sandbox_required`), and whoever started the run must know before it
/// acts.
fn warn_unsandboxed(ctx: &Context) {
    use crate::model::sandbox::SandboxMode;
    let support = crate::runtime::sandbox::Support::probe();
    let (Some(why), false) = (
        &support.missing,
        ctx.config.policy.sandbox == Some(SandboxMode::Off),
    ) else {
        return;
    };
    match ctx.config.sandbox_required {
        true => eprintln!(
            "holon: warning: this kernel cannot sandbox commands ({why}); `sandbox_required` \
             is set, so the model's commands are refused"
        ),
        false => eprintln!(
            "holon: warning: this kernel cannot sandbox commands ({why}); the model's commands \
             run UNCONFINED, as your user (set `[policy] sandbox_required = true` to refuse \
             them instead)"
        ),
    }
}

/// Bind the run's agent to the directory it was started in (or `-C`):
/// always for a temporary agent or an explicit `-C`; for an existing agent
/// only when it is still in its agent home, so a run never silently moves
/// an agent that is working elsewhere.
async fn bind_workspace(
    host: &RuntimeHost,
    agent: &RunAgent,
    args: &RunArgs,
) -> anyhow::Result<()> {
    let dir = match &args.workspace {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => std::env::current_dir()?.join(p),
        None => std::env::current_dir()?,
    };
    let current = host.execution_snapshot(agent.id())?;
    let dir = dir.canonicalize().unwrap_or(dir);
    if args.workspace.is_none()
        && current.workspace_id == crate::model::workspace::AGENT_HOME_ID
        && std::path::Path::new(&current.execution_root).starts_with(&dir)
    {
        // Started in a directory that holds Holon's own data (HOLON_HOME,
        // or `~` above `~/.holon`): not a project; the agent home it is.
        return Ok(());
    }
    let explicit = args.workspace.is_some() || matches!(agent, RunAgent::Temporary(_));
    if !explicit && current.workspace_id != crate::model::workspace::AGENT_HOME_ID {
        if !dir.starts_with(&current.execution_root) {
            eprintln!(
                "note: {} keeps working in {} (pass -C {} to move it)",
                agent.id(),
                current.execution_root,
                dir.display()
            );
        }
        return Ok(());
    }
    let req = crate::model::workspace::UseWorkspace {
        path: Some(dir.display().to_string()),
        workspace_id: None,
        mode: crate::model::workspace::WorkspaceMode::Direct,
    };
    host.use_workspace(agent.id(), req).await?;
    Ok(())
}

async fn run_in(host: &RuntimeHost, args: &RunArgs) -> anyhow::Result<RunOnceReport> {
    let agent = choose_agent(host, args).await?;
    bind_workspace(host, &agent, args).await?;
    let mut previous_model = None;
    let report = async {
        if let Some(m) = &args.model {
            previous_model = Some(host.set_model_override(agent.id(), Some(m.clone())).await?);
        }
        let req = AdmissionRequest::operator_prompt(
            agent.id(),
            &args.prompt,
            Priority::Normal,
            DeliverySurface::RunOnce,
        );
        host.run_once(req, Duration::from_secs(args.timeout)).await
    }
    .await;
    // What the run's end stops (archiving its temporary agent, or the
    // shutdown) is said, not left to the log.
    let stopping: Vec<StoppedCommand> = host
        .commands_shutdown_stops()
        .into_iter()
        .map(|t| StoppedCommand {
            cmd: t.command_detail().cmd.unwrap_or_default(),
            task_id: t.id,
        })
        .collect();
    let report = report.map(|mut r| {
        r.commands_stopped = stopping;
        r
    });
    match &agent {
        RunAgent::Temporary(id) => {
            // Its managed worktree's session ends with it: removed when
            // clean, kept (and said) when it holds changes.
            let home = crate::model::workspace::UseWorkspace {
                workspace_id: Some(crate::model::workspace::AGENT_HOME_ID.into()),
                path: None,
                mode: crate::model::workspace::WorkspaceMode::Direct,
            };
            if host
                .execution_snapshot(id)
                .is_ok_and(|x| x.worktree.is_some())
            {
                match host.use_workspace(id, home).await {
                    Ok(out) => {
                        for w in out.retained {
                            eprintln!(
                                "kept worktree {} (branch {}): it has changes to review",
                                w.worktree_path, w.worktree_branch
                            );
                        }
                    }
                    Err(e) => {
                        tracing::warn!(agent_id = id, error = %e, "cannot end the run's worktree session")
                    }
                }
            }
            // Temporary: archived once this run is over (nothing runs for
            // it, no listing shows it; its records stay).
            if let Err(e) = host.archive_agent(id, "run_finished").await {
                tracing::warn!(agent_id = id, error = %e, "cannot archive the temporary agent");
            }
        }
        RunAgent::Existing(id) => {
            if let Some(previous) = previous_model {
                host.set_model_override(id, previous).await?;
            }
        }
    }
    Ok(report?)
}

fn finish(result: anyhow::Result<RunOnceReport>, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let report = result?;
    let ok = report.outcome == RunOutcome::Completed;
    if args.json {
        say!("{}", serde_json::to_string_pretty(&report)?);
    } else if ok {
        say!("{}", report.final_text);
    } else {
        let summary = report
            .failure_artifact
            .as_ref()
            .map(|f| f.summary.as_str())
            .unwrap_or("the run failed");
        eprintln!("holon run: {summary}");
    }
    if let Some(said) = stopped_line(&report.commands_stopped).filter(|_| !args.json) {
        eprintln!("{said}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What a run's end stopped, in a line: the commands still running when
/// it ended (a run leaves none running; a daemon does).
fn stopped_line(stopped: &[StoppedCommand]) -> Option<String> {
    let first = stopped.first()?;
    // One line whatever the command holds: escaped, its whitespace one
    // space, bounded.
    let cmd = crate::ui::present::one_line(&first.cmd, 80);
    let more = match stopped.len() {
        1 => String::new(),
        n => format!(
            " and {}",
            crate::ui::present::counted((n - 1) as u64, "other", "others")
        ),
    };
    Some(format!(
        "holon run: stopped `{cmd}`{more}, still running when the run ended (a run leaves no \
         command running; a daemon, `holon --detach`, keeps them)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::paths::Paths;
    use crate::model::agent::AgentRecord;

    fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
        r.unwrap()
    }

    #[test]
    fn a_run_names_what_its_end_stopped() {
        let stopped = |cmds: &[&str]| -> Vec<StoppedCommand> {
            cmds.iter()
                .map(|c| StoppedCommand {
                    task_id: "task_1".into(),
                    cmd: (*c).into(),
                })
                .collect()
        };
        assert_eq!(stopped_line(&[]), None);
        let one = stopped_line(&stopped(&["sleep 30"])).unwrap_or_default();
        assert!(
            one.starts_with("holon run: stopped `sleep 30`, still running"),
            "{one}"
        );
        let three = stopped_line(&stopped(&["a", "b", "c"])).unwrap_or_default();
        assert!(three.contains("`a` and 2 others,"), "{three}");
        let two = stopped_line(&stopped(&["a", "b"])).unwrap_or_default();
        assert!(two.contains("`a` and 1 other,"), "{two}");
        // A command's line breaks and escapes are shown, not sent to the
        // terminal; a long one is cut.
        let lines = stopped_line(&stopped(&["cd x\nholon run: forged"])).unwrap_or_default();
        assert!(!lines.contains('\n'), "{lines:?}");
        let long = stopped_line(&stopped(&[&"y".repeat(500)])).unwrap_or_default();
        assert!(long.contains(&format!("`{}…`", "y".repeat(79))), "{long}");
        let hostile = stopped_line(&stopped(&["printf '\x1b]0;pwned\x07'"])).unwrap_or_default();
        assert!(
            !hostile.contains('\x1b') && !hostile.contains('\x07'),
            "{hostile:?}"
        );
    }

    #[test]
    fn a_config_change_swaps_the_provider_and_names_the_sections() {
        let dir = ok(tempfile::tempdir());
        let paths = ok(Paths::resolve(Some(dir.path())));
        ok(paths.ensure());
        let config = ok(Config::load(&paths.config_file(), &Env::default()));
        let ctx = Context { paths, config };
        let (source, watch) = reloadable_with(&ctx, Env::default);
        ok(std::fs::create_dir_all(&ctx.paths.config_dir));
        let agent = AgentRecord::new("main", "2026-01-01T00:00:00.000Z".into());
        assert_eq!(source(&agent).model_ref(), "", "no model configured yet");

        ok(std::fs::write(
            &watch.path,
            "[model]\ndefault = \"ollama/llama3.2\"\n[log]\nfilter = \"debug\"\n",
        ));
        assert_eq!(ok((watch.reload)()).changed, vec!["log", "model"]);
        assert_eq!(source(&agent).model_ref(), "ollama/llama3.2");
        assert_eq!(
            ok((watch.reload)()).changed,
            Vec::<String>::new(),
            "unchanged"
        );
        // MCP servers: the new list travels with the change.
        ok(std::fs::write(
            &watch.path,
            "[model]\ndefault = \"ollama/llama3.2\"\n[log]\nfilter = \"debug\"\n[mcp_servers.fs]\ncommand = \"srv\"\n",
        ));
        let reloaded = ok((watch.reload)());
        assert_eq!(reloaded.changed, vec!["mcp_servers"]);
        let names: Vec<String> = reloaded
            .mcp_servers
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["fs"]);

        // Any setting an edit changes is named, whether or not this
        // process applies it live; a comment or a new layout is none.
        let before = ok(std::fs::read_to_string(&watch.path));
        ok(std::fs::write(
            &watch.path,
            format!("{before}[console]\nmouse = false\n[budget]\ndaily_tokens = 1000\n"),
        ));
        assert_eq!(ok((watch.reload)()).changed, vec!["budget", "console"]);
        ok(std::fs::write(
            &watch.path,
            "# reordered, with comments\n[budget]\ndaily_tokens = 1000 # a day\n\n[console]\nmouse = false\n[mcp_servers.fs]\ncommand = \"srv\"\n[log]\nfilter = \"debug\"\n[model]\ndefault = \"ollama/llama3.2\"\n",
        ));
        assert_eq!(ok((watch.reload)()).changed, Vec::<String>::new());

        // A broken file keeps the previous configuration.
        ok(std::fs::write(&watch.path, "[model]\ndefualt = 1\n"));
        let err = (watch.reload)().err().unwrap_or_default();
        assert!(err.contains("config.toml"), "{err}");
        assert_eq!(source(&agent).model_ref(), "ollama/llama3.2");
    }
}
