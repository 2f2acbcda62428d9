//! The shared operator event presentation layer (runtime spec, "Local
//! Operator Console Contract"). It turns one raw runtime event into an
//! [`OperatorEvent`]: how visible it is, what kind of thing it is, and the
//! words an operator reads. Every operator-facing surface (the console's
//! chat, `/events`, `holon events`) derives its text from here and picks
//! main-conversation rows per [`DisplayMode`] with [`shows`].
//!
//! Pure: no I/O, no clock, no terminal. It owns no state and decides no
//! severity or delivery; surfaces decide those from visibility and category.
//!
//! Invariants: `present` never panics, whatever the payload (missing or
//! mistyped fields degrade to generic wording); every summary is one line of
//! at most [`SUMMARY_MAX`] characters; a kind this build does not know (a
//! newer Holon wrote it) becomes a generic trace row. `class` is the mapping
//! table; `docs/presentation.md` documents it with the display modes.

use serde::{Deserialize, Serialize};

use crate::protocol::events::{Event, EventKind};
use crate::protocol::DisplayMode;
use crate::protocol::EventRecord;

/// Longest summary, in characters; longer text ends in `…`.
pub const SUMMARY_MAX: usize = 200;
/// Longest quoted fragment (a message preview, a reason) inside a summary.
const PREVIEW_MAX: usize = 120;

/// A closed vocabulary enum: snake_case names (serde and `as_str` agree),
/// `ALL` in declaration order, `Display`.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// Operator visibility, ordered from most operator-facing to most
    /// diagnostic (`ActionRequired < … < Trace`), levels 1 to 5.
    #[derive(PartialOrd, Ord)]
    Visibility {
        ActionRequired => "action_required",
        WorkDone => "work_done",
        TurnResult => "turn_result",
        Progress => "progress",
        Trace => "trace",
    }
}

vocabulary! {
    /// What an operator event is about.
    Category {
        OperatorNotification => "operator_notification",
        Brief => "brief",
        Message => "message",
        WorkItem => "work_item",
        Task => "task",
        Waiting => "waiting",
        Workspace => "workspace",
        Runtime => "runtime",
        AssistantProgress => "assistant_progress",
        Tool => "tool",
        StateSync => "state_sync",
        Trace => "trace",
    }
}

impl Visibility {
    /// The numeric level: 1 (`action_required`) to 5 (`trace`).
    pub fn level(self) -> u8 {
        self as u8 + 1
    }

    /// A name (`turn_result`, any case) or a level (`3`), e.g. for a filter.
    pub fn parse(s: &str) -> Option<Visibility> {
        parse_named(Self::ALL, s, Self::level)
    }
}

impl Category {
    pub fn parse(s: &str) -> Option<Category> {
        parse_named(Self::ALL, s, |_| 0)
    }
}

/// A vocabulary value by name (any case) or, when `level` gives one, by level.
fn parse_named<T: Copy + std::fmt::Display>(all: &[T], s: &str, level: fn(T) -> u8) -> Option<T> {
    let s = s.trim();
    let by_level = |v: T| level(v) > 0 && level(v).to_string() == s;
    all.iter()
        .copied()
        .find(|v| v.to_string().eq_ignore_ascii_case(s) || by_level(*v))
}

/// One raw event as an operator sees it. No severity and no delivery hint:
/// each surface decides those from visibility, category and its context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorEvent {
    pub visibility: Visibility,
    pub category: Category,
    /// Short surface label (`Result`, `ExecCommand`, `Task`).
    pub title: String,
    /// Optional detail: the full message or brief text, a command's output
    /// preview, decision evidence. May span lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// One line, at most [`SUMMARY_MAX`] characters.
    pub summary: String,
    /// The raw runtime event kind, as recorded.
    pub source_event_kind: String,
}

impl OperatorEvent {
    /// The operator's own message as admitted: the one non-result row the
    /// `info` mode shows. Of all admitted messages only an
    /// `operator_prompt` gets category `message`.
    pub fn is_operator_message(&self) -> bool {
        self.category == Category::Message
            && self.source_event_kind == EventKind::MessageAdmitted.as_str()
    }
}

/// Whether the main conversation shows this event in `mode`:
/// - `info`: action_required, work_done, turn_result, and the operator's
///   own messages;
/// - `verbose`: adds progress and the tool rows (category `tool`);
/// - `debug`: adds every other trace row except state-sync refresh signals
///   and telemetry (categories `state_sync`, `trace`), which only `/events`
///   shows.
pub fn shows(mode: DisplayMode, event: &OperatorEvent) -> bool {
    match mode {
        DisplayMode::Info => {
            event.visibility <= Visibility::TurnResult || event.is_operator_message()
        }
        DisplayMode::Verbose => {
            shows(DisplayMode::Info, event)
                || event.visibility <= Visibility::Progress
                || event.category == Category::Tool
        }
        DisplayMode::Debug => {
            let curated = match event.category {
                Category::StateSync | Category::Trace => false,
                Category::OperatorNotification
                | Category::Brief
                | Category::Message
                | Category::WorkItem
                | Category::Task
                | Category::Waiting
                | Category::Workspace
                | Category::Runtime
                | Category::AssistantProgress
                | Category::Tool => true,
            };
            shows(DisplayMode::Verbose, event) || curated
        }
    }
}

