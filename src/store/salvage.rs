//! `holon store salvage BROKEN OUT`: every record that can still be read
//! from a damaged store, copied into a new one. The damaged file is never
//! written: it is opened read-only, or, when it needs the repair an unclean
//! shutdown leaves, a copy of it is repaired instead. Each table is read
//! forwards until the first unreadable page and then backwards from its
//! end to the same place, so one damaged page loses only the rows on it.
//! The runtime's indexes are rebuilt from the records afterwards
//! (`runtime::repair`), and the new store is verified.

use std::path::{Path, PathBuf};

use redb::ReadableDatabase as _;
use serde::Serialize;

use super::copy::{known_tables, shape_of, with_shape, Shape};
use super::StoreError;

/// What one table gave up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableSalvage {
    pub table: String,
    /// Rows copied into the new store.
    pub rows: u64,
    /// Rows the damaged table says it holds, when it can say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    /// Why rows were lost, when any were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl TableSalvage {
    pub fn complete(&self) -> bool {
        self.problem.is_none() && self.expected.is_none_or(|n| n == self.rows)
    }
}

/// What salvage recovered and lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SalvageReport {
    pub source: PathBuf,
    pub out: PathBuf,
    /// The source needed a repair, done on a copy of it.
    pub repaired_copy: bool,
    pub tables: Vec<TableSalvage>,
    /// Filled in by the caller: indexes rebuilt and what verifying the new
    /// store found.
    pub indexes_rebuilt: u64,
    pub problems: Vec<String>,
}

impl SalvageReport {
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }

    pub fn complete(&self) -> bool {
        self.tables.iter().all(TableSalvage::complete) && self.problems.is_empty()
    }
}

/// The source opened for reading without writing to it: read-only, or a
/// copy at `scratch` opened for writing (repaired after an unclean
/// shutdown, migrated from an older storage format). The database comes
/// back with the transaction: redb 4 closes a database when it is
/// dropped, read transactions and all.
type Source = (redb::ReadTransaction, Option<redb::Database>, bool);

fn open_source(broken: &Path, scratch: &Path) -> Result<Source, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        path: broken.to_path_buf(),
        detail,
    };
    let read_only = super::open::quietly(|| redb::Builder::new().open_read_only(broken));
    if let Ok(Ok(db)) = read_only {
        return Ok((db.begin_read().map_err(StoreError::storage)?, None, false));
    }
    if let Ok(Err(redb::DatabaseError::DatabaseAlreadyOpen)) = read_only {
        return Err(StoreError::Locked {
            path: broken.to_path_buf(),
        });
    }
    std::fs::copy(broken, scratch).map_err(|source| StoreError::Io {
        path: scratch.to_path_buf(),
        source,
    })?;
    let db = super::open_database(scratch, super::DEFAULT_CACHE_MIB * 1024 * 1024).map_err(
        |e| match e {
            StoreError::Corrupt { detail, .. } => {
                corrupt(format!("nothing could be read: {detail}"))
            }
            other => other,
        },
    )?;
    let txn = db.begin_read().map_err(StoreError::storage)?;
    Ok((txn, Some(db), true))
}

/// Copy what can be read of `broken` into a new store at `out` (which must
/// not exist). Blocking.
pub fn salvage(broken: &Path, out: &Path) -> Result<SalvageReport, StoreError> {
    if std::fs::symlink_metadata(out).is_ok() {
        return Err(StoreError::Storage(format!(
            "{} exists; salvage writes a new store, choose a new path",
            out.display()
        )));
    }
    let scratch = PathBuf::from(format!("{}.source", out.display()));
    let staging = PathBuf::from(format!("{}.partial", out.display()));
    for stale in [&scratch, &staging] {
        let _ = std::fs::remove_file(stale);
    }
    // The engine may panic on a damaged page outside any one table's copy
    // (listing the tables, a first read): that is "nothing could be read".
    let result = super::open::quietly(|| {
        let (src, _db, repaired_copy) = open_source(broken, &scratch)?;
        let names = {
            use redb::TableHandle as _;
            match src.list_tables() {
                Ok(list) => {
                    let mut names: Vec<String> = list.map(|h| h.name().to_owned()).collect();
                    for (k, _) in known_tables() {
                        if !names.iter().any(|n| n == k) {
                            names.push(k.to_owned());
                        }
                    }
                    names
                }
                Err(_) => known_tables().map(|(k, _)| k.to_owned()).collect(),
            }
        };
        let dst = super::files::create_private_db(&staging)?;
        let mut tables = Vec::new();
        for name in names {
            let Some(shape) = shape_of(&name) else {
                tables.push(TableSalvage {
                    table: name,
                    rows: 0,
                    expected: None,
                    problem: Some("a table this build does not know: not copied".into()),
                });
                continue;
            };
            tables.push(salvage_table(&src, &dst, &name, shape));
        }
        let txn = dst.begin_write().map_err(StoreError::storage)?;
        txn.commit().map_err(StoreError::storage)?;
        drop(dst);
        Ok(SalvageReport {
            source: broken.to_path_buf(),
            out: out.to_path_buf(),
            repaired_copy,
            tables,
            indexes_rebuilt: 0,
            problems: Vec::new(),
        })
    })
    .unwrap_or_else(|panic| {
        Err(StoreError::Corrupt {
            path: broken.to_path_buf(),
            detail: format!("nothing could be read: {panic}"),
        })
    });
    let _ = std::fs::remove_file(&scratch);
    // What a migration of the scratch copy kept beside it.
    let _ = std::fs::remove_file(format!("{}.redb2", scratch.display()));
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&staging);
            return Err(e);
        }
    };
    super::files::link_new(&staging, out)?;
    Ok(report)
}

