//! Reading a store file page by page, without its tree: what salvage falls
//! back on where the tree cannot lead (a damaged header, a damaged branch
//! page, a file cut short).
//!
//! The engine keeps every row in a B-tree leaf page whose layout describes
//! itself: a type byte (1 for a leaf), the number of entries, the end of
//! each key and of each value (no value ends for a table whose values have
//! a fixed width), then the keys' bytes and the values' bytes. So every
//! page-aligned offset of the file is tried as a leaf, and each entry
//! whose key decodes as one of the store's key types and whose value is
//! what Holon writes in that table becomes a candidate row:
//!
//! - `events` and `event_blocks`, keyed (agent, seq): an event's JSON whose
//!   `event_seq` and `agent_id` are the key's, or a block that decodes and
//!   ends at the key's seq;
//! - `event_kinds`, keyed (agent, kind, chunk): a list of ascending offsets;
//! - `counters`, keyed (agent, name), 8-byte values;
//! - `agents`, keyed by id: a record whose `id` is the key; `meta`: the keys
//!   Holon writes there;
//! - the keyed record tables, keyed (agent, id): a record the caller's
//!   classifier places (the store does not know the runtime's types).
//!
//! The membership indexes and the dequeue order are not scanned: their
//! rows are keys alone, alike in every index, and salvage rebuilds them
//! from the records.
//!
//! The same row may be found more than once: a page the engine copied on
//! write stays on disk until it is reused. Each candidate carries what
//! orders its copies (`Fresh`); salvage keeps the newest.

use std::collections::BTreeMap;

use super::codec;
use super::ledger::Block;
use super::schema::Keyed;

/// The engine's page size unless the file's header names another, and
/// the step of the scan.
pub(crate) const PAGE: usize = 4096;

const LEAF: u8 = 1;

/// Places a record of the keyed tables by its content: (agent id, record
/// id, the record's JSON) to its table, or `None` when it is no record
/// Holon writes.
pub type Classify = dyn Fn(&str, &str, &[u8]) -> Option<Keyed> + Sync;

/// Orders copies of one row: the larger is the newer. A counter only
/// grows, a record's `revision` and `updated_at` only advance, a kind
/// chunk only gains offsets; past those, the copy found later in the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Fresh {
    rank: u64,
    updated: String,
    offset: u64,
}

/// One row found on a page.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub fresh: Fresh,
}

/// Per table, per key (as the engine encodes it), the newest copy found.
pub(crate) type Rows = BTreeMap<&'static str, BTreeMap<Vec<u8>, Found>>;

/// The page size the file's header names, when the header is readable and
/// names a plausible one.
pub(crate) fn page_size(file: &[u8]) -> usize {
    const MAGIC: &[u8] = b"redb\x1A\x0A\xA9\x0D\x0A";
    let named = file
        .get(12..16)
        .filter(|_| file.starts_with(MAGIC))
        .and_then(|b| Some(u32::from_le_bytes(b.try_into().ok()?) as usize));
    match named {
        Some(p) if p.is_power_of_two() && (512..=PAGE * 16).contains(&p) => p,
        _ => PAGE,
    }
}

