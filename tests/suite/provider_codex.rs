//! `openai-codex/*` against a local stub of both ChatGPT's sign-in service
//! and the Codex backend: Holon's own sign-in refreshed before it expires
//! and kept in its private file, the backend's request shape and headers,
//! an answer rebuilt from its stream; Codex CLI's sign-in used as it is,
//! never written nor refreshed (its refresh token is single-use), and
//! taking over from Holon's when that cannot be refreshed; no sign-in at
//! all is told, nothing sent; and `holon login openai-codex` / `logout`
//! through the real binary.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::provider_transports::{err, ok, run};
use super::stub_provider::canned;
use super::stub_provider::{Canned, StubServer};
use super::support::{stderr, Home};
use holon::model::usage::FailureKind;
use holon::runtime::provider::registry::{build_chain, ProviderEndpointConfig};
use holon::runtime::provider::retry::RetryPolicy;

/// A JWT whose claims are `payload` (unsigned: only its claims are read).
fn jwt(payload: Value) -> String {
    use base64::Engine;
    let enc = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.sig", enc(&json!({"alg": "none"})), enc(&payload))
}

fn in_secs(from_now: i64) -> i64 {
    holon::now_ms() / 1000 + from_now
}

fn chain(stub: &StubServer, dirs: &Path) -> holon::runtime::provider::retry::ProviderChain {
    let env: BTreeMap<String, String> = [
        ("CODEX_HOME", dirs.join("codex").display().to_string()),
        (
            "HOLON_CODEX_AUTH_FILE",
            dirs.join("holon/auth/openai-codex.json")
                .display()
                .to_string(),
        ),
        ("HOLON_CODEX_ISSUER", stub.base().to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let text = format!("[openai-codex]\nbase_url = \"{}/codex\"\n", stub.base());
    let endpoints: BTreeMap<String, ProviderEndpointConfig> = toml::from_str(&text).unwrap();
    let policy = RetryPolicy {
        max_retries: 0,
        base_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(5),
        request_timeout: Duration::from_secs(5),
    };
    build_chain("openai-codex/gpt-5-codex", &[], &env, &endpoints, policy)
        .unwrap_or_else(|f| panic!("{}", f.artifact.summary))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holons_sign_in_is_refreshed_kept_and_carried_to_the_backend() {
    let dirs = tempfile::tempdir().unwrap();
    let account = jwt(json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct_1"}}));
    // Holon's own sign-in, expired; Codex CLI's beside it, never touched.
    let ours = dirs.path().join("holon/auth/openai-codex.json");
    std::fs::create_dir_all(ours.parent().unwrap()).unwrap();
    let own = json!({"tokens": {"access_token": jwt(json!({"exp": in_secs(-60)})),
        "refresh_token": "rt-old", "id_token": account}});
    std::fs::write(&ours, own.to_string()).unwrap();
    let codex_file = dirs.path().join("codex/auth.json");
    std::fs::create_dir_all(codex_file.parent().unwrap()).unwrap();
    let theirs = json!({"OPENAI_API_KEY": null, "tokens": {
        "access_token": jwt(json!({"exp": in_secs(3600)})), "refresh_token": "rt-theirs"},
        "last_refresh": "2026-01-01T00:00:00Z"});
    std::fs::write(&codex_file, theirs.to_string()).unwrap();
    let fresh = jwt(json!({"exp": in_secs(3600)}));
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            json!({"access_token": fresh, "refresh_token": "rt-new"}),
        ),
        Canned::sse(canned::responses_sse(&["hello ", "from codex"], &[])),
        Canned::sse(canned::responses_sse(&["again"], &[])),
    ])
    .await;
    let provider = chain(&stub, dirs.path());
    let (outcome, deltas) = run(&provider).await;
    assert_eq!(ok(&outcome).text, "hello from codex");
    assert_eq!(deltas.concat(), "hello from codex");
    let reqs = stub.requests();
    assert_eq!(reqs[0].path, "/oauth/token");
    assert_eq!(reqs[0].body["grant_type"], "refresh_token");
    assert_eq!(reqs[0].body["refresh_token"], "rt-old");
    assert_eq!(reqs[0].body["client_id"], "app_EMoamEEZ73f0CkXaXp7hrann");
    let sent = &reqs[1];
    assert_eq!(sent.path, "/codex/responses");
    assert_eq!(sent.headers["authorization"], format!("Bearer {fresh}"));
    assert_eq!(sent.headers["chatgpt-account-id"], "acct_1");
    let body = &sent.body;
    assert!(body.get("max_output_tokens").is_none(), "{body}");
    assert_eq!(body["reasoning"], Value::Null, "{body}");
    assert!(body.get("reasoning").is_some(), "reasoning: null is sent");
    assert_eq!(body["include"], json!([]));
    assert_eq!(
        (body["store"].clone(), body["stream"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(body["model"], "gpt-5-codex");
    // Codex CLI's file is never written; Holon keeps its own refresh.
    let after: Value = serde_json::from_slice(&std::fs::read(&codex_file).unwrap()).unwrap();
    assert_eq!(after, theirs);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&ours).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let kept: Value = serde_json::from_slice(&std::fs::read(&ours).unwrap()).unwrap();
    assert_eq!(kept["tokens"]["access_token"], json!(fresh));
    assert_eq!(kept["tokens"]["refresh_token"], "rt-new");
    assert_eq!(kept["tokens"]["account_id"], "acct_1");
    // The next round uses Holon's fresh sign-in: no refresh.
    let (outcome, _) = run(&provider).await;
    assert_eq!(ok(&outcome).text, "again");
    let reqs = stub.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[2].headers["authorization"], format!("Bearer {fresh}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_sign_in_nothing_is_sent_and_the_failure_says_how_to_sign_in() {
    let dirs = tempfile::tempdir().unwrap();
    let stub = StubServer::start(vec![]).await;
    let provider = chain(&stub, dirs.path());
    let (outcome, _) = run(&provider).await;
    let failure = err(&outcome);
    assert_eq!(failure.kind, FailureKind::AuthFailed);
    assert!(
        failure
            .artifact
            .summary
            .contains("holon login openai-codex"),
        "{}",
        failure.artifact.summary
    );
    assert!(stub.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_takes_a_device_code_and_logout_forgets_it() {
    let home = Home::new();
    let id = jwt(json!({"email": "dev@example.com",
                       "https://api.openai.com/auth": {"chatgpt_account_id": "acct_7"}}));
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            json!({"device_auth_id": "dev_1", "user_code": "ABCD-EFGH", "interval": "0"}),
        ),
        Canned::json(
            403,
            json!({"error": {"code": "deviceauth_authorization_pending"}}),
        ),
        Canned::json(
            200,
            json!({"authorization_code": "code_1", "code_verifier": "verifier_1"}),
        ),
        Canned::json(
            200,
            json!({"access_token": jwt(json!({"exp": in_secs(3600)})), "refresh_token": "rt_1",
                   "id_token": id}),
        ),
    ])
    .await;
    let run = |args: &[&str]| {
        home.cmd()
            .env("HOLON_CODEX_ISSUER", stub.base())
            .env("CODEX_HOME", home.path().join("no-codex"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["login", "openai-codex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ABCD-EFGH") && text.contains("/codex/device"),
        "{text}"
    );
    assert!(
        text.contains("Signed in to ChatGPT as dev@example.com"),
        "{text}"
    );
    let reqs = stub.requests();
    let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/api/accounts/deviceauth/usercode",
            "/api/accounts/deviceauth/token",
            "/api/accounts/deviceauth/token",
            "/oauth/token"
        ]
    );
    assert_eq!(reqs[1].body["device_auth_id"], "dev_1");
    // The code is exchanged as a form, with the verifier and the redirect
    // the device flow names.
    let form = reqs[3].body.as_str().unwrap_or_default().to_owned();
    for part in [
        "grant_type=authorization_code",
        "code=code_1",
        "code_verifier=verifier_1",
        "client_id=app_EMoamEEZ73f0CkXaXp7hrann",
        "redirect_uri=http%3A%2F%2F127.0.0.1",
        "%2Fdeviceauth%2Fcallback",
    ] {
        assert!(form.contains(part), "{part} in {form}");
    }
    let file = home.path().join("config/auth/openai-codex.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let kept: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(kept["tokens"]["refresh_token"], "rt_1");
    assert_eq!(kept["tokens"]["account_id"], "acct_7");
    let printed = format!("{text}{}", stderr(&out));
    assert!(
        !printed.contains("rt_1") && !printed.contains("eyJ"),
        "no token is printed"
    );
    let out = run(&["logout", "openai-codex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!file.exists());
    let refused = run(&["login", "anthropic"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("only openai-codex signs in"),
        "{}",
        stderr(&refused)
    );
}

/// A sign-in file as Codex CLI (and Holon) keep one.
fn auth_file(path: &Path, access: &str, refresh: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = json!({"tokens": {"access_token": access, "refresh_token": refresh,
                                 "account_id": "acct_2"}});
    std::fs::write(path, file.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_clis_expired_sign_in_is_never_refreshed_by_holon() {
    let dirs = tempfile::tempdir().unwrap();
    let expired = jwt(json!({"exp": in_secs(-60)}));
    auth_file(&dirs.path().join("codex/auth.json"), &expired, "rt-theirs");
    let stub = StubServer::start(vec![]).await;
    let (outcome, _) = run(&chain(&stub, dirs.path())).await;
    let summary = &err(&outcome).artifact.summary;
    assert!(summary.contains("run `codex` once"), "{summary}");
    assert!(
        stub.requests().is_empty(),
        "its single-use refresh token was not spent"
    );
    assert!(!dirs.path().join("holon/auth/openai-codex.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holons_sign_in_that_cannot_be_refreshed_gives_way_to_codex_clis() {
    let dirs = tempfile::tempdir().unwrap();
    let theirs = jwt(json!({"exp": in_secs(3600)}));
    auth_file(&dirs.path().join("codex/auth.json"), &theirs, "rt-theirs");
    let ours = jwt(json!({"exp": in_secs(-60)}));
    auth_file(
        &dirs.path().join("holon/auth/openai-codex.json"),
        &ours,
        "rt-ours",
    );
    let stub = StubServer::start(vec![
        Canned::json(400, json!({"error": {"code": "refresh_token_reused"}})),
        Canned::sse(canned::responses_sse(&["via codex"], &[])),
    ])
    .await;
    let (outcome, _) = run(&chain(&stub, dirs.path())).await;
    assert_eq!(ok(&outcome).text, "via codex");
    let reqs = stub.requests();
    assert_eq!(reqs[0].body["refresh_token"], "rt-ours");
    assert_eq!(reqs[1].headers["authorization"], format!("Bearer {theirs}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sign_in_is_refreshed_once_and_the_request_sent_again() {
    let dirs = tempfile::tempdir().unwrap();
    let revoked = jwt(json!({"exp": in_secs(3600)}));
    let ours = dirs.path().join("holon/auth/openai-codex.json");
    auth_file(&ours, &revoked, "rt-ours");
    let fresh = jwt(json!({"exp": in_secs(7200)}));
    let stub = StubServer::start(vec![
        Canned::json(401, json!({"error": {"code": "token_revoked"}})),
        Canned::json(
            200,
            json!({"access_token": fresh, "refresh_token": "rt-next"}),
        ),
        Canned::sse(canned::responses_sse(&["after the refresh"], &[])),
    ])
    .await;
    let (outcome, _) = run(&chain(&stub, dirs.path())).await;
    assert_eq!(ok(&outcome).text, "after the refresh");
    let reqs = stub.requests();
    let seen: Vec<(&str, &str)> = reqs
        .iter()
        .map(|r| {
            let auth = r.headers.get("authorization").map_or("", String::as_str);
            (r.path.as_str(), auth)
        })
        .collect();
    assert_eq!(
        seen[0],
        ("/codex/responses", format!("Bearer {revoked}").as_str())
    );
    assert_eq!(seen[1].0, "/oauth/token");
    assert_eq!(
        seen[2],
        ("/codex/responses", format!("Bearer {fresh}").as_str())
    );
    let kept: Value = serde_json::from_slice(&std::fs::read(&ours).unwrap()).unwrap();
    assert_eq!(kept["tokens"]["refresh_token"], "rt-next");
}
