//! The ChatGPT sign-in's pure parts: expiry, claims, where it is looked for.

use super::*;

fn jwt(payload: Value) -> String {
    use base64::Engine;
    let enc = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!("{}.{}.sig", enc(&json!({"alg": "none"})), enc(&payload))
}

#[test]
fn a_token_is_refreshed_only_when_it_expires_soon() {
    let now = 1_800_000_000_000;
    assert!(needs_refresh(Some(now / 1000 - 10), now), "expired");
    assert!(
        needs_refresh(Some(now / 1000 + 60), now),
        "within five minutes"
    );
    assert!(!needs_refresh(Some(now / 1000 + 3600), now));
    assert!(
        !needs_refresh(None, now),
        "an opaque token is used as it is"
    );
}

#[test]
fn the_account_comes_from_the_tokens_claims() {
    let id = jwt(json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct_9"}}));
    let tokens = Tokens {
        access_token: jwt(json!({"exp": 1})),
        id_token: Some(id),
        ..Tokens::default()
    };
    assert_eq!(account_of(&tokens).as_deref(), Some("acct_9"));
    assert_eq!(claims(&tokens.access_token).unwrap()["exp"], 1);
    assert_eq!(claims("not-a-jwt"), None);
    assert_eq!(format!("{tokens:?}"), "Tokens(…)", "never printed");
}

#[test]
fn where_the_sign_in_is_looked_for() {
    let env: BTreeMap<String, String> = [
        ("HOME", "/home/u"),
        (HOLON_AUTH_FILE, "/cfg/auth/openai-codex.json"),
        ("HOLON_CODEX_ISSUER", "http://127.0.0.1:9/"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let s = CodexSignIn::from_env(&env);
    assert_eq!(
        s.codex_file.as_deref(),
        Some(Path::new("/home/u/.codex/auth.json"))
    );
    assert_eq!(
        s.holon_file.as_deref(),
        Some(Path::new("/cfg/auth/openai-codex.json"))
    );
    assert_eq!(s.issuer, "http://127.0.0.1:9");
    let mut with_codex_home = env.clone();
    with_codex_home.insert("CODEX_HOME".into(), "/c".into());
    assert_eq!(
        CodexSignIn::from_env(&with_codex_home)
            .codex_file
            .as_deref(),
        Some(Path::new("/c/auth.json"))
    );
}
