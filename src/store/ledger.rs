//! The event ledger in two tables, read as one sequence per agent.
//!
//! A new event is a row of `events`, keyed (agent id, `event_seq`), its
//! JSON as it is. Once an agent's newest rows would fill a block, the
//! writer seals the oldest of them into one block of `event_blocks`, keyed
//! (agent id, the block's last `event_seq`), and removes the rows: the
//! block holds the events' JSON side by side, compressed as a whole
//! (`codec`), sized to fill one 4 KiB B-tree leaf.
//!
//! Why: redb splits a full leaf in half, so a table that only ever gains
//! rows at its end (a ledger) keeps every leaf it leaves behind half
//! empty: half of the ledger's pages were unused space. A block fills its
//! leaf, so a sealed event costs its compressed bytes and little more, and
//! compressing neighbours together finds more to share than one event
//! alone. Readers decompress a block once for all its events, which makes
//! paging faster too.
//!
//! Rows and blocks never hold the same `event_seq`. Rows below the
//! sealed boundary (`events_sealed` in `counters`) are from stores written
//! before blocks existed (schema 2 and older) and stay rows; blocks cover
//! from there to the rows not yet sealed. Readers merge the two by
//! `event_seq` and need no boundary. Sealing is in `seal`.

use redb::ReadableTable;

use super::codec;
use super::StoreError;

