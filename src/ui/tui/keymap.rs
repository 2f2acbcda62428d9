//! Keys and slash commands as data: two tables in presentation order, each
//! entry with its description, availability while a turn runs and
//! visibility. Key resolution, the help overlay, the completion menu, the
//! key-hint line and `docs/keymap.md` are all generated from them.
//!
//! Overlays open with a prefix (Ctrl+O, then a letter), so typing in the
//! composer is never hijacked.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a key binding applies. Resolution tries the most specific context
/// first (an overlay's own keys, then list keys, then global keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyContext {
    Global,
    Composer,
    /// The composer is empty (a key there types nothing yet).
    EmptyComposer,
    /// The composer is empty and a tool call waits for the operator.
    Answer,
    /// After the overlay prefix (Ctrl+O).
    Prefix,
    /// Any overlay (lists, scrolling, closing).
    Overlay,
    Agents,
    Tasks,
    Work,
    WorkDetail,
    Events,
    Workspaces,
    Approvals,
    /// A one-line input inside an overlay.
    Input,
}

impl KeyContext {
    pub fn title(self) -> &'static str {
        match self {
            KeyContext::Global => "Everywhere",
            KeyContext::Composer => "Composer",
            KeyContext::EmptyComposer => "Composer, while empty",
            KeyContext::Answer => "A tool call waits for your approval (composer empty)",
            KeyContext::Prefix => "Overlays (press Ctrl+O, then)",
            KeyContext::Overlay => "In any overlay",
            KeyContext::Agents => "Agents overlay",
            KeyContext::Tasks => "Tasks overlay",
            KeyContext::Work => "Work items overlay",
            KeyContext::WorkDetail => "Work item detail",
            KeyContext::Events => "Events inspector",
            KeyContext::Workspaces => "Workspaces overlay",
            KeyContext::Approvals => "Approvals overlay",
            KeyContext::Input => "Input line in an overlay",
        }
    }
}

