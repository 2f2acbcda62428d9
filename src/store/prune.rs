//! Cutting the oldest part of an agent's ledger (retention): whole sealed
//! units only, oldest first, and never past a sequence the caller must keep.
//!
//! A unit is a sealed block, or a row a store kept from before blocks
//! existed. A cut removes a prefix of units, so what is left is still one
//! run of `event_seq`s without a gap, now starting at `pruned_before`
//! (`counters`; absent means 1). The kind index's chunks below the cut go
//! with it. Unsealed rows (the newest tail) are never cut, so the ledger is
//! never emptied and its last sequence is never reused.
//!
//! The store knows nothing of what an event means: the runtime decides how
//! far the cut may go (`below_seq`) and how old an event must be
//! (`before_ts`); here the cut stops at the first unit that reaches either.

use std::borrow::Cow;
use std::collections::BTreeSet;

use redb::{ReadableTable, Table};
use serde::Deserialize;

use super::kind_index::{self, KindTable};
use super::ledger::{unpack_row, Block, LedgerTable};
use super::seal;
use super::StoreError;

/// The counter holding the first `event_seq` an agent's ledger still has
/// after a cut (absent: 1, nothing was cut).
pub(crate) const PRUNED_BEFORE: &str = "events_pruned_before";

/// What one cut removed from an agent's ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerCut {
    /// Why it ended where it did (`None` before it was planned).
    pub stop: Option<CutStop>,
    /// The first and last `event_seq` removed (both 0 when nothing was).
    pub from_seq: u64,
    pub to_seq: u64,
    pub events: u64,
    /// Sealed blocks removed, and rows of a store from before blocks.
    pub blocks: u64,
    pub rows: u64,
    /// Stored (compressed) bytes of the removed blocks and rows.
    pub bytes: u64,
}

impl LedgerCut {
    pub fn is_empty(&self) -> bool {
        self.events == 0
    }
}

/// One unit of the ledger a cut may remove.
pub(crate) struct Unit {
    /// Its key's `event_seq` (a block's last event, a row's own).
    key: u64,
    block: bool,
    first: u64,
    last: u64,
    stored: u64,
    kinds: BTreeSet<String>,
}

/// The part of an event a cut looks at.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    ts: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
}

/// The first `event_seq` the agent's ledger holds (1 when nothing was
/// ever cut).
pub(crate) fn pruned_before(
    counters: &impl ReadableTable<(&'static str, &'static str), u64>,
    agent_id: &str,
) -> Result<u64, StoreError> {
    Ok(counters
        .get((agent_id, PRUNED_BEFORE))?
        .map(|v| v.value())
        .unwrap_or(1)
        .max(1))
}

/// Why a planned cut ends where it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutStop {
    /// The next unit holds an event the caller must keep (`below_seq`).
    Kept,
    /// The next unit holds an event written at or after `before_ts`.
    Young,
    /// The next unit holds the newest events (unsealed, or the last one:
    /// a ledger is never emptied).
    Newest,
    /// The next unit does not decode: never removed unread.
    Unreadable,
    /// The job's share of units is planned; more may follow.
    Batch,
    /// Nothing older is left.
    End,
}

/// The oldest units (at most `max_units`) whose events all lie below
/// `below_seq` and were all written before `before_ts` (an RFC 3339
/// timestamp as the store writes them), stopping at the first that does
/// not, at the sealed boundary, or before the agent's last event. Only
/// reads. A row or block that does not decode ends the plan there (what
/// came before it is still cut).
pub(crate) fn plan_cut(
    rows: &impl LedgerTable,
    blocks: &impl LedgerTable,
    counters: &impl ReadableTable<(&'static str, &'static str), u64>,
    agent_id: &str,
    below_seq: u64,
    before_ts: &str,
    max_units: usize,
) -> Result<(Vec<Unit>, CutStop), StoreError> {
    let start = pruned_before(counters, agent_id)?;
    let newest = seal::sealed_through(counters, agent_id)?
        .saturating_add(1)
        .min(super::ledger::last_seq(rows, blocks, agent_id)?);
    let limit = below_seq.min(newest);
    let mut units = Vec::new();
    let mut next = start;
    let mut row_iter = rows.range((agent_id, start)..=(agent_id, u64::MAX))?;
    let mut block_iter = blocks.range((agent_id, start)..=(agent_id, u64::MAX))?;
    let unreadable = |e: StoreError| {
        tracing::warn!(agent_id, error = %e, "retention stops before an unreadable event");
    };
    let mut broken: Option<StoreError> = None;
    let mut row = row_iter.next().transpose()?;
    let mut block = match block_iter.next().transpose()? {
        Some((k, v)) => match Block::decode(agent_id, k.value().1, v.value()) {
            Ok(b) => Some(b),
            Err(e) => {
                unreadable(e);
                return Ok((units, CutStop::Unreadable));
            }
        },
        None => None,
    };
    loop {
        if units.len() >= max_units {
            return Ok((units, CutStop::Batch));
        }
        let row_seq = row.as_ref().map(|(k, _)| k.value().1);
        let block_first = block.as_ref().map(Block::first_seq);
        let (first, last, unit) = match (row_seq, block_first) {
            (Some(r), b) if b.is_none_or(|b| r < b) => {
                let (_, v) = row.take().unwrap_or_else(|| unreachable!("a row was seen"));
                let json = match unpack_row(agent_id, r, v.value()) {
                    Ok(json) => json,
                    Err(e) => {
                        unreadable(e);
                        return Ok((units, CutStop::Unreadable));
                    }
                };
                let unit = look_at(r, false, r, v.value().len(), &[&json], before_ts);
                row = row_iter.next().transpose()?;
                (r, r, unit)
            }
            (_, Some(_)) => {
                let b = block
                    .take()
                    .unwrap_or_else(|| unreachable!("a block was seen"));
                let events: Vec<&[u8]> = (b.first_seq()..=b.last_seq())
                    .filter_map(|seq| b.get(seq))
                    .collect();
                let unit = look_at(
                    b.last_seq(),
                    true,
                    b.first_seq(),
                    b.stored_len(),
                    &events,
                    before_ts,
                );
                let span = (b.first_seq(), b.last_seq());
                block = match block_iter.next().transpose()? {
                    Some((k, v)) => match Block::decode(agent_id, k.value().1, v.value()) {
                        Ok(b) => Some(b),
                        // Ends the plan when the walk reaches it (rows
                        // after it start past `next`: a gap).
                        Err(e) => {
                            broken = Some(e);
                            None
                        }
                    },
                    None => None,
                };
                (span.0, span.1, unit)
            }
            _ => {
                let stop = match broken.take() {
                    Some(e) => {
                        unreadable(e);
                        CutStop::Unreadable
                    }
                    None => CutStop::End,
                };
                return Ok((units, stop));
            }
        };
        if first != next {
            // A gap (an unreadable block, or damage): the ledger is not one
            // run here; nothing past it goes.
            if let Some(e) = broken.take() {
                unreadable(e);
            }
            return Ok((units, CutStop::Unreadable));
        }
        if last >= limit {
            let stop = match last >= below_seq {
                true => CutStop::Kept,
                false => CutStop::Newest,
            };
            return Ok((units, stop));
        }
        match unit {
            Look::Old(u) => {
                next = u.last + 1;
                units.push(u);
            }
            Look::Young => return Ok((units, CutStop::Young)),
            Look::Unreadable => return Ok((units, CutStop::Unreadable)),
        }
    }
}

