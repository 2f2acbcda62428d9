//! A small MCP server for Holon's tests and benchmarks, built with the
//! official SDK and spoken over stdio. Its tools: `echo` (read-only),
//! `note` (a write), `slow` (sleeps `ms`,
//! reporting progress `steps` times; a cancelled call is logged), `image`, `big` (`bytes` of
//! text), `fail` (an `isError` result), `crash` (the process exits),
//! `env` (the names of the variables it sees), `cwd` (where it runs),
//! `touch` (creates `path`),
//! `grow` (offers `extra` from then on and says the list changed) and
//! `bad_schema` (an input schema no provider takes).
//!
//! `--http 127.0.0.1:PORT` serves the streamable HTTP transport at `/mcp`
//! instead of stdio (`--token T` then requires `Authorization: Bearer T`),
//! printing `listening on ADDR` once it accepts connections.
//!
//! `--catalog FILE` offers the tools a JSON file lists instead of its own
//! (an array of `{name, description, inputSchema, readOnly}`, the shape of
//! a real server's list), and `--many N:BYTES` offers N more tools each with a
//! schema of about BYTES; a call to any of those answers `called NAME
//! with ARGS`.
//!
//! Flags make it misbehave for the edge cases: `--exit` exits at once,
//! `--mute` never answers `initialize`, `--garbage` prints a non-JSON line
//! before speaking MCP, `--stray` a response to a request never sent.
//! `--log FILE` appends one line per call it serves.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use axum::response::IntoResponse;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

/// A whole 1x1 PNG, as base64.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

struct Stub {
    log: Option<String>,
    /// `grow` was called: `extra` is offered too.
    grown: std::sync::atomic::AtomicBool,
    /// Tools of `--catalog` and `--many`.
    more: Vec<Tool>,
    /// `--catalog`: those tools only, as a real server offers its own.
    catalog_only: bool,
}

/// The tools `--catalog FILE` and `--many N:BYTES` add.
fn more_tools(args: &[String]) -> Vec<Tool> {
    let after = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let mut out = Vec::new();
    if let Some(path) = after("--catalog") {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let list: Vec<Value> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        for t in list {
            let name = t["name"].as_str().unwrap_or("unnamed").to_owned();
            let description = t["description"].as_str().unwrap_or("").to_owned();
            let schema = match &t["inputSchema"] {
                Value::Object(m) => m.clone(),
                _ => Map::new(),
            };
            let read_only = t["readOnly"].as_bool().unwrap_or(false);
            out.push(
                Tool::new(name, description, Arc::new(schema))
                    .with_annotations(ToolAnnotations::new().read_only(read_only)),
            );
        }
    }
    if let Some(spec) = after("--many") {
        let (n, bytes) = spec.split_once(':').unwrap_or((&spec, "200"));
        let (n, bytes): (usize, usize) = (n.parse().unwrap_or(0), bytes.parse().unwrap_or(200));
        for i in 0..n {
            let schema = json!({"type": "object", "properties": {
                "input": {"type": "string", "description": "d".repeat(bytes)}}});
            let Value::Object(schema) = schema else {
                continue;
            };
            out.push(
                Tool::new(
                    format!("tool_{i}"),
                    format!("Generated tool number {i}."),
                    Arc::new(schema),
                )
                .with_annotations(ToolAnnotations::new().read_only(true)),
            );
        }
    }
    out
}

impl Stub {
    /// One line in the `--log` file, when there is one.
    fn log_line(&self, line: &str) {
        let Some(path) = &self.log else { return };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// `slow`: sleeps `ms` in `steps` equal parts (at least one), reporting
/// progress after each part when the client asked for it; `None` when the
/// client cancelled the call first.
async fn slow(context: &RequestContext<RoleServer>, ms: u64, steps: u64) -> Option<CallToolResult> {
    let steps = steps.max(1);
    let token = context.meta.get_progress_token();
    for step in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms / steps)) => {}
            () = context.ct.cancelled() => return None,
        }
        if let Some(token) = &token {
            let note = ProgressNotificationParam::new(token.clone(), step as f64)
                .with_total(steps as f64)
                .with_message(format!("step {step} of {steps}"));
            let _ = context.peer.notify_progress(note).await;
        }
    }
    Some(CallToolResult::success(vec![ContentBlock::text("done")]))
}

