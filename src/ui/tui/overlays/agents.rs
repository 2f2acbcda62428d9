//! The agents overlay: every public agent with its derived posture and
//! counts (`agents.list`), its children indented under it (task state and
//! posture), switch to one (`Effect::ViewAgent`; a child opens read-only),
//! create one (`agent.create`, then the list refreshes). The list comes a
//! page at a time (`agents.list`), the next when the selection reaches the
//! end; `/` filters it by id on the runtime. Below it, the agents of the
//! other runtimes this console knows, from their last glance, named
//! `runtime/agent`: Enter goes there (`/runtime NAME AGENT`); a runtime
//! that could not be asked, or has none, is one line at the bottom.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::keymap::{Action, KeyContext, OverlayKind};
use super::super::msg::RequestId;
use super::super::projection::posture_look;
use super::super::rows::Tone;
use super::super::wrap::{fit, truncate};
use super::input::{Input, Purpose};
use super::{answer, draw_row, Ctx, Intent, ListPos, Look, Status};
use crate::model::task::WorktreeCleanup;
use crate::protocol::types::AgentStatus;
use crate::protocol::{AgentSummary, AgentsPage, ApiError, Request, Response};

/// Agents asked for at a time.
const PAGE: usize = 100;

#[derive(Debug, Default)]
pub struct Agents {
    pub input: Option<Input>,
    list: Option<Vec<AgentSummary>>,
    pos: ListPos,
    awaiting: Option<RequestId>,
    /// The next page asked for (the selection reached the end).
    more: Option<RequestId>,
    creating: Option<RequestId>,
    status: Status,
    /// Only agents whose id contains this (`/`).
    query: String,
    next_cursor: Option<String>,
    total: u64,
    /// Other runtimes' agents: (runtime, agent, posture).
    elsewhere: Vec<(
        String,
        String,
        crate::model::decision::AgentSchedulingPosture,
    )>,
}

/// One selectable row: an agent, one of its children, or another
/// runtime's agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    Agent(usize),
    Child(usize, usize),
    Elsewhere(usize),
}

fn rows(list: &[AgentSummary], elsewhere: usize) -> Vec<Row> {
    let mut out = Vec::new();
    for (i, a) in list.iter().enumerate() {
        out.push(Row::Agent(i));
        out.extend((0..a.children.len()).map(|c| Row::Child(i, c)));
    }
    out.extend((0..elsewhere).map(Row::Elsewhere));
    out
}

impl Agents {
    pub fn open(
        ctx: &mut Ctx<'_>,
        elsewhere: Vec<(
            String,
            String,
            crate::model::decision::AgentSchedulingPosture,
        )>,
    ) -> Agents {
        let mut a = Agents {
            elsewhere,
            ..Agents::default()
        };
        a.refresh(ctx);
        a
    }

    /// A list already known (tests, benchmarks).
    pub fn with(list: Vec<AgentSummary>) -> Agents {
        Agents {
            list: Some(list),
            ..Agents::default()
        }
    }

    fn request(&self, ctx: &mut Ctx<'_>, cursor: Option<String>) -> RequestId {
        let query = Some(self.query.clone()).filter(|q| !q.is_empty());
        ctx.call(
            OverlayKind::Agents,
            Request::AgentsList {
                limit: Some(PAGE),
                cursor,
                query,
            },
        )
    }

    fn refresh(&mut self, ctx: &mut Ctx<'_>) {
        // A page asked for before this answers must not be appended to it.
        self.more = None;
        self.next_cursor = None;
        self.awaiting = Some(self.request(ctx, None));
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let list = self.list.as_deref().unwrap_or_default();
        let rows = rows(list, self.elsewhere.len());
        if self.pos.on_action(action, rows.len(), ctx.page) {
            // At the end of what is loaded: the next page.
            let idle = self.more.is_none() && self.awaiting.is_none();
            let end = rows.len() - self.elsewhere.len();
            if self.pos.selected + 1 >= end && idle {
                if let Some(cursor) = self.next_cursor.clone() {
                    self.more = Some(self.request(ctx, Some(cursor)));
                }
            }
            return;
        }
        match action {
            Action::Select => {
                let id = match rows.get(self.pos.selected) {
                    Some(Row::Agent(i)) => list[*i].id.clone(),
                    Some(Row::Child(i, c)) => list[*i].children[*c].child_agent_id.clone(),
                    Some(Row::Elsewhere(k)) => {
                        let (name, agent, _) = self.elsewhere[*k].clone();
                        return ctx.intents.push(Intent::SwitchRuntime { name, agent });
                    }
                    None => return,
                };
                match id == ctx.agent_id {
                    true => ctx.intents.push(Intent::Close),
                    false => ctx.intents.push(Intent::ViewAgent(id)),
                }
            }
            Action::NewAgent => {
                self.input = Some(Input::new("New agent name", Purpose::NewAgent, ""))
            }
            Action::FilterKind => {
                self.input = Some(Input::new(
                    "Agents whose id contains",
                    Purpose::FilterKind,
                    &self.query,
                ))
            }
            Action::Refresh => self.refresh(ctx),
            _ => {}
        }
    }

