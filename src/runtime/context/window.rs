//! How big a model's context window is and how much of it the prompt may
//! use: the catalog's window, or the configured one, less a reserve for
//! the answer. It reads only the vocabulary and the model catalog, so the
//! providers can use it.

use crate::model::context::{ContextBudget, WindowSource};

/// The window assumed for a model nobody described.
pub const DEFAULT_WINDOW: u64 = 128_000;
use crate::model::context::{MAX_WINDOW, MIN_WINDOW};

/// A model's window from the model catalog (`assets/models.toml`), the
/// one table of windows and prices.
pub fn known_window(model_ref: &str) -> Option<u64> {
    crate::runtime::provider::catalog::lookup(model_ref).map(|m| m.context_window)
}

impl ContextBudget {
    pub fn new(window: u64, source: WindowSource) -> ContextBudget {
        let window = window.max(MIN_WINDOW);
        let output_reserve = (window / 8).clamp(256, 16_384);
        let prompt_budget = (window - output_reserve) * 95 / 100;
        ContextBudget {
            window,
            source,
            output_reserve,
            prompt_budget,
        }
    }

    /// The budget of a model with no configured window.
    pub fn for_model(model_ref: &str) -> ContextBudget {
        match known_window(model_ref) {
            Some(w) => ContextBudget::new(w, WindowSource::KnownModel),
            None => ContextBudget::new(DEFAULT_WINDOW, WindowSource::Default),
        }
    }

    /// Percent of the window a prompt of `tokens` uses.
    pub fn percent(&self, tokens: u64) -> u8 {
        (tokens.saturating_mul(100) / self.window.max(1)).min(255) as u8
    }
}

/// Validate a configured window.
pub fn check_window(n: u64) -> Result<u64, String> {
    if (MIN_WINDOW..=MAX_WINDOW).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{n} is out of range: give a number of tokens from {MIN_WINDOW} to {MAX_WINDOW}"
        ))
    }
}
