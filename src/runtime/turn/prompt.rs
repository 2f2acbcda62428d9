//! The prompt frame, section by section, in the contract's order: policy
//! (system prompt), guidance, working memory, work queue, execution
//! snapshot, context summary, then the recent turns verbatim. Built once
//! per provider round from the store and the turn's `FrameContext`; the
//! same builder serves `holon debug prompt`, so what it prints is what the
//! next turn sends.

use crate::protocol::views::{PreviewSection, PreviewSummary, PromptPreview};

use super::frame::FrameContext;
use crate::model::agent::AgentRecord;
use crate::model::context::ContextBudget;
use crate::model::context::ContextEpisode;
use crate::model::transcript::TranscriptEntry;
use crate::model::usage::ConversationItem;
use crate::model::usage::PromptCache;
use crate::model::work::{TodoState, WorkItemRecord};
use crate::runtime::context::budget::{estimate_tokens, items_tokens, tools_tokens};
use crate::runtime::context::{memory, summary_block};
use crate::runtime::provider::{BlockStability, PromptContentBlock, ProviderRequest, ToolSpec};
use crate::runtime::transcript::conversation;
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, ReadCtx, StoreError};

pub(super) const SYSTEM_POLICY: &str = include_str!("../../../assets/system_prompt.md");

/// The name of the structured working memory's block.
const WORKING_MEMORY: &str = "working_memory";

/// Transcript entries read for the verbatim history, at most.
pub(super) const HISTORY_CAP: usize = 2_000;

/// One named part of the frame.
#[derive(Debug, Clone)]
pub(super) struct Section {
    pub name: &'static str,
    pub block: PromptContentBlock,
}

/// Everything of one round's request but the conversation.
#[derive(Debug, Clone)]
pub(super) struct Frame {
    /// The system blocks joined (for wires that take one string).
    pub system: String,
    pub system_blocks: Vec<PromptContentBlock>,
    pub sections: Vec<Section>,
    pub tools: Vec<ToolSpec>,
    /// The current work item (id, revision), the checkpoint anchor.
    pub anchor: Option<(String, u64)>,
    pub cache: PromptCache,
}

impl Frame {
    /// What the frame costs before any conversation.
    pub fn baseline_tokens(&self) -> u64 {
        estimate_tokens(&self.system)
            + self
                .sections
                .iter()
                .map(|s| 4 + estimate_tokens(&s.block.text))
                .sum::<u64>()
            + tools_tokens(&self.tools)
    }

    /// Each part's estimated tokens, largest first.
    pub fn costs(&self) -> Vec<(&'static str, u64)> {
        let mut v: Vec<(&'static str, u64)> = vec![
            ("policy", estimate_tokens(&self.system)),
            ("tools", tools_tokens(&self.tools)),
        ];
        for s in &self.sections {
            match v.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, t)) => *t += 4 + estimate_tokens(&s.block.text),
                None => v.push((s.name, 4 + estimate_tokens(&s.block.text))),
            }
        }
        v.sort_by_key(|c| std::cmp::Reverse(c.1));
        v
    }

    /// The prefix a provider may cache from turn to turn: the system
    /// blocks, the tools and the blocks that are not turn-scoped.
    pub fn cacheable_tokens(&self) -> u64 {
        estimate_tokens(&self.system)
            + tools_tokens(&self.tools)
            + self
                .sections
                .iter()
                .filter(|s| s.block.stability != BlockStability::TurnScoped)
                .map(|s| 4 + estimate_tokens(&s.block.text))
                .sum::<u64>()
    }

    pub fn request(&self, conversation: Vec<ConversationItem>) -> ProviderRequest {
        ProviderRequest {
            system_prompt: self.system.clone(),
            system_blocks: self.system_blocks.clone(),
            cache: Some(self.cache.clone()),
            context_blocks: self.sections.iter().map(|s| s.block.clone()).collect(),
            conversation,
            tools: self.tools.clone(),
            max_output_tokens: None,
            prompt_cache_key: Some(self.cache.prompt_cache_key.clone()),
            no_reasoning: false,
            response_schema: None,
        }
    }
}

fn work_queue_block(items: &[WorkItemRecord], current: Option<&str>) -> String {
    if items.is_empty() {
        return "Work queue: no open work items.".to_owned();
    }
    let mut s = String::from("Work queue (open work items):\n");
    for w in items {
        let marker = if Some(w.id.as_str()) == current {
            "* current"
        } else {
            "  queued"
        };
        s.push_str(&format!(
            "{marker} {} [{:?}] {}",
            w.id, w.plan_status, w.objective
        ));
        if let Some(b) = &w.blocked_by {
            s.push_str(&format!(" (blocked by: {b})"));
        }
        let open: Vec<&str> = w
            .todo_list
            .iter()
            .filter(|t| t.state != TodoState::Completed)
            .map(|t| t.text.as_str())
            .collect();
        if !open.is_empty() {
            s.push_str(&format!(" — todo: {}", open.join("; ")));
        }
        s.push('\n');
    }
    s
}

