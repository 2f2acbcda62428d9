//! Overlays: a stack drawn over the conversation; only the top one gets
//! keys and `Esc` closes it first. Each overlay is its own module with a
//! pure `on_action` (keys already resolved through the key table) that
//! returns intents, `on_response` for the answers to its own requests
//! (matched by request id: an answer to a request it no longer awaits is
//! dropped), and a `render` that only draws.
//!
//! Overlays never perform I/O: they ask through `Ctx::call`, which the
//! core turns into `Effect::Call` and routes the answer back here.

pub mod agents;
pub mod approvals;
pub mod events;
pub mod help;
pub mod input;
pub mod stack;
pub mod state_view;
pub mod tasks;
pub mod transcript;
pub mod work;
pub mod workspaces;

use std::cell::Cell;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::keymap::{Action, KeyContext, OverlayKind};
use super::msg::RequestId;
use super::projection::AgentView;
use super::rows::Tone;
use super::theme::Theme;
use super::wrap::{fit, truncate};
use crate::protocol::{ApiError, EventRecord, Request, Response};

/// One overlay: its keys, its view and what it asks for, behind one
/// trait. Only what every overlay must decide is required (its kind,
/// title, keys and drawing); the rest defaults to "none": an input line,
/// answers to requests, live events and ticks are for the overlays that
/// have them. What is common to all (key contexts, the input line's Esc
/// and Enter, scrolling, the frame) is written once, on `dyn OverlayView`.
pub trait OverlayView: std::fmt::Debug {
    fn kind(&self) -> OverlayKind;
    /// The title in the frame.
    fn title(&self, look: &Look<'_>) -> String;
    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>);
    /// Draw the body into `area` (inside the frame, above an input line).
    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>);

    /// The overlay's own key context, when it has keys of its own.
    fn context(&self) -> Option<KeyContext> {
        None
    }

    /// The open input line, for overlays that have one.
    fn input(&self) -> Option<&input::Input> {
        None
    }

    /// Where an input line lives, for overlays that have one.
    fn input_slot(&mut self) -> Option<&mut Option<input::Input>> {
        None
    }

    /// Enter on the input line: act on its value.
    fn on_input(&mut self, _input: input::Input, _ctx: &mut Ctx<'_>) {}

    /// The answer to a request this overlay made.
    fn on_response(
        &mut self,
        _id: RequestId,
        _result: &Result<Response, ApiError>,
        _ctx: &mut Ctx<'_>,
    ) {
    }

    /// A live event of the viewed agent.
    fn on_event(&mut self, _e: &EventRecord) {}

    fn on_tick(&mut self, _ctx: &mut Ctx<'_>) {}

    /// Whether it needs ticks while open (following a running task).
    fn wants_tick(&self, _agent: &AgentView) -> bool {
        false
    }
}

/// The input-line methods of an overlay whose `input: Option<Input>`
/// field is its line and whose own `on_input` acts on a confirmed value.
macro_rules! input_line {
    ($overlay:ty) => {
        fn input(&self) -> Option<&Input> {
            self.input.as_ref()
        }

        fn input_slot(&mut self) -> Option<&mut Option<Input>> {
            Some(&mut self.input)
        }

        fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
            <$overlay>::on_input(self, input, ctx)
        }
    };
}
pub(crate) use input_line;

/// An open overlay, as the stack holds it.
pub type Overlay = Box<dyn OverlayView>;

/// Open an overlay of `kind`, asking for what it needs.
pub fn open(kind: OverlayKind, ctx: &mut Ctx<'_>) -> Overlay {
    match kind {
        OverlayKind::Help => Box::new(help::Help::default()),
        OverlayKind::Agents => Box::new(agents::Agents::open(ctx, Vec::new())),
        OverlayKind::Transcript => Box::new(transcript::Transcript::open(ctx)),
        OverlayKind::Tasks => Box::new(tasks::Tasks::open(ctx)),
        OverlayKind::Work | OverlayKind::WorkDetail => Box::new(work::WorkList::default()),
        OverlayKind::State => Box::new(state_view::StateView::open(ctx)),
        OverlayKind::Events | OverlayKind::EventDetail => {
            Box::new(events::Events::open(ctx, String::new()))
        }
        OverlayKind::Workspaces => Box::new(workspaces::Workspaces::open(ctx)),
        OverlayKind::Approvals => Box::new(approvals::Approvals::open(ctx, Vec::new())),
    }
}

