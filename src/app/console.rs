//! The console's event loop: the impure half of the Elm-style console.
//! It owns the terminal (raw mode, alternate screen unless
//! `--no-alt-screen`, bracketed paste, mouse), turns terminal input,
//! runtime events and ticks into `Msg`s for `ui::tui::update`, performs the
//! `Effect`s that come back through the `RuntimeClient`, and draws when the
//! state changed — at most ~60 frames a second, each inside a synchronized
//! update. `ConsoleLoop` has one short handler per source; nothing in it
//! awaits the runtime. The terminal is restored on
//! quit, on panic (hook installed before the first frame) and on
//! SIGTERM/SIGHUP. Embedded mode runs the runtime in this process and
//! serves the control socket; attached mode talks to a daemon and
//! reconnects with backoff, resuming from its last `event_seq`. How a
//! console opens, and what it says when it closes, is `console_open.rs`.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use crossterm::{execute, terminal};
use futures_util::{Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::Terminal;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use super::Context;
use crate::protocol::{ApiError, Request, RuntimeClient};
use crate::ui::tui::frame_pacer::FramePacer;
use crate::ui::tui::msg::{Connection, Effect, Msg};
use crate::ui::tui::{update, view, Init, State};
use crate::ui::ws::Endpoint;

use super::console_calls::call_once;
pub(super) use super::console_follow::follow_agent;
pub use super::console_terminal::Screen;
use super::console_terminal::{TerminalGuard, KEYBOARD_ENHANCED};

/// How the console ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Exit {
    /// The operator quit (and confirmed, when something ran).
    Quit,
    /// The operator quit an attached console while its link to the runtime
    /// was lost (reconnecting): whether it runs is not known.
    QuitUnreached,
    Detach,
    /// Gone without the operator's word: a signal, the terminal closed or
    /// failed. An embedded runtime's turns replay at the next start.
    Lost,
}

/// Whether opening the console binds the agent to the directory it runs
/// in: `holon` does (as Codex CLI and Claude Code work where they start),
/// `holon attach` from any terminal does not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BindHere {
    Yes,
    No,
}

pub(super) enum Target {
    Embedded {
        client: Arc<dyn RuntimeClient>,
        host: crate::runtime::handle::RuntimeHost,
    },
    Attached {
        client: Arc<dyn RuntimeClient>,
        endpoint: Endpoint,
    },
}