/// Which overlay an action opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OverlayKind {
    Help,
    Agents,
    Transcript,
    Tasks,
    Work,
    WorkDetail,
    State,
    Events,
    EventDetail,
    Workspaces,
    Approvals,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Prefix,
    Cancel,
    ScrollUp,
    ScrollDown,
    ScrollTop,
    ScrollBottom,
    Submit,
    Newline,
    HistoryPrev,
    HistoryNext,
    HistorySearch,
    /// Find text in the conversation.
    Find,
    /// Edit the draft in `$VISUAL` / `$EDITOR`.
    ExternalEditor,
    Complete,
    Left,
    Right,
    LineStart,
    LineEnd,
    WordLeft,
    WordRight,
    DeleteBack,
    DeleteForward,
    KillToEnd,
    KillToStart,
    KillWord,
    Yank,
    Open(OverlayKind),
    CycleDisplay,
    Runtimes,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Select,
    Refresh,
    NewAgent,
    Follow,
    StopTask,
    TaskInput,
    AddWork,
    PickWork,
    CompleteWork,
    EditBlocker,
    FilterKind,
    FilterCategory,
    FilterVisibility,
    JumpSeq,
    Earlier,
    Later,
    Confirm,
    Isolate,
    AttachWorkspace,
    DetachWorkspace,
    Approve,
    ApproveAlways,
    Deny,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chord {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const fn key(code: KeyCode) -> Chord {
    Chord {
        code,
        mods: KeyModifiers::NONE,
    }
}

const fn ctrl(c: char) -> Chord {
    Chord {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
    }
}

const fn alt(c: char) -> Chord {
    Chord {
        code: KeyCode::Char(c),
        mods: KeyModifiers::ALT,
    }
}

const fn ch(c: char) -> Chord {
    key(KeyCode::Char(c))
}

const fn with(code: KeyCode, mods: KeyModifiers) -> Chord {
    Chord { code, mods }
}

pub struct KeyBinding {
    pub context: KeyContext,
    pub chords: &'static [Chord],
    /// How the keys read in help and hints.
    pub keys: &'static str,
    pub action: Action,
    pub description: &'static str,
    /// Its word in the one-line key hint (empty: not shown there).
    pub hint: &'static str,
}

const fn bind(
    context: KeyContext,
    chords: &'static [Chord],
    keys: &'static str,
    action: Action,
    description: &'static str,
    hint: &'static str,
) -> KeyBinding {
    KeyBinding {
        context,
        chords,
        keys,
        action,
        description,
        hint,
    }
}

use Action as A;
use KeyCode as K;
use KeyContext as C;
use OverlayKind as O;

/// Every key binding, in presentation order.
#[rustfmt::skip]
pub static KEYS: &[KeyBinding] = &[
    bind(C::Global, &[ctrl('c')], "Ctrl+C", A::Quit, "clear the composer; quit when it is empty (in an overlay: close it)", "quit"),
    bind(C::Global, &[ctrl('o')], "Ctrl+O", A::Prefix, "overlay prefix: then a letter opens an overlay", "overlays"),
    bind(C::Global, &[key(K::Esc)], "Esc", A::Cancel, "close the top overlay or the menu; else return to the bottom when scrolled back; else interrupt the running turn", ""),
    bind(C::Global, &[key(K::PageUp)], "PgUp", A::ScrollUp, "scroll the conversation back (also the mouse wheel)", "scroll"),
    bind(C::Global, &[key(K::PageDown)], "PgDn", A::ScrollDown, "scroll forward; at the end, follow new rows", ""),
    bind(C::Global, &[with(K::Home, KeyModifiers::CONTROL)], "Ctrl+Home", A::ScrollTop, "jump to the oldest row", ""),
    bind(C::Global, &[with(K::End, KeyModifiers::CONTROL)], "Ctrl+End", A::ScrollBottom, "jump to the newest row and follow", ""),
    bind(C::Composer, &[key(K::Enter)], "Enter", A::Submit, "send the prompt, run `!CMD` or a `/command`", "send"),
    bind(C::Composer, &[with(K::Enter, KeyModifiers::SHIFT), with(K::Enter, KeyModifiers::ALT), ctrl('j')], "Shift+Enter / Alt+Enter / Ctrl+J", A::Newline, "insert a newline", "newline"),
    bind(C::Composer, &[key(K::Up)], "Up", A::HistoryPrev, "previous line, else the previous prompt in history", ""),
    bind(C::Composer, &[key(K::Down)], "Down", A::HistoryNext, "next line, else the next prompt in history", ""),
    bind(C::Composer, &[ctrl('g')], "Ctrl+G", A::ExternalEditor, "edit the whole draft (pasted text expanded) in $VISUAL or $EDITOR; saving and quitting puts it back", ""),
    bind(C::Composer, &[ctrl('r')], "Ctrl+R", A::HistorySearch, "search the prompt history (kept per agent across restarts): type to narrow, Ctrl+R for older, Enter keeps the match, Esc goes back", ""),
    bind(C::Composer, &[key(K::Tab)], "Tab", A::Complete, "complete the slash command or its argument", ""),
    bind(C::Composer, &[key(K::Left), ctrl('b')], "Left / Ctrl+B", A::Left, "back one character", ""),
    bind(C::Composer, &[key(K::Right), ctrl('f')], "Right / Ctrl+F", A::Right, "forward one character", ""),
    bind(C::Composer, &[key(K::Home), ctrl('a')], "Home / Ctrl+A", A::LineStart, "start of the line", ""),
    bind(C::Composer, &[key(K::End), ctrl('e')], "End / Ctrl+E", A::LineEnd, "end of the line", ""),
    bind(C::Composer, &[alt('b'), with(K::Left, KeyModifiers::CONTROL)], "Alt+B / Ctrl+Left", A::WordLeft, "back one word", ""),
    bind(C::Composer, &[alt('f'), with(K::Right, KeyModifiers::CONTROL)], "Alt+F / Ctrl+Right", A::WordRight, "forward one word", ""),
    bind(C::Composer, &[key(K::Backspace), ctrl('h')], "Backspace", A::DeleteBack, "delete the character before the cursor", ""),
    bind(C::Composer, &[key(K::Delete), ctrl('d')], "Delete / Ctrl+D", A::DeleteForward, "delete the character under the cursor", ""),
    bind(C::Composer, &[ctrl('k')], "Ctrl+K", A::KillToEnd, "cut to the end of the line", ""),
    bind(C::Composer, &[ctrl('u')], "Ctrl+U", A::KillToStart, "cut to the start of the line", ""),
    bind(C::Composer, &[ctrl('w'), with(K::Backspace, KeyModifiers::ALT)], "Ctrl+W / Alt+Backspace", A::KillWord, "cut the word before the cursor", ""),
    bind(C::Composer, &[ctrl('y')], "Ctrl+Y", A::Yank, "paste the last cut text", ""),
    bind(C::EmptyComposer, &[ctrl('f')], "Ctrl+F", A::Find, "find text in the whole conversation (also `/find TEXT`; older turns are paged in from the runtime): type it, Enter finds the newest match, then n the next older, N the next newer (while a match is shown, n is not an approval's deny), Esc closes; matches on screen are marked", ""),
    bind(C::EmptyComposer, &[ch('?')], "?", A::Open(O::Help), "help: keys and commands (after any other character `?` types itself)", ""),
    bind(C::Answer, &[ch('y')], "y", A::Approve, "approve the marked waiting call once (the one the running turn waits for, else the oldest): it runs, its result goes to the agent, in that same turn while it waits", "approve"),
    bind(C::Answer, &[ch('a')], "a a", A::ApproveAlways, "pressed twice: approve it, and allow calls like it from now on (the row names the rule)", "always"),
    bind(C::Answer, &[ch('n')], "n", A::Deny, "deny it: types `/deny ID ` for your note, Enter sends", "deny"),
    bind(C::Prefix, &[ch('h'), ch('?')], "h / ?", A::Open(O::Help), "help: keys and commands", "help"),
    bind(C::Prefix, &[ch('a')], "a", A::Open(O::Agents), "agents", "agents"),
    bind(C::Prefix, &[ch('t')], "t", A::Open(O::Tasks), "tasks", "tasks"),
    bind(C::Prefix, &[ch('w')], "w", A::Open(O::Work), "work items", "work"),
    bind(C::Prefix, &[ch('s')], "s", A::Open(O::State), "agent state: why is it idle?", "state"),
    bind(C::Prefix, &[ch('e')], "e", A::Open(O::Events), "events inspector", "events"),
    bind(C::Prefix, &[ch('r')], "r", A::Open(O::Transcript), "transcript", "transcript"),
    bind(C::Prefix, &[ch('p')], "p", A::Open(O::Workspaces), "workspaces: where the agent works", "workspaces"),
    bind(C::Prefix, &[ch('y')], "y", A::Open(O::Approvals), "approvals: tool calls waiting for you, across agents", "approvals"),
    bind(C::Prefix, &[ch('d')], "d", A::CycleDisplay, "next display mode (info, verbose, debug)", "display"),
    bind(C::Prefix, &[ch('m')], "m", A::Runtimes, "runtimes: this machine's and the remotes at a glance (as /runtime)", "runtimes"),
    bind(C::Overlay, &[key(K::Esc)], "Esc", A::Cancel, "close this overlay (the one below shows again)", "close"),
    bind(C::Overlay, &[key(K::Up), ch('k')], "Up / k", A::Up, "previous entry", "move"),
    bind(C::Overlay, &[key(K::Down), ch('j')], "Down / j", A::Down, "next entry", ""),
    bind(C::Overlay, &[key(K::PageUp)], "PgUp", A::PageUp, "page up (also the mouse wheel)", "page"),
    bind(C::Overlay, &[key(K::PageDown)], "PgDn", A::PageDown, "page down", ""),
    bind(C::Overlay, &[key(K::Home), ch('g')], "Home / g", A::Home, "first entry", ""),
    bind(C::Overlay, &[key(K::End), ch('G')], "End / G", A::End, "last entry", ""),
    bind(C::Overlay, &[key(K::Enter)], "Enter", A::Select, "open the selected entry", ""),
    bind(C::Agents, &[key(K::Enter)], "Enter", A::Select, "switch to the selected agent", "switch"),
    bind(C::Agents, &[ch('n')], "n", A::NewAgent, "create an agent", "new"),
    bind(C::Agents, &[ch('r')], "r", A::Refresh, "refresh", "refresh"),
    bind(C::Agents, &[ch('/')], "/", A::FilterKind, "only agents whose id contains some text", "filter"),
    bind(C::Tasks, &[key(K::Enter)], "Enter", A::Select, "show the selected task's output", "output"),
    bind(C::Tasks, &[ch('f')], "f", A::Follow, "follow the output while the task runs", "follow"),
    bind(C::Tasks, &[ch('s')], "s", A::StopTask, "stop the task", "stop"),
    bind(C::Tasks, &[ch('i')], "i", A::TaskInput, "send a line of input to the task", "input"),
    bind(C::Tasks, &[ch('[')], "[", A::Earlier, "scroll the output back", "earlier"),
    bind(C::Tasks, &[ch(']')], "]", A::Later, "scroll the output forward", "later"),
    bind(C::Tasks, &[ch('r')], "r", A::Refresh, "refresh", ""),
    bind(C::Work, &[key(K::Enter)], "Enter", A::Select, "show the work item", "detail"),
    bind(C::Work, &[ch('a')], "a", A::AddWork, "add a work item", "add"),
    bind(C::Work, &[ch('p')], "p", A::PickWork, "pick it as the current focus", "pick"),
    bind(C::Work, &[ch('c')], "c", A::CompleteWork, "complete it with a note", "complete"),
    bind(C::Work, &[ch('b')], "b", A::EditBlocker, "set or clear its blocker", "blocker"),
    bind(C::WorkDetail, &[ch('p')], "p", A::PickWork, "pick it as the current focus", "pick"),
    bind(C::WorkDetail, &[ch('c')], "c", A::CompleteWork, "complete it with a note", "complete"),
    bind(C::WorkDetail, &[ch('b')], "b", A::EditBlocker, "set or clear its blocker", "blocker"),
    bind(C::Events, &[ch('/')], "/", A::FilterKind, "filter the loaded events by kind text", "kind"),
    bind(C::Events, &[ch('c')], "c", A::FilterCategory, "next category filter", "category"),
    bind(C::Events, &[ch('v')], "v", A::FilterVisibility, "next minimum visibility", "visibility"),
    bind(C::Events, &[ch(':')], ":", A::JumpSeq, "jump to an event_seq", "seq"),
    bind(C::Events, &[ch('[')], "[", A::Earlier, "load the earlier page", ""),
    bind(C::Events, &[ch(']')], "]", A::Later, "load the later page", ""),
    bind(C::Events, &[ch('f')], "f", A::Follow, "follow the live tail", "follow"),
    bind(C::Events, &[key(K::Enter)], "Enter", A::Select, "open the event as JSON", "JSON"),
    bind(C::Approvals, &[ch('a')], "a", A::Approve, "approve: the call runs, its result goes to the agent", "approve"),
    bind(C::Approvals, &[ch('A')], "A", A::ApproveAlways, "approve, and allow calls like it from now on", "always"),
    bind(C::Approvals, &[ch('d')], "d", A::Deny, "deny, with a note for the agent", "deny"),
    bind(C::Approvals, &[ch('r')], "r", A::Refresh, "refresh", "refresh"),
    bind(C::Workspaces, &[key(K::Enter)], "Enter", A::Select, "work in the selected workspace directly", "use"),
    bind(C::Workspaces, &[ch('i')], "i", A::Isolate, "enter isolated mode (a managed git worktree), or leave it", "isolated"),
    bind(C::Workspaces, &[ch('a')], "a", A::AttachWorkspace, "attach a directory", "attach"),
    bind(C::Workspaces, &[ch('d')], "d", A::DetachWorkspace, "detach the selected workspace (never the active one)", "detach"),
    bind(C::Workspaces, &[ch('r')], "r", A::Refresh, "refresh", ""),
    bind(C::Input, &[key(K::Enter)], "Enter", A::Confirm, "confirm", "confirm"),
    bind(C::Input, &[key(K::Esc)], "Esc", A::Cancel, "cancel the input (the overlay stays)", "cancel"),
];

/// Normalise a key event: shifted letters arrive with SHIFT set; the
/// character already says it.
fn normalise(key: &KeyEvent) -> Chord {
    let mut mods = key.modifiers;
    if let KeyCode::Char(_) = key.code {
        mods.remove(KeyModifiers::SHIFT);
    }
    if let KeyCode::BackTab = key.code {
        mods.remove(KeyModifiers::SHIFT);
    }
    Chord {
        code: key.code,
        mods,
    }
}

/// The action of `key` in the first context of `chain` that binds it.
pub fn resolve(chain: &[KeyContext], key: &KeyEvent) -> Option<Action> {
    let chord = normalise(key);
    chain.iter().find_map(|ctx| {
        KEYS.iter()
            .filter(|b| b.context == *ctx)
            .find(|b| b.chords.contains(&chord))
            .map(|b| b.action)
    })
}

/// The one-line hint of a context: its `hint` bindings.
pub fn hint(contexts: &[KeyContext]) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for ctx in contexts {
        for b in KEYS
            .iter()
            .filter(|b| b.context == *ctx && !b.hint.is_empty())
        {
            if !out.iter().any(|(k, _)| *k == b.keys) {
                out.push((b.keys, b.hint));
            }
        }
    }
    out
}

