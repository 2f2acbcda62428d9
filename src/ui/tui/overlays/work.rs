//! The work items overlay: the projection's work items grouped as current,
//! runnable, waiting for the operator, blocked and completed; a detail
//! view (objective, plan status, todos, blocker, revision, result); and
//! create, pick, complete with a note, and edit blocker, each through
//! `work_item.*` requests. The list follows the projection, which the
//! `work_item_*` events keep current.
//!
//! The plan body lives in the agent home (`work-items/<id>/plan.md`);
//! `agent.state` serves the start of it as `plan_preview`, shown in the
//! detail under "Plan".

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::keymap::{Action, KeyContext, OverlayKind};
use super::super::msg::RequestId;
use super::super::projection::{AgentView, WorkItemView};
use super::super::rows::Tone;
use super::super::theme::Theme;
use super::super::wrap::{sanitize, truncate, width as width_of, wrap};
use super::input::{Input, Purpose};
use super::{answer, draw_lines, draw_row, field, header, Ctx, Intent, ListPos, Look, Status};
use crate::model::work::{PlanStatus, TodoState};
use crate::protocol::types::{CreateWorkItem, UpdateWorkItem};
use crate::protocol::{AgentState, ApiError, Request, Response};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Current,
    Runnable,
    WaitingForOperator,
    Blocked,
    Completed,
}

impl Group {
    const ALL: [Group; 5] = [
        Group::Current,
        Group::Runnable,
        Group::WaitingForOperator,
        Group::Blocked,
        Group::Completed,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Group::Current => "Current",
            Group::Runnable => "Runnable",
            Group::WaitingForOperator => "Waiting for you",
            Group::Blocked => "Blocked",
            Group::Completed => "Completed",
        }
    }
}

pub fn group(w: &WorkItemView, current: Option<&str>) -> Group {
    if w.completed {
        Group::Completed
    } else if current == Some(w.id.as_str()) {
        Group::Current
    } else if w.plan_status == PlanStatus::NeedsInput {
        Group::WaitingForOperator
    } else if w.blocked_by.is_some() {
        Group::Blocked
    } else {
        Group::Runnable
    }
}

/// Work items in group order (the order the list shows and selects).
pub fn grouped(agent: &AgentView) -> Vec<(Group, &WorkItemView)> {
    let current = agent.current_work_item.as_deref();
    let mut out = Vec::new();
    for g in Group::ALL {
        let mut items: Vec<&WorkItemView> = agent
            .work_items
            .iter()
            .filter(|w| group(w, current) == g)
            .collect();
        if g == Group::Completed {
            items.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        }
        out.extend(items.into_iter().map(|w| (g, w)));
    }
    out
}

/// The requests shared by the list and the detail view.
/// `kind` is the overlay asking: its answer (done or the error) comes back
/// to it, never to another one.
fn act(
    kind: OverlayKind,
    action: Action,
    item: &WorkItemView,
    input: &mut Option<Input>,
    status: &mut Status,
    ctx: &mut Ctx<'_>,
) -> bool {
    let id = item.id.clone();
    match action {
        Action::PickWork if item.completed => {
            status.message = Some(("That work item is completed.".into(), Tone::Info));
        }
        Action::PickWork => {
            let request = Request::WorkItemPick {
                agent_id: ctx.agent_id.to_owned(),
                work_item_id: id,
            };
            status.wait(
                ctx.call(kind, request),
                "Picked: it is now the current focus.",
            );
        }
        Action::CompleteWork => {
            *input = Some(Input::new(
                "Completion note (optional)",
                Purpose::CompleteWork { id },
                "",
            ));
        }
        Action::EditBlocker => {
            let now = item.blocked_by.clone().unwrap_or_default();
            *input = Some(Input::new(
                "Blocked by (empty clears)",
                Purpose::Blocker { id },
                &now,
            ));
        }
        _ => return false,
    }
    true
}

