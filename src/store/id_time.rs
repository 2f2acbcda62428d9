//! The latest time an id carries, kept in the store (`meta` row
//! `id_time`), so a process that opens it mints ids that sort after every
//! one kept, whatever its clock says (see `crate::new_id`).

use std::path::Path;

use redb::{ReadableTable, Table, WriteTransaction};

use super::schema::{self, Keyed};
use super::StoreError;

/// The `meta` row (epoch ms, 8 bytes little-endian).
const KEY: &str = "id_time";

/// Records whose keys are time-ordered ids: the newest of each agent's
/// tells the newest time an id of a store carries.
const ID_KEYED: [Keyed; 4] = [
    Keyed::Transcript,
    Keyed::QueueEntries,
    Keyed::ContextEpisodes,
    Keyed::ToolExecutions,
];

fn value_of(bytes: &[u8]) -> u64 {
    <[u8; 8]>::try_from(bytes).map_or(0, u64::from_le_bytes)
}

/// The time (epoch ms) a `prefix_<UUIDv7 hex>` id carries; 0 for an id
/// of another shape.
pub(super) fn id_ms(id: &str) -> u64 {
    id.rsplit_once('_')
        .map(|(_, hex)| hex)
        .filter(|hex| hex.len() == 32)
        .and_then(|hex| u64::from_str_radix(&hex[..12], 16).ok())
        .unwrap_or(0)
}

/// Keep the latest time an id of this process carries, when it is later
/// than the kept one. Exact, not reserved ahead: a reservation would push
/// the ids of every reopen (a test suite's, a quick restart's) ahead of
/// the clock, where retention's cutoffs compare them with times.
pub(super) fn keep(meta: &mut Table<'_, &'static str, &'static [u8]>) -> Result<(), StoreError> {
    let minted = crate::id_time();
    let kept = meta.get(KEY)?.map_or(0, |v| value_of(v.value()));
    if minted > kept {
        meta.insert(KEY, minted.to_le_bytes().as_slice())?;
    }
    Ok(())
}

/// At open: ids minted from now on sort after every one this store kept,
/// a millisecond on (ids of one millisecond are ordered only within the
/// process that minted them). A store that kept no row (written before
/// it was kept) is read for its newest id once, and the row written.
pub(super) fn raise_at_open(
    txn: &WriteTransaction,
    meta: &mut Table<'_, &'static str, &'static [u8]>,
    path: &Path,
) -> Result<(), StoreError> {
    let kept = meta.get(KEY)?.map(|v| value_of(v.value()));
    let kept = match kept {
        Some(kept) => kept,
        None => {
            let newest = newest_id_time(txn)?;
            if newest > 0 {
                meta.insert(KEY, newest.to_le_bytes().as_slice())?;
            }
            newest
        }
    };
    let now = u64::try_from(crate::now_ms()).unwrap_or(0);
    if kept > now.saturating_add(60_000) {
        tracing::warn!(
            path = %path.display(),
            kept = %crate::format_ts(i64::try_from(kept).unwrap_or(i64::MAX)),
            "the store holds ids minted ahead of this clock (it was ahead then, or is behind now); new ids follow them, to keep their order"
        );
    }
    if kept > 0 {
        crate::raise_id_time(kept.saturating_add(1));
    }
    Ok(())
}

/// The newest time an id of the store carries: the newest key of each
/// agent's id-ordered records.
pub(super) fn newest_id_time(txn: &WriteTransaction) -> Result<u64, StoreError> {
    let agents: Vec<String> = {
        let table = txn.open_table(schema::AGENTS)?;
        let mut ids = Vec::new();
        for row in table.iter()? {
            ids.push(row?.0.value().to_owned());
        }
        ids
    };
    let mut newest = 0;
    for which in ID_KEYED {
        let table = txn.open_table(which.definition())?;
        for agent in &agents {
            let last = table
                .range((agent.as_str(), "")..(agent.as_str(), "\u{10FFFF}"))?
                .next_back();
            if let Some(row) = last {
                newest = newest.max(id_ms(row?.0.value().1));
            }
        }
    }
    Ok(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ids_time_is_its_first_twelve_hex_digits() {
        assert_eq!(id_ms("tr_0193abcdef0178a2b3c4d5e6f708192a"), 0x0193abcdef01);
        assert_eq!(
            id_ms("msg_01a2184560bc7364ac944abbf49b03f9"),
            0x01a2184560bc
        );
        assert_eq!(id_ms("work_1"), 0);
        assert_eq!(id_ms("tr_not-hex-at-all-but-32-chars-long"), 0);
    }

    #[tokio::test]
    async fn a_store_without_the_row_gets_it_from_its_newest_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        // An hour ago: raising the process's floor there changes nothing
        // for other tests.
        let ms = u64::try_from(crate::now_ms()).unwrap() - 3_600_000;
        let newest = format!("tr_{ms:012x}70008000000000000000");
        {
            let store = super::super::Store::open(&path, Default::default()).unwrap();
            let (a, b) = (
                newest.clone(),
                format!("tr_{:012x}70008000000000000000", ms - 5),
            );
            store
                .write(move |tx| {
                    tx.put_agent("a", &serde_json::json!({ "id": "a" }))?;
                    tx.put(Keyed::Transcript, "a", &a, &serde_json::json!({}))?;
                    tx.put(Keyed::Transcript, "a", &b, &serde_json::json!({}))
                })
                .await
                .unwrap();
            store.close().await.unwrap();
        }
        // As a store from before the row: it is gone.
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(schema::META).unwrap().remove(KEY).unwrap();
        assert_eq!(newest_id_time(&txn).unwrap(), ms);
        txn.commit().unwrap();
        drop(db);
        let store = super::super::Store::open(&path, Default::default()).unwrap();
        store.close().await.unwrap();
        let db = redb::Database::open(&path).unwrap();
        let rx = redb::ReadableDatabase::begin_read(&db).unwrap();
        let meta = rx.open_table(schema::META).unwrap();
        let kept = meta.get(KEY).unwrap().map(|v| value_of(v.value()));
        assert_eq!(kept, Some(ms), "the row, from the newest id, at open");
    }
}
