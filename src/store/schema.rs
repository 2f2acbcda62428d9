//! The on-disk schema: every redb table, its key shape and what it holds.
//! Current-state tables are rewritten in place; ledgers are append-only and
//! keyed by time-ordered ids or by the per-agent `event_seq`. Values are
//! JSON so that records stay readable, exportable and tolerant of added
//! fields, stored LZ4-compressed against a fixed dictionary when that is
//! smaller (`codec`). Bump `SCHEMA_VERSION` on any incompatible change.

use redb::TableDefinition;

/// The schema version this build writes. A file recording a newer version
/// is refused; an older one is migrated on open. Version 2 may store a
/// value compressed (`codec`); a version-1 file needs no rewrite (its
/// values are JSON, which version 2 reads as it is), only the new number,
/// so that an older build refuses the file instead of misreading it.
/// Version 3 seals events into `event_blocks` and indexes kinds by chunk
/// (`event_kinds`). A version-2 file's event rows stay rows (their agents'
/// `events_sealed` counters are set to their last event on open); its
/// per-event kind index is rebuilt as chunks and dropped.
pub const SCHEMA_VERSION: u32 = 3;

/// `meta`: `schema_version` (u32 LE), `created_at`, `created_by`.
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// `agents`: agent id -> `AgentRecord` JSON (current state).
pub const AGENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("agents");

/// `events`: (agent id, event_seq) -> `EventRecord` JSON (ledger): the
/// events not sealed into `event_blocks` yet, and every event of a store
/// written before blocks. `event_seq` is contiguous per agent from 1: the
/// only replay cursor.
pub const EVENTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("events");

/// `event_blocks`: (agent id, the block's last event_seq) -> a block of
/// consecutive events' JSON, compressed together (`ledger`). An agent's
/// events are its `events` rows and its blocks, merged by `event_seq`.
pub const EVENT_BLOCKS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("event_blocks");

/// `event_kinds`: (agent id, kind, chunk of 1,024 event_seqs) -> the
/// chunk's events of that kind, as u16 offsets (`kind_index`).
pub const EVENT_KINDS: TableDefinition<(&str, &str, u64), &[u8]> =
    TableDefinition::new("event_kinds");

/// `events_by_kind`: (agent id, kind, event_seq) -> (), the index of
/// schema 2 and older: opening such a file rebuilds it as `event_kinds`
/// and drops it. The raw-redb baseline of `holon debug bench store`
/// writes it too (the plain layout a writer would start from).
pub const EVENTS_BY_KIND: TableDefinition<(&str, &str, u64), ()> =
    TableDefinition::new("events_by_kind");

/// `queue_pending`: (agent id, priority band, admission_seq) -> message id.
/// Holds exactly the `Queued` entries, in dequeue order.
pub const QUEUE_PENDING: TableDefinition<(&str, u8, u64), &str> =
    TableDefinition::new("queue_pending");

/// `counters`: (agent id, counter name) -> u64 (e.g. `admission_seq`).
pub const COUNTERS: TableDefinition<(&str, &str), u64> = TableDefinition::new("counters");

/// Membership indexes: (agent id, id) -> (). They keep scheduler reads
/// proportional to current state, not history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Index {
    /// Messages whose queue entry is `Dequeued` (in flight or to replay).
    Dequeued,
    /// Work items whose state is `open`.
    OpenWorkItems,
    /// Tasks whose status is not terminal.
    ActiveTasks,
    /// Idempotency keys of system ticks already emitted.
    TickKeys,
    /// Timers still waiting to fire.
    ActiveTimers,
    /// Approvals not yet settled: pending, or granted with the call's
    /// outcome not yet delivered to the agent.
    OpenApprovals,
    /// Every `child_agent_task` a parent made (task ids are time-ordered,
    /// so the last entries are the latest children).
    ChildTasks,
}

