//! The memory index file: SQLite with an FTS5 table beside a table of the
//! documents' exact bodies and provenance. Disposable: a file that cannot
//! be opened, has another schema, or was left mid-sync (the dirty marker)
//! is deleted and rebuilt from the sources.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::cjk;

/// Bump when the tables change: an older file is rebuilt.
/// 2: a brief's document keeps its event's `event_seq` (an index of
/// another schema is rebuilt from its sources).
const SCHEMA: &str = "holon-memory-2";

/// Where a document comes from: the provenance every result carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `memory_file`, `brief`, `context_episode` or `work_item`.
    pub kind: String,
    /// `agent` (always searched) or `workspace`.
    pub scope_kind: String,
    pub workspace_id: Option<String>,
    pub agent_id: String,
    pub source_path: Option<String>,
    pub title: String,
    pub updated_at: String,
    pub metadata: serde_json::Value,
}

/// One document to index.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Stable identity within the index: `kind:id`.
    pub key: String,
    pub from: Provenance,
    pub body: String,
    /// Changes when the content does.
    pub hash: String,
}

/// A stored document as search and get return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    pub source_ref: String,
    #[serde(flatten)]
    pub from: Provenance,
    #[serde(skip)]
    pub body: String,
}

pub struct Index {
    conn: Connection,
}

fn sql(e: rusqlite::Error) -> String {
    e.to_string()
}

const STORED_COLUMNS: &str =
    "d.source_ref, d.kind, d.scope_kind, d.workspace_id, d.agent_id, d.source_path, d.title, \
     d.updated_at, d.metadata, d.body";

fn stored(row: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    let metadata: String = row.get(8)?;
    Ok(Stored {
        source_ref: row.get(0)?,
        from: Provenance {
            kind: row.get(1)?,
            scope_kind: row.get(2)?,
            workspace_id: row.get(3)?,
            agent_id: row.get(4)?,
            source_path: row.get(5)?,
            title: row.get(6)?,
            updated_at: row.get(7)?,
            metadata: serde_json::from_str(&metadata).unwrap_or(serde_json::Value::Null),
        },
        body: row.get(9)?,
    })
}

/// The index file and its dirty marker in an agent home.
pub fn paths(home: &Path) -> (PathBuf, PathBuf) {
    let dir = home.join(".holon").join("indexes");
    (dir.join("memory.sqlite3"), dir.join("memory.dirty"))
}

/// Holon writes the index in the agent's home, where a command could have
/// left a symbolic link (before the sandbox kept `.holon/` read-only, or
/// with the sandbox off) to make Holon create or overwrite a file
/// anywhere: every link on the index's way, and one in place of any of
/// its files, is removed before it is opened (the link only; nothing it
/// names is touched).
fn unlink_planted(home: &Path, index: &Path, dirty: &Path) {
    let dot = home.join(".holon");
    let mut files = vec![dot.clone(), dot.join("indexes"), dirty.to_path_buf()];
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut p = index.as_os_str().to_owned();
        p.push(suffix);
        files.push(PathBuf::from(p));
    }
    for p in files {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            tracing::warn!(path = %p.display(), "a link in the memory index's place: removed");
            let _ = std::fs::remove_file(&p);
        }
    }
}