/// What an overlay asks of the core besides requests.
#[derive(Debug)]
pub enum Intent {
    Close,
    Push(Overlay),
    /// Show another agent (`Effect::ViewAgent`).
    ViewAgent(String),
    /// Show another runtime's agent (`/runtime NAME AGENT`).
    SwitchRuntime {
        name: String,
        agent: String,
    },
    /// Answer a call waiting on another runtime (`Effect::CallOn`); what
    /// it did is said in the conversation.
    AnswerOn {
        runtime: String,
        request: Request,
    },
}

/// What overlays get while handling keys and answers: read access to the
/// agent's projection and a way to ask for requests.
pub struct Ctx<'a> {
    pub agent_id: &'a str,
    pub agent: &'a AgentView,
    /// The newest `event_seq` seen for this agent.
    pub last_seq: u64,
    pub now_ms: i64,
    /// Lines of the overlay's body (for paging).
    pub page: usize,
    next_id: &'a mut RequestId,
    pub calls: Vec<(RequestId, Request, OverlayKind)>,
    pub intents: Vec<Intent>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        agent_id: &'a str,
        agent: &'a AgentView,
        last_seq: u64,
        now_ms: i64,
        page: usize,
        next_id: &'a mut RequestId,
    ) -> Ctx<'a> {
        Ctx {
            agent_id,
            agent,
            last_seq,
            now_ms,
            page,
            next_id,
            calls: Vec::new(),
            intents: Vec::new(),
        }
    }

    /// Ask for `request`; its answer comes back to the overlay of `kind`.
    pub fn call(&mut self, kind: OverlayKind, request: Request) -> RequestId {
        *self.next_id += 1;
        let id = *self.next_id;
        self.calls.push((id, request, kind));
        id
    }
}

/// What overlays get while drawing.
pub struct Look<'a> {
    pub agent_id: &'a str,
    pub agent: &'a AgentView,
    pub theme: Theme,
    pub now_ms: i64,
    /// The runtimes this console knows, and what they last said.
    pub runtimes: &'a super::runtimes::Runtimes,
}

impl dyn OverlayView {
    /// The key contexts, most specific first.
    pub fn contexts(&self) -> Vec<KeyContext> {
        if self.input().is_some() {
            return vec![KeyContext::Input, KeyContext::Composer];
        }
        self.context()
            .into_iter()
            .chain([KeyContext::Overlay, KeyContext::Global])
            .collect()
    }

    /// The contexts whose keys the hint line shows.
    pub fn hint_contexts(&self) -> Vec<KeyContext> {
        match self.input() {
            Some(_) => vec![KeyContext::Input],
            None => self
                .contexts()
                .into_iter()
                .filter(|c| *c != KeyContext::Global)
                .collect(),
        }
    }

    pub fn input_mut(&mut self) -> Option<&mut input::Input> {
        self.input_slot().and_then(Option::as_mut)
    }

    /// Esc on an open input line closes the line, not the overlay.
    pub fn cancel_input(&mut self) -> bool {
        self.input_slot().is_some_and(|slot| slot.take().is_some())
    }

    /// Enter on an open input line: the overlay acts on its value.
    pub fn confirm_input(&mut self, ctx: &mut Ctx<'_>) {
        if let Some(input) = self.input_slot().and_then(Option::take) {
            self.on_input(input, ctx);
        }
    }