/// A confirmed input of the list or the detail view.
fn confirm(kind: OverlayKind, input: Input, status: &mut Status, ctx: &mut Ctx<'_>) {
    let agent_id = ctx.agent_id.to_owned();
    let value = input.value();
    let (request, done) = match input.purpose {
        Purpose::AddWork if value.is_empty() => return,
        Purpose::AddWork => {
            let item = CreateWorkItem {
                objective: value,
                ..CreateWorkItem::default()
            };
            (
                Request::WorkItemCreate {
                    agent_id,
                    item,
                    request_id: None,
                },
                "Work item added.",
            )
        }
        Purpose::CompleteWork { id } => {
            let note = Some(value).filter(|v| !v.is_empty());
            let request = Request::WorkItemComplete {
                agent_id,
                work_item_id: id,
                note,
            };
            (request, "Completed.")
        }
        Purpose::Blocker { id } => {
            let blocked_by = Some(Some(value).filter(|v| !v.is_empty()));
            let update = UpdateWorkItem {
                work_item_id: id,
                blocked_by,
                ..UpdateWorkItem::default()
            };
            (
                Request::WorkItemUpdate { agent_id, update },
                "Blocker saved.",
            )
        }
        Purpose::NewAgent
        | Purpose::TaskInput { .. }
        | Purpose::FilterKind
        | Purpose::JumpSeq
        | Purpose::AttachWorkspace
        | Purpose::DenyNote { .. } => return,
    };
    status.wait(ctx.call(kind, request), done);
}

#[derive(Debug, Default)]
pub struct WorkList {
    pub input: Option<Input>,
    pos: ListPos,
    /// The selected item's id: the cursor stays on it when the grouping
    /// moves it (picking makes it current).
    selected_id: Option<String>,
    pub status: Status,
}

impl WorkList {
    /// The selected index: where the remembered item is now.
    fn selected(&self, items: &[(Group, &WorkItemView)]) -> usize {
        self.selected_id
            .as_deref()
            .and_then(|id| items.iter().position(|(_, w)| w.id == id))
            .unwrap_or(self.pos.selected)
            .min(items.len().saturating_sub(1))
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let items = grouped(ctx.agent);
        self.pos.selected = self.selected(&items);
        if self.pos.on_action(action, items.len(), ctx.page) {
            self.selected_id = items.get(self.pos.selected).map(|(_, w)| w.id.clone());
            return;
        }
        self.selected_id = items.get(self.pos.selected).map(|(_, w)| w.id.clone());
        if action == Action::AddWork {
            self.input = Some(Input::new("Objective", Purpose::AddWork, ""));
            return;
        }
        let Some((_, item)) = items.get(self.pos.selected) else {
            return;
        };
        if action == Action::Select {
            // Events carry the record, not the plan: a fresh agent.state
            // brings the plan of an item created since the console opened.
            let request = Request::AgentState {
                agent_id: ctx.agent_id.to_owned(),
            };
            let detail = WorkDetail {
                id: item.id.clone(),
                awaiting_plan: (item.plan_preview.is_none())
                    .then(|| ctx.call(OverlayKind::WorkDetail, request)),
                ..WorkDetail::default()
            };
            ctx.intents.push(Intent::Push(Box::new(detail)));
            return;
        }
        let item = (*item).clone();
        act(
            OverlayKind::Work,
            action,
            &item,
            &mut self.input,
            &mut self.status,
            ctx,
        );
    }

    pub fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        confirm(OverlayKind::Work, input, &mut self.status, ctx);
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        let items = grouped(look.agent);
        if items.is_empty() {
            let line = Line::from(Span::styled("No work items. Press a to add one.", t.dim()));
            buf.set_line(area.x + 1, area.y, &line, area.width);
        }
        // Lines: a header before each group, then its items.
        let mut lines: Vec<(Option<usize>, Line<'static>)> = Vec::new();
        let mut last: Option<Group> = None;
        let width = usize::from(area.width).saturating_sub(1);
        for (n, (g, w)) in items.iter().enumerate() {
            if last != Some(*g) {
                if last.is_some() {
                    lines.push((None, Line::default()));
                }
                let count = items.iter().filter(|(x, _)| x == g).count();
                lines.push((None, header(&format!("{} ({count})", g.title()), t)));
                last = Some(*g);
            }
            // Equal objectives are told apart by their id's tail.
            let twin = items
                .iter()
                .any(|(_, o)| o.id != w.id && o.objective == w.objective);
            lines.push((Some(n), item_line(w, *g, twin, width, t)));
        }
        let selected = self.selected(&items);
        let status_h = u16::from(self.status.message.is_some());
        let rows_h = usize::from(area.height.saturating_sub(status_h));
        let sel_line = lines
            .iter()
            .position(|(n, _)| *n == Some(selected))
            .unwrap_or(0);
        let first = self.pos_window(sel_line, lines.len(), rows_h);
        for (i, (n, line)) in lines.iter().enumerate().skip(first).take(rows_h) {
            let y = area.y + (i - first) as u16;
            draw_row(area, buf, y, line, *n == Some(selected), t);
        }
        self.status.draw_last(area, buf, t);
    }