/// The summary in effect for an agent, if any.
pub(super) fn summary_of(
    rx: &ReadCtx,
    agent: &AgentRecord,
) -> Result<Option<ContextEpisode>, StoreError> {
    match &agent.context.summary_episode_id {
        Some(id) => rx.get(Keyed::ContextEpisodes, &agent.id, id),
        None => Ok(None),
    }
}

/// Build the frame of the agent's next round.
pub(super) fn build(
    rx: &ReadCtx,
    agent: &AgentRecord,
    ctx: &FrameContext,
    tools: Vec<ToolSpec>,
) -> Result<Frame, StoreError> {
    let mut items = Vec::new();
    for id in rx.index_list(Index::OpenWorkItems, &agent.id)? {
        if let Some(w) = rx.get::<WorkItemRecord>(Keyed::WorkItems, &agent.id, &id)? {
            items.push(w);
        }
    }
    let current = agent.current_work_item_id.as_deref();
    let anchor = items
        .iter()
        .find(|w| Some(w.id.as_str()) == current)
        .map(|w| (w.id.clone(), w.revision));
    let mut sections = Vec::new();
    // Agent-scoped, then workspace-scoped guidance, then the working
    // memory: the last of these closes the cacheable prefix.
    for g in &ctx.guidance {
        sections.push(Section {
            name: "guidance",
            block: PromptContentBlock {
                text: g.render(),
                stability: BlockStability::AgentScoped,
                cache_breakpoint: false,
            },
        });
    }
    if let Some(text) = crate::runtime::agents::skills::prompt_block(&ctx.skills, &agent.skills) {
        sections.push(Section {
            name: "skills",
            block: PromptContentBlock {
                text,
                stability: BlockStability::AgentScoped,
                cache_breakpoint: false,
            },
        });
    }
    if let Some(text) = memory::block(&ctx.memory) {
        sections.push(Section {
            name: "memory",
            block: PromptContentBlock {
                text,
                stability: BlockStability::AgentScoped,
                cache_breakpoint: false,
            },
        });
    }
    // The summary of the turns before the conversation's: before it, and
    // changed only by a compaction.
    if let Some(e) = summary_of(rx, agent)? {
        sections.push(Section {
            name: "context_summary",
            block: PromptContentBlock {
                text: summary_block(&e),
                stability: BlockStability::AgentScoped,
                cache_breakpoint: false,
            },
        });
    }
    if let Some(last) = sections.last_mut() {
        last.block.cache_breakpoint = true;
    }
    // The working memory changes at every turn's end: turn-scoped, so it
    // goes with the turn state after the conversation and the cached
    // prefix before it holds.
    if let Some(text) = crate::runtime::context::working::block(&agent.working_memory) {
        sections.push(Section {
            name: WORKING_MEMORY,
            block: PromptContentBlock {
                text,
                stability: BlockStability::TurnScoped,
                cache_breakpoint: false,
            },
        });
    }
    let turn_scoped = |name, text| Section {
        name,
        block: PromptContentBlock {
            text,
            stability: BlockStability::TurnScoped,
            cache_breakpoint: false,
        },
    };
    sections.push(turn_scoped("work_queue", work_queue_block(&items, current)));
    sections.push(turn_scoped("execution", ctx.block.clone()));
    let system_blocks = vec![PromptContentBlock {
        text: SYSTEM_POLICY.to_owned(),
        stability: BlockStability::Stable,
        cache_breakpoint: true,
    }];
    let cache = cache_identity(agent, &system_blocks, &sections, &tools);
    Ok(Frame {
        system: SYSTEM_POLICY.to_owned(),
        system_blocks,
        sections,
        tools,
        anchor,
        cache,
    })
}