/// Every row of the tables in `wanted` found on a page of `file`, the
/// newest copy of each.
pub(crate) fn scan(file: &[u8], wanted: &dyn Fn(&str) -> bool, classify: &Classify) -> Rows {
    let step = page_size(file);
    let mut rows = Rows::new();
    let mut at = step; // page 0 is the header
    while at < file.len() {
        let page = &file[at..];
        let mut span = 0;
        for fixed_value in [None, Some(8)] {
            let Some((entries, used)) = leaf(page, fixed_value) else {
                continue;
            };
            let (mut placed, total) = (0, entries.len());
            for (key, value) in entries {
                let Some((table, rank, updated)) = place(key, value, fixed_value, classify) else {
                    continue;
                };
                placed += 1;
                if !wanted(table) {
                    continue;
                }
                let fresh = Fresh {
                    rank,
                    updated,
                    offset: at as u64,
                };
                let slot = rows.entry(table).or_default();
                match slot.get(key) {
                    Some(had) if had.fresh >= fresh => {}
                    _ => {
                        slot.insert(
                            key.to_vec(),
                            Found {
                                key: key.to_vec(),
                                value: value.to_vec(),
                                fresh,
                            },
                        );
                    }
                }
            }
            if placed > 0 {
                // Whole, a leaf larger than a page lies on a larger page,
                // whose bytes are not tried as pages of their own; a leaf
                // only partly placed may be an old copy whose later pages
                // were reused, so those are still tried.
                if placed == total {
                    span = used;
                }
                break;
            }
        }
        at += span.div_ceil(step).max(1) * step;
    }
    rows
}

/// A leaf entry: its key's bytes and its value's.
type Entry<'a> = (&'a [u8], &'a [u8]);

/// The entries of the leaf at the start of `page` (which may run on to
/// the end of the file) when its structure holds, and the bytes it uses.
/// Keys are of variable width in every table Holon scans; values are when
/// `fixed_value` is `None`.
fn leaf(page: &[u8], fixed_value: Option<usize>) -> Option<(Vec<Entry<'_>>, usize)> {
    if page.len() < 4 || page[0] != LEAF {
        return None;
    }
    let n = u16::from_le_bytes([page[2], page[3]]) as usize;
    if n == 0 {
        return None;
    }
    let end_at = |at: usize| -> Option<usize> {
        let b = page.get(at..at + 4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?) as usize)
    };
    let ends = if fixed_value.is_some() { 4 * n } else { 8 * n };
    let mut start = 4 + ends;
    if start > page.len() {
        return None;
    }
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        let end = end_at(4 + 4 * i)?;
        if end <= start || end > page.len() {
            return None;
        }
        keys.push(&page[start..end]);
        start = end;
    }
    let mut entries = Vec::with_capacity(n);
    for (i, key) in keys.into_iter().enumerate() {
        let end = match fixed_value {
            Some(width) => start + width,
            None => end_at(4 + 4 * n + 4 * i)?,
        };
        if end < start || end > page.len() {
            return None;
        }
        entries.push((key, &page[start..end]));
        start = end;
    }
    Some((entries, start))
}

/// The table a leaf entry belongs to, with what orders its copies (a rank
/// and an update time), or `None` when it is no row Holon writes.
fn place(
    key: &[u8],
    value: &[u8],
    fixed_value: Option<usize>,
    classify: &Classify,
) -> Option<(&'static str, u64, String)> {
    if fixed_value == Some(8) {
        let (agent, name) = pair_key(key)?;
        // The counters Holon keeps, by name: a membership index's page
        // read with 8-byte values would otherwise pass for one.
        const COUNTERS: [&str; 5] = [
            "admission_seq",
            "turns",
            "wake_hint_generation",
            "events_sealed",
            "events_pruned_before",
        ];
        let plausible = !agent.is_empty() && COUNTERS.contains(&name);
        let count = u64::from_le_bytes(value.try_into().ok()?);
        return plausible.then_some(("counters", count, String::new()));
    }
    if let Some((agent, seq)) = ledger_key(key) {
        if let Some(placed) = ledger_entry(agent, seq, value) {
            return Some(placed);
        }
    }
    if let Some((_, kind, chunk)) = kind_key(key) {
        let plausible = !kind.is_empty()
            && chunk < u64::MAX >> 10
            && value.len().is_multiple_of(2)
            && (2..=2048).contains(&value.len())
            && value
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect::<Vec<_>>()
                .windows(2)
                .all(|w| w[0] < w[1] && w[1] < 1024);
        if plausible {
            return Some(("event_kinds", value.len() as u64, String::new()));
        }
    }
    if let Some((agent, id)) = pair_key(key) {
        if let Ok(json) = codec::unpack(value) {
            if let Some(which) = classify(agent, id, &json) {
                let (rank, updated) = freshness(&json);
                return Some((which.name(), rank, updated));
            }
        }
    }
    let name = std::str::from_utf8(key).ok()?;
    if let Some(rank) = meta_entry(name, value) {
        return Some(("meta", rank, String::new()));
    }
    let json = codec::unpack(value).ok()?;
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        id: std::borrow::Cow<'a, str>,
    }
    let record: Named<'_> = serde_json::from_slice(&json).ok()?;
    (record.id == name).then(|| {
        let (rank, updated) = freshness(&json);
        ("agents", rank, updated)
    })
}

