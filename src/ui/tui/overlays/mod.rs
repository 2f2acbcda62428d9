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

/// The stack holds a handful of these, so variant sizes do not matter.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Overlay {
    Help(help::Help),
    Agents(agents::Agents),
    Transcript(transcript::Transcript),
    Tasks(tasks::Tasks),
    Work(work::WorkList),
    WorkDetail(work::WorkDetail),
    State(state_view::StateView),
    Events(events::Events),
    EventDetail(events::EventDetail),
    Workspaces(workspaces::Workspaces),
    Approvals(approvals::Approvals),
}

/// What an overlay asks of the core besides requests.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Intent {
    Close,
    Push(Overlay),
    /// Show another agent (`Effect::ViewAgent`).
    ViewAgent(String),
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
}

impl Overlay {
    pub fn kind(&self) -> OverlayKind {
        match self {
            Overlay::Help(_) => OverlayKind::Help,
            Overlay::Agents(_) => OverlayKind::Agents,
            Overlay::Transcript(_) => OverlayKind::Transcript,
            Overlay::Tasks(_) => OverlayKind::Tasks,
            Overlay::Work(_) => OverlayKind::Work,
            Overlay::WorkDetail(_) => OverlayKind::WorkDetail,
            Overlay::State(_) => OverlayKind::State,
            Overlay::Events(_) => OverlayKind::Events,
            Overlay::EventDetail(_) => OverlayKind::EventDetail,
            Overlay::Workspaces(_) => OverlayKind::Workspaces,
            Overlay::Approvals(_) => OverlayKind::Approvals,
        }
    }

    /// Open an overlay of `kind`, asking for what it needs.
    pub fn open(kind: OverlayKind, ctx: &mut Ctx<'_>) -> Overlay {
        match kind {
            OverlayKind::Help => Overlay::Help(help::Help::default()),
            OverlayKind::Agents => Overlay::Agents(agents::Agents::open(ctx)),
            OverlayKind::Transcript => Overlay::Transcript(transcript::Transcript::open(ctx)),
            OverlayKind::Tasks => Overlay::Tasks(tasks::Tasks::open(ctx)),
            OverlayKind::Work | OverlayKind::WorkDetail => Overlay::Work(work::WorkList::default()),
            OverlayKind::State => Overlay::State(state_view::StateView::open(ctx)),
            OverlayKind::Events | OverlayKind::EventDetail => {
                Overlay::Events(events::Events::open(ctx, String::new()))
            }
            OverlayKind::Workspaces => Overlay::Workspaces(workspaces::Workspaces::open(ctx)),
            OverlayKind::Approvals => Overlay::Approvals(approvals::Approvals::open(ctx)),
        }
    }