/// The one-line human form of `holon events`: sequence, UTC time
/// (`HH:MM:SS`), visibility, category and summary in aligned columns.
pub fn human_line(event: &EventRecord, p: &OperatorEvent) -> String {
    let (seq, time) = (event.event_seq, clock(&event.ts));
    let (v, c) = (p.visibility.as_str(), p.category.as_str());
    printable(&format!("{seq:>5} {time} {v:<15} {c:<21} {}", p.summary))
}

/// The short form of `holon tail`: UTC time (`HH:MM:SS`) and summary.
pub fn short_line(event: &EventRecord, p: &OperatorEvent) -> String {
    printable(&format!("{} {}", clock(&event.ts), p.summary))
}

/// Present one raw event. Never panics; an unknown kind is a trace row.
/// The row a round's reasoning summary gets of its own (verbose and up),
/// ahead of the round's answer.
pub fn reasoning_row(p: &crate::protocol::events::AssistantRoundRecorded) -> Option<OperatorEvent> {
    let text = p
        .reasoning_summary
        .as_deref()
        .filter(|t| !t.trim().is_empty())?;
    Some(OperatorEvent {
        visibility: Visibility::Progress,
        category: Category::AssistantProgress,
        title: "Thinking".into(),
        body: Some(text.to_owned()),
        summary: format!("Thinking: {}", words::headline(text)),
        source_event_kind: EventKind::AssistantRoundRecorded.as_str().to_owned(),
    })
}

pub fn present(event: &EventRecord) -> OperatorEvent {
    present_event(event, &event.event())
}

/// `present` of an event whose payload is already decoded.
pub fn present_event(event: &EventRecord, typed: &Event) -> OperatorEvent {
    let generic = (Visibility::Trace, Category::Trace, "Event");
    let (visibility, category, title) = match typed {
        Event::Unknown { .. } | Event::Unreadable { .. } => generic,
        known => known.kind().map_or(generic, class),
    };
    let mut out = OperatorEvent {
        visibility,
        category,
        title: title.to_owned(),
        body: None,
        summary: String::new(),
        source_event_kind: event.kind.clone(),
    };
    let summary = describe(typed, event, &mut out);
    out.summary = one_line(&summary, SUMMARY_MAX);
    out
}

