//! The `/events` inspector: raw events with their presentation, one row
//! each (event_seq, time, visibility, kind, category, summary).
//!
//! It holds a contiguous window of at most `WINDOW_MAX` events, loaded by
//! `events.page`: the tail when opened (and followed live), any page from
//! any `event_seq` (`:`), the first page (`g`), and the pages before and
//! after the window (`[`, `]`, or moving past its ends). Filters (kind
//! text, category, minimum visibility) apply to the loaded window; the
//! filtered index is kept incrementally, so a frame costs the rows on
//! screen whatever the window holds. Enter opens one event as JSON.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::fmt::{clock, thousands};
use super::super::keymap::{Action, KeyContext, OverlayKind};
use super::super::msg::RequestId;
use super::super::theme::Theme;
use super::super::wrap::{fit, fit_right, sanitize, truncate};
use super::input::{Input, Purpose};
use super::{answer, draw_lines, draw_row, Ctx, Intent, ListPos, Look};
use crate::protocol::{ApiError, EventRecord, EventsPage, Request, Response};
use crate::ui::present::{present, Category, OperatorEvent, Visibility};

/// Events per `events.page` request.
pub const PAGE: usize = 500;
/// Most events the window holds.
pub const WINDOW_MAX: usize = 5000;

#[derive(Debug, Clone)]
pub struct Entry {
    pub event: EventRecord,
    pub op: OperatorEvent,
}

