//! Sealing an agent's unsealed event rows into blocks (`ledger`): what
//! the writer runs for each agent a batch appended to, before it commits.
//! Planning only reads, so a row that does not decode (or a gap in the
//! rows) leaves them as they are and the batch still commits; applying
//! writes the blocks, removes the rows and moves the sealed boundary, in
//! the batch's transaction.

use redb::{ReadableTable, Table};

use super::codec;
use super::ledger::{encode_block, unpack_row, LedgerTable, MAX_BLOCK_EVENTS};
use super::StoreError;

/// The counter holding the last `event_seq` that is sealed, or was already
/// a row when the store gained blocks.
const SEALED: &str = "events_sealed";

/// Rows of an agent's unsealed tail the writer looks at in one batch: the
/// tail is normally under a block's worth (a few dozen events); the bound
/// keeps a batch that appended thousands from sealing them all at once.
const TAIL_SCAN: usize = 4096;

/// Blocks one agent's tail may seal in one batch.
const SEALS_PER_BATCH: usize = 64;

/// The stored size a block aims at: one 4 KiB leaf holds the block with
/// its key (the agent id and eight bytes) and redb's 12 bytes of leaf
/// header and offsets, with room to spare.
fn block_target(agent_id: &str) -> usize {
    4000usize.saturating_sub(agent_id.len()).max(1024)
}

type Rows<'t> = Table<'t, (&'static str, u64), &'static [u8]>;

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
    rows: &impl LedgerTable,
    sealed: u64,
    agent_id: &str,
) -> Result<SealPlan, StoreError> {
    let target = block_target(agent_id);
    let mut plan = SealPlan { blocks: Vec::new() };
    // The unsealed rows' `event_seq`s, oldest first, and their JSON's
    // total length (read from the values' headers: nothing is copied or
    // decompressed for a tail that cannot fill a block yet, the usual
    // case on a commit of one or two events).
    let mut seqs: Vec<u64> = Vec::new();
    let mut raw_total = 0usize;
    let tail = (agent_id, sealed.saturating_add(1))..=(agent_id, u64::MAX);
    for row in rows.range(tail.clone())?.take(TAIL_SCAN) {
        let (k, v) = row?;
        let seq = k.value().1;
        if let Some(prev) = seqs.last() {
            if *prev + 1 != seq {
                return Err(StoreError::Storage(format!(
                    "the events of {agent_id} skip from {prev} to {seq}"
                )));
            }
        }
        raw_total += codec::json_len(v.value());
        seqs.push(seq);
    }
    // A block of events compresses to well under half their JSON: a tail
    // under twice a block's bytes cannot fill one yet.
    if raw_total < 2 * target {
        return Ok(plan);
    }
    let mut json = Vec::with_capacity(seqs.len());
    for (row, seq) in rows.range(tail)?.zip(&seqs) {
        json.push(unpack_row(agent_id, *seq, row?.1.value())?);
    }
    // The first guess: three times a block of JSON (what events compress
    // by together, typically); after that, the last block's own ratio.
    let mut guess = {
        let mut sum = 0usize;
        json.iter()
            .take_while(|j| {
                sum += j.len();
                sum <= 3 * target
            })
            .count()
    };
    let mut start = 0usize;
    while plan.blocks.len() < SEALS_PER_BATCH && start < json.len() {
        let rest = &json[start..];
        let (n, bytes) = longest_fit(&rest[..rest.len().min(MAX_BLOCK_EVENTS)], target, guess);
        if n == rest.len() && bytes.len() <= target {
            break; // all of the tail fits in one block: not full yet
        }
        let (first, last) = (seqs[start], seqs[start + n - 1]);
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
