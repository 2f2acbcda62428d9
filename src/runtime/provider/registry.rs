//! Model-ref resolution: which endpoint, wire format, credential and
//! streaming mode answer `provider/model`, and building the
//! [`ProviderChain`] for a default model plus fallbacks.
//!
//! Resolution is a pure function of (model ref, environment snapshot,
//! endpoint configs): [`resolve_endpoint`] never reads the process
//! environment; [`env_snapshot`] is the one place that does. Configured
//! `[providers.<name>]` entries win over the built-in presets of the same
//! name. Failures are fail-closed and name what to set: a missing
//! credential is `NotConfigured` naming the variable; an unknown provider id
//! is `UnsupportedTransport`. `openai-codex/*` carries a ChatGPT sign-in
//! (`codex_auth`) instead of a key.
//! API keys live only in [`ApiKey`], whose `Debug` never shows the value.

#![allow(
    clippy::result_large_err,
    reason = "ProviderFailure is the crate-wide failure envelope; resolution is a cold path"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::classify::scrub_url;
use super::failure::config_failure;
use super::http::HttpTransport;
use super::retry::{ChainCandidate, ProviderChain, RetryPolicy};
use super::wire::{Streaming, WireFormat};
use super::{FailureKind, ModelRef, ProviderFailure, ReasoningEffort};
use crate::model::context::ContextBudget;
use crate::model::context::WindowSource;

pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
pub const OLLAMA_DEFAULT_HOST: &str = "127.0.0.1:11434";
/// Built-in provider ids, in documentation order.
pub const BUILTIN_PROVIDERS: [&str; 5] = [
    "openai",
    "anthropic",
    "ollama",
    "openrouter",
    "openai-codex",
];

/// One `[providers.<name>]` entry of config.toml: another endpoint speaking
/// one of the supported wire formats.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEndpointConfig {
    /// e.g. `https://api.together.xyz/v1` (for `openai_chat` and
    /// `openai_responses` the API root that holds `/chat/completions` or
    /// `/responses`; for `anthropic_messages` the root above `/v1`).
    pub base_url: String,
    /// The environment variable holding the API key; none means no auth.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Required, but for `openai-codex` (always the Codex Responses wire).
    #[serde(default)]
    pub wire: Option<WireFormat>,
    /// `on` / `off`; defaults per wire format (see [`WireFormat::default_streaming`]).
    #[serde(default)]
    pub streaming: Option<Streaming>,
    /// The models' context window in tokens (else the built-in table, else
    /// 128k).
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The reasoning effort this endpoint's models are asked for. Set
    /// here, it is always sent (the operator says the endpoint takes it);
    /// `[model] reasoning_effort` is sent only where it is known to be.
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Whether its models take images in tool results (default true; a
    /// model without vision refuses every request that carries one).
    #[serde(default)]
    pub images: Option<bool>,
}

/// An API key and the variable it came from. `Debug` shows only the name.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    env: String,
    value: String,
}

impl ApiKey {
    pub fn new(env: impl Into<String>, value: impl Into<String>) -> ApiKey {
        ApiKey {
            env: env.into(),
            value: value.into(),
        }
    }

    /// The variable the key was read from (safe to show).
    pub fn env(&self) -> &str {
        &self.env
    }

    /// The secret itself: for request headers and redaction only.
    pub(crate) fn expose(&self) -> &str {
        &self.value
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({}=[redacted])", self.env)
    }
}

/// Everything a transport needs for one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEndpoint {
    pub model_ref: ModelRef,
    pub wire: WireFormat,
    /// API root without trailing slash.
    pub base_url: String,
    /// Where the base URL came from (`OLLAMA_HOST`, `[providers.x] base_url`,
    /// `built-in default`), for operator hints.
    pub base_url_source: String,
    pub api_key: Option<ApiKey>,
    pub streaming: Streaming,
    /// The reasoning effort requests ask for.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Whether requests may carry tools' images.
    pub images: bool,
    /// `openai-codex`: the ChatGPT sign-in its requests carry instead of a
    /// key, and the Codex backend's request shape.
    pub codex: Option<super::codex_auth::CodexSignIn>,
}

impl ResolvedEndpoint {
    /// Whether this endpoint is known to accept a reasoning setting it was
    /// not configured with: Responses (`reasoning`), Messages (`thinking`),
    /// and Chat Completions only at OpenAI itself. Elsewhere an unknown
    /// parameter can be a 400, so it is left out.
    pub fn takes_reasoning_effort(&self) -> bool {
        match self.wire {
            WireFormat::OpenaiResponses | WireFormat::AnthropicMessages => true,
            WireFormat::OpenaiChat => {
                self.model_ref.provider == "openai"
                    || self.base_url.starts_with(OPENAI_DEFAULT_BASE_URL)
            }
        }
    }

