//! Provider transports against a local stub provider: all three wire
//! formats, streaming and not, retry/fallback/fail-fast decisions and the
//! attempt timeline. Every recorded request is checked for the protocol
//! invariants (model, auth header, tools named verbatim, every tool call
//! answered by exactly one result, in place).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::stub_provider::canned::{self, Call};
use super::stub_provider::invariants::{check_request, request, Auth, Wire};
use super::stub_provider::{Canned, StubServer};
use holon::model::usage::FailureCategory;
use holon::model::usage::FailureKind;
use holon::runtime::provider::registry::{build_chain, ProviderEndpointConfig};
use holon::runtime::provider::retry::{ProviderChain, RetryPolicy};
use holon::runtime::provider::{
    Provider, ProviderFailure, ProviderOutcome, ProviderProgress, ProviderRound,
};
use serde_json::{json, Value};

const OPENAI_KEY: &str = "sk-test-openai-123";
const ANTHROPIC_KEY: &str = "sk-ant-test-456";
const GPT: &str = "openai/gpt-4.1";

/// Environment snapshot, endpoint configs and policy for one chain.
pub(super) struct Setup {
    env: BTreeMap<String, String>,
    endpoints: BTreeMap<String, ProviderEndpointConfig>,
    policy: RetryPolicy,
}

impl Setup {
    pub(super) fn new() -> Setup {
        Setup {
            env: BTreeMap::new(),
            endpoints: BTreeMap::new(),
            policy: RetryPolicy {
                max_retries: 2,
                base_backoff: Duration::from_millis(5),
                max_backoff: Duration::from_millis(60),
                request_timeout: Duration::from_secs(3),
            },
        }
    }

