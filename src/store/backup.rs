//! `holon store backup`: a consistent copy of the store while the runtime
//! runs. A read snapshot (which never blocks the writer) is copied table by
//! table into `<dest>.partial`, made durable, checked row for row, and
//! linked to `dest` without replacing anything there; rotated copies live
//! in `<data>/backups/` and the oldest beyond a count are removed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::copy::{copy_into_new, tables_of};
use super::{Store, StoreError};
use crate::model::backup::BackupReport;

/// The prefix and suffix of a rotated copy's file name.
const PREFIX: &str = "holon-";
const SUFFIX: &str = ".redb";

impl Store {
    /// Write a consistent copy of the store to `dest`, which must not exist.
    /// Blocking: call it off the async runtime.
    pub fn backup(&self, dest: &Path) -> Result<BackupReport, StoreError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| StoreError::Io { path: p, source }
        };
        if dest == self.path() {
            return Err(StoreError::Storage(
                "a backup cannot replace the store itself".into(),
            ));
        }
        if std::fs::symlink_metadata(dest).is_ok() {
            return Err(StoreError::Storage(format!(
                "{} exists; a backup never replaces a file, choose a new path",
                dest.display()
            )));
        }
        let started = Instant::now();
        let staging = PathBuf::from(format!("{}.partial", dest.display()));
        match std::fs::remove_file(&staging) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&staging)(e)),
            _ => {}
        }
        let rx = self.read()?;
        let copied = tables_of!(redb, rx.txn)
            .map_err(StoreError::Storage)
            .and_then(|tables| {
                let rows = copy_into_new!(redb, rx.txn, &staging, &tables)?;
                Ok((tables.len() as u64, rows))
            });
        drop(rx);
        let (tables, rows) = match copied {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&staging);
                return Err(e);
            }
        };
        super::files::link_new(&staging, dest)?;
        let bytes = std::fs::metadata(dest).map_err(io(dest))?.len();
        Ok(BackupReport {
            path: dest.to_path_buf(),
            tables,
            rows,
            bytes,
            millis: started.elapsed().as_millis() as u64,
            removed: Vec::new(),
        })
    }

    /// The directory rotated copies live in: `backups/` beside the store.
    pub fn backup_dir(&self) -> PathBuf {
        self.path()
            .parent()
            .unwrap_or(Path::new("."))
            .join("backups")
    }

    /// How long ago the newest rotated copy was written, if there is one.
    pub fn newest_backup_age(&self) -> Option<std::time::Duration> {
        let dir = self.backup_dir();
        let newest = rotated_in(&dir)
            .into_iter()
            .filter(|n| n.ends_with(SUFFIX))
            .filter_map(|n| std::fs::metadata(dir.join(n)).ok()?.modified().ok())
            .max()?;
        Some(
            std::time::SystemTime::now()
                .duration_since(newest)
                .unwrap_or_default(),
        )
    }

    /// Write a rotated copy into `backup_dir()` (made 0700 if missing), then
    /// remove the oldest rotated copies beyond `keep` (at least the new one
    /// stays).
    pub fn backup_rotated(&self, keep: usize) -> Result<BackupReport, StoreError> {
        let dir = self.backup_dir();
        private_dir(&dir)?;
        let dest = new_name(&dir);
        // What a killed backup left (a full-size partial copy).
        for stale in rotated_in(&dir)
            .into_iter()
            .filter(|n| n.ends_with(".partial"))
        {
            let _ = std::fs::remove_file(dir.join(stale));
        }
        let mut report = self.backup(&dest)?;
        report.removed = rotate(&dir, keep.max(1), &dest);
        Ok(report)
    }
}

impl Store {
    /// Write a copy outside the rotation, into `backup_dir()/copies`, for
    /// a client to move where it was asked (`holon store backup PATH`
    /// while a runtime runs): it counts toward no `backup_keep` and evicts
    /// no scheduled backup. Copies a client never took (it died first)
    /// are removed an hour on, by the next one.
    pub fn backup_copy(&self) -> Result<BackupReport, StoreError> {
        let dir = self.backup_dir().join(COPIES);
        private_dir(&dir)?;
        let hour = std::time::Duration::from_secs(3600);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > hour);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let dest = new_name(&dir);
        self.backup(&dest)
    }
}