/// Copy one table: forwards until a row cannot be read, then backwards
/// from the end until a row already copied (or another unreadable one).
/// Each pass runs apart from the other, so an engine panic on a damaged
/// page ends only that pass; rows committed before it stay.
fn salvage_table(
    src: &redb::ReadTransaction,
    dst: &redb::Database,
    name: &str,
    shape: Shape,
) -> TableSalvage {
    let mut report = TableSalvage {
        table: name.to_owned(),
        rows: 0,
        expected: None,
        problem: None,
    };
    for backwards in [false, true] {
        let pass =
            super::open::quietly(|| copy_pass(src, dst, name, shape, backwards, &mut report))
                .unwrap_or_else(|panic| Err(format!("a damaged page ({panic})")));
        match pass {
            // The whole table was read: nothing for a second pass.
            Ok(()) if report.problem.is_none() => break,
            Ok(()) => {}
            Err(e) => {
                report.problem.get_or_insert(e);
            }
        }
        if backwards {
            break;
        }
    }
    report
}

/// Rows read from a damaged table before they are written: small, so a
/// page the engine panics on loses no row read before it.
const SALVAGE_BATCH: usize = 512;

/// One pass over a table, forwards or backwards, copying rows into `dst`
/// and counting them in `report`; stops at the first unreadable row (noted
/// in `report.problem`) or, backwards, at a row already copied. Rows are
/// read as bytes first and written after, so an engine panic while reading
/// keeps every row read before it.
// `V` is `()` for the index tables: its value is a unit.
#[allow(clippy::unit_arg)]
fn copy_pass(
    src: &redb::ReadTransaction,
    dst: &redb::Database,
    name: &str,
    shape: Shape,
    backwards: bool,
    report: &mut TableSalvage,
) -> Result<(), String> {
    use redb::{ReadableTable as _, ReadableTableMetadata as _, Value as _};
    with_shape!(shape, |K, V| {
        let table = match src.open_table(redb::TableDefinition::<K, V>::new(name)) {
            Ok(t) => t,
            // Absent in the source: an empty table in the copy.
            Err(redb::TableError::TableDoesNotExist(_)) => {
                let txn = dst.begin_write().map_err(|e| e.to_string())?;
                txn.open_table(redb::TableDefinition::<K, V>::new(name))
                    .map_err(|e| e.to_string())?;
                txn.commit().map_err(|e| e.to_string())?;
                return Ok(());
            }
            Err(e) => return Err(e.to_string()),
        };
        report.expected = table.len().ok();
        let iter = table.iter().map_err(|e| e.to_string())?;
        let mut rows: Box<dyn Iterator<Item = _>> = match backwards {
            false => Box::new(iter),
            true => Box::new(iter.rev()),
        };
        loop {
            let mut read: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(SALVAGE_BATCH);
            // Ok(true): the table's end; Ok(false): a full batch.
            let outcome = super::open::quietly(|| {
                for _ in 0..SALVAGE_BATCH {
                    match rows.next() {
                        None => return Ok(true),
                        Some(Err(e)) => return Err(e.to_string()),
                        Some(Ok((k, v))) => read.push((
                            AsRef::<[u8]>::as_ref(&K::as_bytes(&k.value())).to_vec(),
                            AsRef::<[u8]>::as_ref(&V::as_bytes(&v.value())).to_vec(),
                        )),
                    }
                }
                Ok(false)
            })
            .unwrap_or_else(|panic| Err(format!("a damaged page ({panic})")));
            let mut met = false;
            let mut txn = dst.begin_write().map_err(|e| e.to_string())?;
            txn.set_durability(redb::Durability::None)
                .map_err(|e| e.to_string())?;
            let mut written = 0;
            {
                let mut out = txn
                    .open_table(redb::TableDefinition::<K, V>::new(name))
                    .map_err(|e| e.to_string())?;
                for (k, v) in &read {
                    let existed = out
                        .insert(K::from_bytes(k), V::from_bytes(v))
                        .map_err(|e| e.to_string())?
                        .is_some();
                    if existed {
                        // Backwards reached the rows read forwards.
                        met = true;
                        break;
                    }
                    written += 1;
                }
            }
            txn.commit().map_err(|e| e.to_string())?;
            report.rows += written;
            match outcome {
                Ok(false) if !met => continue,
                Ok(_) => return Ok(()),
                Err(e) => {
                    report.problem.get_or_insert(e);
                    return Ok(());
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Keyed, Store, StoreOptions};

    /// A store whose `messages` table spans many pages.
    async fn written(path: &Path) {
        let store = Store::open(path, StoreOptions::default()).unwrap();
        store
            .write(|tx| {
                tx.put_agent("a", &serde_json::json!({ "id": "a" }))?;
                for n in 0..2_000u32 {
                    let id = format!("msg_{n:05}");
                    // Digests, so the codec cannot shrink the table to a
                    // few pages.
                    use sha2::Digest as _;
                    let text: String = (0..3u8)
                        .flat_map(|k| {
                            sha2::Sha256::digest([n.to_le_bytes().as_slice(), &[k]].concat())
                        })
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    let body = serde_json::json!({ "id": id, "text": text });
                    tx.put(Keyed::Messages, "a", &id, &body)?;
                }
                Ok(())
            })
            .await
            .unwrap();
        store.close().await.unwrap();
    }

    #[tokio::test]
    async fn an_intact_store_is_salvaged_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (src, out) = (dir.path().join("s.redb"), dir.path().join("o.redb"));
        written(&src).await;
        let before = std::fs::read(&src).unwrap();
        let report = salvage(&src, &out).unwrap();
        assert!(report.complete(), "{report:?}");
        assert!(!report.repaired_copy);
        assert_eq!(
            std::fs::read(&src).unwrap(),
            before,
            "the source is only read"
        );
        assert_eq!(
            crate::store::copy::fingerprint_file(&out).unwrap(),
            crate::store::copy::fingerprint_file(&src).unwrap()
        );
        let err = salvage(&src, &out).unwrap_err().to_string();
        assert!(err.contains("exists"), "{err}");
    }

    /// A store left by a killed process (copied while still open) needs a
    /// repair: salvage repairs a copy of it and reads everything.
    #[tokio::test]
    async fn a_store_not_closed_cleanly_is_salvaged_from_a_repaired_copy() {
        let dir = tempfile::tempdir().unwrap();
        let (src, out) = (dir.path().join("s.redb"), dir.path().join("o.redb"));
        written(&src).await;
        let store = Store::open(&src, StoreOptions::default()).unwrap();
        store
            .write(|tx| tx.put_agent("b", &serde_json::json!({ "id": "b" })))
            .await
            .unwrap();
        let unclean = dir.path().join("unclean.redb");
        std::fs::copy(&src, &unclean).unwrap();
        store.close().await.unwrap();
        let before = std::fs::read(&unclean).unwrap();
        let report = salvage(&unclean, &out).unwrap();
        assert!(report.repaired_copy, "{report:?}");
        assert!(report.complete(), "{report:?}");
        let messages = report
            .tables
            .iter()
            .find(|t| t.table == "messages")
            .unwrap();
        assert_eq!(messages.rows, 2_000);
        assert_eq!(
            std::fs::read(&unclean).unwrap(),
            before,
            "the source is only read"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("o.redb."))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// Every page damaged in turn: salvage never panics, either says
    /// nothing could be read or writes a store that opens; a damaged page
    /// in the middle of a table loses only that part of it (the forward
    /// and backward passes meet at it).
    #[tokio::test]
    async fn each_damaged_page_loses_only_what_it_held() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("s.redb");
        written(&src).await;
        let clean = std::fs::read(&src).unwrap();
        let pages = clean.len() / 4096;
        let (mut partial, mut leaf_sized, mut worst) = (0, 0, u64::MAX);
        for page in 1..pages {
            let broken = dir.path().join("b.redb");
            let out = dir.path().join(format!("o{page}.redb"));
            let mut bytes = clean.clone();
            for (i, b) in bytes[page * 4096..(page + 1) * 4096].iter_mut().enumerate() {
                *b = (i as u8).wrapping_mul(31) ^ 0x5a;
            }
            std::fs::write(&broken, &bytes).unwrap();
            match salvage(&broken, &out) {
                Err(StoreError::Corrupt { .. }) => continue,
                Err(e) => panic!("page {page}: {e}"),
                Ok(report) => {
                    let messages = report
                        .tables
                        .iter()
                        .find(|t| t.table == "messages")
                        .unwrap();
                    if messages.rows > 0 && messages.rows < 2_000 && messages.problem.is_some() {
                        partial += 1;
                        worst = worst.min(messages.rows);
                        if messages.rows >= 1_950 {
                            leaf_sized += 1;
                        }
                    }
                    let store = Store::open(&out, StoreOptions::default())
                        .unwrap_or_else(|e| panic!("page {page}: {e}"));
                    store.close().await.unwrap();
                }
            }
            let _ = std::fs::remove_file(&out);
        }
        assert!(
            partial > 0,
            "no page of {pages} lost only part of the messages"
        );
        // A leaf holds a few dozen of these rows, and nearly every page of
        // the table is a leaf: a damaged one costs only its rows. A damaged
        // branch page costs the rows under it (the worst case).
        assert!(
            leaf_sized * 10 >= partial * 9,
            "{leaf_sized} of {partial} partial losses were leaf-sized; the worst kept {worst} of 2000"
        );
    }
}
