//! Configuration: `config.toml` in the config directory plus environment
//! variables. Precedence, highest first: command-line flags, environment
//! variables (`HOLON_AGENT_ID`, `HOLON_MODEL`, `HOLON_LOG`, `RUST_LOG`),
//! the config file, built-in defaults. A malformed file is an error that
//! names the file, line, column and key; unknown keys are errors too, since
//! a typo silently ignored is a setting silently lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::ids::validate_agent_id;
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
    mcp_servers: BTreeMap<String, crate::runtime::mcp::config::ServerSection>,
    /// What holds for every MCP server.
    #[serde(default)]
    mcp: McpSection,
    /// Operator hooks (`[[hooks.EVENT]]`, `[hooks] on_error`).
    #[serde(default)]
    hooks: crate::runtime::hooks::config::HooksSection,
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
    pub tool_output: crate::runtime::tools::ToolOutputBudget,
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
    pub agent_limits: crate::runtime::agents::ops::AgentLimits,
    /// The user's home for user-scope skills and templates
    /// (`HOLON_USER_DIR`, else `$HOME`).
    pub user_home: Option<PathBuf>,
    /// MCP servers (`[mcp_servers.NAME]`).
    pub mcp_servers: Vec<crate::runtime::mcp::ServerConfig>,
    /// The share of the prompt budget MCP tools' definitions may take
    /// before they are offered through ToolSearch (`[mcp]
    /// tool_budget_share`).
    pub mcp_tool_share: f64,
    /// The operator's hooks (`[[hooks.EVENT]]`).
    pub hooks: crate::runtime::hooks::Hooks,
    /// The reviewer of approval requests (`[policy] reviewer`, with
    /// `reviewer_policy`, `reviewer_may`, `reviewer_timeout_secs`,
    /// `reviewer_hold_secs`).
    pub reviewer: crate::runtime::approvals::review::ReviewerConfig,
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
        let at_key = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: text.and_then(|t| line_of_key(t, key)).unwrap_or(1),
            column: 1,
            key: Some(key.to_owned()),
            message,
        };

        let (default_agent, default_agent_source) = match (
            env.get("HOLON_AGENT_ID"),
            file.runtime.default_agent.clone(),
        ) {
            (Some(v), _) => {
                validate_agent_id(v).map_err(|message| ConfigError::Env {
                    var: "HOLON_AGENT_ID",
                    message,
                })?;
                (v.to_owned(), Source::Environment)
            }
            (None, Some(v)) => {
                validate_agent_id(&v).map_err(|m| at_key("runtime.default_agent", m))?;
                (v, Source::ConfigFile)
            }
            (None, None) => (DEFAULT_AGENT.to_owned(), Source::Default),
        };

        let default_model = match env.get("HOLON_MODEL") {
            Some(v) => {
                validate_model_ref(v).map_err(|message| ConfigError::Env {
                    var: "HOLON_MODEL",
                    message,
                })?;
                Some(v.to_owned())
            }
            None => match file.model.default {
                Some(v) => {
                    validate_model_ref(&v).map_err(|m| at_key("model.default", m))?;
                    Some(v)
                }
                None => None,
            },
        };
        for (model, price) in &file.pricing {
            let key = format!("pricing.{model:?}");
            validate_model_ref(model).map_err(|m| at_key(&key, m))?;
            price.check().map_err(|m| at_key(&key, m))?;
        }
        let pricing = crate::runtime::provider::catalog::Pricing {
            overrides: file.pricing.clone(),
        };
        let daily_micro_usd = match file.budget.daily_usd {
            Some(d) if !(d.is_finite() && d > 0.0 && d <= 1_000_000.0) => {
                return Err(at_key(
                    "budget.daily_usd",
                    format!(
                        "{d} is out of range: give dollars a day, more than 0 and at most 1000000"
                    ),
                ))
            }
            Some(d) => Some((d * 1_000_000.0).round().max(1.0) as u64),
            None => None,
        };
        let daily_tokens = match file.budget.daily_tokens {
            Some(0) => {
                return Err(at_key(
                    "budget.daily_tokens",
                    "0 is out of range: give tokens a day, at least 1".into(),
                ))
            }
            other => other,
        };
        let budget = crate::model::agent::Budget {
            daily_micro_usd,
            daily_tokens,
        };
        let fallback_models = file.model.fallbacks.unwrap_or_default();
        for m in &fallback_models {
            validate_model_ref(m).map_err(|msg| at_key("model.fallbacks", msg))?;
        }

        let log_filter = env
            .get("HOLON_LOG")
            .or_else(|| env.get("RUST_LOG"))
            .map(str::to_owned)
            .or(file.log.filter)
            .unwrap_or_else(|| DEFAULT_LOG_FILTER.to_owned());

        use crate::ui::tui::NotifyWhen;
        let notify = match (&file.console.notify, file.console.bell) {
            (Some(v), _) => NotifyWhen::parse(v).ok_or_else(|| {
                at_key(
                    "console.notify",
                    format!("`{v}` is not a choice: {}", NotifyWhen::CHOICES),
                )
            })?,
            (None, Some(true)) => NotifyWhen::Always,
            (None, Some(false)) => NotifyWhen::Off,
            (None, None) => NotifyWhen::default(),
        };
        let notify_method = match file.console.notify_method.as_deref() {
            None | Some("bel") => NotifyMethod::Bel,
            Some("osc9") => NotifyMethod::Osc9,
            Some(v) => {
                return Err(at_key(
                    "console.notify_method",
                    format!("`{v}` is not a choice: bel or osc9"),
                ))
            }
        };

        let store_cache_mib = match file.store.cache_mib {
            Some(n) if (1..=MAX_CACHE_MIB).contains(&n) => n,
            Some(n) => {
                return Err(at_key(
                    "store.cache_mib",
                    format!("{n} is out of range: give a size in MiB from 1 to {MAX_CACHE_MIB}"),
                ))
            }
            None => crate::store::DEFAULT_CACHE_MIB,
        };

        let store_backup_every = match file.store.backup_every_hours {
            None | Some(0) => None,
            Some(h) if h <= MAX_BACKUP_HOURS => Some(std::time::Duration::from_secs(h * 3600)),
            Some(h) => {
                return Err(at_key(
                    "store.backup_every_hours",
                    format!(
                        "{h} is out of range: give hours from 1 to {MAX_BACKUP_HOURS}, or 0 for no scheduled backups"
                    ),
                ))
            }
        };
        let store_backup_keep = match file.store.backup_keep {
            None => 3,
            Some(n) if (1..=MAX_BACKUP_KEEP).contains(&n) => n,
            Some(n) => {
                return Err(at_key(
                    "store.backup_keep",
                    format!("{n} is out of range: keep from 1 to {MAX_BACKUP_KEEP} backups"),
                ))
            }
        };

        let store_retain_days = match file.store.retain_days {
            None => None,
            Some(0) => {
                return Err(at_key(
                    "store.retain_days",
                    "0 would keep no history at all: give days from 1 to 36500, or leave it unset to keep everything".to_owned(),
                ))
            }
            Some(n) if n <= crate::runtime::retention::MAX_DAYS => Some(n),
            Some(n) => {
                return Err(at_key(
                    "store.retain_days",
                    format!(
                        "{n} is out of range: give days from 1 to {}, or leave it unset to keep everything",
                        crate::runtime::retention::MAX_DAYS
                    ),
                ))
            }
        };

        let exec_env_passthrough = file.exec.env_passthrough.unwrap_or_default();
        let policy_env = file.policy.env.clone().unwrap_or_default();
        for (key, names) in [
            ("exec.env_passthrough", &exec_env_passthrough),
            ("policy.env", &policy_env),
        ] {
            for name in names {
                if name.is_empty() || name.contains('=') || name.contains('\0') {
                    return Err(at_key(
                        key,
                        format!("`{name}` is not an environment variable name"),
                    ));
                }
            }
        }
        let mut policy_unix_sockets = Vec::new();
        for path in file.policy.unix_sockets.clone().unwrap_or_default() {
            let p = std::path::PathBuf::from(&path);
            if !p.is_absolute() || path.contains('\0') {
                return Err(at_key(
                    "policy.unix_sockets",
                    format!("`{path}` is not an absolute path to a unix socket"),
                ));
            }
            policy_unix_sockets.push(p);
        }

        let tool_output = tool_output_budget(&file.runtime, env, &at_key)?;

        use crate::model::context::WindowSource;
        use crate::runtime::context::budget::check_window;
        let context_window = match (env.get("HOLON_CONTEXT_WINDOW"), file.model.context_window) {
            (Some(v), _) => {
                let n = v.trim().parse::<u64>().map_err(|_| ConfigError::Env {
                    var: "HOLON_CONTEXT_WINDOW",
                    message: format!("`{v}` is not a number of tokens"),
                })?;
                let n = check_window(n).map_err(|message| ConfigError::Env {
                    var: "HOLON_CONTEXT_WINDOW",
                    message,
                })?;
                Some((n, WindowSource::Environment))
            }
            (None, Some(n)) => Some((
                check_window(n).map_err(|m| at_key("model.context_window", m))?,
                WindowSource::ModelConfig,
            )),
            (None, None) => None,
        };
        for (name, p) in &file.providers {
            if let Some(n) = p.context_window {
                check_window(n)
                    .map_err(|m| at_key(&format!("providers.{name}.context_window"), m))?;
            }
            match (name == "openai-codex", p.wire.is_some()) {
                // The Codex backend's wire is fixed, and it takes no key.
                (true, _) => {
                    let fixed = [
                        ("wire", p.wire.is_some()),
                        ("api_key_env", p.api_key_env.is_some()),
                        ("streaming", p.streaming.is_some()),
                    ];
                    if let Some((key, _)) = fixed.iter().find(|(_, set)| *set) {
                        return Err(at_key(
                            &format!("providers.openai-codex.{key}"),
                            "openai-codex always streams the Codex backend's Responses wire \
                             with a ChatGPT sign-in; only base_url, context_window, \
                             reasoning_effort and images apply"
                                .to_owned(),
                        ));
                    }
                }
                (false, false) => {
                    return Err(at_key(
                        &format!("providers.{name}.wire"),
                        "missing: openai_responses, openai_chat or anthropic_messages".to_owned(),
                    ))
                }
                (false, true) => {}
            }
        }

        let defaults = super::control::ServerLimits::default();
        let max_connections = file
            .server
            .max_connections
            .unwrap_or(defaults.max_connections);
        if !(1..=65_536).contains(&max_connections) {
            return Err(at_key(
                "server.max_connections",
                format!("{max_connections} is out of range (1 to 65536)"),
            ));
        }
        let idle_timeout = match file.server.idle_timeout_secs {
            Some(s) if !(1..=604_800).contains(&s) => {
                return Err(at_key(
                    "server.idle_timeout_secs",
                    format!("{s} is out of range (1 to 604800, a week)"),
                ))
            }
            Some(s) => std::time::Duration::from_secs(s),
            None => defaults.idle_timeout,
        };
        let http_max_connections = file
            .server
            .http_max_connections
            .unwrap_or(defaults.http_max_connections);
        if !(1..=65_536).contains(&http_max_connections) {
            return Err(at_key(
                "server.http_max_connections",
                format!("{http_max_connections} is out of range (1 to 65536)"),
            ));
        }
        let server_limits = super::control::ServerLimits {
            max_connections,
            idle_timeout,
            http_max_connections,
            ..defaults
        };
        // The file's value is checked even when the variable overrides
        // it: a wrong key is a setting lost the day the variable goes.
        let filed = match &file.server.listen {
            Some(v) => Some(listen_setting(v).map_err(|m| at_key("server.listen", m))?),
            None => None,
        };
        let server_listen = match (env.get("HOLON_LISTEN"), filed) {
            (Some(v), _) => listen_setting(v).map_err(|message| ConfigError::Env {
                var: "HOLON_LISTEN",
                message,
            })?,
            (None, Some(v)) => v,
            (None, None) => Some(super::access::DEFAULT_LISTEN.to_owned()),
        };
        let defaults = super::access::RateLimit::default();
        let burst = file.server.trigger_burst.unwrap_or(defaults.burst);
        if !(1..=1_000_000).contains(&burst) {
            return Err(at_key(
                "server.trigger_burst",
                format!("{burst} is out of range (1 to 1000000)"),
            ));
        }
        let per_sec = file.server.trigger_rate_per_sec.unwrap_or(defaults.per_sec);
        if !(per_sec > 0.0 && per_sec <= 1_000_000.0) {
            return Err(at_key(
                "server.trigger_rate_per_sec",
                format!("{per_sec} is out of range (above 0, at most 1000000)"),
            ));
        }
        let trigger_rate = super::access::RateLimit { burst, per_sec };
        let server_tls = super::config_checks::tls_setting(path, &file.server, &at_key)?;
        let remotes = super::remotes::check(path, &file.remotes, &at_key)?;
        let policy = policy_setting(&file.policy, &at_key)?;
        let reviewer = super::config_checks::reviewer_setting(path, &file.policy, &at_key)?;
        let approval_wait = match file.policy.approval_wait_secs {
            None => crate::runtime::host::DEFAULT_APPROVAL_WAIT,
            Some(s) if s <= 3600 => std::time::Duration::from_secs(s),
            Some(s) => {
                return Err(at_key(
                    "policy.approval_wait_secs",
                    format!("{s} is out of range (0 to 3600)"),
                ))
            }
        };
        let mcp_servers = super::config_checks::mcp_servers(file.mcp_servers, &at_key)?;
        let hooks = crate::runtime::hooks::config::check(file.hooks)
            .map_err(|(key, m)| at_key(&format!("hooks.{key}"), m))?;
        let mcp_tool_share = match file.mcp.tool_budget_share {
            None => crate::runtime::tools::offer::DEFAULT_SHARE,
            Some(v) if (0.0..=1.0).contains(&v) => v,
            Some(v) => {
                return Err(at_key(
                    "mcp.tool_budget_share",
                    format!("{v} is out of range (a share from 0.0 to 1.0, e.g. 0.1)"),
                ))
            }
        };
        let limits = crate::runtime::agents::ops::AgentLimits::default();
        let max_spawn_depth = file
            .agents
            .max_spawn_depth
            .unwrap_or(limits.max_spawn_depth);
        if !(1..=8).contains(&max_spawn_depth) {
            return Err(at_key(
                "agents.max_spawn_depth",
                format!("{max_spawn_depth} is out of range (1 to 8)"),
            ));
        }
        let max_children = file.agents.max_children.unwrap_or(limits.max_children);
        if !(1..=256).contains(&max_children) {
            return Err(at_key(
                "agents.max_children",
                format!("{max_children} is out of range (1 to 256)"),
            ));
        }
        let user_home = env
            .get("HOLON_USER_DIR")
            .map(PathBuf::from)
            .or_else(|| env.get("HOME").map(PathBuf::from))
            .filter(|p| p.is_absolute());

        Ok(Config {
            file: path.to_path_buf(),
            file_present: text.is_some(),
            default_agent,
            default_agent_source,
            default_model,
            fallback_models,
            log_filter,
            alt_screen: file.console.alt_screen.unwrap_or(true),
            notify,
            notify_method,
            mouse: file.console.mouse.unwrap_or(true),
            hyperlinks: file.console.hyperlinks.unwrap_or(true),
            store_cache_mib,
            store_backup_every,
            store_backup_keep,
            store_retain_days,
            store_quick_repair: file.store.quick_repair.unwrap_or(false),
            server_limits,
            server_listen,
            trigger_rate,
            server_tls,
            remotes,
            policy,
            sandbox_required: file.policy.sandbox_required.unwrap_or(false),
            store_lock_wait: std::time::Duration::from_secs(
                file.store.lock_wait_secs.unwrap_or(10).min(3600),
            ),
            exec_env_passthrough,
            policy_unix_sockets,
            policy_env,
            tool_output,
            providers: file.providers,
            context_window,
            reasoning_effort: file.model.reasoning_effort,
            pricing,
            budget,
            agent_limits: crate::runtime::agents::ops::AgentLimits {
                max_spawn_depth,
                max_children,
            },
            user_home,
            mcp_servers,
            mcp_tool_share,
            hooks,
            reviewer,
            approval_wait,
        })
    }
}

pub use super::config_checks::validate_model_ref;
use super::config_checks::{
    invalid, line_of_key, listen_setting, policy_setting, tool_output_budget,
};

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
