//! The console's state: what `update` changes and `view` draws. It owns
//! the viewed agent's projection, the conversation, the composer, the
//! overlay stack and the requests in flight (by id, so stale answers are
//! told apart). `dirty` says a frame is needed; the loop clears it after
//! drawing. Layout is a pure function of the state (`layout`), shared by
//! `update` (page sizes) and `view`.

use std::collections::HashMap;

use ratatui::layout::Rect;

use super::composer::Composer;
use super::conversation::Conversation;
use super::msg::{Connection, RequestId};
use super::overlays::stack::OverlayStack;
use super::projection::{posture_look, AgentView};
use super::scroll::Ctx as ScrollCtx;
use super::theme::Theme;
use crate::protocol::DisplayMode;
use crate::protocol::{ControlAction, EventRecord};

/// Events of history fetched for the conversation when an agent is shown.
pub const HISTORY_EVENTS: usize = 500;
/// Most completion menu entries shown at once.
pub const MENU_ROWS: usize = 6;

/// When the console calls the operator back (`[console] notify`): a
/// turn ended, or a call or question waits for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NotifyWhen {
    Off,
    /// Only while the terminal says it is not focused (terminals that
    /// never report focus are taken as focused: nothing rings).
    #[default]
    Unfocused,
    Always,
}

impl NotifyWhen {
    pub const CHOICES: &'static str = "off, unfocused or always";

    pub fn parse(s: &str) -> Option<NotifyWhen> {
        match s {
            "off" => Some(NotifyWhen::Off),
            "unfocused" => Some(NotifyWhen::Unfocused),
            "always" => Some(NotifyWhen::Always),
            _ => None,
        }
    }
}

pub struct Init {
    pub agent_id: String,
    pub connection: Connection,
    pub width: u16,
    pub height: u16,
    /// When to call the operator back.
    pub notify: NotifyWhen,
    pub no_color: bool,
}

/// What the answer to a request is for.
#[derive(Debug, Clone, PartialEq)]
pub enum Pending {
    /// `prompt.submit` of an echo (keyed by the request id).
    Prompt,
    /// `task.run` of an `!CMD` echo.
    Command,
    /// The conversation's history page.
    History,
    /// Older rows, paged in when scrolled up to: events up to `upto`.
    Older {
        from: u64,
        upto: u64,
    },
    /// `agent.status` after refresh signals.
    Refresh,
    Display,
    Model,
    Control(ControlAction),
    AgentCreate,
    /// `agent.status` of the agent `/agent switch` names: shown only if it
    /// exists (an unknown name is said, and nothing else changes).
    AgentSwitch(String),
    WorkCreate,
    /// `/workspace use`, or the binding made when the console opened in a
    /// directory.
    WorkspaceUse,
    WorkspaceAttach,
    WorkspaceDetach,
    /// `/context`: the prompt preview, shown as a note.
    Context,
    /// `/trigger`: the trigger view, shown as a note.
    Trigger,
    /// `/mcp`: the MCP servers, shown as a note.
    Mcp,
    /// `/approve` or `/deny`: what the answer did.
    Answer,
    /// `/approve` or `/deny` of a call waiting on another runtime (named).
    AnswerOn(String),
    /// Routed to the overlay of this kind, which matches the id.
    Overlay(super::keymap::OverlayKind),
    /// `runtime.status` before quitting: which agents are at work.
    QuitCheck,
    /// `runtime.status` of a detach waiting for running turns.
    DetachCheck,
}

/// Loading the conversation's history when an agent is shown: live events
/// wait until it has arrived, so rows stay in `event_seq` order.
#[derive(Debug)]
pub enum History {
    /// No bootstrap yet: events wait.
    Waiting {
        held: Vec<EventRecord>,
    },
    Loading {
        id: RequestId,
        /// The page asked for: events `from..=upto`.
        from: u64,
        upto: u64,
        held: Vec<EventRecord>,
    },
    Done,
}