/// What a unit's events say about cutting it.
enum Look {
    /// Every event was written before the cutoff: it may go.
    Old(Unit),
    /// One was written at or after it.
    Young,
    /// One does not decode (never removed unread).
    Unreadable,
}

/// The unit over these events' JSON (`first` is the first one's seq).
fn look_at(
    key: u64,
    block: bool,
    first: u64,
    stored: usize,
    events: &[&[u8]],
    before_ts: &str,
) -> Look {
    if events.is_empty() || (!block && first != key) {
        return Look::Unreadable;
    }
    let mut kinds = BTreeSet::new();
    for json in events {
        let Ok(head) = serde_json::from_slice::<Head<'_>>(json) else {
            return Look::Unreadable;
        };
        // Every timestamp is written in one fixed-width UTC form, so
        // their order is the strings' order.
        if *head.ts >= *before_ts {
            return Look::Young;
        }
        kinds.insert(head.kind.into_owned());
    }
    Look::Old(Unit {
        key,
        block,
        first,
        last: first + events.len() as u64 - 1,
        stored: stored as u64,
        kinds,
    })
}

/// Remove the planned units, their chunks of the kind index, and move the
/// agent's `pruned_before` past them.
pub(crate) fn apply_cut(
    rows: &mut Table<'_, (&'static str, u64), &'static [u8]>,
    blocks: &mut Table<'_, (&'static str, u64), &'static [u8]>,
    kinds: &mut KindTable<'_>,
    counters: &mut Table<'_, (&'static str, &'static str), u64>,
    agent_id: &str,
    units: &[Unit],
) -> Result<LedgerCut, StoreError> {
    let (Some(first), Some(last)) = (units.first(), units.last()) else {
        return Ok(LedgerCut::default());
    };
    let mut cut = LedgerCut {
        from_seq: first.first,
        to_seq: last.last,
        ..LedgerCut::default()
    };
    let mut seen_kinds = BTreeSet::new();
    for u in units {
        if u.block {
            blocks.remove((agent_id, u.key))?;
            cut.blocks += 1;
        } else {
            rows.remove((agent_id, u.key))?;
            cut.rows += 1;
        }
        cut.events += u.last - u.first + 1;
        cut.bytes += u.stored;
        seen_kinds.extend(u.kinds.iter().cloned());
    }
    let keep_from = last.last + 1;
    for kind in &seen_kinds {
        kind_index::remove_below(kinds, agent_id, kind, keep_from)?;
    }
    counters.insert((agent_id, PRUNED_BEFORE), keep_from)?;
    Ok(cut)
}

/// What a plan would remove, without removing it (a dry run).
pub(crate) fn summarize(units: &[Unit]) -> LedgerCut {
    let (Some(first), Some(last)) = (units.first(), units.last()) else {
        return LedgerCut::default();
    };
    LedgerCut {
        stop: None,
        from_seq: first.first,
        to_seq: last.last,
        events: units.iter().map(|u| u.last - u.first + 1).sum(),
        blocks: units.iter().filter(|u| u.block).count() as u64,
        rows: units.iter().filter(|u| !u.block).count() as u64,
        bytes: units.iter().map(|u| u.stored).sum(),
    }
}
