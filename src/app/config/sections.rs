//! `Config::from_parts`, one section at a time: each `[section]` of the
//! file (with the variables that override it) is read and checked by a
//! function of its own, which reports a bad value at its dotted key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::super::config_checks::{listen_setting, tool_output_budget, validate_model_ref};
use super::{
    AgentsSection, BudgetSection, ConfigError, ConsoleSection, Env, ExecSection, McpSection,
    ModelSection, NotifyMethod, PolicySection, RuntimeSection, ServerSection, Source, StoreSection,
    DEFAULT_AGENT, MAX_BACKUP_HOURS, MAX_BACKUP_KEEP, MAX_CACHE_MIB,
};
use crate::model::context::{check_window, WindowSource};
use crate::model::ids::validate_agent_id;
use crate::runtime::provider::registry::ProviderEndpointConfig;

/// Where a bad value was found: its dotted key, located in the file.
pub(super) type AtKey<'a> = &'a dyn Fn(&str, String) -> ConfigError;

/// An environment variable's value that does not check.
fn env_error(var: &'static str) -> impl Fn(String) -> ConfigError {
    move |message| ConfigError::Env { var, message }
}

/// `[runtime]`: the default agent and the tool-output budgets.
pub(super) struct RuntimeSettings {
    pub default_agent: String,
    pub default_agent_source: Source,
    pub tool_output: crate::runtime::settings::limits::ToolOutputBudget,
}

impl RuntimeSection {
    pub(super) fn settle(&self, env: &Env, at_key: AtKey) -> Result<RuntimeSettings, ConfigError> {
        let (default_agent, default_agent_source) =
            match (env.get("HOLON_AGENT_ID"), self.default_agent.clone()) {
                (Some(v), _) => {
                    validate_agent_id(v).map_err(env_error("HOLON_AGENT_ID"))?;
                    (v.to_owned(), Source::Environment)
                }
                (None, Some(v)) => {
                    validate_agent_id(&v).map_err(|m| at_key("runtime.default_agent", m))?;
                    (v, Source::ConfigFile)
                }
                (None, None) => (DEFAULT_AGENT.to_owned(), Source::Default),
            };
        Ok(RuntimeSettings {
            default_agent,
            default_agent_source,
            tool_output: tool_output_budget(self, env, at_key)?,
        })
    }
}

/// `[model]`: the default model, its fallbacks and its window.
pub(super) struct ModelSettings {
    pub default_model: Option<String>,
    pub fallback_models: Vec<String>,
    pub context_window: Option<(u64, WindowSource)>,
    pub reasoning_effort: Option<crate::model::usage::ReasoningEffort>,
}

impl ModelSection {
    pub(super) fn settle(self, env: &Env, at_key: AtKey) -> Result<ModelSettings, ConfigError> {
        let default_model = match env.get("HOLON_MODEL") {
            Some(v) => {
                validate_model_ref(v).map_err(env_error("HOLON_MODEL"))?;
                Some(v.to_owned())
            }
            None => match self.default {
                Some(v) => {
                    validate_model_ref(&v).map_err(|m| at_key("model.default", m))?;
                    Some(v)
                }
                None => None,
            },
        };
        let fallback_models = self.fallbacks.unwrap_or_default();
        for m in &fallback_models {
            validate_model_ref(m).map_err(|msg| at_key("model.fallbacks", msg))?;
        }
        let context_window = match (env.get("HOLON_CONTEXT_WINDOW"), self.context_window) {
            (Some(v), _) => {
                let n = v.trim().parse::<u64>().map_err(|_| ConfigError::Env {
                    var: "HOLON_CONTEXT_WINDOW",
                    message: format!("`{v}` is not a number of tokens"),
                })?;
                let n = check_window(n).map_err(env_error("HOLON_CONTEXT_WINDOW"))?;
                Some((n, WindowSource::Environment))
            }
            (None, Some(n)) => Some((
                check_window(n).map_err(|m| at_key("model.context_window", m))?,
                WindowSource::ModelConfig,
            )),
            (None, None) => None,
        };
        Ok(ModelSettings {
            default_model,
            fallback_models,
            context_window,
            reasoning_effort: self.reasoning_effort,
        })
    }
}

