//! `holon hooks`: the operator's hooks (`[[hooks.EVENT]]` in config.toml).
//! `list` shows what runs on each event and how (sandboxed or not, its
//! time limit, what a failure means); `test EVENT` runs the hooks of that
//! event once on a sample input (or one given), exactly as the runtime
//! would, and shows what each decided. A test records nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use super::commands::Out;
use super::Context;
use crate::runtime::hooks::decide::{clean, decide, Exit};
use crate::runtime::hooks::input::{sample, HookInput};
use crate::runtime::hooks::run::Runner;
use crate::runtime::settings::hooks::{HookEvent, HookSpec, OnError};

/// How a hook runs, in words.
fn how(h: &HookSpec, support_missing: Option<&str>) -> String {
    let sandbox = match (h.sandboxed, support_missing) {
        (false, _) => "UNCONFINED (sandbox = \"off\")".to_owned(),
        (true, Some(why)) => format!(
            "sandboxed, but this kernel cannot ({why}): runs unconfined unless sandbox_required"
        ),
        (true, None) => "sandboxed".to_owned(),
    };
    let mut parts = vec![sandbox, format!("{} s limit", h.timeout.as_secs())];
    if let Some(net) = h.network {
        parts.push(format!("network {}", if net { "on" } else { "off" }));
    }
    if h.event.decides() {
        parts.push(match h.on_error {
            OnError::Allow => "a failure lets the call go on".into(),
            OnError::Deny => "a failure refuses the call".into(),
        });
    }
    if !h.tools.is_empty() {
        parts.push(format!("tools {}", h.tools.join(", ")));
    }
    parts.join(" · ")
}

/// Holon's directories a sandboxed hook cannot see: a command naming a
/// path in one of them will not find it there.
fn hidden_paths_named(ctx: &Context, h: &HookSpec) -> Vec<PathBuf> {
    let dirs = [
        ctx.paths.config_dir.clone(),
        ctx.paths.run_dir.clone(),
        ctx.paths.log_dir.clone(),
    ];
    dirs.into_iter()
        .filter(|d| h.sandboxed && h.command.contains(&d.display().to_string()))
        .collect()
}

