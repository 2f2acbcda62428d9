//! The agent state overlay: control status, derived posture and its
//! reason, counts, the closure and the last scheduler decision with its
//! evidence, opened by a plain-words answer to "why is this agent idle?".
//! It shows the console's projection at once and a fresh `agent.state`
//! when that answers.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::fmt::{clock, words};
use super::super::keymap::{Action, OverlayKind};
use super::super::msg::RequestId;
use super::super::projection::{posture_look, AgentView};
use super::super::theme::Theme;
use super::super::wrap::{sanitize, wrap};
use super::{answer, draw_lines, field, header, Ctx, Look};
use crate::model::decision::AgentSchedulingPosture;
use crate::protocol::events::Event;
use crate::protocol::{AgentState, ApiError, Request, Response};
use crate::ui::present::counted;
use crate::ui::present::wire_name;

#[derive(Debug, Default)]
pub struct StateView {
    awaiting: Option<RequestId>,
    fresh: Option<AgentView>,
    error: Option<String>,
    top: usize,
}

impl StateView {
    pub fn open(ctx: &mut Ctx<'_>) -> StateView {
        let request = Request::AgentState {
            agent_id: ctx.agent_id.to_owned(),
        };
        StateView {
            awaiting: Some(ctx.call(OverlayKind::State, request)),
            ..StateView::default()
        }
    }

    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        match action {
            Action::Up => self.top = self.top.saturating_sub(1),
            Action::Down => self.top += 1,
            Action::PageUp => self.top = self.top.saturating_sub(ctx.page),
            Action::PageDown => self.top += ctx.page,
            Action::Home => self.top = 0,
            _ => {}
        }
    }

    pub fn on_response(&mut self, id: RequestId, result: &Result<Response, ApiError>) {
        if Some(id) != self.awaiting {
            return;
        }
        self.awaiting = None;
        match answer::<AgentState>(result) {
            Ok(s) => {
                let mut view = AgentView::default();
                view.bootstrap(s);
                self.fresh = Some(view);
            }
            Err(e) => self.error = Some(e),
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let agent = self.fresh.as_ref().unwrap_or(look.agent);
        let mut lines = lines(agent, usize::from(area.width), look.theme);
        if let Some(e) = &self.error {
            lines.insert(
                0,
                Line::from(Span::styled(format!("! {e}"), look.theme.err())),
            );
        }
        let h = usize::from(area.height);
        let top = self.top.min(lines.len().saturating_sub(h));
        draw_lines(area, buf, &lines[top..]);
    }
}

fn question(posture: Option<AgentSchedulingPosture>) -> &'static str {
    use AgentSchedulingPosture as P;
    match posture {
        Some(P::ActiveTurn) => "What is it doing?",
        Some(P::HasQueuedInput | P::HasRunnableWork) => "What will it do next?",
        Some(P::WaitingForTask | P::WaitingForExternal) => "What is it waiting for?",
        Some(P::WaitingForOperator) => "What does it need from you?",
        Some(P::Blocked) => "Why is it blocked?",
        Some(P::Archived) => "Why is it stopped?",
        Some(P::Idle) | None => "Why is this agent idle?",
    }
}