impl Entry {
    pub fn new(event: EventRecord) -> Entry {
        let op = present(&event);
        Entry { event, op }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Load {
    /// Replace the window; select its first (or last) row.
    Replace {
        select_last: bool,
    },
    Earlier,
    Later,
}

#[derive(Debug, Default)]
pub struct Events {
    pub input: Option<Input>,
    entries: Vec<Entry>,
    /// Indices into `entries` that pass the filters.
    filtered: Vec<usize>,
    pos: ListPos,
    pub kind_text: String,
    pub category: Option<Category>,
    /// Show events of this visibility or more operator-facing.
    pub min_visibility: Option<Visibility>,
    pub follow: bool,
    awaiting: Option<(RequestId, Load)>,
    /// The newest `event_seq` of the agent, as last reported.
    last_seq: u64,
    /// Where the agent's ledger starts when retention cut it (events
    /// before it were pruned); 0 until a page says so.
    pruned_before: u64,
    error: Option<String>,
}

impl Events {
    pub fn open(ctx: &mut Ctx<'_>, kind_text: String) -> Events {
        let mut e = Events {
            kind_text,
            follow: true,
            last_seq: ctx.last_seq,
            ..Events::default()
        };
        e.tail(ctx);
        e
    }

    /// A window already loaded (tests, benchmarks).
    pub fn with(events: Vec<EventRecord>, following: bool) -> Events {
        let mut e = Events {
            follow: following,
            ..Events::default()
        };
        e.last_seq = events.last().map_or(0, |x| x.event_seq);
        e.entries = events.into_iter().map(Entry::new).collect();
        e.refilter(true);
        e
    }

    fn request(&mut self, ctx: &mut Ctx<'_>, from_seq: u64, load: Load) {
        let request = Request::EventsPage {
            agent_id: ctx.agent_id.to_owned(),
            from_seq: from_seq.max(1),
            limit: PAGE,
            kind: None,
        };
        self.awaiting = Some((ctx.call(OverlayKind::Events, request), load));
    }

    fn tail(&mut self, ctx: &mut Ctx<'_>) {
        let last = self.last_seq.max(ctx.last_seq);
        let from = last.saturating_sub(PAGE as u64 - 1);
        self.request(ctx, from, Load::Replace { select_last: true });
    }

    /// The oldest `event_seq` the agent still has.
    fn first_seq(&self) -> u64 {
        self.pruned_before.max(1)
    }

    fn lo(&self) -> u64 {
        self.entries.first().map_or(0, |e| e.event.event_seq)
    }

    fn hi(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.event.event_seq)
    }

    fn passes(&self, e: &Entry) -> bool {
        let kind = self.kind_text.trim();
        (kind.is_empty() || e.event.kind.contains(kind))
            && self.category.is_none_or(|c| e.op.category == c)
            && self.min_visibility.is_none_or(|v| e.op.visibility <= v)
    }

    /// Rebuild the filtered index, keeping the selected event if it still
    /// passes (else the nearest one), or selecting the last row.
    fn refilter(&mut self, select_last: bool) {
        let keep = self.selected_entry().map(|e| e.event.event_seq);
        self.filtered = (0..self.entries.len())
            .filter(|&i| self.passes(&self.entries[i]))
            .collect();
        let last = self.filtered.len().saturating_sub(1);
        self.pos.selected = match (select_last, keep) {
            (true, _) | (false, None) => last,
            (false, Some(seq)) => self
                .filtered
                .iter()
                .position(|&i| self.entries[i].event.event_seq >= seq)
                .unwrap_or(last),
        };
    }

    fn selected_entry(&self) -> Option<&Entry> {
        let i = *self.filtered.get(self.pos.selected)?;
        self.entries.get(i)
    }

    pub fn on_event(&mut self, e: &EventRecord) {
        self.last_seq = self.last_seq.max(e.event_seq);
        if !self.follow || e.event_seq <= self.hi() {
            return;
        }
        if !self.entries.is_empty() && e.event_seq != self.hi() + 1 {
            return; // not contiguous: the window is not at the tail
        }
        let at_end = self.pos.selected + 1 >= self.filtered.len();
        let entry = Entry::new(e.clone());
        if self.passes(&entry) {
            self.filtered.push(self.entries.len());
        }
        self.entries.push(entry);
        if self.entries.len() > WINDOW_MAX + PAGE {
            // Trim a page at a time, so a storm does not refilter per event.
            let cut = self.entries.len() - WINDOW_MAX;
            self.entries.drain(..cut);
            self.refilter(at_end);
        } else if at_end {
            self.pos.selected = self.filtered.len().saturating_sub(1);
        }
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let len = self.filtered.len();
        let at_top = self.pos.selected == 0;
        let at_end = self.pos.selected + 1 >= len;
        match action {
            Action::Up | Action::PageUp if at_top && self.lo() > self.first_seq() => {
                self.earlier(ctx)
            }
            Action::Down | Action::PageDown if at_end && self.hi() < self.last_seq => {
                self.request(ctx, self.hi() + 1, Load::Later)
            }
            Action::Home => {
                self.follow = false;
                self.request(ctx, 1, Load::Replace { select_last: false });
            }
            Action::End | Action::Follow => {
                self.follow = action == Action::End || !self.follow;
                if self.follow {
                    self.tail(ctx);
                }
            }
            Action::Earlier => self.earlier(ctx),
            Action::Later => self.request(ctx, self.hi() + 1, Load::Later),
            Action::FilterKind => {
                let kind = self.kind_text.clone();
                self.input = Some(Input::new("Kind contains", Purpose::FilterKind, &kind));
            }
            Action::JumpSeq => {
                self.input = Some(Input::new("Go to event_seq", Purpose::JumpSeq, ""))
            }
            Action::FilterCategory => {
                let all = Category::ALL;
                self.category = match self.category {
                    None => all.first().copied(),
                    Some(c) => all.iter().skip_while(|x| **x != c).nth(1).copied(),
                };
                self.refilter(false);
            }
            Action::FilterVisibility => {
                // All, then trace..action_required, narrowing each press.
                self.min_visibility = match self.min_visibility {
                    None => Some(Visibility::Progress),
                    Some(Visibility::Progress) => Some(Visibility::TurnResult),
                    Some(Visibility::TurnResult) => Some(Visibility::WorkDone),
                    Some(Visibility::WorkDone) => Some(Visibility::ActionRequired),
                    Some(Visibility::ActionRequired) | Some(Visibility::Trace) => None,
                };
                self.refilter(false);
            }
            Action::Select => {
                if let Some(e) = self.selected_entry() {
                    let detail = EventDetail::new(e);
                    ctx.intents.push(Intent::Push(Box::new(detail)));
                }
            }
            _ => {
                let before = self.pos.selected;
                self.pos.on_action(action, len, ctx.page);
                if self.pos.selected < before {
                    self.follow = false;
                }
            }
        }
    }

    fn earlier(&mut self, ctx: &mut Ctx<'_>) {
        if self.lo() > self.first_seq() {
            let from = self.lo().saturating_sub(PAGE as u64);
            self.request(ctx, from, Load::Earlier);
        }
    }

    pub fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        match input.purpose {
            Purpose::FilterKind => {
                self.kind_text = input.value();
                self.refilter(false);
            }
            Purpose::JumpSeq => match input.value().replace(',', "").parse::<u64>() {
                Ok(seq) => {
                    self.follow = false;
                    self.request(ctx, seq, Load::Replace { select_last: false });
                }
                Err(_) => self.error = Some(format!("`{}` is not an event_seq", input.value())),
            },
            Purpose::NewAgent
            | Purpose::AddWork
            | Purpose::CompleteWork { .. }
            | Purpose::Blocker { .. }
            | Purpose::TaskInput { .. }
            | Purpose::AttachWorkspace
            | Purpose::DenyNote { .. } => {}
        }
    }

