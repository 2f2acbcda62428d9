//! Which tools a round sends, when MCP servers offer more than the prompt
//! can carry. Holon's own tools are always sent whole. The MCP servers'
//! are sent whole too while their definitions take at most a share of the
//! prompt budget (`[mcp] tool_budget_share`, 10% by default); past it they
//! are deferred: the model gets `ToolSearch`, whose answer names the best
//! matches and loads their schemas for the rest of the turn, and a call
//! to a tool it never loaded is answered with that tool's schema and a
//! request to call again, not run.
//!
//! What is loaded is read back from the conversation (the calls the
//! model made, the tools `ToolSearch` named), so a later turn keeps what
//! its history still shows and a compaction lets go of the rest; nothing
//! else holds it. Loaded schemas go after Holon's own tools and
//! `ToolSearch`, in the order they were loaded, so the start of the tool
//! list (the part a provider caches) holds still.
//!
//! Pure: no I/O, no clock.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::model::mcp::is_mcp_tool as is_mcp;
use crate::model::usage::ConversationItem;
use crate::model::usage::ToolCall;
use crate::runtime::context::budget::tools_tokens;
use crate::runtime::provider::ToolSpec;
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

/// The search tool's name.
pub const TOOL_SEARCH: &str = "ToolSearch";
/// The most matches one search returns.
const MAX_LIMIT: usize = 10;
/// Matches returned when the model does not say.
const DEFAULT_LIMIT: usize = 5;
/// The most tools one search loads (the clear winners).
const MAX_LOADED: usize = 3;
/// Characters of a query read; words of it used.
const MAX_QUERY_CHARS: usize = 1_000;
const MAX_QUERY_WORDS: usize = 32;
/// Characters of a description a match shows.
const MATCH_DESCRIPTION_CHARS: usize = 300;

/// What a round sends, in numbers (for the round's record and the
/// prompt preview).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Tools in the request.
    pub tools: u32,
    /// Their definitions' estimated tokens.
    pub tokens: u64,
    /// MCP tools left out (to be found with `ToolSearch`).
    pub deferred: u32,
    /// What the left-out definitions would have cost.
    pub deferred_tokens: u64,
}

/// A turn's tool catalog and what of it the next request sends.
#[derive(Debug, Clone, Default)]
pub struct Offer {
    builtin: Vec<ToolSpec>,
    mcp: Vec<ToolSpec>,
    /// The MCP tools are sent only when loaded.
    deferred: bool,
    /// MCP tools loaded, in the order they were.
    loaded: Vec<String>,
    /// `ToolSearch` was used in the conversation (it stays offered, so
    /// the history's calls to it name a tool of the request).
    searched: bool,
    /// What searches may load, in definitions' tokens: the share the MCP
    /// tools may take, at least [`MIN_LOADED_TOKENS`]. A call of a tool
    /// loads it whatever this says (the model needs it).
    cap_tokens: u64,
}

/// The least a search may load, in tokens, however small the share.
const MIN_LOADED_TOKENS: u64 = 4_000;

/// Whether MCP definitions of `mcp_tokens` are over `share` of
/// `prompt_budget`.
pub fn over_share(mcp_tokens: u64, prompt_budget: u64, share: f64) -> bool {
    let share = share.clamp(0.0, 1.0);
    mcp_tokens > 0 && (mcp_tokens as f64) > share * prompt_budget as f64
}

impl Offer {
    /// The catalog `all` (Holon's tools and the MCP servers'), deferred
    /// when the MCP part is over `share` of `prompt_budget`.
    pub fn new(all: Vec<ToolSpec>, prompt_budget: u64, share: f64) -> Offer {
        let (mcp, builtin): (Vec<_>, Vec<_>) = all.into_iter().partition(|t| is_mcp(&t.name));
        let deferred = over_share(tools_tokens(&mcp), prompt_budget, share);
        let cap_tokens =
            ((share.clamp(0.0, 1.0) * prompt_budget as f64) as u64).max(MIN_LOADED_TOKENS);
        Offer {
            builtin,
            mcp,
            deferred,
            loaded: Vec::new(),
            searched: false,
            cap_tokens,
        }
    }

    /// Take a rebuilt catalog (a server's tools changed): what was loaded
    /// and still exists stays loaded, in its order.
    pub fn replace(&mut self, all: Vec<ToolSpec>, prompt_budget: u64, share: f64) {
        let mut next = Offer::new(all, prompt_budget, share);
        next.searched = self.searched;
        next.loaded = std::mem::take(&mut self.loaded)
            .into_iter()
            .filter(|n| next.mcp.iter().any(|t| &t.name == n))
            .collect();
        *self = next;
    }

    pub fn deferred(&self) -> bool {
        self.deferred
    }

