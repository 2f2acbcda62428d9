//! `holon debug bench tools`: what MCP tools cost a request, sent whole
//! and on demand. Three servers (the stub server built beside this binary,
//! `--example mcp_stub`, serving tool lists shaped like the reference
//! filesystem, memory and everything servers: `assets/bench/`) behind a
//! real runtime and a model over HTTP (the stub provider, Chat
//! Completions, a 32k window as a local model has). Each turn searches for
//! a tool, calls it, calls one it never loaded (answered with its schema),
//! calls it again, and answers: five rounds. The figures are the `tools`
//! of every request the model received, measured in the request body,
//! and the runtime's own estimate of their tokens.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holon_stub::{canned, Canned, StubServer};
use serde_json::{json, Value};

use crate::model::message::{AdmissionRequest, DeliverySurface, Priority};
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::settings::mcp::ServerConfig;
use crate::store::{Store, StoreOptions};

const TURNS: usize = 3;
const SERVERS: [(&str, &str); 3] = [
    (
        "filesystem",
        include_str!("../../assets/bench/mcp_filesystem.json"),
    ),
    ("memory", include_str!("../../assets/bench/mcp_memory.json")),
    (
        "everything",
        include_str!("../../assets/bench/mcp_everything.json"),
    ),
];

/// One request the model received: its tools' JSON bytes in all, and
/// those of the MCP offering (MCP tools and ToolSearch).
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    all_bytes: usize,
    mcp_bytes: usize,
    mcp_tools: usize,
}

/// The scripted model: which step of a turn the conversation is at, by
/// the last tool result's call id.
fn answer(body: &Value, seen: &Mutex<Vec<Seen>>) -> Canned {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let name = |t: &Value| t["function"]["name"].as_str().unwrap_or("").to_owned();
    let mcp: Vec<&Value> = tools
        .iter()
        .filter(|t| {
            let n = name(t);
            n.starts_with("mcp__") || n == "ToolSearch"
        })
        .collect();
    if let Ok(mut s) = seen.lock() {
        s.push(Seen {
            all_bytes: Value::Array(tools.clone()).to_string().len(),
            mcp_bytes: mcp.iter().map(|t| t.to_string().len()).sum(),
            mcp_tools: mcp.len(),
        });
    }
    // The turn's state follows the conversation: the step is read from
    // the last message before it.
    let is_state = |m: &&Value| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(crate::runtime::provider::wire::is_turn_state)
    };
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| !is_state(m)))
        .cloned()
        .unwrap_or_default();
    let step = match last["role"].as_str() {
        Some("tool") => last["tool_call_id"].as_str().unwrap_or("").to_owned(),
        _ => String::new(),
    };
    let call =
        |id: &str, tool: &str, args: Value| canned::chat_json("", &[(id, tool, &args.to_string())]);
    let reply = match step.split('_').next().unwrap_or("") {
        "" => call(
            &format!("s_{}", seen_len(seen)),
            "ToolSearch",
            json!({"query": "read text file"}),
        ),
        "s" => call(
            &format!("r_{}", seen_len(seen)),
            "mcp__filesystem__read_text_file",
            json!({"path": "/notes/todo.md"}),
        ),
        "r" => call(
            &format!("m_{}", seen_len(seen)),
            "mcp__memory__create_entities",
            json!({"entities": [{"name": "todo", "entityType": "file", "observations": ["read"]}]}),
        ),
        "m" => call(
            &format!("n_{}", seen_len(seen)),
            "mcp__memory__create_entities",
            json!({"entities": [{"name": "todo", "entityType": "file", "observations": ["read"]}]}),
        ),
        _ => canned::chat_json("Done: the file is read and remembered.", &[]),
    };
    Canned::json(200, reply)
}

fn seen_len(seen: &Mutex<Vec<Seen>>) -> usize {
    seen.lock().map(|s| s.len()).unwrap_or(0)
}

/// The figures of one mode: per request, what the model received, and the
/// runtime's estimate of the tools' tokens per round.
struct Figures {
    seen: Vec<Seen>,
    tool_tokens: Vec<u64>,
    deferred: u64,
}

