use serde_json::json;

use super::*;
use crate::runtime::settings::limits::DEFAULT_MCP_TOOL_SHARE;

fn spec(name: &str, description: &str, schema_bytes: usize) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "x".repeat(schema_bytes)}}}),
        freeform_field: None,
    }
}

fn catalog() -> Vec<ToolSpec> {
    vec![
        spec("ExecCommand", "Run a command.", 10),
        spec("ReadFile", "Read a file.", 10),
        spec(
            "mcp__fs__read_text_file",
            "Read a text file's contents.",
            2_000,
        ),
        spec(
            "mcp__fs__list_directory",
            "List the entries of a directory.",
            2_000,
        ),
        spec("mcp__fs__move_file", "Move or rename a file.", 2_000),
        spec(
            "mcp__memory__create_entities",
            "Create entities in the knowledge graph.",
            2_000,
        ),
        spec(
            "mcp__memory__search_nodes",
            "Search the knowledge graph's nodes.",
            2_000,
        ),
    ]
}

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments: args,
        malformed_arguments: None,
    }
}

fn names(tools: &[ToolSpec]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn a_small_catalog_is_sent_whole_and_a_large_one_deferred() {
    let whole = Offer::new(catalog(), 1_000_000, DEFAULT_MCP_TOOL_SHARE);
    assert!(!whole.deferred());
    assert_eq!(whole.sent().len(), 7);
    assert!(!names(&whole.sent()).contains(&TOOL_SEARCH));

    let deferred = Offer::new(catalog(), 8_000, DEFAULT_MCP_TOOL_SHARE);
    assert!(deferred.deferred());
    assert_eq!(
        names(&deferred.sent()),
        ["ExecCommand", "ReadFile", TOOL_SEARCH]
    );
    let counts = deferred.sent_counts();
    assert_eq!((counts.tools, counts.deferred), (3, 5));
    assert!(counts.deferred_tokens > 4 * counts.tokens, "{counts:?}");
    // No MCP tools: nothing to defer, whatever the share.
    let none = Offer::new(catalog()[..2].to_vec(), 10, 0.0);
    assert!(!none.deferred());
}

#[test]
fn a_search_loads_the_best_matches_after_the_stable_prefix() {
    let mut offer = Offer::new(catalog(), 8_000, DEFAULT_MCP_TOOL_SHARE);
    let before = offer.sent();
    let answer = offer.search(&call(TOOL_SEARCH, json!({"query": "read file"})));
    assert!(!answer.is_error);
    // The clear winner is loaded; weaker matches are only listed.
    assert_eq!(answer.content["loaded"], json!(["mcp__fs__read_text_file"]));
    assert!(answer.content["matches"].as_array().unwrap().len() > 1);
    let after = offer.sent();
    // The tools sent before are sent again first, unchanged.
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(names(&after[before.len()..]), ["mcp__fs__read_text_file"]);

    // select: loads by exact name; unknown names are left out.
    let answer = offer.search(&call(
        TOOL_SEARCH,
        json!({"query": "select:mcp__memory__search_nodes, nope"}),
    ));
    assert_eq!(
        answer.content["loaded"],
        json!(["mcp__memory__search_nodes"])
    );
    let last = offer.sent();
    assert_eq!(&last[..after.len()], &after[..]);
}

#[test]
fn searches_rank_name_words_over_description_words() {
    let tools = catalog();
    let ranked = rank(&tools, "knowledge graph search");
    assert_eq!(ranked[0].1.name, "mcp__memory__search_nodes");
    assert!(rank(&tools, "zebra").is_empty());
    // camelCase and snake_case split alike.
    assert_eq!(
        words("readTextFile read_text"),
        ["read", "text", "file", "read", "text"]
    );
}

#[test]
fn bad_queries_are_bounded_and_answered() {
    let mut offer = Offer::new(catalog(), 8_000, DEFAULT_MCP_TOOL_SHARE);
    let empty = offer.search(&call(TOOL_SEARCH, json!({"query": "  "})));
    assert!(empty.is_error);
    let missing = offer.search(&call(TOOL_SEARCH, json!({})));
    assert!(missing.is_error);
    // A 10 KB query reads its first words only and still answers.
    let huge = format!("file {}", "word ".repeat(2_000));
    let answer = offer.search(&call(TOOL_SEARCH, json!({"query": huge, "limit": 99})));
    assert!(!answer.is_error);
    assert!(answer.content["loaded"].as_array().unwrap().len() <= 10);
    let none = offer.search(&call(TOOL_SEARCH, json!({"query": "zebra"})));
    assert_eq!(none.content["loaded"], json!([]));
    assert!(none.content["note"]
        .as_str()
        .unwrap()
        .contains("fs, memory"));
}

#[test]
fn a_call_to_an_unloaded_tool_gets_its_schema_and_loads_it() {
    let mut offer = Offer::new(catalog(), 8_000, DEFAULT_MCP_TOOL_SHARE);
    let carried: Vec<String> = offer.sent().into_iter().map(|t| t.name).collect();
    let c = call("mcp__fs__move_file", json!({"from": "a"}));
    let answer = offer
        .unloaded(&c, &carried)
        .expect("answered with its schema");
    assert_eq!(answer.content["not_run"], true);
    assert!(answer.content["input_schema"].is_object());
    assert!(names(&offer.sent()).contains(&"mcp__fs__move_file"));
    // A second call in the same round is answered the same: the model
    // has still not seen the schema.
    assert!(offer.unloaded(&c, &carried).is_some());
    // Carried by the next request: that call goes ahead.
    let carried: Vec<String> = offer.sent().into_iter().map(|t| t.name).collect();
    assert!(offer.unloaded(&c, &carried).is_none());
    // An invented name is the server's (or the gate's) to answer.
    assert!(offer
        .unloaded(&call("mcp__fs__nope", json!({})), &carried)
        .is_none());
    assert!(offer
        .unloaded(&call("ExecCommand", json!({})), &carried)
        .is_none());
    // Sent whole: nothing is held back.
    let mut whole = Offer::new(catalog(), 1_000_000, DEFAULT_MCP_TOOL_SHARE);
    assert!(whole.unloaded(&c, &[]).is_none());
}

#[test]
fn the_conversation_says_what_is_loaded() {
    let mut offer = Offer::new(catalog(), 8_000, DEFAULT_MCP_TOOL_SHARE);
    let found = json!({"loaded": ["mcp__memory__create_entities"], "matches": []}).to_string();
    offer.note(&[
        ConversationItem::AssistantRound {
            reasoning: Vec::new(),
            text: String::new(),
            tool_calls: vec![
                call(TOOL_SEARCH, json!({"query": "entities"})),
                call("mcp__fs__read_text_file", json!({})),
            ],
        },
        ConversationItem::ToolResult {
            call_id: "c1".into(),
            tool_name: TOOL_SEARCH.into(),
            content: found,
            is_error: false,
            images: Vec::new(),
        },
    ]);
    assert_eq!(
        offer.loaded(),
        ["mcp__fs__read_text_file", "mcp__memory__create_entities"]
    );
    // A rebuilt catalog keeps what still exists, in order.
    let mut smaller = catalog();
    smaller.retain(|t| t.name != "mcp__fs__read_text_file");
    offer.replace(smaller, 8_000, DEFAULT_MCP_TOOL_SHARE);
    assert_eq!(offer.loaded(), ["mcp__memory__create_entities"]);
    assert!(names(&offer.sent()).contains(&TOOL_SEARCH));
}

#[test]
fn five_hundred_tools_across_ten_servers_search_quickly_and_send_little() {
    let mut all = catalog()[..2].to_vec();
    for s in 0..10 {
        for t in 0..50 {
            all.push(spec(
                &format!("mcp__srv{s}__tool_{t}_op"),
                &format!("Operation {t} of server {s}: does thing {t}."),
                400,
            ));
        }
    }
    let mut offer = Offer::new(all, 100_000, DEFAULT_MCP_TOOL_SHARE);
    assert!(offer.deferred());
    let answer = offer.search(&call(TOOL_SEARCH, json!({"query": "tool 7 srv3"})));
    assert_eq!(answer.content["loaded"][0], "mcp__srv3__tool_7_op");
    assert!(offer.sent_counts().tokens * 10 < offer.sent_counts().deferred_tokens);
}

#[test]
fn searches_load_no_more_than_the_share() {
    let mut all = catalog()[..2].to_vec();
    for t in 0..40 {
        all.push(spec(&format!("mcp__big__tool_{t}"), "A big tool.", 4_000));
    }
    // A 20k budget: the share is 2k tokens, the floor 4k: about three of
    // these ~1.1k-token tools.
    let mut offer = Offer::new(all, 20_000, DEFAULT_MCP_TOOL_SHARE);
    let select: Vec<String> = (0..10).map(|t| format!("mcp__big__tool_{t}")).collect();
    let answer = offer.search(&call(
        TOOL_SEARCH,
        json!({"query": format!("select:{}", select.join(","))}),
    ));
    let loaded = answer.content["loaded"].as_array().unwrap().len();
    assert!((1..10).contains(&loaded), "{answer:?}");
    assert!(answer.content["note"]
        .as_str()
        .unwrap()
        .contains("Not loaded"));
    // A call still loads what it needs.
    let carried: Vec<String> = offer.sent().into_iter().map(|t| t.name).collect();
    assert!(offer
        .unloaded(&call("mcp__big__tool_30", json!({})), &carried)
        .is_some());
    assert!(offer.loaded().contains(&"mcp__big__tool_30".to_owned()));
}
