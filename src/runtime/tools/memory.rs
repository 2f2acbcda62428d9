//! MemorySearch and MemoryGet: recall over the agent's memory files,
//! briefs, archived context summaries and work items. Search is scoped
//! to the active workspace (agent-scoped memory is always included) unless
//! `include_all_workspaces`; results carry provenance and an opaque
//! `source_ref` that MemoryGet expands to the exact original text.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::ToolEnv;
use crate::runtime::recall::{self, GET_DEFAULT_CHARS, GET_MAX_CHARS, SEARCH_DEFAULT_LIMIT};
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SearchArgs {
    /// Words to look for (any language; Chinese, Japanese and Korean work
    /// without spaces).
    query: String,
    /// At most this many results (default 8, at most 50).
    #[serde(default)]
    limit: Option<u32>,
    /// Search every workspace, not just the active one.
    #[serde(default, deserialize_with = "super::null_as_default")]
    include_all_workspaces: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct GetArgs {
    /// A source_ref copied from a MemorySearch result.
    source_ref: String,
    /// Characters of content to return (default 12000, 1 to 50000).
    #[serde(default)]
    max_chars: Option<u64>,
}

pub(super) struct MemorySearch;

impl Tool for MemorySearch {
    const NAME: &'static str = "MemorySearch";
    const DESCRIPTION: &'static str =
        "Search your memory: your memory files, earlier briefs (your reports), summaries of \
             older conversation that was compacted, and work items. Returns ranked snippets with \
             provenance; pass a result's source_ref to MemoryGet for the exact text.";
    type Args = SearchArgs;

    fn gate(&self, _: &SearchArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: SearchArgs) -> ToolOutcome {
        search(env, args).await
    }
}

pub(super) struct MemoryGet;

impl Tool for MemoryGet {
    const NAME: &'static str = "MemoryGet";
    const DESCRIPTION: &'static str =
        "The exact text of one MemorySearch result (by its source_ref), bounded by max_chars.";
    type Args = GetArgs;

    fn gate(&self, _: &GetArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: GetArgs) -> ToolOutcome {
        get(env, args).await
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> ToolOutcome {
    tool_error(
        ToolErrorKind::Failed,
        format!("{what} failed: {e}"),
        None,
        None,
        true,
    )
}

async fn search(env: &ToolEnv<'_>, args: SearchArgs) -> ToolOutcome {
    if recall::cjk::query_terms(&args.query).is_empty() {
        return tool_error(
            ToolErrorKind::InvalidArguments,
            "the query has no words to search for",
            Some("give one or more words"),
            Some("query"),
            false,
        );
    }
    let workspace = match args.include_all_workspaces {
        true => None,
        false => match env.host.execution_of(env.agent_id) {
            Ok(x) => Some(x.workspace_id),
            Err(e) => return failed("MemorySearch", e),
        },
    };
    let limit = args.limit.map_or(SEARCH_DEFAULT_LIMIT, |n| n as usize);
    let store = env.host.store().clone();
    let home = env.host.agent_home(env.agent_id);
    let agent = env.agent_id.to_owned();
    let ws = workspace.clone();
    let result = tokio::task::spawn_blocking(move || {
        let rx = store.read().map_err(|e| e.to_string())?;
        recall::search(&rx, &home, &agent, &args.query, ws.as_deref(), limit)
    })
    .await;
    match result {
        Ok(Ok((hits, report))) => ToolOutcome::ok(json!({
            "ok": true,
            "scope": workspace.map_or("all workspaces".to_owned(), |w| format!("workspace {w} and agent memory")),
            "results": hits,
            "indexed_documents": report.documents,
            "index_rebuilt": report.rebuilt,
        })),
        Ok(Err(e)) => failed("MemorySearch", e),
        Err(join) => failed("MemorySearch", join),
    }
}

async fn get(env: &ToolEnv<'_>, args: GetArgs) -> ToolOutcome {
    let max = match args.max_chars {
        None => GET_DEFAULT_CHARS,
        Some(n) if (1..=GET_MAX_CHARS as u64).contains(&n) => n as usize,
        Some(n) => {
            return tool_error(
                ToolErrorKind::InvalidArguments,
                format!("max_chars {n} is out of range"),
                Some("give max_chars from 1 to 50000"),
                Some("max_chars"),
                false,
            )
        }
    };
    let home = env.host.agent_home(env.agent_id);
    let source_ref = args.source_ref.clone();
    let result = tokio::task::spawn_blocking(move || recall::get(&home, &source_ref, max)).await;
    match result {
        Ok(Ok(Some(got))) => {
            let mut v = json!(got);
            v["ok"] = json!(true);
            ToolOutcome::ok(v)
        }
        Ok(Ok(None)) => tool_error(
            ToolErrorKind::NotFound,
            format!("no memory with source_ref `{}`", args.source_ref),
            Some("copy a source_ref from a recent MemorySearch result (the index may have been rebuilt: search again)"),
            Some("source_ref"),
            false,
        ),
        Ok(Err(e)) => failed("MemoryGet", e),
        Err(join) => failed("MemoryGet", join),
    }
}