pub(super) async fn run(
    ctx: &Context,
    target: Target,
    agent_id: String,
    screen: Screen,
    bind_here: BindHere,
) -> anyhow::Result<Exit> {
    let (width, height) = terminal::size().unwrap_or((80, 24));
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let (client, socket, connection, host) = match target {
        Target::Embedded { client, host } => (client, None, Connection::Embedded, Some(host)),
        Target::Attached { client, endpoint } => {
            (client, Some(endpoint), Connection::Streaming, None)
        }
    };
    let mut state = State::new(Init {
        agent_id: agent_id.clone(),
        connection,
        width,
        height,
        notify: ctx.config.notify,
        no_color,
    });
    state.console_dir = std::env::current_dir()
        .ok()
        .map(|d| d.canonicalize().unwrap_or(d));
    state.bind_on_open = bind_here == BindHere::Yes;
    state.mouse = ctx.config.mouse;
    // Fenced code is highlighted: load the syntaxes before the first one.
    crate::ui::tui::highlight::warm();
    let history_dir = ctx.paths.data_dir.join("console-history");
    state
        .composer
        .set_history(super::prompt_history::load(&history_dir, &agent_id));
    let guard = TerminalGuard::enter(screen, state.mouse)?;
    state.shift_enter = KEYBOARD_ENHANCED.load(std::sync::atomic::Ordering::SeqCst);
    let term = std::env::var("TERM").ok();
    let links = ctx.config.hyperlinks && super::console_backend::takes_links(term.as_deref());
    state.clipboard = super::console_backend::takes_links(term.as_deref());
    let backend = super::console_backend::LinkBackend::new(std::io::stdout(), links);
    let mut terminal = Terminal::new(backend)?;
    wipe(&mut terminal)?;

    let (tx, rx) = mpsc::channel::<Msg>(4096);
    let (client_tx, client_rx) = mpsc::channel::<(u64, Arc<dyn RuntimeClient>)>(4);
    let (follow_tx, follow_rx) = mpsc::channel::<Msg>(4096);
    let follower = tokio::spawn(follow_agent(
        Arc::clone(&client),
        agent_id.clone(),
        None,
        follow_tx.clone(),
    ));
    let here = host.as_ref().map(|_| Arc::clone(&client));
    let (runtimes, places, current) =
        super::console_runtimes::Runtimes::new(ctx, here, socket.as_ref());
    state.runtimes.embedded = host.as_ref().map(|_| current.clone());
    state.runtimes.places = places;
    state.runtimes.current = current.clone();
    if socket.is_some() {
        // The connection the console opened is the shown runtime's kept one.
        runtimes.keep(&current, Arc::clone(&client));
    }
    let (glance_now, glancer) = super::console_runtimes::glancer(Arc::clone(&runtimes), tx.clone());
    let mut console = ConsoleLoop {
        state,
        terminal,
        out: Box::new(std::io::stdout()),
        synchronized: true,
        clients: tokio::sync::watch::Sender::new(Arc::clone(&client)),
        client,
        endpoint: socket,
        host,
        runtimes: Some((runtimes, glance_now)),
        viewed: agent_id,
        tx,
        client_tx,
        follower,
        follow_tx,
        follow_rx,
        generation: 0,
        reconnect_attempt: 0,
        pacer: FramePacer::default(),
        history_dir,
        notify_method: ctx.config.notify_method,
        editing: None,
        screen,
    };
    let exit = console
        .run(EventStream::new(), Some(EventStream::new), rx, client_rx)
        .await;
    console.follower.abort();
    glancer.abort();
    let ConsoleLoop {
        state, terminal, ..
    } = console;
    drop(terminal);
    drop(guard);
    if screen == Screen::Inline {
        // Inline, the conversation goes to the terminal's scrollback as
        // plain text: the session can be scrolled back and copied after.
        let width = terminal::size().map(|(w, _)| w).unwrap_or(80).max(20);
        let mut out = std::io::stdout().lock();
        for line in crate::ui::tui::transcript_lines(&state, width, TRANSCRIPT_ROWS) {
            if writeln!(out, "{line}").is_err() {
                break;
            }
        }
        let _ = out.flush();
    }
    exit
}

/// Clear the whole screen and have the next frame draw every cell. Not
/// `Terminal::clear`: that first asks the terminal where its cursor is, a
/// question some terminals never answer (the console would then fail
/// after two seconds) and whose answer the key reader may take first. A
/// full-screen resize to the size it has clears without asking.
fn wipe<B: Backend>(terminal: &mut Terminal<B>) -> Result<(), B::Error> {
    let size = terminal.size()?;
    terminal.resize(size.into())
}

/// The console's event loop: one short handler per source (terminal
/// input, runtime messages, ticks, the event stream ending, a reconnected
/// client), effects performed in one place, frames drawn at most every
/// frame (`FramePacer`) inside a synchronized update. Nothing here awaits
/// the runtime: calls and reconnects run as tasks whose results come back
/// as messages, so keys, Ctrl+C and `/quit` act within a frame, connected
/// or not. It takes its backend and its input stream, so a test drives it
/// with ratatui's `TestBackend` and a channel of terminal events.
struct ConsoleLoop<B: Backend> {
    state: State,
    terminal: Terminal<B>,
    /// Raw terminal output beside the backend: the bell, mouse capture,
    /// synchronized-update markers (stdout; a sink in tests).
    out: Box<dyn Write + Send>,
    /// Wrap each frame in a synchronized update.
    synchronized: bool,
    client: Arc<dyn RuntimeClient>,
    /// Each new client after a reconnect, for calls waiting to be sent
    /// again (a prompt whose answer the link lost).
    clients: tokio::sync::watch::Sender<Arc<dyn RuntimeClient>>,
    /// The endpoint to reconnect to (attached consoles only).
    endpoint: Option<Endpoint>,
    /// The runtime this console embeds (embedded consoles only).
    host: Option<crate::runtime::handle::RuntimeHost>,
    /// The runtimes it can show and the glancer asking them (`None` in
    /// tests without remotes).
    runtimes: Option<(Arc<super::console_runtimes::Runtimes>, mpsc::Sender<()>)>,
    viewed: String,
    tx: mpsc::Sender<Msg>,
    /// A reconnect's new client, handed over as a message of its own, with
    /// the generation it belongs to.
    client_tx: mpsc::Sender<(u64, Arc<dyn RuntimeClient>)>,
    /// Follows the viewed agent's events; ends when the stream does.
    follower: tokio::task::JoinHandle<Option<u64>>,
    /// What the follower (and its reconnects) send: a channel of its own,
    /// replaced when the view moves to another agent or runtime, so what
    /// the old one still had in flight never reaches the new view.
    follow_tx: mpsc::Sender<Msg>,
    follow_rx: mpsc::Receiver<Msg>,
    /// Raised at each switch of runtime: a reconnect's client of an older
    /// generation is the old runtime's, and is dropped.
    generation: u64,
    reconnect_attempt: u32,
    pacer: FramePacer,
    /// Where prompt history is kept, per agent (`prompt_history`).
    history_dir: std::path::PathBuf,
    /// How `Effect::Notify` calls the operator back.
    notify_method: super::config::NotifyMethod,
    /// A draft waiting to be handed to the external editor (Ctrl+G).
    editing: Option<String>,
    /// The screen the console runs on (the editor gives it back).
    screen: Screen,
}