impl Index {
    pub const ALL: [Index; 7] = [
        Index::Dequeued,
        Index::OpenWorkItems,
        Index::ActiveTasks,
        Index::TickKeys,
        Index::ActiveTimers,
        Index::OpenApprovals,
        Index::ChildTasks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Index::Dequeued => "idx_dequeued",
            Index::OpenWorkItems => "idx_open_work_items",
            Index::ActiveTasks => "idx_active_tasks",
            Index::TickKeys => "idx_tick_keys",
            Index::ActiveTimers => "idx_active_timers",
            Index::OpenApprovals => "idx_open_approvals",
            Index::ChildTasks => "idx_child_tasks",
        }
    }

    pub fn index(self) -> usize {
        match self {
            Index::Dequeued => 0,
            Index::OpenWorkItems => 1,
            Index::ActiveTasks => 2,
            Index::TickKeys => 3,
            Index::ActiveTimers => 4,
            Index::OpenApprovals => 5,
            Index::ChildTasks => 6,
        }
    }

    pub fn definition(self) -> TableDefinition<'static, (&'static str, &'static str), ()> {
        TableDefinition::new(self.name())
    }
}

/// The (agent id, record id) -> JSON tables. Current-state tables are
/// rewritten in place; ledgers only ever gain rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Keyed {
    /// Message envelopes (ledger), written by stores before 2026-11-24
    /// only: an envelope's one copy is now its `message_admitted` event,
    /// which the queue entry points at (`admitted_seq`). Kept so that older
    /// entries find their envelopes.
    Messages,
    /// Queue entries with their mutable processing status (current state).
    QueueEntries,
    /// Work items with `revision` (current state).
    WorkItems,
    /// Tasks (current state, monotonic lifecycle).
    Tasks,
    /// Waiting intents (current state).
    WaitingIntents,
    /// Timers (current state).
    Timers,
    /// Briefs (ledger), written by stores before 2026-11-23 only: a
    /// brief's record is now its `brief_created` event. Kept so that older
    /// files open and `holon store stats` lists their rows.
    Briefs,
    /// Transcript entries (ledger).
    Transcript,
    /// Tool executions (ledger).
    ToolExecutions,
    /// Archived context episodes: the summaries cross-turn compaction
    /// made (ledger).
    ContextEpisodes,
    /// Client request ids already answered (`method:request_id` -> the
    /// answer), so a retried request is admitted once.
    ClientRequests,
    /// External trigger descriptors with their tokens; rotated and revoked
    /// ones stay as the audit trail (current state).
    ExternalTriggers,
    /// Approval requests and their answers (current state; never deleted).
    Approvals,
}

impl Keyed {
    pub const ALL: [Keyed; 13] = [
        Keyed::Messages,
        Keyed::QueueEntries,
        Keyed::WorkItems,
        Keyed::Tasks,
        Keyed::WaitingIntents,
        Keyed::Timers,
        Keyed::Briefs,
        Keyed::Transcript,
        Keyed::ToolExecutions,
        Keyed::ClientRequests,
        Keyed::ContextEpisodes,
        Keyed::ExternalTriggers,
        Keyed::Approvals,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Keyed::Messages => "messages",
            Keyed::QueueEntries => "queue_entries",
            Keyed::WorkItems => "work_items",
            Keyed::Tasks => "tasks",
            Keyed::WaitingIntents => "waiting_intents",
            Keyed::Timers => "timers",
            Keyed::Briefs => "briefs",
            Keyed::Transcript => "transcript",
            Keyed::ToolExecutions => "tool_executions",
            Keyed::ClientRequests => "client_requests",
            Keyed::ContextEpisodes => "context_episodes",
            Keyed::ExternalTriggers => "external_triggers",
            Keyed::Approvals => "approvals",
        }
    }

    pub fn index(self) -> usize {
        match self {
            Keyed::Messages => 0,
            Keyed::QueueEntries => 1,
            Keyed::WorkItems => 2,
            Keyed::Tasks => 3,
            Keyed::WaitingIntents => 4,
            Keyed::Timers => 5,
            Keyed::Briefs => 6,
            Keyed::Transcript => 7,
            Keyed::ToolExecutions => 8,
            Keyed::ClientRequests => 9,
            Keyed::ContextEpisodes => 10,
            Keyed::ExternalTriggers => 11,
            Keyed::Approvals => 12,
        }
    }

    pub fn definition(
        self,
    ) -> TableDefinition<'static, (&'static str, &'static str), &'static [u8]> {
        TableDefinition::new(self.name())
    }
}