    /// The first line to show so the selected line is visible (headers
    /// count as lines, so the window is over lines, not items).
    fn pos_window(&self, sel_line: usize, len: usize, height: usize) -> usize {
        if height == 0 || len <= height {
            return 0;
        }
        sel_line.saturating_sub(height / 2).min(len - height)
    }
}

fn item_line(w: &WorkItemView, g: Group, twin: bool, width: usize, t: Theme) -> Line<'static> {
    let done = w
        .todos
        .iter()
        .filter(|x| x.state == TodoState::Completed)
        .count();
    let mut tags: Vec<String> = Vec::new();
    if !w.todos.is_empty() {
        tags.push(format!("{done}/{} done", w.todos.len()));
    }
    if w.plan_status == PlanStatus::NeedsInput && !w.completed {
        tags.push("needs your input".into());
    }
    if let Some(b) = w.blocked_by.as_ref().filter(|_| !w.completed) {
        tags.push(format!("blocked by {b}"));
    }
    if let Some(r) = w.result_summary.as_ref().filter(|_| w.completed) {
        tags.push(r.clone());
    }
    let mark = match g {
        Group::Current => "▶ ",
        Group::Completed => "✓ ",
        Group::WaitingForOperator => "▲ ",
        Group::Blocked => "■ ",
        Group::Runnable => "· ",
    };
    let suffix = match twin {
        true => format!(
            " (…{})",
            w.id.get(w.id.len().saturating_sub(6)..).unwrap_or(&w.id)
        ),
        false => String::new(),
    };
    let shown = truncate(
        &sanitize(&w.objective),
        width.saturating_sub(3 + suffix.len()).min(70),
    );
    let objective = format!("{shown}{suffix}");
    let room = width.saturating_sub(2 + width_of(&objective));
    let tail = match tags.is_empty() {
        true => String::new(),
        false => format!(" · {}", truncate(&tags.join(" · "), room.saturating_sub(3))),
    };
    let needs = w.plan_status == PlanStatus::NeedsInput && !w.completed;
    Line::from(vec![
        Span::styled(mark, if needs { t.attention() } else { t.dim() }),
        Span::raw(objective),
        Span::styled(tail, if needs { t.attention() } else { t.dim() }),
    ])
}

#[derive(Debug, Default)]
pub struct WorkDetail {
    pub id: String,
    pub input: Option<Input>,
    pub status: Status,
    top: usize,
    /// The plan preview fetched when the projection has none.
    plan: Option<String>,
    awaiting_plan: Option<RequestId>,
}

impl WorkDetail {
    pub fn new(id: &str) -> WorkDetail {
        WorkDetail {
            id: id.to_owned(),
            ..WorkDetail::default()
        }
    }

    /// The answers to this view's own requests: its actions' outcomes and
    /// the plan it asked for.
    pub fn on_response(&mut self, id: RequestId, result: &Result<Response, ApiError>) {
        if Some(id) == self.awaiting_plan {
            self.awaiting_plan = None;
            if let Ok(state) = answer::<AgentState>(result) {
                self.plan = state
                    .work_items
                    .iter()
                    .find(|w| w.record.id == self.id)
                    .and_then(|w| w.plan_preview.clone());
            }
            return;
        }
        self.status.on_response(id, result);
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        match action {
            Action::Up => self.top = self.top.saturating_sub(1),
            Action::Down => self.top += 1,
            Action::Home => self.top = 0,
            _ => {
                if let Some(item) = ctx.agent.work_item(&self.id).cloned() {
                    let kind = OverlayKind::WorkDetail;
                    act(kind, action, &item, &mut self.input, &mut self.status, ctx);
                }
            }
        }
    }