    /// Mouse wheel: scroll by three lines.
    pub fn scroll(&mut self, up: bool, ctx: &mut Ctx<'_>) {
        let action = if up { Action::Up } else { Action::Down };
        for _ in 0..3 {
            self.on_action(action, ctx);
        }
    }

    /// Draw the frame, the body and the input line into `area`; returns
    /// the cursor position of an input line.
    pub fn draw(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) -> Option<(u16, u16)> {
        Clear.render(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(look.theme.dim())
            .title(Span::styled(self.title(look), look.theme.bold()));
        let inner = block.inner(area);
        block.render(area, buf);
        let inner = Rect {
            x: inner.x + 1,
            width: inner.width.saturating_sub(2),
            ..inner
        };
        let (body, input_area) = match self.input() {
            Some(_) if inner.height > 2 => {
                let body = Rect {
                    height: inner.height - 1,
                    ..inner
                };
                let line = Rect {
                    y: inner.y + inner.height - 1,
                    height: 1,
                    ..inner
                };
                (body, Some(line))
            }
            _ => (inner, None),
        };
        self.render(body, buf, look);
        match (self.input(), input_area) {
            (Some(i), Some(a)) => Some(i.render(a, buf, look.theme)),
            _ => None,
        }
    }
}

// ---- shared pieces ---------------------------------------------------------

/// A selection in a list, with the first shown line remembered between
/// frames so the view scrolls only when the selection leaves it.
#[derive(Debug, Default)]
pub struct ListPos {
    pub selected: usize,
    offset: Cell<usize>,
}

impl ListPos {
    pub fn on_action(&mut self, action: Action, len: usize, page: usize) -> bool {
        let last = len.saturating_sub(1);
        self.selected = match action {
            Action::Up => self.selected.saturating_sub(1),
            Action::Down => (self.selected + 1).min(last),
            Action::PageUp => self.selected.saturating_sub(page.max(1)),
            Action::PageDown => (self.selected + page.max(1)).min(last),
            Action::Home => 0,
            Action::End => last,
            _ => return false,
        };
        true
    }

    pub fn clamp(&mut self, len: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
    }

    /// The first index to show so `selected` is in a window of `height`.
    pub fn window(&self, len: usize, height: usize) -> usize {
        self.window_at(self.selected, len, height)
    }

    /// As `window`, for a selection the caller tracks (by id).
    pub fn window_at(&self, selected: usize, len: usize, height: usize) -> usize {
        let mut off = self.offset.get();
        if selected < off {
            off = selected;
        } else if height > 0 && selected >= off + height {
            off = selected + 1 - height;
        }
        off = off.min(len.saturating_sub(height.max(1)));
        self.offset.set(off);
        off
    }
}

/// A one-line outcome message at the bottom of an overlay (e.g. "Picked.",
/// or the error of a request), tied to the request it reports on.
#[derive(Debug, Default)]
pub struct Status {
    awaiting: Vec<(RequestId, &'static str)>,
    pub message: Option<(String, Tone)>,
}

impl Status {
    /// Remember `id`; on success the status reads `done`.
    pub fn wait(&mut self, id: RequestId, done: &'static str) {
        self.awaiting.push((id, done));
        self.message = Some(("…".to_owned(), Tone::Info));
    }

    pub fn on_response(&mut self, id: RequestId, result: &Result<Response, ApiError>) {
        let Some(i) = self.awaiting.iter().position(|(r, _)| *r == id) else {
            return;
        };
        let (_, done) = self.awaiting.remove(i);
        self.message = Some(match result {
            Ok(_) => (done.to_owned(), Tone::Ok),
            Err(e) => (e.message.clone(), Tone::Error),
        });
    }

    /// Draw the message, if any, on the last line of `area`.
    pub fn draw_last(&self, area: Rect, buf: &mut Buffer, theme: Theme) {
        if let Some(line) = self.line(theme) {
            let y = area.y + area.height.saturating_sub(1);
            buf.set_line(area.x + 1, y, &line, area.width.saturating_sub(1));
        }
    }