// ---- slash commands ------------------------------------------------------

/// Whether a command makes sense while a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhileRunning {
    Available,
    /// Accepted now, takes effect from the next turn.
    NextTurn,
    /// Only meaningful while a turn runs.
    OnlyWhileRunning,
}

impl WhileRunning {
    pub fn label(self) -> &'static str {
        match self {
            WhileRunning::Available => "any time",
            WhileRunning::NextTurn => "applies from the next turn",
            WhileRunning::OnlyWhileRunning => "only while a turn runs",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Help,
    Agents,
    Agent,
    Events,
    Transcript,
    Tasks,
    Work,
    State,
    Display,
    Model,
    Status,
    Pause,
    Resume,
    Stop,
    Wake,
    Abort,
    Interject,
    Next,
    Detach,
    Quit,
    Workspace,
    Mouse,
    Context,
    Trigger,
    Mcp,
    Approvals,
    Approve,
    Deny,
    Find,
    Copy,
    Runtime,
}

pub struct SlashCommand {
    pub name: &'static str,
    pub usage: &'static str,
    pub description: &'static str,
    pub while_running: WhileRunning,
    /// Listed in help and the menu (aliases are not).
    pub listed: bool,
    /// Completions of the first argument.
    pub choices: &'static [&'static str],
    pub command: Command,
}

