//! Unit tests for model-ref resolution (pure: env snapshots are maps).

use super::*;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn none() -> BTreeMap<String, ProviderEndpointConfig> {
    BTreeMap::new()
}

fn resolved(model: &str, e: &BTreeMap<String, String>) -> ResolvedEndpoint {
    resolve_endpoint(model, e, &none())
        .unwrap_or_else(|f| panic!("{model}: {}", f.artifact.summary))
}

#[test]
fn ollama_host_forms() {
    assert_eq!(ollama_base_url(None), "http://127.0.0.1:11434/v1");
    assert_eq!(ollama_base_url(Some("")), "http://127.0.0.1:11434/v1");
    assert_eq!(
        ollama_base_url(Some("localhost:11434")),
        "http://localhost:11434/v1"
    );
    assert_eq!(
        ollama_base_url(Some("http://host:1234")),
        "http://host:1234/v1"
    );
    assert_eq!(
        ollama_base_url(Some("http://host:1234/")),
        "http://host:1234/v1"
    );
    assert_eq!(
        ollama_base_url(Some("ollama.lan")),
        "http://ollama.lan:11434/v1"
    );
    assert_eq!(
        ollama_base_url(Some("https://ollama.example.com")),
        "https://ollama.example.com:443/v1"
    );
    assert_eq!(
        ollama_base_url(Some("0.0.0.0")),
        "http://127.0.0.1:11434/v1"
    );
    assert_eq!(ollama_base_url(Some("[::1]:8080")), "http://[::1]:8080/v1");
    assert_eq!(
        ollama_base_url(Some("http://gw:80/ollama/v1")),
        "http://gw:80/ollama/v1"
    );
}

#[test]
fn ollama_needs_no_key_and_streams() {
    let ep = resolved(
        "ollama/llama3.2",
        &env(&[("OLLAMA_HOST", "localhost:11434")]),
    );
    assert_eq!(ep.wire, WireFormat::OpenaiChat);
    assert_eq!(ep.url(), "http://localhost:11434/v1/chat/completions");
    assert_eq!(ep.api_key, None);
    assert_eq!(ep.streaming, Streaming::On);
    assert_eq!(ep.base_url_source, "OLLAMA_HOST");
    assert_eq!(ep.model_ref.model, "llama3.2");
}

