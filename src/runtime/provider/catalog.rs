//! The model catalog (`assets/models.toml`): context windows, output
//! limits, prices and capabilities of common models, with the operator's
//! `[pricing."PROVIDER/MODEL"]` overrides on top. Pure: the asset is
//! compiled in and parsed once.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::model::context::{ContextBudget, WindowSource, DEFAULT_WINDOW};
use crate::model::usage::TokenUsage;

const CATALOG: &str = include_str!("../../../assets/models.toml");

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    /// Reading the prompt cache; input price when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    /// Writing the prompt cache; input price when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
    pub output_per_mtok: f64,
}

impl Price {
    /// A price is a finite number of dollars, 0 or more.
    pub fn check(&self) -> Result<(), String> {
        let all = [
            Some(self.input_per_mtok),
            self.cached_input_per_mtok,
            self.cache_write_per_mtok,
            Some(self.output_per_mtok),
        ];
        match all.into_iter().flatten().all(|p| p.is_finite() && p >= 0.0) {
            true => Ok(()),
            false => Err("prices are dollars per million tokens, 0 or more".into()),
        }
    }

    /// What `usage` costs, in millionths of a dollar. Cached and
    /// cache-write tokens are parts of `input_tokens`; a report where they
    /// exceed it is read as all-cached rather than as negative input.
    pub fn cost_micro_usd(&self, usage: &TokenUsage) -> u64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let fresh = usage.input_tokens - cached - written;
        let dollars_times_million = fresh as f64 * self.input_per_mtok
            + cached as f64 * self.cached_input_per_mtok.unwrap_or(self.input_per_mtok)
            + written as f64 * self.cache_write_per_mtok.unwrap_or(self.input_per_mtok)
            + usage.output_tokens as f64 * self.output_per_mtok;
        // Tokens x $/Mtok is already millionths of a dollar.
        dollars_times_million.round() as u64
    }
}

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogModel {
    /// Only for this provider (`ollama`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A prefix of the model name.
    pub model: String,
    /// Who makes it: `openai`, `anthropic`, `google`, `deepseek`, `local`.
    pub vendor: String,
    pub context_window: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_per_mtok: Option<f64>,
    #[serde(default)]
    pub reasoning: bool,
    #[serde(default)]
    pub images: bool,
}

impl CatalogModel {
    /// Its price, when both input and output prices are listed.
    pub fn price(&self) -> Option<Price> {
        Some(Price {
            input_per_mtok: self.input_per_mtok?,
            cached_input_per_mtok: self.cached_input_per_mtok,
            cache_write_per_mtok: self.cache_write_per_mtok,
            output_per_mtok: self.output_per_mtok?,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    models: Vec<CatalogModel>,
}

/// The built-in entries, parsed once.
pub fn builtin() -> &'static [CatalogModel] {
    static MODELS: OnceLock<Vec<CatalogModel>> = OnceLock::new();
    MODELS.get_or_init(|| match toml::from_str::<CatalogFile>(CATALOG) {
        Ok(file) => file.models,
        // The asset is compiled in and held by a test; an empty catalog
        // only makes every cost unknown.
        Err(e) => {
            tracing::error!("the built-in model catalog does not parse: {e}");
            Vec::new()
        }
    })
}

/// The model name an entry matches against: after the provider, and
/// after OpenRouter's `vendor/`.
fn split(model_ref: &str) -> (&str, &str) {
    let (provider, model) = model_ref.split_once('/').unwrap_or(("", model_ref));
    (provider, model.rsplit('/').next().unwrap_or(model))
}

/// A model's window from the catalog, the one table of windows and prices.
pub fn known_window(model_ref: &str) -> Option<u64> {
    lookup(model_ref).map(|m| m.context_window)
}

impl ContextBudget {
    /// The budget of a model with no configured window: the catalog's
    /// window, else the default.
    pub fn for_model(model_ref: &str) -> ContextBudget {
        match known_window(model_ref) {
            Some(w) => ContextBudget::new(w, WindowSource::KnownModel),
            None => ContextBudget::new(DEFAULT_WINDOW, WindowSource::Default),
        }
    }
}

/// The entry for a model: among entries for its provider, else among the
/// rest, the longest matching prefix.
pub fn lookup(model_ref: &str) -> Option<&'static CatalogModel> {
    best(model_ref, |m, name| name.starts_with(&m.model))
}

/// The longest-named entry `fits` the model's name, among entries for its
/// provider first, else among the rest.
fn best(
    model_ref: &str,
    fits: impl Fn(&CatalogModel, &str) -> bool,
) -> Option<&'static CatalogModel> {
    let (provider, name) = split(model_ref);
    let among = |own: bool| {
        builtin()
            .iter()
            .filter(|m| m.provider.is_some() == own)
            .filter(|m| m.provider.as_deref().is_none_or(|p| p == provider))
            .filter(|m| fits(m, name))
            .max_by_key(|m| m.model.len())
    };
    among(true).or_else(|| among(false))
}

