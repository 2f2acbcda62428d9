//! Context that lasts: token budgets, cross-turn compaction into a durable
//! context summary, turn-local recaps and checkpoints, and the agent's
//! working memory files. The pure parts (estimates, planning, summaries)
//! live here; the host performs them at turn start and between rounds
//! (`turn/compaction.rs`). Compaction only chooses what the model reads:
//! the transcript itself is never rewritten, and no compaction decides
//! task activity, work-item completion or waking.

use crate::model::context::ContextEpisode;

pub mod budget;
pub mod memory;
pub mod plan;
pub mod stale;
pub mod summary;
pub mod working;

use crate::model::context::SummarySource;

/// The prompt block that carries the summary.
pub fn summary_block(e: &ContextEpisode) -> String {
    format!(
        "Context summary (epoch {}, {} earlier turns folded, {} written; the turns below \
         follow it verbatim):\n{}",
        e.epoch,
        e.folded_turns,
        match e.source {
            SummarySource::Model => "model",
            SummarySource::Extractive => "extractively",
        },
        e.summary
    )
}