/// An entry of `events` or `event_blocks`.
fn ledger_entry(agent: &str, seq: u64, value: &[u8]) -> Option<(&'static str, u64, String)> {
    if let Ok(block) = Block::decode(agent, seq, value) {
        // Its first and last events must be the key's agent's, at the
        // seqs the block spans. A block rewritten by pruning starts later
        // than its first copy.
        let ends = [block.first_seq(), block.last_seq()];
        let whole = ends
            .iter()
            .all(|&s| block.get(s).is_some_and(|json| is_event(json, agent, s)));
        return whole.then(|| ("event_blocks", block.first_seq(), String::new()));
    }
    let json = codec::unpack(value).ok()?;
    is_event(&json, agent, seq).then(|| ("events", 0, String::new()))
}

/// Whether `json` is event `seq` of `agent`.
fn is_event(json: &[u8], agent: &str, seq: u64) -> bool {
    #[derive(serde::Deserialize)]
    struct Event<'a> {
        event_seq: u64,
        #[serde(borrow)]
        agent_id: std::borrow::Cow<'a, str>,
    }
    serde_json::from_slice::<Event<'_>>(json)
        .is_ok_and(|e| e.event_seq == seq && e.agent_id == agent)
}

/// A row of `meta`: the keys Holon writes there, each with its value's
/// form. `id_time` only grows.
fn meta_entry(name: &str, value: &[u8]) -> Option<u64> {
    match name {
        // The newest schema is the one a copy was migrated to.
        "schema_version" => match value.len() {
            4 => Some(u64::from(u32::from_le_bytes(value.try_into().ok()?))),
            8 => Some(u64::from_le_bytes(value.try_into().ok()?)),
            _ => None,
        },
        "id_time" => Some(u64::from_le_bytes(value.try_into().ok()?)),
        "created_at" | "created_by" => std::str::from_utf8(value).ok().map(|_| 0),
        _ if name.starts_with("setting.") => codec::unpack(value)
            .ok()
            .and_then(|json| serde_json::from_slice::<serde::de::IgnoredAny>(&json).ok())
            .map(|_| 0),
        _ => None,
    }
}

/// A record's `revision` and `updated_at`, where it has them.
fn freshness(json: &[u8]) -> (u64, String) {
    #[derive(serde::Deserialize)]
    struct Fields {
        #[serde(default)]
        revision: Option<u64>,
        #[serde(default)]
        updated_at: Option<String>,
    }
    serde_json::from_slice::<Fields>(json)
        .map(|f| (f.revision.unwrap_or(0), f.updated_at.unwrap_or_default()))
        .unwrap_or_default()
}

/// A tuple's length prefix as the engine writes it: one byte below 254,
/// else 254 and a u16, or 255 and a u32 (little endian).
fn varint(b: &[u8]) -> Option<(usize, usize)> {
    match *b.first()? {
        n @ 0..=253 => Some((n as usize, 1)),
        254 => Some((
            u16::from_le_bytes(b.get(1..3)?.try_into().ok()?) as usize,
            3,
        )),
        255 => Some((
            u32::from_le_bytes(b.get(1..5)?.try_into().ok()?) as usize,
            5,
        )),
    }
}