    pub fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        _ctx: &mut Ctx<'_>,
    ) {
        let Some((awaited, load)) = self.awaiting else {
            return;
        };
        if awaited != id {
            return;
        }
        self.awaiting = None;
        let answered = match answer::<EventsPage>(result) {
            Ok(page) => page,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        self.error = None;
        self.last_seq = self.last_seq.max(answered.last_event_seq);
        if let Some(n) = answered.pruned_before {
            self.pruned_before = n;
        }
        let page: Vec<Entry> = answered.events.iter().cloned().map(Entry::new).collect();
        match load {
            Load::Replace { select_last } => {
                self.entries = page;
                self.pos.selected = 0;
                self.filtered.clear();
                self.refilter(select_last);
                if !select_last {
                    self.pos.selected = 0;
                }
            }
            Load::Earlier => {
                let lo = self.lo();
                let keep = self.selected_entry().map(|e| e.event.event_seq);
                let mut older: Vec<Entry> = page
                    .into_iter()
                    .filter(|e| e.event.event_seq < lo)
                    .collect();
                older.append(&mut self.entries);
                older.truncate(WINDOW_MAX);
                if older.last().map(|e| e.event.event_seq) < Some(self.last_seq) {
                    self.follow = false;
                }
                self.entries = older;
                self.refilter(false);
                if keep.is_some() {
                    // Move to the row before the one that was selected.
                    self.pos.selected = self.pos.selected.saturating_sub(1);
                }
            }
            Load::Later => {
                let hi = self.hi();
                let at_end = true;
                self.entries
                    .extend(page.into_iter().filter(|e| e.event.event_seq > hi));
                if self.entries.len() > WINDOW_MAX {
                    let cut = self.entries.len() - WINDOW_MAX;
                    self.entries.drain(..cut);
                }
                let keep = self.pos.selected;
                self.refilter(false);
                self.pos.selected =
                    (keep + usize::from(at_end)).min(self.filtered.len().saturating_sub(1));
            }
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        let w = usize::from(area.width).saturating_sub(1);
        let mut y = area.y;
        buf.set_line(
            area.x + 1,
            y,
            &self.filter_line(t),
            area.width.saturating_sub(1),
        );
        y += 1;
        let footer = 2u16;
        let rows_h = usize::from(area.height.saturating_sub(2 + footer));
        let first = self.pos.window(self.filtered.len(), rows_h);
        let shown = || {
            self.filtered
                .iter()
                .skip(first)
                .take(rows_h)
                .map(|&i| &self.entries[i])
        };
        let kind_max = shown().map(|e| e.event.kind.len()).max().unwrap_or(0);
        let category_max = shown()
            .map(|e| e.op.category.as_str().len())
            .max()
            .unwrap_or(0);
        let cols = Columns::new(w, self.hi(), kind_max, category_max);
        buf.set_line(area.x + 1, y, &cols.header(t), area.width.saturating_sub(1));
        y += 1;
        if self.filtered.is_empty() {
            let msg = match (
                &self.error,
                self.awaiting.is_some(),
                self.entries.is_empty(),
            ) {
                (Some(e), _, _) => format!("! {e}"),
                (None, true, _) => "Loading events…".to_owned(),
                (None, false, true) => "No events.".to_owned(),
                (None, false, false) => {
                    "No loaded event passes the filters ([ loads earlier ones).".to_owned()
                }
            };
            buf.set_line(
                area.x + 1,
                y,
                &Line::from(Span::styled(msg, t.dim())),
                area.width,
            );
            return;
        }
        for (n, &i) in self.filtered.iter().enumerate().skip(first).take(rows_h) {
            let line = cols.row(&self.entries[i], t);
            draw_row(
                area,
                buf,
                y + (n - first) as u16,
                &line,
                n == self.pos.selected,
                t,
            );
        }
        let foot = Rect {
            y: area.y + area.height.saturating_sub(footer),
            height: footer,
            ..area
        };
        if let Some(e) = self.selected_entry() {
            let detail = format!(
                " {} · {} · {} — Enter: JSON",
                e.op.visibility, e.op.category, e.op.title
            );
            let summary = Line::from(Span::raw(format!(" {}", truncate(&e.op.summary, w))));
            let lines = [
                Line::from(Span::styled(truncate(&detail, w), t.dim())),
                summary,
            ];
            draw_lines(foot, buf, &lines);
        }
    }

    fn filter_line(&self, t: Theme) -> Line<'static> {
        let mut filters: Vec<String> = Vec::new();
        if !self.kind_text.trim().is_empty() {
            filters.push(format!("kind ~ “{}”", self.kind_text.trim()));
        }
        if let Some(c) = self.category {
            filters.push(format!("category {c}"));
        }
        if let Some(v) = self.min_visibility {
            filters.push(format!("visibility ≤ {v} ({})", v.level()));
        }
        let filters = match filters.is_empty() {
            true => "no filter".to_owned(),
            false => filters.join(" · "),
        };
        let range = match self.entries.is_empty() {
            true => "nothing loaded".to_owned(),
            false => format!(
                "{}/{} shown · #{}–{} of {}",
                thousands(self.filtered.len() as u64),
                thousands(self.entries.len() as u64),
                thousands(self.lo()),
                thousands(self.hi()),
                thousands(self.last_seq.max(self.hi()))
            ),
        };
        let follow = if self.follow { " · following" } else { "" };
        Line::from(vec![
            Span::styled(filters, t.accent()),
            Span::styled(format!(" · {range}{follow}"), t.dim()),
        ])
    }
}

