//! The prompt frame across turns: its cache identity, the working memory
//! a turn leaves for the next, the telemetry each round records, and the
//! stale-progress reminder of a long turn. In process, with the scripted
//! provider and the real holder.

use std::sync::Arc;

use serde_json::json;

use holon::model::agent::AgentRecord;
use holon::model::message::Priority;
use holon::runtime::handle::RuntimeHost;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::runtime::provider::{BlockStability, ProviderRequest};
use holon::store::{Store, StoreOptions};

use super::runtime_core::{config, events, prompt, wait_event};

fn agent(host: &RuntimeHost) -> AgentRecord {
    host.store()
        .read()
        .unwrap()
        .agent::<AgentRecord>("main")
        .unwrap()
        .unwrap()
}

fn block<'a>(r: &'a ProviderRequest, starts: &str) -> Option<&'a str> {
    r.context_blocks
        .iter()
        .map(|b| b.text.as_str())
        .find(|t| t.starts_with(starts))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_leaves_working_memory_and_telemetry_and_the_cache_key_holds() {
    let patch = "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hello\n";
    let r = super::runtime_core::rig(vec![
        Scripted::tools(
            "",
            &[
                ("ApplyPatch", json!({ "patch": patch })),
                ("ExecCommand", json!({ "cmd": "true # cargo test" })),
                ("NoSuchTool", json!({})),
            ],
        ),
        Scripted::text("first done"),
        Scripted::text("second done"),
    ])
    .await;
    r.host
        .submit(prompt("one", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "first brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "first done"
    })
    .await;
    let a = agent(&r.host);
    let patched: Vec<String> = events(&r.host)
        .iter()
        .filter(|e| e.kind == "tool_executed" && e.payload["tool_name"] == "ApplyPatch")
        .map(|e| e.payload["result_preview"].to_string())
        .collect();
    assert_eq!(a.working_memory.revision, 1, "{:?}", a.working_memory);
    assert_eq!(a.working_memory.current.files, ["notes.txt"], "{patched:?}");
    let names: Vec<&str> = a
        .tool_latency
        .iter()
        .map(|t| t.tool_name.as_str())
        .collect();
    assert!(
        names.contains(&"ApplyPatch") && names.contains(&"ExecCommand"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"NoSuchTool"),
        "a made-up tool is not timed"
    );
    assert!(a.tool_latency.iter().all(|t| t.calls == 1));
    assert!(a.last_turn_usage.is_some(), "the last turn's usage is kept");

    r.host
        .submit(prompt("two", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "second brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "second done"
    })
    .await;
    let requests = r.provider.requests();
    assert_eq!(requests.len(), 3);
    let (first, second) = (&requests[0], &requests[2]);
    assert!(
        block(first, "Working state").is_none(),
        "none before a turn ended"
    );
    let memory = block(second, "Working state (revision 1").expect("working memory shown");
    for said in [
        "files touched: notes.txt",
        "last verification: `true # cargo test` passed",
        "last result: first done",
        "Since your last prompt:",
    ] {
        assert!(memory.contains(said), "{said} in {memory}");
    }
    // The frame's system prompt is a block of its own; its cache key holds
    // across turns while its fingerprint follows the whole context.
    assert_eq!(second.system_blocks.len(), 1);
    assert!(second.system_blocks[0].cache_breakpoint);
    let (c1, c2) = (first.cache.clone().unwrap(), second.cache.clone().unwrap());
    assert_eq!(c1.prompt_cache_key, c2.prompt_cache_key);
    assert!(c1.prompt_cache_key.starts_with("holon:main:"));
    assert_ne!(c1.context_fingerprint, c2.context_fingerprint);
    assert_eq!(
        (c1.working_memory_revision, c2.working_memory_revision),
        (0, 1)
    );
    // How its turns ran, in its status.
    let request = holon::protocol::Request::AgentStatus {
        agent_id: "main".into(),
    };
    let status = holon::protocol::call_json(&r.host, request).await.unwrap();
    let profile = &status["execution_profile"];
    assert_eq!(profile["turns"], 2, "{status}");
    assert_eq!(profile["mean_rounds_per_turn"], 1.5, "{profile}");
    assert!(profile["slowest_tools"].as_array().unwrap().len() <= 3);
    // Shown once: the delta is marked as prompted at the turn's end.
    let a = agent(&r.host);
    assert_eq!(a.working_memory.last_prompted_revision, 1);

    let all = events(&r.host);
    let built: Vec<_> = all
        .iter()
        .filter(|e| e.kind == "turn_context_built")
        .collect();
    assert_eq!(built.len(), 2, "one a turn");
    assert_eq!(built[1].payload["working_memory_revision"], 1);
    assert!(built[1].payload["sections"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == "working_memory"));
    let round = all
        .iter()
        .find(|e| e.kind == "provider_round_completed")
        .unwrap();
    assert_eq!(
        round.payload["prompt_cache_key"],
        json!(c1.prompt_cache_key)
    );
    assert!(round.payload["cacheable_tokens_estimate"].as_u64().unwrap() > 0);
    assert!(
        round.payload["provider_started_at"].as_str().unwrap()
            <= round.payload["provider_completed_at"].as_str().unwrap()
    );
    // Transcript rounds carry their tokens at the top level too.
    let rx = r.host.store().read().unwrap();
    let entries: Vec<serde_json::Value> = rx.list(holon::store::Keyed::Transcript, "main").unwrap();
    let round = entries
        .iter()
        .find(|e| e["kind"] == "assistant_round")
        .unwrap();
    assert_eq!(round["input_tokens"], round["token_usage"]["input_tokens"]);
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_without_work_item_updates_is_reminded_then_again_after_the_cooldown() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    let mut script: Vec<Scripted> = (0..6)
        .map(|_| Scripted::tools("", &[("ExecCommand", json!({"cmd": "true"}))]))
        .collect();
    script.push(Scripted::text("worked on it"));
    let provider = Arc::new(ScriptedProvider::new(script));
    let mut c = config(dir.path(), Arc::clone(&provider));
    c.stale_reminder = holon::runtime::context::stale::StaleConfig {
        rounds: 2,
        cooldown_rounds: 3,
        max_tokens: 400,
    };
    let host = RuntimeHost::start(store, c).await.unwrap();
    host.create_agent("main").await.unwrap();
    let item = host
        .create_work_item(
            "main",
            serde_json::from_value(json!({"objective": "port the parser"})).unwrap(),
        )
        .await
        .unwrap();
    host.pick_work_item("main", &item.id).await.unwrap();
    host.submit(prompt("go on", Priority::Normal))
        .await
        .unwrap();
    wait_event(&host, "the answer", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "worked on it"
    })
    .await;
    let reminded: Vec<usize> = provider
        .requests()
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            // With the turn state, after the conversation, never in it.
            let in_state = r.context_blocks.iter().any(|b| {
                b.stability == BlockStability::TurnScoped
                    && b.text
                        .starts_with("[Runtime reminder, not from the operator]")
            });
            let in_talk = serde_json::to_string(&r.conversation)
                .unwrap_or_default()
                .contains("[Runtime reminder");
            assert!(!in_talk, "never part of the conversation");
            in_state
        })
        .map(|(i, _)| i + 1)
        .collect();
    // Rounds 3 and 6: after two rounds without progress, then after the
    // cooldown; never kept in the conversation for the rounds between.
    assert_eq!(reminded, [3, 6], "{reminded:?}");
    let text = serde_json::to_string(&provider.requests()[2].context_blocks).unwrap();
    assert!(text.contains("port the parser"), "{text}");
    let flagged = events(&host)
        .iter()
        .filter(|e| e.kind == "provider_round_completed" && e.payload["work_item_reminder"] == true)
        .count();
    assert_eq!(flagged, 2);
    host.shutdown().await;
}
