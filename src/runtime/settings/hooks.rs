//! `[[hooks.EVENT]]` and `[hooks]`: the hooks an operator configures, as
//! written (`HooksSection`) and as checked (`Hooks`). Checking is pure: an
//! empty command, an unknown event, a bad name, a tool matcher on an
//! event that has no tool, or an out-of-range timeout is refused with the
//! key at fault.

use std::time::Duration;

use serde::Deserialize;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Before a tool call runs (and before the approval gate): may deny it.
    PreTool,
    /// After a tool call's result is recorded.
    PostTool,
    /// A turn ended (completed, aborted, over budget).
    TurnEnd,
    /// A call now waits for the operator's approval.
    ApprovalRequested,
    /// The agent reported to its operator.
    Brief,
    /// The agent went to sleep or idle with nothing left to do.
    AgentIdle,
    /// An operator prompt joined the agent's queue.
    PromptSubmitted,
}

impl HookEvent {
    pub const ALL: [HookEvent; 7] = [
        HookEvent::PreTool,
        HookEvent::PostTool,
        HookEvent::TurnEnd,
        HookEvent::ApprovalRequested,
        HookEvent::Brief,
        HookEvent::AgentIdle,
        HookEvent::PromptSubmitted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreTool => "pre_tool",
            HookEvent::PostTool => "post_tool",
            HookEvent::TurnEnd => "turn_end",
            HookEvent::ApprovalRequested => "approval_requested",
            HookEvent::Brief => "brief",
            HookEvent::AgentIdle => "agent_idle",
            HookEvent::PromptSubmitted => "prompt_submitted",
        }
    }

    pub fn parse(s: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Whether a run of a hook on this event decides anything (only
    /// `pre_tool`: the others are told after the fact).
    pub fn decides(self) -> bool {
        self == HookEvent::PreTool
    }

    /// Whether the event is about one tool call (so `tools` may filter).
    pub fn has_tool(self) -> bool {
        matches!(self, HookEvent::PreTool | HookEvent::PostTool)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a `pre_tool` hook that fails (cannot start, exits other than 0
/// or 2, times out, answers a decision it does not know) means for the
/// call. A guard that stops working does not stop guarding: the default
/// refuses the call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The call goes on (the failure is recorded and reported).
    Allow,
    /// The call is refused, the failure given as the reason.
    #[default]
    Deny,
}

/// `[hooks]` as written: a list of tables per event, and what a failing
/// deciding hook means.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    #[serde(default)]
    pre_tool: Vec<HookTable>,
    #[serde(default)]
    post_tool: Vec<HookTable>,
    #[serde(default)]
    turn_end: Vec<HookTable>,
    #[serde(default)]
    approval_requested: Vec<HookTable>,
    #[serde(default)]
    brief: Vec<HookTable>,
    #[serde(default)]
    agent_idle: Vec<HookTable>,
    #[serde(default)]
    prompt_submitted: Vec<HookTable>,
    on_error: Option<String>,
}

/// One `[[hooks.EVENT]]` table as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookTable {
    name: Option<String>,
    command: Option<String>,
    tools: Option<Vec<String>>,
    timeout_secs: Option<u64>,
    sandbox: Option<String>,
    network: Option<bool>,
    env: Option<Vec<String>>,
    on_error: Option<String>,
}

/// The longest a hook may be given (ten minutes); the default is 10 s.
pub const MAX_TIMEOUT_SECS: u64 = 600;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// One checked hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSpec {
    /// Unique among all hooks: `name`, else `EVENT-N` (from 1).
    pub name: String,
    pub event: HookEvent,
    /// Run by `/bin/sh -c`.
    pub command: String,
    /// The tools it runs for (exact names, or a prefix ending in `*`);
    /// empty: every tool. Only for events about a tool call.
    pub tools: Vec<String>,
    /// Killed (with everything it started) after this.
    pub timeout: Duration,
    /// Confined by the kernel like a model command, writing only in its
    /// own state directory (`sandbox = "off"` lifts it: the operator's
    /// choice, shown by `holon hooks list`).
    pub sandboxed: bool,
    /// Network access in its sandbox; `None`: as the default policy says.
    pub network: Option<bool>,
    /// Variables of Holon's environment it may see beyond the base set.
    pub env: Vec<String>,
    /// For a deciding hook: what its failure means.
    pub on_error: OnError,
    /// Proposed by a repository (`.holon/hooks.toml`): it never runs
    /// unconfined, even where the kernel cannot sandbox.
    pub from_repository: bool,
}