    pub fn line(&self, theme: Theme) -> Option<Line<'static>> {
        let (text, tone) = self.message.as_ref()?;
        let style = match tone {
            Tone::Info => theme.dim(),
            Tone::Ok => theme.ok(),
            Tone::Error => theme.err(),
        };
        Some(Line::from(Span::styled(text.clone(), style)))
    }
}

/// What `result` answers, as the type its request answers with; a server
/// error, or an answer of another type, as the words to show.
pub fn answer<T: 'static>(result: &Result<Response, ApiError>) -> Result<&T, String> {
    let got = result.as_ref().map_err(Clone::clone);
    got.and_then(Response::get::<T>).map_err(|e| e.message)
}

/// A list overlay's answer to its list request: the list (selection kept
/// in range), or the error as the status line.
pub fn load_list<T: Clone + 'static>(
    result: &Result<Response, ApiError>,
    list: &mut Option<Vec<T>>,
    pos: &mut ListPos,
    status: &mut Status,
) {
    match answer::<Vec<T>>(result) {
        Ok(items) => {
            *list = Some(items.clone());
            pos.clamp(items.len());
        }
        Err(e) => status.message = Some((e, Tone::Error)),
    }
}

/// Draw `lines` top-down in `area`, each cut to the width.
pub fn draw_lines(area: Rect, buf: &mut Buffer, lines: &[Line<'_>]) {
    for (i, line) in lines.iter().take(usize::from(area.height)).enumerate() {
        buf.set_line(area.x, area.y + i as u16, line, area.width);
    }
}

/// Draw one row of a list, highlighted when selected.
pub fn draw_row(
    area: Rect,
    buf: &mut Buffer,
    y: u16,
    line: &Line<'_>,
    selected: bool,
    theme: Theme,
) {
    let row = Rect {
        y,
        height: 1,
        ..area
    };
    if selected {
        buf.set_style(row, theme.selected());
        let marker = Span::styled("▸", theme.selected());
        buf.set_span(area.x, y, &marker, 1);
    }
    buf.set_line(area.x + 1, y, line, area.width.saturating_sub(1));
    if selected {
        buf.set_style(row, theme.selected());
    }
}

/// A section header inside an overlay.
pub fn header(text: &str, theme: Theme) -> Line<'static> {
    Line::from(Span::styled(text.to_owned(), theme.bold()))
}

/// `label  value`: the label dim and padded to `label_w`, the value
/// wrapped under itself within `width`.
pub fn field(
    label: &str,
    value: &str,
    label_w: usize,
    width: usize,
    theme: Theme,
) -> Vec<Line<'static>> {
    let indent = label.len() - label.trim_start().len();
    let label = format!(
        "{}{}",
        " ".repeat(indent),
        fit(label.trim_start(), label_w.saturating_sub(indent))
    );
    let first = [Span::styled(label, theme.dim())];
    let rest = [Span::raw(" ".repeat(label_w))];
    let value = Span::styled(truncate(value, 2000), Style::default());
    super::wrap::wrap(&[value], width, &first, &rest)
}

/// The vertical split of an overlay body: a list on top, a detail pane
/// under it (when there is room).
pub fn split(area: Rect, detail: u16) -> (Rect, Option<Rect>) {
    if area.height < detail + 4 {
        return (area, None);
    }
    let list = Rect {
        height: area.height - detail - 1,
        ..area
    };
    let sep = area.y + list.height;
    let pane = Rect {
        y: sep + 1,
        height: detail,
        ..area
    };
    (list, Some(pane))
}

/// A dim horizontal rule across `area` at `y`.
pub fn rule(area: Rect, buf: &mut Buffer, y: u16, theme: Theme) {
    let line = Line::from(Span::styled(
        "─".repeat(usize::from(area.width)),
        theme.dim(),
    ));
    buf.set_line(area.x, y, &line, area.width);
}