pub struct State {
    pub agent_id: String,
    pub connection: Connection,
    /// Why the last reconnect failed, once said in the conversation (said
    /// again only when the reason changes).
    pub said_unreachable: Option<String>,
    /// The runtimes this console can show (this machine's, then the
    /// remotes), and the one it shows.
    pub runtimes: super::runtimes::Runtimes,
    pub width: u16,
    pub height: u16,
    pub notify: NotifyWhen,
    /// The terminal's focus, as it last reported it (`true` until then).
    pub focused: bool,
    pub theme: Theme,
    /// Something visible changed since the last frame.
    pub dirty: bool,
    /// Wall clock of the last tick (epoch ms).
    pub now_ms: i64,
    pub mode: DisplayMode,
    pub agent: AgentView,
    pub conversation: Conversation,
    pub composer: Composer,
    pub overlays: OverlayStack,
    /// Ctrl+O was pressed: the next key picks an overlay.
    pub prefix: bool,
    /// An `action_required` brief arrived and the operator has not
    /// answered yet.
    pub attention: bool,
    /// The directory the console runs in: `/workspace use .` and other
    /// relative paths are resolved against it.
    pub console_dir: Option<std::path::PathBuf>,
    /// Bind the agent to `console_dir` at the first bootstrap (`holon`
    /// opened in a directory; not `holon attach`).
    pub bind_on_open: bool,
    /// The "no model configured" line was shown (once per console).
    pub told_no_model: bool,
    /// The operator was told how to select text while the mouse is taken.
    pub told_mouse: bool,
    /// Quitting with work running was asked about: a second quit goes.
    pub quit_asked: bool,
    /// What the question said: kept on the composer's line while it
    /// stands, where the eye is whatever the conversation shows.
    pub quit_warning: Option<String>,
    /// When the question was asked (the first tick after it, epoch ms):
    /// unanswered for `quit::WARNING_MS`, it lapses.
    pub quit_asked_ms: Option<i64>,
    /// Quitting waits for the runtime to say which agents are at work.
    pub quit_checking: bool,
    /// Quitting waits for the runtime's answer to aborting the turn.
    pub quit_after_abort: bool,
    /// The terminal takes a clipboard write (OSC 52); not the Linux
    /// console, which prints an unknown sequence as text.
    pub clipboard: bool,
    /// Finding text in the conversation (Ctrl+F).
    pub find: Option<super::find::Find>,
    /// `/detach` waiting for running turns to end.
    pub detaching: super::detach::Detaching,
    /// `a` was pressed once on this waiting call: a second `a` approves
    /// it always (any other key forgets it).
    pub always_armed: Option<String>,
    /// Mouse capture is on (the wheel scrolls; off, the terminal selects).
    pub mouse: bool,
    /// The terminal tells Shift+Enter from Enter (kitty keyboard
    /// protocol on): hints advertise it; otherwise Alt+Enter.
    pub shift_enter: bool,
    pub(crate) next_id: RequestId,
    pub(crate) pending: HashMap<RequestId, (String, Pending)>,
    pub(crate) history: History,
    pub(crate) refresh: Option<RequestId>,
    /// The request for older rows in flight, if one is.
    pub(crate) older: Option<RequestId>,
    pub(crate) refresh_again: bool,
}

impl State {
    /// Where a key in the composer is looked up, most specific first:
    /// an empty composer answers a waiting call (`y`, `a`, `n`) and opens
    /// help (`?`).
    pub fn composer_contexts(&self) -> Vec<super::keymap::KeyContext> {
        use super::keymap::KeyContext as C;
        let mut chain = Vec::with_capacity(4);
        if self.composer.is_empty() && self.read_only().is_none() {
            if !self.composer.approvals.is_empty() {
                chain.push(C::Answer);
            }
            chain.push(C::EmptyComposer);
        }
        chain.extend([C::Global, C::Composer]);
        chain
    }

