//! MemorySearch and MemoryGet: full-text recall over what the agent keeps
//! (its memory files) and what the runtime recorded for it (briefs,
//! archived context summaries, work items). The index lives in the agent
//! home (`.holon/indexes/memory.sqlite3`) and is disposable: it is brought
//! up to date before each search — ledger rows after its cursors, work
//! items and memory files by hash — and rebuilt from the sources when it is
//! missing, corrupt, or was left mid-sync (`memory.dirty`).

pub mod cjk;
pub mod index;

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use self::index::{Doc, Index, Provenance, Stored};
use crate::model::context::ContextEpisode;
use crate::model::work::WorkItemRecord;
use crate::protocol::events::EventKind;
use crate::store::{Keyed, ReadCtx};

/// MemoryGet's default and largest content bounds (characters).
pub const GET_DEFAULT_CHARS: usize = 12_000;
pub const GET_MAX_CHARS: usize = 50_000;
/// MemorySearch's default and largest result counts.
pub const SEARCH_DEFAULT_LIMIT: usize = 8;
pub const SEARCH_MAX_LIMIT: usize = 50;

fn hash_of(parts: &[&str]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

/// The memory files as documents (agent scope).
fn memory_docs(home: &Path, agent_id: &str) -> Vec<Doc> {
    let mut out = Vec::new();
    for f in crate::runtime::context::memory::load(home) {
        let path = home.join(f.rel);
        let updated_at = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| crate::format_ts(d.as_millis() as i64))
            .unwrap_or_default();
        out.push(Doc {
            key: format!("memory_file:{}", f.rel),
            from: Provenance {
                kind: "memory_file".into(),
                scope_kind: "agent".into(),
                workspace_id: None,
                agent_id: agent_id.to_owned(),
                source_path: Some(path.display().to_string()),
                title: f.rel.to_owned(),
                updated_at,
                metadata: json!({ "note": f.note }),
            },
            hash: hash_of(&[&f.text]),
            body: f.text,
        });
    }
    out
}

/// The provenance of a workspace-scoped record.
fn in_workspace(
    kind: &str,
    workspace_id: &str,
    agent_id: &str,
    title: String,
    updated_at: &str,
    metadata: Value,
) -> Provenance {
    Provenance {
        kind: kind.to_owned(),
        scope_kind: "workspace".into(),
        workspace_id: Some(workspace_id.to_owned()),
        agent_id: agent_id.to_owned(),
        source_path: None,
        title,
        updated_at: updated_at.to_owned(),
        metadata,
    }
}

/// A brief's document, from its `brief_created` event at `event_seq`
/// (kept in the metadata: retention forgets briefs by where the ledger
/// now starts).
fn brief_doc(b: &Value, agent_id: &str, event_seq: u64) -> Option<Doc> {
    let id = b.get("id")?.as_str()?;
    let text = b.get("text").and_then(Value::as_str).unwrap_or_default();
    let kind = b.get("kind").and_then(Value::as_str).unwrap_or("result");
    let created = b.get("created_at").and_then(Value::as_str).unwrap_or("");
    let first: String = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(80)
        .collect();
    let workspace = b
        .get("workspace_id")
        .and_then(Value::as_str)
        .unwrap_or(crate::model::workspace::AGENT_HOME_ID);
    Some(Doc {
        key: format!("brief:{id}"),
        from: in_workspace(
            "brief",
            workspace,
            agent_id,
            format!("Brief ({kind}): {first}"),
            created,
            json!({ "brief_id": id, "brief_kind": kind, "work_item_id": b.get("work_item_id"), "event_seq": event_seq }),
        ),
        body: text.to_owned(),
        // Its seq too: a brief read again at another seq (a replaced
        // store) gets the seq retention forgets it by.
        hash: hash_of(&[text, &event_seq.to_string()]),
    })
}

fn episode_doc(e: &ContextEpisode) -> Doc {
    Doc {
        key: format!("context_episode:{}", e.id),
        from: in_workspace(
            "context_episode",
            &e.workspace_id,
            &e.agent_id,
            format!(
                "Context summary, epoch {} ({} to {})",
                e.epoch, e.from_ts, e.through_ts
            ),
            &e.created_at,
            json!({
                "episode_id": e.id, "epoch": e.epoch, "folded_turns": e.folded_turns,
                "summary_source": e.source,
            }),
        ),
        body: e.summary.clone(),
        hash: hash_of(&[&e.summary]),
    }
}

