//! Asking a model's server how large its window is, where the server can
//! say: Ollama answers `POST /api/show` with the model's
//! `model_info["<arch>.context_length"]`, and some OpenAI-compatible
//! servers (OpenRouter, vLLM, LM Studio, Together) give a context length
//! per model in their `GET /models` list. The answer is bounded (time and
//! bytes) and checked: a window outside what configuration accepts is
//! ignored, as is anything a server says that does not parse.
//!
//! This is the pure part (the questions, parsing the answers, what is
//! kept); `window_ask::ask_window` asks.

use std::time::Duration;

use serde_json::Value;

use crate::model::context::{MAX_WINDOW, MIN_WINDOW};

/// How long one question may take, all of it.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(3);
/// The most of an answer read (a long model list is ~1 MB).
pub const MAX_ANSWER_BYTES: usize = 8 << 20;
/// How long a window a server said is trusted before asking again.
pub const KNOWN_TTL_MS: i64 = 24 * 3_600_000;
/// How long a server that answered but named no window is left alone.
pub const UNSAID_TTL_MS: i64 = 3_600_000;
/// How long a server that could not be asked (down, slow, broken answer)
/// is left alone by a running runtime (never kept in the store).
pub const FAILED_TTL_MS: i64 = 600_000;

/// A question for one model's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowAsk {
    /// Ollama's `POST {root}/api/show` with `{"model": NAME}`.
    OllamaShow { url: String, model: String },
    /// `GET {base}/models`, looking for the entry of `model`.
    ModelList { url: String, model: String },
}

impl WindowAsk {
    /// Which question, in words (`holon models`, `holon doctor`).
    pub fn how(&self) -> &'static str {
        match self {
            WindowAsk::OllamaShow { .. } => "ollama /api/show and /api/ps",
            WindowAsk::ModelList { .. } => "the server's model list",
        }
    }

    /// The URL asked: part of the cache key, so another server for the
    /// same model name is asked afresh.
    pub fn url(&self) -> &str {
        match self {
            WindowAsk::OllamaShow { url, .. } | WindowAsk::ModelList { url, .. } => url,
        }
    }
}

/// A window a server said, checked: `Err` names what was wrong with it.
fn checked(n: u64) -> Result<u64, String> {
    if (MIN_WINDOW..=MAX_WINDOW).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "it said {n} tokens, outside {MIN_WINDOW} to {MAX_WINDOW}: ignored"
        ))
    }
}

fn as_count(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

/// What an Ollama `/api/show` answer says of a model's window: the size
/// it was trained for (the one `model_info` key ending `.context_length`)
/// and the `num_ctx` its Modelfile sets, if it sets one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shown {
    pub trained: Option<u64>,
    pub num_ctx: Option<u64>,
}

impl Shown {
    /// The window Ollama serves the model with, when the answer says:
    /// the Modelfile's `num_ctx` (never more than the trained size).
    /// Without one Ollama loads the model with its own default
    /// (`OLLAMA_CONTEXT_LENGTH`), which `/api/show` does not tell: the
    /// trained size would overstate it, and Ollama cuts an overlong
    /// prompt from its start without an error.
    pub fn served(&self) -> Option<u64> {
        match (self.num_ctx, self.trained) {
            (Some(n), Some(t)) => Some(n.min(t)),
            (n, _) => n,
        }
    }
}

/// The window of a loaded model in an Ollama `/api/ps` answer (newer
/// servers report each loaded model's `context_length`).
pub fn parse_ps(body: &Value, model: &str) -> Result<Option<u64>, String> {
    let named = |m: &&Value| {
        ["name", "model"].iter().any(|k| {
            m.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|n| n == model || n.strip_suffix(":latest") == Some(model))
        })
    };
    let found = body
        .get("models")
        .and_then(Value::as_array)
        .and_then(|all| all.iter().find(named))
        .and_then(|m| m.get("context_length"))
        .and_then(as_count);
    found.map(checked).transpose()
}

/// An Ollama `/api/show` answer read: see [`Shown`]. A size it names
/// outside what configuration accepts is an error.
pub fn parse_show(body: &Value) -> Result<Shown, String> {
    let own = body
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, v)| as_count(v))
        });
    let num_ctx = body
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
    Ok(Shown {
        trained: own.map(checked).transpose()?,
        num_ctx: num_ctx.map(checked).transpose()?,
    })
}

