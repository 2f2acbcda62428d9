//! The tasks overlay: the agent's tasks (active first, then the most
//! recent finished ones) from the projection, the selected task's output
//! (`task.output`, re-fetched every second while following a running
//! task), stop (`task.stop`) and a line of input (`task.input`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::keymap::{Action, KeyContext, OverlayKind};
use super::super::msg::RequestId;
use super::super::projection::{AgentView, TaskView};
use super::super::rows::{command_status, CommandRow, CommandState, Tone};
use super::super::wrap::{chop, fit, sanitize, truncate, width};
use super::input::{Input, Purpose};
use super::{answer, draw_row, rule, split, Ctx, ListPos, Look, Status};
use crate::protocol::types::TaskInputReceipt;
use crate::protocol::{ApiError, Request, Response, RetrievalStatus, TaskOutput};

/// How much output one fetch asks for.
const OUTPUT_BYTES: u64 = 64 * 1024;
/// Re-fetch period while following.
const POLL_MS: i64 = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub task_id: String,
    pub text: String,
    pub bytes: u64,
    pub truncated: bool,
    /// The task was still running when this output was read.
    pub running: bool,
}

#[derive(Debug, Default)]
pub struct Tasks {
    pub input: Option<Input>,
    pos: ListPos,
    /// The selected task's id: the selection stays on it when it ends and
    /// the list reorders.
    selected_id: Option<String>,
    /// Output lines scrolled back from the end (`[` and `]`).
    back: usize,
    pub output: Option<Output>,
    awaiting: Option<RequestId>,
    follow: bool,
    last_poll_ms: i64,
    status: Status,
}

/// Active tasks first (oldest first), then finished ones, newest first.
pub fn ordered(agent: &AgentView) -> Vec<&TaskView> {
    let mut active: Vec<&TaskView> = agent.tasks.iter().filter(|t| t.is_active()).collect();
    let mut done: Vec<&TaskView> = agent.tasks.iter().filter(|t| !t.is_active()).collect();
    active.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    done.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    active.extend(done);
    active
}

impl Tasks {
    pub fn open(ctx: &mut Ctx<'_>) -> Tasks {
        let mut t = Tasks {
            follow: true,
            ..Tasks::default()
        };
        t.fetch(ctx);
        t
    }