fn work_item_doc(w: &WorkItemRecord) -> Doc {
    let mut body = format!(
        "{}\nstate: {:?}, plan: {:?}",
        w.objective, w.state, w.plan_status
    );
    for t in &w.todo_list {
        body.push_str(&format!("\n- [{:?}] {}", t.state, t.text));
    }
    if let Some(b) = &w.blocked_by {
        body.push_str(&format!("\nblocked by: {b}"));
    }
    if let Some(r) = &w.result_summary {
        body.push_str(&format!("\nresult: {r}"));
    }
    Doc {
        key: format!("work_item:{}", w.id),
        from: in_workspace(
            "work_item",
            &w.workspace_id,
            &w.agent_id,
            w.objective.chars().take(120).collect(),
            &w.updated_at,
            json!({ "work_item_id": w.id, "revision": w.revision }),
        ),
        hash: hash_of(&[&body, &w.revision.to_string()]),
        body,
    }
}

/// The index's position in the ledger's `brief_created` events.
const BRIEF_CURSOR: &str = "cursor:brief_events";
/// The next event_seq whose work-item completions the index has not seen.
const WORK_CURSOR: &str = "cursor:work_items_next_seq";

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncReport {
    /// Why the index was rebuilt from nothing, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilt: Option<String>,
    pub changed: usize,
    pub documents: u64,
}

/// The work items a sync looks at, and the cursor after it: the open ones
/// (they change) and those completed since the last sync (a completed
/// item never changes again), so a sync does not grow with the items an
/// agent finished over its life. Every item on a first sync, or when
/// completions the index has not seen were pruned from the ledger.
/// `next` is the cursor after this sync: the seq after the ledger's last.
fn work_items_to_sync(
    rx: &ReadCtx,
    agent_id: &str,
    cursor: Option<String>,
    next: u64,
) -> Result<Vec<WorkItemRecord>, String> {
    let store = |e: crate::store::StoreError| e.to_string();
    let from = cursor.and_then(|c| c.parse::<u64>().ok());
    let from = match from {
        // Behind the ledger's start (completions pruned unseen) or past
        // its end (a store salvaged or replaced): every item.
        Some(f) if f >= rx.ledger_start(agent_id).map_err(store)? && f <= next => f,
        _ => return rx.list(Keyed::WorkItems, agent_id).map_err(store),
    };
    let mut ids = rx
        .index_list(crate::store::Index::OpenWorkItems, agent_id)
        .map_err(store)?;
    let completed = rx
        .events_of_kind(
            agent_id,
            EventKind::WorkItemCompleted.as_str(),
            from,
            usize::MAX,
        )
        .map_err(store)?;
    ids.extend(
        completed
            .iter()
            .filter_map(|e| e.payload["work_item"]["id"].as_str().map(str::to_owned)),
    );
    ids.sort_unstable();
    ids.dedup();
    let mut items = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(w) = rx.get(Keyed::WorkItems, agent_id, &id).map_err(store)? {
            items.push(w);
        }
    }
    Ok(items)
}

