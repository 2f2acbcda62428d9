//! A model's endpoint looked at from the outside, for `holon doctor`: how
//! its ref resolves (wire, URL, streaming, credential), what its transport
//! promises (a reasoning setting, images), and one probe: a `GET` of the
//! endpoint's model list with its credential, which says whether it is
//! reachable and whether it takes the key. Nothing is sent to a model;
//! the key travels only in its header, marked sensitive.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::classify::scrub_url;
use super::registry::{resolve_endpoint, ProviderEndpointConfig, ResolvedEndpoint};
use super::wire::{Streaming, WireFormat};

/// What a probe of an endpoint found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Probe {
    /// It answered the model list with a success: reachable, and the
    /// credential (if any) not refused (an endpoint whose list needs no
    /// key says nothing of it).
    Accepted {
        status: u16,
        ms: u64,
    },
    /// It answered 401 or 403: reachable, the credential refused.
    Refused {
        status: u16,
        ms: u64,
    },
    /// It answered something else (many compatible servers serve no model
    /// list): reachable, the credential untested; a 5xx is a server that
    /// is failing.
    Answered {
        status: u16,
        ms: u64,
    },
    Unreachable {
        reason: String,
        ms: u64,
    },
}

/// One model of the chain, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCheck {
    pub model_ref: String,
    /// `default` or `fallback`.
    pub role: &'static str,
    /// Why it cannot be used at all (no credential, an unknown provider),
    /// when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireFormat>,
    /// The request URL, without any secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<Streaming>,
    /// The variable its key comes from (`None`: it needs none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_env: Option<String>,
    /// Whether a reasoning setting is sent to it.
    pub takes_reasoning_effort: bool,
    /// Whether tools' images are sent to it.
    pub images: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
    /// Its window and where the size comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowReport>,
}

impl ModelCheck {
    /// Usable: it resolved and did not refuse its credential or go
    /// unanswered.
    pub fn healthy(&self) -> bool {
        self.problem.is_none()
            && match self.probe {
                Some(Probe::Accepted { .. }) => true,
                Some(Probe::Answered { status, .. }) => status < 500,
                _ => false,
            }
    }
}

/// A model's window and where its size comes from, as `holon models` and
/// `holon doctor` say it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowReport {
    pub tokens: u64,
    pub source: crate::model::context::WindowSource,
    /// How it was learned or why the server's word was not used
    /// (`ollama /api/show`; `its answer is not JSON …`), when a server
    /// was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl WindowReport {
    /// In words: `40960 tokens (the model's server said, by ollama /api/show)`.
    pub fn describe(&self) -> String {
        use crate::model::context::WindowSource as W;
        let source = match self.source {
            W::Environment => "HOLON_CONTEXT_WINDOW",
            W::ModelConfig => "[model] context_window",
            W::ProviderConfig => "[providers.*] context_window",
            W::Server => "the model's server said",
            W::KnownModel => "the built-in catalog",
            W::Default => "the default: nothing says",
        };
        match &self.detail {
            Some(d) if self.source == crate::model::context::WindowSource::Server => {
                format!("{} tokens ({source}, by {d})", self.tokens)
            }
            Some(d) => format!("{} tokens ({source}; its server: {d})", self.tokens),
            None => format!("{} tokens ({source})", self.tokens),
        }
    }
}

/// `model_ref`'s window in the order the runtime takes it: the operator's
/// window (`operator`), its endpoint's `context_window`, what its server
/// says (asked now, bounded), the catalog, the default.
pub async fn window(
    model_ref: &str,
    env: &BTreeMap<String, String>,
    endpoints: &BTreeMap<String, ProviderEndpointConfig>,
    operator: Option<(u64, crate::model::context::WindowSource)>,
    client: &reqwest::Client,
) -> WindowReport {
    use crate::model::context::WindowSource;
    if let Some((tokens, source)) = operator {
        return WindowReport {
            tokens,
            source,
            detail: None,
        };
    }
    let own = super::registry::window_of(model_ref, endpoints);
    if own.source == WindowSource::ProviderConfig {
        return WindowReport {
            tokens: own.window,
            source: own.source,
            detail: None,
        };
    }
    let asked = match resolve_endpoint(model_ref, env, endpoints) {
        Ok(endpoint) => match super::window_ask::window_ask_for(&endpoint) {
            Some(ask) => {
                let answer = super::window_ask::ask_window(client, &endpoint, &ask).await;
                Some((ask.how(), answer))
            }
            None => None,
        },
        Err(_) => None,
    };
    match asked {
        Some((how, Ok(Some(tokens)))) => WindowReport {
            tokens,
            source: WindowSource::Server,
            detail: Some(how.to_owned()),
        },
        Some((how, Ok(None))) => WindowReport {
            tokens: own.window,
            source: own.source,
            detail: Some(format!("{how} named no window")),
        },
        Some((how, Err(why))) => WindowReport {
            tokens: own.window,
            source: own.source,
            detail: Some(format!("{how}: {why}")),
        },
        None => WindowReport {
            tokens: own.window,
            source: own.source,
            detail: None,
        },
    }
}