const fn cmd(
    name: &'static str,
    usage: &'static str,
    description: &'static str,
    while_running: WhileRunning,
    choices: &'static [&'static str],
    command: Command,
) -> SlashCommand {
    SlashCommand {
        name,
        usage,
        description,
        while_running,
        listed: true,
        choices,
        command,
    }
}

const fn alias(name: &'static str, command: Command) -> SlashCommand {
    SlashCommand {
        name,
        usage: "",
        description: "",
        while_running: WhileRunning::Available,
        listed: false,
        choices: &[],
        command,
    }
}

use WhileRunning as W;

/// Every slash command, in presentation order.
#[rustfmt::skip]
pub static COMMANDS: &[SlashCommand] = &[
    cmd("help", "", "keys and commands", W::Available, &[], Command::Help),
    cmd("display", "[info|verbose|debug|3|4|5]", "what the conversation shows (kept per agent)", W::Available, &["info", "verbose", "debug"], Command::Display),
    cmd("agents", "", "public agents with their posture and children; switch or create", W::Available, &[], Command::Agents),
    cmd("agent", "new NAME [--template ID] | switch NAME", "create an agent (from a template), or show another one (a child opens read-only)", W::Available, &["new", "switch"], Command::Agent),
    cmd("tasks", "", "tasks: status, live output, stop, input", W::Available, &[], Command::Tasks),
    cmd("work", "[add OBJECTIVE]", "work items; `add` creates one", W::Available, &["add"], Command::Work),
    cmd("state", "", "status, posture, closure, last decision: why is it idle?", W::Available, &[], Command::State),
    cmd("workspace", "[use PATH|ID [--isolated] | attach PATH | detach ID]", "where the agent works: list, use (direct or isolated), attach, detach", W::NextTurn, &["use", "attach", "detach"], Command::Workspace),
    cmd("find", "[TEXT]", "find text in the whole conversation (as Ctrl+F): the newest match, then n older, N newer, Esc closes", W::Available, &[], Command::Find),
    cmd("copy", "", "copy the newest answer (or the row find shows) to the clipboard, through the terminal (OSC 52): no mouse selection needed", W::Available, &[], Command::Copy),
    cmd("context", "", "the prompt frame: what the next turn sends, its size against the window, what was compacted", W::Available, &[], Command::Context),
    cmd("approvals", "", "tool calls waiting for your approval, across agents", W::Available, &[], Command::Approvals),
    cmd("approve", "ID [--always]", "run a waiting tool call (--always: and calls like it from now on)", W::Available, &[], Command::Approve),
    cmd("deny", "ID [NOTE]", "refuse a waiting tool call; the agent is told, with your note", W::Available, &[], Command::Deny),
    cmd("trigger", "[rotate|revoke]", "the agent's wake URL for CI and webhooks, its deliveries and open waits", W::Available, &["rotate", "revoke"], Command::Trigger),
    cmd("mcp", "", "MCP servers: state, and the tools they offer the model", W::Available, &[], Command::Mcp),
    cmd("runtime", "[NAME [AGENT]]", "the runtimes this console reaches (this machine's and [remotes.NAME]) at a glance; NAME switches to one (AGENT: and shows that agent there)", W::Available, &[], Command::Runtime),
    cmd("events", "[KIND]", "the raw event inspector", W::Available, &[], Command::Events),
    cmd("transcript", "", "prompts, assistant rounds, tool calls and results", W::Available, &[], Command::Transcript),
    cmd("model", "[PROVIDER/MODEL|default] [EFFORT]", "show or set the agent's model and reasoning effort (minimal, low, medium, high; auto: the configured one)", W::NextTurn, &["default", "high", "auto"], Command::Model),
    cmd("status", "", "this session: model and effort, context use, tokens, cost, today against the budget", W::Available, &[], Command::Status),
    cmd("pause", "", "pause: admitted input waits until resume", W::Available, &[], Command::Pause),
    cmd("resume", "", "resume a paused or stopped agent", W::Available, &[], Command::Resume),
    cmd("stop", "", "stop the agent (it refuses input until resumed)", W::Available, &[], Command::Stop),
    cmd("wake", "", "wake a sleeping agent now", W::Available, &[], Command::Wake),
    cmd("abort", "", "abort the running turn at its next safe point", W::OnlyWhileRunning, &[], Command::Abort),
    cmd("interject", "TEXT", "send TEXT into the running turn at its next safe point (else first in line)", W::Available, &[], Command::Interject),
    cmd("next", "TEXT", "send TEXT ahead of normal prompts, after the current step", W::Available, &[], Command::Next),
    cmd("mouse", "[on|off]", "mouse capture: off lets the terminal select and copy text (on, Shift+drag selects in most terminals; the first drag says so)", W::Available, &["on", "off"], Command::Mouse),
    cmd("detach", "", "leave the agent running in a background daemon; with a turn running, it waits for the turn to end (no model call paid twice), and Esc then detaches at once", W::Available, &[], Command::Detach),
    cmd("quit", "", "leave the console (embedded, with any agent at work: says what stops, asks once; attached, it says the runtime keeps running, or that the link to it was lost)", W::Available, &[], Command::Quit),
    alias("exit", Command::Quit),
    alias("?", Command::Help),
];