/// The window `model`'s entry of a model list gives, under any of the
/// names servers use for it. `Ok(None)`: no entry, or none given.
pub fn parse_model_list(body: &Value, model: &str) -> Result<Option<u64>, String> {
    let entries = body
        .get("data")
        .or_else(|| body.get("models"))
        .and_then(Value::as_array);
    let Some(entry) = entries.and_then(|e| {
        e.iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
    }) else {
        return Ok(None);
    };
    const KEYS: [&str; 4] = [
        "context_length",
        "context_window",
        "max_model_len",
        "max_context_length",
    ];
    let found = KEYS
        .iter()
        .find_map(|k| entry.get(*k).and_then(as_count))
        .or_else(|| {
            entry
                .pointer("/top_provider/context_length")
                .and_then(as_count)
        });
    found.map(checked).transpose()
}

/// What was learned of one model's window, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LearnedWindow {
    /// The window the server said (`None`: it named none).
    pub window: Option<u64>,
    /// How it was asked ([`WindowAsk::how`]).
    pub how: String,
    /// When (ms since the epoch).
    pub at_ms: i64,
}

impl LearnedWindow {
    /// Whether it is still to be trusted at `now_ms`.
    pub fn fresh(&self, now_ms: i64) -> bool {
        let ttl = match self.window {
            Some(_) => KNOWN_TTL_MS,
            None => UNSAID_TTL_MS,
        };
        now_ms.saturating_sub(self.at_ms) < ttl && self.at_ms <= now_ms
    }
}

/// The store setting holding what servers said: `model ref @ URL` ->
/// [`LearnedWindow`].
pub const LEARNED_WINDOWS: &str = "model_windows";

/// The cache key of one question.
pub fn cache_key(model_ref: &str, ask: &WindowAsk) -> String {
    format!("{model_ref} @ {}", ask.url())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ollama_show_names_the_arch_context_length() {
        let body = json!({"model_info": {"general.architecture": "qwen3",
            "qwen3.context_length": 40960, "qwen3.embedding_length": 4096}});
        // Trained for 40,960, served with Ollama's own default: unknown.
        let shown = parse_show(&body).unwrap();
        assert_eq!(shown.trained, Some(40_960));
        assert_eq!(shown.served(), None);
        assert_eq!(parse_show(&json!({"details": {}})), Ok(Shown::default()));
        // A Modelfile's num_ctx is what the server loads, never above the
        // trained size.
        let body = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx    16384",
            "model_info": {"qwen3.context_length": 40960}});
        assert_eq!(parse_show(&body).unwrap().served(), Some(16_384));
        let body = json!({"parameters": "num_ctx 65536",
            "model_info": {"qwen3.context_length": 40960}});
        assert_eq!(parse_show(&body).unwrap().served(), Some(40_960));
        assert_eq!(
            parse_show(&json!({"model_info": {"x.context_length": "many"}})),
            Ok(Shown::default())
        );
    }

    #[test]
    fn a_loaded_model_says_its_window_in_ps() {
        let body = json!({"models": [
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192},
            {"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 32768}]});
        assert_eq!(parse_ps(&body, "qwen3:8b"), Ok(Some(32_768)));
        assert_eq!(parse_ps(&body, "llama3.2"), Ok(Some(8_192)));
        assert_eq!(parse_ps(&body, "mistral"), Ok(None));
        assert_eq!(parse_ps(&json!({"models": [{"name": "x"}]}), "x"), Ok(None));
    }

    #[test]
    fn absurd_windows_are_refused() {
        for n in [0u64, 10, 1_000_000_000_000] {
            let body = json!({"model_info": {"llama.context_length": n}});
            assert!(parse_show(&body).is_err(), "{n}");
        }
    }

    #[test]
    fn model_lists_give_windows_under_several_names() {
        let body = json!({"data": [
            {"id": "a", "context_length": 32768},
            {"id": "b", "max_model_len": 16384},
            {"id": "c", "top_provider": {"context_length": 65536}},
            {"id": "d"},
        ]});
        assert_eq!(parse_model_list(&body, "a"), Ok(Some(32_768)));
        assert_eq!(parse_model_list(&body, "b"), Ok(Some(16_384)));
        assert_eq!(parse_model_list(&body, "c"), Ok(Some(65_536)));
        assert_eq!(parse_model_list(&body, "d"), Ok(None));
        assert_eq!(parse_model_list(&body, "zz"), Ok(None));
        assert_eq!(parse_model_list(&json!([1, 2]), "a"), Ok(None));
    }

    #[test]
    fn freshness_depends_on_what_was_said() {
        let known = LearnedWindow {
            window: Some(8192),
            how: "x".into(),
            at_ms: 0,
        };
        assert!(known.fresh(KNOWN_TTL_MS - 1));
        assert!(!known.fresh(KNOWN_TTL_MS));
        let unsaid = LearnedWindow {
            window: None,
            ..known.clone()
        };
        assert!(!unsaid.fresh(UNSAID_TTL_MS));
        // A clock that went back does not keep an entry forever.
        assert!(!known.fresh(-5));
    }
}