    pub fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        let name = input.value();
        if input.purpose == Purpose::FilterKind {
            self.query = name.trim().to_owned();
            self.pos.selected = 0;
            self.refresh(ctx);
            return;
        }
        if name.is_empty() {
            return;
        }
        let id = ctx.call(
            OverlayKind::Agents,
            Request::AgentCreate {
                agent_id: name,
                template: None,
            },
        );
        self.creating = Some(id);
        self.status.wait(id, "Created.");
    }

    pub fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        if Some(id) == self.awaiting || Some(id) == self.more {
            let first = Some(id) == self.awaiting;
            self.awaiting = self.awaiting.filter(|a| *a != id);
            self.more = self.more.filter(|m| *m != id);
            match answer::<AgentsPage>(result) {
                Ok(page) => {
                    self.next_cursor = page.next_cursor.clone();
                    self.total = page.total;
                    let list = self.list.get_or_insert_with(Vec::new);
                    if first {
                        list.clear();
                    }
                    list.extend(page.agents.iter().cloned());
                    let len = rows(list, self.elsewhere.len()).len();
                    self.pos.clamp(len);
                }
                Err(e) => self.status.message = Some((e, Tone::Error)),
            }
        } else if Some(id) == self.creating {
            self.creating = None;
            self.status.on_response(id, result);
            if result.is_ok() {
                if let Ok(new) = answer::<AgentSummary>(result) {
                    self.status.message = Some((
                        format!("Created {}; Enter switches to it.", new.id),
                        Tone::Ok,
                    ));
                }
                self.refresh(ctx);
            }
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        let Some(list) = &self.list else {
            let line = Line::from(Span::styled("Loading agents…", t.dim()));
            buf.set_line(area.x + 1, area.y, &line, area.width);
            return;
        };
        let width = usize::from(area.width).saturating_sub(1);
        let there = self.elsewhere.iter();
        let name_w = list
            .iter()
            .map(|a| a.id.chars().count())
            .chain(there.map(|(r, a, _)| r.chars().count() + a.chars().count() + 1))
            .chain(list.iter().flat_map(|a| {
                a.children
                    .iter()
                    .map(|c| c.child_agent_id.chars().count() + 2)
            }))
            .max()
            .unwrap_or(4)
            .clamp(4, 20)
            + 2;
        // The longest label ("◷ Runnable work") plus two spaces.
        let label_w = 17;
        let counts_w = if width >= 90 { 34 } else { 0 };
        let reason_w = width.saturating_sub(name_w + label_w + counts_w + 3);
        let status_h = u16::from(self.status.message.is_some());
        // Other runtimes that could not be asked, or have no agents: one
        // line each, at the bottom.
        let elsewhere = elsewhere_lines(look, width);
        let elsewhere_h = (elsewhere.len() as u16).min(area.height / 3);
        for (i, line) in elsewhere.iter().take(usize::from(elsewhere_h)).enumerate() {
            let y = area.y + area.height - status_h - elsewhere_h + i as u16;
            buf.set_line(area.x + 1, y, line, area.width.saturating_sub(1));
        }
        let rows_h = area.height.saturating_sub(status_h + elsewhere_h);
        let all = rows(list, self.elsewhere.len());
        let first = self.pos.window(all.len(), usize::from(rows_h));
        for (n, row) in all.iter().enumerate().skip(first).take(usize::from(rows_h)) {
            let y = area.y + (n - first) as u16;
            let a = match row {
                Row::Agent(i) => &list[*i],
                Row::Elsewhere(k) => {
                    let (runtime, agent, posture) = &self.elsewhere[*k];
                    let p = posture_look(Some(*posture));
                    let style = if p.needs_operator {
                        t.attention()
                    } else {
                        t.text()
                    };
                    let line = Line::from(vec![
                        Span::styled("  ", t.accent()),
                        Span::styled(fit(&format!("{runtime}/{agent}"), name_w), t.text()),
                        Span::styled(fit(&format!("{} {}", p.glyph, p.label), label_w), style),
                        Span::styled(
                            fit(&format!("on {runtime}: Enter goes there"), reason_w),
                            t.dim(),
                        ),
                    ]);
                    draw_row(area, buf, y, &line, n == self.pos.selected, t);
                    continue;
                }
                Row::Child(i, c) => {
                    let child = &list[*i].children[*c];
                    let line = child_row(child, name_w, label_w, width, look);
                    draw_row(area, buf, y, &line, n == self.pos.selected, t);
                    continue;
                }
            };
            let look_p = posture_look(Some(a.posture));
            // The control status wins where it explains the agent: a
            // paused or stopped agent says so, not its posture.
            let (glyph, label, needs) = match a.status {
                AgentStatus::Paused => ("‖", "Paused", false),
                AgentStatus::Stopped => ("■", "Stopped", false),
                _ => (look_p.glyph, look_p.label, look_p.needs_operator),
            };
            let viewing = a.id == look.agent_id;
            let mark = if viewing { "● " } else { "  " };
            let mut spans = vec![
                Span::styled(mark, t.accent()),
                Span::styled(
                    fit(&a.id, name_w),
                    if viewing {
                        t.accent().patch(t.bold())
                    } else {
                        t.text()
                    },
                ),
                Span::styled(
                    fit(&format!("{glyph} {label}"), label_w),
                    if needs { t.attention() } else { t.text() },
                ),
                Span::styled(fit(&a.posture_reason, reason_w), t.dim()),
            ];
            if counts_w > 0 {
                let counts = format!(
                    " queue {} · tasks {} · work {}",
                    a.queue_depth, a.tasks_active, a.work_items_open
                );
                spans.push(Span::styled(truncate(&counts, counts_w), t.dim()));
            }
            draw_row(area, buf, y, &Line::from(spans), n == self.pos.selected, t);
        }
        if list.is_empty() {
            let text = match self.query.is_empty() {
                true => "No agents yet: press n to create one.".to_owned(),
                false => format!(
                    "No agent's id contains \"{}\" (/ changes the filter).",
                    self.query
                ),
            };
            let line = Line::from(Span::styled(text, t.dim()));
            buf.set_line(area.x + 1, area.y, &line, area.width);
        }
        self.status.draw_last(area, buf, t);
    }
}

