//! The status line: agent, posture, workspace, sandbox and approval
//! marks, model, context, tokens, spend, counts, display mode and the
//! connection. A narrow terminal leaves out the least important parts
//! first and ends the line in a dim ` …`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::msg::Connection;
use super::projection::posture_look;
use super::state::State;

/// The status line's word for an approval mode, and its priority.
fn approval_mark(a: crate::model::approval::Approval) -> (u8, &'static str) {
    use crate::model::approval::Approval;
    match a {
        Approval::OnRequest => (7, "asks: escapes"),
        Approval::Never => (7, "asks: never"),
        Approval::OnWrite => (3, "asks: writes"),
        Approval::Always => (3, "asks: all"),
    }
}

/// One status segment: its spans and how important it is (0 = kept last).
struct Segment {
    priority: u8,
    spans: Vec<Span<'static>>,
}

fn seg(priority: u8, spans: Vec<Span<'static>>) -> Segment {
    Segment { priority, spans }
}

pub(super) fn status_line(state: &State, area: Rect, buf: &mut Buffer) {
    let t = state.theme;
    let mut left = segments(state);
    let conn = connection(state);
    let right_w = conn.width() + 1;
    let avail = usize::from(area.width).saturating_sub(right_w + 1);
    let marker = fit(&mut left, avail);
    let mut spans = vec![Span::raw(" ")];
    for (i, s) in left.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", t.dim()));
        }
        spans.extend(s.spans);
    }
    if marker {
        spans.push(Span::styled(" …", t.dim()));
    }
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
    let x = area.x + area.width.saturating_sub(right_w as u16);
    buf.set_span(x, area.y, &conn, right_w as u16);
}

/// Every part the line would show given the room, each with the priority
/// it keeps its room by (lower stays longer).
fn segments(state: &State) -> Vec<Segment> {
    let t = state.theme;
    let a = &state.agent;
    let mut left: Vec<Segment> = Vec::new();
    if state.attention {
        left.push(seg(
            0,
            vec![Span::styled(" ▲ NEEDS YOUR INPUT ", t.strong())],
        ));
    }
    // Other runtimes: what waits for the operator there, naming where.
    let elsewhere = &state.runtimes.elsewhere;
    if !elsewhere.is_empty() {
        let named: Vec<String> = elsewhere.iter().map(|(n, c)| format!("{n} {c}")).collect();
        left.push(seg(
            0,
            vec![Span::styled(
                format!(" ▲ elsewhere: {} ", named.join(", ")),
                t.strong(),
            )],
        ));
    }
    let mut who = Vec::new();
    if state.runtimes.several() && !state.runtimes.current.is_empty() {
        who.push(Span::styled(
            format!("{}/", state.runtimes.current),
            t.dim(),
        ));
    }
    who.push(Span::styled(
        state.agent_id.clone(),
        t.accent().patch(t.bold()),
    ));
    left.push(seg(1, who));
    let posture = match state.working() {
        Some(w) => (w.label.clone(), w.needs_operator),
        None => {
            let look = posture_look(a.posture);
            let label = match a.posture {
                None => "Connecting",
                Some(_) => look.label,
            };
            (label.to_owned(), look.needs_operator)
        }
    };
    let style = if posture.1 { t.attention() } else { t.bold() };
    left.push(seg(2, vec![Span::styled(posture.0, style)]));
    if !a.posture_reason.is_empty() {
        left.push(seg(
            7,
            vec![Span::styled(a.posture_reason.clone(), t.dim())],
        ));
    }
    if let Some(x) = &a.execution {
        execution(x, t, &mut left);
    }
    let effort = a.summary.as_ref().and_then(|s| s.reasoning_effort);
    let model = match &a.model {
        Some(m) => match effort {
            Some(e) => Span::raw(format!("{m} · {}", e.as_str())),
            None => Span::raw(m.clone()),
        },
        None if a.summary.is_none() => Span::styled("model …", t.dim()),
        None => Span::styled("no model — /model", t.attention()),
    };
    // Counts go before the model when the line is crowded.
    left.push(seg(3, vec![model]));
    if let Some(pct) = a.context_percent {
        let style = if pct >= 85 { t.attention() } else { t.dim() };
        left.push(seg(4, vec![Span::styled(format!("ctx {pct}%"), style)]));
    }
    left.extend(spend(state));
    left.push(seg(
        5,
        vec![Span::raw(format!("queue {}", a.queue_depth()))],
    ));
    left.push(seg(
        6,
        vec![Span::raw(format!("tasks {}", a.active_tasks()))],
    ));
    left.push(seg(
        6,
        vec![Span::raw(format!("work {}", a.open_work_items()))],
    ));
    // The display mode stays visible however crowded the line gets.
    left.push(seg(1, vec![Span::styled(state.mode.to_string(), t.dim())]));
    left
}