    pub fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        confirm(OverlayKind::WorkDetail, input, &mut self.status, ctx);
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        let Some(w) = look.agent.work_item(&self.id) else {
            let line = Line::from(Span::styled(format!("No work item {}.", self.id), t.dim()));
            buf.set_line(area.x + 1, area.y, &line, area.width);
            return;
        };
        let width = usize::from(area.width);
        let g = group(w, look.agent.current_work_item.as_deref());
        let mut lines = wrap(
            &[Span::styled(sanitize(&w.objective), t.bold())],
            width,
            &[],
            &[],
        );
        lines.push(Line::default());
        let lw = 13;
        let blocker = w.blocked_by.clone().unwrap_or_else(|| "none".into());
        let plan = match w.plan_status {
            PlanStatus::NeedsInput => "needs your input",
            PlanStatus::Draft => "draft",
            PlanStatus::Ready => "ready",
        }
        .to_owned();
        let mut fields = vec![
            ("id", w.id.clone()),
            ("group", g.title().to_owned()),
            ("plan", plan),
            ("revision", w.revision.to_string()),
            ("blocked by", blocker),
        ];
        if let Some(r) = &w.result_summary {
            fields.push(("result", r.clone()));
        }
        fields.push(("updated", w.updated_at.clone()));
        for (label, value) in fields {
            lines.extend(field(label, &value, lw, width, t));
        }
        if let Some(plan) = w.plan_preview.as_ref().or(self.plan.as_ref()) {
            lines.push(Line::default());
            lines.push(header("Plan", t));
            for l in plan.lines() {
                lines.extend(wrap(
                    &[Span::raw(sanitize(l))],
                    width,
                    &[Span::raw("  ")],
                    &[Span::raw("  ")],
                ));
            }
        }
        lines.push(Line::default());
        let todo_head = match w.todos.is_empty() {
            true => "Checklist: none yet".to_owned(),
            false => format!(
                "Checklist ({} of {} done)",
                w.todos
                    .iter()
                    .filter(|x| x.state == TodoState::Completed)
                    .count(),
                w.todos.len()
            ),
        };
        lines.push(header(&todo_head, t));
        for todo in &w.todos {
            let mark = match todo.state {
                TodoState::Completed => "[x] ",
                TodoState::InProgress => "[~] ",
                TodoState::Pending => "[ ] ",
            };
            let first = [Span::styled(format!("  {mark}"), t.dim())];
            let rest = [Span::raw("      ")];
            lines.extend(wrap(
                &[Span::raw(sanitize(&todo.text))],
                width,
                &first,
                &rest,
            ));
        }
        let status_h = u16::from(self.status.message.is_some());
        let h = usize::from(area.height.saturating_sub(status_h));
        let top = self.top.min(lines.len().saturating_sub(h));
        draw_lines(area, buf, &lines[top..]);
        self.status.draw_last(area, buf, t);
    }
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for WorkList {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Work
    }

    fn title(&self, look: &Look<'_>) -> String {
        format!(" Work items · {} ", look.agent_id)
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        WorkList::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        WorkList::render(self, area, buf, look)
    }

    fn context(&self) -> Option<KeyContext> {
        Some(KeyContext::Work)
    }

    super::input_line!(WorkList);

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        _ctx: &mut Ctx<'_>,
    ) {
        self.status.on_response(id, result)
    }
}

impl super::OverlayView for WorkDetail {
    fn kind(&self) -> OverlayKind {
        OverlayKind::WorkDetail
    }

    fn title(&self, _look: &Look<'_>) -> String {
        " Work item ".to_owned()
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        WorkDetail::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        WorkDetail::render(self, area, buf, look)
    }

    fn context(&self) -> Option<KeyContext> {
        Some(KeyContext::WorkDetail)
    }

    super::input_line!(WorkDetail);

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        _ctx: &mut Ctx<'_>,
    ) {
        WorkDetail::on_response(self, id, result)
    }
}