    fn selected<'a>(&self, agent: &'a AgentView) -> Option<&'a TaskView> {
        let tasks = ordered(agent);
        self.selected_id
            .as_deref()
            .and_then(|id| tasks.iter().find(|t| t.id == id))
            .or_else(|| tasks.get(self.pos.selected))
            .copied()
    }

    /// Where the selected task is in the list now.
    fn selected_index(&self, agent: &AgentView) -> usize {
        let tasks = ordered(agent);
        self.selected_id
            .as_deref()
            .and_then(|id| tasks.iter().position(|t| t.id == id))
            .unwrap_or(self.pos.selected)
    }

    fn fetch(&mut self, ctx: &mut Ctx<'_>) {
        let Some(task) = self.selected(ctx.agent) else {
            return;
        };
        self.selected_id = Some(task.id.clone());
        let request = Request::TaskOutput {
            agent_id: ctx.agent_id.to_owned(),
            task_id: task.id.clone(),
            max_bytes: Some(OUTPUT_BYTES),
        };
        self.awaiting = Some(ctx.call(OverlayKind::Tasks, request));
        self.last_poll_ms = ctx.now_ms;
    }

    /// Following a running task, or one that ended since its output was
    /// last read (one more read shows how it ended): the core keeps
    /// ticking.
    pub fn following(&self, agent: &AgentView) -> bool {
        let Some(task) = self.selected(agent) else {
            return false;
        };
        let stale = self
            .output
            .as_ref()
            .is_some_and(|o| o.task_id == task.id && o.running && !task.is_active());
        self.follow && (task.is_active() || stale)
    }

    pub fn on_tick(&mut self, ctx: &mut Ctx<'_>) {
        let due = ctx.now_ms - self.last_poll_ms >= POLL_MS;
        if self.following(ctx.agent) && due && self.awaiting.is_none() {
            self.fetch(ctx);
        }
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let len = ordered(ctx.agent).len();
        self.pos.selected = self.selected_index(ctx.agent);
        let before = self.pos.selected;
        if self.pos.on_action(action, len, ctx.page) {
            if self.pos.selected != before {
                self.selected_id = None;
                self.back = 0;
                self.fetch(ctx);
            }
            return;
        }
        let Some(task) = self.selected(ctx.agent).cloned() else {
            return;
        };
        let agent_id = ctx.agent_id.to_owned();
        match action {
            // Scroll the output back and forth by half a page.
            Action::Earlier => self.back += ctx.page.max(2) / 2,
            Action::Later => self.back = self.back.saturating_sub(ctx.page.max(2) / 2),
            Action::Select | Action::Refresh => self.fetch(ctx),
            Action::Follow => {
                self.follow = !self.follow;
                if self.follow {
                    self.fetch(ctx);
                }
            }
            Action::StopTask if task.is_active() => {
                let id = ctx.call(
                    OverlayKind::Tasks,
                    Request::TaskStop {
                        agent_id,
                        task_id: task.id,
                    },
                );
                self.status.wait(id, "Stop requested.");
            }
            Action::StopTask | Action::TaskInput if !task.is_active() => {
                self.status.message = Some(("That task has already finished.".into(), Tone::Info));
            }
            Action::TaskInput => {
                let prompt = format!("Input for {}", task.id);
                self.input = Some(Input::new(&prompt, Purpose::TaskInput { id: task.id }, ""));
            }
            _ => {}
        }
    }

    pub fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        if let Purpose::TaskInput { id } = input.purpose {
            let text = format!("{}\n", input.field.text());
            let request = Request::TaskInput {
                agent_id: ctx.agent_id.to_owned(),
                task_id: id,
                input: text,
            };
            let rid = ctx.call(OverlayKind::Tasks, request);
            self.status.wait(rid, "Input sent.");
        }
    }

    pub fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        _ctx: &mut Ctx<'_>,
    ) {
        if Some(id) != self.awaiting {
            self.status.on_response(id, result);
            if let Ok(receipt) = answer::<TaskInputReceipt>(result) {
                if !receipt.accepted_input {
                    let why = match receipt.summary_text.trim() {
                        "" => "the task does not accept input",
                        why => why,
                    };
                    self.status.message = Some((why.to_owned(), Tone::Error));
                }
            }
            return;
        }
        self.awaiting = None;
        match answer::<TaskOutput>(result) {
            Ok(out) => {
                self.output = Some(Output {
                    task_id: out.task.id.clone(),
                    text: out.output.clone(),
                    bytes: out.output_bytes,
                    truncated: out.truncated,
                    running: out.retrieval_status == RetrievalStatus::NotReady,
                });
            }
            Err(e) => self.status.message = Some((e, Tone::Error)),
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let t = look.theme;
        let tasks = ordered(look.agent);
        if tasks.is_empty() {
            let line = Line::from(Span::styled(
                "No tasks. `!CMD` in the composer runs a command task.",
                t.dim(),
            ));
            buf.set_line(area.x + 1, area.y, &line, area.width);
            return;
        }
        let list_h = (tasks.len() as u16)
            .clamp(3, area.height / 3)
            .min(area.height);
        let (list, pane) = split(area, area.height.saturating_sub(list_h + 1));
        let sel = self.selected_index(look.agent);
        let first = self
            .pos
            .window_at(sel, tasks.len(), usize::from(list.height));
        let room = usize::from(area.width).saturating_sub(1);
        let shown: Vec<(usize, &&TaskView, String, _)> = tasks
            .iter()
            .enumerate()
            .skip(first)
            .take(usize::from(list.height))
            .map(|(n, task)| {
                let row = CommandRow {
                    task_id: Some(task.id.clone()),
                    cmd: task.cmd.clone(),
                    operator: task.operator,
                    status: CommandState::Task(task.status),
                    exit: task.exit_status,
                    duration_ms: task.duration_ms,
                    summary: task.summary.clone(),
                    output: None,
                    stderr: None,
                };
                let (status, style) = command_status(&row, t);
                (n, task, status, style)
            })
            .collect();
        // As wide as the widest status shown, within bounds: the command
        // gets the rest.
        let status_w = shown
            .iter()
            .map(|(_, _, s, _)| width(s))
            .max()
            .unwrap_or(0)
            .clamp(12, STATUS_W);
        for (n, task, status, style) in shown {
            let origin = if task.operator { "you" } else { "agent" };
            let fixed = ID_W + 7 + status_w;
            let cmd_w = room.saturating_sub(fixed).max(8);
            let line = Line::from(vec![
                Span::styled(fit(&short_id(&task.id), ID_W), t.dim()),
                Span::styled(fit(origin, 7), t.dim()),
                Span::raw(fit(&format!("$ {}", task.cmd), cmd_w - 1)),
                Span::raw(" "),
                Span::styled(truncate(&status, status_w), style),
            ]);
            let y = list.y + (n - first) as u16;
            draw_row(list, buf, y, &line, n == sel, t);
        }
        let Some(pane) = pane else {
            return;
        };
        rule(area, buf, pane.y - 1, t);
        self.render_output(pane, buf, look, tasks.get(sel).copied());
    }

    fn render_output(
        &self,
        pane: Rect,
        buf: &mut Buffer,
        look: &Look<'_>,
        task: Option<&TaskView>,
    ) {
        let t = look.theme;
        let Some(task) = task else {
            return;
        };
        let follow = match (self.follow, task.is_active()) {
            (true, true) => " · following",
            _ => "",
        };
        let mut lines = vec![Line::from(vec![
            Span::styled(format!("Output of {}", task.id), t.bold()),
            Span::styled(follow, t.dim()),
        ])];
        match self.output.as_ref().filter(|o| o.task_id == task.id) {
            None => lines.push(Line::from(Span::styled("Enter shows the output.", t.dim()))),
            Some(o) if o.text.trim().is_empty() => {
                lines.push(Line::from(Span::styled("(no output yet)", t.dim())))
            }
            Some(o) => {
                let mut body: Vec<Line> = Vec::new();
                for l in sanitize(&o.text).trim_end().lines() {
                    for piece in chop(l, usize::from(pane.width).saturating_sub(2)) {
                        body.push(Line::from(vec![
                            Span::styled("│ ", t.dim()),
                            Span::raw(piece),
                        ]));
                    }
                }
                let room = usize::from(pane.height).saturating_sub(lines.len() + 1);
                // Scrolled back `back` lines from the end (never past the
                // start).
                let end = body
                    .len()
                    .saturating_sub(self.back)
                    .max(room.min(body.len()));
                let skip = end.saturating_sub(room);
                if o.truncated || skip > 0 {
                    let note = match end < body.len() {
                        true => format!(
                            "… scrolled back {} lines ([ earlier, ] later; {} bytes in all)",
                            body.len() - end,
                            o.bytes
                        ),
                        false => format!(
                            "… earlier output above: [ scrolls back ({} bytes in all)",
                            o.bytes
                        ),
                    };
                    lines.push(Line::from(Span::styled(note, t.dim())));
                }
                lines.extend(body.into_iter().take(end).skip(skip));
            }
        }
        if let Some(status) = self.status.line(t) {
            let room = usize::from(pane.height).saturating_sub(1);
            lines.truncate(room);
            while lines.len() < room {
                lines.push(Line::default());
            }
            lines.push(status);
        }
        super::draw_lines(pane, buf, &lines);
    }
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for Tasks {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Tasks
    }

    fn title(&self, look: &Look<'_>) -> String {
        format!(" Tasks · {} ", look.agent_id)
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        Tasks::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        Tasks::render(self, area, buf, look)
    }

    fn context(&self) -> Option<KeyContext> {
        Some(KeyContext::Tasks)
    }

    super::input_line!(Tasks);

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        ctx: &mut Ctx<'_>,
    ) {
        Tasks::on_response(self, id, result, ctx)
    }

    fn on_tick(&mut self, ctx: &mut Ctx<'_>) {
        Tasks::on_tick(self, ctx)
    }

    fn wants_tick(&self, agent: &AgentView) -> bool {
        self.following(agent)
    }
}

/// The list's id column: the id's end, two columns apart from the next.
const ID_W: usize = 11;
/// The status column at most: room for "✗ killed by signal 15 · 12m 30s".
const STATUS_W: usize = 32;

/// A task id as the list shows it: whole when short, else its last eight
/// characters. A task id starts with the time it was made, which tasks
/// made close together share; its end is what tells them apart (the
/// output pane's title names the whole id).
fn short_id(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    match chars.len() {
        n if n <= ID_W - 2 => id.to_owned(),
        n => format!("…{}", chars[n - 8..].iter().collect::<String>()),
    }
}

#[cfg(test)]
mod tests {
    use super::short_id;

    #[test]
    fn a_task_id_shows_its_end_which_tells_tasks_apart() {
        // Made a moment apart: the same start, different ends.
        let a = "task_01a22d9ec0d273ff8c109e61c75a21a2";
        let b = "task_01a22d9ec0d27a0b44e1f0a9d3f07e15";
        assert_eq!(short_id(a), "…c75a21a2");
        assert_ne!(short_id(a), short_id(b));
        assert_eq!(short_id("task_02"), "task_02");
    }
}