    /// Why the viewed agent takes no prompts or commands from here: a private
    /// child is steered by its parent (TaskInput on its supervising task).
    pub fn read_only(&self) -> Option<String> {
        let s = self.agent.summary.as_ref()?;
        let parent = s.identity.lineage_parent_agent_id.as_deref()?;
        (s.identity.kind == crate::protocol::types::AgentKind::Child).then(|| {
            format!(
                "{} is a private child of {parent}: read-only here. Its parent steers it through task {}; /agent switch {parent} goes back.",
                s.id,
                s.identity.supervision_task_id.as_deref().unwrap_or("?")
            )
        })
    }

    pub fn new(init: Init) -> State {
        State {
            agent_id: init.agent_id,
            connection: init.connection,
            said_unreachable: None,
            runtimes: Default::default(),
            width: init.width,
            height: init.height,
            notify: init.notify,
            focused: true,
            theme: Theme {
                no_color: init.no_color,
            },
            dirty: true,
            now_ms: 0,
            mode: DisplayMode::Info,
            agent: AgentView::default(),
            conversation: Conversation::default(),
            composer: Composer::default(),
            overlays: OverlayStack::default(),
            prefix: false,
            attention: false,
            console_dir: None,
            bind_on_open: false,
            told_no_model: false,
            told_mouse: false,
            quit_asked: false,
            quit_asked_ms: None,
            quit_warning: None,
            detaching: Default::default(),
            find: None,
            clipboard: true,
            quit_checking: false,
            quit_after_abort: false,
            always_armed: None,
            mouse: true,
            shift_enter: false,
            next_id: 0,
            pending: HashMap::new(),
            history: History::Waiting { held: Vec::new() },
            refresh: None,
            older: None,
            refresh_again: false,
        }
    }

    /// The console needs the clock: to animate, or for a quit warning to
    /// lapse.
    pub fn needs_clock(&self) -> bool {
        self.quit_asked || self.detaching.waiting || self.wants_tick()
    }

    /// True only while something animates on screen (the working spinner)
    /// or an overlay polls (following a running task's output).
    pub fn wants_tick(&self) -> bool {
        match self.overlays.top() {
            Some(top) => top.wants_tick(&self.agent),
            None => self.working().is_some_and(|w| w.animated),
        }
    }

    /// The newest `event_seq` known for the viewed agent.
    pub fn last_seq(&self) -> u64 {
        let summary = self.agent.summary.as_ref().map_or(0, |s| s.last_event_seq);
        summary.max(self.conversation.applied_seq)
    }

    pub(crate) fn scroll_ctx(&self) -> ScrollCtx {
        ScrollCtx {
            width: self.width,
            mode: self.mode,
            theme: self.theme,
        }
    }