/// The overlay's text for `agent` at `width`.
pub fn lines(agent: &AgentView, width: usize, t: Theme) -> Vec<Line<'static>> {
    let w = width;
    let lw = 15;
    let rest = [Span::raw(" ".repeat(lw))];
    let mut out = vec![header(question(agent.posture), t)];
    for sentence in agent.explanation() {
        out.extend(wrap(
            &[Span::raw(sentence)],
            w,
            &[Span::raw("  ")],
            &[Span::raw("  ")],
        ));
    }
    out.push(Line::default());
    out.push(header("Status", t));
    let look = posture_look(agent.posture);
    let posture = match agent.posture_reason.is_empty() {
        true => look.label.to_owned(),
        false => format!("{} — {}", look.label, agent.posture_reason),
    };
    let status = agent.status.map_or("", |s| s.as_str());
    out.extend(field("  status", &words(status), lw, w, t));
    let name = agent.posture.map_or("", |p| p.as_str());
    out.extend(field("  posture", &format!("{posture} ({name})"), lw, w, t));
    let model = agent
        .model
        .clone()
        .unwrap_or_else(|| "runtime default".into());
    out.extend(field("  model", &model, lw, w, t));
    if let Some(s) = &agent.summary {
        out.extend(field("  context", &context_words(&s.context), lw, w, t));
        out.extend(field(
            "  queue",
            &format!("{} queued", s.queue_depth),
            lw,
            w,
            t,
        ));
        let waits = format!(
            "{} waiting intents, {} timers",
            s.waiting_intents_active, s.timers_active
        );
        out.extend(field("  waiting on", &waits, lw, w, t));
    }
    out.extend(field(
        "  tasks",
        &format!("{} active", agent.active_tasks()),
        lw,
        w,
        t,
    ));
    let done = agent.work_items.len() - agent.open_work_items();
    let work = format!("{} open, {done} completed", agent.open_work_items());
    out.extend(field("  work items", &work, lw, w, t));
    if let Some(c) = &agent.current_work_item {
        let obj = agent
            .work_item(c)
            .map(|w| w.objective.clone())
            .unwrap_or_default();
        out.extend(field("  current", &format!("{c} {obj}"), lw, w, t));
    }
    out.push(Line::default());
    out.push(header("Closure", t));
    match &agent.closure {
        None => out.push(Line::from(Span::styled(
            "  no turn has closed yet",
            t.dim(),
        ))),
        Some(c) => {
            out.extend(field("  outcome", c.outcome.as_str(), lw, w, t));
            let waiting = c.waiting_reason.as_ref().map(wire_name);
            let waiting = waiting.map_or("nothing".into(), |r| words(&r));
            out.extend(field("  waiting for", &waiting, lw, w, t));
            let signal = c.work_signal.as_ref().map(|s| {
                let status = wire_name(&s.status);
                format!("{} ({status})", s.work_item_id)
            });
            out.extend(field(
                "  work signal",
                &signal.unwrap_or_else(|| "none".into()),
                lw,
                w,
                t,
            ));
            let runtime = wire_name(&c.runtime_posture);
            out.extend(field("  runtime", &runtime, lw, w, t));
            evidence(&mut out, &c.evidence, w, lw, &rest, t);
        }
    }
    out.push(Line::default());
    match &agent.last_decision {
        None => out.push(header("Last scheduler decision: none recorded", t)),
        Some(d) => {
            let head = format!(
                "Last scheduler decision (#{}, {})",
                d.event_seq,
                clock(&d.ts)
            );
            out.push(header(&head, t));
            let decision = match d.event() {
                Event::SchedulerDecision(made) => Some(made.decision),
                _ => None,
            };
            match decision {
                None => out.extend(field("  decision", "(unreadable)", lw, w, t)),
                Some(p) => {
                    out.extend(field("  decision", p.kind.as_str(), lw, w, t));
                    out.extend(field("  reason", &words(p.reason.as_str()), lw, w, t));
                    for (label, id) in [
                        ("  message", &p.message_id),
                        ("  task", &p.task_id),
                        ("  work item", &p.work_item_id),
                    ] {
                        if let Some(v) = id {
                            out.extend(field(label, v, lw, w, t));
                        }
                    }
                    evidence(&mut out, &p.evidence, w, lw, &rest, t);
                }
            }
        }
    }
    if let Some(x) = &agent.execution {
        out.push(Line::default());
        out.push(header("Execution: where the tools act", t));
        out.extend(field("  workspace", &x.workspace_id, lw, w, t));
        out.extend(field("  anchor", &x.workspace_anchor, lw, w, t));
        out.extend(field("  root", &x.execution_root, lw, w, t));
        out.extend(field("  cwd", &x.cwd, lw, w, t));
        let mode = match &x.worktree {
            Some(wt) => format!(
                "isolated: worktree on branch {} (from {})",
                wt.worktree_branch,
                if wt.original_branch.is_empty() {
                    "a detached HEAD"
                } else {
                    &wt.original_branch
                }
            ),
            None => x.mode.as_str().to_owned(),
        };
        out.extend(field("  mode", &mode, lw, w, t));
        let policy = format!(
            "{}; tool path arguments confined to the root",
            x.policy.confinement_line()
        );
        out.extend(field("  policy", &policy, lw, w, t));
    }
    out
}

fn evidence(
    out: &mut Vec<Line<'static>>,
    ev: &[String],
    w: usize,
    lw: usize,
    rest: &[Span<'static>],
    t: Theme,
) {
    for (i, e) in ev.iter().enumerate() {
        let label = if i == 0 { "evidence" } else { "" };
        let first = [Span::styled(
            format!("  {}", super::super::wrap::fit(label, lw - 2)),
            t.dim(),
        )];
        let spans = [Span::raw(format!("• {}", sanitize(e)))];
        out.extend(wrap(&spans, w, &first, rest));
    }
}

/// "41% of a 200.0k-token window · 2 compactions, 310 entries folded".
fn context_words(c: &crate::protocol::types::ContextView) -> String {
    use crate::ui::present::compact_count;
    let used = match (c.percent, c.window) {
        (Some(p), w) if w > 0 => format!("{p}% of a {}-token window", compact_count(w)),
        (None, w) if w > 0 => format!("no prompt yet; {}-token window", compact_count(w)),
        _ => "no prompt yet".to_owned(),
    };
    match c.compaction_epoch {
        0 => format!("{used} · nothing compacted"),
        n => format!(
            "{used} · {}, {} folded",
            counted(n as u64, "compaction", "compactions"),
            counted(c.compacted_entries, "entry", "entries")
        ),
    }
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for StateView {
    fn kind(&self) -> OverlayKind {
        OverlayKind::State
    }

    fn title(&self, look: &Look<'_>) -> String {
        format!(" Agent state · {} ", look.agent_id)
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        StateView::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        StateView::render(self, area, buf, look)
    }

    fn on_response(
        &mut self,
        id: RequestId,
        result: &Result<Response, ApiError>,
        _ctx: &mut Ctx<'_>,
    ) {
        StateView::on_response(self, id, result)
    }
}
