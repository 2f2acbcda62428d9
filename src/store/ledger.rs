//! The event ledger in two tables, read as one sequence per agent.
//!
//! A new event is a row of `events`, keyed (agent id, `event_seq`). Once an
//! agent's newest rows hold about a page of compressed bytes, the writer
//! seals the oldest of them into one block of `event_blocks`, keyed
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
//! `event_seq` and need no boundary.

use redb::{ReadableTable, Table};

use super::codec;
use super::StoreError;

/// The counter holding the last `event_seq` that is sealed, or was already
/// a row when the store gained blocks.
pub(crate) const SEALED: &str = "events_sealed";

/// The first byte of a block's payload (before `codec` packs it).
const BLOCK_V1: u8 = b'B';

/// Rows of an agent's unsealed tail the writer looks at in one batch: the
/// tail is normally a page's worth of events (a dozen or two); the bound
/// keeps a batch that appended thousands from sealing them all at once.
const TAIL_SCAN: usize = 4096;

/// Blocks one agent's tail may seal in one batch.
const SEALS_PER_BATCH: usize = 64;

/// The most events one block holds.
const MAX_BLOCK_EVENTS: usize = 1024;

/// The stored size a block aims at: one 4 KiB leaf holds the block with
/// its key (the agent id and eight bytes) and redb's 12 bytes of leaf
/// header and offsets, with room to spare.
pub(crate) fn block_target(agent_id: &str) -> usize {
    4000usize.saturating_sub(agent_id.len()).max(1024)
}

type Rows<'t> = Table<'t, (&'static str, u64), &'static [u8]>;

/// One block, unpacked: its events' JSON and where each one lies.
pub(crate) struct Block {
    first_seq: u64,
    payload: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl Block {
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
        })
    }
}

/// A block's payload for these events' JSON, in `event_seq` order.
fn encode_block(events: &[Vec<u8>]) -> Vec<u8> {
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
    blocks: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
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
    rows: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    blocks: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    agent_id: &str,
) -> Result<u64, StoreError> {
    Ok(last_key(rows, agent_id)?
        .unwrap_or(0)
        .max(last_key(blocks, agent_id)?.unwrap_or(0)))
}