    /// The MCP tools loaded, in order.
    pub fn loaded(&self) -> &[String] {
        &self.loaded
    }

    fn mcp_spec(&self, name: &str) -> Option<&ToolSpec> {
        self.mcp.iter().find(|t| t.name == name)
    }

    /// Load `name` (an MCP tool of the catalog); whether it was new.
    pub fn load(&mut self, name: &str) -> bool {
        if self.mcp_spec(name).is_none() || self.loaded.iter().any(|n| n == name) {
            return false;
        }
        self.loaded.push(name.to_owned());
        true
    }

    /// Load `name` for a search, unless the loaded definitions would pass
    /// the cap; whether it is loaded now.
    fn load_found(&mut self, name: &str) -> bool {
        if self.loaded.iter().any(|n| n == name) {
            return true;
        }
        let Some(spec) = self.mcp_spec(name) else {
            return false;
        };
        let loaded: Vec<ToolSpec> = self
            .loaded
            .iter()
            .filter_map(|n| self.mcp_spec(n))
            .cloned()
            .collect();
        let after = tools_tokens(&loaded) + tools_tokens(std::slice::from_ref(spec));
        after <= self.cap_tokens && self.load(name)
    }

    /// Read what the conversation shows was loaded: every MCP tool the
    /// model called and every tool a `ToolSearch` answer loaded.
    pub fn note(&mut self, items: &[ConversationItem]) {
        for item in items {
            match item {
                ConversationItem::AssistantRound { tool_calls, .. } => {
                    for c in tool_calls {
                        if c.name == TOOL_SEARCH {
                            self.searched = true;
                        } else if is_mcp(&c.name) {
                            self.load(&c.name);
                        }
                    }
                }
                ConversationItem::ToolResult {
                    tool_name, content, ..
                } if tool_name == TOOL_SEARCH => {
                    self.searched = true;
                    for name in loaded_by(content) {
                        self.load_found(&name);
                    }
                }
                _ => {}
            }
        }
    }

    /// The tools the next request sends: Holon's, then `ToolSearch`
    /// (when the MCP tools are deferred, or it was used), then the MCP
    /// tools (all, or those loaded, in load order).
    pub fn sent(&self) -> Vec<ToolSpec> {
        let mut out = self.builtin.clone();
        if self.deferred || self.searched {
            out.push(self.search_spec());
        }
        if self.deferred {
            out.extend(self.loaded.iter().filter_map(|n| self.mcp_spec(n)).cloned());
        } else {
            out.extend(self.mcp.iter().cloned());
        }
        out
    }

    /// What the next request sends and leaves out, in numbers.
    pub fn sent_counts(&self) -> Sent {
        let sent = self.sent();
        let left: Vec<ToolSpec> = match self.deferred {
            true => self
                .mcp
                .iter()
                .filter(|t| !self.loaded.contains(&t.name))
                .cloned()
                .collect(),
            false => Vec::new(),
        };
        Sent {
            tools: sent.len() as u32,
            tokens: tools_tokens(&sent),
            deferred: left.len() as u32,
            deferred_tokens: tools_tokens(&left),
        }
    }

    /// The servers whose tools the catalog holds, in order.
    fn servers(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.mcp
            .iter()
            .filter_map(|t| crate::model::mcp::split_tool_name(&t.name).map(|(s, _)| s.to_owned()))
            .filter(|s| seen.insert(s.clone()))
            .collect()
    }

    fn search_spec(&self) -> ToolSpec {
        let servers = self.servers();
        let description = format!(
            "Find tools of the MCP servers ({}) that are not loaded yet: {} tools in all. Give \
             a few words of what you need (a name, a purpose); the matches are listed with \
             their descriptions and the best ones' full definitions are loaded, so you can \
             call them directly from your next step. `select:NAME,NAME` loads tools by exact \
             name.",
            servers.join(", "),
            self.mcp.len()
        );
        ToolSpec {
            name: TOOL_SEARCH.to_owned(),
            description,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words of what the tool does or is named, or select:NAME,NAME"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "At most this many matches (default 5)"}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            freeform_field: None,
        }
    }

