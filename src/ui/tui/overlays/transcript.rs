//! The transcript overlay: what went in and out of the model, in order.
//!
//! Choice: the transcript is rebuilt from the event ledger (`events.page`),
//! not from the runtime's transcript table, which the API does not serve.
//! Each turn shows its trigger, the operator's full message, every
//! assistant round (text preview and requested tools), every tool call
//! with its arguments and result preview (the 600 characters the runtime
//! records), the final brief and any runtime failure. It opens on the
//! most recent `PAGE` events, follows new ones, and loads the page before
//! when scrolled past its top.

use std::cell::RefCell;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::fmt::{clock, duration};
use super::super::keymap::{Action, OverlayKind};
use super::super::markdown;
use super::super::msg::RequestId;
use super::super::theme::Theme;
use super::super::wrap::{chop, sanitize, wrap};
use super::{answer, draw_lines, Ctx, Look};
use crate::protocol::events::{BriefEvent, BriefKind, Family, MessageEvent, ToolEvent, TurnEvent};
use crate::protocol::types::MessageBody;
use crate::protocol::{ApiError, EventRecord, EventsPage, Request, Response};
use crate::ui::present::wire_name;

/// Events per page (transcript kinds are a fraction of all events).
const PAGE: usize = 2000;

const KINDS: &[&str] = &[
    "turn_started",
    "message_admitted",
    "assistant_round_recorded",
    "tool_executed",
    "brief_created",
    "runtime_error",
];

type Cache = (u16, usize, Vec<Line<'static>>);

#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<EventRecord>,
    /// The first `event_seq` the loaded pages cover.
    lo: u64,
    awaiting: Option<(RequestId, bool)>,
    /// Lines from the bottom (0: the newest line at the bottom).
    from_bottom: usize,
    error: Option<String>,
    cache: RefCell<Option<Cache>>,
}

impl Transcript {
    pub fn open(ctx: &mut Ctx<'_>) -> Transcript {
        let mut t = Transcript::default();
        let from = ctx.last_seq.saturating_sub(PAGE as u64 - 1).max(1);
        t.request(ctx, from, false);
        t
    }

    /// Entries already known (tests).
    pub fn with(events: Vec<EventRecord>) -> Transcript {
        Transcript {
            lo: events.first().map_or(1, |e| e.event_seq),
            entries: events
                .into_iter()
                .filter(|e| KINDS.contains(&e.kind.as_str()))
                .collect(),
            ..Transcript::default()
        }
    }

    fn request(&mut self, ctx: &mut Ctx<'_>, from: u64, earlier: bool) {
        let request = Request::EventsPage {
            agent_id: ctx.agent_id.to_owned(),
            from_seq: from,
            limit: PAGE,
            kind: None,
        };
        self.awaiting = Some((ctx.call(OverlayKind::Transcript, request), earlier));
        if !earlier {
            self.lo = from;
        }
    }

    pub fn on_event(&mut self, e: &EventRecord) {
        let newer = self
            .entries
            .last()
            .is_none_or(|l| e.event_seq > l.event_seq);
        if newer && KINDS.contains(&e.kind.as_str()) {
            self.entries.push(e.clone());
            self.cache.borrow_mut().take();
        }
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let total = self.cache.borrow().as_ref().map_or(0, |c| c.2.len());
        let max = total.saturating_sub(ctx.page);
        let before = self.from_bottom;
        self.from_bottom = match action {
            Action::Up => self.from_bottom + 1,
            Action::Down => self.from_bottom.saturating_sub(1),
            Action::PageUp => self.from_bottom + ctx.page,
            Action::PageDown => self.from_bottom.saturating_sub(ctx.page),
            Action::Home => max,
            Action::End => 0,
            _ => self.from_bottom,
        }
        .min(max);
        let wants_more = matches!(action, Action::Up | Action::PageUp | Action::Home);
        if wants_more && self.from_bottom == before && self.lo > 1 && self.awaiting.is_none() {
            let from = self.lo.saturating_sub(PAGE as u64).max(1);
            self.request(ctx, from, true);
        }
    }