    /// Apply the global default effort where none is configured and the
    /// endpoint takes it.
    pub fn default_reasoning_effort(&mut self, effort: Option<ReasoningEffort>) {
        if self.reasoning_effort.is_none() && self.takes_reasoning_effort() {
            self.reasoning_effort = effort;
        }
    }

    /// The full request URL for this wire format.
    pub fn url(&self) -> String {
        let path = match self.wire {
            WireFormat::OpenaiResponses => "/responses",
            WireFormat::AnthropicMessages => "/v1/messages",
            WireFormat::OpenaiChat => "/chat/completions",
        };
        format!("{}{path}", self.base_url)
    }
}

fn lookup<'e>(env: &'e BTreeMap<String, String>, name: &str) -> Option<&'e str> {
    env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// The OpenAI-compatible API root for an `OLLAMA_HOST` value, read the way
/// Ollama reads it: `host`, `host:port`, or a URL; no scheme means `http`
/// with port 11434, `http://`/`https://` without a port mean 80/443; the
/// bind-all address `0.0.0.0` means loopback. `/v1` is appended.
pub fn ollama_base_url(host: Option<&str>) -> String {
    let raw = host
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .unwrap_or(OLLAMA_DEFAULT_HOST);
    let (scheme, rest, default_port) = match raw.split_once("://") {
        None => ("http", raw, "11434"),
        Some(("https", rest)) => ("https", rest, "443"),
        Some(("http", rest)) => ("http", rest, "80"),
        Some((scheme, rest)) => (scheme, rest, "11434"),
    };
    let (hostport, path) = match rest.split_once('/') {
        Some((hp, p)) => (hp, p.trim_end_matches('/')),
        None => (rest, ""),
    };
    let (host, port) = split_host_port(hostport);
    let host = match host {
        "" | "0.0.0.0" => "127.0.0.1",
        "[::]" => "[::1]",
        h => h,
    };
    let port = port.unwrap_or(default_port);
    let mut url = format!("{scheme}://{host}:{port}");
    if !path.is_empty() {
        url.push('/');
        url.push_str(path);
    }
    if !url.ends_with("/v1") {
        url.push_str("/v1");
    }
    url
}

fn split_host_port(hostport: &str) -> (&str, Option<&str>) {
    if hostport.starts_with('[') {
        return match hostport.split_once("]:") {
            Some((h, p)) => (&hostport[..h.len() + 1], Some(p)),
            None => (hostport, None),
        };
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (hostport, None),
    }
}

fn validated_base(
    model_ref: &ModelRef,
    base: &str,
    source: &str,
) -> Result<String, ProviderFailure> {
    let base = base.trim().trim_end_matches('/').to_owned();
    match reqwest::Url::parse(&base) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(base),
        Ok(_) | Err(_) => Err(config_failure(
            FailureKind::NotConfigured,
            model_ref,
            format!(
                "{model_ref}: base URL `{}` (from {source}) is not a valid http(s) URL; fix {source}",
                scrub_url(&base)
            ),
            [("base_url_source", source.to_owned())],
        )),
    }
}

fn required_key(
    model_ref: &ModelRef,
    env: &BTreeMap<String, String>,
    var: &str,
) -> Result<ApiKey, ProviderFailure> {
    match lookup(env, var) {
        Some(value) => Ok(ApiKey::new(var, value)),
        None => Err(config_failure(
            FailureKind::NotConfigured,
            model_ref,
            format!(
                "{model_ref}: {var} is not set; export {var} (or choose another model with HOLON_MODEL)"
            ),
            [("missing_env", var.to_owned())],
        )),
    }
}

fn from_config(
    model_ref: ModelRef,
    name: &str,
    config: &ProviderEndpointConfig,
    env: &BTreeMap<String, String>,
) -> Result<ResolvedEndpoint, ProviderFailure> {
    let source = format!("[providers.{name}] base_url");
    let base_url = validated_base(&model_ref, &config.base_url, &source)?;
    if model_ref.provider == "openai-codex" {
        let mut endpoint = codex(model_ref, base_url, source, config.images, env);
        endpoint.reasoning_effort = config.reasoning_effort;
        return Ok(endpoint);
    }
    let Some(wire) = config.wire else {
        return Err(config_failure(
            FailureKind::NotConfigured,
            &model_ref,
            format!(
                "[providers.{name}] has no `wire`: say openai_responses, openai_chat or \
                 anthropic_messages"
            ),
            [],
        ));
    };
    let api_key = match config.api_key_env.as_deref().map(str::trim) {
        Some(var) if !var.is_empty() => Some(required_key(&model_ref, env, var)?),
        Some(_) | None => None,
    };
    Ok(ResolvedEndpoint {
        wire,
        base_url,
        base_url_source: source,
        api_key,
        streaming: config.streaming.unwrap_or(wire.default_streaming()),
        reasoning_effort: config.reasoning_effort,
        images: config.images.unwrap_or(true),
        model_ref,
        codex: None,
    })
}

