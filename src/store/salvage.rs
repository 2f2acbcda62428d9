//! `holon store salvage BROKEN OUT`: every record that can still be read
//! from a damaged store, copied into a new one. The damaged file is never
//! written: it is opened read-only, or, when it needs the repair an unclean
//! shutdown leaves, a copy of it is repaired instead. Each table is read
//! forwards until the first unreadable page and then backwards from its
//! end to the same place. A table the engine could not read whole (or a
//! file it cannot open at all: a damaged header, a file cut short) is then
//! filled from the file's pages themselves (`scan`): every leaf page still
//! on disk gives back its rows, whatever tree led to it. The runtime's
//! indexes are rebuilt from the records afterwards (`runtime::repair`),
//! and the new store is verified.

use std::path::{Path, PathBuf};

use redb::ReadableDatabase as _;
use serde::Serialize;

use super::copy::{known_tables, shape_of, with_shape, Shape};
use super::scan;
use super::scan::Classify;
use super::schema::Keyed;
use super::StoreError;

/// What one table gave up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableSalvage {
    pub table: String,
    /// Rows copied into the new store.
    pub rows: u64,
    /// Of `rows`, those found by reading the file's pages where the
    /// table's tree did not lead.
    #[serde(skip_serializing_if = "is_zero")]
    pub scanned: u64,
    /// Rows the damaged table says it holds, when it can say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    /// Why rows were lost, when any were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The last key the forward pass read and the last the backward pass
    /// read (engine-encoded): rows found on pages are taken only between
    /// them, where the tree could not lead. A row outside was read from
    /// the tree, or deleted from it (an old copy on a freed page must not
    /// come back).
    #[serde(skip)]
    gap: (Option<Vec<u8>>, Option<Vec<u8>>),
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TableSalvage {
    fn new(table: &str) -> TableSalvage {
        TableSalvage {
            table: table.to_owned(),
            rows: 0,
            scanned: 0,
            expected: None,
            problem: None,
            gap: (None, None),
        }
    }

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
    /// Why the source's tree could not be read at all, when it could not:
    /// every row was then found on its pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable_tree: Option<String>,
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
        self.unreadable_tree.is_none()
            && self.tables.iter().all(TableSalvage::complete)
            && self.problems.is_empty()
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
/// not exist). `classify` places a record of the keyed tables found on a
/// page by its content. Blocking.
pub fn salvage(
    broken: &Path,
    out: &Path,
    classify: &Classify,
) -> Result<SalvageReport, StoreError> {
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
    // (listing the tables, a first read): the tree is then unreadable and
    // only the pages are left.
    let result = super::open::quietly(|| {
        let dst = super::files::create_private_db(&staging)?;
        let walked = super::open::quietly(|| walk(broken, &scratch, &dst))
            .unwrap_or_else(|panic| Err(corrupt(broken, panic)));
        let (mut tables, repaired_copy, unreadable) = match walked {
            Ok((tables, repaired)) => (tables, repaired, None),
            Err(StoreError::Corrupt { detail, .. }) => {
                let tables = known_tables().map(|(name, _)| TableSalvage::new(name));
                (tables.collect(), false, Some(detail))
            }
            Err(e) => return Err(e),
        };
        pages::fill_from_pages(broken, &dst, &mut tables, unreadable.is_some(), classify)?;
        if let Some(detail) = &unreadable {
            if tables.iter().all(|t| t.rows == 0) {
                return Err(corrupt(
                    broken,
                    format!("{detail}; and no page of it holds a row Holon wrote"),
                ));
            }
        }
        let txn = dst.begin_write().map_err(StoreError::storage)?;
        txn.commit().map_err(StoreError::storage)?;
        drop(dst);
        Ok(SalvageReport {
            source: broken.to_path_buf(),
            out: out.to_path_buf(),
            repaired_copy,
            unreadable_tree: unreadable,
            tables,
            indexes_rebuilt: 0,
            problems: Vec::new(),
        })
    })
    .unwrap_or_else(|panic| Err(corrupt(broken, panic)));
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

fn corrupt(path: &Path, detail: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("nothing could be read: {detail}"),
    }
}

/// Copy every table the source's tree leads to into `dst`; with whether
/// the source needed a repair (done on a copy at `scratch`).
fn walk(
    broken: &Path,
    scratch: &Path,
    dst: &redb::Database,
) -> Result<(Vec<TableSalvage>, bool), StoreError> {
    let (src, _db, repaired_copy) = open_source(broken, scratch)?;
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
    let mut tables = Vec::new();
    for name in names {
        let Some(shape) = shape_of(&name) else {
            tables.push(TableSalvage {
                problem: Some("a table this build does not know: not copied".into()),
                ..TableSalvage::new(&name)
            });
            continue;
        };
        tables.push(salvage_table(&src, dst, &name, shape));
    }
    Ok((tables, repaired_copy))
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
    let mut report = TableSalvage::new(name);
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
            if let Some((k, _)) = read.last() {
                match backwards {
                    false => report.gap.0 = Some(k.clone()),
                    true => report.gap.1 = Some(k.clone()),
                }
            }
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

/// A store to damage, for the salvage tests and bench: `agents` agents,
/// each with `events` events (sealed into blocks as the writer does) and a
/// tool execution record for every ten, written ten events to a
/// transaction as a runtime writes them, so old copies of pages lie on
/// disk as well. Event texts are words drawn at random: they compress as
/// prose does.
#[cfg(any(test, feature = "bench"))]
pub(crate) async fn sample(path: &Path, agents: usize, events: u64) -> Result<(), StoreError> {
    use crate::model::event::{NewEvent, Provenance};
    const WORDS: [&str; 16] = [
        "build", "the", "failing", "test", "report", "cargo", "branch", "merge", "look", "at",
        "why", "patch", "error", "fixed", "again", "queue",
    ];
    const KINDS: [&str; 4] = ["note", "tick", "turn_started", "turn_finished"];
    let store = super::Store::open(path, super::StoreOptions::default())?;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut text = move |n: u64| {
        let mut t = format!("event {n}:");
        for _ in 0..(8 + n % 40) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t.push(' ');
            t.push_str(WORDS[(x % 16) as usize]);
        }
        t
    };
    for batch in 0..events.div_ceil(10) {
        let texts: Vec<String> = (batch * 10..(batch * 10 + 10).min(events))
            .map(&mut text)
            .collect();
        store
            .write(move |tx| {
                for a in 0..agents {
                    let agent = format!("agent-{a}");
                    if batch == 0 {
                        let record = crate::model::agent::AgentRecord::new(
                            &agent,
                            "2026-11-29T00:00:00.000Z".into(),
                        );
                        tx.put_agent(&agent, &record)?;
                    }
                    for (i, t) in texts.iter().enumerate() {
                        tx.append_event(NewEvent {
                            agent_id: agent.clone(),
                            kind: KINDS[i % 4],
                            provenance: Provenance::default(),
                            payload: serde_json::json!({ "text": t }),
                        })?;
                    }
                    let id = format!("tool_{batch:07}");
                    let record = serde_json::json!({
                        "id": id, "call_id": format!("call_{batch}"), "run_id": "run_1",
                        "tool_name": "ExecCommand", "result": texts[0], "is_error": false,
                    });
                    tx.put(Keyed::ToolExecutions, &agent, &id, &record)?;
                }
                Ok(())
            })
            .await?;
    }
    store.close().await
}

#[path = "salvage_pages.rs"]
mod pages;

#[cfg(test)]
#[path = "salvage_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "salvage_damage_tests.rs"]
mod damage_tests;
