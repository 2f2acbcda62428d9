//! The console's projection of the viewed agent: its summary (posture,
//! status, counts, model), work items, tasks, closure and last scheduler
//! decision. Built from the `agent.state` bootstrap, then kept current by
//! the events that carry records (`work_item_*`, `task_*`,
//! `scheduler_decision`, state-sync events) and by `agent.status` refreshes
//! the core asks for when a refresh signal arrives.
//!
//! Invariant: a refresh answer never overwrites a posture learnt from a
//! newer event (answers carry `last_event_seq`).

use crate::model::agent::AgentStatus;
use crate::model::decision::AgentSchedulingPosture;
use crate::model::task::{CommandOrigin, TaskStatus};
use crate::model::work::{PlanStatus, TodoState};
use crate::protocol::events::{self as ev, Event, Family};
use crate::protocol::events::{AgentEvent, MessageEvent, PolicyEvent, RuntimeEvent};
use crate::protocol::events::{
    SchedulerEvent, TaskEvent, TurnEvent, WorkItemEvent, WorkspaceEvent,
};
use crate::protocol::types::ClosureDecision;
use crate::protocol::types::TaskRecord;
use crate::protocol::types::{WorkItemRecord, WorkItemState};
use crate::protocol::{AgentState, AgentSummary, EventRecord, WorkItemEntry};
use crate::ui::present::wire_name;

/// How a posture reads in the console: a label, a glyph (meaning never by
/// colour alone) and whether the working row animates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostureLook {
    pub label: &'static str,
    pub glyph: &'static str,
    pub animated: bool,
    /// The operator is needed (strong style).
    pub needs_operator: bool,
}

