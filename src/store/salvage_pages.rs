//! Salvage's second source: the rows the page scan (`scan`) found, written
//! into the tables the tree did not give whole. A row the tree gave stays;
//! of the copies found on pages the newest is taken; only keys in the
//! tree's gap are (an old copy of a deleted row must not come back); an
//! event row a block holds, or one below where retention left a ledger,
//! is not.

use super::*;

/// The tables a page scan can fill: every table but the membership
/// indexes and the dequeue order, which are rebuilt from the records.
fn scannable(table: &str) -> bool {
    matches!(
        table,
        "meta" | "agents" | "events" | "event_blocks" | "event_kinds" | "counters"
    ) || Keyed::ALL.iter().any(|k| k.name() == table)
}

/// Fill each table the tree did not give whole (every table, with
/// `no_tree`) from the rows found on the file's pages: a row the tree gave stays as it is; of the copies of a
/// row found on pages, the newest is taken.
pub(super) fn fill_from_pages(
    broken: &Path,
    dst: &redb::Database,
    tables: &mut Vec<TableSalvage>,
    no_tree: bool,
    classify: &Classify,
) -> Result<(), StoreError> {
    let mut wanted: Vec<String> = tables
        .iter()
        .filter(|t| (no_tree || !t.complete()) && scannable(&t.table))
        .map(|t| t.table.clone())
        .collect();
    // The ledger is one sequence in two tables: a row is an old copy of
    // an event a block now holds, or the only copy left of it.
    if wanted.iter().any(|t| t == "events" || t == "event_blocks") {
        wanted.extend(["events".to_owned(), "event_blocks".to_owned()]);
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let file = std::fs::read(broken).map_err(|source| StoreError::Io {
        path: broken.to_path_buf(),
        source,
    })?;
    let mut found = scan::scan(&file, &|t| wanted.iter().any(|w| w == t), classify);
    drop(file);
    // Counters first (what pruning removed is not brought back), blocks
    // before rows (a row a block holds is an old copy).
    let order = ["counters", "meta", "agents", "event_blocks", "event_kinds"];
    let mut names: Vec<&'static str> = found.keys().copied().collect();
    names.sort_by_key(|n| match order.iter().position(|o| o == n) {
        Some(i) => i,
        None if *n == "events" => order.len() + 1,
        None => order.len(),
    });
    for name in names {
        let rows = found.remove(name).unwrap_or_default();
        let Some(shape) = shape_of(name) else {
            continue;
        };
        let gap = match no_tree {
            true => (None, None),
            false => tables
                .iter()
                .find(|t| t.table == name)
                .map(|t| t.gap.clone())
                .unwrap_or_default(),
        };
        let added = fill_table(dst, name, shape, gap, rows.into_values())
            .map_err(|e| StoreError::Storage(format!("writing {name}: {e}")))?;
        match tables.iter_mut().find(|t| t.table == name) {
            Some(t) => {
                t.rows += added;
                t.scanned += added;
            }
            None => tables.push(TableSalvage {
                rows: added,
                scanned: added,
                ..TableSalvage::new(name)
            }),
        }
    }
    Ok(())
}

/// Write the rows found on pages for one table that it does not hold yet;
/// the count written.
// `V` is `()` for the index tables: its value is a unit.
#[allow(clippy::unit_arg)]
fn fill_table(
    dst: &redb::Database,
    name: &str,
    shape: Shape,
    (after, before): (Option<Vec<u8>>, Option<Vec<u8>>),
    rows: impl Iterator<Item = scan::Found>,
) -> Result<u64, String> {
    use redb::{ReadableTable as _, Value as _};
    let keep = Keep::read(dst, name).map_err(|e| e.to_string())?;
    with_shape!(shape, |K, V| {
        let mut txn = dst.begin_write().map_err(|e| e.to_string())?;
        txn.set_durability(redb::Durability::None)
            .map_err(|e| e.to_string())?;
        let mut added = 0;
        {
            let mut out = txn
                .open_table(redb::TableDefinition::<K, V>::new(name))
                .map_err(|e| e.to_string())?;
            for row in rows {
                // Only where the tree's two passes did not reach.
                let inside = after
                    .as_deref()
                    .is_none_or(|a| <K as redb::Key>::compare(&row.key, a).is_gt())
                    && before
                        .as_deref()
                        .is_none_or(|b| <K as redb::Key>::compare(&row.key, b).is_lt());
                if !inside {
                    continue;
                }
                let held = out
                    .get(K::from_bytes(&row.key))
                    .map_err(|e| e.to_string())?
                    .is_some();
                if held || !keep.keeps(name, &row.key) {
                    continue;
                }
                out.insert(K::from_bytes(&row.key), V::from_bytes(&row.value))
                    .map_err(|e| e.to_string())?;
                added += 1;
            }
        }
        txn.commit().map_err(|e| e.to_string())?;
        Ok(added)
    })
}

/// Which ledger rows found on pages the new store takes: none of an
/// agent's events below where pruning left its ledger, and no row of an
/// event a block holds.
struct Keep {
    pruned_before: std::collections::HashMap<String, u64>,
    /// Per agent, the spans of `event_seq`s the blocks in the new store
    /// hold (only read for `events`).
    blocked: std::collections::HashMap<String, Vec<(u64, u64)>>,
}

impl Keep {
    fn read(dst: &redb::Database, table: &str) -> Result<Keep, redb::Error> {
        use redb::{ReadableDatabase as _, ReadableTable as _};
        let mut keep = Keep {
            pruned_before: Default::default(),
            blocked: Default::default(),
        };
        if table != "events" && table != "event_blocks" {
            return Ok(keep);
        }
        let txn = dst.begin_read()?;
        match txn.open_table(crate::store::schema::COUNTERS) {
            Ok(counters) => {
                for row in counters.iter()? {
                    let (k, v) = row?;
                    let (agent, name) = k.value();
                    if name == crate::store::prune::PRUNED_BEFORE {
                        keep.pruned_before.insert(agent.to_owned(), v.value());
                    }
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
        if table == "events" {
            match txn.open_table(crate::store::schema::EVENT_BLOCKS) {
                Ok(blocks) => {
                    for row in blocks.iter()? {
                        let (k, v) = row?;
                        let (agent, last) = k.value();
                        if let Ok(block) =
                            crate::store::ledger::Block::decode(agent, last, v.value())
                        {
                            keep.blocked
                                .entry(agent.to_owned())
                                .or_default()
                                .push((block.first_seq(), last));
                        }
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(keep)
    }

    fn keeps(&self, table: &str, key: &[u8]) -> bool {
        if table != "events" && table != "event_blocks" {
            return true;
        }
        let Some((agent, seq)) = scan::ledger_key(key) else {
            return false;
        };
        if seq < self.pruned_before.get(agent).copied().unwrap_or(0) {
            return false;
        }
        let blocked = self
            .blocked
            .get(agent)
            .map(Vec::as_slice)
            .unwrap_or_default();
        table == "event_blocks" || !blocked.iter().any(|&(from, to)| (from..=to).contains(&seq))
    }
}