/// The runtimes not shown that list no agent at their last glance (their
/// agents are rows of the list): one line each, `on build: unreachable (…)`.
fn elsewhere_lines(look: &Look<'_>, width: usize) -> Vec<Line<'static>> {
    let t = look.theme;
    let r = look.runtimes;
    let mut out = Vec::new();
    for g in r.last.iter().filter(|g| g.name != r.current) {
        let mut spans = vec![Span::styled(format!("on {}: ", g.name), t.bold())];
        match &g.seen {
            Err(e) => spans.push(Span::styled(format!("unreachable ({e})"), t.dim())),
            Ok(seen) if seen.listed.is_empty() => spans.push(Span::styled("no agents", t.dim())),
            Ok(_) => continue,
        }
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        out.push(match text.chars().count() > width {
            true => Line::from(Span::styled(truncate(&text, width), t.dim())),
            false => Line::from(spans),
        });
    }
    out
}

/// A child under its parent: `└ id`, its task state (or posture while it
/// runs), and the label and posture reason.
fn child_row<'a>(
    c: &'a crate::protocol::types::ChildSupervision,
    name_w: usize,
    label_w: usize,
    width: usize,
    look: &Look<'_>,
) -> Line<'a> {
    use crate::protocol::types::TaskStatus;
    let t = look.theme;
    let viewing = c.child_agent_id == look.agent_id;
    let look_p = posture_look(Some(c.posture));
    let (state, needs) = match c.task_status {
        TaskStatus::Completed => ("✓ Completed".to_owned(), false),
        TaskStatus::Failed => ("✗ Failed".to_owned(), true),
        TaskStatus::Cancelled | TaskStatus::Interrupted => ("■ Stopped".to_owned(), false),
        TaskStatus::Queued | TaskStatus::Running | TaskStatus::Cancelling => (
            format!("{} {}", look_p.glyph, look_p.label),
            look_p.needs_operator,
        ),
    };
    let cleanup = c.worktree_state().map(|(_, cleanup)| cleanup);
    let detail = match (cleanup, c.task_status.is_terminal()) {
        (Some(WorktreeCleanup::Retained), true) => {
            format!("{} · worktree kept for review", c.label)
        }
        (_, true) => c.label.clone(),
        (_, false) => format!("{} · {}", c.label, c.posture_reason),
    };
    let rest = width.saturating_sub(name_w + label_w + 3);
    Line::from(vec![
        Span::styled(if viewing { "● " } else { "  " }, t.accent()),
        Span::styled(fit(&format!("└ {}", c.child_agent_id), name_w), t.dim()),
        Span::styled(
            fit(&state, label_w),
            if needs { t.attention() } else { t.text() },
        ),
        Span::styled(fit(&detail, rest), t.dim()),
    ])
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for Agents {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Agents
    }

    fn title(&self, _look: &Look<'_>) -> String {
        let shown = self.list.as_ref().map_or(0, Vec::len) as u64;
        let count = match self.total > shown {
            true => format!(" · {shown} of {}", self.total),
            false => String::new(),
        };
        match self.query.is_empty() {
            true => format!(" Agents{count} "),
            false => format!(" Agents matching \"{}\"{count} ", self.query),
        }
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        Agents::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        Agents::render(self, area, buf, look)
    }

    fn context(&self) -> Option<KeyContext> {
        Some(KeyContext::Agents)
    }

    super::input_line!(Agents);

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        Agents::on_response(self, id, result, ctx)
    }
}
