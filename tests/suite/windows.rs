//! A model's window learned from its server, through the real binary:
//! Ollama's `/api/show` asked once and kept, what a server says that is
//! absurd or never comes ignored, and the operator's setting over all.

use std::time::Duration;

use serde_json::{json, Value};

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{json_lines, stderr, Home};
use super::turn_e2e::{holon_run, run_json};

/// Ollama's `/api/show` for a model trained for `trained` tokens whose
/// Modelfile sets `num_ctx` (if given).
fn show(trained: Value, num_ctx: Option<Value>) -> Canned {
    let mut body = json!({"details": {"family": "qwen3"}, "model_info": {
        "general.architecture": "qwen3", "qwen3.context_length": trained,
        "qwen3.embedding_length": 4096}});
    if let Some(n) = num_ctx {
        body["parameters"] = json!(format!("stop \"<|im_end|>\"\nnum_ctx {n}"));
    }
    Canned::json(200, body)
}

fn answers(n: usize) -> Vec<Canned> {
    (0..n)
        .map(|_| Canned::sse(canned::chat_sse(&["ok"], &[])))
        .collect()
}

/// The window and its source each of the agent's turns recorded.
fn recorded(home: &Home, agent: &str) -> Vec<(u64, String)> {
    json_lines(&home.ok(&[
        "events",
        "--agent",
        agent,
        "--kind",
        "turn_context_built",
        "--json",
    ]))
    .iter()
    .map(|e| {
        (
            e["payload"]["context_window"].as_u64().unwrap_or(0),
            e["payload"]["window_source"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        )
    })
    .collect()
}

fn shows(stub: &StubServer) -> usize {
    stub.requests()
        .iter()
        .filter(|r| r.path == "/api/show")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_says_its_window_once_and_the_store_keeps_it() {
    let stub = StubServer::start(answers(4)).await;
    stub.route("/api/show", show(json!(40_960), Some(json!(32_768))));
    let home = Home::new();
    let envs = [
        ("HOLON_MODEL", "ollama/qwen3"),
        ("OLLAMA_HOST", stub.host_port()),
    ];
    for _ in 0..2 {
        let out = holon_run(&home, &envs, &["--json", "hello"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = holon_run(&home, &envs, &["--json", "hello"]).await;
    let agent = run_json(&out)["agent_id"].as_str().unwrap().to_owned();
    // Asked once: the second process read the store.
    assert_eq!(shows(&stub), 1, "{:?}", stub.requests());
    let show_request = stub
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/show")
        .unwrap();
    assert_eq!(show_request.body, json!({"model": "qwen3"}));
    let turns = recorded(&home, &agent);
    assert!(!turns.is_empty());
    assert!(
        turns.iter().all(|t| *t == (32_768, "server".to_owned())),
        "{turns:?}"
    );

    let models: Value = serde_json::from_str(&String::from_utf8_lossy(
        &holon_run_cmd(&home, &envs, &["models", "--json"])
            .await
            .stdout,
    ))
    .unwrap();
    let configured = &models["configured"][0];
    assert_eq!(configured["model_ref"], "ollama/qwen3");
    assert_eq!(configured["window"]["tokens"], 32_768);
    assert_eq!(configured["window"]["source"], "server");
    assert_eq!(
        configured["window"]["detail"],
        "ollama /api/show and /api/ps"
    );

    // The operator's window wins, and nothing is asked for it.
    let before = shows(&stub);
    let mut with_window = envs.to_vec();
    with_window.push(("HOLON_CONTEXT_WINDOW", "16384"));
    let out = holon_run(&home, &with_window, &["--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(shows(&stub), before);
    let agent = run_json(&out)["agent_id"].as_str().unwrap().to_owned();
    let last = recorded(&home, &agent).pop().unwrap();
    assert_eq!(last, (16_384, "environment".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_or_missing_answers_leave_the_catalog_in_force() {
    // An absurd window, a server that never answers in time, one that
    // fails, and a model whose serving size Ollama does not say (no
    // num_ctx, not loaded): its trained size would overstate it.
    for (canned, what) in [
        (
            show(json!(40_960), Some(json!(1_000_000_000_000u64))),
            "absurd",
        ),
        (
            show(json!(40_960), Some(json!(32_768))).delay(Duration::from_secs(5)),
            "hung",
        ),
        (Canned::json(500, json!({"error": "boom"})), "failing"),
        (show(json!(40_960), None), "unsaid"),
    ] {
        let stub = StubServer::start(answers(1)).await;
        stub.route("/api/show", canned);
        let home = Home::new();
        let envs = [
            ("HOLON_MODEL", "ollama/qwen3"),
            ("OLLAMA_HOST", stub.host_port()),
        ];
        let out = holon_run(&home, &envs, &["--json", "hello"]).await;
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let agent = run_json(&out)["agent_id"].as_str().unwrap().to_owned();
        let turns = recorded(&home, &agent);
        assert_eq!(turns[0].1, "known_model", "{what}: {turns:?}");
    }
}

async fn holon_run_cmd(home: &Home, envs: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = tokio::process::Command::from(home.cmd());
    cmd.envs(envs.iter().copied()).args(args);
    cmd.output().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_model_says_its_window_in_ps() {
    let stub = StubServer::start(answers(1)).await;
    stub.route("/api/show", show(json!(40_960), None));
    stub.route(
        "/api/ps",
        Canned::json(
            200,
            json!({"models": [{"name": "qwen3:latest", "model": "qwen3:latest",
                "context_length": 16_384}]}),
        ),
    );
    let home = Home::new();
    let envs = [
        ("HOLON_MODEL", "ollama/qwen3"),
        ("OLLAMA_HOST", stub.host_port()),
    ];
    let out = holon_run(&home, &envs, &["--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let agent = run_json(&out)["agent_id"].as_str().unwrap().to_owned();
    assert_eq!(recorded(&home, &agent), [(16_384, "server".to_owned())]);
}