    /// The key contexts, most specific first.
    pub fn contexts(&self) -> Vec<KeyContext> {
        if self.input().is_some() {
            return vec![KeyContext::Input, KeyContext::Composer];
        }
        let own = match self {
            Overlay::Agents(_) => Some(KeyContext::Agents),
            Overlay::Tasks(_) => Some(KeyContext::Tasks),
            Overlay::Work(_) => Some(KeyContext::Work),
            Overlay::WorkDetail(_) => Some(KeyContext::WorkDetail),
            Overlay::Events(_) => Some(KeyContext::Events),
            Overlay::Workspaces(_) => Some(KeyContext::Workspaces),
            Overlay::Approvals(_) => Some(KeyContext::Approvals),
            Overlay::Help(_)
            | Overlay::Transcript(_)
            | Overlay::State(_)
            | Overlay::EventDetail(_) => None,
        };
        own.into_iter()
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

    pub fn input(&self) -> Option<&input::Input> {
        match self {
            Overlay::Agents(o) => o.input.as_ref(),
            Overlay::Tasks(o) => o.input.as_ref(),
            Overlay::Work(o) => o.input.as_ref(),
            Overlay::WorkDetail(o) => o.input.as_ref(),
            Overlay::Events(o) => o.input.as_ref(),
            Overlay::Workspaces(o) => o.input.as_ref(),
            Overlay::Approvals(o) => o.input.as_ref(),
            Overlay::Help(_)
            | Overlay::Transcript(_)
            | Overlay::State(_)
            | Overlay::EventDetail(_) => None,
        }
    }

    pub fn input_mut(&mut self) -> Option<&mut input::Input> {
        match self {
            Overlay::Agents(o) => o.input.as_mut(),
            Overlay::Tasks(o) => o.input.as_mut(),
            Overlay::Work(o) => o.input.as_mut(),
            Overlay::WorkDetail(o) => o.input.as_mut(),
            Overlay::Events(o) => o.input.as_mut(),
            Overlay::Workspaces(o) => o.input.as_mut(),
            Overlay::Approvals(o) => o.input.as_mut(),
            Overlay::Help(_)
            | Overlay::Transcript(_)
            | Overlay::State(_)
            | Overlay::EventDetail(_) => None,
        }
    }

    /// Esc on an open input line closes the line, not the overlay.
    pub fn cancel_input(&mut self) -> bool {
        let slot = match self {
            Overlay::Agents(o) => &mut o.input,
            Overlay::Tasks(o) => &mut o.input,
            Overlay::Work(o) => &mut o.input,
            Overlay::WorkDetail(o) => &mut o.input,
            Overlay::Events(o) => &mut o.input,
            Overlay::Workspaces(o) => &mut o.input,
            Overlay::Approvals(o) => &mut o.input,
            Overlay::Help(_)
            | Overlay::Transcript(_)
            | Overlay::State(_)
            | Overlay::EventDetail(_) => return false,
        };
        slot.take().is_some()
    }

    /// Enter on an open input line: the overlay acts on its value.
    pub fn confirm_input(&mut self, ctx: &mut Ctx<'_>) {
        match self {
            Overlay::Agents(o) => {
                if let Some(i) = o.input.take() {
                    o.on_input(i, ctx);
                }
            }
            Overlay::Tasks(o) => {
                if let Some(i) = o.input.take() {
                    o.on_input(i, ctx);
                }
            }
            Overlay::Work(o) => {
                if let Some(i) = o.input.take() {
                    o.on_input(i, ctx);
                }
            }
            Overlay::WorkDetail(o) => {
                if let Some(i) = o.input.take() {
                    o.on_input(i, ctx);
                }
            }
            Overlay::Events(o) => {
                if let Some(i) = o.input.take() {
                    o.on_input(i, ctx);
                }
            }
            Overlay::Workspaces(o) => {
                if let Some(i) = o.input.take() {
                    o.on_input(i, ctx);
                }
            }
            Overlay::Approvals(o) => {
                if let Some(i) = o.input.take() {
                    o.on_input(i, ctx);
                }
            }
            Overlay::Help(_)
            | Overlay::Transcript(_)
            | Overlay::State(_)
            | Overlay::EventDetail(_) => {}
        }
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        match self {
            Overlay::Help(o) => o.on_action(action, ctx),
            Overlay::Agents(o) => o.on_action(action, ctx),
            Overlay::Transcript(o) => o.on_action(action, ctx),
            Overlay::Tasks(o) => o.on_action(action, ctx),
            Overlay::Work(o) => o.on_action(action, ctx),
            Overlay::WorkDetail(o) => o.on_action(action, ctx),
            Overlay::State(o) => o.on_action(action, ctx),
            Overlay::Events(o) => o.on_action(action, ctx),
            Overlay::EventDetail(o) => o.on_action(action, ctx),
            Overlay::Workspaces(o) => o.on_action(action, ctx),
            Overlay::Approvals(o) => o.on_action(action, ctx),
        }
    }

    /// Mouse wheel: scroll by `lines`.
    pub fn scroll(&mut self, up: bool, ctx: &mut Ctx<'_>) {
        let action = if up { Action::Up } else { Action::Down };
        for _ in 0..3 {
            self.on_action(action, ctx);
        }
    }

    pub fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        match self {
            Overlay::Agents(o) => o.on_response(id, result, ctx),
            Overlay::Transcript(o) => o.on_response(id, result, ctx),
            Overlay::Tasks(o) => o.on_response(id, result, ctx),
            Overlay::Work(o) => o.status.on_response(id, result),
            Overlay::WorkDetail(o) => o.on_response(id, result),
            Overlay::State(o) => o.on_response(id, result),
            Overlay::Events(o) => o.on_response(id, result, ctx),
            Overlay::Workspaces(o) => o.on_response(id, result, ctx),
            Overlay::Approvals(o) => o.on_response(id, result, ctx),
            Overlay::Help(_) | Overlay::EventDetail(_) => {}
        }
    }