/// `[providers.NAME]`: a window in range, and a wire for every provider
/// but the Codex backend, whose wire is fixed.
pub(super) fn check_providers(
    providers: &BTreeMap<String, ProviderEndpointConfig>,
    at_key: AtKey,
) -> Result<(), ConfigError> {
    for (name, p) in providers {
        if let Some(n) = p.context_window {
            check_window(n).map_err(|m| at_key(&format!("providers.{name}.context_window"), m))?;
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
    Ok(())
}

/// `[pricing."PROVIDER/MODEL"]`: the operator's prices over the catalog's.
pub(super) fn pricing(
    pricing: &BTreeMap<String, crate::runtime::provider::catalog::Price>,
    at_key: AtKey,
) -> Result<crate::runtime::provider::catalog::Pricing, ConfigError> {
    for (model, price) in pricing {
        let key = format!("pricing.{model:?}");
        validate_model_ref(model).map_err(|m| at_key(&key, m))?;
        price.check().map_err(|m| at_key(&key, m))?;
    }
    Ok(crate::runtime::provider::catalog::Pricing {
        overrides: pricing.clone(),
    })
}

impl BudgetSection {
    /// `[budget]`: a day's dollars and tokens, each more than nothing.
    pub(super) fn settle(&self, at_key: AtKey) -> Result<crate::model::agent::Budget, ConfigError> {
        let daily_micro_usd = match self.daily_usd {
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
        let daily_tokens = match self.daily_tokens {
            Some(0) => {
                return Err(at_key(
                    "budget.daily_tokens",
                    "0 is out of range: give tokens a day, at least 1".into(),
                ))
            }
            other => other,
        };
        Ok(crate::model::agent::Budget {
            daily_micro_usd,
            daily_tokens,
        })
    }
}

/// `[console]`: when and how the console calls for attention.
pub(super) struct ConsoleSettings {
    pub notify: crate::ui::tui::NotifyWhen,
    pub notify_method: NotifyMethod,
}

impl ConsoleSection {
    pub(super) fn settle(&self, at_key: AtKey) -> Result<ConsoleSettings, ConfigError> {
        use crate::ui::tui::NotifyWhen;
        let notify = match (&self.notify, self.bell) {
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
        let notify_method = match self.notify_method.as_deref() {
            None | Some("bel") => NotifyMethod::Bel,
            Some("osc9") => NotifyMethod::Osc9,
            Some(v) => {
                return Err(at_key(
                    "console.notify_method",
                    format!("`{v}` is not a choice: bel or osc9"),
                ))
            }
        };
        Ok(ConsoleSettings {
            notify,
            notify_method,
        })
    }
}

/// `[store]`: its cache, scheduled backups and how long history is kept.
pub(super) struct StoreSettings {
    pub cache_mib: usize,
    pub backup_every: Option<Duration>,
    pub backup_keep: usize,
    pub retain_days: Option<u32>,
    pub quick_repair: bool,
    pub lock_wait: Duration,
}

impl StoreSection {
    pub(super) fn settle(&self, at_key: AtKey) -> Result<StoreSettings, ConfigError> {
        let cache_mib = match self.cache_mib {
            Some(n) if (1..=MAX_CACHE_MIB).contains(&n) => n,
            Some(n) => {
                return Err(at_key(
                    "store.cache_mib",
                    format!("{n} is out of range: give a size in MiB from 1 to {MAX_CACHE_MIB}"),
                ))
            }
            None => crate::store::DEFAULT_CACHE_MIB,
        };
        let backup_every = match self.backup_every_hours {
            None | Some(0) => None,
            Some(h) if h <= MAX_BACKUP_HOURS => Some(Duration::from_secs(h * 3600)),
            Some(h) => {
                return Err(at_key(
                    "store.backup_every_hours",
                    format!(
                        "{h} is out of range: give hours from 1 to {MAX_BACKUP_HOURS}, or 0 for no scheduled backups"
                    ),
                ))
            }
        };
        let backup_keep = match self.backup_keep {
            None => 3,
            Some(n) if (1..=MAX_BACKUP_KEEP).contains(&n) => n,
            Some(n) => {
                return Err(at_key(
                    "store.backup_keep",
                    format!("{n} is out of range: keep from 1 to {MAX_BACKUP_KEEP} backups"),
                ))
            }
        };
        let retain_days = match self.retain_days {
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
        Ok(StoreSettings {
            cache_mib,
            backup_every,
            backup_keep,
            retain_days,
            quick_repair: self.quick_repair.unwrap_or(false),
            lock_wait: Duration::from_secs(self.lock_wait_secs.unwrap_or(10).min(3600)),
        })
    }
}

/// `[exec] env_passthrough` and `[policy] env`: variable names, each
/// without `=` or a NUL.
pub(super) fn env_names(
    exec: &ExecSection,
    policy: &PolicySection,
    at_key: AtKey,
) -> Result<(Vec<String>, Vec<String>), ConfigError> {
    let exec_env_passthrough = exec.env_passthrough.clone().unwrap_or_default();
    let policy_env = policy.env.clone().unwrap_or_default();
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
    Ok((exec_env_passthrough, policy_env))
}

impl PolicySection {
    /// `[policy] unix_sockets`: absolute paths.
    pub(super) fn sockets(&self, at_key: AtKey) -> Result<Vec<PathBuf>, ConfigError> {
        let mut out = Vec::new();
        for path in self.unix_sockets.clone().unwrap_or_default() {
            let p = PathBuf::from(&path);
            if !p.is_absolute() || path.contains('\0') {
                return Err(at_key(
                    "policy.unix_sockets",
                    format!("`{path}` is not an absolute path to a unix socket"),
                ));
            }
            out.push(p);
        }
        Ok(out)
    }

    /// `[policy] approval_wait_secs`: at most an hour.
    pub(super) fn approval_wait(&self, at_key: AtKey) -> Result<Duration, ConfigError> {
        match self.approval_wait_secs {
            None => Ok(crate::runtime::handle::DEFAULT_APPROVAL_WAIT),
            Some(s) if s <= 3600 => Ok(Duration::from_secs(s)),
            Some(s) => Err(at_key(
                "policy.approval_wait_secs",
                format!("{s} is out of range (0 to 3600)"),
            )),
        }
    }
}

/// `[server]`: connection limits, where it listens, the trigger rate
/// and TLS.
pub(super) struct ServerSettings {
    pub limits: super::super::control::ServerLimits,
    pub listen: Option<String>,
    pub trigger_rate: super::super::access::RateLimit,
    pub tls: super::super::access::TlsSetting,
}

impl ServerSection {
    pub(super) fn settle(
        &self,
        path: &Path,
        env: &Env,
        at_key: AtKey,
    ) -> Result<ServerSettings, ConfigError> {
        let defaults = super::super::control::ServerLimits::default();
        let max_connections = self.max_connections.unwrap_or(defaults.max_connections);
        if !(1..=65_536).contains(&max_connections) {
            return Err(at_key(
                "server.max_connections",
                format!("{max_connections} is out of range (1 to 65536)"),
            ));
        }
        let idle_timeout = match self.idle_timeout_secs {
            Some(s) if !(1..=604_800).contains(&s) => {
                return Err(at_key(
                    "server.idle_timeout_secs",
                    format!("{s} is out of range (1 to 604800, a week)"),
                ))
            }
            Some(s) => Duration::from_secs(s),
            None => defaults.idle_timeout,
        };
        let http_max_connections =
            (self.http_max_connections).unwrap_or(defaults.http_max_connections);
        if !(1..=65_536).contains(&http_max_connections) {
            return Err(at_key(
                "server.http_max_connections",
                format!("{http_max_connections} is out of range (1 to 65536)"),
            ));
        }
        let limits = super::super::control::ServerLimits {
            max_connections,
            idle_timeout,
            http_max_connections,
            ..defaults
        };
        // The file's value is checked even when the variable overrides
        // it: a wrong key is a setting lost the day the variable goes.
        let filed = match &self.listen {
            Some(v) => Some(listen_setting(v).map_err(|m| at_key("server.listen", m))?),
            None => None,
        };
        let listen = match (env.get("HOLON_LISTEN"), filed) {
            (Some(v), _) => listen_setting(v).map_err(env_error("HOLON_LISTEN"))?,
            (None, Some(v)) => v,
            (None, None) => Some(super::super::access::DEFAULT_LISTEN.to_owned()),
        };
        let defaults = super::super::access::RateLimit::default();
        let burst = self.trigger_burst.unwrap_or(defaults.burst);
        if !(1..=1_000_000).contains(&burst) {
            return Err(at_key(
                "server.trigger_burst",
                format!("{burst} is out of range (1 to 1000000)"),
            ));
        }
        let per_sec = self.trigger_rate_per_sec.unwrap_or(defaults.per_sec);
        if !(per_sec > 0.0 && per_sec <= 1_000_000.0) {
            return Err(at_key(
                "server.trigger_rate_per_sec",
                format!("{per_sec} is out of range (above 0, at most 1000000)"),
            ));
        }
        Ok(ServerSettings {
            limits,
            listen,
            trigger_rate: super::super::access::RateLimit { burst, per_sec },
            tls: super::super::config_checks::tls_setting(path, self, at_key)?,
        })
    }
}

impl McpSection {
    /// `[mcp] tool_budget_share`: a share of the prompt from 0 to 1.
    pub(super) fn tool_share(&self, at_key: AtKey) -> Result<f64, ConfigError> {
        match self.tool_budget_share {
            None => Ok(crate::runtime::settings::limits::DEFAULT_MCP_TOOL_SHARE),
            Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
            Some(v) => Err(at_key(
                "mcp.tool_budget_share",
                format!("{v} is out of range (a share from 0.0 to 1.0, e.g. 0.1)"),
            )),
        }
    }
}

impl AgentsSection {
    /// `[agents]`: how deep and how many children an agent may spawn.
    pub(super) fn limits(
        &self,
        at_key: AtKey,
    ) -> Result<crate::runtime::settings::limits::AgentLimits, ConfigError> {
        let limits = crate::runtime::settings::limits::AgentLimits::default();
        let max_spawn_depth = self.max_spawn_depth.unwrap_or(limits.max_spawn_depth);
        if !(1..=8).contains(&max_spawn_depth) {
            return Err(at_key(
                "agents.max_spawn_depth",
                format!("{max_spawn_depth} is out of range (1 to 8)"),
            ));
        }
        let max_children = self.max_children.unwrap_or(limits.max_children);
        if !(1..=256).contains(&max_children) {
            return Err(at_key(
                "agents.max_children",
                format!("{max_children} is out of range (1 to 256)"),
            ));
        }
        Ok(crate::runtime::settings::limits::AgentLimits {
            max_spawn_depth,
            max_children,
        })
    }
}