    pub fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        _ctx: &mut Ctx<'_>,
    ) {
        let Some((awaited, earlier)) = self.awaiting else {
            return;
        };
        if awaited != id {
            return;
        }
        self.awaiting = None;
        let page: Vec<EventRecord> = match answer::<EventsPage>(result) {
            Ok(page) => page.events.clone(),
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        let first = page.first().map(|e| e.event_seq);
        let mut page: Vec<EventRecord> = page
            .into_iter()
            .filter(|e| KINDS.contains(&e.kind.as_str()))
            .collect();
        if earlier {
            let lo = self.entries.first().map_or(u64::MAX, |e| e.event_seq);
            page.retain(|e| e.event_seq < lo);
            page.append(&mut self.entries);
            self.entries = page;
            self.lo = first.unwrap_or(1).min(self.lo);
        } else {
            let hi = page.last().map_or(0, |e| e.event_seq);
            self.entries.retain(|e| e.event_seq > hi);
            page.append(&mut self.entries);
            self.entries = page;
        }
        self.cache.borrow_mut().take();
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let key = (area.width, self.entries.len());
        let stale = self
            .cache
            .borrow()
            .as_ref()
            .is_none_or(|c| (c.0, c.1) != key);
        if stale {
            let lines = transcript_lines(&self.entries, usize::from(area.width), look.theme);
            *self.cache.borrow_mut() = Some((key.0, key.1, lines));
        }
        let cache = self.cache.borrow();
        let Some((_, _, lines)) = cache.as_ref() else {
            return;
        };
        let t = look.theme;
        if lines.is_empty() {
            let msg = match (&self.error, self.awaiting.is_some()) {
                (Some(e), _) => format!("! {e}"),
                (None, true) => "Loading the transcript…".to_owned(),
                (None, false) => "Nothing in the transcript yet.".to_owned(),
            };
            buf.set_line(
                area.x + 1,
                area.y,
                &Line::from(Span::styled(msg, t.dim())),
                area.width,
            );
            return;
        }
        let h = usize::from(area.height);
        let end = lines.len().saturating_sub(self.from_bottom);
        let start = end.saturating_sub(h);
        let mut shown: Vec<Line> = lines[start..end].to_vec();
        if start == 0 && self.lo > 1 && shown.len() < h {
            let note = format!(" ↑ events before #{} not loaded (Up loads them)", self.lo);
            shown.insert(0, Line::from(Span::styled(note, t.dim())));
        }
        draw_lines(area, buf, &shown);
    }
}

/// The transcript of `events` at `width`.
pub fn transcript_lines(events: &[EventRecord], width: usize, t: Theme) -> Vec<Line<'static>> {
    let mut out = Lines {
        out: Vec::new(),
        w: width.saturating_sub(1),
        t,
    };
    for e in events {
        use Family as F;
        let typed = e.event();
        match typed.family() {
            F::Turn(TurnEvent::TurnStarted(p)) => out.turn_rule(e, &wire_name(&p.trigger_kind)),
            F::Message(MessageEvent::MessageAdmitted(p)) => {
                let kind = wire_name(&p.message.kind).replace('_', " ");
                out.head(e, "›", kind, t.accent().patch(t.bold()));
                let text = match &p.message.body {
                    MessageBody::Text { text } | MessageBody::Brief { text, .. } => text.clone(),
                    MessageBody::Json { value } => value.to_string(),
                };
                let text = Some(text).filter(|t| !t.trim().is_empty());
                out.body(text.as_deref().unwrap_or("(empty)"), t.text());
            }
            F::Turn(TurnEvent::AssistantRoundRecorded(p)) => {
                out.head(e, "◦", format!("assistant · round {}", p.round), t.bold());
                if !p.text_preview.trim().is_empty() {
                    out.body(&p.text_preview, t.text());
                }
                if !p.tool_names.is_empty() {
                    let tools = p.tool_names.join(", ");
                    out.body(&format!("requests: {tools}"), t.dim());
                }
            }
            F::Tool(ToolEvent::ToolExecuted(p)) => out.tool_executed(e, p),
            F::Brief(BriefEvent::BriefCreated(p)) => {
                let kind = wire_name(&p.brief.kind);
                let vis = wire_name(&p.visibility);
                let style = match p.brief.kind {
                    BriefKind::Failure => t.err(),
                    BriefKind::Ack | BriefKind::Result => t.accent(),
                };
                out.head(e, "●", format!("brief · {kind} · {vis}"), style);
                let md = markdown::render(&p.brief.text, out.w, "   ", t);
                out.extend(md);
            }
            F::Turn(TurnEvent::RuntimeError(p)) => {
                out.head(e, "✗", "runtime error".to_owned(), t.err());
                let s = Some(p.failure_artifact.summary.as_str()).filter(|s| !s.trim().is_empty());
                out.body(s.unwrap_or("(no summary)"), t.err());
            }
            // The transcript is the conversation as the model had it: the
            // rest of a turn, of the queue and of a tool call, and every
            // other family, is runtime bookkeeping, in /events.
            F::Turn(
                TurnEvent::TurnContextBuilt(_)
                | TurnEvent::ProviderRoundCompleted(_)
                | TurnEvent::ContextCompactionStarted(_)
                | TurnEvent::ContextCompacted(_)
                | TurnEvent::TurnCheckpoint(_)
                | TurnEvent::TurnAwaitingApproval(_)
                | TurnEvent::TurnTerminal(_),
            )
            | F::Message(
                MessageEvent::MessageRejected(_)
                | MessageEvent::MessageProcessingStarted(_)
                | MessageEvent::MessageProcessed(_)
                | MessageEvent::MessageAborted(_)
                | MessageEvent::MessageDropped(_)
                | MessageEvent::MessageInterjected(_),
            )
            | F::Tool(ToolEvent::ToolStarted(_))
            | F::Agent(_)
            | F::Scheduler(_)
            | F::Workspace(_)
            | F::WorkItem(_)
            | F::Task(_)
            | F::Wait(_)
            | F::Trigger(_)
            | F::Approval(_)
            | F::Policy(_)
            | F::Mcp(_)
            | F::Runtime(_)
            | F::Unreadable => {}
        }
    }
    out.out
}