    pub(super) fn var(mut self, name: &str, value: &str) -> Setup {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    pub(super) fn openai(self, stub: &StubServer) -> Setup {
        self.var("OPENAI_API_KEY", OPENAI_KEY)
            .var("OPENAI_BASE_URL", &format!("{}/v1", stub.base()))
    }

    pub(super) fn anthropic(self, stub: &StubServer) -> Setup {
        self.var("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .var("ANTHROPIC_BASE_URL", stub.base())
    }

    /// A `[providers.<name>]` entry, parsed from TOML as config.toml would be.
    pub(super) fn endpoint(
        mut self,
        name: &str,
        base: &str,
        key_env: Option<&str>,
        wire: &str,
        streaming: &str,
    ) -> Setup {
        let key = key_env.map_or_else(String::new, |k| format!("api_key_env = {k:?}\n"));
        let text =
            format!("base_url = {base:?}\nwire = {wire:?}\nstreaming = {streaming:?}\n{key}");
        let config = toml::from_str(&text).unwrap_or_else(|e| panic!("endpoint config: {e}"));
        self.endpoints.insert(name.to_owned(), config);
        self
    }

    pub(super) fn timeout(mut self, timeout: Duration) -> Setup {
        self.policy.request_timeout = timeout;
        self
    }

    pub(super) fn chain(&self, default: &str, fallbacks: &[&str]) -> ProviderChain {
        let fallbacks: Vec<String> = fallbacks.iter().map(|s| (*s).to_owned()).collect();
        build_chain(default, &fallbacks, &self.env, &self.endpoints, self.policy)
            .unwrap_or_else(|f| panic!("build_chain: {}", f.artifact.summary))
    }
}

pub(super) async fn run(provider: &ProviderChain) -> (ProviderOutcome, Vec<String>) {
    let (outcome, deltas, _) = run_timed(provider).await;
    (outcome, deltas)
}

/// Also returns how long before the round completed the first delta came.
pub(super) async fn run_timed(
    provider: &ProviderChain,
) -> (ProviderOutcome, Vec<String>, Option<Duration>) {
    let deltas = Mutex::new(Vec::new());
    let progress = |p: ProviderProgress| {
        if let ProviderProgress::TextDelta(d) = p {
            let mut seen = deltas.lock().unwrap_or_else(|e| e.into_inner());
            seen.push((d, Instant::now()));
        }
    };
    let req = request();
    let outcome = provider.round(&req, &progress).await;
    let done = Instant::now();
    let deltas = deltas.into_inner().unwrap_or_else(|e| e.into_inner());
    let lead = deltas.first().map(|(_, at)| done.duration_since(*at));
    (outcome, deltas.into_iter().map(|(d, _)| d).collect(), lead)
}

pub(super) fn ok(o: &ProviderOutcome) -> &ProviderRound {
    o.result
        .as_ref()
        .unwrap_or_else(|f| panic!("round failed: {}", f.artifact.summary))
}

pub(super) fn err(o: &ProviderOutcome) -> &ProviderFailure {
    o.result
        .as_ref()
        .err()
        .unwrap_or_else(|| panic!("round succeeded: {:?}", o.result))
}

pub(super) fn snake<T: serde::Serialize>(v: T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The timeline as `model outcome [failure_kind] [-> fallback]` lines.
pub(super) fn timeline(o: &ProviderOutcome) -> Vec<String> {
    let line = |a: &holon::model::usage::ProviderAttemptRecord| {
        let kind = a
            .failure_kind
            .map(|k| format!(" {}", snake(k)))
            .unwrap_or_default();
        let next = if a.advanced_to_fallback {
            " -> fallback"
        } else {
            ""
        };
        format!("{} {}{kind}{next}", a.model_ref, snake(a.outcome))
    };
    o.timeline.attempts.iter().map(line).collect()
}

const TWO_CALLS: [Call<'static>; 2] = [
    ("fc_a", "ExecCommand", r#"{"cmd":"ls -la"}"#),
    ("fc_b", "ReadFile", r#"{"path":"README.md"}"#),
];

fn assert_two_calls(round: &ProviderRound) {
    let got: Vec<(&str, &str, Value)> = round
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
        .collect();
    let want = vec![
        ("fc_a", "ExecCommand", json!({"cmd": "ls -la"})),
        ("fc_b", "ReadFile", json!({"path": "README.md"})),
    ];
    assert_eq!(got, want);
}

#[tokio::test]
async fn responses_parallel_tool_calls_non_streaming() {
    let stub = StubServer::start(vec![Canned::json(
        200,
        canned::responses_json("", &TWO_CALLS),
    )])
    .await;
    let (o, deltas) = run(&Setup::new().openai(&stub).chain(GPT, &[])).await;
    let round = ok(&o);
    assert_two_calls(round);
    assert!(deltas.is_empty());
    assert_eq!(round.token_usage.map(|u| u.total_tokens), Some(18));
    assert_eq!(round.model_ref, GPT);
    assert_eq!(timeline(&o), ["openai/gpt-4.1 succeeded"]);
    assert_eq!(o.timeline.winning_model_ref.as_deref(), Some(GPT));
    assert_eq!(
        o.timeline.aggregated_token_usage.map(|u| u.total_tokens),
        Some(18)
    );
    let reqs = stub.requests();
    assert_eq!((reqs.len(), reqs[0].path.as_str()), (1, "/v1/responses"));
    assert_eq!(reqs[0].body["stream"], false);
    check_request(
        &reqs[0],
        Wire::Responses,
        Auth::Bearer(OPENAI_KEY),
        "gpt-4.1",
    );
}

#[tokio::test]
async fn responses_streaming_text_deltas_reach_progress_in_order() {
    let frames = canned::responses_sse(&["Hel", "lo, ", "operator"], &[]);
    let stall = Duration::from_millis(150);
    let stub = StubServer::start(vec![Canned::sse(frames).stall_before_last(stall)]).await;
    let setup = Setup::new()
        .endpoint(
            "gateway",
            stub.base(),
            Some("GATEWAY_KEY"),
            "openai_responses",
            "on",
        )
        .var("GATEWAY_KEY", "gw-key");
    let (o, deltas, lead) = run_timed(&setup.chain("gateway/gpt-x", &[])).await;
    assert_eq!(deltas, ["Hel", "lo, ", "operator"]);
    // Deltas arrive while the stream is still open, not at the end.
    assert!(
        lead.is_some_and(|l| l >= Duration::from_millis(100)),
        "{lead:?}"
    );
    assert_eq!(
        (ok(&o).text.as_str(), ok(&o).tool_calls.len()),
        ("Hello, operator", 0)
    );
    let reqs = stub.requests();
    assert_eq!(
        (reqs[0].path.as_str(), &reqs[0].body["stream"]),
        ("/responses", &json!(true))
    );
    assert_eq!(
        reqs[0].headers.get("accept").map(String::as_str),
        Some("text/event-stream")
    );
    check_request(&reqs[0], Wire::Responses, Auth::Bearer("gw-key"), "gpt-x");
}

#[tokio::test]
async fn anthropic_streaming_parallel_tool_calls() {
    let stub = StubServer::start(vec![Canned::sse(canned::anthropic_sse(
        &["Let me ", "check."],
        &TWO_CALLS,
    ))])
    .await;
    let (o, deltas) = run(&Setup::new()
        .anthropic(&stub)
        .chain("anthropic/claude-sonnet-4-5", &[]))
    .await;
    let round = ok(&o);
    assert_two_calls(round);
    assert_eq!(deltas, ["Let me ", "check."]);
    assert_eq!(
        (round.text.as_str(), round.stop_reason.as_deref()),
        ("Let me check.", Some("tool_use"))
    );
    assert_eq!(
        round.token_usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((20, 9))
    );
    let reqs = stub.requests();
    assert_eq!(
        (reqs[0].path.as_str(), &reqs[0].body["stream"]),
        ("/v1/messages", &json!(true))
    );
    assert_eq!(reqs[0].body["max_tokens"], 512);
    check_request(
        &reqs[0],
        Wire::Anthropic,
        Auth::AnthropicKey(ANTHROPIC_KEY),
        "claude-sonnet-4-5",
    );
}

#[tokio::test]
async fn anthropic_non_streaming_text_only() {
    let stub = StubServer::start(vec![Canned::json(
        200,
        canned::anthropic_json("All done.", &[]),
    )])
    .await;
    let setup = Setup::new()
        .endpoint(
            "claude",
            stub.base(),
            Some("CLAUDE_KEY"),
            "anthropic_messages",
            "off",
        )
        .var("CLAUDE_KEY", "ck-1");
    let (o, deltas) = run(&setup.chain("claude/opus", &[])).await;
    let round = ok(&o);
    assert_eq!(
        (round.text.as_str(), round.tool_calls.len()),
        ("All done.", 0)
    );
    assert_eq!(round.stop_reason.as_deref(), Some("end_turn"));
    assert!(deltas.is_empty());
    let reqs = stub.requests();
    assert_eq!(reqs[0].body["stream"], false);
    check_request(
        &reqs[0],
        Wire::Anthropic,
        Auth::AnthropicKey("ck-1"),
        "opus",
    );
}

#[tokio::test]
async fn ollama_chat_streaming_deltas_and_parallel_calls() {
    let stub = StubServer::start(vec![Canned::sse(canned::chat_sse(
        &["one ", "two ", "three"],
        &TWO_CALLS,
    ))])
    .await;
    let setup = Setup::new().var("OLLAMA_HOST", stub.host_port());
    let (o, deltas) = run(&setup.chain("ollama/llama3.2", &[])).await;
    assert_two_calls(ok(&o));
    assert_eq!(deltas, ["one ", "two ", "three"]);
    assert_eq!(ok(&o).token_usage.map(|u| u.total_tokens), Some(34));
    let reqs = stub.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].body["stream_options"]["include_usage"], true);
    check_request(&reqs[0], Wire::Chat, Auth::None, "llama3.2");
}

#[tokio::test]
async fn compatible_chat_endpoint_non_streaming_text() {
    let stub = StubServer::start(vec![Canned::json(
        200,
        canned::chat_json("plain answer", &[]),
    )])
    .await;
    let base = format!("{}/v1", stub.base());
    let setup = Setup::new()
        .endpoint(
            "together",
            &base,
            Some("TOGETHER_API_KEY"),
            "openai_chat",
            "off",
        )
        .var("TOGETHER_API_KEY", "tg-key");
    let (o, _) = run(&setup.chain("together/meta/llama-3", &[])).await;
    assert_eq!(
        (ok(&o).text.as_str(), ok(&o).stop_reason.as_deref()),
        ("plain answer", Some("stop"))
    );
    let reqs = stub.requests();
    assert_eq!(reqs[0].body["stream"], false);
    check_request(&reqs[0], Wire::Chat, Auth::Bearer("tg-key"), "meta/llama-3");
}

#[tokio::test]
async fn rate_limited_then_success_honours_capped_retry_after() {
    let body = json!({"error": {"message": "slow down", "type": "rate_limit_error"}});
    let limited = Canned::json(429, body).header("Retry-After", "30");
    let stub = StubServer::start(vec![
        limited,
        Canned::json(200, canned::responses_json("ok", &[])),
    ])
    .await;
    let (o, _) = run(&Setup::new().openai(&stub).chain(GPT, &[])).await;
    assert_eq!(ok(&o).text, "ok");
    assert_eq!(
        timeline(&o),
        [
            "openai/gpt-4.1 retrying rate_limited",
            "openai/gpt-4.1 succeeded"
        ]
    );
    let first = &o.timeline.attempts[0];
    // Retry-After: 30 s, capped by the policy's 60 ms max backoff.
    assert_eq!(
        (first.attempt, first.max_attempts, first.backoff_ms),
        (1, 3, Some(60))
    );
    // And waited: the second attempt started at least that long after the
    // first ended, as the timeline records them.
    let at = |ts: &Option<String>| {
        ts.as_deref()
            .and_then(holon::runtime::scheduler::parse_ts_ms)
    };
    let (ended, next) = (
        at(&first.completed_at),
        at(&o.timeline.attempts[1].started_at),
    );
    assert!(
        matches!((ended, next), (Some(e), Some(n)) if n - e >= 60),
        "{ended:?} then {next:?}"
    );
    assert_eq!(
        first.transport_diagnostics.as_ref().and_then(|d| d.status),
        Some(429)
    );
    assert_eq!(o.timeline.attempts[1].attempt, 2);
    assert_eq!(stub.requests().len(), 2);
    for r in stub.requests() {
        check_request(&r, Wire::Responses, Auth::Bearer(OPENAI_KEY), "gpt-4.1");
    }
}

#[tokio::test]
async fn server_errors_exhaust_retries_then_fall_back() {
    let openai = StubServer::start(vec![
        Canned::json(500, json!({"error": {"message": "boom"}})),
        Canned::raw(502, "bad gateway"),
        Canned::json(503, json!({"error": {"message": "unavailable"}})),
    ])
    .await;
    let anthropic = StubServer::start(vec![Canned::sse(canned::anthropic_sse(
        &["fallback answer"],
        &[],
    ))])
    .await;
    let setup = Setup::new().openai(&openai).anthropic(&anthropic);
    let (o, _) = run(&setup.chain(GPT, &["anthropic/claude-haiku"])).await;
    assert_eq!(ok(&o).model_ref, "anthropic/claude-haiku");
    let expected = [
        "openai/gpt-4.1 retrying server_error",
        "openai/gpt-4.1 retrying server_error",
        "openai/gpt-4.1 retries_exhausted server_error -> fallback",
        "anthropic/claude-haiku succeeded",
    ];
    assert_eq!(timeline(&o), expected);
    let backoffs: Vec<Option<u64>> = o.timeline.attempts.iter().map(|a| a.backoff_ms).collect();
    assert_eq!(backoffs, [Some(5), Some(10), None, None]);
    assert!(o.timeline.attempts.iter().all(|a| a.duration_ms.is_some()));
    assert_eq!(o.timeline.requested_model_ref, GPT);
    assert_eq!(
        o.timeline.winning_model_ref.as_deref(),
        Some("anthropic/claude-haiku")
    );
    assert_eq!(openai.requests().len(), 3);
    let auth = Auth::AnthropicKey(ANTHROPIC_KEY);
    check_request(
        &anthropic.requests()[0],
        Wire::Anthropic,
        auth,
        "claude-haiku",
    );
}

#[tokio::test]
async fn auth_failure_fails_fast_and_advances_to_fallback() {
    let body = json!({"error": {"message": "Incorrect API key", "code": "invalid_api_key"}});
    let openai = StubServer::start(vec![Canned::json(401, body)]).await;
    let ollama = StubServer::start(vec![Canned::sse(canned::chat_sse(&["local"], &[]))]).await;
    let setup = Setup::new()
        .openai(&openai)
        .var("OLLAMA_HOST", ollama.base());
    let (o, _) = run(&setup.chain(GPT, &["ollama/qwen3"])).await;
    assert_eq!(ok(&o).text, "local");
    let expected = [
        "openai/gpt-4.1 fail_fast_aborted auth_failed -> fallback",
        "ollama/qwen3 succeeded",
    ];
    assert_eq!(timeline(&o), expected);
    assert_eq!(openai.requests().len(), 1);
}

#[tokio::test]
async fn auth_failure_without_fallback_names_the_key_and_never_leaks_it() {
    let message = format!("Incorrect API key provided: {OPENAI_KEY}");
    let body = json!({"error": {"message": message, "code": "invalid_api_key"}});
    let stub = StubServer::start(vec![Canned::json(403, body)]).await;
    let (o, _) = run(&Setup::new().openai(&stub).chain(GPT, &[])).await;
    let f = err(&o);
    assert_eq!(f.kind, FailureKind::AuthFailed);
    assert_eq!(
        f.artifact.summary,
        "openai/gpt-4.1: authentication failed (403): check OPENAI_API_KEY"
    );
    assert_eq!(
        (f.artifact.category, f.artifact.status),
        (FailureCategory::Transport, Some(403))
    );
    let failure = serde_json::to_string(f).unwrap_or_default();
    let attempts = serde_json::to_string(&o.timeline).unwrap_or_default();
    let shown = format!("{failure}{attempts}");
    assert!(!shown.contains(OPENAI_KEY), "key leaked: {shown}");
    assert!(shown.contains("[redacted]"));
    assert_eq!(
        timeline(&o),
        ["openai/gpt-4.1 fail_fast_aborted auth_failed"]
    );
}

#[tokio::test]
async fn malformed_json_is_invalid_and_malformed_arguments_are_kept_for_the_model() {
    let bad_args = canned::chat_json("", &[("c1", "ExecCommand", r#"{"cmd": "#)]);
    let stub = StubServer::start(vec![
        Canned::raw(200, "{not json"),
        Canned::json(200, bad_args),
    ])
    .await;
    let setup = Setup::new().endpoint("compat", stub.base(), None, "openai_chat", "off");
    let p = setup.chain("compat/m", &[]);
    let (o, _) = run(&p).await;
    let f = err(&o);
    assert_eq!(
        (f.kind, f.artifact.category),
        (FailureKind::InvalidResponse, FailureCategory::Protocol)
    );
    assert_eq!(
        timeline(&o),
        ["compat/m fail_fast_aborted invalid_response"]
    );
    // Arguments that are not JSON do not fail the round: the call carries
    // them, and the turn answers it with an invalid_arguments tool error.
    let (o, _) = run(&p).await;
    let call = &ok(&o).tool_calls[0];
    assert_eq!(call.arguments, json!({}));
    assert_eq!(
        call.malformed_arguments.as_ref().map(|m| m.raw.as_str()),
        Some(r#"{"cmd": "#)
    );
    assert_eq!(stub.requests().len(), 2);
    check_request(&stub.requests()[0], Wire::Chat, Auth::None, "m");
}

#[tokio::test]
async fn context_length_exceeded_stops_the_chain_without_fallback() {
    let openai_overflow = json!({"error": {"message": "This model's maximum context length is 8192 tokens",
        "type": "invalid_request_error", "code": "context_length_exceeded"}});
    let anthropic_overflow = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum"}});
    let openai = StubServer::start(vec![Canned::json(400, openai_overflow)]).await;
    let anthropic = StubServer::start(vec![
        Canned::json(400, anthropic_overflow),
        Canned::sse(canned::anthropic_sse(&["never"], &[])),
    ])
    .await;
    let setup = Setup::new().openai(&openai).anthropic(&anthropic);
    for (default, fallback) in [(GPT, "anthropic/claude"), ("anthropic/claude", GPT)] {
        let (o, _) = run(&setup.chain(default, &[fallback])).await;
        let f = err(&o);
        assert_eq!(
            (f.kind, f.artifact.category),
            (FailureKind::ContextLengthExceeded, FailureCategory::Runtime)
        );
        assert!(
            f.artifact.summary.contains("context length exceeded"),
            "{}",
            f.artifact.summary
        );
        assert_eq!(
            timeline(&o),
            [format!(
                "{default} fail_fast_aborted context_length_exceeded"
            )]
        );
    }
    let counts = (openai.requests().len(), anthropic.requests().len());
    assert_eq!(counts, (1, 1), "no fallback request");
}

#[tokio::test]
async fn slow_response_times_out_then_retry_succeeds() {
    let slow = Canned::json(200, canned::responses_json("late", &[])).delay(Duration::from_secs(2));
    let stub = StubServer::start(vec![
        slow,
        Canned::json(200, canned::responses_json("fast", &[])),
    ])
    .await;
    let setup = Setup::new()
        .openai(&stub)
        .timeout(Duration::from_millis(150));
    // The slow answer (2 s) is given up at the 150 ms timeout: the answer
    // is the retry's.
    let (o, _) = run(&setup.chain(GPT, &[])).await;
    assert_eq!(ok(&o).text, "fast");
    assert_eq!(
        timeline(&o),
        [
            "openai/gpt-4.1 retrying timeout",
            "openai/gpt-4.1 succeeded"
        ]
    );
    let first = &o.timeline.attempts[0];
    assert!(
        first.duration_ms.is_some_and(|d| (140..900).contains(&d)),
        "{:?}",
        first.duration_ms
    );
    let diag = first.transport_diagnostics.as_ref();
    let flagged = diag
        .and_then(|d| d.reqwest.as_ref())
        .is_some_and(|r| r.is_timeout);
    assert!(
        flagged || diag.is_some_and(|d| d.stage == "deadline"),
        "{diag:?}"
    );
}

#[tokio::test]
async fn connect_failures_retry_then_fall_back() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let openai = StubServer::start(vec![Canned::json(
        200,
        canned::responses_json("reached", &[]),
    )])
    .await;
    let setup = Setup::new()
        .openai(&openai)
        .var("OLLAMA_HOST", &closed.to_string());
    let (o, _) = run(&setup.chain("ollama/llama3.2", &[GPT])).await;
    assert_eq!(ok(&o).text, "reached");
    let expected = [
        "ollama/llama3.2 retrying connect",
        "ollama/llama3.2 retrying connect",
        "ollama/llama3.2 retries_exhausted connect -> fallback",
        "openai/gpt-4.1 succeeded",
    ];
    assert_eq!(timeline(&o), expected);
    let diag = o.timeline.attempts[0]
        .transport_diagnostics
        .clone()
        .unwrap_or_default();
    assert!(diag.reqwest.is_some_and(|r| r.is_connect));
    assert!(!diag.source_chain.is_empty());
}

#[tokio::test]
async fn unresolvable_default_is_recorded_and_skipped() {
    let stub = StubServer::start(vec![Canned::json(200, canned::responses_json("hi", &[]))]).await;
    let (o, _) = run(&Setup::new().openai(&stub).chain("anthropic/claude", &[GPT])).await;
    assert_eq!(ok(&o).text, "hi");
    let expected = [
        "anthropic/claude fail_fast_aborted not_configured -> fallback",
        "openai/gpt-4.1 succeeded",
    ];
    assert_eq!(timeline(&o), expected);
}

#[tokio::test]
async fn overloaded_stream_error_is_retried() {
    let error =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let overloaded = vec![(Some("error".to_owned()), error.to_string())];
    let recovered = canned::anthropic_sse(&["recovered"], &[]);
    let stub = StubServer::start(vec![Canned::sse(overloaded), Canned::sse(recovered)]).await;
    let (o, deltas) = run(&Setup::new().anthropic(&stub).chain("anthropic/claude", &[])).await;
    assert_eq!(
        (ok(&o).text.as_str(), deltas),
        ("recovered", vec!["recovered".to_owned()])
    );
    assert_eq!(
        timeline(&o),
        [
            "anthropic/claude retrying server_error",
            "anthropic/claude succeeded"
        ]
    );
}

/// An answer cut off while it streams (the operator's Esc): the runtime
/// keeps what had streamed on `turn_terminal`, so every console shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_streaming_answer_keeps_what_had_streamed() {
    use holon::model::message::Priority;
    use holon::protocol::ControlAction;
    use holon::runtime::handle::{HostConfig, RuntimeHost};
    use holon::store::{Store, StoreOptions};
    // Only the three deltas: the stall comes before the last of them,
    // which is never sent (the stream's end would be sent after the
    // third, so stalling before it raced the abort).
    let mut frames = canned::responses_sse(
        &["The loop reads ", "the clock twice", " (never sent)"],
        &[],
    );
    frames.truncate(3);
    let stub = StubServer::start(vec![
        Canned::sse(frames).stall_before_last(Duration::from_secs(30))
    ])
    .await;
    let setup = Setup::new()
        .endpoint(
            "gateway",
            stub.base(),
            Some("GATEWAY_KEY"),
            "openai_responses",
            "on",
        )
        .var("GATEWAY_KEY", "gw-key");
    let chain: std::sync::Arc<dyn holon::runtime::provider::Provider> =
        std::sync::Arc::new(setup.chain("gateway/gpt-x", &[]));
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    let config = HostConfig::new(
        dir.path().join("data"),
        std::sync::Arc::new(move |_| chain.clone()),
    );
    let host = RuntimeHost::start(store, config).await.unwrap();
    host.create_agent("main").await.unwrap();
    let mut live = host.subscribe_live();
    host.submit(super::runtime_core::prompt("explain", Priority::Normal))
        .await
        .unwrap();
    // Both deltas before the stall have reached clients.
    let mut seen = String::new();
    while seen != "The loop reads the clock twice" {
        match tokio::time::timeout(Duration::from_secs(15), live.recv()).await {
            Ok(Ok(holon::runtime::handle::LiveUpdate::AssistantDelta { text, .. })) => {
                seen.push_str(&text)
            }
            other => panic!("no delta: {other:?}"),
        }
    }
    host.control("main", ControlAction::Abort).await.unwrap();
    let ended = super::runtime_core::wait_event(
        &host,
        "the aborted turn",
        super::runtime_core::kind("turn_terminal"),
    )
    .await;
    assert_eq!(ended.payload["kind"], "aborted");
    assert_eq!(ended.payload["cancel_reason"], "operator_abort");
    assert_eq!(
        ended.payload["partial_answer"],
        "The loop reads the clock twice"
    );
    host.shutdown().await;
}

/// The providers' HTTPS client does TLS with the process's provider (ring)
/// and verifies the server's certificate: a local server whose
/// certificate no authority signed is refused before any request is sent,
/// and nothing panics for want of a crypto provider. (The certificate and
/// key in tests/fixtures/tls are a throwaway pair made for this test.)
#[tokio::test]
async fn the_https_client_refuses_a_certificate_no_authority_signed() {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    let provider = std::sync::Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handshakes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&handshakes);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // The client gives up during the handshake: nothing to serve.
            let _ = acceptor.accept(tcp).await;
        }
    });
    let client = holon::runtime::provider::registry::http_client(&RetryPolicy::default()).unwrap();
    let err = client
        .get(format!("https://localhost:{port}/v1/models"))
        .send()
        .await
        .expect_err("an unsigned certificate was accepted");
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        chain.push_str(&format!(": {s}"));
        source = s.source();
    }
    assert!(err.is_connect(), "{chain}");
    assert!(chain.to_lowercase().contains("certificate"), "{chain}");
    assert_eq!(handshakes.load(std::sync::atomic::Ordering::SeqCst), 1);
}