/// Whether what follows an entry's name is only a version of it: nothing,
/// a date (`-2025-04-14`, `-20250514`) or `-latest`. A price holds for
/// those alone: `o3-pro` is not priced as `o3`.
fn version_suffix(rest: &str) -> bool {
    let Some(v) = rest.strip_prefix('-') else {
        return rest.is_empty();
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let dashed =
        v.len() == 10 && v.split('-').map(str::len).eq([4, 2, 2]) && v.split('-').all(digits);
    v == "latest" || (v.len() == 8 && digits(v)) || dashed
}

/// The entry whose price applies to a model: its name, or a version of
/// it, among entries for its provider (a provider-wide entry prices all
/// of that provider's models), else among the rest.
pub fn priced(model_ref: &str) -> Option<&'static CatalogModel> {
    best(model_ref, |m, name| {
        (m.provider.is_some() && m.model.is_empty())
            || name
                .strip_prefix(m.model.as_str())
                .is_some_and(version_suffix)
    })
}

/// Prices: the operator's overrides (by exact `provider/model`), then the
/// catalog.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pricing {
    pub overrides: BTreeMap<String, Price>,
}

impl Pricing {
    pub fn price_of(&self, model_ref: &str) -> Option<Price> {
        let own = self.overrides.get(model_ref).copied();
        // A ChatGPT plan is not billed by the token: its rounds are not
        // priced at the API's list prices (unless the operator says so).
        if model_ref.starts_with("openai-codex/") {
            return own;
        }
        own.or_else(|| priced(model_ref).and_then(CatalogModel::price))
    }

    /// What a round of `model_ref` cost, in millionths of a dollar; `None`
    /// when its price is unknown.
    pub fn cost_micro_usd(&self, model_ref: &str, usage: &TokenUsage) -> Option<u64> {
        self.price_of(model_ref).map(|p| p.cost_micro_usd(usage))
    }
}

/// The built-in provider that serves a vendor's models, and the variable
/// holding its key (`None`: no key needed).
pub fn route(vendor: &str) -> (&'static str, Option<&'static str>) {
    match vendor {
        "openai" => ("openai", Some("OPENAI_API_KEY")),
        "anthropic" => ("anthropic", Some("ANTHROPIC_API_KEY")),
        "local" => ("ollama", None),
        // Google and DeepSeek models: through OpenRouter, unless an
        // endpoint of their own is configured.
        _ => ("openrouter", Some("OPENROUTER_API_KEY")),
    }
}