impl HookSpec {
    /// Whether it runs for a call of `tool` (every call when it names no
    /// tools).
    pub fn matches_tool(&self, tool: &str) -> bool {
        self.tools.is_empty()
            || self.tools.iter().any(|t| match t.strip_suffix('*') {
                Some(prefix) => tool.starts_with(prefix),
                None => t == tool,
            })
    }

    /// The directory it may write beneath, under `root` (`<data>/hooks`).
    pub fn state_dir(&self, root: &std::path::Path) -> std::path::PathBuf {
        root.join(&self.name)
    }
}

/// Every checked hook, in the order written, event by event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub hooks: Vec<HookSpec>,
}

impl Hooks {
    /// The hooks of `event` that run for `tool` (for an event with no
    /// tool, all of them), in the order written.
    pub fn matching(&self, event: HookEvent, tool: Option<&str>) -> Vec<&HookSpec> {
        self.hooks
            .iter()
            .filter(|h| h.event == event)
            .filter(|h| tool.is_none_or(|t| h.matches_tool(t)))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook runs on `event`.
    pub fn any(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }
}

/// Check `[hooks]`; an error is `(key below hooks., message)`.
pub fn check(section: HooksSection) -> Result<Hooks, (String, String)> {
    let default_on_error = match section.on_error.as_deref() {
        None => OnError::default(),
        Some(v) => on_error(v).map_err(|m| ("on_error".to_owned(), m))?,
    };
    let tables = [
        (HookEvent::PreTool, section.pre_tool),
        (HookEvent::PostTool, section.post_tool),
        (HookEvent::TurnEnd, section.turn_end),
        (HookEvent::ApprovalRequested, section.approval_requested),
        (HookEvent::Brief, section.brief),
        (HookEvent::AgentIdle, section.agent_idle),
        (HookEvent::PromptSubmitted, section.prompt_submitted),
    ];
    let mut hooks: Vec<HookSpec> = Vec::new();
    for (event, list) in tables {
        for (i, table) in list.into_iter().enumerate() {
            let at = |key: &str| match key {
                "" => format!("{event}[{i}]"),
                k => format!("{event}[{i}].{k}"),
            };
            let spec =
                check_one(event, i, table, default_on_error).map_err(|(k, m)| (at(&k), m))?;
            if hooks.iter().any(|h| h.name == spec.name) {
                return Err((
                    at("name"),
                    format!("`{}` names another hook too: names are unique", spec.name),
                ));
            }
            hooks.push(spec);
        }
    }
    Ok(Hooks { hooks })
}

fn on_error(v: &str) -> Result<OnError, String> {
    match v {
        "allow" => Ok(OnError::Allow),
        "deny" => Ok(OnError::Deny),
        other => Err(format!("`{other}` is not `allow` or `deny`")),
    }
}

/// What a repository's hooks are named under (`repo-<tag>.NAME`); no
/// hook of config.toml may take a name there.
pub const REPOSITORY_PREFIX: &str = "repo-";

/// A hook's name: what its state directory and its events are called.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn check_one(
    event: HookEvent,
    index: usize,
    t: HookTable,
    default_on_error: OnError,
) -> Result<HookSpec, (String, String)> {
    let err = |key: &str, m: String| (key.to_owned(), m);
    let name = t
        .name
        .unwrap_or_else(|| format!("{}-{}", event.as_str().replace('_', "-"), index + 1));
    if !valid_name(&name) {
        return Err(err(
            "name",
            format!("`{name}` is not a hook name (letters, digits, `-`, `_`, `.`; at most 64)"),
        ));
    }
    if name.starts_with(REPOSITORY_PREFIX) {
        return Err(err(
            "name",
            format!("`{name}`: names starting `{REPOSITORY_PREFIX}` are a repository's hooks'"),
        ));
    }
    let command = t.command.unwrap_or_default();
    if command.trim().is_empty() {
        return Err(err(
            "command",
            "give the command to run (by /bin/sh -c)".into(),
        ));
    }
    if command.contains('\0') {
        return Err(err("command", "a command cannot hold a NUL byte".into()));
    }
    let tools = t.tools.unwrap_or_default();
    if !tools.is_empty() && !event.has_tool() {
        return Err(err(
            "tools",
            format!(
                "`{event}` is not about a tool call: only pre_tool and post_tool hooks name tools"
            ),
        ));
    }
    if let Some(bad) = tools
        .iter()
        .find(|t| t.is_empty() || t.trim() != t.as_str())
    {
        return Err(err("tools", format!("`{bad}` is not a tool name")));
    }
    let timeout = match t.timeout_secs {
        None => DEFAULT_TIMEOUT,
        Some(s) if (1..=MAX_TIMEOUT_SECS).contains(&s) => Duration::from_secs(s),
        Some(s) => {
            return Err(err(
                "timeout_secs",
                format!("{s} is out of range (1 to {MAX_TIMEOUT_SECS})"),
            ))
        }
    };
    let sandboxed = match t.sandbox.as_deref() {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => return Err(err("sandbox", format!("`{other}` is not `on` or `off`"))),
    };
    let env = t.env.unwrap_or_default();
    if let Some(bad) = env
        .iter()
        .find(|v| v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        return Err(err("env", format!("`{bad}` is not a variable name")));
    }
    let on_error = match t.on_error.as_deref() {
        None => default_on_error,
        Some(v) => {
            if !event.decides() {
                return Err(err(
                    "on_error",
                    format!("a `{event}` hook decides nothing, so it has no on_error"),
                ));
            }
            on_error(v).map_err(|m| err("on_error", m))?
        }
    };
    Ok(HookSpec {
        name,
        event,
        command,
        tools,
        timeout,
        sandboxed,
        network: t.network,
        env,
        on_error,
        from_repository: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Hooks, (String, String)> {
        #[derive(Deserialize)]
        struct File {
            hooks: HooksSection,
        }
        let file: File = toml::from_str(text).map_err(|e| (String::new(), e.to_string()))?;
        check(file.hooks)
    }

    #[test]
    fn tables_are_checked_and_named() {
        let hooks = parse(
            r#"
            [hooks]
            on_error = "deny"
            [[hooks.pre_tool]]
            command = "./guard.sh"
            tools = ["ExecCommand", "mcp__fs__*"]
            [[hooks.pre_tool]]
            name = "audit"
            command = "true"
            on_error = "allow"
            timeout_secs = 3
            [[hooks.brief]]
            command = "notify-send brief"
            sandbox = "off"
            "#,
        )
        .unwrap();
        let names: Vec<&str> = hooks.hooks.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["pre-tool-1", "audit", "brief-1"]);
        assert_eq!(hooks.hooks[0].on_error, OnError::Deny);
        assert_eq!(hooks.hooks[1].on_error, OnError::Allow);
        assert_eq!(hooks.hooks[1].timeout, Duration::from_secs(3));
        assert!(!hooks.hooks[2].sandboxed);
        let guard = &hooks.hooks[0];
        assert!(guard.matches_tool("ExecCommand"));
        assert!(guard.matches_tool("mcp__fs__read"));
        assert!(!guard.matches_tool("ApplyPatch"));
        assert_eq!(
            hooks.matching(HookEvent::PreTool, Some("ApplyPatch")).len(),
            1
        );
        assert_eq!(hooks.matching(HookEvent::Brief, None).len(), 1);
        assert!(!hooks.any(HookEvent::TurnEnd));
    }

    #[test]
    fn bad_tables_name_the_key_at_fault() {
        let cases = [
            ("[[hooks.pre_tool]]\n", "pre_tool[0].command"),
            ("[[hooks.brief]]\ncommand = \"x\"\ntools = [\"A\"]\n", "brief[0].tools"),
            ("[[hooks.brief]]\ncommand = \"x\"\non_error = \"deny\"\n", "brief[0].on_error"),
            ("[[hooks.pre_tool]]\ncommand = \"x\"\ntimeout_secs = 0\n", "pre_tool[0].timeout_secs"),
            ("[[hooks.pre_tool]]\ncommand = \"x\"\nsandbox = \"maybe\"\n", "pre_tool[0].sandbox"),
            ("[[hooks.pre_tool]]\ncommand = \"x\"\nname = \"../up\"\n", "pre_tool[0].name"),
            ("[[hooks.pre_tool]]\ncommand = \"x\"\nenv = [\"A B\"]\n", "pre_tool[0].env"),
            (
                "[[hooks.pre_tool]]\ncommand = \"x\"\nname = \"a\"\n[[hooks.brief]]\ncommand = \"y\"\nname = \"a\"\n",
                "brief[0].name",
            ),
            ("[hooks]\non_error = \"maybe\"\n", "on_error"),
        ];
        for (text, key) in cases {
            let got = parse(text).map(|_| ()).map_err(|(k, _)| k);
            assert_eq!(got, Err(key.to_owned()), "{text}");
        }
        // An event Holon does not have is refused by name.
        let unknown = parse("[[hooks.pre_toool]]\ncommand = \"x\"\n");
        assert!(unknown.is_err_and(|(_, m)| m.contains("pre_toool")));
    }

    #[test]
    fn events_round_trip() {
        for e in HookEvent::ALL {
            assert_eq!(HookEvent::parse(e.as_str()), Some(e));
        }
        assert_eq!(HookEvent::parse("PreToolUse"), None);
    }
}
