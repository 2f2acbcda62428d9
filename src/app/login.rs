//! `holon login openai-codex` and `holon logout openai-codex`: ChatGPT's
//! device-code sign-in, kept in Holon's config directory (mode 0600) for
//! the `openai-codex/*` models. The operator opens the sign-in page on any
//! device and types the code shown; Holon polls until the sign-in is
//! approved, exchanges the code for tokens and keeps them. Codex CLI's own
//! sign-in (`~/.codex/auth.json`) is never written: without Holon's, it is
//! what the models use.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Context;
use crate::runtime::provider::codex_auth::{self, AuthFile, CodexSignIn, Tokens, CLIENT_ID};

/// How long a code may wait for the operator.
const CODE_LIFETIME: Duration = Duration::from_secs(15 * 60);

fn only_codex(provider: &str) -> anyhow::Result<()> {
    if provider != "openai-codex" {
        anyhow::bail!(
            "`{provider}` has no sign-in: only openai-codex signs in (with ChatGPT); other \
             providers take an API key from the environment (see `holon doctor`)"
        );
    }
    Ok(())
}

/// The sign-in this home uses.
fn sign_in(ctx: &Context) -> CodexSignIn {
    let env = super::providers::provider_env(&ctx.config);
    CodexSignIn::from_env(&env)
}

pub async fn login(ctx: &Context, provider: &str) -> anyhow::Result<ExitCode> {
    only_codex(provider)?;
    let sign_in = sign_in(ctx);
    let issuer = sign_in.issuer.clone();
    let policy = crate::runtime::provider::retry::RetryPolicy::default();
    let client = crate::runtime::provider::registry::http_client(&policy)
        .map_err(|f| anyhow::anyhow!(f.artifact.summary))?;
    let post = |path: &str, body: Value| {
        let url = format!("{issuer}{path}");
        let client = client.clone();
        async move { codex_auth::post(&client, &url, &body).await }
    };
    let code = post(
        "/api/accounts/deviceauth/usercode",
        json!({ "client_id": CLIENT_ID }),
    )
    .await
    .map_err(|e| anyhow::anyhow!("could not start the ChatGPT sign-in: {}", e.message))?;
    let (Some(device), Some(user_code)) = (
        code["device_auth_id"].as_str(),
        code["user_code"].as_str().or(code["usercode"].as_str()),
    ) else {
        anyhow::bail!("the sign-in service answered no device code");
    };
    let interval = code["interval"]
        .as_u64()
        .or_else(|| {
            code["interval"]
                .as_str()
                .and_then(|s| s.trim().parse().ok())
        })
        .unwrap_or(5)
        // At least a second between polls, whatever the service says.
        .max(1);
    say!("Sign in to ChatGPT: open {issuer}/codex/device on any device and enter the code");
    say!();
    say!("    {user_code}");
    say!();
    say!("Waiting for the sign-in (the code is good for 15 minutes; Ctrl+C gives up)…");
    let started = Instant::now();
    let granted = loop {
        tokio::time::sleep(Duration::from_secs(interval)).await;
        if started.elapsed() > CODE_LIFETIME {
            anyhow::bail!("the code expired before the sign-in was approved; run it again");
        }
        let poll = post(
            "/api/accounts/deviceauth/token",
            json!({ "device_auth_id": device, "user_code": user_code }),
        )
        .await;
        match poll {
            Ok(answer) => break answer,
            // Not approved yet.
            Err(e) if matches!(e.status, Some(403 | 404)) => continue,
            // Unreachable or failing for a moment: ask again.
            Err(e) if e.transient() => {
                tracing::warn!(error = %e.message, "sign-in poll failed; asking again");
                continue;
            }
            Err(e) => anyhow::bail!("the sign-in failed: {}", e.message),
        }
    };
    let (Some(code), Some(verifier)) = (
        granted["authorization_code"].as_str(),
        granted["code_verifier"].as_str(),
    ) else {
        anyhow::bail!("the sign-in service approved the code but sent no authorization code");
    };
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", &format!("{issuer}/deviceauth/callback")),
        ("client_id", CLIENT_ID),
        ("code_verifier", verifier),
    ];
    let response = client
        .post(format!("{issuer}/oauth/token"))
        .timeout(Duration::from_secs(30))
        .form(&form)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("could not finish the sign-in ({})", e.without_url()))?;
    let status = response.status();
    let tokens: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        anyhow::bail!("could not finish the sign-in: the service answered {status}");
    }
    let text = |k: &str| {
        tokens[k]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let Some(access_token) = text("access_token") else {
        anyhow::bail!("the sign-in service sent no access token");
    };
    let mut kept = Tokens {
        access_token,
        refresh_token: text("refresh_token").unwrap_or_default(),
        id_token: text("id_token"),
        account_id: None,
    };
    kept.account_id = codex_auth::account_of(&kept);
    let path = ctx.config.codex_auth_file();
    let file = AuthFile {
        tokens: kept.clone(),
        last_refresh: Some(crate::format_ts(crate::now_ms())),
    };
    codex_auth::write_private(&path, &file)
        .map_err(|e| anyhow::anyhow!("could not keep the sign-in in {}: {e}", path.display()))?;
    let who = kept
        .id_token
        .as_deref()
        .and_then(codex_auth::claims)
        .and_then(|c| c["email"].as_str().map(str::to_owned));
    match who {
        Some(email) => say!("Signed in to ChatGPT as {email}."),
        None => say!("Signed in to ChatGPT."),
    }
    say!(
        "The sign-in is kept in {} (readable by you alone); openai-codex/* models use it, e.g. \
         `holon model openai-codex/gpt-5-codex`.",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn logout(ctx: &Context, provider: &str) -> anyhow::Result<ExitCode> {
    only_codex(provider)?;
    let path = ctx.config.codex_auth_file();
    match std::fs::remove_file(&path) {
        Ok(()) => say!("Signed out: removed {}.", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            say!(
                "Holon had no ChatGPT sign-in of its own ({}).",
                path.display()
            )
        }
        Err(e) => anyhow::bail!("could not remove {}: {e}", path.display()),
    }
    let codex = sign_in(ctx).codex_file.filter(|p| p.exists());
    if let Some(codex) = codex {
        say!(
            "Codex CLI's own sign-in ({}) is left as it is, and openai-codex/* models still use \
             it; `codex logout` ends that one.",
            codex.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