async fn one_mode(dir: &Path, share: f64, stub_path: &Path) -> anyhow::Result<Figures> {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let recorder = Arc::clone(&seen);
    let model = StubServer::serving(Arc::new(move |body: &Value| answer(body, &recorder))).await;
    let provider = super::bench_frame::stub_chain(model.base(), "openai_chat", 32_768)?;
    let fixtures = dir.join("catalogs");
    std::fs::create_dir_all(&fixtures)?;
    let mut servers = Vec::new();
    for (name, list) in SERVERS {
        let file = fixtures.join(format!("{name}.json"));
        std::fs::write(&file, list)?;
        let args = ["--catalog", &file.display().to_string()].map(str::to_owned);
        let mut c = ServerConfig::stdio(name, &stub_path.display().to_string(), &[]);
        if let crate::runtime::settings::mcp::Transport::Stdio { args: a, .. } = &mut c.transport {
            *a = args.to_vec();
        }
        c.sandboxed = false;
        servers.push(c);
    }
    let store = Store::open(&dir.join("tools.redb"), StoreOptions::default())?;
    let mut config = HostConfig::new(dir.join("data"), Arc::new(move |_| Arc::clone(&provider)));
    config.mcp_servers = servers;
    config.mcp_tool_share = share;
    config.policy.approval = crate::model::approval::Approval::Never;
    let host = RuntimeHost::start(store, config).await?;
    host.create_agent("main").await?;
    for turn in 0..TURNS {
        host.submit(AdmissionRequest::operator_prompt(
            "main",
            &format!("turn {turn}: read the todo file and remember it"),
            Priority::Normal,
            DeliverySurface::CliPrompt,
        ))
        .await?;
        tokio::time::timeout(Duration::from_secs(60), host.until_idle())
            .await
            .map_err(|_| anyhow::anyhow!("turn {turn} did not end within 60 s"))?;
    }
    let events = host.store().read()?.events("main", 1, 100_000)?;
    let mut tool_tokens = Vec::new();
    let mut deferred = 0;
    for e in &events {
        if let crate::protocol::events::Event::ProviderRoundCompleted(p) = &e.event() {
            tool_tokens.push(p.tool_tokens);
            deferred = deferred.max(u64::from(p.tools_deferred));
        }
    }
    host.shutdown().await;
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(Figures {
        seen,
        tool_tokens,
        deferred,
    })
}

fn mean(v: impl Iterator<Item = u64>) -> u64 {
    let v: Vec<u64> = v.collect();
    v.iter().sum::<u64>() / (v.len().max(1) as u64)
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let stub_path = super::bench_mcp::stub_path()?;
    let whole = one_mode(&dir.join("whole"), 1.0, &stub_path).await?;
    let demand = one_mode(
        &dir.join("on-demand"),
        crate::runtime::settings::limits::DEFAULT_MCP_TOOL_SHARE,
        &stub_path,
    )
    .await?;
    let mcp_bytes = |f: &Figures| mean(f.seen.iter().map(|s| s.mcp_bytes as u64));
    let all_bytes = |f: &Figures| mean(f.seen.iter().map(|s| s.all_bytes as u64));
    let tokens = |f: &Figures| mean(f.tool_tokens.iter().copied());
    println!(
        "tools.whole       3 servers, {} MCP tools sent every round ({} requests): MCP definitions {} B a request; all tools {} B, ~{} tokens a round",
        whole.seen.first().map_or(0, |s| s.mcp_tools),
        whole.seen.len(),
        mcp_bytes(&whole),
        all_bytes(&whole),
        tokens(&whole),
    );
    println!(
        "tools.on_demand   ToolSearch and what was loaded ({} requests, {} tools deferred): MCP definitions {} B a request (first {} B, last {} B); all tools {} B, ~{} tokens a round",
        demand.seen.len(),
        demand.deferred,
        mcp_bytes(&demand),
        demand.seen.first().map_or(0, |s| s.mcp_bytes),
        demand.seen.last().map_or(0, |s| s.mcp_bytes),
        all_bytes(&demand),
        tokens(&demand),
    );
    let fewer = |a: u64, b: u64| 100.0 * (1.0 - b as f64 / a.max(1) as f64);
    println!(
        "tools.saving      MCP tool definitions {:.0}% fewer bytes a request (goal >= 80%); all tool definitions {:.0}% fewer tokens a round",
        fewer(mcp_bytes(&whole), mcp_bytes(&demand)),
        fewer(tokens(&whole), tokens(&demand)),
    );
    Ok(())
}