/// The transcript's lines as they are written, `w` wide.
struct Lines {
    out: Vec<Line<'static>>,
    w: usize,
    t: Theme,
}

impl Lines {
    fn extend(&mut self, lines: Vec<Line<'static>>) {
        self.out.extend(lines);
    }

    /// Text under a head, each of its lines wrapped and indented.
    fn body(&mut self, s: &str, style: ratatui::style::Style) {
        let pad = || [Span::raw("   ")];
        for l in sanitize(s).trim_end().lines() {
            let spans = [Span::styled(l.to_owned(), style)];
            self.out.extend(wrap(&spans, self.w, &pad(), &pad()));
        }
    }

    /// An entry's head: its mark and what it is, then its seq and time.
    fn head(&mut self, e: &EventRecord, mark: &str, what: String, style: ratatui::style::Style) {
        let time = clock(&e.ts);
        self.out.push(Line::from(vec![
            Span::styled(format!(" {mark} "), style),
            Span::styled(what, style),
            Span::styled(format!("  #{} {time}", e.event_seq), self.t.dim()),
        ]));
    }

    /// A turn begins: a rule naming what started it, after a blank line.
    fn turn_rule(&mut self, e: &EventRecord, trigger: &str) {
        if !self.out.is_empty() {
            self.out.push(Line::default());
        }
        let rule = format!("── turn: {} ", trigger.replace('_', " "));
        let fill = self.w.saturating_sub(rule.chars().count() + 9);
        let line = format!("{rule}{}", "─".repeat(fill));
        self.out.push(Line::from(vec![
            Span::styled(line, self.t.dim()),
            Span::styled(format!(" {}", clock(&e.ts)), self.t.dim()),
        ]));
    }

    /// A tool call: its name and time, its arguments (▸) and result (◂)
    /// cut to the width.
    fn tool_executed(&mut self, e: &EventRecord, p: &crate::protocol::events::ToolExecuted) {
        let t = self.t;
        let took = format!(" · {}", duration(p.duration_ms));
        let (mark, style) = if p.is_error {
            ("✗", t.err())
        } else {
            ("→", t.text())
        };
        self.head(e, mark, format!("{}{took}", p.tool_name), style);
        let args = p.arguments.to_string();
        for piece in chop(&sanitize(&args), self.w.saturating_sub(5)) {
            self.out.push(Line::from(vec![
                Span::styled("   ▸ ", t.dim()),
                Span::styled(piece, t.dim()),
            ]));
        }
        if !p.result_preview.trim().is_empty() {
            for piece in chop(&sanitize(&p.result_preview), self.w.saturating_sub(5)) {
                self.out.push(Line::from(vec![
                    Span::styled("   ◂ ", t.dim()),
                    Span::raw(piece),
                ]));
            }
        }
    }
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for Transcript {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Transcript
    }

    fn title(&self, look: &Look<'_>) -> String {
        format!(" Transcript · {} ", look.agent_id)
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        Transcript::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        Transcript::render(self, area, buf, look)
    }

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        Transcript::on_response(self, id, result, ctx)
    }

    fn on_event(&mut self, e: &EventRecord) {
        Transcript::on_event(self, e)
    }
}
