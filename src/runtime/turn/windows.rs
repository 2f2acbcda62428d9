//! Learning a model's window from its server, at a turn's start: for each
//! model of the agent's provider whose window nobody set and whose server
//! may say (Ollama, an OpenAI-compatible server), what the store kept of
//! an earlier answer while it is fresh, else one bounded question. A
//! server that cannot be asked leaves what it said before in force (else
//! the catalog's window), with a log line, and is left alone for a while. Operator settings always
//! win: a chain with a configured window asks nothing.
//!
//! What was learned is a cache of an outside fact (the store setting
//! `model_windows`); each turn's `turn_context_built` records the window
//! it used and where it came from.

use std::collections::BTreeMap;

use crate::runtime::handle::HostInner;
use crate::runtime::provider::window_probe::{
    cache_key, LearnedWindow, FAILED_TTL_MS, KNOWN_TTL_MS, LEARNED_WINDOWS, UNSAID_TTL_MS,
};
use crate::runtime::provider::Provider;

fn ttl(window: Option<u64>) -> i64 {
    match window {
        Some(_) => KNOWN_TTL_MS,
        None => UNSAID_TTL_MS,
    }
}

/// Learn what `provider`'s models' servers say of their windows (at most
/// one bounded question each, all at once).
pub(super) async fn learn(inner: &HostInner, provider: &dyn Provider) {
    let now = crate::clock::now_ms();
    let questions = provider.window_questions(now);
    if questions.is_empty() {
        return;
    }
    let stored: BTreeMap<String, LearnedWindow> = inner
        .store
        .read()
        .ok()
        .and_then(|rx| rx.setting(LEARNED_WINDOWS).ok().flatten())
        .unwrap_or_default();
    let mut to_ask = Vec::new();
    for q in &questions {
        match stored.get(&cache_key(&q.model_ref, &q.ask)) {
            Some(l) if l.fresh(now) => {
                provider.learn_window(&q.model_ref, l.window, l.at_ms + ttl(l.window))
            }
            _ => to_ask.push(q),
        }
    }
    if to_ask.is_empty() {
        return;
    }
    let answers =
        futures_util::future::join_all(to_ask.iter().map(|q| provider.ask_window(q))).await;
    let mut learned = BTreeMap::new();
    for (q, answer) in to_ask.into_iter().zip(answers) {
        match answer {
            Ok(window) => {
                tracing::info!(model = %q.model_ref, ?window, how = q.ask.how(), "learned the model's window");
                provider.learn_window(&q.model_ref, window, now + ttl(window));
                learned.insert(
                    cache_key(&q.model_ref, &q.ask),
                    LearnedWindow {
                        window,
                        how: q.ask.how().to_owned(),
                        at_ms: now,
                    },
                );
            }
            Err(why) => {
                // What the server said before still holds (it is asked
                // again later); with nothing said, the catalog's applies.
                let before = stored
                    .get(&cache_key(&q.model_ref, &q.ask))
                    .and_then(|l| l.window);
                tracing::warn!(model = %q.model_ref, how = q.ask.how(), %why, ?before,
                    "could not learn the model's window");
                provider.learn_window(&q.model_ref, before, now + FAILED_TTL_MS);
            }
        }
    }
    if learned.is_empty() {
        return;
    }
    let kept = inner
        .store
        .write(move |tx| {
            let mut all: BTreeMap<String, LearnedWindow> =
                tx.setting(LEARNED_WINDOWS)?.unwrap_or_default();
            all.extend(learned.clone());
            tx.put_setting(LEARNED_WINDOWS, Some(&all))
        })
        .await;
    if let Err(e) = kept {
        tracing::warn!(error = %e, "could not keep the learned model windows");
    }
}