/// What one turn of the loop produced.
enum Step {
    Msg(Msg),
    Exit(Exit),
    Nothing,
}

impl<B: Backend> ConsoleLoop<B> {
    /// Serve the console. `reopen` makes a new terminal input stream after
    /// an external editor had the terminal (`None`: no editor, as in tests
    /// without a terminal).
    async fn run<S: Stream<Item = std::io::Result<Event>> + Unpin>(
        &mut self,
        input: S,
        reopen: Option<fn() -> S>,
        mut rx: mpsc::Receiver<Msg>,
        mut client_rx: mpsc::Receiver<(u64, Arc<dyn RuntimeClient>)>,
    ) -> anyhow::Result<Exit> {
        let mut input = Some(input);
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            self.draw_if_due()?;
            let pacer = self.pacer;
            let frame_due = pacer.until_due(self.state.dirty);
            let ticking = self.state.needs_clock();
            let next_input = async {
                match input.as_mut() {
                    Some(i) => i.next().await,
                    None => std::future::pending().await,
                }
            };
            let step = tokio::select! {
                ev = next_input => {
                    let step = on_input(ev);
                    if matches!(step, Step::Msg(_)) {
                        self.pacer.input();
                    }
                    step
                }
                m = rx.recv() => m.map_or(Step::Nothing, Step::Msg),
                m = self.follow_rx.recv() => m.map_or(Step::Nothing, Step::Msg),
                _ = tick.tick(), if ticking => Step::Msg(Msg::Tick { now_ms: crate::now_ms() }),
                _ = frame_due => Step::Nothing,
                _ = term.recv() => Step::Exit(Exit::Lost),
                _ = hup.recv() => Step::Exit(Exit::Lost),
                Some((generation, c)) = client_rx.recv() => self.on_new_client(generation, c),
                resumed = &mut self.follower => self.on_stream_end(resumed.ok().flatten()),
            };
            match step {
                Step::Msg(mut msg) => {
                    // A switch is shown only once its client is in place.
                    if let Msg::RuntimeSwitched { name, .. } = &msg {
                        if !self.take_switched() {
                            let reason = "its connection was not handed over".to_owned();
                            let name = name.clone();
                            msg = Msg::SwitchFailed { name, reason };
                        }
                    }
                    let effects = update(&mut self.state, msg);
                    if let Some(exit) = self.perform(effects) {
                        return Ok(exit);
                    }
                    if let Some(draft) = self.editing.take() {
                        let signals = [&mut term, &mut hup];
                        let Some(edited) = self
                            .hand_to_editor(&mut input, reopen, draft, signals)
                            .await
                        else {
                            return Ok(Exit::Lost);
                        };
                        let effects = update(&mut self.state, Msg::DraftEdited(edited));
                        if let Some(exit) = self.perform(effects) {
                            return Ok(exit);
                        }
                    }
                }
                Step::Exit(exit) => return Ok(exit),
                Step::Nothing => {}
            }
        }
    }

    /// A switch connected: talk to the new runtime from now on (the view
    /// follows it once `update` has reset it). Nothing of the old one
    /// reaches the new view: its follower stops, a reconnect's client of
    /// the old generation is dropped, a prompt waiting to be sent again is
    /// not sent here (its runtime is no longer shown: it fails instead),
    /// and its stream is unsubscribed. `false`:
    /// no client was handed over (a switch overtaken by another).
    fn take_switched(&mut self) -> bool {
        let Some((runtimes, _)) = &self.runtimes else {
            return false;
        };
        let taken = runtimes
            .switched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some((endpoint, client)) = taken else {
            return false;
        };
        // The old runtime's kept connection stays for the next glance or
        // switch back; its stream ends with the follower (the client then
        // unsubscribes it).
        self.follower.abort();
        self.generation += 1;
        self.endpoint = endpoint;
        self.clients = tokio::sync::watch::Sender::new(Arc::clone(&client));
        self.client = client;
        self.reconnect_attempt = 0;
        true
    }

    /// Attached over the network: the runtime's files are not here.
    fn remote(&self) -> bool {
        self.endpoint.as_ref().is_some_and(Endpoint::remote)
    }

    /// Ctrl+G: drop the terminal input stream (so nothing typed into the
    /// editor is read here), let the editor have the terminal, take it
    /// back with a fresh stream, the terminal's size now and a full
    /// redraw. `None`: a SIGTERM or SIGHUP came meanwhile; the editor was
    /// stopped and the console ends.
    async fn hand_to_editor<S>(
        &mut self,
        input: &mut Option<S>,
        reopen: Option<fn() -> S>,
        draft: String,
        signals: [&mut tokio::signal::unix::Signal; 2],
    ) -> Option<Result<String, String>> {
        let Some(reopen) = reopen else {
            return Some(Err("no terminal to hand to an editor".to_owned()));
        };
        *input = None;
        let (screen, mouse) = (self.screen, self.state.mouse);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let mut editor = tokio::task::spawn_blocking(move || {
            super::console_editor::edit(screen, mouse, &draft, &stopping)
        });
        let [term, hup] = signals;
        let ended = tokio::select! {
            edited = &mut editor => Some(edited),
            _ = term.recv() => None,
            _ = hup.recv() => None,
        };
        let Some(edited) = ended else {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = editor.await;
            return None;
        };
        let edited = edited.unwrap_or_else(|e| Err(format!("the editor could not run: {e}")));
        *input = Some(reopen());
        // The terminal may have been resized while the editor had it.
        if let Ok((width, height)) = terminal::size() {
            let effects = update(&mut self.state, Msg::Resize { width, height });
            let _ = self.perform(effects);
        }
        let _ = wipe(&mut self.terminal);
        self.state.dirty = true;
        Some(edited)
    }

    fn draw_if_due(&mut self) -> std::io::Result<()> {
        if !self.pacer.may_draw(self.state.dirty) {
            return Ok(());
        }
        // One synchronized update per frame: terminals that support it
        // show the whole frame at once, never half of one.
        if self.synchronized {
            let _ = execute!(self.out, terminal::BeginSynchronizedUpdate);
        }
        let drawn = self
            .terminal
            .draw(|f| view(&self.state, f))
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string()));
        if self.synchronized {
            let _ = execute!(self.out, terminal::EndSynchronizedUpdate);
        }
        drawn?;
        self.state.dirty = false;
        self.pacer.drawn();
        Ok(())
    }

    fn on_new_client(&mut self, generation: u64, client: Arc<dyn RuntimeClient>) -> Step {
        if generation != self.generation {
            return Step::Nothing;
        }
        // The glances use it too, rather than a connection of their own.
        if let Some((runtimes, _)) = &self.runtimes {
            runtimes.keep(&self.state.runtimes.current, Arc::clone(&client));
        }
        self.clients.send_replace(Arc::clone(&client));
        self.client = client;
        self.reconnect_attempt = 0;
        Step::Nothing
    }

    /// The event stream ended: the runtime went away (attached) or the
    /// view was replaced. Reconnect with backoff, as a task, and resume
    /// from the cursor: no gap, no duplicate.
    fn on_stream_end(&mut self, next: Option<u64>) -> Step {
        let Some(endpoint) = self.endpoint.clone() else {
            return Step::Exit(Exit::Lost);
        };
        self.reconnect_attempt = self.reconnect_attempt.saturating_add(1);
        let wait =
            Duration::from_secs(1u64 << self.reconnect_attempt.min(4)).min(Duration::from_secs(10));
        let (tx, viewed, clients) = (
            self.follow_tx.clone(),
            self.viewed.clone(),
            self.client_tx.clone(),
        );
        let generation = self.generation;
        self.follower = tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            match endpoint.reconnect().await {
                Ok(c) => {
                    let c: Arc<dyn RuntimeClient> = Arc::new(c);
                    let _ = clients.send((generation, Arc::clone(&c))).await;
                    let _ = tx.send(Msg::Connection(Connection::Streaming)).await;
                    follow_agent(c, viewed, next, tx).await
                }
                Err(e) => {
                    let reason = endpoint.unreachable(&e);
                    let _ = tx.send(Msg::ReconnectFailed(reason)).await;
                    next
                }
            }
        });
        let reconnecting = Connection::Reconnecting {
            in_secs: wait.as_secs(),
        };
        Step::Msg(Msg::Connection(reconnecting))
    }

    /// Quitting: whether the link to the runtime held when the operator
    /// left (a runtime that refused the agent shown still answered).
    fn quit(&self) -> Exit {
        match self.state.connection {
            Connection::Embedded | Connection::Streaming | Connection::Disconnected { .. } => {
                Exit::Quit
            }
            Connection::Reconnecting { .. } => Exit::QuitUnreached,
        }
    }

    /// Perform what `update` asked for; `Some` when the console ends.
    fn perform(&mut self, effects: Vec<Effect>) -> Option<Exit> {
        let mut done = None;
        for effect in effects {
            match effect {
                Effect::Call { id, request } => {
                    let (clients, tx) = (self.clients.subscribe(), self.tx.clone());
                    tokio::spawn(async move {
                        let result = call_once(clients, request).await;
                        let result = Box::new(result);
                        let _ = tx.send(Msg::Response { id, result }).await;
                    });
                }
                // Attached from another machine (or a root this machine
                // does not have: a socket forwarded from elsewhere), the
                // files are the runtime's to list (`workspace.files`);
                // beside it, walked here.
                Effect::IndexFiles { root }
                    if self.remote() || !std::path::Path::new(&root).is_dir() =>
                {
                    let (client, tx) = (Arc::clone(&self.client), self.tx.clone());
                    let agent_id = self.viewed.clone();
                    tokio::spawn(async move {
                        let request = Request::WorkspaceFiles { agent_id };
                        let listed = client.call(request).await.ok().and_then(|r| match r {
                            crate::protocol::Response::WorkspaceFiles(list) => Some(list),
                            _ => None,
                        });
                        // Always answered, so the picker may ask again; no
                        // answer (an older runtime, a reconnect) is no files.
                        let list = listed.filter(|l| l.root == root);
                        let index = crate::ui::tui::mention::FileIndex {
                            root,
                            files: list.as_ref().map(|l| l.files.clone()).unwrap_or_default(),
                            truncated: list.is_some_and(|l| l.truncated),
                        };
                        let _ = tx.send(Msg::FileIndex(Arc::new(index))).await;
                    });
                }
                Effect::IndexFiles { root } => {
                    let tx = self.tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let index = walk_files(&root);
                        let _ = tx.blocking_send(Msg::FileIndex(Arc::new(index)));
                    });
                }
                Effect::RememberPrompt { agent_id, text } => {
                    if let Err(e) =
                        super::prompt_history::append(&self.history_dir, &agent_id, &text)
                    {
                        tracing::warn!(error = %e, "cannot keep the prompt in the history file");
                    }
                }
                Effect::ViewAgent { agent_id } => {
                    let history = super::prompt_history::load(&self.history_dir, &agent_id);
                    self.state.composer.set_history(history);
                    self.follower.abort();
                    self.viewed = agent_id;
                    (self.follow_tx, self.follow_rx) = mpsc::channel(4096);
                    self.follower = tokio::spawn(follow_agent(
                        Arc::clone(&self.client),
                        self.viewed.clone(),
                        None,
                        self.follow_tx.clone(),
                    ));
                }
                Effect::Notify { text } => {
                    let _ = self.out.write_all(&self.notify_method.bytes(&text));
                    let _ = self.out.flush();
                }
                Effect::Copy { text } => {
                    let _ = self.out.write_all(&osc52(&text));
                    let _ = self.out.flush();
                }
                Effect::Mouse(on) => {
                    let done = match on {
                        true => execute!(self.out, crossterm::event::EnableMouseCapture),
                        false => execute!(self.out, crossterm::event::DisableMouseCapture),
                    };
                    if let Err(e) = done {
                        tracing::warn!(error = %e, "could not switch mouse capture");
                    }
                }
                Effect::EditDraft { text } => self.editing = Some(text),
                Effect::Quit => done = Some(self.quit()),
                Effect::HoldTurns => {
                    if let Some(host) = &self.host {
                        host.hold_turns();
                    }
                }
                // An embedded console detaches its runtime, whichever
                // runtime it shows; an attached one just closes.
                Effect::Detach => {
                    done = Some(match self.host {
                        Some(_) => Exit::Detach,
                        None => self.quit(),
                    })
                }
                Effect::CallOn {
                    runtime,
                    id,
                    request,
                } => {
                    let runtimes = self.runtimes.as_ref();
                    let runtimes = runtimes.map(|(r, now)| (Arc::clone(r), now.clone()));
                    let tx = self.tx.clone();
                    tokio::spawn(async move {
                        let Some((runtimes, now)) = runtimes else {
                            let no = ApiError::transport(format!("no runtime `{runtime}` here"));
                            let result = Box::new(Err(no));
                            let _ = tx.send(Msg::Response { id, result }).await;
                            return;
                        };
                        let result = Box::new(runtimes.call_on(&runtime, request).await);
                        let _ = tx.send(Msg::Response { id, result }).await;
                        // What waits there has changed: look again.
                        let _ = now.try_send(());
                    });
                }
                Effect::GlanceRuntimes => {
                    if let Some((_, now)) = &self.runtimes {
                        let _ = now.try_send(());
                    }
                }
                Effect::SwitchRuntime { name, agent_id } => {
                    if let Some((runtimes, _)) = &self.runtimes {
                        let runtimes = Arc::clone(runtimes);
                        super::console_runtimes::switch(runtimes, name, agent_id, self.tx.clone());
                    }
                }
            }
        }
        done
    }
}