/// Open the agent's index (rebuilding it if needed) and bring it up to
/// date with the store and the memory files.
pub fn open_synced(
    rx: &ReadCtx,
    home: &Path,
    agent_id: &str,
) -> Result<(Index, SyncReport), String> {
    let (mut index, rebuilt) = Index::open(home)?;
    let (_, dirty) = index::paths(home);
    // Left behind only if this sync dies midway: the next open rebuilds.
    std::fs::write(&dirty, b"sync in progress\n")
        .map_err(|e| format!("{}: {e}", dirty.display()))?;
    let store = |e: crate::store::StoreError| e.to_string();
    let mut docs = memory_docs(home, agent_id);
    // Briefs are read from their `brief_created` events (the event is a
    // brief's only record), after the last event_seq indexed. An index
    // that kept the older cursor (a brief id) re-reads them all once;
    // documents are keyed by brief id, so nothing is indexed twice.
    // A cursor past the ledger's end (a store salvaged or replaced under a
    // kept agent home) would skip new briefs: read them all again.
    let last_seq = rx.last_seq(agent_id).map_err(store)?;
    let brief_cursor: u64 = index
        .meta(BRIEF_CURSOR)?
        .and_then(|s| s.parse().ok())
        .filter(|c| *c <= last_seq)
        .unwrap_or(0);
    let briefs = rx
        .events_of_kind(
            agent_id,
            EventKind::BriefCreated.as_str(),
            brief_cursor + 1,
            usize::MAX,
        )
        .map_err(store)?;
    let mut cursors = Vec::new();
    if let Some(last) = briefs.last() {
        cursors.push((BRIEF_CURSOR, last.event_seq.to_string()));
    }
    docs.extend(
        briefs
            .iter()
            .filter_map(|e| brief_doc(e.payload.get("brief")?, agent_id, e.event_seq)),
    );
    let ep_cursor = index.meta("cursor:episodes")?;
    let (episodes, _) = rx
        .list_recent_after::<ContextEpisode>(
            Keyed::ContextEpisodes,
            agent_id,
            ep_cursor.as_deref(),
            usize::MAX,
        )
        .map_err(store)?;
    if let Some(last) = episodes.last() {
        cursors.push(("cursor:episodes", last.id.clone()));
    }
    docs.extend(episodes.iter().map(episode_doc));
    let next = last_seq + 1;
    let items = work_items_to_sync(rx, agent_id, index.meta(WORK_CURSOR)?, next)?;
    cursors.push((WORK_CURSOR, next.to_string()));
    docs.extend(items.iter().map(work_item_doc));
    let changed = index.upsert(&docs, &cursors)?;
    let _ = std::fs::remove_file(&dirty);
    let documents = index.count()?;
    Ok((
        index,
        SyncReport {
            rebuilt,
            changed,
            documents,
        },
    ))
}

/// One search result, with the provenance to follow it up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// Opaque: pass it to MemoryGet.
    pub source_ref: String,
    #[serde(flatten)]
    pub from: Provenance,
    pub snippet: String,
    pub score: f64,
}

/// Up to 240 characters of `body` around the first query term found
/// (the original text: never expansion tokens).
pub fn snippet(body: &str, terms: &[String]) -> String {
    let lower = body.to_lowercase();
    let at = terms
        .iter()
        .filter_map(|t| lower.find(t.as_str()))
        .min()
        .unwrap_or(0);
    // `lower` may differ in length from `body`; map by characters.
    let char_at = lower[..at.min(lower.len())].chars().count();
    let start = char_at.saturating_sub(80);
    let text: String = body.chars().skip(start).take(240).collect();
    let mut s = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if start > 0 {
        s.insert(0, '…');
    }
    if body.chars().count() > start + 240 {
        s.push('…');
    }
    s
}

pub fn to_hit(s: Stored, score: f64, terms: &[String]) -> Hit {
    Hit {
        snippet: snippet(&s.body, terms),
        source_ref: s.source_ref,
        from: s.from,
        score,
    }
}

/// Search an agent's memory.
pub fn search(
    rx: &ReadCtx,
    home: &Path,
    agent_id: &str,
    query: &str,
    workspace: Option<&str>,
    limit: usize,
) -> Result<(Vec<Hit>, SyncReport), String> {
    let terms = cjk::query_terms(query);
    let (index, report) = open_synced(rx, home, agent_id)?;
    let hits = index
        .search(&terms, workspace, limit.clamp(1, SEARCH_MAX_LIMIT))?
        .into_iter()
        .map(|(s, score)| to_hit(s, score, &terms))
        .collect();
    Ok((hits, report))
}

/// MemoryGet's answer: the provenance and the exact text, bounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Got {
    #[serde(flatten)]
    pub doc: Stored,
    pub content: String,
    pub truncated: bool,
    pub total_chars: usize,
}

pub fn get(home: &Path, source_ref: &str, max_chars: usize) -> Result<Option<Got>, String> {
    let (index, _) = Index::open(home)?;
    Ok(index.get(source_ref)?.map(|doc| {
        let total_chars = doc.body.chars().count();
        let content: String = doc.body.chars().take(max_chars).collect();
        Got {
            truncated: total_chars > max_chars,
            total_chars,
            content,
            doc,
        }
    }))
}

#[cfg(test)]
mod tests;
