//! Offline compaction: `holon store compact`. redb reuses freed pages but
//! never shrinks its file by itself; compaction moves live pages down and
//! truncates the tail. It needs the file to itself (no writer, no reader),
//! so it runs only while no runtime holds the store: the open fails with
//! the usual "owned by another Holon process" error otherwise, and nothing
//! is changed.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{open_database, StoreError, DEFAULT_CACHE_MIB};

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    pub path: PathBuf,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Compaction passes that moved pages (redb compacts in steps).
    pub passes: u32,
}

impl CompactReport {
    pub fn reclaimed(&self) -> u64 {
        self.bytes_before.saturating_sub(self.bytes_after)
    }
}

fn file_len(path: &Path) -> Result<u64, StoreError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Compact the store at `path` until no further pass frees anything.
pub fn compact(path: &Path) -> Result<CompactReport, StoreError> {
    let bytes_before = file_len(path)?;
    let mut db = open_database(path, DEFAULT_CACHE_MIB * 1024 * 1024)?;
    let mut passes = 0;
    loop {
        match db.compact() {
            Ok(true) => passes += 1,
            Ok(false) => break,
            Err(e) => return Err(StoreError::Storage(format!("compaction failed: {e}"))),
        }
    }
    drop(db);
    Ok(CompactReport {
        path: path.to_path_buf(),
        bytes_before,
        bytes_after: file_len(path)?,
        passes,
    })
}

/// One table's size (`holon store stats`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableSize {
    pub table: String,
    pub rows: u64,
    /// Keys and values.
    pub stored_bytes: u64,
    /// B-tree pages' own overhead.
    pub metadata_bytes: u64,
    /// Unused space inside the table's pages.
    pub fragmented_bytes: u64,
}

/// What the store file holds, table by table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    pub path: PathBuf,
    pub file_bytes: u64,
    pub tables: Vec<TableSize>,
}

/// Measure every table of the store at `path` (it must not be in use).
pub fn stats(path: &Path) -> Result<StoreStats, StoreError> {
    use redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};
    let storage = |e: &dyn std::fmt::Display| StoreError::Storage(format!("reading sizes: {e}"));
    let file_bytes = file_len(path)?;
    let db = open_database(path, DEFAULT_CACHE_MIB * 1024 * 1024)?;
    let rx = db.begin_read().map_err(|e| storage(&e))?;
    let mut tables = Vec::new();
    for handle in rx.list_tables().map_err(|e| storage(&e))? {
        let name = handle.name().to_owned();
        let table = rx.open_untyped_table(handle).map_err(|e| storage(&e))?;
        let s = table.stats().map_err(|e| storage(&e))?;
        tables.push(TableSize {
            table: name,
            rows: table.len().map_err(|e| storage(&e))?,
            stored_bytes: s.stored_bytes(),
            metadata_bytes: s.metadata_bytes(),
            fragmented_bytes: s.fragmented_bytes(),
        });
    }
    tables
        .sort_by_key(|t| std::cmp::Reverse(t.stored_bytes + t.metadata_bytes + t.fragmented_bytes));
    Ok(StoreStats {
        path: path.to_path_buf(),
        file_bytes,
        tables,
    })
}