    /// A live event of the viewed agent.
    pub fn on_event(&mut self, e: &EventRecord) {
        match self {
            Overlay::Events(o) => o.on_event(e),
            Overlay::Transcript(o) => o.on_event(e),
            Overlay::Help(_)
            | Overlay::Agents(_)
            | Overlay::Tasks(_)
            | Overlay::Work(_)
            | Overlay::WorkDetail(_)
            | Overlay::State(_)
            | Overlay::EventDetail(_)
            | Overlay::Workspaces(_)
            | Overlay::Approvals(_) => {}
        }
    }

    pub fn on_tick(&mut self, ctx: &mut Ctx<'_>) {
        if let Overlay::Tasks(o) = self {
            o.on_tick(ctx);
        }
    }

    pub fn wants_tick(&self, agent: &AgentView) -> bool {
        match self {
            Overlay::Tasks(o) => o.following(agent),
            _ => false,
        }
    }

    /// Draw into `area`; returns the cursor position of an input line.
    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) -> Option<(u16, u16)> {
        let title = match self {
            Overlay::Help(_) => " Help ".to_owned(),
            Overlay::Agents(_) => " Agents ".to_owned(),
            Overlay::Transcript(_) => format!(" Transcript · {} ", look.agent_id),
            Overlay::Tasks(_) => format!(" Tasks · {} ", look.agent_id),
            Overlay::Work(_) => format!(" Work items · {} ", look.agent_id),
            Overlay::WorkDetail(_) => " Work item ".to_owned(),
            Overlay::State(_) => format!(" Agent state · {} ", look.agent_id),
            Overlay::Events(_) => format!(" Events · {} ", look.agent_id),
            Overlay::EventDetail(_) => " Event ".to_owned(),
            Overlay::Workspaces(_) => format!(" Workspaces · {} ", look.agent_id),
            Overlay::Approvals(_) => " Approvals · all agents ".to_owned(),
        };
        Clear.render(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(look.theme.dim())
            .title(Span::styled(title, look.theme.bold()));
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
        match self {
            Overlay::Help(o) => o.render(body, buf, look),
            Overlay::Agents(o) => o.render(body, buf, look),
            Overlay::Transcript(o) => o.render(body, buf, look),
            Overlay::Tasks(o) => o.render(body, buf, look),
            Overlay::Work(o) => o.render(body, buf, look),
            Overlay::WorkDetail(o) => o.render(body, buf, look),
            Overlay::State(o) => o.render(body, buf, look),
            Overlay::Events(o) => o.render(body, buf, look),
            Overlay::EventDetail(o) => o.render(body, buf, look),
            Overlay::Workspaces(o) => o.render(body, buf, look),
            Overlay::Approvals(o) => o.render(body, buf, look),
        }
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
    match result {
        Ok(r) => r
            .get::<T>()
            .ok_or_else(|| format!("unexpected answer from the runtime ({})", r.variant())),
        Err(e) => Err(e.message.clone()),
    }
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