/// Column widths for the inspector at one width.
struct Columns {
    seq: usize,
    vis: usize,
    kind: usize,
    category: usize,
    summary: usize,
}

/// The summary's room before a wider layout gives up a column.
const SUMMARY_MIN: usize = 48;

impl Columns {
    /// Columns as wide as the rows on screen need (kind and category),
    /// the visibility and category columns given up, in that order, when
    /// the summary would get less than `SUMMARY_MIN` columns.
    fn new(w: usize, hi: u64, kind_max: usize, category_max: usize) -> Columns {
        let seq = thousands(hi).len().max(3);
        let kind = (kind_max + 1).clamp(8, 27);
        let layouts = [(16, category_max + 1), (2, category_max + 1), (2, 0)];
        let fits = |&(vis, category): &(usize, usize)| {
            let fixed = seq + 1 + 9 + vis + kind + category;
            Columns {
                seq,
                vis,
                kind,
                category,
                summary: w.saturating_sub(fixed + 1).max(10),
            }
        };
        layouts
            .iter()
            .map(fits)
            .find(|c| c.summary >= SUMMARY_MIN)
            .unwrap_or_else(|| fits(&(2, 0)))
    }

    fn header(&self, t: Theme) -> Line<'static> {
        let vis = if self.vis > 2 {
            fit("visibility", self.vis)
        } else {
            "v ".into()
        };
        let cat = if self.category > 0 {
            fit("category", self.category)
        } else {
            String::new()
        };
        let text = format!(
            "{} {} {vis}{}{cat}{}",
            fit_right("seq", self.seq),
            fit("time", 8),
            fit("kind", self.kind),
            "summary"
        );
        Line::from(Span::styled(text, t.dim()))
    }

    fn row(&self, e: &Entry, t: Theme) -> Line<'static> {
        let vis = match self.vis > 2 {
            true => fit(e.op.visibility.as_str(), self.vis),
            false => format!("{} ", e.op.visibility.level()),
        };
        let style = match e.op.visibility {
            Visibility::ActionRequired => t.attention(),
            Visibility::Trace => t.dim(),
            Visibility::WorkDone | Visibility::TurnResult | Visibility::Progress => t.text(),
        };
        let mut spans = vec![
            Span::styled(fit_right(&thousands(e.event.event_seq), self.seq), t.dim()),
            Span::raw(" "),
            Span::styled(fit(&clock(&e.event.ts), 9), t.dim()),
            Span::styled(vis, style),
            Span::styled(fit(&e.event.kind, self.kind - 1), t.accent()),
            Span::raw(" "),
        ];
        if self.category > 0 {
            spans.push(Span::styled(
                fit(e.op.category.as_str(), self.category - 1) + " ",
                t.dim(),
            ));
        }
        spans.push(Span::styled(truncate(&e.op.summary, self.summary), style));
        Line::from(spans)
    }
}

