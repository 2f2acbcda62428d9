//! MCP tools on demand, for real: a stub server offering many large tools
//! through a real runtime. Past their share of the prompt budget they are
//! not sent; the model finds them with ToolSearch, a call of one never
//! loaded is answered with its schema, and the start of every request
//! (system blocks and the tools before the loaded ones) stays byte for
//! byte the same while tools load.

use std::sync::Arc;

use serde_json::{json, Value};

use super::mcp::{host, results, stub_config};
use super::runtime_core::{events, kind, prompt, wait_event};
use holon::model::approval::Approval;
use holon::model::message::Priority;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::runtime::provider::ProviderRequest;

const SEARCH: &str = "ToolSearch";

fn names(r: &ProviderRequest) -> Vec<String> {
    r.tools.iter().map(|t| t.name.clone()).collect()
}

/// The part of a request a provider caches: its system blocks and the
/// tools up to ToolSearch, as bytes.
fn stable_prefix(r: &ProviderRequest) -> String {
    let at = r
        .tools
        .iter()
        .position(|t| t.name == SEARCH)
        .expect("ToolSearch is offered");
    serde_json::to_string(&(&r.system_blocks, &r.tools[..=at])).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_tools_are_found_on_demand_and_the_prefix_holds() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(
        ScriptedProvider::new(vec![
            Scripted::tools("Looking.", &[(SEARCH, json!({"query": "tool 7"}))]),
            Scripted::tools("Using it.", &[("mcp__big__tool_7", json!({"input": "a"}))]),
            // Never searched for: answered with its schema, not run.
            Scripted::tools("Guessing.", &[("mcp__big__tool_9", json!({"input": "b"}))]),
            Scripted::tools("Again.", &[("mcp__big__tool_9", json!({"input": "b"}))]),
            // A name no server has, and a search with nothing in it.
            Scripted::tools(
                "Odd ones.",
                &[
                    ("mcp__big__invented", json!({})),
                    (SEARCH, json!({"query": ""})),
                ],
            ),
            Scripted::text("Done."),
            // The next turn: what the history shows stays loaded.
            Scripted::text("Still here."),
        ])
        .with_context_window(64_000),
    );
    let log = dir.path().join("calls.log");
    let log_arg = log.display().to_string();
    let big = stub_config("big", &["--many", "60:1500", "--log", &log_arg]);
    let host = host(dir.path(), &provider, vec![big], Approval::Never).await;
    host.submit(prompt("go", Priority::Normal)).await.unwrap();
    let first_end = wait_event(&host, "the turn ends", kind("turn_terminal")).await;

    let requests = provider.requests();
    assert_eq!(requests.len(), 6);
    // Round 1: Holon's tools and ToolSearch, no MCP schema.
    let first = names(&requests[0]);
    assert_eq!(first.last().map(String::as_str), Some(SEARCH), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    // The search named tool_7 first and loaded it.
    let found = &results(&provider, 1)[0];
    assert_eq!(found.0, SEARCH);
    assert_eq!(found.1["loaded"][0], "mcp__big__tool_7", "{found:?}");
    assert!(names(&requests[1]).contains(&"mcp__big__tool_7".to_owned()));
    // The call ran at the server.
    let ran = results(&provider, 2);
    assert!(
        ran.iter().any(|(n, v, e)| n == "mcp__big__tool_7"
            && !e
            && v.to_string().contains("called tool_7")),
        "{ran:?}"
    );
    // tool_9 was never loaded: its schema comes back, and it is sent next.
    let guessed = results(&provider, 3);
    let (_, answer, is_error) = guessed
        .iter()
        .find(|(n, _, _)| n == "mcp__big__tool_9")
        .unwrap();
    assert_eq!(answer["not_run"], true, "{answer}");
    assert!(answer["input_schema"]["properties"]["input"].is_object());
    assert!(!is_error);
    assert!(names(&requests[3]).contains(&"mcp__big__tool_9".to_owned()));
    let again = results(&provider, 4);
    assert!(again
        .iter()
        .any(|(n, v, _)| n == "mcp__big__tool_9" && v.to_string().contains("called tool_9")));
    // What the server ran: tool_7 once, and tool_9 once, for the call
    // made after its schema was seen; the unseen call ran nothing.
    let served = std::fs::read_to_string(&log).unwrap_or_default();
    let runs = |tool: &str| served.lines().filter(|l| l.starts_with(tool)).count();
    assert_eq!((runs("tool_7 "), runs("tool_9 ")), (1, 1), "{served}");
    // The invented name is the server's to refuse; the empty search an
    // error that says what to give.
    let odd = results(&provider, 5);
    let invented = odd
        .iter()
        .find(|(n, _, _)| n == "mcp__big__invented")
        .unwrap();
    assert!(invented.2, "{invented:?}");
    let empty = odd.iter().rev().find(|(n, _, _)| n == SEARCH).unwrap();
    assert!(
        empty.2 && empty.1.to_string().contains("query"),
        "{empty:?}"
    );

    // Loaded tools come after the stable prefix, which never changes;
    // the cache key holds with it.
    let prefix = stable_prefix(&requests[0]);
    let key = requests[0].cache.as_ref().unwrap().prompt_cache_key.clone();
    for r in &requests {
        assert_eq!(stable_prefix(r), prefix);
        assert_eq!(r.cache.as_ref().unwrap().prompt_cache_key, key);
    }
    // Each round records what it sent and what it left out.
    let rounds: Vec<Value> = events(&host)
        .into_iter()
        .filter(|e| e.kind == "provider_round_completed")
        .map(|e| serde_json::to_value(&e).unwrap()["payload"].clone())
        .collect();
    assert!(
        rounds
            .iter()
            .all(|p| p["tools_deferred"].as_u64() >= Some(58)),
        "{rounds:?}"
    );
    let (sent, left) = (
        rounds[0]["tool_tokens"].as_u64().unwrap(),
        rounds[0]["deferred_tool_tokens"].as_u64().unwrap(),
    );
    assert!(left > 4 * sent, "sent ~{sent}, left out ~{left}");

    // The preview (`holon debug prompt`) says what the next request sends
    // and what it leaves to ToolSearch.
    let preview = host.prompt_preview("main").await.unwrap();
    let tools = preview.sections.iter().find(|s| s.name == "tools").unwrap();
    assert!(tools.text.contains("mcp__big__tool_9"), "{}", tools.text);
    assert!(
        tools.text.contains("MCP tools (~") && tools.text.contains("not sent"),
        "{}",
        tools.text
    );

    // The next turn keeps what the conversation shows in use.
    host.submit(prompt("more", Priority::Normal)).await.unwrap();
    wait_event(&host, "the second turn ends", |e| {
        e.kind == "turn_terminal" && e.event_seq > first_end.event_seq
    })
    .await;
    let next = names(provider.requests().last().unwrap());
    for loaded in ["mcp__big__tool_7", "mcp__big__tool_9"] {
        assert!(next.contains(&loaded.to_owned()), "{next:?}");
    }
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_within_its_share_is_sent_whole() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::text("Hi.")]));
    let host = host(
        dir.path(),
        &provider,
        vec![stub_config("stub", &[])],
        Approval::Never,
    )
    .await;
    host.submit(prompt("go", Priority::Normal)).await.unwrap();
    wait_event(&host, "the turn ends", kind("turn_terminal")).await;
    let sent = names(&provider.requests()[0]);
    assert!(sent.contains(&"mcp__stub__echo".to_owned()), "{sent:?}");
    assert!(!sent.contains(&SEARCH.to_owned()), "{sent:?}");
    host.shutdown().await;
}