#[test]
fn openai_and_anthropic_defaults_and_overrides() {
    let e = env(&[("OPENAI_API_KEY", "sk-o"), ("ANTHROPIC_API_KEY", "sk-a")]);
    let o = resolved("openai/gpt-4.1", &e);
    assert_eq!(o.url(), "https://api.openai.com/v1/responses");
    assert_eq!(o.streaming, Streaming::Off);
    assert_eq!(o.api_key.as_ref().map(ApiKey::env), Some("OPENAI_API_KEY"));
    let a = resolved("anthropic/claude-sonnet-4-5", &e);
    assert_eq!(a.url(), "https://api.anthropic.com/v1/messages");
    assert_eq!(a.streaming, Streaming::On);

    let e = env(&[
        ("OPENAI_API_KEY", "sk-o"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"),
        ("ANTHROPIC_API_KEY", "sk-a"),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:8"),
    ]);
    assert_eq!(
        resolved("openai/gpt-4.1", &e).url(),
        "http://127.0.0.1:9/v1/responses"
    );
    assert_eq!(
        resolved("anthropic/c", &e).url(),
        "http://127.0.0.1:8/v1/messages"
    );
}

#[test]
fn openrouter_keeps_slashes_in_model() {
    let ep = resolved(
        "openrouter/anthropic/claude-3.5",
        &env(&[("OPENROUTER_API_KEY", "k")]),
    );
    assert_eq!(ep.model_ref.model, "anthropic/claude-3.5");
    assert_eq!(ep.url(), "https://openrouter.ai/api/v1/chat/completions");
}

#[test]
fn missing_credential_names_the_variable() {
    for (model, var) in [
        ("openai/gpt-4.1", "OPENAI_API_KEY"),
        ("anthropic/claude", "ANTHROPIC_API_KEY"),
        ("openrouter/x/y", "OPENROUTER_API_KEY"),
    ] {
        let f = resolve_endpoint(model, &env(&[(var, "  ")]), &none()).err();
        let f = f.unwrap_or_else(|| panic!("{model} resolved without {var}"));
        assert_eq!(f.kind, FailureKind::NotConfigured);
        assert!(f.artifact.summary.contains(var), "{}", f.artifact.summary);
        assert_eq!(
            f.artifact.metadata.get("missing_env").map(String::as_str),
            Some(var)
        );
        assert_eq!(f.artifact.model_ref.as_deref(), Some(model));
    }
}

#[test]
fn unknown_and_unsupported_providers_fail_closed() {
    let f = resolve_endpoint("mystery/m", &env(&[]), &none()).err();
    assert_eq!(
        f.as_ref().map(|f| f.kind),
        Some(FailureKind::UnsupportedTransport)
    );
    assert!(f.is_some_and(|f| f.artifact.summary.contains("[providers.mystery]")));
    let f = resolve_endpoint("gpt-4.1", &env(&[]), &none()).err();
    assert_eq!(f.map(|f| f.kind), Some(FailureKind::NotConfigured));
}

#[test]
fn openai_codex_streams_responses_to_the_codex_backend_signed_in_with_chatgpt() {
    let e = resolve_endpoint("openai-codex/gpt-5-codex", &env(&[("HOME", "/h")]), &none()).unwrap();
    assert_eq!(e.wire, WireFormat::OpenaiResponses);
    assert_eq!(e.url(), "https://chatgpt.com/backend-api/codex/responses");
    assert_eq!(e.streaming, Streaming::On);
    assert!(
        e.api_key.is_none(),
        "no key: the sign-in goes on each request"
    );
    let sign_in = e.codex.expect("a ChatGPT sign-in");
    assert_eq!(
        sign_in.codex_file.as_deref(),
        Some(std::path::Path::new("/h/.codex/auth.json"))
    );
    // Its base is configurable like every provider's; no `wire` needed.
    let configured: BTreeMap<String, ProviderEndpointConfig> =
        toml::from_str("[openai-codex]\nbase_url = \"http://127.0.0.1:9/codex\"\n").unwrap();
    let e = resolve_endpoint("openai-codex/gpt-5", &env(&[]), &configured).unwrap();
    assert_eq!(e.url(), "http://127.0.0.1:9/codex/responses");
    assert!(e.codex.is_some());
    // Any other configured endpoint still says which wire it speaks.
    let unsaid: BTreeMap<String, ProviderEndpointConfig> =
        toml::from_str("[mine]\nbase_url = \"http://127.0.0.1:9/v1\"\n").unwrap();
    let f = resolve_endpoint("mine/m", &env(&[]), &unsaid).err();
    assert!(f.is_some_and(|f| f.artifact.summary.contains("has no `wire`")));
}

#[test]
fn configured_endpoints_override_and_extend() {
    let toml_text = r#"
        [together]
        base_url = "https://api.together.xyz/v1/"
        api_key_env = "TOGETHER_API_KEY"
        wire = "openai_chat"

        [openai]
        base_url = "http://127.0.0.1:7/v1"
        wire = "openai_responses"
        streaming = "on"
    "#;
    let endpoints: BTreeMap<String, ProviderEndpointConfig> =
        toml::from_str(toml_text).unwrap_or_else(|e| panic!("config: {e}"));
    let e = env(&[("TOGETHER_API_KEY", "tk")]);
    let t = resolve_endpoint("together/llama", &e, &endpoints).unwrap();
    assert_eq!(t.url(), "https://api.together.xyz/v1/chat/completions");
    assert_eq!(
        t.api_key.as_ref().map(ApiKey::env),
        Some("TOGETHER_API_KEY")
    );
    assert_eq!(t.streaming, Streaming::On);
    let o = resolve_endpoint("openai/gpt", &e, &endpoints).unwrap();
    assert_eq!(o.api_key, None);
    assert_eq!(o.streaming, Streaming::On);
    let f = resolve_endpoint("together/llama", &env(&[]), &endpoints).err();
    assert!(f.is_some_and(|f| f.artifact.summary.contains("TOGETHER_API_KEY")));
}

#[test]
fn bad_base_url_is_not_configured() {
    let e = env(&[
        ("OPENAI_API_KEY", "k"),
        ("OPENAI_BASE_URL", "api.openai.com"),
    ]);
    let f = resolve_endpoint("openai/gpt", &e, &none()).err();
    assert_eq!(f.as_ref().map(|f| f.kind), Some(FailureKind::NotConfigured));
    assert!(f.is_some_and(|f| f.artifact.summary.contains("OPENAI_BASE_URL")));
}

#[test]
fn api_key_debug_is_redacted() {
    let e = env(&[("OPENAI_API_KEY", "sk-very-secret")]);
    let shown = format!("{:?}", resolved("openai/gpt", &e));
    assert!(!shown.contains("sk-very-secret"), "{shown}");
    assert!(shown.contains("OPENAI_API_KEY"));
}

#[test]
fn chain_keeps_rejected_candidates_unless_none_resolve() {
    let e = env(&[("OLLAMA_HOST", "127.0.0.1:1")]);
    let fallbacks = vec!["ollama/llama3.2".to_owned(), "openai/gpt".to_owned()];
    let chain = build_chain(
        "openai/gpt",
        &fallbacks,
        &e,
        &none(),
        RetryPolicy::default(),
    );
    let chain = chain.unwrap_or_else(|f| panic!("{}", f.artifact.summary));
    let states: Vec<String> = chain
        .describe()
        .iter()
        .map(|c| c.model_ref.clone())
        .collect();
    assert_eq!(states, vec!["openai/gpt", "ollama/llama3.2"]);
    let none_ok = build_chain(
        "openai/gpt",
        &["anthropic/c".to_owned()],
        &env(&[]),
        &none(),
        RetryPolicy::default(),
    );
    let Err(f) = none_ok else {
        panic!("chain without credentials built")
    };
    assert!(
        f.artifact.summary.contains("OPENAI_API_KEY")
            && f.artifact.summary.contains("ANTHROPIC_API_KEY")
    );
}

#[test]
fn endpoint_config_rejects_unknown_keys_and_wires() {
    let typo = "base_url = \"http://x\"\nwire = \"openai_chat\"\napi_key_var = \"K\"\n";
    assert!(toml::from_str::<ProviderEndpointConfig>(typo).is_err());
    let wire = "base_url = \"http://x\"\nwire = \"grpc\"\n";
    assert!(toml::from_str::<ProviderEndpointConfig>(wire).is_err());
}
