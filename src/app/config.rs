//! Configuration: `config.toml` in the config directory plus environment
//! variables. Precedence, highest first: command-line flags, environment
//! variables (`HOLON_AGENT_ID`, `HOLON_MODEL`, `HOLON_LOG`, `RUST_LOG`),
//! the config file, built-in defaults. A malformed file is an error that
//! names the file, line, column and key; unknown keys are errors too, since
//! a typo silently ignored is a setting silently lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::runtime::provider::registry::ProviderEndpointConfig;

/// The file as written by the operator. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    runtime: RuntimeSection,
    #[serde(default)]
    model: ModelSection,
    #[serde(default)]
    log: LogSection,
    #[serde(default)]
    console: ConsoleSection,
    #[serde(default)]
    store: StoreSection,
    #[serde(default)]
    exec: ExecSection,
    #[serde(default)]
    server: ServerSection,
    #[serde(default)]
    policy: PolicySection,
    #[serde(default)]
    agents: AgentsSection,
    /// Extra OpenAI-compatible (or other wire format) endpoints, by name.
    #[serde(default)]
    providers: BTreeMap<String, ProviderEndpointConfig>,
    /// Prices by `provider/model`, over the catalog's.
    #[serde(default)]
    pricing: BTreeMap<String, crate::runtime::provider::catalog::Price>,
    #[serde(default)]
    budget: BudgetSection,
    /// MCP servers, by name.
    #[serde(default)]
    mcp_servers: BTreeMap<String, crate::runtime::settings::mcp::ServerSection>,
    /// What holds for every MCP server.
    #[serde(default)]
    mcp: McpSection,
    /// Operator hooks (`[[hooks.EVENT]]`, `[hooks] on_error`).
    #[serde(default)]
    hooks: crate::runtime::settings::hooks::HooksSection,
    /// Other machines' runtimes, by name (`[remotes.NAME]`).
    #[serde(default)]
    remotes: BTreeMap<String, super::remotes::RemoteSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpSection {
    tool_budget_share: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetSection {
    daily_usd: Option<f64>,
    daily_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RuntimeSection {
    default_agent: Option<String>,
    pub(super) default_tool_output_tokens: Option<u64>,
    pub(super) max_tool_output_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelSection {
    default: Option<String>,
    fallbacks: Option<Vec<String>>,
    context_window: Option<u64>,
    reasoning_effort: Option<crate::model::usage::ReasoningEffort>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogSection {
    filter: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsoleSection {
    alt_screen: Option<bool>,
    /// Older name: `true` is `notify = "always"` (when `notify` is unset).
    bell: Option<bool>,
    notify: Option<String>,
    notify_method: Option<String>,
    mouse: Option<bool>,
    hyperlinks: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServerSection {
    max_connections: Option<usize>,
    idle_timeout_secs: Option<u64>,
    http_max_connections: Option<usize>,
    listen: Option<String>,
    trigger_burst: Option<u32>,
    trigger_rate_per_sec: Option<f64>,
    pub(super) tls: Option<bool>,
    pub(super) tls_cert: Option<PathBuf>,
    pub(super) tls_key: Option<PathBuf>,
    pub(super) allow_plaintext: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PolicySection {
    pub(super) approval: Option<String>,
    pub(super) allow_commands: Option<Vec<String>>,
    pub(super) allow_paths: Option<Vec<String>>,
    pub(super) allow_tools: Option<Vec<String>>,
    pub(super) sandbox: Option<String>,
    pub(super) network: Option<String>,
    pub(super) sandbox_required: Option<bool>,
    pub(super) unix_sockets: Option<Vec<String>>,
    pub(super) env: Option<Vec<String>>,
    pub(super) reviewer: Option<String>,
    pub(super) reviewer_policy: Option<PathBuf>,
    pub(super) reviewer_may: Option<String>,
    pub(super) reviewer_timeout_secs: Option<u64>,
    pub(super) reviewer_hold_secs: Option<u64>,
    pub(super) approval_wait_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsSection {
    max_spawn_depth: Option<u32>,
    max_children: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecSection {
    env_passthrough: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreSection {
    backup_every_hours: Option<u64>,
    backup_keep: Option<usize>,
    cache_mib: Option<usize>,
    lock_wait_secs: Option<u64>,
    quick_repair: Option<bool>,
    retain_days: Option<u32>,
}

/// The longest `[store] backup_every_hours` (a year) and the most copies
/// `backup_keep` keeps.
const MAX_BACKUP_HOURS: u64 = 8760;
const MAX_BACKUP_KEEP: usize = 1000;

/// The largest page cache `[store] cache_mib` accepts (8 GiB).
const MAX_CACHE_MIB: usize = 8 * 1024;

/// Where an effective value came from, for `status --json` and docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Default,
    ConfigFile,
    Environment,
}

/// How the console calls the operator back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NotifyMethod {
    /// The terminal bell (BEL): every terminal has it.
    #[default]
    Bel,
    /// `ESC ] 9 ; TEXT BEL`: a desktop notification with the text where
    /// the terminal shows one (iTerm2, WezTerm, Windows Terminal, kitty).
    Osc9,
}

impl NotifyMethod {
    /// The bytes that call the operator back with `text`.
    pub fn bytes(self, text: &str) -> Vec<u8> {
        match self {
            NotifyMethod::Bel => b"\x07".to_vec(),
            NotifyMethod::Osc9 => {
                // Control characters would end the sequence early.
                let text: String = text.chars().filter(|c| !c.is_control()).collect();
                format!("\x1b]9;Holon: {text}\x07").into_bytes()
            }
        }
    }
}

/// The effective configuration after precedence is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub file: PathBuf,
    pub file_present: bool,
    /// The file's values as written, by section (no comments, no layout):
    /// what a reload compares to tell which sections an edit changed.
    pub written: toml::Table,
    pub default_agent: String,
    pub default_agent_source: Source,
    pub default_model: Option<String>,
    pub fallback_models: Vec<String>,
    pub log_filter: String,
    pub alt_screen: bool,
    /// When the console calls the operator back (`[console] notify`).
    pub notify: crate::ui::tui::NotifyWhen,
    /// How: the terminal bell, or an OSC 9 desktop notification
    /// (`[console] notify_method`).
    pub notify_method: NotifyMethod,
    /// Capture the mouse (wheel scrolling); off leaves selection and copy
    /// to the terminal (`[console] mouse`, `/mouse`).
    pub mouse: bool,
    /// Make links clickable with OSC 8 (`[console] hyperlinks`, default
    /// true; never on the Linux console).
    pub hyperlinks: bool,
    /// The store's page cache in MiB (`[store] cache_mib`).
    pub store_cache_mib: usize,
    /// Record the storage engine's allocator state at every commit
    /// (`[store] quick_repair`, default false): see `StoreOptions`.
    pub store_quick_repair: bool,
    /// How often the runtime backs the store up into `backups/` (`[store]
    /// backup_every_hours`, 1 to 8760; absent or 0: only on request).
    pub store_backup_every: Option<std::time::Duration>,
    /// Rotated backups kept (`[store] backup_keep`, 1 to 1000, default 3).
    pub store_backup_keep: usize,
    /// Days of history kept (`[store] retain_days`, 1 to 36500; absent:
    /// everything): the runtime prunes older history nothing current needs.
    pub store_retain_days: Option<u32>,
    /// How long a one-shot command waits for another to release the store
    /// (`[store] lock_wait_secs`, default 10).
    pub store_lock_wait: std::time::Duration,
    /// Control-socket limits (`[server] max_connections`,
    /// `idle_timeout_secs`).
    pub server_limits: super::control::ServerLimits,
    /// The HTTP listener's address (`[server] listen`, `HOLON_LISTEN`);
    /// `None` when set to `off`.
    pub server_listen: Option<String>,
    /// Per-trigger delivery limit (`[server] trigger_burst`,
    /// `trigger_rate_per_sec`).
    pub trigger_rate: super::access::RateLimit,
    /// TLS on the HTTP listener (`[server] tls`, `tls_cert`, `tls_key`,
    /// `allow_plaintext`).
    pub server_tls: super::access::TlsSetting,
    /// Other machines' runtimes the console and `holon status --all`
    /// reach (`[remotes.NAME]`).
    pub remotes: BTreeMap<String, super::remotes::Remote>,
    /// The approval policy of workspaces without their own (`[policy]`).
    pub policy: crate::model::approval::ApprovalPolicy,
    /// Refuse model commands when the kernel cannot sandbox them
    /// (`[policy] sandbox_required`), instead of running them unconfined.
    pub sandbox_required: bool,
    /// Secret-looking variables command tasks may still see
    /// (`[exec] env_passthrough`).
    pub exec_env_passthrough: Vec<String>,
    /// Path unix sockets sandboxed commands may reach (`[policy]
    /// unix_sockets`, absolute paths): none by default.
    pub policy_unix_sockets: Vec<std::path::PathBuf>,
    /// Variables a sandboxed command gets beyond the base set (`[policy]
    /// env`).
    pub policy_env: Vec<String>,
    /// How much command output re-enters the model
    /// (`runtime.default_tool_output_tokens`, `runtime.max_tool_output_tokens`).
    pub tool_output: crate::runtime::settings::limits::ToolOutputBudget,
    pub providers: BTreeMap<String, ProviderEndpointConfig>,
    /// The context window for every model (`HOLON_CONTEXT_WINDOW`, else
    /// `[model] context_window`); unset, each model's own applies.
    pub context_window: Option<(u64, crate::model::context::WindowSource)>,
    /// The reasoning effort asked of every endpoint known to take it
    /// (`[model] reasoning_effort`); `[providers.NAME] reasoning_effort`
    /// wins for its endpoint.
    pub reasoning_effort: Option<crate::model::usage::ReasoningEffort>,
    /// Prices over the catalog's (`[pricing."PROVIDER/MODEL"]`).
    pub pricing: crate::runtime::provider::catalog::Pricing,
    /// Every agent's daily budget unless it has its own (`[budget]`).
    pub budget: crate::model::agent::Budget,
    /// Delegation bounds (`[agents] max_spawn_depth`, `max_children`).
    pub agent_limits: crate::runtime::settings::limits::AgentLimits,
    /// The user's home for user-scope skills and templates
    /// (`HOLON_USER_DIR`, else `$HOME`).
    pub user_home: Option<PathBuf>,
    /// MCP servers (`[mcp_servers.NAME]`).
    pub mcp_servers: Vec<crate::runtime::settings::mcp::ServerConfig>,
    /// The share of the prompt budget MCP tools' definitions may take
    /// before they are offered through ToolSearch (`[mcp]
    /// tool_budget_share`).
    pub mcp_tool_share: f64,
    /// The operator's hooks (`[[hooks.EVENT]]`).
    pub hooks: crate::runtime::settings::hooks::Hooks,
    /// The reviewer of approval requests (`[policy] reviewer`, with
    /// `reviewer_policy`, `reviewer_may`, `reviewer_timeout_secs`,
    /// `reviewer_hold_secs`).
    pub reviewer: crate::runtime::settings::reviewer::ReviewerConfig,
    /// How long a turn that asked for approval waits for the answer
    /// (`[policy] approval_wait_secs`).
    pub approval_wait: std::time::Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {}{message}", path.display(), key_prefix(key))]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        key: Option<String>,
        message: String,
    },
    #[error("environment variable {var}: {message}")]
    Env { var: &'static str, message: String },
}

fn key_prefix(key: &Option<String>) -> String {
    match key {
        Some(k) => format!("key `{k}`: "),
        None => String::new(),
    }
}

/// Environment variables the config reads, captured once so loading is a
/// pure function of (file text, env).
#[derive(Debug, Clone, Default)]
pub struct Env(pub BTreeMap<&'static str, String>);

impl Env {
    pub const VARS: [&'static str; 10] = [
        "HOLON_AGENT_ID",
        "HOLON_MODEL",
        "HOLON_LOG",
        "RUST_LOG",
        "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS",
        "HOLON_MAX_TOOL_OUTPUT_TOKENS",
        "HOLON_CONTEXT_WINDOW",
        "HOLON_LISTEN",
        "HOLON_USER_DIR",
        "HOME",
    ];

    pub fn capture() -> Env {
        let mut map = BTreeMap::new();
        for var in Env::VARS {
            if let Ok(v) = std::env::var(var) {
                if !v.trim().is_empty() {
                    map.insert(var, v);
                }
            }
        }
        Env(map)
    }

    pub(super) fn get(&self, var: &str) -> Option<&str> {
        self.0.get(var).map(String::as_str)
    }
}

pub const DEFAULT_AGENT: &str = "main";
pub const DEFAULT_LOG_FILTER: &str = "info";

impl Config {
    /// Where `holon login openai-codex` keeps the ChatGPT sign-in: beside
    /// the config file, private.
    pub fn codex_auth_file(&self) -> PathBuf {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        dir.join("auth").join("openai-codex.json")
    }

    /// Read `path` (absent is fine) and apply `env` over it.
    pub fn load(path: &Path, env: &Env) -> Result<Config, ConfigError> {
        // A FIFO or a device would block the read (or never end): only a
        // regular file is read.
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "not a regular file",
                    ),
                });
            }
        }
        let text = match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        Config::from_parts(path, text.as_deref(), env)
    }

    pub fn from_parts(path: &Path, text: Option<&str>, env: &Env) -> Result<Config, ConfigError> {
        let file: ConfigFile = match text {
            Some(t) => toml::from_str(t).map_err(|e| invalid(path, t, &e))?,
            None => ConfigFile::default(),
        };
        let written: toml::Table = match text {
            Some(t) => t.parse().map_err(|e| invalid(path, t, &e))?,
            None => toml::Table::new(),
        };
        let at_key = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: text.and_then(|t| line_of_key(t, key)).unwrap_or(1),
            column: 1,
            key: Some(key.to_owned()),
            message,
        };

        let at_key: sections::AtKey = &at_key;
        let runtime = file.runtime.settle(env, at_key)?;
        let model = file.model.settle(env, at_key)?;
        sections::check_providers(&file.providers, at_key)?;
        let pricing = sections::pricing(&file.pricing, at_key)?;
        let budget = file.budget.settle(at_key)?;
        let log_filter = env
            .get("HOLON_LOG")
            .or_else(|| env.get("RUST_LOG"))
            .map(str::to_owned)
            .or(file.log.filter)
            .unwrap_or_else(|| DEFAULT_LOG_FILTER.to_owned());
        let console = file.console.settle(at_key)?;
        let store = file.store.settle(at_key)?;
        let (exec_env_passthrough, policy_env) =
            sections::env_names(&file.exec, &file.policy, at_key)?;
        let server = file.server.settle(path, env, at_key)?;
        let user_home = env
            .get("HOLON_USER_DIR")
            .map(PathBuf::from)
            .or_else(|| env.get("HOME").map(PathBuf::from))
            .filter(|p| p.is_absolute());

        Ok(Config {
            file: path.to_path_buf(),
            file_present: text.is_some(),
            written,
            default_agent: runtime.default_agent,
            default_agent_source: runtime.default_agent_source,
            default_model: model.default_model,
            fallback_models: model.fallback_models,
            log_filter,
            alt_screen: file.console.alt_screen.unwrap_or(true),
            notify: console.notify,
            notify_method: console.notify_method,
            mouse: file.console.mouse.unwrap_or(true),
            hyperlinks: file.console.hyperlinks.unwrap_or(true),
            store_cache_mib: store.cache_mib,
            store_backup_every: store.backup_every,
            store_backup_keep: store.backup_keep,
            store_retain_days: store.retain_days,
            store_quick_repair: store.quick_repair,
            server_limits: server.limits,
            server_listen: server.listen,
            trigger_rate: server.trigger_rate,
            server_tls: server.tls,
            remotes: super::remotes::check(path, &file.remotes, at_key)?,
            policy: policy_setting(&file.policy, at_key)?,
            sandbox_required: file.policy.sandbox_required.unwrap_or(false),
            store_lock_wait: store.lock_wait,
            exec_env_passthrough,
            policy_unix_sockets: file.policy.sockets(at_key)?,
            policy_env,
            tool_output: runtime.tool_output,
            providers: file.providers,
            context_window: model.context_window,
            reasoning_effort: model.reasoning_effort,
            pricing,
            budget,
            agent_limits: file.agents.limits(at_key)?,
            user_home,
            mcp_servers: super::config_checks::mcp_servers(file.mcp_servers, at_key)?,
            mcp_tool_share: file.mcp.tool_share(at_key)?,
            hooks: crate::runtime::settings::hooks::check(file.hooks)
                .map_err(|(key, m)| at_key(&format!("hooks.{key}"), m))?,
            reviewer: super::config_checks::reviewer_setting(path, &file.policy, at_key)?,
            approval_wait: file.policy.approval_wait(at_key)?,
        })
    }
}

pub use super::config_checks::validate_model_ref;
use super::config_checks::{invalid, line_of_key, policy_setting};

mod sections;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
