//! Choosing the provider for each turn from the effective configuration:
//! the agent's model override, else the default model, with the configured
//! fallbacks, resolved through the provider registry (environment
//! credentials and `[providers.<name>]` endpoints). With no model
//! configured, or one that cannot be resolved, the turn fails with a
//! failure brief that says exactly what to set.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::runtime::agent::AgentRecord;
use crate::runtime::context::ContextBudget;
use crate::runtime::host::ProviderSource;
use crate::runtime::provider::registry::{build_chain, env_snapshot};
use crate::runtime::provider::retry::RetryPolicy;
use crate::runtime::provider::{
    not_configured_failure, AttemptOutcome, BoxFuture, Provider, ProviderAttemptTimeline,
    ProviderFailure, ProviderOutcome, ProviderProgress, ProviderRequest,
};

use super::config::Config;

/// A provider that can only fail, with the reason it cannot run.
struct Unavailable {
    model_ref: String,
    failure: ProviderFailure,
    /// The configured window, when one is (else the model's own).
    window: Option<ContextBudget>,
}

impl Provider for Unavailable {
    fn model_ref(&self) -> String {
        self.model_ref.clone()
    }

    fn context_budget(&self) -> ContextBudget {
        self.window
            .unwrap_or_else(|| ContextBudget::for_model(&self.model_ref))
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

/// The runtime's provider source: one chain per effective model, built on
/// first use and reused.
pub fn provider_source(config: &Config) -> ProviderSource {
    let default = config.default_model.clone();
    let fallbacks = config.fallback_models.clone();
    let effort = config.reasoning_effort;
    let endpoints = config.providers.clone();
    let env: BTreeMap<String, String> = env_snapshot(&endpoints);
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
            }) as Arc<dyn Provider>;
        };
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&model) {
            return Arc::clone(p);
        }
        let provider: Arc<dyn Provider> =
            match build_chain(&model, &fallbacks, &env, &endpoints, RetryPolicy::default()) {
                Ok(chain) => {
                    let chain = chain.with_reasoning_effort(effort);
                    match window {
                        Some(budget) => Arc::new(chain.with_context_budget(budget)),
                        None => Arc::new(chain),
                    }
                }
                Err(failure) => Arc::new(Unavailable {
                    model_ref: model.clone(),
                    failure,
                    window,
                }),
            };
        cache.insert(model, Arc::clone(&provider));
        provider
    })
}
