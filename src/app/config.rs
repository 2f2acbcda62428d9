//! Configuration: `config.toml` in the config directory plus environment
//! variables. Precedence, highest first: command-line flags, environment
//! variables (`HOLON_AGENT_ID`, `HOLON_MODEL`, `HOLON_LOG`, `RUST_LOG`),
//! the config file, built-in defaults. A malformed file is an error that
//! names the file, line, column and key; unknown keys are errors too, since
//! a typo silently ignored is a setting silently lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::runtime::agent::validate_agent_id;
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
    /// Extra OpenAI-compatible (or other wire format) endpoints, by name.
    #[serde(default)]
    providers: BTreeMap<String, ProviderEndpointConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeSection {
    default_agent: Option<String>,
    default_tool_output_tokens: Option<u64>,
    max_tool_output_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelSection {
    default: Option<String>,
    fallbacks: Option<Vec<String>>,
    context_window: Option<u64>,
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
    bell: Option<bool>,
    mouse: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerSection {
    max_connections: Option<usize>,
    idle_timeout_secs: Option<u64>,
    listen: Option<String>,
    trigger_burst: Option<u32>,
    trigger_rate_per_sec: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicySection {
    approval: Option<String>,
    allow_commands: Option<Vec<String>>,
    allow_paths: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecSection {
    env_passthrough: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreSection {
    cache_mib: Option<usize>,
    lock_wait_secs: Option<u64>,
}

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
    pub bell: bool,
    /// Capture the mouse (wheel scrolling); off leaves selection and copy
    /// to the terminal (`[console] mouse`, `/mouse`).
    pub mouse: bool,
    /// The store's page cache in MiB (`[store] cache_mib`).
    pub store_cache_mib: usize,
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
    /// The approval policy of workspaces without their own (`[policy]`).
    pub policy: crate::runtime::policy::ApprovalPolicy,
    /// Secret-looking variables command tasks may still see
    /// (`[exec] env_passthrough`).
    pub exec_env_passthrough: Vec<String>,
    /// How much command output re-enters the model
    /// (`runtime.default_tool_output_tokens`, `runtime.max_tool_output_tokens`).
    pub tool_output: crate::runtime::tools::ToolOutputBudget,
    pub providers: BTreeMap<String, ProviderEndpointConfig>,
    /// The context window for every model (`HOLON_CONTEXT_WINDOW`, else
    /// `[model] context_window`); unset, each model's own applies.
    pub context_window: Option<(u64, crate::runtime::context::WindowSource)>,
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
    pub const VARS: [&'static str; 8] = [
        "HOLON_AGENT_ID",
        "HOLON_MODEL",
        "HOLON_LOG",
        "RUST_LOG",
        "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS",
        "HOLON_MAX_TOOL_OUTPUT_TOKENS",
        "HOLON_CONTEXT_WINDOW",
        "HOLON_LISTEN",
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

    fn get(&self, var: &str) -> Option<&str> {
        self.0.get(var).map(String::as_str)
    }
}

pub const DEFAULT_AGENT: &str = "main";
pub const DEFAULT_LOG_FILTER: &str = "info";

impl Config {
    /// Read `path` (absent is fine) and apply `env` over it.
    pub fn load(path: &Path, env: &Env) -> Result<Config, ConfigError> {
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

        let exec_env_passthrough = file.exec.env_passthrough.unwrap_or_default();
        for name in &exec_env_passthrough {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(at_key(
                    "exec.env_passthrough",
                    format!("`{name}` is not an environment variable name"),
                ));
            }
        }

        let tool_output = tool_output_budget(&file.runtime, env, &at_key)?;

        use crate::runtime::context::{budget::check_window, WindowSource};
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
            Some(0) => {
                return Err(at_key(
                    "server.idle_timeout_secs",
                    "must be at least 1 second".into(),
                ))
            }
            Some(s) => std::time::Duration::from_secs(s),
            None => defaults.idle_timeout,
        };
        let server_limits = super::control::ServerLimits {
            max_connections,
            idle_timeout,
        };
        let server_listen = match (env.get("HOLON_LISTEN"), file.server.listen) {
            (Some(v), _) => listen_setting(v).map_err(|message| ConfigError::Env {
                var: "HOLON_LISTEN",
                message,
            })?,
            (None, Some(v)) => listen_setting(&v).map_err(|m| at_key("server.listen", m))?,
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
        let policy = policy_setting(&file.policy, &at_key)?;

        Ok(Config {
            file: path.to_path_buf(),
            file_present: text.is_some(),
            default_agent,
            default_agent_source,
            default_model,
            fallback_models,
            log_filter,
            alt_screen: file.console.alt_screen.unwrap_or(true),
            bell: file.console.bell.unwrap_or(false),
            mouse: file.console.mouse.unwrap_or(true),
            store_cache_mib,
            server_limits,
            server_listen,
            trigger_rate,
            policy,
            store_lock_wait: std::time::Duration::from_secs(
                file.store.lock_wait_secs.unwrap_or(10).min(3600),
            ),
            exec_env_passthrough,
            tool_output,
            providers: file.providers,
            context_window,
        })
    }
}

/// `[policy]`: a known approval mode, and allow-list entries that are one
/// line each.
fn policy_setting(
    p: &PolicySection,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<crate::runtime::policy::ApprovalPolicy, ConfigError> {
    use crate::runtime::policy::{Approval, ApprovalPolicy};
    let approval = match &p.approval {
        None => Approval::Never,
        Some(a) => Approval::parse(a).ok_or_else(|| {
            at_key(
                "policy.approval",
                format!("`{a}` is not an approval mode: never, on_write or always"),
            )
        })?,
    };
    let entries = |key: &str, v: &Option<Vec<String>>| {
        let v = v.clone().unwrap_or_default();
        match v
            .iter()
            .find(|e| e.trim().is_empty() || e.chars().any(char::is_control))
        {
            Some(bad) => Err(at_key(key, format!("{bad:?} is not an allow-list entry"))),
            None => Ok(v.into_iter().map(|e| e.trim().to_owned()).collect()),
        }
    };
    Ok(ApprovalPolicy {
        approval,
        allow_commands: entries("policy.allow_commands", &p.allow_commands)?,
        allow_paths: entries("policy.allow_paths", &p.allow_paths)?,
    })
}

/// `off`, or an IP:PORT to listen on (port 0 picks a free one).
fn listen_setting(v: &str) -> Result<Option<String>, String> {
    let v = v.trim();
    if v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    v.parse::<std::net::SocketAddr>()
        .map(|a| Some(a.to_string()))
        .map_err(|_| format!("`{v}` is not IP:PORT (e.g. 127.0.0.1:7464) or `off`"))
}

/// The largest `max_tool_output_tokens` accepted (about 4 MB of text).
const MAX_TOOL_OUTPUT_TOKENS: u64 = 1_000_000;

/// `runtime.default_tool_output_tokens` / `max_tool_output_tokens`, each
/// overridden by its environment variable; the default may not exceed the
/// cap.
fn tool_output_budget(
    file: &RuntimeSection,
    env: &Env,
    at_key: &dyn Fn(&str, String) -> ConfigError,
) -> Result<crate::runtime::tools::ToolOutputBudget, ConfigError> {
    let defaults = crate::runtime::tools::ToolOutputBudget::default();
    let pick = |var: &'static str, key: &str, filed: Option<u64>, fallback: u64| {
        let check = |n: u64| (1..=MAX_TOOL_OUTPUT_TOKENS).contains(&n);
        let range = format!("give a number of tokens from 1 to {MAX_TOOL_OUTPUT_TOKENS}");
        match env.get(var) {
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if check(n) => Ok(n),
                _ => Err(ConfigError::Env {
                    var,
                    message: format!("`{v}` is not valid: {range}"),
                }),
            },
            None => match filed {
                Some(n) if check(n) => Ok(n),
                Some(n) => Err(at_key(key, format!("{n} is out of range: {range}"))),
                None => Ok(fallback),
            },
        }
    };
    let max_tokens = pick(
        "HOLON_MAX_TOOL_OUTPUT_TOKENS",
        "runtime.max_tool_output_tokens",
        file.max_tool_output_tokens,
        defaults.max_tokens,
    )?;
    let default_tokens = pick(
        "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS",
        "runtime.default_tool_output_tokens",
        file.default_tool_output_tokens,
        defaults.default_tokens.min(max_tokens),
    )?;
    if default_tokens > max_tokens {
        return Err(at_key(
            "runtime.default_tool_output_tokens",
            format!("{default_tokens} is more than max_tool_output_tokens ({max_tokens})"),
        ));
    }
    Ok(crate::runtime::tools::ToolOutputBudget {
        default_tokens,
        max_tokens,
    })
}

/// Model references are `provider/model`, e.g. `openai/gpt-4.1` or
/// `ollama/llama3.2`.
pub fn validate_model_ref(s: &str) -> Result<(), String> {
    match s.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(()),
        _ => Err(format!(
            "model `{s}` must be written provider/model, e.g. openai/gpt-4.1 or ollama/llama3.2"
        )),
    }
}

fn invalid(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
    let (line, column) = line_col(text, offset);
    ConfigError::Invalid {
        path: path.to_path_buf(),
        line,
        column,
        key: key_at_line(text, line),
        message: e.message().to_owned(),
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// The dotted key defined on `line` (1-based), qualified by the table
/// header above it: `model.default`. None on a header or blank line.
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let mut section: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('[') {
            section = Some(l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
            if i + 1 == line {
                return section;
            }
            continue;
        }
        if i + 1 == line {
            let key = l
                .split_once('=')
                .map(|(k, _)| k.trim().trim_matches('"').to_owned())?;
            if key.is_empty() {
                return None;
            }
            return Some(match &section {
                Some(s) => format!("{s}.{key}"),
                None => key,
            });
        }
    }
    None
}

/// The line on which a dotted key is set, for errors found after parsing.
fn line_of_key(text: &str, dotted: &str) -> Option<usize> {
    let (section, key) = dotted.rsplit_once('.').unwrap_or(("", dotted));
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('[') {
            current = l.trim_matches(|c| c == '[' || c == ']').trim().to_owned();
            continue;
        }
        if current == section {
            if let Some((k, _)) = l.split_once('=') {
                if k.trim() == key {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&'static str, &str)]) -> Env {
        Env(pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect())
    }

    fn load(text: &str, e: &Env) -> Result<Config, ConfigError> {
        Config::from_parts(Path::new("/h/config.toml"), Some(text), e)
    }

    #[test]
    fn defaults_without_a_file() {
        let c = Config::from_parts(Path::new("/h/config.toml"), None, &Env::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.default_agent, "main");
        assert_eq!(c.default_agent_source, Source::Default);
        assert_eq!(c.log_filter, "info");
        assert!(c.alt_screen);
        assert!(!c.file_present);
    }

    #[test]
    fn environment_beats_file_beats_default() {
        let text = "[runtime]\ndefault_agent = \"filed\"\n[model]\ndefault = \"openai/a\"\n[log]\nfilter = \"debug\"\n";
        let c = load(text, &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.default_agent, "filed");
        assert_eq!(c.default_model.as_deref(), Some("openai/a"));
        assert_eq!(c.log_filter, "debug");
        let e = env(&[
            ("HOLON_AGENT_ID", "envy"),
            ("HOLON_MODEL", "anthropic/b"),
            ("RUST_LOG", "warn"),
        ]);
        let c = load(text, &e).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.default_agent, "envy");
        assert_eq!(c.default_agent_source, Source::Environment);
        assert_eq!(c.default_model.as_deref(), Some("anthropic/b"));
        assert_eq!(c.log_filter, "warn");
        let e = env(&[("HOLON_LOG", "trace"), ("RUST_LOG", "warn")]);
        assert_eq!(
            load(text, &e).map(|c| c.log_filter).ok().as_deref(),
            Some("trace")
        );
    }

    #[test]
    fn syntax_error_names_file_line_and_column() {
        let err = load(
            "[model]\ndefault = \"openai/a\"\nfallbacks = [\n",
            &Env::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.starts_with("/h/config.toml:"), "{err}");
        assert!(err.contains(":3:") || err.contains(":4:"), "{err}");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let c =
            load("[console]\nmouse = false\n", &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.mouse);
        let err = load("[console]\nbell = \"yes\"\n", &Env::default());
        match err {
            Err(ConfigError::Invalid { line, key, .. }) => {
                assert_eq!(line, 2);
                assert_eq!(key.as_deref(), Some("console.bell"));
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn unknown_key_is_an_error_naming_it() {
        let err = load("[model]\ndefualt = \"openai/a\"\n", &Env::default());
        match err {
            Err(ConfigError::Invalid {
                line, key, message, ..
            }) => {
                assert_eq!(line, 2);
                assert_eq!(key.as_deref(), Some("model.defualt"));
                assert!(message.contains("unknown field"), "{message}");
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn bad_values_are_rejected_with_their_key() {
        match load("[model]\n\ndefault = \"gpt\"\n", &Env::default()) {
            Err(ConfigError::Invalid { line, key, .. }) => {
                assert_eq!(line, 3);
                assert_eq!(key.as_deref(), Some("model.default"));
            }
            other => panic!("expected invalid, got {other:?}"),
        }
        assert!(matches!(
            load("", &env(&[("HOLON_AGENT_ID", "../x")])),
            Err(ConfigError::Env {
                var: "HOLON_AGENT_ID",
                ..
            })
        ));
        assert!(load("[console]\nalt_screen = \"loud\"\n", &Env::default()).is_err());
    }

    #[test]
    fn the_listener_address_defaults_to_loopback_and_can_be_turned_off() {
        let c = load("", &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            c.server_listen.as_deref(),
            Some(crate::app::access::DEFAULT_LISTEN)
        );
        let c =
            load("[server]\nlisten = \"off\"\n", &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.server_listen, None);
        let c = load(
            "[server]\nlisten = \"127.0.0.1:9000\"\n",
            &env(&[("HOLON_LISTEN", "127.0.0.1:0")]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.server_listen.as_deref(), Some("127.0.0.1:0"));
        match load("[server]\nlisten = \"nowhere\"\n", &Env::default()) {
            Err(ConfigError::Invalid { key, .. }) => {
                assert_eq!(key.as_deref(), Some("server.listen"))
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn the_approval_policy_is_read_and_bad_values_name_their_key() {
        use crate::runtime::policy::Approval;
        let c = load(
            "[policy]\napproval = \"on_write\"\nallow_commands = [\"cargo test\"]\n",
            &Env::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.policy.approval, Approval::OnWrite);
        assert_eq!(c.policy.allow_commands, vec!["cargo test".to_owned()]);
        assert_eq!(
            load("", &Env::default()).map(|c| c.policy.approval).ok(),
            Some(Approval::Never)
        );
        for (text, key) in [
            ("[policy]\napproval = \"sometimes\"\n", "policy.approval"),
            ("[policy]\nallow_paths = [\"  \"]\n", "policy.allow_paths"),
        ] {
            match load(text, &Env::default()) {
                Err(ConfigError::Invalid { key: k, .. }) => assert_eq!(k.as_deref(), Some(key)),
                other => panic!("expected invalid {key}, got {other:?}"),
            }
        }
    }

    #[test]
    fn store_cache_is_small_by_default_and_bounded() {
        let c = load("", &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.store_cache_mib, crate::store::DEFAULT_CACHE_MIB);
        let c =
            load("[store]\ncache_mib = 64\n", &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.store_cache_mib, 64);
        for bad in ["0", "9000", "-1", "\"big\""] {
            match load(&format!("[store]\ncache_mib = {bad}\n"), &Env::default()) {
                Err(ConfigError::Invalid { key, .. }) => {
                    assert_eq!(key.as_deref(), Some("store.cache_mib"), "{bad}")
                }
                other => panic!("{bad}: expected invalid, got {other:?}"),
            }
        }
    }

    #[test]
    fn tool_output_budgets_default_read_and_check() {
        let c = load("", &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (c.tool_output.default_tokens, c.tool_output.max_tokens),
            (8_000, 64_000)
        );
        let text = "[runtime]\ndefault_tool_output_tokens = 1000\nmax_tool_output_tokens = 2000\n";
        let c = load(text, &Env::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (c.tool_output.default_tokens, c.tool_output.max_tokens),
            (1_000, 2_000)
        );
        let c = load(text, &env(&[("HOLON_MAX_TOOL_OUTPUT_TOKENS", "1500")]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.tool_output.max_tokens, 1_500, "the environment wins");
        // A cap below the default pulls the default down with it.
        let c = load("[runtime]\nmax_tool_output_tokens = 100\n", &Env::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.tool_output.default_tokens, 100);
        assert!(load(
            "[runtime]\ndefault_tool_output_tokens = 0\n",
            &Env::default()
        )
        .is_err());
        assert!(load(
            "[runtime]\ndefault_tool_output_tokens = 5000\nmax_tool_output_tokens = 10\n",
            &Env::default()
        )
        .is_err());
        assert!(load("", &env(&[("HOLON_DEFAULT_TOOL_OUTPUT_TOKENS", "lots")])).is_err());
        // The budget bounds what a call may ask for.
        let b = crate::runtime::tools::ToolOutputBudget {
            default_tokens: 10,
            max_tokens: 20,
        };
        assert_eq!(
            (b.bytes(None), b.bytes(Some(1_000)), b.bytes(Some(0))),
            (40, 80, 4)
        );
    }

    #[test]
    fn exec_env_passthrough_is_read_and_checked() {
        let c = load(
            "[exec]\nenv_passthrough = [\"GITHUB_TOKEN\"]\n",
            &Env::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.exec_env_passthrough, ["GITHUB_TOKEN"]);
        assert!(load("", &Env::default()).is_ok_and(|c| c.exec_env_passthrough.is_empty()));
        match load("[exec]\nenv_passthrough = [\"A=B\"]\n", &Env::default()) {
            Err(ConfigError::Invalid { key, .. }) => {
                assert_eq!(key.as_deref(), Some("exec.env_passthrough"))
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }
}
