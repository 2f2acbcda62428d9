//! `event_kinds`: which of an agent's events are of each kind, for paging
//! by kind without reading the ledger.
//!
//! Keyed (agent id, kind, chunk) where a chunk spans 1,024 consecutive
//! `event_seq`s; the value lists the chunk's events of that kind as u16
//! offsets (little endian, ascending). An event costs two bytes here,
//! where a key per event (agent, kind name, seq) cost about forty, and
//! the half-empty leaves redb leaves behind a table that only grows at its
//! end (see `ledger`) hold chunks rewritten in place instead of one more
//! key per event.

use redb::{ReadableTable, Table};

use super::StoreError;

const CHUNK_BITS: u32 = 10;
const CHUNK: u64 = 1 << CHUNK_BITS;

pub(crate) type KindTable<'t> = Table<'t, (&'static str, &'static str, u64), &'static [u8]>;

/// Record that event `seq` of `agent_id` is of `kind`.
pub(crate) fn insert(
    table: &mut KindTable<'_>,
    agent_id: &str,
    kind: &str,
    seq: u64,
) -> Result<(), StoreError> {
    let chunk = seq >> CHUNK_BITS;
    let offset = (seq & (CHUNK - 1)) as u16;
    let mut value = match table.get((agent_id, kind, chunk))? {
        Some(v) => v.value().to_vec(),
        None => Vec::with_capacity(2),
    };
    let last = value
        .len()
        .checked_sub(2)
        .map(|at| u16::from_le_bytes([value[at], value[at + 1]]));
    match last {
        // Events are appended in `event_seq` order: the usual case.
        None => value.extend_from_slice(&offset.to_le_bytes()),
        Some(last) if last < offset => value.extend_from_slice(&offset.to_le_bytes()),
        Some(_) => {
            let mut offsets: Vec<u16> = value
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect();
            if let Err(at) = offsets.binary_search(&offset) {
                offsets.insert(at, offset);
                value = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
            }
        }
    }
    table.insert((agent_id, kind, chunk), value.as_slice())?;
    Ok(())
}

/// The `event_seq`s one stored chunk lists, ascending.
fn chunk_seqs(
    agent_id: &str,
    kind: &str,
    chunk: u64,
    bytes: &[u8],
) -> Result<Vec<u64>, StoreError> {
    if !bytes.len().is_multiple_of(2) || bytes.len() as u64 > 2 * CHUNK {
        return Err(StoreError::Decode {
            table: "event_kinds",
            key: format!("{agent_id}/{kind}/{chunk}"),
            detail: format!("a chunk of {} bytes is not a list of offsets", bytes.len()),
        });
    }
    Ok(bytes
        .chunks_exact(2)
        .map(|b| (chunk << CHUNK_BITS) + u64::from(u16::from_le_bytes([b[0], b[1]])))
        .collect())
}

/// Forget the agent's events of `kind` below `keep_from` (a ledger cut):
/// chunks wholly below it are removed, the one it falls in rewritten.
pub(crate) fn remove_below(
    table: &mut KindTable<'_>,
    agent_id: &str,
    kind: &str,
    keep_from: u64,
) -> Result<(), StoreError> {
    let boundary = keep_from >> CHUNK_BITS;
    let mut below = Vec::new();
    for row in table.range((agent_id, kind, 0)..(agent_id, kind, boundary))? {
        below.push(row?.0.value().2);
    }
    for chunk in below {
        table.remove((agent_id, kind, chunk))?;
    }
    let kept = match table.get((agent_id, kind, boundary))? {
        Some(v) => {
            let seqs = chunk_seqs(agent_id, kind, boundary, v.value())?;
            let kept: Vec<u8> = seqs
                .iter()
                .filter(|seq| **seq >= keep_from)
                .flat_map(|seq| ((seq & (CHUNK - 1)) as u16).to_le_bytes())
                .collect();
            (kept.len() != v.value().len()).then_some(kept)
        }
        None => None,
    };
    match kept {
        Some(kept) if kept.is_empty() => {
            table.remove((agent_id, kind, boundary))?;
        }
        Some(kept) => {
            table.insert((agent_id, kind, boundary), kept.as_slice())?;
        }
        None => {}
    }
    Ok(())
}

