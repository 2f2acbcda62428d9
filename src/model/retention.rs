//! What retention removes and reports: per agent, the oldest part of its
//! history that nothing current needs (`holon store prune`, `[store]
//! retain_days`).

use serde::{Deserialize, Serialize};

/// Who asked for a prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PruneBy {
    /// `holon store prune` or `store.prune`.
    #[default]
    Operator,
    /// The runtime by itself, for `[store] retain_days`.
    RetainDays,
}

/// Consecutive events of one agent's ledger that are gone for good (a
/// salvage could not read them back), `from_seq` to `to_seq` inclusive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostRange {
    pub from_seq: u64,
    pub to_seq: u64,
}

impl LostRange {
    pub fn holds(&self, seq: u64) -> bool {
        (self.from_seq..=self.to_seq).contains(&seq)
    }

    pub fn len(&self) -> u64 {
        self.to_seq.saturating_sub(self.from_seq) + 1
    }

    pub fn is_empty(&self) -> bool {
        self.to_seq < self.from_seq
    }
}

/// The gaps in a ledger that should run contiguously from `start` to
/// `last`, given the sequences that are present, in order (pure).
pub fn gaps(start: u64, last: u64, present: impl IntoIterator<Item = u64>) -> Vec<LostRange> {
    let mut out = Vec::new();
    let mut next = start;
    for seq in present {
        if seq < next {
            continue;
        }
        if seq > next {
            out.push(LostRange {
                from_seq: next,
                to_seq: seq - 1,
            });
        }
        next = seq + 1;
    }
    if next <= last {
        out.push(LostRange {
            from_seq: next,
            to_seq: last,
        });
    }
    out
}

/// Whether `known` covers every event from `from` to `to` (inclusive).
pub fn covered(known: &[LostRange], from: u64, to: u64) -> bool {
    let mut sorted: Vec<LostRange> = known.to_vec();
    sorted.sort_by_key(|r| r.from_seq);
    let mut next = from;
    for r in sorted {
        if r.from_seq > next {
            break;
        }
        next = next.max(r.to_seq.saturating_add(1));
        if next > to {
            return true;
        }
    }
    next > to
}

/// `ranges` less what `known` already holds (a store salvaged twice
/// records each loss once).
pub fn subtract(ranges: &[LostRange], known: &[LostRange]) -> Vec<LostRange> {
    let mut out = Vec::new();
    for r in ranges {
        let mut pieces = vec![*r];
        for k in known {
            pieces = pieces
                .into_iter()
                .flat_map(|p| {
                    let mut left = Vec::new();
                    if k.to_seq < p.from_seq || k.from_seq > p.to_seq {
                        left.push(p);
                        return left;
                    }
                    if k.from_seq > p.from_seq {
                        left.push(LostRange {
                            from_seq: p.from_seq,
                            to_seq: k.from_seq - 1,
                        });
                    }
                    if k.to_seq < p.to_seq {
                        left.push(LostRange {
                            from_seq: k.to_seq + 1,
                            to_seq: p.to_seq,
                        });
                    }
                    left
                })
                .collect();
        }
        out.extend(pieces);
    }
    out
}

/// What a salvage could not bring back of one agent's history, recorded
/// as its `history_lost` event (and the ranges on its record), so the
/// salvaged store verifies sound with its losses known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryLost {
    /// Events that could not be read back.
    #[serde(default)]
    pub ranges: Vec<LostRange>,
    /// Queue entries dropped because the message they point at is gone
    /// (message ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_queue_entries: Vec<String>,
    /// What recorded it: `salvage of PATH`.
    #[serde(default)]
    pub source: String,
    /// The agent's own record was lost too: its history was found, and
    /// the record made anew with the defaults (its settings are lost),
    /// paused until the operator resumes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_record_lost: bool,
}

impl HistoryLost {
    pub fn events(&self) -> u64 {
        self.ranges.iter().map(LostRange::len).sum()
    }
}

/// What one prune removed from one agent's history (or, in a dry run,
/// would remove). Recorded as the agent's `store_pruned` event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentPruned {
    pub agent_id: String,
    /// The cutoff: only what was written before it could go.
    pub older_than: String,
    /// The first and last `event_seq` removed (0 and 0 when none were).
    pub from_seq: u64,
    pub to_seq: u64,
    /// The first `event_seq` the ledger holds now; paging below it
    /// answers "pruned before seq N".
    pub ledger_start: u64,
    pub events: u64,
    /// Sealed blocks removed, and single rows of an older store.
    pub blocks: u64,
    pub rows: u64,
    pub transcript_entries: u64,
    pub tool_executions: u64,
    /// Settled queue entries whose admission event went with the ledger.
    pub queue_entries: u64,
    /// Stored (compressed) bytes removed.
    pub bytes: u64,
    /// What kept the cut from going further, when something did: the
    /// oldest open work item, a queued message, the latest brief, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
    #[serde(default)]
    pub by: PruneBy,
}

impl AgentPruned {
    /// Whether anything was (or would be) removed.
    pub fn removed_any(&self) -> bool {
        self.events + self.transcript_entries + self.tool_executions + self.queue_entries > 0
    }
}

/// A prune over every agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneReport {
    pub older_than: String,
    pub dry_run: bool,
    /// The agents it removed something from (or would).
    pub agents: Vec<AgentPruned>,
    /// Agents looked at.
    pub agents_seen: u64,
    pub events: u64,
    pub bytes: u64,
    pub millis: u64,
}

#[cfg(test)]
mod gap_tests {
    use super::{gaps, LostRange};

    #[test]
    fn gaps_are_the_ranges_missing_between_start_and_last() {
        let r = |a, b| LostRange {
            from_seq: a,
            to_seq: b,
        };
        assert_eq!(gaps(1, 5, [1, 2, 3, 4, 5]), vec![]);
        assert_eq!(gaps(1, 9, [1, 2, 5, 6, 9]), vec![r(3, 4), r(7, 8)]);
        assert_eq!(gaps(1, 9, [3]), vec![r(1, 2), r(4, 9)]);
        assert_eq!(gaps(4, 6, []), vec![r(4, 6)]);
        assert_eq!(gaps(1, 0, []), vec![]);
        assert!(r(3, 4).holds(4) && !r(3, 4).holds(5));
        assert_eq!(r(3, 4).len(), 2);
    }

    #[test]
    fn coverage_and_subtraction_work_on_ranges_not_seqs() {
        use super::{covered, subtract};
        let r = |a, b| LostRange {
            from_seq: a,
            to_seq: b,
        };
        assert!(covered(&[r(5, 9), r(1, 4)], 2, 8));
        assert!(!covered(&[r(1, 4), r(6, 9)], 2, 8));
        // A huge recorded range answers at once.
        assert!(covered(&[r(1, u64::MAX - 1)], 10, 1_000_000_000_000));
        assert_eq!(
            subtract(&[r(1, 10)], &[r(3, 4), r(8, 12)]),
            vec![r(1, 2), r(5, 7)]
        );
        assert_eq!(subtract(&[r(3, 4)], &[r(1, 10)]), vec![]);
        assert_eq!(subtract(&[r(3, 4)], &[]), vec![r(3, 4)]);
    }
}