    /// The live working row, when the agent is doing or waiting on
    /// something (hidden when idle with nothing in flight).
    pub fn working(&self) -> Option<Working> {
        let turn = self.conversation.turn.as_ref();
        let sending = self.conversation.echoes.iter().any(|e| !e.answered);
        let queued = !self.conversation.echoes.is_empty();
        use crate::model::decision::AgentSchedulingPosture as P;
        let posture = match (turn.is_some(), self.agent.posture) {
            (true, _) => Some(P::ActiveTurn),
            (false, Some(P::ActiveTurn)) if !self.agent.bootstrapped => Some(P::Idle),
            (false, p) => p,
        };
        let paused = self.agent.status == Some(crate::model::agent::AgentStatus::Paused);
        let look = posture_look(posture);
        let mut w = Working {
            label: look.label.to_owned(),
            glyph: look.glyph,
            animated: look.animated,
            needs_operator: look.needs_operator,
            detail: self.agent.posture_reason.clone(),
            elapsed_ms: None,
            tokens: 0,
        };
        if let Some(t) = turn {
            // The answer itself shows in the conversation as it streams.
            let answering = self
                .conversation
                .stream
                .as_ref()
                .is_some_and(|(_, s)| !s.trim().is_empty());
            w.detail = match (answering, &t.retry) {
                (true, _) => "answering".to_owned(),
                // Waiting on a retry: why, and for how long.
                (false, Some((notice, heard_ms))) => {
                    let waited = (self.now_ms - heard_ms).max(0) as u64;
                    let left = notice.backoff_ms.unwrap_or(0).saturating_sub(waited);
                    crate::ui::present::attempt::attempt_line(notice, Some(left))
                }
                (false, None) => t.activity.clone().unwrap_or_else(|| "thinking".to_owned()),
            };
            w.elapsed_ms = t.started_ms.map(|s| (self.now_ms - s).max(0) as u64);
            w.tokens = t.tokens;
            // The turn waits for the operator's answer to a call it asked,
            // and goes on with it.
            let awaited = (t.run_id.as_deref().filter(|_| t.awaiting))
                .and_then(|r| self.conversation.awaited_by(r));
            if let Some(what) = awaited {
                (w.label, w.glyph, w.animated, w.needs_operator) =
                    ("Needs you".into(), "▲", false, true);
                w.detail = format!("approve {what}? the turn goes on with your answer");
                // Nothing moves while it waits: no clock that would stand
                // still between frames.
                (w.elapsed_ms, w.tokens) = (None, 0);
            }
        } else if paused {
            (w.label, w.glyph, w.animated) = ("Paused".into(), "‖", false);
        } else if sending {
            (w.label, w.glyph, w.animated, w.detail) = ("Sending".into(), "", true, String::new());
        } else if matches!(posture, Some(P::Idle) | None) {
            if !queued {
                return None;
            }
            (w.label, w.glyph, w.detail) = ("Queued".into(), "…", "waiting for the agent".into());
        }
        Some(w)
    }
}

/// The working row's content.
#[derive(Debug, Clone, PartialEq)]
pub struct Working {
    pub label: String,
    pub glyph: &'static str,
    pub animated: bool,
    pub needs_operator: bool,
    pub detail: String,
    pub elapsed_ms: Option<u64>,
    /// Tokens the running turn has used so far.
    pub tokens: u64,
}

/// Where everything goes on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub status: Rect,
    pub conversation: Rect,
    pub working: Option<Rect>,
    pub menu: Option<Rect>,
    pub rule: Rect,
    pub composer: Rect,
    pub hint: Rect,
    /// Where overlays draw (between the status and hint lines).
    pub overlay: Rect,
}

pub fn layout(state: &State) -> Areas {
    layout_in(state, state.width, state.height)
}

/// The smallest screen the console draws on (below it: a hint to enlarge).
pub const MIN_SIZE: (u16, u16) = (40, 8);

/// The layout on a `w` x `h` screen (at least `MIN_SIZE`).
pub fn layout_in(state: &State, w: u16, h: u16) -> Areas {
    let (w, h) = (w.max(MIN_SIZE.0), h.max(MIN_SIZE.1));
    let full = |y: u16, height: u16| Rect {
        x: 0,
        y,
        width: w,
        height,
    };
    let (lines, _) = state.composer.layout(usize::from(w));
    let max_composer = (h / 3).clamp(1, 10);
    let composer_h = (lines.len() as u16).clamp(1, max_composer);
    let working_h = u16::from(state.working().is_some());
    let fixed = 1 + 1 + composer_h + 1 + working_h;
    let conv_h = h.saturating_sub(fixed);
    let conversation = full(1, conv_h);
    let working = (working_h == 1).then(|| full(1 + conv_h, 1));
    let rule = full(1 + conv_h + working_h, 1);
    let composer = full(rule.y + 1, composer_h);
    let hint = full(h - 1, 1);
    let menu_n = state.composer.candidates().len().min(MENU_ROWS) as u16;
    let menu = (menu_n > 0 && state.overlays.is_empty()).then(|| {
        let mh = menu_n.min(conv_h);
        full(rule.y.saturating_sub(mh), mh)
    });
    Areas {
        status: full(0, 1),
        conversation,
        working,
        menu,
        rule,
        composer,
        hint,
        overlay: full(1, h.saturating_sub(2)),
    }
}