impl Index {
    fn open_file(path: &Path) -> Result<Index, String> {
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sql)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS docs (
                 id INTEGER PRIMARY KEY,
                 key TEXT NOT NULL UNIQUE,
                 source_ref TEXT NOT NULL UNIQUE,
                 kind TEXT NOT NULL,
                 scope_kind TEXT NOT NULL,
                 workspace_id TEXT,
                 agent_id TEXT NOT NULL,
                 source_path TEXT,
                 title TEXT NOT NULL,
                 body TEXT NOT NULL,
                 updated_at TEXT NOT NULL,
                 metadata TEXT NOT NULL,
                 hash TEXT NOT NULL);
             CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
                 title, body, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab('fts', 'row');",
        )
        .map_err(sql)?;
        let index = Index { conn };
        match index.meta("schema")? {
            Some(s) if s == SCHEMA => {}
            Some(other) => return Err(format!("index schema {other}, expected {SCHEMA}")),
            None => index.set_meta("schema", SCHEMA)?,
        }
        Ok(index)
    }

    /// Open the index as it is, or `None` when it is missing, mid-sync,
    /// damaged or of another schema: what a caller that must not rebuild
    /// it under a running sync (retention) uses; the next `open` rebuilds.
    pub fn open_existing(home: &Path) -> Option<Index> {
        let (path, dirty) = paths(home);
        if !path.is_file() || dirty.exists() {
            return None;
        }
        Index::open_file(&path)
            .and_then(|i| i.check().map(|()| i))
            .ok()
    }

    /// Open the index, rebuilding it from nothing when it is corrupt, of
    /// another schema, or was left mid-sync. Returns why it was rebuilt.
    pub fn open(home: &Path) -> Result<(Index, Option<String>), String> {
        let (path, dirty) = paths(home);
        unlink_planted(home, &path, &dirty);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let mut why = dirty
            .exists()
            .then(|| "a previous sync did not finish".to_owned());
        if why.is_none() {
            match Index::open_file(&path).and_then(|i| i.check().map(|()| i)) {
                Ok(i) => return Ok((i, None)),
                Err(e) => why = Some(e),
            }
        }
        for suffix in ["", "-journal", "-wal", "-shm"] {
            let mut p = path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
        let _ = std::fs::remove_file(&dirty);
        Ok((Index::open_file(&path)?, why))
    }

    /// A cheap integrity probe: the tables answer.
    fn check(&self) -> Result<(), String> {
        self.conn
            .query_row(
                "SELECT count(*) FROM (SELECT 1 FROM docs LIMIT 1)",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(sql)?;
        self.conn
            .query_row(
                "SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH 'x' LIMIT 1)",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(sql)?;
        Ok(())
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>, String> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(sql)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), String> {
        self.conn
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map(|_| ())
            .map_err(sql)
    }

    /// Forget the briefs whose event is before `ledger_start`: the ones
    /// retention cut from the ledger, whatever their ids or times say.
    pub fn forget_briefs_before(&mut self, ledger_start: u64) -> Result<u64, String> {
        let before = i64::try_from(ledger_start).unwrap_or(i64::MAX);
        let pruned = "SELECT id FROM docs WHERE kind = 'brief' \
                      AND CAST(json_extract(metadata, '$.event_seq') AS INTEGER) < ?1";
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute(
            &format!("DELETE FROM fts WHERE rowid IN ({pruned})"),
            [before],
        )
        .map_err(sql)?;
        let n = tx
            .execute(
                &format!("DELETE FROM docs WHERE id IN ({pruned})"),
                [before],
            )
            .map_err(sql)?;
        // Deleted postings stay in the full-text segments until merged:
        // merge some now (bounded: at most 500 pages of work, so a sync
        // never waits long), so searches stop reading what retention
        // forgot, day after day.
        if n > 0 {
            tx.execute("INSERT INTO fts(fts, rank) VALUES('merge', 500)", [])
                .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(n as u64)
    }

    pub fn count(&self) -> Result<u64, String> {
        self.conn
            .query_row("SELECT count(*) FROM docs", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(sql)
    }

    /// Insert or refresh documents (unchanged hashes are skipped), and
    /// set cursors, in one transaction. Returns how many changed.
    pub fn upsert(&mut self, docs: &[Doc], cursors: &[(&str, String)]) -> Result<usize, String> {
        let tx = self.conn.transaction().map_err(sql)?;
        let mut changed = 0;
        {
            let mut find = tx
                .prepare_cached("SELECT id, source_ref, hash FROM docs WHERE key = ?1")
                .map_err(sql)?;
            let mut put = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO docs (id, key, source_ref, kind, scope_kind, \
                     workspace_id, agent_id, source_path, title, body, updated_at, metadata, hash) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                )
                .map_err(sql)?;
            let mut unfts = tx
                .prepare_cached("DELETE FROM fts WHERE rowid = ?1")
                .map_err(sql)?;
            let mut fts = tx
                .prepare_cached("INSERT INTO fts (rowid, title, body) VALUES (?1, ?2, ?3)")
                .map_err(sql)?;
            for d in docs {
                let found: Option<(i64, String, String)> = find
                    .query_row([&d.key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
                    .map_err(sql)?;
                let (id, source_ref) = match found {
                    Some((_, _, hash)) if hash == d.hash => continue,
                    Some((id, r, _)) => {
                        unfts.execute([id]).map_err(sql)?;
                        (Some(id), r)
                    }
                    None => (None, crate::new_id("mref")),
                };
                let f = &d.from;
                put.execute(params![
                    id,
                    d.key,
                    source_ref,
                    f.kind,
                    f.scope_kind,
                    f.workspace_id,
                    f.agent_id,
                    f.source_path,
                    f.title,
                    d.body,
                    f.updated_at,
                    f.metadata.to_string(),
                    d.hash
                ])
                .map_err(sql)?;
                let rowid = tx.last_insert_rowid();
                let expanded = format!(
                    "{}\n{}",
                    d.body,
                    cjk::expand_for_index(&format!("{} {}", f.title, d.body))
                );
                fts.execute(params![rowid, f.title, expanded])
                    .map_err(sql)?;
                changed += 1;
            }
            for (k, v) in cursors {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2)
                     ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    params![k, v],
                )
                .map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)?;
        Ok(changed)
    }

    /// Ranked matches for `terms`, agent-scoped documents always,
    /// workspace-scoped ones of `workspace` (all when `None`): documents
    /// with every term first, then, when they are fewer than `limit`,
    /// those with any (bm25 ranks by how many terms and how rare).
    pub fn search(
        &self,
        terms: &[String],
        workspace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(Stored, f64)>, String> {
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let quoted: Vec<String> = terms
            .iter()
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect();
        // In a large index, terms in most documents rank nothing and make
        // a query read the whole index: leave them out (unless every term
        // is that common).
        let docs: i64 = self
            .conn
            .query_row("SELECT coalesce(max(id), 0) FROM docs", [], |r| r.get(0))
            .map_err(sql)?;
        let mut df = Vec::with_capacity(terms.len());
        // A small index keeps every term: no need to count them.
        for t in terms.iter().filter(|_| docs >= 1_000) {
            let n: i64 = self
                .conn
                .query_row("SELECT doc FROM fts_vocab WHERE term = ?1", [t], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(sql)?
                .unwrap_or(0);
            df.push(n);
        }
        let rarest = df.iter().copied().min().unwrap_or(0);
        let useful: Vec<&str> = quoted
            .iter()
            .zip(&df)
            .filter(|(_, n)| **n <= docs / 2 || **n == rarest)
            .map(|(q, _)| q.as_str())
            .collect();
        let useful = match docs < 1_000 {
            true => quoted.iter().map(String::as_str).collect(),
            false => useful,
        };
        // Documents with every term first; then, when they are fewer than
        // the limit, those with any.
        let mut hits = self.query(&useful.join(" AND "), workspace, limit)?;
        if hits.len() < limit && useful.len() > 1 {
            for h in self.query(&useful.join(" OR "), workspace, limit)? {
                if hits.len() >= limit {
                    break;
                }
                if !hits.iter().any(|(s, _)| s.source_ref == h.0.source_ref) {
                    hits.push(h);
                }
            }
        }
        Ok(hits)
    }

    fn query(
        &self,
        expr: &str,
        workspace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(Stored, f64)>, String> {
        let q = format!(
            "SELECT {STORED_COLUMNS}, bm25(fts, 4.0, 1.0) AS score FROM fts \
             JOIN docs d ON d.id = fts.rowid \
             WHERE fts MATCH ?1 AND (d.scope_kind = 'agent' OR ?2 IS NULL OR d.workspace_id = ?2) \
             ORDER BY score LIMIT ?3"
        );
        let mut stmt = self.conn.prepare_cached(&q).map_err(sql)?;
        let rows = stmt
            .query_map(params![expr, workspace, limit as i64], |r| {
                Ok((stored(r)?, -r.get::<_, f64>(10)?))
            })
            .map_err(sql)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql)
    }

    pub fn get(&self, source_ref: &str) -> Result<Option<Stored>, String> {
        let q = format!("SELECT {STORED_COLUMNS} FROM docs d WHERE d.source_ref = ?1");
        self.conn
            .query_row(&q, [source_ref], stored)
            .optional()
            .map_err(sql)
    }

    /// Keys of one kind, with their hashes (for hash checks).
    pub fn keys_of(&self, kind: &str) -> Result<Vec<(String, String)>, String> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, hash FROM docs WHERE kind = ?1")
            .map_err(sql)?;
        let rows = stmt
            .query_map([kind], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql)
    }
}