/// Either table of the ledger: `events` (rows) or `event_blocks`, both
/// keyed (agent id, event_seq) with bytes for values.
pub(crate) trait LedgerTable: ReadableTable<(&'static str, u64), &'static [u8]> {}
impl<T: ReadableTable<(&'static str, u64), &'static [u8]>> LedgerTable for T {}

/// The first byte of a block's payload (before `codec` packs it).
const BLOCK_V1: u8 = b'B';

/// The most events one block holds.
pub(super) const MAX_BLOCK_EVENTS: usize = 1024;

/// One block, unpacked: its events' JSON and where each one lies.
pub(crate) struct Block {
    first_seq: u64,
    payload: Vec<u8>,
    spans: Vec<(usize, usize)>,
    /// The block's stored (compressed) size.
    stored_len: usize,
}

impl Block {
    pub(crate) fn first_seq(&self) -> u64 {
        self.first_seq
    }

    pub(crate) fn stored_len(&self) -> usize {
        self.stored_len
    }

    pub(crate) fn last_seq(&self) -> u64 {
        self.first_seq + self.spans.len() as u64 - 1
    }

    /// The JSON of event `seq`, if this block holds it.
    pub(crate) fn get(&self, seq: u64) -> Option<&[u8]> {
        let i = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        let (start, end) = *self.spans.get(i)?;
        Some(&self.payload[start..end])
    }

    /// Decode a stored block whose key is (`agent_id`, `last_seq`).
    pub(crate) fn decode(
        agent_id: &str,
        last_seq: u64,
        stored: &[u8],
    ) -> Result<Block, StoreError> {
        let corrupt = |detail: String| StoreError::Decode {
            table: "event_blocks",
            key: format!("{agent_id}/{last_seq}"),
            detail,
        };
        let payload = codec::unpack(stored).map_err(&corrupt)?.into_owned();
        let word = |at: usize| -> Result<usize, StoreError> {
            payload
                .get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(|b| u32::from_le_bytes(b) as usize)
                .ok_or_else(|| corrupt("the block is cut short in its header".into()))
        };
        if payload.first() != Some(&BLOCK_V1) {
            return Err(corrupt(format!(
                "the block starts with {:#04x}, not a block header",
                payload.first().copied().unwrap_or(0)
            )));
        }
        let count = word(1)?;
        if count == 0 || count > MAX_BLOCK_EVENTS || count as u64 > last_seq {
            return Err(corrupt(format!(
                "the block claims {count} events ending at {last_seq}"
            )));
        }
        let mut at = 5 + 4 * count;
        let mut spans = Vec::with_capacity(count);
        for i in 0..count {
            let len = word(5 + 4 * i)?;
            let end = at
                .checked_add(len)
                .filter(|end| *end <= payload.len())
                .ok_or_else(|| corrupt(format!("event {i} of the block runs past its end")))?;
            spans.push((at, end));
            at = end;
        }
        if at != payload.len() {
            return Err(corrupt(format!(
                "the block has {} bytes after its last event",
                payload.len() - at
            )));
        }
        Ok(Block {
            first_seq: last_seq + 1 - count as u64,
            payload,
            spans,
            stored_len: stored.len(),
        })
    }
}

/// A block's payload for these events' JSON, in `event_seq` order.
pub(super) fn encode_block(events: &[Vec<u8>]) -> Vec<u8> {
    let body: usize = events.iter().map(Vec::len).sum();
    let mut payload = Vec::with_capacity(5 + 4 * events.len() + body);
    payload.push(BLOCK_V1);
    payload.extend_from_slice(&(events.len() as u32).to_le_bytes());
    for json in events {
        payload.extend_from_slice(&(json.len() as u32).to_le_bytes());
    }
    for json in events {
        payload.extend_from_slice(json);
    }
    codec::pack(payload)
}

/// The block holding `seq`, if one does.
pub(crate) fn block_holding(
    blocks: &impl LedgerTable,
    agent_id: &str,
    seq: u64,
) -> Result<Option<Block>, StoreError> {
    let Some(row) = blocks.range((agent_id, seq)..=(agent_id, u64::MAX))?.next() else {
        return Ok(None);
    };
    let (k, v) = row?;
    let block = Block::decode(agent_id, k.value().1, v.value())?;
    Ok((block.first_seq <= seq).then_some(block))
}

/// The agent's last `event_seq`, whether a row or sealed.
pub(crate) fn last_seq(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
) -> Result<u64, StoreError> {
    Ok(last_key(rows, agent_id)?
        .unwrap_or(0)
        .max(last_key(blocks, agent_id)?.unwrap_or(0)))
}

fn last_key(table: &impl LedgerTable, agent_id: &str) -> Result<Option<u64>, StoreError> {
    let mut range = table.range((agent_id, 0)..=(agent_id, u64::MAX))?;
    match range.next_back() {
        Some(row) => Ok(Some(row?.0.value().1)),
        None => Ok(None),
    }
}

/// Reads single events by `event_seq`, keeping the last block it opened
/// (an index walk mostly lands in the same block again).
pub(crate) struct Lookup<'a, R, B> {
    rows: &'a R,
    blocks: &'a B,
    agent_id: &'a str,
    cached: Option<Block>,
}

impl<'a, R, B> Lookup<'a, R, B>
where
    R: LedgerTable,
    B: LedgerTable,
{
    pub(crate) fn new(rows: &'a R, blocks: &'a B, agent_id: &'a str) -> Self {
        Lookup {
            rows,
            blocks,
            agent_id,
            cached: None,
        }
    }

    /// Event `seq`'s JSON, if the agent has it.
    pub(crate) fn get(&mut self, seq: u64) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(json) = self.cached.as_ref().and_then(|b| b.get(seq)) {
            return Ok(Some(json.to_vec()));
        }
        if let Some(v) = self.rows.get((self.agent_id, seq))? {
            return unpack_row(self.agent_id, seq, v.value()).map(Some);
        }
        self.cached = block_holding(self.blocks, self.agent_id, seq)?;
        Ok(self
            .cached
            .as_ref()
            .and_then(|b| b.get(seq))
            .map(<[u8]>::to_vec))
    }
}

pub(super) fn unpack_row(agent_id: &str, seq: u64, stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    codec::unpack(stored)
        .map(|json| json.into_owned())
        .map_err(|detail| StoreError::Decode {
            table: "events",
            key: format!("{agent_id}/{seq}"),
            detail,
        })
}

type Row<'a> = (
    redb::AccessGuard<'a, (&'static str, u64)>,
    redb::AccessGuard<'a, &'static [u8]>,
);

fn next_block<'a>(
    agent_id: &str,
    row: Option<Result<Row<'a>, redb::StorageError>>,
) -> Result<Option<Block>, StoreError> {
    match row.transpose()? {
        Some((k, v)) => Block::decode(agent_id, k.value().1, v.value()).map(Some),
        None => Ok(None),
    }
}