    /// Answer a `ToolSearch` call, loading what it names.
    pub fn search(&mut self, call: &ToolCall) -> ToolOutcome {
        let query = call
            .arguments
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or("");
        let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
        if query.trim().is_empty() {
            return tool_error(
                ToolErrorKind::InvalidArguments,
                "ToolSearch needs a query: words of what the tool does or is named",
                Some("call ToolSearch again with {\"query\": \"…\"}"),
                Some("query"),
                false,
            );
        }
        let limit = call
            .arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
        // Every match is listed; the clear winners are loaded (those
        // within three quarters of the best score, three at most), the
        // rest by `select:` or by calling them.
        let (found, loaded): (Vec<String>, Vec<String>) = match query.trim().strip_prefix("select:")
        {
            Some(names) => {
                let named: Vec<String> = names
                    .split(',')
                    .map(str::trim)
                    .filter(|n| self.mcp_spec(n).is_some())
                    .take(MAX_LIMIT)
                    .map(str::to_owned)
                    .collect();
                (named.clone(), named)
            }
            None => {
                let ranked = rank(&self.mcp, &query);
                let best = ranked.first().map_or(0, |(score, _)| *score);
                let found = ranked.iter().take(limit).map(|(_, t)| t.name.clone());
                let loaded = ranked
                    .iter()
                    .take_while(|(score, _)| score * 4 >= best * 3)
                    .take(MAX_LOADED)
                    .map(|(_, t)| t.name.clone());
                (found.collect(), loaded.collect())
            }
        };
        let (loaded, refused): (Vec<String>, Vec<String>) =
            loaded.into_iter().partition(|n| self.load_found(n));
        let matches: Vec<Value> = found
            .iter()
            .filter_map(|n| self.mcp_spec(n))
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description.chars().take(MATCH_DESCRIPTION_CHARS).collect::<String>(),
                })
            })
            .collect();
        let mut note = match (found.is_empty(), self.deferred) {
            (true, _) => format!(
                "No tool matched. The servers are {}; try other words, or select:NAME.",
                self.servers().join(", ")
            ),
            (false, true) => "The loaded tools' definitions are part of your tools from your \
                              next step: call them directly. Load another match with \
                              select:NAME, or just call it."
                .to_owned(),
            (false, false) => "These tools were already part of your tools.".to_owned(),
        };
        if !refused.is_empty() {
            note.push_str(&format!(
                " Not loaded, as the loaded definitions are at their share of the prompt: {}; \
                 calling one still gives you its schema.",
                refused.join(", ")
            ));
        }
        ToolOutcome::ok(json!({ "loaded": loaded, "matches": matches, "note": note }))
    }

    /// The answer to a call of an MCP tool whose definition the request
    /// that asked for it did not carry (`carried`: the names it did):
    /// its definition, and a request to call again. It is loaded for the
    /// next step (a tool loaded during the round, by a search or an
    /// earlier call of it, is still answered so: the model has not seen
    /// its schema). `None`: the call goes ahead as usual (it was carried,
    /// nothing is deferred, or it is not an MCP tool of the catalog: an
    /// invented or vanished name is the server's to answer).
    pub fn unloaded(&mut self, call: &ToolCall, carried: &[String]) -> Option<ToolOutcome> {
        if !self.deferred || carried.contains(&call.name) {
            return None;
        }
        let spec = self.mcp_spec(&call.name)?.clone();
        self.load(&call.name);
        Some(ToolOutcome::ok(json!({
            "not_run": true,
            "tool": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
            "note": format!(
                "{} was not run: its definition was not loaded. It is loaded now; call it again \
                 with arguments that match input_schema.",
                call.name
            ),
        })))
    }
}

/// The names a `ToolSearch` answer (its text, as the conversation holds
/// it) loaded.
fn loaded_by(content: &str) -> Vec<String> {
    serde_json::from_str::<Value>(content)
        .ok()
        .and_then(|v| v.get("loaded").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// Lower-case words of `text`: split at anything not a letter or digit,
/// and where a lower-case letter meets an upper-case one.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase();
            word.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The tools matching `query`, best first: a word of the query that is a
/// word of a tool's name counts most, one its name's words begin with
/// next, one of its description's words last. Ties keep catalog order.
fn rank<'a>(tools: &'a [ToolSpec], query: &str) -> Vec<(u32, &'a ToolSpec)> {
    let mut terms: Vec<String> = words(query);
    terms.sort();
    terms.dedup();
    terms.truncate(MAX_QUERY_WORDS);
    let mut scored: Vec<(u32, usize, &ToolSpec)> = tools
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let name = words(&t.name);
            let description = words(&t.description);
            let score: u32 = terms
                .iter()
                .map(|term| {
                    if name.iter().any(|w| w == term) {
                        6
                    } else if term.len() >= 3 && name.iter().any(|w| w.starts_with(term.as_str())) {
                        4
                    } else if description.iter().any(|w| w == term) {
                        2
                    } else if term.len() >= 4
                        && description.iter().any(|w| w.starts_with(term.as_str()))
                    {
                        1
                    } else {
                        0
                    }
                })
                .sum();
            (score > 0).then_some((score, i, t))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(score, _, t)| (score, t)).collect()
}

#[cfg(test)]
#[path = "offer_tests.rs"]
mod tests;