/// How each derived `AgentSchedulingPosture` reads; `None` is a posture
/// not learnt yet (before the first summary).
pub fn posture_look(posture: Option<AgentSchedulingPosture>) -> PostureLook {
    use AgentSchedulingPosture as P;
    let look = |label, glyph, animated, needs_operator| PostureLook {
        label,
        glyph,
        animated,
        needs_operator,
    };
    let Some(posture) = posture else {
        return look("Unknown", "?", false, false);
    };
    match posture {
        P::ActiveTurn => look("Working", "▶", true, false),
        P::HasQueuedInput => look("Queued", "…", false, false),
        P::HasRunnableWork => look("Runnable work", "»", false, false),
        P::WaitingForTask => look("Waiting task", "◷", false, false),
        P::WaitingForExternal => look("Waiting", "◷", false, false),
        P::WaitingForOperator => look("Needs input", "▲", false, true),
        P::Blocked => look("Blocked", "■", false, false),
        P::Idle => look("Idle", "○", false, false),
        P::Archived => look("Stopped", "■", false, false),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Todo {
    pub text: String,
    pub state: TodoState,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkItemView {
    pub id: String,
    pub objective: String,
    pub completed: bool,
    pub plan_status: PlanStatus,
    pub todos: Vec<Todo>,
    pub blocked_by: Option<String>,
    pub revision: u64,
    pub result_summary: Option<String>,
    pub updated_at: String,
    /// The start of the plan artifact (`plan.md`), when the bootstrap
    /// served one; work-item events do not carry it.
    pub plan_preview: Option<String>,
}

impl WorkItemView {
    pub fn from_record(w: &WorkItemRecord) -> WorkItemView {
        let todos = w.todo_list.iter().filter(|t| !t.text.trim().is_empty());
        WorkItemView {
            id: w.id.clone(),
            objective: w.objective.clone(),
            completed: w.state == WorkItemState::Completed,
            plan_status: w.plan_status,
            todos: todos
                .map(|t| Todo {
                    text: t.text.clone(),
                    state: t.state,
                })
                .collect(),
            blocked_by: w.blocked_by.clone(),
            revision: w.revision,
            result_summary: w.result_summary.clone(),
            updated_at: w.updated_at.clone(),
            plan_preview: None,
        }
    }

    /// A bootstrap entry: the record, and the plan's start beside it.
    pub fn from_entry(entry: &WorkItemEntry) -> WorkItemView {
        WorkItemView {
            plan_preview: entry.plan_preview.clone(),
            ..WorkItemView::from_record(&entry.record)
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub id: String,
    pub cmd: String,
    pub status: TaskStatus,
    /// Started by the operator (`!CMD`), not the agent.
    pub operator: bool,
    pub exit_status: Option<i64>,
    pub duration_ms: Option<u64>,
    pub summary: Option<String>,
    pub accepts_input: bool,
    pub created_at: String,
}

impl TaskView {
    pub fn from_record(t: &TaskRecord) -> TaskView {
        let detail = t.command_detail();
        let cmd = detail.cmd.or(t.summary.clone());
        TaskView {
            id: t.id.clone(),
            cmd: cmd.unwrap_or_default(),
            status: t.status,
            operator: detail.origin == Some(CommandOrigin::Operator),
            exit_status: detail.exit_status,
            duration_ms: detail.duration_ms,
            summary: t.summary.clone(),
            accepts_input: detail.accepts_input,
            created_at: t.created_at.clone(),
        }
    }

    pub fn is_active(&self) -> bool {
        !self.status.is_terminal()
    }
}

/// What the core should do after an event touched the projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touched {
    Nothing,
    /// The summary's counts may be stale: ask `agent.status`.
    RefreshSummary,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentView {
    pub summary: Option<AgentSummary>,
    /// `None` until the first summary or decision says it.
    pub posture: Option<AgentSchedulingPosture>,
    pub posture_reason: String,
    /// The control status; `None` until the first summary says it.
    pub status: Option<AgentStatus>,
    /// The `event_seq` the posture was learnt at.
    pub posture_seq: u64,
    pub model: Option<String>,
    /// The last prompt as a share of the model's window ("ctx 41%").
    pub context_percent: Option<u8>,
    /// Where the agent's tools act (workspace, root, cwd).
    pub execution: Option<crate::protocol::types::ExecutionSnapshot>,
    pub closure: Option<ClosureDecision>,
    pub last_decision: Option<EventRecord>,
    pub work_items: Vec<WorkItemView>,
    pub current_work_item: Option<String>,
    pub tasks: Vec<TaskView>,
    pub bootstrapped: bool,
}

impl AgentView {
    pub fn bootstrap(&mut self, state: &AgentState) {
        self.bootstrapped = true;
        self.apply_summary(&state.agent, true);
        self.closure = state.closure.clone();
        self.last_decision = state.last_decision.clone();
        self.work_items = state
            .work_items
            .iter()
            .map(WorkItemView::from_entry)
            .collect();
        self.tasks = state.tasks.iter().map(TaskView::from_record).collect();
        self.posture_seq = state.last_event_seq;
    }

    /// An `agent.status` / `agents.list` summary; `force` also takes its
    /// posture when an event since taught a newer one.
    pub fn apply_summary(&mut self, s: &AgentSummary, force: bool) {
        if force || s.last_event_seq >= self.posture_seq {
            self.posture = Some(s.posture);
            self.posture_reason = s.posture_reason.clone();
            self.status = Some(s.status);
            self.posture_seq = self.posture_seq.max(s.last_event_seq);
        }
        self.model = s.model.clone().or_else(|| s.model_override.clone());
        self.context_percent = s.context.percent.or(self.context_percent);
        self.execution = Some(s.execution.clone());
        self.current_work_item = s.current_work_item_id.clone();
        self.summary = Some(s.clone());
    }

    pub fn queue_depth(&self) -> u64 {
        self.summary.as_ref().map_or(0, |s| s.queue_depth)
    }

    pub fn active_tasks(&self) -> usize {
        self.tasks.iter().filter(|t| t.is_active()).count()
    }

    pub fn open_work_items(&self) -> usize {
        self.work_items.iter().filter(|w| !w.completed).count()
    }

    pub fn task(&self, id: &str) -> Option<&TaskView> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn work_item(&self, id: &str) -> Option<&WorkItemView> {
        self.work_items.iter().find(|w| w.id == id)
    }

    fn upsert_work_item(&mut self, mut w: WorkItemView) {
        match self.work_items.iter_mut().find(|x| x.id == w.id) {
            Some(x) => {
                // Events carry the record, not the plan: keep the preview.
                if w.plan_preview.is_none() {
                    w.plan_preview = x.plan_preview.take();
                }
                *x = w
            }
            None => self.work_items.push(w),
        }
    }

    fn upsert_task(&mut self, t: TaskView) {
        match self.tasks.iter_mut().find(|x| x.id == t.id) {
            Some(x) => *x = t,
            None => self.tasks.push(t),
        }
    }

    fn set_posture(&mut self, seq: u64, posture: AgentSchedulingPosture, reason: String) {
        self.posture = Some(posture);
        self.posture_reason = reason;
        self.posture_seq = seq;
    }

    /// A work item as its event left it; once completed it is not current.
    fn work_item_changed(&mut self, work_item: &crate::protocol::types::WorkItemRecord) {
        let w = WorkItemView::from_record(work_item);
        if w.completed && self.current_work_item.as_deref() == Some(w.id.as_str()) {
            self.current_work_item = None;
        }
        self.upsert_work_item(w);
    }

    /// A task's new status, and what its end said (a task not seen before
    /// is the agent's, created when the event was).
    fn task_changed(&mut self, e: &EventRecord, p: &ev::TaskStatusChanged) {
        let id = p.task_id.clone();
        let mut t = self.task(&id).cloned().unwrap_or(TaskView {
            id,
            cmd: p.cmd.clone().unwrap_or_default(),
            status: p.to,
            operator: false,
            exit_status: None,
            duration_ms: None,
            summary: None,
            accepts_input: false,
            created_at: e.ts.clone(),
        });
        t.status = p.to;
        t.exit_status = p.exit_status.or(t.exit_status);
        t.duration_ms = p.duration_ms.or(t.duration_ms);
        t.summary = p.summary.clone().or(t.summary);
        self.upsert_task(t);
    }

    /// How full the context window is: the provider's own count when it
    /// gave one, else the runtime's estimate.
    fn context_used(&mut self, p: &ev::ProviderRoundCompleted) {
        let used = Some(p.token_usage.input_tokens)
            .filter(|n| *n > 0)
            .unwrap_or(p.prompt_tokens_estimate);
        if p.context_window > 0 && used > 0 {
            let percent = used.saturating_mul(100) / p.context_window;
            self.context_percent = Some(percent.min(255) as u8);
        }
    }

    /// Apply one live or backfilled event (`typed` is its payload), by
    /// family.
    pub fn apply(&mut self, e: &EventRecord, typed: &Event) -> Touched {
        use Family as F;
        match typed.family() {
            F::Agent(a) => self.agent_event(a),
            F::Message(m) => Self::message_event(m),
            F::Scheduler(SchedulerEvent::SchedulerDecision(p)) => {
                self.last_decision = Some(e.clone());
                self.set_posture(e.event_seq, p.posture.posture, p.posture.reason.clone());
                self.status = Some(p.status);
                Touched::RefreshSummary
            }
            F::Scheduler(SchedulerEvent::SystemTickEmitted(_)) => Touched::Nothing,
            F::Turn(t) => self.turn_event(e, t),
            F::WorkItem(w) => self.work_item_event(w),
            F::Task(t) => self.task_event(e, t),
            F::Workspace(WorkspaceEvent::WorkspaceUsed(p)) => {
                self.execution = Some(p.execution.clone());
                Touched::Nothing
            }
            // Where the agent works changes only by `workspace_used`.
            F::Workspace(
                WorkspaceEvent::WorkspaceAttached(_)
                | WorkspaceEvent::WorkspaceDetached(_)
                | WorkspaceEvent::WorkspaceMissing(_)
                | WorkspaceEvent::WorktreeCreated(_)
                | WorkspaceEvent::WorktreeRemoved(_)
                | WorkspaceEvent::WorktreeRetained(_),
            ) => Touched::Nothing,
            // The status line names the policy in force (a repository's
            // proposal is not in it).
            F::Policy(PolicyEvent::ProposalApproved(_)) => Touched::Nothing,
            F::Policy(
                PolicyEvent::WorkspacePolicyChanged(_) | PolicyEvent::DefaultPolicyChanged(_),
            ) => Touched::RefreshSummary,
            // The summary counts the waits and timers.
            F::Wait(_) => Touched::RefreshSummary,
            F::Runtime(r) => Self::runtime_event(r),
            // Nothing the summary or these views hold.
            F::Tool(_)
            | F::Brief(_)
            | F::Approval(_)
            | F::Trigger(_)
            | F::Mcp(_)
            | F::Unreadable => Touched::Nothing,
        }
    }

    /// The queue's counts change when a message joins it or settles; a
    /// refused one never joined, and one taken up is followed by its turn.
    fn message_event(m: MessageEvent<'_>) -> Touched {
        use MessageEvent as M;
        match m {
            M::MessageAdmitted(_)
            | M::MessageProcessed(_)
            | M::MessageAborted(_)
            | M::MessageDropped(_) => Touched::RefreshSummary,
            M::MessageRejected(_) | M::MessageProcessingStarted(_) | M::MessageInterjected(_) => {
                Touched::Nothing
            }
        }
    }

    /// A start and a prune change the summary's status and counts.
    fn runtime_event(r: RuntimeEvent<'_>) -> Touched {
        use RuntimeEvent as R;
        match r {
            R::RuntimeStarted(_) | R::StorePruned(_) | R::HistoryLost(_) => Touched::RefreshSummary,
            R::RuntimeStopped(_) | R::ConfigReloaded(_) | R::HookRan(_) => Touched::Nothing,
        }
    }

    /// The agent's status, model and budget.
    fn agent_event(&mut self, a: AgentEvent<'_>) -> Touched {
        use AgentEvent as A;
        match a {
            A::AgentArchived(_) => self.status = Some(AgentStatus::Stopped),
            A::BudgetExceeded(_) => self.status = Some(AgentStatus::Paused),
            A::AgentStateChanged(ev::AgentStateChanged { to, .. })
            | A::ControlApplied(ev::ControlApplied { to, .. }) => self.status = Some(*to),
            // Cleared: the runtime's default applies, which the refreshed
            // summary names.
            A::ModelOverrideChanged(p) => {
                if let Some(m) = &p.to {
                    self.model = Some(m.clone());
                }
            }
            A::AgentBudgetChanged(_) => {}
            // Nothing the summary holds.
            A::AgentCreated(_) | A::SkillActivated(_) | A::DisplayModeChanged(_) => {
                return Touched::Nothing
            }
        }
        Touched::RefreshSummary
    }

    /// A turn in progress is the posture until its end, which the
    /// refreshed summary says; each round fills the context meter.
    fn turn_event(&mut self, e: &EventRecord, t: TurnEvent<'_>) -> Touched {
        use TurnEvent as T;
        match t {
            T::TurnStarted(_) => {
                let reason = "turn in progress".to_owned();
                self.set_posture(e.event_seq, AgentSchedulingPosture::ActiveTurn, reason);
                Touched::Nothing
            }
            T::TurnAwaitingApproval(_) => {
                let reason = "turn in progress; it waits for your answer".to_owned();
                self.set_posture(e.event_seq, AgentSchedulingPosture::ActiveTurn, reason);
                Touched::Nothing
            }
            T::ProviderRoundCompleted(p) => {
                self.context_used(p);
                Touched::Nothing
            }
            T::TurnTerminal(_)
            | T::RuntimeError(_)
            | T::ContextCompactionStarted(_)
            | T::ContextCompacted(_) => Touched::RefreshSummary,
            // The turn's own bookkeeping.
            T::TurnContextBuilt(_) | T::AssistantRoundRecorded(_) | T::TurnCheckpoint(_) => {
                Touched::Nothing
            }
        }
    }

    /// A work item's snapshot, or the one the agent works on now.
    fn work_item_event(&mut self, w: WorkItemEvent<'_>) -> Touched {
        use WorkItemEvent as W;
        match w {
            W::WorkItemCreated(ev::WorkItemCreated { work_item, .. })
            | W::WorkItemUpdated(ev::WorkItemUpdated { work_item, .. })
            | W::WorkItemCompleted(ev::WorkItemCompleted { work_item, .. }) => {
                self.work_item_changed(work_item);
                Touched::RefreshSummary
            }
            W::WorkItemPicked(p) => {
                self.current_work_item = Some(p.work_item_id.clone());
                Touched::RefreshSummary
            }
            // Nothing held changes until the recheck is taken up.
            W::WorkItemRecheckDue(_) => Touched::Nothing,
        }
    }

    /// A task's record: made when it starts, changed where it is.
    fn task_event(&mut self, e: &EventRecord, t: TaskEvent<'_>) -> Touched {
        use TaskEvent as T;
        match t {
            T::TaskCreated(p) => {
                self.upsert_task(TaskView::from_record(&p.task));
                Touched::RefreshSummary
            }
            T::TaskStatusChanged(p) => {
                self.task_changed(e, p);
                Touched::RefreshSummary
            }
            // The record is unchanged.
            T::TaskOutput(_) | T::TaskResultQueued(_) | T::TaskReattached(_) => Touched::Nothing,
        }
    }

    /// The closure's evidence and the last decision in plain words:
    /// "why is this agent idle?".
    pub fn explanation(&self) -> Vec<String> {
        let mut out = Vec::new();
        let look = posture_look(self.posture);
        let reason = match self.posture_reason.is_empty() {
            true => String::new(),
            false => format!(" ({})", self.posture_reason),
        };
        out.push(format!("{}{reason}.", look.label));
        if let Some(Event::SchedulerDecision(p)) =
            self.last_decision.as_ref().map(EventRecord::event)
        {
            let why = super::fmt::words(p.decision.reason.as_str());
            out.push(format!(
                "The scheduler last decided {} because: {why}.",
                super::fmt::decision_words(p.decision.kind)
            ));
        }
        // In plain words: what waits for the operator, what the agent
        // waits on.
        for w in self.work_items.iter().filter(|w| !w.completed) {
            if w.plan_status == PlanStatus::NeedsInput {
                out.push(format!(
                    "Work item “{}” ({}) waits for you: its plan needs your input — answer in the composer.",
                    w.objective, w.id
                ));
            } else if let Some(b) = &w.blocked_by {
                out.push(format!(
                    "Work item “{}” ({}) is blocked: {b}.",
                    w.objective, w.id
                ));
            }
        }
        for t in self.tasks.iter().filter(|t| t.is_active()) {
            out.push(format!(
                "Task {} (`{}`) is {}; its result wakes the agent when it ends.",
                t.id,
                super::wrap::truncate(&t.cmd, 60),
                wire_name(&t.status).replace('_', " ")
            ));
        }
        if let Some(s) = &self.summary {
            match s.timers_active {
                0 => {}
                1 => out.push("A timer will wake the agent (see /events for when).".to_owned()),
                n => out.push(format!(
                    "{n} timers will wake the agent (see /events for when)."
                )),
            }
        }
        if let Some(c) = &self.closure {
            let outcome = c.outcome.as_str();
            let waiting = c.waiting_reason.as_ref().map(wire_name);
            let tail = waiting
                .map(|w| format!(", {}", super::fmt::words(&w)))
                .unwrap_or_default();
            out.push(format!("The last turn closed as {outcome}{tail}."));
        }
        out
    }
}
