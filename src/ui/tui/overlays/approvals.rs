//! The approvals overlay: every tool call waiting for the operator, across
//! agents (`approvals.list`), newest first, with what it would run and why
//! it asks. `a` approves (the call runs and its result goes to the agent),
//! `A` approves and allows calls like it from now on, `d` denies with a
//! note. Answers go through the runtime: the first one wins, and a console
//! that answered second is told. Below them, the calls waiting on the
//! console's other runtimes (from the last glance), each named by its
//! runtime, are answered there from here.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::keymap::{Action, KeyContext, OverlayKind};
use super::super::msg::RequestId;
use super::super::theme::Theme;
use super::super::wrap::{fit, truncate};
use super::input::{Input, Purpose};
use super::{draw_row, load_list, Ctx, Intent, ListPos, Look, Status};
use crate::protocol::types::ApprovalRecord;
use crate::protocol::{ApiError, Request, Response};

#[derive(Debug, Default)]
pub struct Approvals {
    pub input: Option<Input>,
    list: Option<Vec<ApprovalRecord>>,
    /// Calls waiting on other runtimes: (runtime, call).
    elsewhere: Vec<(String, ApprovalRecord)>,
    pos: ListPos,
    awaiting: Option<RequestId>,
    answering: Option<RequestId>,
    status: Status,
}

impl Approvals {
    pub fn open(ctx: &mut Ctx<'_>, elsewhere: Vec<(String, ApprovalRecord)>) -> Approvals {
        let mut a = Approvals {
            elsewhere,
            ..Approvals::default()
        };
        a.refresh(ctx);
        a
    }

    /// A list already known (tests).
    pub fn with(list: Vec<ApprovalRecord>) -> Approvals {
        Approvals {
            list: Some(list),
            ..Approvals::default()
        }
    }

    fn refresh(&mut self, ctx: &mut Ctx<'_>) {
        let request = Request::ApprovalsList {
            agent_id: None,
            include_answered: false,
        };
        self.awaiting = Some(ctx.call(OverlayKind::Approvals, request));
    }

    /// Every call listed: this runtime's (no name), then the others'.
    fn entries(&self) -> Vec<(Option<&str>, &ApprovalRecord)> {
        let here = self.list.iter().flatten().map(|a| (None, a));
        let there = (self.elsewhere.iter()).map(|(r, a)| (Some(r.as_str()), a));
        here.chain(there).collect()
    }

    fn selected(&self) -> Option<(Option<&str>, &ApprovalRecord)> {
        self.entries().get(self.pos.selected).copied()
    }

    fn answer(&mut self, request: Request, done: &'static str, ctx: &mut Ctx<'_>) {
        let id = ctx.call(OverlayKind::Approvals, request);
        self.answering = Some(id);
        self.status.wait(id, done);
    }

    /// An answer to a call waiting on `runtime`: sent there, and the call
    /// taken off the list (the conversation says what it did).
    fn answer_on(&mut self, runtime: String, id: &str, request: Request, ctx: &mut Ctx<'_>) {
        self.elsewhere.retain(|(_, a)| a.id != id);
        let len = self.entries().len();
        self.pos.selected = self.pos.selected.min(len.saturating_sub(1));
        let sent = format!("Sent to {runtime}: the conversation says what it did.");
        self.status.message = Some((sent, super::super::rows::Tone::Info));
        ctx.intents.push(Intent::AnswerOn { runtime, request });
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let len = self.entries().len();
        if self.pos.on_action(action, len, ctx.page) {
            return;
        }
        let picked = self
            .selected()
            .map(|(r, a)| (r.map(str::to_owned), a.clone()));
        let Some((runtime, a)) = picked else {
            if action == Action::Refresh {
                self.refresh(ctx);
            }
            return;
        };
        match action {
            Action::Approve | Action::ApproveAlways => {
                let always = action == Action::ApproveAlways;
                let request = Request::ApprovalApprove {
                    approval_id: a.id.clone(),
                    agent_id: Some(a.agent_id),
                    always,
                };
                if let Some(runtime) = runtime {
                    return self.answer_on(runtime, &a.id, request, ctx);
                }
                let done = match always {
                    true => "Approved; calls like it no longer ask.",
                    false => "Approved; the result goes to the agent.",
                };
                self.answer(request, done, ctx);
            }
            Action::Deny => {
                let purpose = Purpose::DenyNote {
                    id: a.id,
                    agent_id: a.agent_id,
                    runtime,
                };
                self.input = Some(Input::new("Why not (optional)", purpose, ""));
            }
            Action::Refresh => self.refresh(ctx),
            _ => {}
        }
    }