/// Check `model_ref` (in `role`) as the runtime would resolve it from
/// `env` and `endpoints`, probing it within `timeout`.
pub async fn check(
    model_ref: &str,
    role: &'static str,
    env: &BTreeMap<String, String>,
    endpoints: &BTreeMap<String, ProviderEndpointConfig>,
    client: &reqwest::Client,
    timeout: Duration,
) -> ModelCheck {
    let endpoint = match resolve_endpoint(model_ref, env, endpoints) {
        Ok(e) => e,
        Err(failure) => {
            return ModelCheck {
                model_ref: model_ref.to_owned(),
                role,
                problem: Some(failure.artifact.summary),
                wire: None,
                url: None,
                streaming: None,
                credential_env: None,
                takes_reasoning_effort: false,
                images: false,
                probe: None,
                window: None,
            }
        }
    };
    // No usable ChatGPT sign-in is a credential problem, said as such;
    // one that is usable goes with the probe.
    let mut signed_in = None;
    if let Some(sign_in) = &endpoint.codex {
        match sign_in.credentials(client).await {
            Ok(credentials) => signed_in = Some(credentials),
            Err(e) => {
                return ModelCheck {
                    model_ref: model_ref.to_owned(),
                    role,
                    problem: Some(e.message),
                    wire: Some(endpoint.wire),
                    url: Some(scrub_url(&endpoint.url())),
                    streaming: Some(endpoint.streaming),
                    credential_env: None,
                    takes_reasoning_effort: endpoint.takes_reasoning_effort(),
                    images: endpoint.images,
                    probe: None,
                    window: None,
                }
            }
        }
    }
    let probe = probe(&endpoint, client, timeout, signed_in.as_ref()).await;
    ModelCheck {
        model_ref: model_ref.to_owned(),
        role,
        problem: None,
        wire: Some(endpoint.wire),
        url: Some(scrub_url(&endpoint.url())),
        streaming: Some(endpoint.streaming),
        credential_env: match &endpoint.codex {
            Some(_) => {
                Some("ChatGPT sign-in (holon login openai-codex, or Codex CLI's)".to_owned())
            }
            None => endpoint.api_key.as_ref().map(|k| k.env().to_owned()),
        },
        takes_reasoning_effort: endpoint.takes_reasoning_effort(),
        images: endpoint.images,
        probe: Some(probe),
        window: None,
    }
}

/// `GET` the endpoint's model list with its credential.
async fn probe(
    endpoint: &ResolvedEndpoint,
    client: &reqwest::Client,
    timeout: Duration,
    signed_in: Option<&super::codex_auth::Credentials>,
) -> Probe {
    let path = match endpoint.wire {
        WireFormat::AnthropicMessages => "/v1/models",
        WireFormat::OpenaiResponses | WireFormat::OpenaiChat => "/models",
    };
    let url = format!("{}{path}", endpoint.base_url);
    let t0 = Instant::now();
    let ms = |t0: Instant| t0.elapsed().as_millis() as u64;
    let mut request = match super::http::authorized(client.get(&url).timeout(timeout), endpoint) {
        Ok(r) => r,
        Err(reason) => return Probe::Unreachable { reason, ms: 0 },
    };
    // A ChatGPT sign-in (`check` found it usable first).
    if let Some(credentials) = signed_in {
        request = match super::http::codex_headers(request, credentials) {
            Ok(r) => r,
            Err(reason) => return Probe::Unreachable { reason, ms: 0 },
        };
    }
    match request.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            match status {
                200..=299 => Probe::Accepted { status, ms: ms(t0) },
                401 | 403 => Probe::Refused { status, ms: ms(t0) },
                _ => Probe::Answered { status, ms: ms(t0) },
            }
        }
        Err(e) => {
            // Without the URL: it is in the check already, scrubbed.
            let reason = match (e.is_timeout(), e.is_connect()) {
                (true, _) => format!("no answer within {} s", timeout.as_secs()),
                (false, true) => "the connection was refused or could not be made".to_owned(),
                (false, false) => e.without_url().to_string(),
            };
            Probe::Unreachable { reason, ms: ms(t0) }
        }
    }
}