fn tool(name: &'static str, description: &'static str, schema: Value, read_only: bool) -> Tool {
    let schema: Map<String, Value> = match schema {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Tool::new(name, description, Arc::new(schema))
        .with_annotations(ToolAnnotations::new().read_only(read_only))
}

fn tools(grown: bool) -> Vec<Tool> {
    let text =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    vec![
        tool("echo", "Echo the text back.", text.clone(), true),
        tool("note", "Keep a note (a write).", text, false),
        tool(
            "slow",
            "Sleep for ms milliseconds, then answer.",
            json!({"type": "object", "properties": {
                "ms": {"type": "integer"}, "steps": {"type": "integer"}
            }}),
            true,
        ),
        tool(
            "image",
            "Return a small PNG.",
            json!({"type": "object"}),
            true,
        ),
        tool(
            "big",
            "Return bytes bytes of text.",
            json!({"type": "object", "properties": {"bytes": {"type": "integer"}}}),
            true,
        ),
        tool("fail", "Always fails.", json!({"type": "object"}), true),
        tool("crash", "Exit the server.", json!({"type": "object"}), true),
        tool(
            "env",
            "Name the environment variables the server sees.",
            json!({"type": "object"}),
            true,
        ),
        tool(
            "bad_schema",
            "Takes an array.",
            json!({"type": "array"}),
            true,
        ),
        tool(
            "cwd",
            "Say where the server runs.",
            json!({"type": "object"}),
            true,
        ),
        tool(
            "grow",
            "Offer one more tool (and say the list changed).",
            json!({"type": "object"}),
            true,
        ),
        tool(
            "touch",
            "Create the file at path.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            false,
        ),
    ]
    .into_iter()
    .chain(grown.then(|| {
        tool(
            "extra",
            "Offered after grow.",
            json!({"type": "object"}),
            true,
        )
    }))
    .collect()
}

impl ServerHandler for Stub {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let grown = self.grown.load(std::sync::atomic::Ordering::SeqCst);
        let mut all = match self.catalog_only {
            true => Vec::new(),
            false => tools(grown),
        };
        all.extend(self.more.iter().cloned());
        Ok(ListToolsResult::with_all_items(all))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.log_line(&format!("{} {}", request.name, Value::Object(args.clone())));
        let text = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let num = |k: &str| args.get(k).and_then(Value::as_u64).unwrap_or(0);
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::success(vec![ContentBlock::text(text("text"))]),
            "note" => CallToolResult::success(vec![ContentBlock::text(format!(
                "noted: {}",
                text("text")
            ))]),
            "slow" => match slow(&context, num("ms"), num("steps")).await {
                Some(result) => result,
                None => {
                    self.log_line("cancelled slow");
                    CallToolResult::error(vec![ContentBlock::text("cancelled")])
                }
            },
            "image" => CallToolResult::success(vec![
                ContentBlock::text("a picture"),
                // A 1x1 PNG.
                ContentBlock::image(PNG, "image/png"),
            ]),
            "big" => {
                CallToolResult::success(vec![ContentBlock::text("x".repeat(num("bytes") as usize))])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("the stub always fails")]),
            "crash" => std::process::exit(3),
            "env" => {
                let names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
                CallToolResult::success(vec![ContentBlock::text(names.join(" "))])
            }
            "cwd" => {
                let here = std::env::current_dir().map(|d| d.display().to_string());
                CallToolResult::success(vec![ContentBlock::text(here.unwrap_or_default())])
            }
            "grow" => {
                self.grown.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "extra" => CallToolResult::success(vec![ContentBlock::text("extra")]),
            "touch" => match std::fs::write(text("path"), "touched") {
                Ok(()) => CallToolResult::success(vec![ContentBlock::text("touched")]),
                Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
            },
            other if self.more.iter().any(|t| t.name == other) => {
                CallToolResult::success(vec![ContentBlock::text(format!(
                    "called {other} with {}",
                    Value::Object(args.clone())
                ))])
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |f: &str| args.iter().any(|a| a == f);
    let log = args
        .iter()
        .position(|a| a == "--log")
        .and_then(|i| args.get(i + 1).cloned());
    eprintln!("mcp_stub starting");
    if has("--exit") {
        std::process::exit(2);
    }
    if has("--mute") {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return;
    }
    if let Some(addr) = args
        .iter()
        .position(|a| a == "--http")
        .and_then(|i| args.get(i + 1).cloned())
    {
        let token = args
            .iter()
            .position(|a| a == "--token")
            .and_then(|i| args.get(i + 1).cloned());
        serve_http(&addr, token, log).await;
        return;
    }
    if has("--garbage") {
        println!("this is not JSON-RPC");
    }
    if has("--stray") {
        // A well-formed response to nothing asked, before `initialize`.
        println!(r#"{{"jsonrpc":"2.0","id":999,"result":{{}}}}"#);
    }
    let stub = Stub {
        log,
        grown: Default::default(),
        more: more_tools(&args),
        catalog_only: has("--catalog"),
    };
    let Ok(service) = stub.serve(rmcp::transport::stdio()).await else {
        std::process::exit(1);
    };
    let _ = service.waiting().await;
}

/// The streamable HTTP transport at `/mcp`, behind an optional bearer token.
async fn serve_http(addr: &str, token: Option<String>, log: Option<String>) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        move || {
            Ok(Stub {
                log: log.clone(),
                grown: Default::default(),
                more: Vec::new(),
                catalog_only: false,
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let want = token.map(|t| format!("Bearer {t}"));
    let guard = move |req: axum::extract::Request, next: axum::middleware::Next| {
        let want = want.clone();
        async move {
            let given = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match want {
                Some(w) if given.as_deref() != Some(w.as_str()) => {
                    axum::http::StatusCode::UNAUTHORIZED.into_response()
                }
                _ => next.run(req).await,
            }
        }
    };
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(guard));
    let Ok(listener) = tokio::net::TcpListener::bind(addr).await else {
        std::process::exit(1);
    };
    if let Ok(a) = listener.local_addr() {
        println!("listening on {a}");
    }
    let _ = axum::serve(listener, app).await;
}