/// The frame's cache identity. The key hashes what holds still across
/// turns (system blocks, the blocks that are not turn-scoped but for the
/// working memory, the tools' names and schemas); the fingerprint hashes
/// that and the rest too.
fn cache_identity(
    agent: &AgentRecord,
    system: &[PromptContentBlock],
    sections: &[Section],
    tools: &[ToolSpec],
) -> PromptCache {
    use sha2::{Digest, Sha256};
    let mut surface = Sha256::new();
    for b in system {
        surface.update(b.text.as_bytes());
        surface.update([0]);
    }
    // The working memory changes from turn to turn: the key would
    // rotate every turn with it (its revision is in the record instead).
    let keyed =
        |s: &&Section| s.block.stability != BlockStability::TurnScoped && s.name != WORKING_MEMORY;
    for s in sections.iter().filter(keyed) {
        surface.update(s.block.text.as_bytes());
        surface.update([0]);
    }
    // MCP tools loaded on demand follow ToolSearch: they grow the list
    // within a turn, so the key holds only what comes before them.
    let stable = tools
        .iter()
        .position(|t| t.name == crate::runtime::tools::offer::TOOL_SEARCH)
        .map_or(tools.len(), |i| i + 1);
    let hash_tool = |h: &mut Sha256, t: &ToolSpec| {
        h.update(t.name.as_bytes());
        h.update([0]);
        h.update(t.description.as_bytes());
        h.update(t.input_schema.to_string().as_bytes());
    };
    for t in &tools[..stable] {
        hash_tool(&mut surface, t);
    }
    let mut whole = surface.clone();
    for t in &tools[stable..] {
        hash_tool(&mut whole, t);
    }
    for s in sections.iter().filter(|s| !keyed(s)) {
        whole.update(s.block.text.as_bytes());
        whole.update([0]);
    }
    let hex = |d: &[u8], n: usize| {
        d.iter()
            .take(n)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    PromptCache {
        agent_id: agent.id.clone(),
        prompt_cache_key: format!("holon:{}:{}", agent.id, hex(&surface.finalize(), 6)),
        context_fingerprint: hex(&whole.finalize(), 8),
        working_memory_revision: agent.working_memory.revision,
        compression_epoch: agent.context.epoch,
    }
}

/// The verbatim history: transcript entries after the compaction
/// boundary, as a conversation.
#[derive(Debug, Clone)]
pub(super) struct History {
    pub entries: Vec<TranscriptEntry>,
    /// More entries after the boundary than were read (count pressure:
    /// compaction should fold).
    pub more: bool,
}

impl History {
    pub fn read(rx: &ReadCtx, agent: &AgentRecord, cap: usize) -> Result<History, StoreError> {
        let (entries, more) = rx.list_recent_after(
            Keyed::Transcript,
            &agent.id,
            agent.context.compacted_through.as_deref(),
            cap,
        )?;
        Ok(History { entries, more })
    }

    pub fn items(&self) -> Vec<ConversationItem> {
        conversation(&self.entries)
    }
}

/// What context work reads in one snapshot: the agent, its verbatim
/// history and the summary in effect.
#[derive(Debug, Clone)]
pub(super) struct ContextRead {
    pub agent: AgentRecord,
    pub history: History,
    pub summary: Option<ContextEpisode>,
}

impl ContextRead {
    pub fn load(rx: &ReadCtx, agent_id: &str) -> Result<ContextRead, RuntimeError> {
        let agent = crate::runtime::workspace::view::record_in(rx, agent_id)?;
        let history = History::read(rx, &agent, HISTORY_CAP)?;
        let summary = summary_of(rx, &agent)?;
        Ok(ContextRead {
            agent,
            history,
            summary,
        })
    }

    /// The history as a conversation, and where the running turn
    /// (`run_id`) begins in it.
    pub fn conversation(&self, run_id: &str) -> (Vec<ConversationItem>, usize) {
        (
            self.history.items(),
            turn_start(&self.history.entries, run_id),
        )
    }
}

/// Where the running turn begins in a conversation built from `entries`:
/// the conversation index of its first input.
pub(super) fn turn_start(entries: &[TranscriptEntry], run_id: &str) -> usize {
    let before: Vec<TranscriptEntry> = entries
        .iter()
        .take_while(|e| e.run_id != run_id)
        .cloned()
        .collect();
    conversation(&before).len()
}

impl PromptPreview {
    pub(super) fn new(
        agent: &AgentRecord,
        model_ref: String,
        budget: ContextBudget,
        frame: &Frame,
        history: &History,
        summary: Option<&ContextEpisode>,
    ) -> PromptPreview {
        let mut sections = vec![PreviewSection {
            name: "policy".into(),
            tokens: estimate_tokens(&frame.system),
            text: frame.system.clone(),
        }];
        for s in &frame.sections {
            sections.push(PreviewSection {
                name: s.name.into(),
                tokens: 4 + estimate_tokens(&s.block.text),
                text: s.block.text.clone(),
            });
        }
        let names: Vec<&str> = frame.tools.iter().map(|t| t.name.as_str()).collect();
        sections.push(PreviewSection {
            name: "tools".into(),
            tokens: tools_tokens(&frame.tools),
            text: names.join(", "),
        });
        let mut conversation = history.items();
        let history_tokens = items_tokens(&conversation);
        // A preview names a tool's images; their data stays out of it.
        for item in &mut conversation {
            if let ConversationItem::ToolResult { images, .. } = item {
                images.iter_mut().for_each(|i| i.data.clear());
            }
        }
        let baseline = frame.baseline_tokens();
        let history_budget = budget.prompt_budget.saturating_sub(baseline);
        let would_fold = crate::runtime::context::plan::plan_fold(
            &history.entries,
            if history.more { 0 } else { history_budget },
            history_budget / 2,
            false,
        );
        PromptPreview {
            agent_id: agent.id.clone(),
            model_ref,
            budget,
            sections,
            history_entries: history.entries.len(),
            history_tokens,
            total_tokens: baseline + history_tokens,
            percent_of_window: budget.percent(baseline + history_tokens),
            context: agent.context.clone(),
            summary: summary.map(|e| PreviewSummary {
                episode_id: e.id.clone(),
                epoch: e.epoch,
                source: e.source.as_str().into(),
                folded_turns: e.folded_turns,
                summary_tokens: e.summary_tokens,
                created_at: e.created_at.clone(),
            }),
            would_fold,
            conversation,
            cache: Some(frame.cache.clone()),
            capabilities: Vec::new(),
        }
    }
}

impl crate::runtime::handle::RuntimeHost {
    /// The prompt frame the agent's next turn would send (before any
    /// compaction that turn would run), for `holon debug prompt` and
    /// `/context`.
    pub async fn prompt_preview(&self, agent_id: &str) -> Result<PromptPreview, RuntimeError> {
        let inner = &self.inner;
        let ctx = FrameContext::load(inner, agent_id).await?;
        let rx = inner.store.read()?;
        let read = ContextRead::load(&rx, agent_id)?;
        let provider = (inner.config.provider)(&read.agent);
        // The tools as the next round would send them: Holon's, and the
        // MCP servers' as last offered (none is started for a preview).
        let mut all = crate::runtime::tools::specs();
        let anchor = crate::runtime::tools::mcp_anchor(inner, agent_id);
        all.extend(inner.mcp().last_offered(anchor.as_deref()));
        let budget = provider.context_budget();
        let mut offer = crate::runtime::tools::offer::Offer::new(
            all,
            budget.prompt_budget,
            inner.config.mcp_tool_share,
        );
        offer.note(&read.history.items());
        let frame = build(&rx, &read.agent, &ctx, offer.sent())?;
        let mut preview = PromptPreview::new(
            &read.agent,
            provider.model_ref(),
            budget,
            &frame,
            &read.history,
            read.summary.as_ref(),
        );
        let counts = offer.sent_counts();
        if let Some(tools) = preview.sections.iter_mut().find(|s| s.name == "tools") {
            let counted = |n: u32, what: &str| match n {
                1 => format!("1 {what}"),
                n => format!("{n} {what}s"),
            };
            tools.text = format!("{} sent: {}", counted(counts.tools, "tool"), tools.text);
            if counts.deferred > 0 {
                tools.text.push_str(&format!(
                    "\n{} (~{} tokens) not sent: the model finds them with ToolSearch",
                    counted(counts.deferred, "MCP tool"),
                    counts.deferred_tokens
                ));
            }
        }
        preview.capabilities = provider
            .prompt_capabilities()
            .into_iter()
            .map(str::to_owned)
            .collect();
        Ok(preview)
    }
}

#[cfg(feature = "bench")]
impl crate::runtime::handle::RuntimeHost {
    /// `n` builds of the agent's next frame as a round builds it (its
    /// records read, every block and the cache identity made), timed;
    /// and the cache identity's share of each (`holon debug bench
    /// frame`).
    pub async fn bench_frame_builds(
        &self,
        agent_id: &str,
        n: usize,
    ) -> Result<(Vec<std::time::Duration>, Vec<std::time::Duration>), RuntimeError> {
        use std::time::Instant;
        let inner = &self.inner;
        let ctx = FrameContext::load(inner, agent_id).await?;
        let tools = crate::runtime::tools::specs();
        let (mut builds, mut cache) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            let t = Instant::now();
            let rx = inner.store.read()?;
            let agent = crate::runtime::workspace::view::record_in(&rx, agent_id)?;
            let f = build(&rx, &agent, &ctx, tools.clone())?;
            builds.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(cache_identity(
                &agent,
                &f.system_blocks,
                &f.sections,
                &f.tools,
            ));
            cache.push(t.elapsed());
        }
        Ok((builds, cache))
    }
}
