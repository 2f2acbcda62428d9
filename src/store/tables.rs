//! Table access shared by write and read transactions: decoding JSON
//! records, ranged scans by agent, event paging. Generic over redb's
//! `ReadableTable` so the writer and readers use the same code.

use redb::ReadableTable;
use serde::de::DeserializeOwned;

use super::codec;
use super::kind_index;
use super::ledger::{self, LedgerTable};
use super::schema::Keyed;
use super::StoreError;
use crate::model::event::EventRecord;

pub(crate) fn decode<T: DeserializeOwned>(
    table: &'static str,
    key: impl FnOnce() -> String,
    bytes: &[u8],
) -> Result<T, StoreError> {
    codec::unpack(bytes)
        .and_then(|json| serde_json::from_slice(&json).map_err(|e| e.to_string()))
        .map_err(|detail| StoreError::Decode {
            table,
            key: key(),
            detail,
        })
}

pub(crate) fn get_keyed<T: DeserializeOwned>(
    table: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    which: Keyed,
    agent_id: &str,
    id: &str,
) -> Result<Option<T>, StoreError> {
    match table.get((agent_id, id))? {
        Some(v) => decode(which.name(), || format!("{agent_id}/{id}"), v.value()).map(Some),
        None => Ok(None),
    }
}

/// All records of one agent in key order (time order for `new_id` keys).
pub(crate) fn list_keyed<T: DeserializeOwned>(
    table: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    which: Keyed,
    agent_id: &str,
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::new();
    // "" sorts before every id, and "\u{10FFFF}" after every id we mint.
    for row in table.range((agent_id, "")..=(agent_id, "\u{10FFFF}"))? {
        let (k, v) = row?;
        let key = k.value();
        out.push(decode(
            which.name(),
            || format!("{}/{}", key.0, key.1),
            v.value(),
        )?);
    }
    Ok(out)
}

pub(crate) fn count_keyed(
    table: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    agent_id: &str,
) -> Result<u64, StoreError> {
    let mut n = 0;
    for row in table.range((agent_id, "")..=(agent_id, "\u{10FFFF}"))? {
        row?;
        n += 1;
    }
    Ok(n)
}

fn decode_event(agent_id: &str, seq: u64, json: &[u8]) -> Result<EventRecord, StoreError> {
    serde_json::from_slice(json).map_err(|e| StoreError::Decode {
        table: "events",
        key: format!("{agent_id}/{seq}"),
        detail: e.to_string(),
    })
}

pub(crate) fn last_seq(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
) -> Result<u64, StoreError> {
    ledger::last_seq(rows, blocks, agent_id)
}

