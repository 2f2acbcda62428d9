//! What a store backup reports.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One consistent copy of the store, written from a read snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupReport {
    /// The copy (mode 0600).
    pub path: PathBuf,
    /// Tables and rows copied.
    pub tables: u64,
    pub rows: u64,
    /// The copy's size on disk.
    pub bytes: u64,
    /// Time to write it, in milliseconds.
    pub millis: u64,
    /// Older rotated copies removed after it (`[store] backup_keep`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<PathBuf>,
}