/// Millionths of a dollar as dollars.
pub fn usd(micro: u64) -> f64 {
    micro as f64 / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, written: u64, output: u64) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            cached_input_tokens: cached,
            cache_write_tokens: written,
            reasoning_tokens: 0,
        }
    }

    #[test]
    fn the_catalog_parses_and_every_price_is_sane() {
        let models = builtin();
        assert!(models.len() > 20, "{}", models.len());
        for m in models {
            assert!(m.context_window >= 1024, "{m:?}");
            if let Some(p) = m.price() {
                p.check().unwrap_or_else(|e| panic!("{m:?}: {e}"));
            }
        }
    }

    #[test]
    fn the_longest_prefix_wins_and_a_provider_entry_first() {
        assert_eq!(lookup("openai/gpt-4.1-mini").unwrap().model, "gpt-4.1-mini");
        assert_eq!(lookup("openai/gpt-4.1").unwrap().model, "gpt-4.1");
        assert_eq!(
            lookup("openrouter/anthropic/claude-sonnet-4-5")
                .unwrap()
                .model,
            "claude-sonnet-4-5"
        );
        assert_eq!(lookup("ollama/deepseek-r1").unwrap().context_window, 8192);
        assert!(lookup("stub/e2e-model").is_none());
        // Known window, unknown price: the cost is unknown, never made up.
        let pricing = Pricing::default();
        assert!(pricing.price_of("anthropic/claude-3-opus").is_none());
        assert_eq!(
            pricing.cost_micro_usd("ollama/llama3.2", &usage(5000, 0, 0, 500)),
            Some(0)
        );
    }

    #[test]
    fn a_price_holds_for_its_model_and_dated_versions_only() {
        let p = Pricing::default();
        let input = |m: &str| p.price_of(m).map(|p| p.input_per_mtok);
        assert_eq!(input("openai/gpt-4.1-2025-04-14"), Some(2.0));
        assert_eq!(input("anthropic/claude-sonnet-4-20250514"), Some(3.0));
        assert_eq!(input("anthropic/claude-sonnet-4-5"), Some(3.0));
        assert_eq!(input("openai/o3-latest"), Some(2.0));
        // A different model that shares a prefix: its window is known, its
        // price is not guessed.
        assert_eq!(input("openai/o1-pro"), None);
        assert_eq!(
            lookup("openai/o1-pro").map(|m| m.context_window),
            Some(200_000)
        );
        assert_eq!(input("openai/gpt-4.1-turbo-x"), None);
        assert_eq!(input("ollama/qwen3:32b"), Some(0.0));
        assert!(!version_suffix("-pro") && !version_suffix("-2025-4-14") && !version_suffix("x"));
    }

    #[test]
    fn cached_and_written_tokens_are_priced_as_their_part_of_the_input() {
        let p = Price {
            input_per_mtok: 3.0,
            cached_input_per_mtok: Some(0.3),
            cache_write_per_mtok: Some(3.75),
            output_per_mtok: 15.0,
        };
        // 100 fresh x 3 + 800 cached x 0.3 + 100 written x 3.75 + 50 x 15.
        assert_eq!(p.cost_micro_usd(&usage(1000, 800, 100, 50)), 1665);
        // Absurd reports do not go negative.
        assert_eq!(p.cost_micro_usd(&usage(10, 50, 50, 0)), 3);
        let plain = Price {
            cached_input_per_mtok: None,
            cache_write_per_mtok: None,
            ..p
        };
        assert_eq!(
            plain.cost_micro_usd(&usage(1_000_000, 500_000, 0, 0)),
            3_000_000
        );
    }

    #[test]
    fn an_override_beats_the_catalog_for_its_model_only() {
        let mut pricing = Pricing::default();
        let mine = Price {
            input_per_mtok: 1.0,
            cached_input_per_mtok: None,
            cache_write_per_mtok: None,
            output_per_mtok: 1.0,
        };
        pricing.overrides.insert("openai/gpt-4.1".into(), mine);
        assert_eq!(pricing.price_of("openai/gpt-4.1"), Some(mine));
        assert_eq!(
            pricing
                .price_of("openai/gpt-4.1-mini")
                .map(|p| p.input_per_mtok),
            Some(0.4)
        );
        assert!(Price {
            input_per_mtok: -1.0,
            ..mine
        }
        .check()
        .is_err());
    }
}