/// Where the tools act (the project, and its worktree branch when
/// isolated, or the agent's own home), how commands are confined, and
/// which calls wait for the operator.
fn execution(
    x: &crate::protocol::types::ExecutionSnapshot,
    t: super::theme::Theme,
    left: &mut Vec<Segment>,
) {
    // A project is worth its room; the agent's own home is the default
    // and goes first when the line is crowded.
    match x.workspace_id == crate::protocol::types::AGENT_HOME_ID {
        true => left.push(seg(7, vec![Span::styled("agent home", t.dim())])),
        false => left.push(seg(3, vec![Span::raw(format!("⌂ {}", x.label()))])),
    }
    // How commands are confined: quiet when sandboxed, loud when a
    // sandbox was asked for and the kernel could not give it.
    let mark = x.policy.mark();
    let (priority, style) = match mark {
        "unsandboxed!" => (3, t.attention()),
        _ => (6, t.dim()),
    };
    left.push(seg(priority, vec![Span::styled(mark, style)]));
    // Which calls wait for the operator (the workspace's own policy,
    // else the runtime's default): worth its room when something asks
    // before it runs, the first to go when only escapes do.
    let (priority, ask) = approval_mark(x.policy.approval.approval);
    left.push(seg(priority, vec![Span::styled(ask, t.dim())]));
}

/// Spend today, where a price is known (against the budget when one
/// applies; loud once the budget paused the agent).
fn spend(state: &State) -> Option<Segment> {
    let t = state.theme;
    let day = &state.agent.summary.as_ref()?.usage.as_ref()?.today;
    let spent = match day.budget_usd {
        Some(b) => format!("${:.2}/${b:.2} today", day.cost_usd),
        None => format!("${:.2} today", day.cost_usd),
    };
    let style = if day.paused_by_budget {
        t.attention()
    } else {
        t.dim()
    };
    (day.cost_usd > 0.0 || day.paused_by_budget).then(|| seg(5, vec![Span::styled(spent, style)]))
}

/// The link to the runtime, at the line's right end.
fn connection(state: &State) -> Span<'static> {
    let t = state.theme;
    match &state.connection {
        Connection::Embedded => Span::styled("embedded", t.dim()),
        Connection::Streaming => Span::styled("● streaming", t.ok()),
        Connection::Reconnecting { in_secs } => {
            Span::styled(format!("reconnecting in {in_secs}s"), t.err())
        }
        Connection::Disconnected { reason } => {
            Span::styled(format!("✗ disconnected: {reason}"), t.err())
        }
    }
}

/// Leave parts out, the highest priority first, until the rest fits in
/// `avail` columns; whether the dim ` …` that says so fits too.
fn fit(left: &mut Vec<Segment>, avail: usize) -> bool {
    let sep_w = 3;
    let total = |segs: &[Segment]| -> usize {
        let w: usize = segs
            .iter()
            .map(|s| s.spans.iter().map(Span::width).sum::<usize>())
            .sum();
        w + segs.len().saturating_sub(1) * sep_w + 1
    };
    // A line that had to leave parts out ends in a dim ` …` (`/status`
    // has them all), so a part left out never reads as missing.
    let mut left_out = false;
    let more_w = 2;
    while total(left) + if left_out { more_w } else { 0 } > avail && left.len() > 1 {
        // Room for the marker alone never costs a part that always stays
        // (priority 0 and 1): then the marker goes instead.
        let for_marker = total(left) <= avail;
        let Some(drop) = left
            .iter()
            .enumerate()
            .filter(|(_, s)| !for_marker || s.priority >= 2)
            .max_by_key(|(i, s)| (s.priority, *i))
            .map(|(i, _)| i)
        else {
            break;
        };
        left_out = true;
        left.remove(drop);
    }
    left_out && total(left) + more_w <= avail
}