fn last_key(
    table: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    agent_id: &str,
) -> Result<Option<u64>, StoreError> {
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
    R: ReadableTable<(&'static str, u64), &'static [u8]>,
    B: ReadableTable<(&'static str, u64), &'static [u8]>,
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

fn unpack_row(agent_id: &str, seq: u64, stored: &[u8]) -> Result<Vec<u8>, StoreError> {
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

/// Visit the agent's events with `event_seq >= from_seq` in order, rows
/// and blocks merged, until `visit` returns `false`.
pub(crate) fn scan_from(
    rows: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    blocks: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    agent_id: &str,
    from_seq: u64,
    mut visit: impl FnMut(u64, &[u8]) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut row_iter = rows.range((agent_id, from_seq)..=(agent_id, u64::MAX))?;
    // Blocks are keyed by their last event: the first at or above
    // `from_seq` holds it, or starts after it.
    let mut block_iter = blocks.range((agent_id, from_seq)..=(agent_id, u64::MAX))?;
    let mut row = row_iter.next().transpose()?;
    let mut block = next_block(agent_id, block_iter.next())?;
    let mut next_in_block = from_seq;
    loop {
        let row_seq = row.as_ref().map(|(k, _)| k.value().1);
        let block_seq = block.as_ref().map(|b| next_in_block.max(b.first_seq));
        let Some(take_row) = row_first(row_seq, block_seq, true) else {
            return Ok(());
        };
        let go_on = match (take_row, &row, &block, row_seq, block_seq) {
            (true, Some((_, v)), _, Some(seq), _) => {
                let json = unpack_row(agent_id, seq, v.value())?;
                row = row_iter.next().transpose()?;
                visit(seq, &json)?
            }
            (false, _, Some(b), _, Some(seq)) => {
                let go_on = match b.get(seq) {
                    Some(json) => visit(seq, json)?,
                    None => true,
                };
                next_in_block = seq + 1;
                if next_in_block > b.last_seq() {
                    block = next_block(agent_id, block_iter.next())?;
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

/// Visit the agent's events with `event_seq < before_seq`, newest first,
/// rows and blocks merged, until `visit` returns `false`.
pub(crate) fn scan_back(
    rows: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    blocks: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    agent_id: &str,
    before_seq: u64,
    mut visit: impl FnMut(u64, &[u8]) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let Some(top) = before_seq.checked_sub(1) else {
        return Ok(());
    };
    let mut row_iter = rows.range((agent_id, 0)..=(agent_id, top))?;
    // The block holding `top`, if any, is the first keyed at or above it.
    let upper = match blocks.range((agent_id, top)..=(agent_id, u64::MAX))?.next() {
        Some(row) => row?.0.value().1,
        None => top,
    };
    let mut block_iter = blocks.range((agent_id, 0)..=(agent_id, upper))?;
    let mut row = row_iter.next_back().transpose()?;
    let mut block = next_block(agent_id, block_iter.next_back())?;
    // The walk skips the part of the first block above `top`.
    let mut next_in_block = top;
    loop {
        if block.as_ref().is_some_and(|b| next_in_block < b.first_seq) {
            // This block is done, or starts above the walk.
            block = next_block(agent_id, block_iter.next_back())?;
            continue;
        }
        let row_seq = row.as_ref().map(|(k, _)| k.value().1);
        let block_seq = block.as_ref().map(|b| next_in_block.min(b.last_seq()));
        let Some(take_row) = row_first(row_seq, block_seq, false) else {
            return Ok(());
        };
        let go_on = match (take_row, &row, &block, row_seq, block_seq) {
            (true, Some((_, v)), _, Some(seq), _) => {
                let json = unpack_row(agent_id, seq, v.value())?;
                row = row_iter.next_back().transpose()?;
                visit(seq, &json)?
            }
            (false, _, Some(b), _, Some(seq)) => {
                let go_on = match b.get(seq) {
                    Some(json) => visit(seq, json)?,
                    None => true,
                };
                match seq.checked_sub(1) {
                    Some(next) => next_in_block = next,
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

/// The blocks one agent's unsealed rows make: each block's last
/// `event_seq`, its stored bytes and the rows it replaces.
pub(crate) struct SealPlan {
    blocks: Vec<(u64, Vec<u8>, std::ops::RangeInclusive<u64>)>,
}

/// Plan sealing the oldest of the agent's unsealed rows into blocks while
/// they fill one. A tail too small for a block waits for more. Only reads:
/// a row that does not decode fails the plan and the rows stay as they
/// are.
pub(crate) fn plan_seal(
    rows: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    sealed: u64,
    agent_id: &str,
) -> Result<SealPlan, StoreError> {
    let target = block_target(agent_id);
    let mut plan = SealPlan { blocks: Vec::new() };
    // (event_seq, stored bytes) of the unsealed rows, oldest first.
    let mut tail: Vec<(u64, usize)> = Vec::new();
    let mut stored_total = 0usize;
    for row in rows.range((agent_id, sealed.saturating_add(1))..=(agent_id, u64::MAX))? {
        let (k, v) = row?;
        let seq = k.value().1;
        if let Some((prev, _)) = tail.last() {
            if *prev + 1 != seq {
                return Err(StoreError::Storage(format!(
                    "the events of {agent_id} skip from {prev} to {seq}"
                )));
            }
        }
        tail.push((seq, v.value().len()));
        stored_total += v.value().len();
        if tail.len() >= TAIL_SCAN {
            break;
        }
    }
    // Compressed together, events take no more room than one by one: a
    // tail whose rows are smaller than a block is not one yet.
    if stored_total < target {
        return Ok(plan);
    }
    let mut json = Vec::with_capacity(tail.len());
    for (seq, _) in &tail {
        let Some(v) = rows.get((agent_id, *seq))? else {
            return Err(StoreError::Storage(format!(
                "event {agent_id}/{seq} vanished while sealing"
            )));
        };
        json.push(unpack_row(agent_id, *seq, v.value())?);
    }
    // The first guess: the events whose rows alone fill a block (together
    // they compress at least as well); after that, the last block's ratio.
    let mut guess = {
        let mut sum = 0usize;
        tail.iter()
            .take_while(|(_, size)| {
                sum += size;
                sum <= target
            })
            .count()
    };
    let mut start = 0usize;
    while plan.blocks.len() < SEALS_PER_BATCH && start < tail.len() {
        let rest = &json[start..];
        let (n, bytes) = longest_fit(&rest[..rest.len().min(MAX_BLOCK_EVENTS)], target, guess);
        if n == rest.len() && bytes.len() <= target {
            break; // all of the tail fits in one block: not full yet
        }
        let (first, last) = (tail[start].0, tail[start + n - 1].0);
        let raw: usize = rest[..n].iter().map(Vec::len).sum();
        // The next block likely compresses like this one.
        let budget = raw * target / bytes.len().max(1);
        let mut sum = 0usize;
        guess = rest[n..]
            .iter()
            .take_while(|json| {
                sum += json.len();
                sum <= budget
            })
            .count();
        plan.blocks.push((last, bytes, first..=last));
        start += n;
    }
    Ok(plan)
}

/// The longest prefix of `events` (at least one) whose block fits in
/// `target` stored bytes, and that block. Searches from `guess`: up or
/// down by 1, 2, 4, ... until it brackets the answer, then bisects, so a
/// good guess costs two compressions of about a block each.
pub(super) fn longest_fit(events: &[Vec<u8>], target: usize, guess: usize) -> (usize, Vec<u8>) {
    let whole = events.len();
    // The longest prefix known to fit, with its block; the shortest known
    // not to.
    let mut best: Option<(usize, Vec<u8>)> = None;
    let mut too_long = whole + 1;
    let try_len = |n: usize, best: &mut Option<(usize, Vec<u8>)>, too_long: &mut usize| {
        let bytes = encode_block(&events[..n]);
        if bytes.len() <= target {
            if best.as_ref().is_none_or(|(b, _)| n > *b) {
                *best = Some((n, bytes));
            }
            true
        } else {
            *too_long = (*too_long).min(n);
            false
        }
    };
    let first = guess.clamp(1, whole);
    if try_len(first, &mut best, &mut too_long) {
        let mut step = 1;
        loop {
            let at = best.as_ref().map_or(0, |(b, _)| *b);
            let next = (at + step).min(whole);
            if next == at || next >= too_long || !try_len(next, &mut best, &mut too_long) {
                break;
            }
            step *= 2;
        }
    } else {
        let mut step = 1;
        while step < first && !try_len(first - step, &mut best, &mut too_long) {
            step *= 2;
        }
    }
    loop {
        let lo = best.as_ref().map_or(0, |(b, _)| *b);
        if too_long.saturating_sub(lo) <= 1 {
            break;
        }
        try_len(lo + (too_long - lo) / 2, &mut best, &mut too_long);
    }
    // An event larger than a block is a block of its own.
    best.unwrap_or_else(|| (1, encode_block(&events[..1])))
}

impl SealPlan {
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Write the planned blocks, remove the rows they replace and move the
    /// sealed boundary.
    pub(crate) fn apply(
        self,
        rows: &mut Rows<'_>,
        blocks: &mut Rows<'_>,
        counters: &mut Table<'_, (&'static str, &'static str), u64>,
        agent_id: &str,
    ) -> Result<usize, StoreError> {
        let made = self.blocks.len();
        let mut boundary = None;
        for (last, bytes, seqs) in self.blocks {
            blocks.insert((agent_id, last), bytes.as_slice())?;
            for seq in seqs {
                rows.remove((agent_id, seq))?;
            }
            boundary = Some(last);
        }
        if let Some(last) = boundary {
            counters.insert((agent_id, SEALED), last)?;
        }
        Ok(made)
    }
}

/// The agent's sealed boundary: events at or below it are blocks, or rows
/// from before blocks existed.
pub(crate) fn sealed_through(
    counters: &impl ReadableTable<(&'static str, &'static str), u64>,
    agent_id: &str,
) -> Result<u64, StoreError> {
    Ok(counters
        .get((agent_id, SEALED))?
        .map(|v| v.value())
        .unwrap_or(0))
}

/// Mark every event an agent already has as sealed: what opening a store
/// written before blocks existed does, so that its rows stay rows.
pub(crate) fn mark_existing_sealed(
    rows: &Rows<'_>,
    counters: &mut Table<'_, (&'static str, &'static str), u64>,
) -> Result<(), StoreError> {
    let mut next: Option<String> = None;
    loop {
        let first = match &next {
            None => rows.iter()?.next(),
            Some(after) => rows.range((after.as_str(), u64::MAX)..)?.find(|row| {
                row.as_ref()
                    .map(|(k, _)| k.value().0 != after.as_str())
                    .unwrap_or(true)
            }),
        };
        let Some(row) = first else { return Ok(()) };
        let agent = row?.0.value().0.to_owned();
        let last = {
            let mut r = rows.range((agent.as_str(), 0)..=(agent.as_str(), u64::MAX))?;
            match r.next_back() {
                Some(row) => row?.0.value().1,
                None => 0,
            }
        };
        counters.insert((agent.as_str(), SEALED), last)?;
        next = Some(agent);
    }
}