/// Visit the agent's events of `kind` with `event_seq >= from_seq`,
/// oldest first, until `visit` returns `false`.
pub(crate) fn scan_from(
    table: &impl ReadableTable<(&'static str, &'static str, u64), &'static [u8]>,
    agent_id: &str,
    kind: &str,
    from_seq: u64,
    mut visit: impl FnMut(u64) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let first = from_seq >> CHUNK_BITS;
    for row in table.range((agent_id, kind, first)..=(agent_id, kind, u64::MAX))? {
        let (k, v) = row?;
        for seq in chunk_seqs(agent_id, kind, k.value().2, v.value())? {
            if seq >= from_seq && !visit(seq)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Visit the agent's events of `kind`, newest first, until `visit`
/// returns `false`.
pub(crate) fn scan_back(
    table: &impl ReadableTable<(&'static str, &'static str, u64), &'static [u8]>,
    agent_id: &str,
    kind: &str,
    mut visit: impl FnMut(u64) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut rows = table.range((agent_id, kind, 0)..=(agent_id, kind, u64::MAX))?;
    while let Some(row) = rows.next_back() {
        let (k, v) = row?;
        for seq in chunk_seqs(agent_id, kind, k.value().2, v.value())?
            .into_iter()
            .rev()
        {
            if !visit(seq)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Rebuild the index from a store's per-event index (schema 2 and older:
/// a key per event), which is then dropped.
pub(crate) fn migrate_from_rows(
    old: &impl ReadableTable<(&'static str, &'static str, u64), ()>,
    table: &mut KindTable<'_>,
) -> Result<u64, StoreError> {
    let mut moved = 0u64;
    // Rows come in key order: one chunk at a time, written once.
    let mut pending: Option<((String, String, u64), Vec<u8>)> = None;
    let flush = |table: &mut KindTable<'_>,
                 done: Option<((String, String, u64), Vec<u8>)>|
     -> Result<(), StoreError> {
        if let Some(((agent, kind, chunk), value)) = done {
            table.insert((agent.as_str(), kind.as_str(), chunk), value.as_slice())?;
        }
        Ok(())
    };
    for row in old.iter()? {
        let (k, _) = row?;
        let (agent, kind, seq) = k.value();
        let key = (agent.to_owned(), kind.to_owned(), seq >> CHUNK_BITS);
        let offset = ((seq & (CHUNK - 1)) as u16).to_le_bytes();
        match &mut pending {
            Some((at, value)) if *at == key => value.extend_from_slice(&offset),
            _ => {
                let done = pending.replace((key, offset.to_vec()));
                flush(table, done)?;
            }
        }
        moved += 1;
    }
    flush(table, pending)?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::{EVENTS_BY_KIND, EVENT_KINDS};
    use redb::ReadableDatabase;

    fn db() -> (tempfile::TempDir, redb::Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("k.redb")).unwrap();
        (dir, db)
    }

    fn collect(db: &redb::Database, kind: &str, from: u64) -> (Vec<u64>, Vec<u64>) {
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(EVENT_KINDS).unwrap();
        let mut forward = Vec::new();
        scan_from(&t, "a", kind, from, |s| {
            forward.push(s);
            Ok(true)
        })
        .unwrap();
        let mut back = Vec::new();
        scan_back(&t, "a", kind, |s| {
            back.push(s);
            Ok(back.len() < 3)
        })
        .unwrap();
        (forward, back)
    }

    #[test]
    fn seqs_across_chunks_read_back_in_order_either_way() {
        let (_dir, db) = db();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(EVENT_KINDS).unwrap();
            for seq in (1..=5000u64).filter(|s| s % 7 == 0) {
                insert(&mut t, "a", "tick", seq).unwrap();
                insert(&mut t, "b", "tick", seq + 1).unwrap();
            }
            // Out of order and repeated: kept sorted, once.
            for seq in [1023u64, 1024, 1, 1024] {
                insert(&mut t, "a", "note", seq).unwrap();
            }
        }
        txn.commit().unwrap();
        let sevens: Vec<u64> = (1..=5000u64).filter(|s| s % 7 == 0).collect();
        let (forward, back) = collect(&db, "tick", 1);
        assert_eq!(forward, sevens);
        assert_eq!(back, vec![4998, 4991, 4984]);
        let (forward, _) = collect(&db, "tick", 2050);
        assert_eq!(forward.first(), Some(&2051));
        let (forward, back) = collect(&db, "note", 0);
        assert_eq!(forward, vec![1, 1023, 1024]);
        assert_eq!(back, vec![1024, 1023, 1]);
        assert_eq!(collect(&db, "none", 0), (vec![], vec![]));
    }

    #[test]
    fn a_corrupt_chunk_is_a_clear_error_naming_it() {
        let (_dir, db) = db();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(EVENT_KINDS).unwrap();
            t.insert(("a", "tick", 3), [1u8, 0, 7].as_slice()).unwrap();
        }
        txn.commit().unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(EVENT_KINDS).unwrap();
        match scan_from(&t, "a", "tick", 0, |_| Ok(true)) {
            Err(e) => assert!(
                e.to_string().contains("event_kinds") && e.to_string().contains("a/tick/3"),
                "{e}"
            ),
            Ok(()) => panic!("read a corrupt chunk"),
        }
    }

    #[test]
    fn the_per_event_index_of_older_stores_becomes_chunks() {
        let (_dir, db) = db();
        let txn = db.begin_write().unwrap();
        {
            let mut old = txn.open_table(EVENTS_BY_KIND).unwrap();
            for seq in 1..=3000u64 {
                let kind = if seq % 3 == 0 { "tick" } else { "note" };
                old.insert(("a", kind, seq), ()).unwrap();
            }
            old.insert(("b", "tick", 5), ()).unwrap();
            let mut t = txn.open_table(EVENT_KINDS).unwrap();
            assert_eq!(migrate_from_rows(&old, &mut t).unwrap_or(0), 3001);
        }
        txn.commit().unwrap();
        let (forward, back) = collect(&db, "tick", 1);
        assert_eq!(forward, (1..=1000u64).map(|n| n * 3).collect::<Vec<_>>());
        assert_eq!(back, vec![3000, 2997, 2994]);
        let (forward, _) = collect(&db, "note", 2999);
        assert_eq!(forward, vec![2999]);
    }
}