/// `(&str, u64)`: the string's length, the string, the number.
pub(crate) fn ledger_key(b: &[u8]) -> Option<(&str, u64)> {
    let (len, at) = varint(b)?;
    let s = std::str::from_utf8(b.get(at..at.checked_add(len)?)?).ok()?;
    let rest = b.get(at + len..)?;
    Some((s, u64::from_le_bytes(rest.try_into().ok()?)))
}

/// `(&str, &str)`: the first string's length, both strings.
fn pair_key(b: &[u8]) -> Option<(&str, &str)> {
    let (len, at) = varint(b)?;
    let first = std::str::from_utf8(b.get(at..at.checked_add(len)?)?).ok()?;
    let second = std::str::from_utf8(b.get(at + len..)?).ok()?;
    Some((first, second))
}

/// `(&str, &str, u64)`: both strings' lengths, both strings, the number.
fn kind_key(b: &[u8]) -> Option<(&str, &str, u64)> {
    let (first_len, a) = varint(b)?;
    let (second_len, c) = varint(b.get(a..)?)?;
    let mut at = a + c;
    let first = std::str::from_utf8(b.get(at..at.checked_add(first_len)?)?).ok()?;
    at += first_len;
    let second = std::str::from_utf8(b.get(at..at.checked_add(second_len)?)?).ok()?;
    at += second_len;
    let rest = b.get(at..)?;
    Some((first, second, u64::from_le_bytes(rest.try_into().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_decode_as_the_engine_encodes_them() {
        use redb::Value as _;
        let ledger = <(&str, u64)>::as_bytes(&("agent", 42));
        assert_eq!(ledger_key(&ledger), Some(("agent", 42)));
        let pair = <(&str, &str)>::as_bytes(&("agent", "task_1"));
        assert_eq!(pair_key(&pair), Some(("agent", "task_1")));
        let kind = <(&str, &str, u64)>::as_bytes(&("agent", "tick", 7));
        assert_eq!(kind_key(&kind), Some(("agent", "tick", 7)));
        let long = "x".repeat(300);
        let pair = <(&str, &str)>::as_bytes(&(long.as_str(), "y"));
        assert_eq!(pair_key(&pair), Some((long.as_str(), "y")));
        // Bytes of another shape, or cut short, do not decode.
        assert_eq!(ledger_key(&pair), None);
        assert_eq!(kind_key(&ledger[..ledger.len() - 1]), None);
        assert_eq!(varint(&[254, 1]), None);
    }

    #[test]
    fn a_leaf_is_read_only_when_its_structure_holds() {
        // Two entries, variable keys and values: ends, then bytes.
        let mut page = vec![LEAF, 0, 2, 0];
        let start = 4 + 16;
        for end in [start + 2, start + 6, start + 8, start + 11] {
            page.extend_from_slice(&(end as u32).to_le_bytes());
        }
        page.extend_from_slice(b"k1key2v1val");
        let (entries, used) = leaf(&page, None).unwrap();
        assert_eq!(
            entries,
            vec![(&b"k1"[..], &b"v1"[..]), (&b"key2"[..], &b"val"[..])]
        );
        assert_eq!(used, start + 11);
        let mut bad = page.clone();
        bad[4] = 200; // a key ending past the page
        assert!(leaf(&bad, None).is_none());
        let mut branch = page.clone();
        branch[0] = 2;
        assert!(leaf(&branch, None).is_none());
        assert!(leaf(&page[..page.len() - 1], None).is_none());
    }

    #[test]
    fn a_garbage_page_is_no_leaf() {
        let mut page: Vec<u8> = (0..PAGE)
            .map(|i| (i as u8).wrapping_mul(31) ^ 0x5a)
            .collect();
        page[0] = LEAF;
        let never = |_: &str, _: &str, _: &[u8]| None;
        let rows = scan(&[vec![0; PAGE], page].concat(), &|_| true, &never);
        assert!(rows.is_empty(), "{rows:?}");
    }
}