/// `openai-codex/*`: the Codex backend's Responses stream, signed in with
/// ChatGPT (no key).
fn codex(
    model_ref: ModelRef,
    base_url: String,
    base_url_source: String,
    images: Option<bool>,
    env: &BTreeMap<String, String>,
) -> ResolvedEndpoint {
    ResolvedEndpoint {
        wire: WireFormat::OpenaiResponses,
        base_url,
        base_url_source,
        api_key: None,
        // The backend only streams.
        streaming: Streaming::On,
        reasoning_effort: None,
        images: images.unwrap_or(true),
        model_ref,
        codex: Some(super::codex_auth::CodexSignIn::from_env(env)),
    }
}

fn builtin(
    model_ref: ModelRef,
    wire: WireFormat,
    base: (&str, &str),
    key_var: Option<&str>,
    env: &BTreeMap<String, String>,
) -> Result<ResolvedEndpoint, ProviderFailure> {
    let (base, source) = base;
    let base_url = validated_base(&model_ref, base, source)?;
    let api_key = match key_var {
        Some(var) => Some(required_key(&model_ref, env, var)?),
        None => None,
    };
    Ok(ResolvedEndpoint {
        wire,
        base_url,
        base_url_source: source.to_owned(),
        api_key,
        streaming: wire.default_streaming(),
        reasoning_effort: None,
        images: true,
        model_ref,
        codex: None,
    })
}

/// Resolves one model ref. Pure: `env` is a snapshot (see [`env_snapshot`]).
pub fn resolve_endpoint(
    model_ref: &str,
    env: &BTreeMap<String, String>,
    endpoints: &BTreeMap<String, ProviderEndpointConfig>,
) -> Result<ResolvedEndpoint, ProviderFailure> {
    let parsed = ModelRef::parse(model_ref.trim()).map_err(|msg| {
        let unknown = ModelRef {
            provider: String::new(),
            model: model_ref.to_owned(),
        };
        config_failure(FailureKind::NotConfigured, &unknown, msg, [])
    })?;
    if let Some(config) = endpoints.get(&parsed.provider) {
        let name = parsed.provider.clone();
        return from_config(parsed, &name, config, env);
    }
    let default_source = "built-in default";
    match parsed.provider.as_str() {
        "openai" => {
            let base = match lookup(env, "OPENAI_BASE_URL") {
                Some(b) => (b, "OPENAI_BASE_URL"),
                None => (OPENAI_DEFAULT_BASE_URL, default_source),
            };
            builtin(
                parsed,
                WireFormat::OpenaiResponses,
                base,
                Some("OPENAI_API_KEY"),
                env,
            )
        }
        "anthropic" => {
            let base = match lookup(env, "ANTHROPIC_BASE_URL") {
                Some(b) => (b, "ANTHROPIC_BASE_URL"),
                None => (ANTHROPIC_DEFAULT_BASE_URL, default_source),
            };
            builtin(
                parsed,
                WireFormat::AnthropicMessages,
                base,
                Some("ANTHROPIC_API_KEY"),
                env,
            )
        }
        "ollama" => {
            let base = ollama_base_url(lookup(env, "OLLAMA_HOST"));
            let source = match lookup(env, "OLLAMA_HOST") {
                Some(_) => "OLLAMA_HOST",
                None => "OLLAMA_HOST (unset, default 127.0.0.1:11434)",
            };
            builtin(parsed, WireFormat::OpenaiChat, (&base, source), None, env)
        }
        "openrouter" => builtin(
            parsed,
            WireFormat::OpenaiChat,
            (OPENROUTER_BASE_URL, default_source),
            Some("OPENROUTER_API_KEY"),
            env,
        ),
        "openai-codex" => {
            let base = super::codex_auth::BACKEND.to_owned();
            Ok(codex(parsed, base, default_source.to_owned(), None, env))
        }
        other => Err(config_failure(
            FailureKind::UnsupportedTransport,
            &parsed,
            format!(
                "{parsed}: no transport for provider `{other}`; built-in providers are {}, \
                 or add [providers.{other}] with base_url, wire and api_key_env to config.toml",
                BUILTIN_PROVIDERS.join(", ")
            ),
            [],
        )),
    }
}