/// One event as pretty JSON, with its presentation on top.
#[derive(Debug, Default)]
pub struct EventDetail {
    lines: Vec<String>,
    head: Vec<String>,
    top: usize,
}

impl EventDetail {
    pub fn new(e: &Entry) -> EventDetail {
        let json = serde_json::to_string_pretty(&e.event).unwrap_or_else(|err| err.to_string());
        let head = vec![
            format!("#{} {} · {}", e.event.event_seq, e.event.kind, e.event.ts),
            format!("{} · {} · {}", e.op.visibility, e.op.category, e.op.summary),
        ];
        EventDetail {
            lines: sanitize(&json).lines().map(str::to_owned).collect(),
            head,
            top: 0,
        }
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let max = self.lines.len().saturating_sub(1);
        self.top = match action {
            Action::Up => self.top.saturating_sub(1),
            Action::Down => self.top + 1,
            Action::PageUp => self.top.saturating_sub(ctx.page),
            Action::PageDown => self.top + ctx.page,
            Action::Home => 0,
            Action::End => max,
            _ => self.top,
        }
        .min(max);
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        let w = usize::from(area.width).saturating_sub(1);
        let mut lines: Vec<Line> = self
            .head
            .iter()
            .map(|h| Line::from(Span::styled(truncate(h, w), t.bold())))
            .collect();
        lines.push(Line::default());
        let room = usize::from(area.height).saturating_sub(lines.len());
        let top = self.top.min(self.lines.len().saturating_sub(room));
        for l in self.lines.iter().skip(top).take(room) {
            lines.push(Line::from(Span::raw(truncate_keep(l, w))));
        }
        draw_lines(area, buf, &lines);
    }
}

/// Cut a JSON line to `w` columns without collapsing its indentation.
fn truncate_keep(l: &str, w: usize) -> String {
    let indent = l.len() - l.trim_start().len();
    let rest = truncate(l.trim_start(), w.saturating_sub(indent));
    format!("{}{rest}", " ".repeat(indent))
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for Events {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Events
    }

    fn title(&self, look: &Look<'_>) -> String {
        match self.pruned_before {
            n if n > 1 => format!(" Events · {} · pruned before seq {n} ", look.agent_id),
            _ => format!(" Events · {} ", look.agent_id),
        }
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        Events::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        Events::render(self, area, buf, look)
    }

    fn context(&self) -> Option<KeyContext> {
        Some(KeyContext::Events)
    }

    super::input_line!(Events);

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        Events::on_response(self, id, result, ctx)
    }

    fn on_event(&mut self, e: &EventRecord) {
        Events::on_event(self, e)
    }
}

impl super::OverlayView for EventDetail {
    fn kind(&self) -> OverlayKind {
        OverlayKind::EventDetail
    }

    fn title(&self, _look: &Look<'_>) -> String {
        " Event ".to_owned()
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        EventDetail::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        EventDetail::render(self, area, buf, look)
    }
}
