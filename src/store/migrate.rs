//! Moving a store written in the storage engine's previous file format
//! (redb 2) to the current one.
//!
//! The engine cannot upgrade such a file in place: redb 3 changed how
//! tuples of variable-width types are encoded, and every ledger, queue and
//! index key here is such a tuple. So the move is a logical copy: the old
//! file is read with the old engine, every table is written typed into a
//! new file beside it, the row counts are compared, and the new file
//! replaces the old one in one rename. The old file stays next to it
//! (hard-linked before the rename, so no moment leaves the path empty)
//! until the operator deletes it.
//!
//! A crash at any point leaves either the untouched old store at the path
//! (the next open migrates again) or the complete new one.

use std::path::{Path, PathBuf};

use super::copy::{copy_into_new, tables_of};
use super::StoreError;

/// What a migration did, for the log and for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// Where the old file is kept.
    pub kept: PathBuf,
    /// Tables copied and rows in them.
    pub tables: usize,
    pub rows: u64,
}

/// The file beside `path` the old store is kept as: `<name>.redb2`, or
/// `<name>.redb2.N` when that name holds some other file.
fn keep_path(path: &Path) -> Result<PathBuf, StoreError> {
    use std::os::unix::fs::MetadataExt;
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let me = std::fs::metadata(path).map_err(io)?;
    let base = format!("{}.redb2", path.display());
    for n in 0..100 {
        let candidate = PathBuf::from(if n == 0 {
            base.clone()
        } else {
            format!("{base}.{n}")
        });
        match std::fs::symlink_metadata(&candidate) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(candidate),
            // A link made by an interrupted earlier migration of this file.
            Ok(m) if m.ino() == me.ino() && m.dev() == me.dev() => return Ok(candidate),
            _ => continue,
        }
    }
    Err(StoreError::Storage(format!(
        "no free name to keep the old store beside {}",
        path.display()
    )))
}

/// Migrate the redb-2 store at `path` to this build's format. Refuses,
/// leaving the file untouched, if it holds a table this build does not
/// know or the copy does not match it.
pub(super) fn from_redb2(path: &Path, version: u8) -> Result<Migrated, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail,
    };
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| StoreError::Io { path: p, source }
    };
    tracing::warn!(path = %path.display(), format = version, "the store is in an older storage format: migrating it (copying every table once)");
    let old = super::open::quietly(|| redb2::Database::open(path))
        .map_err(|panic| corrupt(format!("the older storage engine rejected it: {panic}")))?
        .map_err(|e| match e {
            redb2::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
                path: path.to_path_buf(),
            },
            other => corrupt(format!(
                "it is in storage format {version}, and the older engine that reads that format could not open it: {other}"
            )),
        })?;
    let src = old.begin_read().map_err(StoreError::storage)?;
    let tables =
        tables_of!(redb2, src).map_err(|why| corrupt(format!("{why}; it was left as it was")))?;

    let staging = PathBuf::from(format!("{}.migrating", path.display()));
    match std::fs::remove_file(&staging) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&staging)(e)),
        _ => {}
    }
    let result = copy_into_new!(redb2, src, &staging, &tables);
    let rows = match result {
        Ok(rows) => rows,
        Err(e) => {
            let _ = std::fs::remove_file(&staging);
            return Err(e);
        }
    };
    drop(src);

    // Any failure from here leaves the old store at the path, untouched,
    // and no full-size staging file beside it.
    let placed = (|| {
        let kept = keep_path(path)?;
        if !kept.exists() {
            std::fs::hard_link(path, &kept).map_err(io(&kept))?;
        }
        std::fs::rename(&staging, path).map_err(io(path))?;
        super::files::sync_dir(path).map_err(io(path))?;
        Ok::<_, StoreError>(kept)
    })();
    let kept = match placed {
        Ok(k) => k,
        Err(e) => {
            let _ = std::fs::remove_file(&staging);
            return Err(e);
        }
    };
    drop(old);
    let migrated = Migrated {
        kept,
        tables: tables.len(),
        rows,
    };
    tracing::warn!(path = %path.display(), kept = %migrated.kept.display(), tables = migrated.tables, rows = migrated.rows, "the store was migrated to the current storage format; the old file is kept beside it: delete it once Holon runs well on the new one");
    Ok(migrated)
}