/// Whether the row comes before the block's next event in the walk's
/// direction (`forward`): rows and blocks never share an `event_seq`.
fn row_first(row_seq: Option<u64>, block_seq: Option<u64>, forward: bool) -> Option<bool> {
    match (row_seq, block_seq) {
        (None, None) => None,
        (Some(r), Some(b)) => Some(if forward { r < b } else { r > b }),
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
    }
}

type Walk<'a> = redb::Range<'a, (&'static str, u64), &'static [u8]>;

/// Visit the agent's events with `event_seq >= from_seq` in order, rows
/// and blocks merged, until `visit` returns `false`.
pub(crate) fn scan_from(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    from_seq: u64,
    visit: impl FnMut(u64, &[u8]) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let row_iter = rows.range((agent_id, from_seq)..=(agent_id, u64::MAX))?;
    // Blocks are keyed by their last event: the first at or above
    // `from_seq` holds it, or starts after it.
    let block_iter = blocks.range((agent_id, from_seq)..=(agent_id, u64::MAX))?;
    merge(agent_id, row_iter, block_iter, from_seq, true, visit)
}

/// Visit the agent's events with `event_seq < before_seq`, newest first,
/// rows and blocks merged, until `visit` returns `false`.
pub(crate) fn scan_back(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    agent_id: &str,
    before_seq: u64,
    visit: impl FnMut(u64, &[u8]) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let Some(top) = before_seq.checked_sub(1) else {
        return Ok(());
    };
    let row_iter = rows.range((agent_id, 0)..=(agent_id, top))?;
    // The block holding `top`, if any, is the first keyed at or above it.
    let upper = match blocks.range((agent_id, top)..=(agent_id, u64::MAX))?.next() {
        Some(row) => row?.0.value().1,
        None => top,
    };
    let block_iter = blocks.range((agent_id, 0)..=(agent_id, upper))?;
    merge(agent_id, row_iter, block_iter, top, false, visit)
}

/// The walk both scans share: rows and blocks, each already ranged, taken
/// in `event_seq` order (`forward`) or newest first, from `start`.
fn merge<'a>(
    agent_id: &str,
    mut row_iter: Walk<'a>,
    mut block_iter: Walk<'a>,
    start: u64,
    forward: bool,
    mut visit: impl FnMut(u64, &[u8]) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let step = |walk: &mut Walk<'a>| match forward {
        true => walk.next(),
        false => walk.next_back(),
    };
    let mut row = step(&mut row_iter).transpose()?;
    let mut block = next_block(agent_id, step(&mut block_iter))?;
    // The next `event_seq` the walk wants from a block.
    let mut at = start;
    loop {
        let passed = |b: &Block| {
            if forward {
                at > b.last_seq()
            } else {
                at < b.first_seq
            }
        };
        if block.as_ref().is_some_and(passed) {
            // Done with this block (or it lies beyond the walk's start).
            block = next_block(agent_id, step(&mut block_iter))?;
            continue;
        }
        let row_seq = row.as_ref().map(|(k, _)| k.value().1);
        let block_seq = block.as_ref().map(|b| match forward {
            true => at.max(b.first_seq),
            false => at.min(b.last_seq()),
        });
        let Some(take_row) = row_first(row_seq, block_seq, forward) else {
            return Ok(());
        };
        let go_on = match (take_row, &row, &block, row_seq, block_seq) {
            (true, Some((_, v)), _, Some(seq), _) => {
                let json = unpack_row(agent_id, seq, v.value())?;
                row = step(&mut row_iter).transpose()?;
                visit(seq, &json)?
            }
            (false, _, Some(b), _, Some(seq)) => {
                let go_on = match b.get(seq) {
                    Some(json) => visit(seq, json)?,
                    None => true,
                };
                let next = if forward {
                    seq.checked_add(1)
                } else {
                    seq.checked_sub(1)
                };
                match next {
                    Some(next) => at = next,
                    None => return Ok(()),
                }
                go_on
            }
            _ => return Ok(()),
        };
        if !go_on {
            return Ok(());
        }
    }
}
