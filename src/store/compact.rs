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