pub fn command(name: &str) -> Option<&'static SlashCommand> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Listed commands whose name starts with `prefix`, in table order.
/// The listed commands `typed` finds: those it begins, then those that
/// contain it, then those that hold its letters in order (`evt` finds
/// `events`), each group in table order.
pub fn matching(typed: &str) -> Vec<&'static SlashCommand> {
    let typed = typed.to_lowercase();
    let rank = |name: &str| -> Option<u8> {
        if name.starts_with(&typed) {
            Some(0)
        } else if name.contains(&typed) {
            Some(1)
        } else {
            let mut rest = name.chars();
            typed.chars().all(|c| rest.any(|n| n == c)).then_some(2)
        }
    };
    let mut found: Vec<(u8, usize, &'static SlashCommand)> = COMMANDS
        .iter()
        .enumerate()
        .filter(|(_, c)| c.listed)
        .filter_map(|(i, c)| rank(c.name).map(|r| (r, i, c)))
        .collect();
    found.sort_by_key(|(r, i, _)| (*r, *i));
    found.into_iter().map(|(_, _, c)| c).collect()
}

/// `docs/keymap.md`, generated from the tables.
pub fn reference_markdown() -> String {
    let mut out = String::from(
        "# Console keys and commands\n\n\
         Generated from `src/ui/tui/keymap.rs` (the one table the help overlay,\n\
         the completion menu and the key hints are built from); the test\n\
         `keymap_doc_is_current` fails when this page drifts. Regenerate with\n\
         `UPDATE_KEYMAP_DOC=1 cargo test --lib ui::tui::tests::overlay_flows::keymap_doc_is_current`.\n\n\
         Overlays open with a prefix (Ctrl+O, then a letter) or a slash command,\n\
         so typing in the composer is never taken over. They form a stack: Esc\n\
         closes the top one first.\n\n## Slash commands\n\n\
         | command | what it does | while a turn runs |\n|---|---|---|\n",
    );
    for c in COMMANDS.iter().filter(|c| c.listed) {
        let usage = match c.usage.is_empty() {
            true => format!("`/{}`", c.name),
            false => format!("`/{} {}`", c.name, c.usage),
        };
        let usage = usage.replace('|', "\\|");
        out.push_str(&format!(
            "| {usage} | {} | {} |\n",
            c.description,
            c.while_running.label()
        ));
    }
    out.push_str("\nAlso: `!CMD` runs CMD as an operator command task in the agent's execution root\n(never sandboxed: the operator's own commands, like `task.run`, are not confined);\nany other text is a prompt (`//text` sends one that starts with `/`). An unknown\n`/command` gets a hint; the slash menu finds commands by prefix, then by letters in\norder (`/evt`); Enter runs a command the text begins and completes one matched by letters\n(the next Enter runs it).\n`@` and letters open a fuzzy file picker over the agent's execution root (walked\nonce, `.gitignore` honoured; a console attached from another machine, or whose\nmachine lacks that root, asks the runtime for them): Tab or Enter puts `@path` in the prompt. A paste over\n1,000 characters or 10 lines shows as one `[pasted N lines · M chars]` placeholder\nand is sent whole.\n");
    out.push_str(OVERLAYS);
    let contexts = [
        C::Global,
        C::Composer,
        C::EmptyComposer,
        C::Answer,
        C::Prefix,
        C::Overlay,
        C::Agents,
        C::Tasks,
        C::Work,
        C::WorkDetail,
        C::Events,
        C::Workspaces,
        C::Approvals,
        C::Input,
    ];
    for ctx in contexts {
        out.push_str(&format!(
            "\n## {}\n\n| keys | action |\n|---|---|\n",
            ctx.title()
        ));
        for b in KEYS.iter().filter(|b| b.context == ctx) {
            let keys = b.keys.replace('|', "\\|");
            out.push_str(&format!("| {keys} | {} |\n", b.description));
        }
    }
    out
}