pub(crate) fn events_page(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<EventRecord>, StoreError> {
    let mut out = Vec::with_capacity(limit.min(4096));
    if limit == 0 {
        return Ok(out);
    }
    ledger::scan_from(rows, blocks, agent_id, from_seq, |seq, json| {
        out.push(decode_event(agent_id, seq, json)?);
        Ok(out.len() < limit)
    })?;
    Ok(out)
}

/// As `events_page`, the stored JSON of each event as it is (no decode):
/// what a page sent over the wire needs, spliced in unchanged.
pub(crate) fn events_page_raw(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
    let mut out = Vec::with_capacity(limit.min(4096));
    if limit == 0 {
        return Ok(out);
    }
    ledger::scan_from(rows, blocks, agent_id, from_seq, |seq, json| {
        out.push((seq, json.to_vec()));
        Ok(out.len() < limit)
    })?;
    Ok(out)
}

/// The newest `limit` events with `event_seq < before_seq`, oldest first.
pub(crate) fn events_page_before(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    before_seq: u64,
    limit: usize,
) -> Result<Vec<EventRecord>, StoreError> {
    let mut out = Vec::with_capacity(limit.min(4096));
    if limit == 0 {
        return Ok(out);
    }
    ledger::scan_back(rows, blocks, agent_id, before_seq, |seq, json| {
        out.push(decode_event(agent_id, seq, json)?);
        Ok(out.len() < limit)
    })?;
    out.reverse();
    Ok(out)
}

/// The events at these `event_seq`s (`None` where the agent has none),
/// one lookup each; neighbours in one block decompress it once.
pub(crate) fn events_at(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    seqs: &[u64],
) -> Result<Vec<Option<EventRecord>>, StoreError> {
    let mut lookup = ledger::Lookup::new(rows, blocks, agent_id);
    seqs.iter()
        .map(|&seq| match lookup.get(seq)? {
            Some(json) => decode_event(agent_id, seq, &json).map(Some),
            None => Ok(None),
        })
        .collect()
}

pub(crate) fn events_by_kind_page(
    index: &impl ReadableTable<(&'static str, &'static str, u64), &'static [u8]>,
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    kind: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<EventRecord>, StoreError> {
    let mut out = Vec::with_capacity(limit.min(4096));
    if limit == 0 {
        return Ok(out);
    }
    let mut lookup = ledger::Lookup::new(rows, blocks, agent_id);
    kind_index::scan_from(index, agent_id, kind, from_seq, |seq| {
        if let Some(json) = lookup.get(seq)? {
            out.push(decode_event(agent_id, seq, &json)?);
        }
        Ok(out.len() < limit)
    })?;
    Ok(out)
}

/// The newest `limit` events of one kind, oldest first.
pub(crate) fn events_by_kind_latest(
    index: &impl ReadableTable<(&'static str, &'static str, u64), &'static [u8]>,
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    kind: &str,
    limit: usize,
) -> Result<Vec<EventRecord>, StoreError> {
    let mut out = Vec::with_capacity(limit.min(4096));
    if limit == 0 {
        return Ok(out);
    }
    let mut lookup = ledger::Lookup::new(rows, blocks, agent_id);
    kind_index::scan_back(index, agent_id, kind, |seq| {
        if let Some(json) = lookup.get(seq)? {
            out.push(decode_event(agent_id, seq, &json)?);
        }
        Ok(out.len() < limit)
    })?;
    out.reverse();
    Ok(out)
}

pub(crate) fn queue_pending(
    table: &impl ReadableTable<(&'static str, u8, u64), &'static str>,
    agent_id: &str,
) -> Result<Vec<(u8, u64, String)>, StoreError> {
    let mut out = Vec::new();
    for row in table.range((agent_id, 0u8, 0u64)..=(agent_id, u8::MAX, u64::MAX))? {
        let (k, v) = row?;
        let (_, band, seq) = k.value();
        out.push((band, seq, v.value().to_owned()));
    }
    Ok(out)
}

pub(crate) fn index_list(
    table: &impl ReadableTable<(&'static str, &'static str), ()>,
    agent_id: &str,
) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for row in table.range((agent_id, "")..=(agent_id, "\u{10FFFF}"))? {
        out.push(row?.0.value().1.to_owned());
    }
    Ok(out)
}

/// The newest `limit` records of one agent, oldest first.
/// The newest `limit` records with ids after `after` (all when `None`),
/// oldest first, and whether older ones after `after` were left out.
pub(crate) fn list_keyed_recent_after<T: DeserializeOwned>(
    table: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    which: Keyed,
    agent_id: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<T>, bool), StoreError> {
    use std::ops::Bound;
    let lower = match after {
        Some(a) => Bound::Excluded((agent_id, a)),
        None => Bound::Included((agent_id, "")),
    };
    let mut range =
        table.range::<(&str, &str)>((lower, Bound::Included((agent_id, "\u{10FFFF}"))))?;
    let mut out = Vec::with_capacity(limit.min(1024));
    while out.len() < limit {
        let Some(row) = range.next_back() else {
            out.reverse();
            return Ok((out, false));
        };
        let (k, v) = row?;
        let key = k.value();
        out.push(decode(
            which.name(),
            || format!("{}/{}", key.0, key.1),
            v.value(),
        )?);
    }
    let more = range.next_back().is_some();
    out.reverse();
    Ok((out, more))
}

pub(crate) fn list_keyed_recent<T: DeserializeOwned>(
    table: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    which: Keyed,
    agent_id: &str,
    limit: usize,
) -> Result<Vec<T>, StoreError> {
    list_keyed_recent_after(table, which, agent_id, None, limit).map(|(rows, _)| rows)
}