/// The mapping table: each kind's visibility, category and title. Kinds
/// marked "refined" adjust them from the payload in `describe`.
fn class(kind: EventKind) -> (Visibility, Category, &'static str) {
    use Category as C;
    use EventKind as K;
    use Visibility as V;
    match kind {
        K::AgentCreated => (V::Trace, C::Runtime, "Agent"),
        K::AgentStateChanged => (V::Trace, C::StateSync, "Agent state"),
        K::AgentArchived => (V::Progress, C::OperatorNotification, "Archived"),
        K::SkillActivated => (V::Progress, C::Runtime, "Skill"),
        K::ControlApplied => (V::Progress, C::OperatorNotification, "Control"),
        K::BudgetExceeded => (V::TurnResult, C::OperatorNotification, "Budget"),
        K::AgentBudgetChanged => (V::Progress, C::OperatorNotification, "Budget"),
        K::MessageAdmitted => (V::Trace, C::Runtime, "Message"), // refined
        K::MessageRejected => (V::TurnResult, C::Message, "Prompt refused"), // refined
        K::MessageProcessingStarted | K::MessageProcessed => (V::Trace, C::Message, "Message"),
        K::MessageAborted => (V::Progress, C::Message, "Message"),
        K::MessageDropped => (V::Progress, C::Message, "Message"),
        K::MessageInterjected => (V::Progress, C::Message, "Message"),
        K::SchedulerDecision => (V::Trace, C::Runtime, "Scheduler"),
        K::SystemTickEmitted => (V::Trace, C::Runtime, "System tick"),
        K::TurnStarted => (V::Trace, C::Runtime, "Turn"),
        K::ProviderRoundCompleted => (V::Trace, C::Trace, "Provider round"),
        K::TurnContextBuilt => (V::Trace, C::Trace, "Context built"),
        K::AssistantRoundRecorded => (V::Progress, C::AssistantProgress, "Assistant"),
        K::ToolStarted => (V::Trace, C::Tool, "Tool"),
        K::ToolExecuted => (V::Trace, C::Tool, "Tool"), // title: the tool's name
        K::WorkspaceAttached | K::WorkspaceDetached => (V::Progress, C::Workspace, "Workspace"),
        K::WorkspaceUsed => (V::Progress, C::Workspace, "Workspace"),
        K::WorkspaceMissing => (V::TurnResult, C::Workspace, "Workspace missing"),
        K::WorktreeCreated | K::WorktreeRemoved => (V::Progress, C::Workspace, "Worktree"),
        K::WorktreeRetained => (V::TurnResult, C::Workspace, "Worktree kept"),
        K::ContextCompactionStarted | K::ContextCompacted => (V::Progress, C::Runtime, "Context"),
        K::TurnCheckpoint => (V::Trace, C::Runtime, "Checkpoint"),
        K::TurnAwaitingApproval => (V::Trace, C::Runtime, "Turn"),
        K::TurnTerminal => (V::Progress, C::Runtime, "Turn"),
        K::BriefCreated => (V::TurnResult, C::Brief, "Result"), // refined
        K::WorkItemCreated | K::WorkItemPicked => (V::Progress, C::WorkItem, "Work item"),
        K::WorkItemUpdated => (V::Trace, C::WorkItem, "Work item"), // refined
        K::WorkItemCompleted => (V::Progress, C::WorkItem, "Work item"),
        K::WorkItemRecheckDue => (V::Trace, C::WorkItem, "Work item"),
        K::TaskCreated | K::TaskOutput | K::TaskResultQueued => (V::Trace, C::Task, "Task"),
        K::TaskStatusChanged => (V::Trace, C::Task, "Task"), // refined
        K::TaskReattached => (V::Progress, C::Task, "Task"),
        K::WaitingIntentCreated => (V::Progress, C::Waiting, "Waiting"),
        K::WaitingIntentTriggered => (V::Progress, C::Waiting, "Waiting"),
        K::WaitingIntentCancelled => (V::Trace, C::Waiting, "Waiting"),
        K::TimerCreated | K::TimerFired => (V::Progress, C::Waiting, "Timer"),
        K::TimerCancelled => (V::Trace, C::Waiting, "Timer"),
        K::WakeHintSubmitted => (V::Trace, C::Waiting, "Wake hint"),
        K::WakeHintCoalesced | K::WakeHintIgnored => (V::Trace, C::Waiting, "Wake hint"),
        K::ExternalTriggerProvisioned => (V::Trace, C::Waiting, "Trigger"),
        K::ExternalTriggerRotated | K::ExternalTriggerRevoked => {
            (V::Progress, C::OperatorNotification, "Trigger")
        }
        K::ExternalTriggerDelivered => (V::Progress, C::Waiting, "Trigger"),
        K::ApprovalRequested => (
            V::ActionRequired,
            C::OperatorNotification,
            "Approval needed",
        ),
        K::ApprovalReviewed => (V::Progress, C::OperatorNotification, "Review"),
        K::ApprovalGranted | K::ApprovalDenied => {
            (V::Progress, C::OperatorNotification, "Approval")
        }
        K::WorkspacePolicyChanged => (V::Progress, C::Workspace, "Policy"),
        K::DefaultPolicyChanged => (V::Progress, C::Workspace, "Default policy"),
        K::McpServerApproved | K::McpServerSwitched => (V::Progress, C::Workspace, "MCP server"),
        K::ProposalApproved => (V::Progress, C::Workspace, "Proposal"),
        K::McpServerReviewed => (V::Progress, C::Workspace, "MCP server reviewed"),
        K::McpServerStarted | K::McpServerStopped => (V::Progress, C::Tool, "MCP server"),
        // Its tools fail until it is back: something the operator may fix.
        K::McpServerFailed => (V::TurnResult, C::Tool, "MCP server"),
        K::StorePruned => (V::Progress, C::Runtime, "Retention"),
        K::HistoryLost => (V::Progress, C::Runtime, "History lost"),
        K::RuntimeStarted | K::RuntimeStopped => (V::Progress, C::Runtime, "Runtime"),
        K::RuntimeError => (V::TurnResult, C::Runtime, "Runtime error"),
        K::ConfigReloaded => (V::Progress, C::OperatorNotification, "Configuration"),
        K::HookRan => (V::Trace, C::Runtime, "Hook"), // refined
        K::DisplayModeChanged => (V::Trace, C::StateSync, "Display mode"),
        K::ModelOverrideChanged => (V::Trace, C::StateSync, "Model"),
    }
}

pub mod agents;
pub mod approvals;
pub mod attempt;
pub mod context;
mod describe;
mod describe_turns;
mod describe_waits;
pub use describe_waits::review_words;
pub mod latency;
pub mod mcp;
pub mod runtimes;
pub mod transcript;
pub mod trigger;
pub mod usage;
mod words;

use describe::*;
use words::*;

pub use describe::attachments_text;

pub(crate) use words::nonblank;
pub(crate) use words::one_line;
pub use words::{compact_count, counted, printable, wire_name};

#[cfg(test)]
mod page_tests;
#[cfg(test)]
mod tests;
