//! A system clock that steps back: a runtime restarted under an earlier
//! clock keeps its history in order (ids sort after every one kept), so
//! the model reads the conversation as it happened.

use holon_stub::{canned, Canned, StubServer};
use serde_json::Value;

use super::support::{json_lines, poll, stderr, Daemon, Home};

const HOUR_MS: i64 = 3_600_000;

/// The user and assistant texts of a Chat Completions request, in order.
fn conversation(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// Run the home's runtime on a clock paused at `at_ms` until one more
/// turn ended after `prompt` was sent.
fn one_turn(home: &Home, at_ms: i64, prompt: &str, turns_before: usize) {
    let clock = holon::format_ts(at_ms);
    let out = home
        .cmd()
        .env("HOLON_DEBUG_CLOCK", &clock)
        .env("K", "sk")
        .arg("--detach")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(home);
    home.ok(&["send", prompt]);
    poll("the turn's end", || {
        let ended = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]))
            .iter()
            .filter(|e| e["kind"] == "turn_terminal")
            .count();
        (ended > turns_before).then_some(())
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_under_a_clock_an_hour_back_keeps_the_conversation_in_order() {
    let stub = StubServer::start(vec![
        Canned::json(200, canned::chat_json("first answer", &[])),
        Canned::json(200, canned::chat_json("second answer", &[])),
    ])
    .await;
    let home = Home::new();
    let config = home.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[model]\ndefault = \"stub/m\"\n\n[providers.stub]\nbase_url = \"{}/v1\"\n\
             wire = \"openai_chat\"\nstreaming = \"off\"\napi_key_env = \"K\"\n",
            stub.base()
        ),
    )
    .unwrap();
    let now = holon::now_ms();
    one_turn(&home, now, "first question", 0);
    // The runtime restarts under a clock an hour behind the first's.
    one_turn(&home, now - HOUR_MS, "second question", 1);
    let requests = stub.requests();
    assert_eq!(requests.len(), 2, "two model requests");
    // The turn state (work queue, execution) follows the conversation:
    // it is not part of it.
    let seen: Vec<String> = conversation(&requests[1].body)
        .into_iter()
        .filter(|m| !holon::runtime::provider::wire::is_turn_state(m))
        .collect();
    let tail: Vec<&str> = seen
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(tail.len(), 3, "{seen:?}");
    assert!(
        tail[0].contains("first question")
            && tail[1].contains("first answer")
            && tail[2].contains("second question"),
        "the model reads the conversation in the order it happened: {seen:?}"
    );
}