    pub fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        let note = input.value();
        if let Purpose::DenyNote {
            id,
            agent_id,
            runtime,
        } = input.purpose
        {
            let request = Request::ApprovalDeny {
                approval_id: id.clone(),
                agent_id: Some(agent_id),
                note: (!note.is_empty()).then_some(note),
            };
            match runtime {
                Some(runtime) => self.answer_on(runtime, &id, request, ctx),
                None => self.answer(request, "Denied; the agent was told.", ctx),
            }
        }
    }

    pub fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        if Some(id) == self.awaiting {
            self.awaiting = None;
            // The selection stays on the call it was on, wherever the new
            // list puts it: a key answers what the operator saw.
            let was = (self.selected()).map(|(r, a)| (r.map(str::to_owned), a.id.clone()));
            load_list(result, &mut self.list, &mut self.pos, &mut self.status);
            let (found, len) = {
                let entries = self.entries();
                let found = was.and_then(|(r, id)| {
                    (entries.iter()).position(|(er, ea)| ea.id == id && er.map(str::to_owned) == r)
                });
                (found, entries.len())
            };
            self.pos.selected = found.unwrap_or(self.pos.selected);
            self.pos.clamp(len);
        } else if Some(id) == self.answering {
            self.answering = None;
            // Answered here or elsewhere first: either way the list moves on.
            self.status.on_response(id, result);
            self.refresh(ctx);
        }
    }

    /// The selected call in full under the list: the command, or the
    /// patch as a coloured diff.
    fn render_detail(&self, area: Rect, buf: &mut Buffer, t: Theme, top: u16, bottom: u16) {
        use super::super::rows::diff_lines;
        let Some((runtime, a)) = self.selected() else {
            return;
        };
        // What a runtime (another machine's, perhaps) and its model wrote:
        // shown with controls and hidden characters escaped.
        let clean = super::super::wrap::sanitize;
        let height = area.height.saturating_sub(top + bottom + 1);
        if height < 2 {
            return;
        }
        let width = usize::from(area.width).saturating_sub(2);
        let text = |k: &str| {
            a.arguments
                .get(k)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        let gutter = Span::styled("│ ", t.dim());
        let on = runtime.map_or(String::new(), |r| format!("On {}: ", clean(r)));
        let mut lines = vec![Line::from(Span::styled(
            format!(
                "{on}{} would {}:",
                clean(&a.tool_name),
                match a.tool_name.as_str() {
                    "ApplyPatch" => "apply",
                    _ => "run",
                }
            ),
            t.bold(),
        ))];
        if let Some(patch) = text("patch") {
            lines.extend(diff_lines(&patch, width, usize::from(height), t, gutter));
        } else if let Some(cmd) = text("cmd") {
            for l in cmd.lines() {
                lines.push(Line::from(vec![
                    gutter.clone(),
                    Span::raw(format!("$ {}", clean(l))),
                ]));
            }
            if let Some(j) = text("justification") {
                lines.push(Line::from(vec![
                    gutter.clone(),
                    Span::raw(format!("why: {}", clean(&j))),
                ]));
            }
        } else {
            lines.push(Line::from(vec![gutter, Span::raw(clean(&a.summary))]));
        }
        let y0 = area.y + top + 1;
        for (i, line) in lines.iter().take(usize::from(height)).enumerate() {
            buf.set_line(
                area.x + 1,
                y0 + i as u16,
                line,
                area.width.saturating_sub(1),
            );
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        if self.list.is_none() && self.elsewhere.is_empty() {
            let line = Line::from(Span::styled("Loading approvals…", t.dim()));
            buf.set_line(area.x + 1, area.y, &line, area.width);
            return;
        }
        let list = self.entries();
        if list.is_empty() {
            let line = Line::from(Span::styled(
                "No tool call is waiting for your approval.",
                t.dim(),
            ));
            buf.set_line(area.x + 1, area.y, &line, area.width);
            self.status.draw_last(area, buf, t);
            return;
        }
        let width = usize::from(area.width).saturating_sub(1);
        // Another runtime's call is named by its runtime (`build/main`).
        let who = |(runtime, a): &(Option<&str>, &ApprovalRecord)| match runtime {
            Some(r) => format!("{r}/{}", a.agent_id),
            None => a.agent_id.clone(),
        };
        let agent_w = list
            .iter()
            .map(|e| who(e).chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 16)
            + 2;
        let tool_w = 13;
        // Two lines per approval: what it runs, then why it asks; below
        // them, what the selected one would do in full.
        let status_h = u16::from(self.status.message.is_some());
        let room = usize::from(area.height.saturating_sub(status_h));
        let rows = (list.len().min(room / 4)).max(1).min(room / 2);
        self.render_detail(area, buf, t, (rows * 2) as u16, status_h);
        let first = self.pos.window(list.len(), rows);
        for (n, e) in list.iter().enumerate().skip(first).take(rows) {
            let a = e.1;
            let y = area.y + ((n - first) * 2) as u16;
            let what = width.saturating_sub(agent_w + tool_w);
            let line = Line::from(vec![
                Span::styled(fit(&who(e), agent_w), t.accent()),
                Span::styled(fit(&a.tool_name, tool_w), t.attention()),
                Span::styled(truncate(&a.summary, what), t.text()),
            ]);
            draw_row(area, buf, y, &line, n == self.pos.selected, t);
            let why = format!("{} · {} · {}", a.why, a.workspace_id, a.requested_at);
            let detail = Line::from(Span::styled(
                truncate(&why, width.saturating_sub(agent_w)),
                t.dim(),
            ));
            buf.set_line(
                area.x + 1 + agent_w as u16,
                y + 1,
                &detail,
                area.width.saturating_sub(1 + agent_w as u16),
            );
        }
        self.status.draw_last(area, buf, t);
    }
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for Approvals {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Approvals
    }

    fn title(&self, _look: &Look<'_>) -> String {
        match self.elsewhere.is_empty() {
            true => " Approvals · all agents ".to_owned(),
            false => " Approvals · all agents, every runtime ".to_owned(),
        }
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        Approvals::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        Approvals::render(self, area, buf, look)
    }

    fn context(&self) -> Option<KeyContext> {
        Some(KeyContext::Approvals)
    }

    super::input_line!(Approvals);

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        Approvals::on_response(self, id, result, ctx)
    }
}