/// Make `dir` (0700) if it is missing.
fn private_dir(dir: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

/// A new backup's path in `dir`, named by the time: two copies in one
/// millisecond, the later takes the next one, so names still sort by
/// time.
fn new_name(dir: &Path) -> PathBuf {
    let now = crate::now_ms();
    let mut dest = dir.join(rotated_name(now));
    for later in 1.. {
        if std::fs::symlink_metadata(&dest).is_err() {
            break;
        }
        dest = dir.join(rotated_name(now + later));
    }
    dest
}

/// Where copies for clients wait to be moved (`Store::backup_copy`).
pub const COPIES: &str = "copies";

/// `holon-20261125T193000.123Z.redb`: rotated names sort by time.
fn rotated_name(now_ms: i64) -> String {
    let ts = crate::format_ts(now_ms);
    let compact: String = ts.chars().filter(|c| *c != '-' && *c != ':').collect();
    format!("{PREFIX}{compact}{SUFFIX}")
}

/// The rotated copies among `names` to remove so that `keep` remain: the
/// oldest by name. Other files are never touched.
pub fn beyond_keep(mut names: Vec<String>, keep: usize) -> Vec<String> {
    names.retain(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX));
    names.sort();
    let excess = names.len().saturating_sub(keep);
    names.truncate(excess);
    names
}

/// The names of regular files in `dir` that rotation may consider.
fn rotated_in(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with(PREFIX))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Remove the rotated copies in `dir` beyond `keep`, never `newest` (the
/// copy just written, whatever the clock said when it was named); the ones
/// removed.
fn rotate(dir: &Path, keep: usize, newest: &Path) -> Vec<PathBuf> {
    let newest = newest.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let others: Vec<String> = rotated_in(dir)
        .into_iter()
        .filter(|n| n != newest)
        .collect();
    let mut removed = Vec::new();
    for name in beyond_keep(others, keep.saturating_sub(1)) {
        let path = dir.join(&name);
        match std::fs::remove_file(&path) {
            Ok(()) => removed.push(path),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "an old store backup could not be removed")
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::{NewEvent, Provenance};
    use crate::store::StoreOptions;

    fn note(n: u64) -> NewEvent {
        NewEvent {
            agent_id: "a".into(),
            kind: "note",
            provenance: Provenance::default(),
            payload: serde_json::json!({ "n": n, "pad": "x".repeat(200) }),
        }
    }

    /// Backups taken while a writer appends are each a sound store holding
    /// a prefix of the ledger; rotation keeps the newest two.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn backups_under_writes_are_sound_prefixes_and_rotate() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("holon.redb"), StoreOptions::default()).unwrap();
        store
            .write(|tx| tx.put_agent("a", &serde_json::json!({ "id": "a" })))
            .await
            .unwrap();
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..1_000u64 {
                    store
                        .write(move |tx| tx.append_event(note(n)))
                        .await
                        .unwrap();
                }
            })
        };
        let mut reports = Vec::new();
        for _ in 0..3 {
            let store = store.clone();
            reports.push(
                tokio::task::spawn_blocking(move || store.backup_rotated(2))
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        writer.await.unwrap();
        let last = store.read().unwrap().last_seq("a").unwrap();
        assert_eq!(last, 1_000);
        store.close().await.unwrap();

        let kept: Vec<_> = reports.iter().filter(|r| r.path.exists()).collect();
        assert_eq!(kept.len(), 2, "{reports:?}");
        assert_eq!(reports[2].removed, [reports[0].path.clone()]);
        for r in kept {
            let check = crate::store::verify::verify(&r.path).unwrap();
            assert!(check.sound(), "{check:?}");
            assert_eq!(check.agents, 1);
            assert!(check.events <= last);
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&r.path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        assert!(!dir.path().join("backups").read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".partial")));
    }

    #[test]
    fn a_backup_refuses_to_replace_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let store = rt
            .block_on(async {
                Store::open(&dir.path().join("holon.redb"), StoreOptions::default())
            })
            .unwrap();
        let there = dir.path().join("there.redb");
        std::fs::write(&there, b"mine").unwrap();
        let err = store.backup(&there).unwrap_err().to_string();
        assert!(err.contains("exists"), "{err}");
        assert_eq!(std::fs::read(&there).unwrap(), b"mine");
        let err = store.backup(store.path()).unwrap_err().to_string();
        assert!(err.contains("store itself"), "{err}");
    }

    #[test]
    fn rotation_keeps_the_newest_and_touches_nothing_else() {
        let names = [
            "holon-20261125T090000.000Z.redb",
            "holon-20261124T090000.000Z.redb",
            "holon-20261125T100000.000Z.redb",
            "holon-20261125T100000.001Z.redb",
            "notes.txt",
            "holon.redb",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            beyond_keep(names.clone(), 2),
            [
                "holon-20261124T090000.000Z.redb",
                "holon-20261125T090000.000Z.redb"
            ]
        );
        assert!(beyond_keep(names, 10).is_empty());
    }

    #[test]
    fn rotated_names_sort_by_time() {
        let a = rotated_name(1_764_000_000_000);
        let b = rotated_name(1_764_000_000_001);
        assert!(a.starts_with(PREFIX) && a.ends_with(SUFFIX), "{a}");
        assert!(!a.contains(':'), "{a}");
        assert!(a < b, "{a} {b}");
    }
}