/// What each overlay shows and where its data comes from (for the docs).
const OVERLAYS: &str = "
## Overlays

- **help**: generated from this table.
- **agents**: `agents.list` (posture, reason, queue, tasks, work per agent); Enter
  shows one (`Effect::ViewAgent`), `n` creates one with `agent.create`.
- **tasks**: the agent's tasks from the `agent.state` bootstrap kept current by
  `task_*` events, a row each: the end of its id (what tells tasks made a moment
  apart from each other; the output's title names it whole), who started it,
  the command, how it stands or ended; the selected task's output through
  `task.output`, re-fetched every second while following a running task; stop
  with `task.stop`, a line of input with `task.input` (a finished task takes
  neither, and says so).
- **work items**: grouped current, runnable, waiting for you, blocked, completed
  (bootstrap plus `work_item_*` events); detail with objective, plan status,
  checklist, blocker, revision and result; add, pick, complete with a note and
  edit the blocker through `work_item.*`. The detail shows the start of the plan
  (`plan.md` in the agent home, served by `agent.state` as `plan_preview`).
- **agent state**: status, derived posture and reason, closure, the last
  scheduler decision with its evidence, opened by a plain answer to \"why is this
  agent idle?\" (a fresh `agent.state`).
- **transcript**: rebuilt from the event ledger with `events.page` (the API does
  not serve the runtime's transcript table): each turn's trigger, the operator's
  full message, every assistant round (text preview, requested tools), every
  tool call with its arguments and recorded result preview (600 characters),
  the brief and runtime failures. Opens on the latest 2,000 events, follows new
  ones, loads the earlier page when scrolled past its top.
- **events**: every raw event with its presentation (event_seq, time,
  visibility, kind, category, summary) in a window of up to 5,000 events paged
  with `events.page`: the tail (followed live), any `event_seq` (`:`), the first
  page (`g`), the pages around the window (`[`, `]`, or moving past its ends).
  Filters (kind text, category, minimum visibility) apply to the loaded window.
  Enter opens the event as pretty JSON.
- **workspaces**: `workspace.list`: AgentHome and every attached workspace, the
  active one marked, with the execution root, cwd and mode on top and kept
  worktrees below; Enter uses one directly, `i` enters isolated mode (a managed
  git worktree) or leaves it, `a` attaches a directory, `d` detaches one, all
  through `workspace.*`.
- **approvals**: `approvals.list` across agents: each waiting call with its
  agent, tool, command or files, why the policy asks, workspace and time; `a`
  approves (`approval.approve`: the call runs, its result goes to the agent),
  `A` approves and extends the workspace's allow-list, `d` denies with a note
  (`approval.deny`). The first answer wins; a console that answered second
  shows the runtime's \"already answered\". In the conversation, a waiting
  call's row shows the command (or the patch as a coloured diff), why the policy
  asks and what \"always\" would allow; with the composer empty `y`, `a` and `n`
  answer the oldest one, and `/approve`, `/deny` complete waiting ids with Tab.
  The answer (from any terminal) turns the row into `✓ approved …` or
  `✗ denied: NOTE` and clears the banner when nothing else waits.
";

/// The contexts the help overlay lists, in order.
pub const HELP_CONTEXTS: &[KeyContext] = &[
    C::Global,
    C::Composer,
    C::EmptyComposer,
    C::Answer,
    C::Prefix,
    C::Overlay,
    C::Agents,
    C::Tasks,
    C::Work,
    C::Events,
    C::Workspaces,
    C::Approvals,
    C::Input,
];