/// The environment variables resolution may read, captured once.
pub fn env_snapshot(
    endpoints: &BTreeMap<String, ProviderEndpointConfig>,
) -> BTreeMap<String, String> {
    let builtin = [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OLLAMA_HOST",
        "OPENROUTER_API_KEY",
        // Where a ChatGPT sign-in is (`openai-codex`).
        "CODEX_HOME",
        "HOME",
        "HOLON_CODEX_ISSUER",
    ];
    let configured = endpoints.values().filter_map(|c| c.api_key_env.as_deref());
    builtin
        .into_iter()
        .chain(configured)
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_owned(), v)))
        .collect()
}

/// The shared HTTP client (rustls, connect timeout bounded by the policy).
pub fn http_client(policy: &RetryPolicy) -> Result<reqwest::Client, ProviderFailure> {
    // The process's TLS provider: ring (once; a second install is
    // refused and harmless).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(policy.request_timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("holon/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| {
            let unknown = ModelRef {
                provider: String::new(),
                model: String::new(),
            };
            config_failure(
                FailureKind::NotConfigured,
                &unknown,
                format!("could not initialise the HTTP client (TLS): {e}"),
                [],
            )
        })
}

/// Builds the provider for a turn: `default` then `fallbacks` (duplicates
/// dropped), each resolved against `env` and `endpoints`. Candidates that
/// fail to resolve stay in the chain as rejected (recorded in every
/// timeline); it is an error only when no candidate resolves.
pub fn build_chain(
    default: &str,
    fallbacks: &[String],
    env: &BTreeMap<String, String>,
    endpoints: &BTreeMap<String, ProviderEndpointConfig>,
    policy: RetryPolicy,
) -> Result<ProviderChain, ProviderFailure> {
    let client = http_client(&policy)?;
    build_chain_with_client(default, fallbacks, env, endpoints, policy, client)
}

/// A model's window: its endpoint's `context_window`, else the built-in
/// table.
pub fn window_of(
    model_ref: &str,
    endpoints: &BTreeMap<String, ProviderEndpointConfig>,
) -> ContextBudget {
    let provider = model_ref.split_once('/').map_or(model_ref, |(p, _)| p);
    match endpoints.get(provider).and_then(|e| e.context_window) {
        Some(w) => ContextBudget::new(w, WindowSource::ProviderConfig),
        None => ContextBudget::for_model(model_ref),
    }
}

/// The models a chain tries, in order: `default`, then each fallback not
/// already in it; blank refs are left out.
pub fn chain_refs(default: &str, fallbacks: &[String]) -> Vec<String> {
    let mut refs: Vec<String> = Vec::with_capacity(1 + fallbacks.len());
    for r in std::iter::once(default).chain(fallbacks.iter().map(String::as_str)) {
        let r = r.trim();
        if !r.is_empty() && !refs.iter().any(|x| x == r) {
            refs.push(r.to_owned());
        }
    }
    refs
}

/// [`build_chain`] with a caller-supplied HTTP client.
pub fn build_chain_with_client(
    default: &str,
    fallbacks: &[String],
    env: &BTreeMap<String, String>,
    endpoints: &BTreeMap<String, ProviderEndpointConfig>,
    policy: RetryPolicy,
    client: reqwest::Client,
) -> Result<ProviderChain, ProviderFailure> {
    let refs = chain_refs(default, fallbacks);
    let mut candidates = Vec::with_capacity(refs.len());
    let mut rejected = Vec::new();
    for r in &refs {
        match resolve_endpoint(r, env, endpoints) {
            Ok(endpoint) => candidates.push(ChainCandidate::Ready(HttpTransport::new(
                endpoint,
                client.clone(),
            ))),
            Err(failure) => {
                rejected.push(failure.clone());
                candidates.push(ChainCandidate::Rejected {
                    model_ref: (*r).to_owned(),
                    failure,
                });
            }
        }
    }
    let any_ready = candidates.iter().any(|c| match c {
        ChainCandidate::Ready(_) => true,
        ChainCandidate::Rejected { .. } => false,
    });
    if any_ready {
        // Every model of the chain may answer: the chain fits the
        // smallest window (`ProviderChain::context_budget`).
        let windows = refs
            .iter()
            .map(|r| (r.clone(), window_of(r, endpoints)))
            .collect();
        return Ok(
            ProviderChain::new(default.trim().to_owned(), candidates, policy)
                .with_model_windows(windows),
        );
    }
    let mut iter = rejected.into_iter();
    let Some(mut first) = iter.next() else {
        return Err(super::not_configured_failure());
    };
    for other in iter {
        first.artifact.summary = format!(
            "{}; fallback {}",
            first.artifact.summary, other.artifact.summary
        );
    }
    Err(first)
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