/// `text` as an OSC 52 clipboard write: base64, so nothing in it can end
/// the sequence early or reach the terminal as a control.
fn osc52(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07").into_bytes()
}

/// Files the `@` picker may walk in one root at most.
const MAX_INDEXED_FILES: usize = 200_000;

/// The files under `root`, relative to it, as git would list them (the
/// `.gitignore` files, hidden files and `.git` left out), at most
/// `MAX_INDEXED_FILES`.
fn walk_files(root: &str) -> crate::ui::tui::mention::FileIndex {
    let list =
        crate::runtime::workspace::files::walk(std::path::Path::new(root), MAX_INDEXED_FILES);
    crate::ui::tui::mention::FileIndex {
        root: root.to_owned(),
        files: list.files,
        truncated: list.truncated,
    }
}

/// A terminal event as a message (`Exit` when input is gone).
fn on_input(ev: Option<std::io::Result<Event>>) -> Step {
    match ev {
        Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => Step::Msg(Msg::Key(k)),
        Some(Ok(Event::Paste(p))) => Step::Msg(Msg::Paste(p)),
        Some(Ok(Event::Mouse(m))) => Step::Msg(Msg::Mouse(m)),
        Some(Ok(Event::FocusGained)) => Step::Msg(Msg::Focus(true)),
        Some(Ok(Event::FocusLost)) => Step::Msg(Msg::Focus(false)),
        Some(Ok(Event::Resize(w, h))) => Step::Msg(Msg::Resize {
            width: w,
            height: h,
        }),
        Some(Ok(_)) => Step::Nothing,
        Some(Err(e)) => {
            tracing::error!(error = %e, "terminal input failed");
            Step::Exit(Exit::Lost)
        }
        None => Step::Exit(Exit::Lost),
    }
}

/// Conversation rows an inline console leaves in the scrollback at exit.
const TRANSCRIPT_ROWS: usize = 2000;

#[cfg(test)]
#[path = "console_tests.rs"]
mod tests;
