//! `holon doctor`: is the model this runtime would use reachable and
//! usable? For the default model and each fallback: how it resolves, the
//! credential it needs, what its transport sends, and a probe of its
//! endpoint with that credential; then the retry policy that runs over
//! them. Exits non-zero when the default model cannot be used.

use std::process::ExitCode;
use std::time::Duration;

use super::commands::Out;
use super::Context;
use crate::runtime::provider::checkup::{check, window, ModelCheck, Probe};
use crate::runtime::provider::registry::http_client;
use crate::runtime::provider::retry::RetryPolicy;
use crate::runtime::provider::wire::Streaming;

/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn doctor(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let config = &ctx.config;
    let Some(default) = config.default_model.clone() else {
        anyhow::bail!(
            "no model is configured: set HOLON_MODEL (e.g. openai/gpt-4.1) or [model] default"
        );
    };
    let mut refs = vec![(default, "default")];
    for f in &config.fallback_models {
        if !refs.iter().any(|(r, _)| r == f) {
            refs.push((f.clone(), "fallback"));
        }
    }
    let env = super::providers::provider_env(config);
    let policy = RetryPolicy::default();
    let client = http_client(&policy).map_err(|f| anyhow::anyhow!(f.artifact.summary))?;
    let checks = futures_util::future::join_all(
        refs.iter()
            .map(|(r, role)| check(r, role, &env, &config.providers, &client, PROBE_TIMEOUT)),
    )
    .await;
    let windows = futures_util::future::join_all(
        refs.iter()
            .map(|(r, _)| window(r, &env, &config.providers, config.context_window, &client)),
    )
    .await;
    let checks: Vec<ModelCheck> = checks
        .into_iter()
        .zip(windows)
        .map(|(mut c, w)| {
            if c.problem.is_none() {
                c.window = Some(w);
            }
            c
        })
        .collect();
    let mut out = Out::new();
    if json {
        let report = serde_json::json!({
            "models": checks,
            "retry": {
                "max_retries": policy.max_retries,
                "base_backoff_ms": policy.base_backoff.as_millis() as u64,
                "max_backoff_ms": policy.max_backoff.as_millis() as u64,
                "request_timeout_ms": policy.request_timeout.as_millis() as u64,
            },
        });
        out.line(&serde_json::to_string_pretty(&report)?)?;
    } else {
        for c in &checks {
            for line in lines(c) {
                out.line(&line)?;
            }
        }
        out.line(&format!(
            "retry        each model {} attempts ({} s backoff doubling to {} s, {} s each), \
             then the next model",
            policy.max_retries + 1,
            policy.base_backoff.as_secs_f64(),
            policy.max_backoff.as_secs(),
            policy.request_timeout.as_secs()
        ))?;
    }
    match checks.first().is_some_and(ModelCheck::healthy) {
        true => Ok(ExitCode::SUCCESS),
        false => {
            eprintln!("holon: the default model cannot be used as configured (see above)");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// One model's check in words.
fn lines(c: &ModelCheck) -> Vec<String> {
    let mut out = vec![format!("{} ({})", c.model_ref, c.role)];
    if let Some(problem) = &c.problem {
        out.push(format!("  problem    {problem}"));
        return out;
    }
    if let (Some(url), Some(wire)) = (&c.url, c.wire) {
        let streaming = match c.streaming {
            Some(Streaming::On) => "streaming",
            _ => "not streaming",
        };
        out.push(format!(
            "  endpoint   {url} · {}, {streaming}",
            crate::ui::present::wire_name(&wire)
        ));
    }
    out.push(format!(
        "  credential {}",
        c.credential_env
            .as_deref()
            .map_or("none needed".to_owned(), |v| format!("{v} (set)"))
    ));
    let reach = match &c.probe {
        Some(Probe::Accepted { status, ms }) => {
            format!("yes: its model list answered {status} in {ms} ms with the key")
        }
        Some(Probe::Refused { status, ms }) => {
            format!("yes, but it refused the key: {status} in {ms} ms")
        }
        Some(Probe::Answered { status, ms }) if *status >= 500 => {
            format!("it answered {status} in {ms} ms: the server is failing")
        }
        Some(Probe::Answered { status, ms }) => format!(
            "yes: answered {status} in {ms} ms (it serves no model list; the key is untested)"
        ),
        Some(Probe::Unreachable { reason, .. }) => format!("no: {reason}"),
        None => "not probed".to_owned(),
    };
    out.push(format!("  reachable  {reach}"));
    if let Some(w) = &c.window {
        out.push(format!("  window     {}", w.describe()));
    }
    let sends: Vec<&str> = [
        c.takes_reasoning_effort
            .then_some("a reasoning setting when one is configured"),
        c.images.then_some("tools' images"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !sends.is_empty() {
        out.push(format!("  sends      {}", sends.join(", ")));
    }
    out
}