pub fn hooks_list(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let hooks = &ctx.config.hooks;
    let missing = crate::runtime::sandbox::Support::probe().missing.clone();
    let mut out = Out::new();
    if json {
        let list: Vec<serde_json::Value> = hooks
            .hooks
            .iter()
            .map(|h| {
                json!({
                    "name": h.name,
                    "event": h.event,
                    "command": h.command,
                    "tools": h.tools,
                    "timeout_secs": h.timeout.as_secs(),
                    "sandboxed": h.sandboxed,
                    "network": h.network,
                    "env": h.env,
                    "on_error": h.event.decides().then_some(h.on_error),
                    "state_dir": h.state_dir(&ctx.paths.data_dir.join("hooks")),
                })
            })
            .collect();
        out.line(&serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if hooks.is_empty() {
        out.line("no hooks are configured ([[hooks.EVENT]] in config.toml; see docs/hooks.md)")?;
        return Ok(ExitCode::SUCCESS);
    }
    for event in HookEvent::ALL {
        let of: Vec<&HookSpec> = hooks.hooks.iter().filter(|h| h.event == event).collect();
        if of.is_empty() {
            continue;
        }
        out.line(&format!("{event}:"))?;
        for h in of {
            out.text(&format!("  {}: {}", h.name, h.command))?;
            out.line(&format!("    {}", how(h, missing.as_deref())))?;
            for d in hidden_paths_named(ctx, h) {
                out.text(&format!(
                    "    warning: it names {}, which Holon hides from a sandboxed hook; keep hook scripts elsewhere",
                    d.display()
                ))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn hooks_test(
    ctx: &Context,
    event: &str,
    name: Option<String>,
    input: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let Some(event) = HookEvent::parse(event) else {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
        anyhow::bail!("`{event}` is not a hook event: one of {}", names.join(", "));
    };
    let input: HookInput = match input {
        None => sample(event),
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let value: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", path.display()))?;
            given(event, value)
        }
    };
    let tool = input.tool().map(str::to_owned);
    let hooks: Vec<&HookSpec> = ctx
        .config
        .hooks
        .matching(event, tool.as_deref())
        .into_iter()
        .filter(|h| name.as_ref().is_none_or(|n| *n == h.name))
        .collect();
    if hooks.is_empty() {
        anyhow::bail!(
            "no hook{} runs on {event}{} (holon hooks list shows them)",
            name.as_ref()
                .map(|n| format!(" named `{n}`"))
                .unwrap_or_default(),
            tool.map(|t| format!(" for {t}")).unwrap_or_default()
        );
    }
    let mut holon_dirs = super::run::holon_dirs(ctx);
    holon_dirs.push(ctx.paths.data_dir.clone());
    holon_dirs.push(ctx.paths.data_dir.join("backups"));
    crate::runtime::sandbox::set_holon_paths(&holon_dirs);
    let runner = Runner {
        root: ctx.paths.data_dir.join("hooks"),
        holon_dirs,
        sandbox_required: ctx.config.sandbox_required,
    };
    let network = ctx.config.policy.network == Some(crate::model::sandbox::NetworkAccess::On);
    let mut out = Out::new();
    let mut failed = false;
    for hook in hooks {
        let ran = runner.run(hook, &input, network).await;
        let decision = decide(event, &hook.name, hook.on_error, &ran.finished);
        let verdict = decision.verdict.outcome();
        failed |= verdict == "failed";
        let exit = match &ran.finished.exit {
            Exit::Code(c) => format!("exit {c}"),
            Exit::Signal(s) => format!("signal {s}"),
            Exit::TimedOut(s) => format!("killed at its {s} s limit"),
            Exit::NotStarted(_) => "not started".into(),
        };
        let detail = match &decision.verdict {
            crate::runtime::hooks::Verdict::Deny(r) => Some(r.clone()),
            crate::runtime::hooks::Verdict::Failed(e) => Some(e.clone()),
            _ => None,
        };
        if json {
            out.line(&serde_json::to_string(&json!({
                "hook": hook.name,
                "event": event,
                "outcome": verdict,
                "refused": decision.refuse.is_some(),
                "exit": exit,
                "detail": detail,
                "duration_ms": ran.duration_ms,
                "sandboxed": ran.sandboxed,
                "stdout": clean(&ran.finished.stdout),
                "stderr": clean(&ran.finished.stderr),
            }))?)?;
            continue;
        }
        let refused = match decision.refuse.is_some() {
            true => ", the call would be refused",
            false => "",
        };
        out.text(&format!(
            "{}: {verdict}{refused} ({exit}, {} ms, {})",
            hook.name,
            ran.duration_ms,
            if ran.sandboxed {
                "sandboxed"
            } else {
                "unconfined"
            }
        ))?;
        // A refusal's or a failure's words already hold its stderr.
        let stderr = match &detail {
            Some(d) => {
                out.text(&format!("  {d}"))?;
                Vec::new()
            }
            None => ran.finished.stderr.clone(),
        };
        for (label, bytes) in [("stdout", &ran.finished.stdout), ("stderr", &stderr)] {
            let text = clean(bytes);
            if !text.is_empty() {
                out.text(&format!("  {label}: {text}"))?;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// An input the operator gave for `event`: the sample, with the
/// `agent_id`, `workspace`, `tool` and `args` the file gives over it.
fn given(event: HookEvent, value: serde_json::Value) -> HookInput {
    use crate::runtime::hooks::input::Detail;
    let mut input = sample(event);
    let text = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    if let Some(agent) = text("agent_id") {
        input.agent_id = agent;
    }
    if value.get("workspace").is_some() {
        input.workspace = text("workspace");
    }
    if let Detail::Call { tool, args, .. } | Detail::Result { tool, args, .. } = &mut input.detail {
        if let Some(t) = text("tool") {
            *tool = t;
        }
        if let Some(a) = value.get("args") {
            *args = a.clone();
        }
    }
    input
}