/// Through the real binary: `[mcp] tool_budget_share` read from the
/// config file, a model over HTTP, the stub MCP server as a child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_defers_past_the_configured_share_over_http() {
    use super::stub_provider::{canned, Canned, StubServer};
    let model = StubServer::start(vec![
        Canned::json(
            200,
            canned::chat_json(
                "",
                &[("c1", SEARCH, r#"{"query":"select:mcp__big__tool_3"}"#)],
            ),
        ),
        Canned::json(
            200,
            canned::chat_json("", &[("c2", "mcp__big__tool_3", r#"{"input":"z"}"#)]),
        ),
        Canned::json(200, canned::chat_json("It answered.", &[])),
    ])
    .await;
    let home = super::support::Home::new();
    let dir = home.path().join("config");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[model]\ndefault = \"stub/local\"\n\n[providers.stub]\nbase_url = \"{}/v1\"\n\
             wire = \"openai_chat\"\nstreaming = \"off\"\ncontext_window = 32768\n\n\
             [policy]\napproval = \"never\"\n\n[mcp]\ntool_budget_share = 0.1\n\n\
             [mcp_servers.big]\ncommand = \"{}\"\nargs = [\"--many\", \"40:1500\"]\nsandbox = \"off\"\n",
            model.base(),
            super::mcp::stub_server().display()
        ),
    )
    .unwrap();
    let out = super::turn_e2e::holon_run(&home, &[], &["--json", "use tool 3"]).await;
    assert!(out.status.success(), "{}", super::support::stderr(&out));
    assert_eq!(
        super::turn_e2e::run_json(&out)["final_text"],
        "It answered."
    );
    let bodies: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3);
    let tool_names = |b: &Value| -> Vec<String> {
        b["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = tool_names(&bodies[0]);
    assert_eq!(first.last().map(String::as_str), Some(SEARCH));
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    let second = tool_names(&bodies[1]);
    assert_eq!(second.last().map(String::as_str), Some("mcp__big__tool_3"));
    // The tools before the loaded one are the same bytes as before.
    let prefix = |b: &Value, n: usize| b["tools"].as_array().unwrap()[..n].to_vec();
    assert_eq!(
        prefix(&bodies[0], first.len()),
        prefix(&bodies[1], first.len())
    );
    assert_eq!(
        prefix(&bodies[1], second.len()),
        prefix(&bodies[2], second.len())
    );
    // The tool ran at the server.
    let messages = bodies[2]["messages"].as_array().unwrap();
    assert!(
        messages.iter().any(|m| m["role"] == "tool"
            && m["content"]
                .as_str()
                .unwrap_or("")
                .contains("called tool_3")),
        "{messages:?}"
    );
}
