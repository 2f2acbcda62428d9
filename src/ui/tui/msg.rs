//! The console's contract between its pure core and its event loop.
//! `update(&mut State, Msg) -> Vec<Effect>` is pure: messages come from the
//! terminal, the runtime and a tick; effects are intents the loop performs
//! (requests through the `RuntimeClient`, subscriptions, quitting). Results
//! of requests come back as `Msg::Response` carrying the request id, so
//! stale answers can be told apart and dropped.

use crossterm::event::{KeyEvent, MouseEvent};

use crate::protocol::{AgentState, ApiError, EventRecord, Request, Response};

/// Identifies one request the core asked the loop to make.
pub type RequestId = u64;

/// How the console is connected to its runtime (shown in the status line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// The runtime runs inside this process.
    Embedded,
    /// Attached over the socket and receiving events.
    Streaming,
    /// Lost the socket; reconnecting in `in_secs`.
    Reconnecting {
        in_secs: u64,
    },
    Disconnected {
        reason: String,
    },
}

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    /// A bracketed paste: one edit, however large.
    Paste(String),
    Mouse(MouseEvent),
    Resize {
        width: u16,
        height: u16,
    },
    /// Wall clock for animations and relative times (epoch ms).
    Tick {
        now_ms: i64,
    },
    /// The bootstrap snapshot of the agent being viewed.
    Bootstrap {
        agent_id: String,
        state: Box<AgentState>,
    },
    /// A raw runtime event of the viewed agent, in `event_seq` order.
    Event(Box<EventRecord>),
    /// Streaming assistant text of the current turn (transient).
    AssistantDelta {
        agent_id: String,
        run_id: String,
        /// The run's provider attempt (0 when the runtime does not say).
        attempt: u32,
        text: String,
    },
    /// An MCP server's progress on a call of the current turn (transient).
    ToolProgress {
        agent_id: String,
        run_id: String,
        call_id: String,
        progress: crate::model::mcp::McpProgress,
    },
    /// A provider attempt of the current turn failed and the chain
    /// retries it or moves to the next model (transient).
    ProviderRetry {
        agent_id: String,
        run_id: String,
        /// The run's provider attempt that failed.
        attempt: u32,
        notice: crate::model::attempt::RetryNotice,
        /// When the console heard of it (its wait counts from then; the
        /// console's own clock stops while nothing animates).
        heard_ms: i64,
    },
    /// The answer to `Effect::Call` (boxed: an answer is large, and
    /// every key press is a `Msg` too).
    Response {
        id: RequestId,
        result: Box<Result<Response, ApiError>>,
    },
    Connection(Connection),
    /// A reconnect failed, and why (the status line keeps counting down to
    /// the next try).
    ReconnectFailed(String),
    /// What each runtime said at a glance (asked by `/runtime`, and every
    /// so often while remotes are configured).
    RuntimesSeen(Vec<super::runtimes::Glance>),
    /// The console now talks to runtime `name` (its client is in place).
    /// `embedded`: the runtime this console runs in its own process.
    RuntimeSwitched {
        name: String,
        agent_id: String,
        took_ms: u64,
        embedded: bool,
    },
    /// Switching to runtime `name` failed; the view stays where it was.
    SwitchFailed {
        name: String,
        reason: String,
    },
    /// The terminal gained (`true`) or lost focus.
    Focus(bool),
    /// The files of a root, walked for the `@` picker.
    FileIndex(std::sync::Arc<super::mention::FileIndex>),
    /// The draft as the external editor left it, or why it could not run.
    DraftEdited(Result<String, String>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Perform a request; answer with `Msg::Response { id, .. }`.
    Call { id: RequestId, request: Request },
    /// Perform a request on another runtime than the one shown (answering
    /// one of its waiting calls); answer with `Msg::Response { id, .. }`.
    CallOn {
        runtime: String,
        id: RequestId,
        request: Request,
    },
    /// Show another agent: bootstrap it and follow its events from the
    /// bootstrap's `last_event_seq + 1`.
    ViewAgent { agent_id: String },
    /// Hand the embedded runtime to a background daemon, then exit with the
    /// attach hint.
    Detach,
    /// Leave the console (an embedded runtime shuts down cleanly).
    Quit,
    /// Start no new turn in the embedded runtime (a detach waits for the
    /// running ones to end).
    HoldTurns,
    /// Call the operator back (`[console] notify`): the bell, or a
    /// desktop notification with `text` where the terminal shows one.
    Notify { text: String },
    /// Turn mouse capture on (wheel scrolls the console) or off (the
    /// terminal selects and copies text).
    Mouse(bool),
    /// Put `text` on the clipboard through the terminal (OSC 52).
    Copy { text: String },
    /// Keep a sent prompt in the agent's history across restarts.
    RememberPrompt { agent_id: String, text: String },
    /// Walk a root's files for the `@` picker; answer `Msg::FileIndex`.
    IndexFiles { root: String },
    /// Hand the draft to `$VISUAL` / `$EDITOR` (the console steps aside
    /// meanwhile); answer `Msg::DraftEdited`.
    EditDraft { text: String },
    /// Ask every runtime at a glance now; answer `Msg::RuntimesSeen`.
    GlanceRuntimes,
    /// Talk to runtime `name` from now on; answer `Msg::RuntimeSwitched`
    /// or `Msg::SwitchFailed`.
    SwitchRuntime { name: String, agent_id: String },
}
