//! Choosing the provider for each turn from the effective configuration:
//! the agent's model override, else the default model, with the configured
//! fallbacks, resolved through the provider registry (environment
//! credentials and `[providers.<name>]` endpoints). With no model
//! configured, or one that cannot be resolved, the turn fails with a
//! failure brief that says exactly what to set.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::model::agent::AgentRecord;
use crate::model::context::ContextBudget;
use crate::model::usage::AttemptOutcome;
use crate::model::usage::ProviderAttemptTimeline;
use crate::model::BoxFuture;
use crate::runtime::handle::ProviderSource;
use crate::runtime::provider::registry::{build_chain, chain_refs, env_snapshot};
use crate::runtime::provider::retry::RetryPolicy;
use crate::runtime::provider::{
    not_configured_failure, Provider, ProviderFailure, ProviderOutcome, ProviderProgress,
    ProviderRequest,
};

use super::config::Config;

/// A provider that can only fail, with the reason it cannot run.
struct Unavailable {
    model_ref: String,
    failure: ProviderFailure,
    /// The configured window, when one is (else the model's own).
    window: Option<ContextBudget>,
    /// The models it would have fallen back to.
    fallbacks: Vec<String>,
}

impl Provider for Unavailable {
    fn model_ref(&self) -> String {
        self.model_ref.clone()
    }

    fn context_budget(&self) -> ContextBudget {
        self.window
            .unwrap_or_else(|| ContextBudget::for_model(&self.model_ref))
    }

    fn fallback_models(&self) -> Vec<String> {
        self.fallbacks.clone()
    }

    fn round<'a>(
        &'a self,
        _request: &'a ProviderRequest,
        _progress: &'a (dyn Fn(ProviderProgress) + Send + Sync),
    ) -> BoxFuture<'a, ProviderOutcome> {
        Box::pin(async move {
            ProviderOutcome {
                result: Err(self.failure.clone()),
                timeline: ProviderAttemptTimeline::single_attempt(
                    &self.model_ref,
                    AttemptOutcome::FailFastAborted,
                    Some(self.failure.kind),
                    None,
                ),
            }
        })
    }
}

/// The environment providers resolve against, with where Holon keeps its
/// own ChatGPT sign-in (`openai-codex`).
pub fn provider_env(config: &Config) -> BTreeMap<String, String> {
    let mut env = env_snapshot(&config.providers);
    let file = config.codex_auth_file();
    env.insert(
        crate::runtime::provider::codex_auth::HOLON_AUTH_FILE.to_owned(),
        file.display().to_string(),
    );
    env
}

/// The runtime's provider source: one chain per effective model, built on
/// first use and reused.
pub fn provider_source(config: &Config) -> ProviderSource {
    let default = config.default_model.clone();
    let fallbacks = config.fallback_models.clone();
    let effort = config.reasoning_effort;
    let endpoints = config.providers.clone();
    let env: BTreeMap<String, String> = provider_env(config);
    let window = config
        .context_window
        .map(|(w, source)| ContextBudget::new(w, source));
    let cache: Mutex<HashMap<String, Arc<dyn Provider>>> = Mutex::default();
    Arc::new(move |agent: &AgentRecord| {
        let Some(model) = agent.model_override.clone().or_else(|| default.clone()) else {
            return Arc::new(Unavailable {
                model_ref: String::new(),
                failure: not_configured_failure(),
                window,
                fallbacks: Vec::new(),
            }) as Arc<dyn Provider>;
        };
        let own_effort = agent.reasoning_effort_override;
        let key = match own_effort {
            Some(e) => format!("{model}@{}", e.as_str()),
            None => model.clone(),
        };
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&key) {
            return Arc::clone(p);
        }
        let provider: Arc<dyn Provider> =
            match build_chain(&model, &fallbacks, &env, &endpoints, RetryPolicy::default()) {
                Ok(chain) => {
                    let mut chain = chain.with_reasoning_effort(effort);
                    if let Some(own) = own_effort {
                        chain = chain.with_agent_effort(own);
                    }
                    match window {
                        Some(budget) => Arc::new(chain.with_context_budget(budget)),
                        None => Arc::new(chain),
                    }
                }
                Err(failure) => Arc::new(Unavailable {
                    model_ref: model.clone(),
                    failure,
                    window,
                    fallbacks: chain_refs(&model, &fallbacks).into_iter().skip(1).collect(),
                }),
            };
        cache.insert(key, Arc::clone(&provider));
        provider
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::usage::ReasoningEffort;

    fn config(text: &str) -> Config {
        let env = crate::app::config::Env::default();
        Config::from_parts(std::path::Path::new("/h/config.toml"), Some(text), &env).unwrap()
    }

    #[test]
    fn an_agents_own_effort_beats_the_configured_one_and_gets_its_own_chain() {
        let c = config(
            "[model]\ndefault = \"local/m\"\nreasoning_effort = \"low\"\n\n[providers.local]\n\
             base_url = \"http://127.0.0.1:9/v1\"\nwire = \"openai_responses\"\n",
        );
        let source = provider_source(&c);
        let mut agent = AgentRecord::new("a", String::new());
        assert_eq!(
            source(&agent).reasoning_effort(),
            Some(ReasoningEffort::Low)
        );
        agent.reasoning_effort_override = Some(ReasoningEffort::High);
        assert_eq!(
            source(&agent).reasoning_effort(),
            Some(ReasoningEffort::High)
        );
        let plain = AgentRecord::new("b", String::new());
        assert_eq!(
            source(&plain).reasoning_effort(),
            Some(ReasoningEffort::Low),
            "another agent keeps the configured effort"
        );
    }
}
