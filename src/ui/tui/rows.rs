//! Conversation rows: what each kind of row holds and how it renders into
//! wrapped lines. Rendering is cached per (width, display mode), so the
//! cost of a frame follows the rows on screen; any change to a row goes
//! through `Row::kind_mut`, which drops its cache.
//!
//! Every row carries a textual marker (`›`, `●`, `▲`, `✗`, `$`, `±`, `·`),
//! so its meaning never depends on colour.

use std::cell::RefCell;
use std::rc::Rc;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::fmt::duration;
use super::markdown;
use super::theme::Theme;
use super::wrap::{chop, sanitize, truncate, wrap};
use crate::protocol::types::TaskStatus;
use crate::protocol::DisplayMode;
use crate::ui::present::{Category, OperatorEvent, Visibility};

/// Most output lines a command row shows (the tail).
pub const OUTPUT_LINES: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub enum PromptState {
    Sending,
    Queued,
    /// Admitted durably, not yet taken up: where it stands in line
    /// (`queued`, `next in line`, `interjects at the next safe point`).
    Waiting(String),
    Admitted,
    Failed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tone {
    Info,
    Ok,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandRow {
    pub task_id: Option<String>,
    pub cmd: String,
    /// Started by the operator (`!CMD`): shown at every display mode, with
    /// its output.
    pub operator: bool,
    pub status: CommandState,
    pub exit: Option<i64>,
    pub duration_ms: Option<u64>,
    pub summary: Option<String>,
    pub output: Option<String>,
    /// The tail of its stderr: a failed command shows its last lines at
    /// every display mode.
    pub stderr: Option<String>,
}

/// Where a gated call stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalState {
    Waiting,
    /// `always`: the allow-list now covers calls like it.
    Approved {
        always: bool,
    },
    Denied {
        note: Option<String>,
    },
}

/// A tool call that waits (or waited) for the operator: what it would
/// do, why it asks, and the answer once there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRow {
    pub id: String,
    /// The turn that asked (it may wait for the answer).
    pub run_id: String,
    pub tool: String,
    /// One line: the command, or the files a patch writes.
    pub summary: String,
    pub why: String,
    pub workspace_id: String,
    /// The command as it would run (ExecCommand).
    pub cmd: Option<String>,
    /// The model's reason to leave the sandbox (an escape).
    pub justification: Option<String>,
    /// The patch as it would apply (ApplyPatch).
    pub patch: Option<String>,
    /// What "always" would add to the allow-list, when anything.
    pub always_adds: Option<String>,
    /// The reviewer model's verdict, in words, once it gave one.
    pub review: Option<String>,
    /// The reviewer's verdict answered it (under `reviewer_may`).
    pub by_reviewer: bool,
    pub state: ApprovalState,
    /// The oldest waiting call: the one `y`, `a` and `n` answer.
    pub keys: bool,
}

/// Most lines of a waiting patch shown in the conversation (`/approvals`
/// and the transcript have the rest).
pub const PATCH_LINES: usize = 20;

#[derive(Debug, Clone, PartialEq)]
pub enum RowKind {
    Operator {
        text: String,
        state: PromptState,
    },
    Brief {
        visibility: Visibility,
        /// `Result`, `Work done`, `Needs your input`, `Acknowledged`.
        title: String,
        text: String,
    },
    /// A failure visible at every display mode: a runtime error and the
    /// failure brief of the same message fold into one.
    Alert {
        summary: String,
        detail: Vec<String>,
        message_id: Option<String>,
    },
    Command(CommandRow),
    Approval(ApprovalRow),
    Patch {
        action: String,
        path: String,
        added: u64,
        removed: u64,
        /// This file's hunks, when the patch is known.
        diff: Option<String>,
    },
    /// Any other presented event (progress, tool, trace).
    Event(OperatorEvent),
    /// A local hint (unknown command, outcome of a control action).
    Note {
        text: String,
        tone: Tone,
    },
}

type Cached = (u16, DisplayMode, Rc<Vec<Line<'static>>>);

#[derive(Debug)]
pub struct Row {
    /// Boxed: a row is moved when older rows are put in front, and a
    /// small row keeps that cheap (a kind is ~250 bytes, a row ~80).
    kind: Box<RowKind>,
    /// The lowest display mode that shows this row.
    pub min_mode: DisplayMode,
    /// Superseded (assistant progress repeated by the final brief).
    pub hidden: bool,
    /// The `message_id` the row belongs to, when known.
    pub message_id: Option<String>,
    /// The `event_seq` of the event the row came from (of the last event
    /// applied, for a local note).
    pub seq: u64,
    cache: RefCell<Option<Cached>>,
}

impl Row {
    pub fn new(kind: RowKind, min_mode: DisplayMode) -> Row {
        Row {
            kind: Box::new(kind),
            min_mode,
            hidden: false,
            message_id: None,
            seq: 0,
            cache: RefCell::new(None),
        }
    }

    pub fn kind(&self) -> &RowKind {
        &self.kind
    }

    pub fn kind_mut(&mut self) -> &mut RowKind {
        self.cache.get_mut().take();
        &mut self.kind
    }

    pub fn visible(&self, mode: DisplayMode) -> bool {
        !self.hidden && mode.level() >= self.min_mode.level()
    }

    /// Block rows (messages, briefs, alerts, operator commands, notes)
    /// stand apart with a blank line; progress rows pack together.
    pub fn is_block(&self) -> bool {
        match &*self.kind {
            RowKind::Operator { .. }
            | RowKind::Brief { .. }
            | RowKind::Alert { .. }
            | RowKind::Note { .. } => true,
            RowKind::Approval(a) => a.state == ApprovalState::Waiting,
            RowKind::Command(c) => c.operator,
            RowKind::Patch { .. } | RowKind::Event(_) => false,
        }
    }

    /// Drop the cached lines (they are drawn again when next asked for).
    pub fn forget_lines(&self) {
        self.cache.borrow_mut().take();
    }

    #[cfg(test)]
    pub fn has_lines(&self) -> bool {
        self.cache.borrow().is_some()
    }

    /// The wrapped lines at `width` (cached).
    pub fn lines(&self, width: u16, mode: DisplayMode, theme: Theme) -> Rc<Vec<Line<'static>>> {
        if let Some((w, m, lines)) = &*self.cache.borrow() {
            if *w == width && *m == mode {
                return Rc::clone(lines);
            }
        }
        let lines = Rc::new(render(&self.kind, usize::from(width), mode, theme));
        *self.cache.borrow_mut() = Some((width, mode, Rc::clone(&lines)));
        lines
    }
}

/// A row as plain text, a string a line, without colours (what finding
/// matches; tests read what the console draws this way).
pub fn plain_lines(kind: &RowKind, width: usize, mode: DisplayMode) -> Vec<String> {
    render(kind, width, mode, Theme { no_color: true })
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

/// Render one row kind (uncached).
pub fn render(kind: &RowKind, width: usize, mode: DisplayMode, t: Theme) -> Vec<Line<'static>> {
    let width = width.max(8);
    match kind {
        RowKind::Operator { text, state } => operator(text, state, width, mode, t),
        RowKind::Brief {
            visibility,
            title,
            text,
        } => brief(*visibility, title, text, width, t),
        RowKind::Alert {
            summary, detail, ..
        } => {
            let spans = [Span::styled(sanitize(summary), t.err().patch(t.bold()))];
            let mut lines = wrap(&spans, width, &[Span::styled("✗ ", t.err())], &[pad()]);
            for d in detail {
                let spans = [Span::styled(sanitize(d), t.dim())];
                lines.extend(wrap(&spans, width, &[pad()], &[pad()]));
            }
            lines
        }
        RowKind::Command(c) => command(c, width, mode, t),
        RowKind::Approval(a) => approval(a, width, t),
        RowKind::Patch {
            action,
            path,
            added,
            removed,
            diff,
        } => {
            let spans = [
                Span::styled(format!("{action} "), t.dim()),
                Span::raw(sanitize(path)),
                Span::raw("  "),
                Span::styled(format!("+{added}"), t.ok()),
                Span::raw(" "),
                Span::styled(format!("-{removed}"), t.err()),
            ];
            let mut lines = wrap(&spans, width, &[Span::styled("± ", t.dim())], &[pad()]);
            if let Some(d) = diff {
                // Folded at info; verbose and debug show it whole.
                let max = match mode {
                    DisplayMode::Info => PATCH_LINES,
                    _ => usize::MAX,
                };
                lines.extend(diff_lines(d, width, max, t, Span::styled("  │ ", t.dim())));
            }
            lines
        }
        RowKind::Event(op) => event(op, width, t),
        RowKind::Note { text, tone } => {
            let (mark, style) = match tone {
                Tone::Info => ("» ", t.dim()),
                Tone::Ok => ("✓ ", t.ok()),
                Tone::Error => ("! ", t.err()),
            };
            // A note of several lines (`/context`) keeps its lines.
            let text = sanitize(text);
            let mut out = Vec::new();
            for (i, line) in text.split('\n').enumerate() {
                let first = match i {
                    0 => Span::styled(mark, style),
                    _ => pad(),
                };
                let spans = [Span::styled(line.to_owned(), style)];
                out.extend(wrap(&spans, width, &[first], &[pad()]));
            }
            out
        }
    }
}

fn pad() -> Span<'static> {
    Span::raw("  ")
}

/// Most lines of a long prompt shown at `info` (a paste, say); verbose
/// and the transcript show it whole.
pub const PROMPT_LINES: usize = 8;

fn operator(
    text: &str,
    state: &PromptState,
    width: usize,
    mode: DisplayMode,
    t: Theme,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let text = sanitize(text);
    let mut paras: Vec<&str> = text.trim_end().split('\n').collect();
    let folded = match mode {
        DisplayMode::Info if paras.len() > PROMPT_LINES + 2 => {
            let rest = paras.len() - PROMPT_LINES;
            paras.truncate(PROMPT_LINES);
            Some(rest)
        }
        _ => None,
    };
    let suffix = match state {
        PromptState::Sending => Some(Span::styled(" · sending…", t.dim())),
        PromptState::Queued => Some(Span::styled(" · queued", t.dim())),
        PromptState::Waiting(label) => Some(Span::styled(format!(" · {label}"), t.dim())),
        PromptState::Admitted => None,
        PromptState::Failed(e) if e.is_empty() => Some(Span::styled(" · ✗ not sent", t.err())),
        PromptState::Failed(e) => Some(Span::styled(
            format!(" · ✗ not sent: {}", sanitize(e)),
            t.err(),
        )),
    };
    for (i, para) in paras.iter().enumerate() {
        let first = match i {
            0 => Span::styled("› ", t.accent().patch(t.bold())),
            _ => pad(),
        };
        let mut spans = vec![Span::raw((*para).to_owned())];
        if i + 1 == paras.len() && folded.is_none() {
            spans.extend(suffix.clone());
        }
        lines.extend(wrap(&spans, width, &[first], &[pad()]));
    }
    if let Some(rest) = folded {
        let mut spans = vec![Span::styled(
            format!("… {rest} more lines (Ctrl+O d: verbose shows them)"),
            t.dim(),
        )];
        spans.extend(suffix);
        lines.extend(wrap(&spans, width, &[pad()], &[pad()]));
    }
    lines
}

fn brief(v: Visibility, title: &str, text: &str, width: usize, t: Theme) -> Vec<Line<'static>> {
    let body = if text.trim().is_empty() {
        "(no reply text)"
    } else {
        text
    };
    let mut lines = markdown::render(body, width, "  ", t);
    let restyle = |lines: &mut Vec<Line<'static>>, gutter: &str, style: Style| {
        for l in lines.iter_mut() {
            if let Some(first) = l.spans.first_mut() {
                *first = Span::styled(gutter.to_owned(), style);
            }
        }
    };
    match v {
        Visibility::ActionRequired => {
            restyle(&mut lines, "┃ ", t.attention());
            lines.insert(
                0,
                Line::from(Span::styled("▲ NEEDS YOUR INPUT", t.strong())),
            );
        }
        Visibility::WorkDone => {
            let head = Line::from(Span::styled("✓ Work done", t.ok().patch(t.bold())));
            lines.insert(0, head);
        }
        Visibility::TurnResult | Visibility::Progress | Visibility::Trace => {
            if let Some(first) = lines.first_mut().and_then(|l| l.spans.first_mut()) {
                *first = Span::styled("● ", t.accent());
            }
            if title == "Acknowledged" {
                for l in lines.iter_mut() {
                    l.style = t.dim();
                }
            }
        }
    }
    lines
}

/// A waiting call: a headline, what it would do (the command, or the
/// patch as a coloured diff), why it asks and the keys that answer it.
/// Answered: one line with the answer.
fn approval(a: &ApprovalRow, width: usize, t: Theme) -> Vec<Line<'static>> {
    let what = match &a.cmd {
        Some(cmd) => format!("`{}`", cmd.lines().next().unwrap_or("").trim()),
        None => a.summary.clone(),
    };
    let answered = |mark: &'static str, style: Style, text: String| {
        let spans = [Span::styled(sanitize(&text), style)];
        wrap(&spans, width, &[Span::styled(mark, style)], &[pad()])
    };
    match &a.state {
        ApprovalState::Approved { always: false } => {
            let by = match a.by_reviewer {
                true => " (by the reviewer)",
                false => "",
            };
            return answered("✓ ", t.ok(), format!("approved {} {what}{by}", a.tool));
        }
        ApprovalState::Approved { always: true } => {
            let rule = a
                .always_adds
                .as_deref()
                .map(|r| format!(" · from now on {r} runs without asking"))
                .unwrap_or_default();
            return answered("✓ ", t.ok(), format!("approved {} {what}{rule}", a.tool));
        }
        ApprovalState::Denied { note } => {
            let note = note
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default();
            return answered("✗ ", t.err(), format!("denied {} {what}{note}", a.tool));
        }
        ApprovalState::Waiting => {}
    }
    let gutter = || Span::styled("┃ ", t.attention());
    let verb = match (&a.cmd, &a.justification) {
        (_, Some(_)) => "wants to run outside the sandbox",
        (Some(_), None) => "wants to run",
        (None, None) => "wants to write",
    };
    let head = [
        Span::styled(format!("{} {verb}", a.tool), t.strong()),
        Span::styled(
            format!(" · waits for your answer · in {}", a.workspace_id),
            t.dim(),
        ),
    ];
    let mut lines = wrap(
        &head,
        width,
        &[Span::styled("▲ ", t.attention())],
        &[gutter()],
    );
    if let Some(cmd) = &a.cmd {
        for l in sanitize(cmd).lines() {
            let spans = [Span::styled(format!("$ {l}"), t.bold())];
            lines.extend(wrap(&spans, width, &[gutter()], &[gutter(), pad()]));
        }
    }
    if let Some(patch) = &a.patch {
        lines.extend(diff_lines(patch, width, PATCH_LINES, t, gutter()));
    } else if a.cmd.is_none() {
        let spans = [Span::raw(sanitize(&a.summary))];
        lines.extend(wrap(&spans, width, &[gutter()], &[gutter()]));
    }
    if let Some(j) = &a.justification {
        let spans = [Span::styled(format!("why: {}", sanitize(j)), t.text())];
        lines.extend(wrap(&spans, width, &[gutter()], &[gutter()]));
    }
    let spans = [Span::styled(sanitize(&a.why), t.dim())];
    lines.extend(wrap(&spans, width, &[gutter()], &[gutter()]));
    if let Some(r) = &a.review {
        let spans = [Span::styled(sanitize(r), t.text())];
        lines.extend(wrap(&spans, width, &[gutter()], &[gutter()]));
    }
    if !a.keys {
        // Single keys answer the oldest call first.
        let spans = [Span::styled(
            format!(
                "waits behind the call above · /approve {} · /deny {}",
                a.id, a.id
            ),
            t.dim(),
        )];
        lines.extend(wrap(&spans, width, &[gutter()], &[gutter()]));
        return lines;
    }
    let always = match &a.always_adds {
        Some(rule) => format!(" always, allowing {rule} from now on · "),
        None => " approve (nothing to allow: asked again next time) · ".to_owned(),
    };
    let keys = [
        Span::styled("y", t.bold()),
        Span::raw(" approve once · "),
        Span::styled("a a", t.bold()),
        Span::raw(always),
        Span::styled("n", t.bold()),
        Span::raw(" deny with a note"),
        Span::styled(format!(" · or /approve {}", a.id), t.dim()),
    ];
    lines.extend(wrap(&keys, width, &[gutter()], &[gutter()]));
    lines
}

/// A unified diff, coloured (`+` green, `-` red, hunks dim) with the new
/// file's line numbers, cut to `max` lines with a note of the rest.
pub fn diff_lines(
    patch: &str,
    width: usize,
    max: usize,
    t: Theme,
    gutter: Span<'static>,
) -> Vec<Line<'static>> {
    let text = sanitize(patch);
    let all: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut new_line: Option<u64> = None;
    for (i, l) in all.iter().enumerate() {
        if i == max {
            let note = format!(
                "… {} more lines (Ctrl+O d: the verbose view shows them all)",
                all.len() - max
            );
            out.push(Line::from(vec![
                gutter.clone(),
                Span::styled(note, t.dim()),
            ]));
            break;
        }
        let (style, number) = if l.starts_with("@@") {
            new_line = hunk_start(l);
            (t.dim(), None)
        } else if l.starts_with("+++") || l.starts_with("---") || l.starts_with("***") {
            (t.bold(), None)
        } else if l.starts_with('+') {
            let n = new_line;
            new_line = new_line.map(|n| n + 1);
            (t.ok(), n)
        } else if l.starts_with('-') {
            (t.err(), None)
        } else {
            let n = new_line;
            new_line = new_line.map(|n| n + 1);
            (t.text(), n)
        };
        let number = match number {
            Some(n) => format!("{n:>4} "),
            None => "     ".to_owned(),
        };
        // Indentation is the diff's meaning: cut, never collapsed (one
        // column kept for the `…`).
        let room = width
            .saturating_sub(gutter.width() + number.len() + 1)
            .max(4);
        let pieces = chop(l, room);
        let mut shown = pieces.first().cloned().unwrap_or_default();
        if pieces.len() > 1 {
            shown.push('…');
        }
        out.push(Line::from(vec![
            gutter.clone(),
            Span::styled(number, t.dim()),
            Span::styled(shown, style),
        ]));
    }
    out
}

/// The first new-file line of a hunk header `@@ -a,b +c,d @@`.
fn hunk_start(header: &str) -> Option<u64> {
    let plus = header.split_whitespace().find(|w| w.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

fn command(c: &CommandRow, width: usize, mode: DisplayMode, t: Theme) -> Vec<Line<'static>> {
    let (status, style) = command_status(c, t);
    let cmd_line = c.cmd.lines().next().unwrap_or("");
    let more = c.cmd.lines().nth(1).map_or("", |_| " …");
    // One row whatever the command's length: it is cut to leave room for
    // its status (the whole command is in /tasks and /transcript).
    let room = width
        .saturating_sub(2 + 2 + super::wrap::width(&status))
        .max(8);
    let shown = truncate(&format!("{}{more}", sanitize(cmd_line)), room);
    let spans = [
        Span::raw(shown),
        Span::raw("  "),
        Span::styled(status, style),
    ];
    let mark = Span::styled("$ ", t.accent().patch(t.bold()));
    let mut lines = wrap(&spans, width, &[mark], &[pad()]);
    // Operator commands always show their output; the agent's from
    // verbose on (info keeps one row per command).
    let show_output = c.operator || mode.level() >= DisplayMode::Verbose.level();
    if let Some(out) = c.output.as_deref().filter(|_| show_output) {
        lines.extend(output_lines(out, width, t, OUTPUT_LINES));
    } else if failed(c) {
        // Below verbose, a failure still says why: its stderr's last
        // lines (its output's, when it wrote nothing there).
        if let Some(why) = c.stderr.as_deref().or(c.output.as_deref()) {
            lines.extend(output_lines(why, width, t, FAILURE_LINES));
        }
    }
    lines
}

/// Lines of a failed command's stderr shown below verbose.
const FAILURE_LINES: usize = 3;

/// Where a command row stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandState {
    /// Sent; the runtime has not answered yet.
    Starting,
    /// The runtime refused it: no task ran.
    NotStarted,
    /// Its task's status.
    Task(TaskStatus),
}

/// Whether a command row is a failure (not a stop, not still running).
fn failed(c: &CommandRow) -> bool {
    use TaskStatus as S;
    match c.status {
        CommandState::Starting
        | CommandState::Task(S::Queued | S::Running | S::Cancelling | S::Cancelled) => false,
        CommandState::Task(S::Completed) => c.exit.is_some_and(|e| e != 0),
        CommandState::NotStarted | CommandState::Task(S::Failed | S::Interrupted) => true,
    }
}

/// `✓ exit 0 · 1.2 s`, `✗ exit 2 · 3.4 s`, `⋯ running`.
pub fn command_status(c: &CommandRow, t: Theme) -> (String, Style) {
    let took = c
        .duration_ms
        .map(|d| format!(" · {}", duration(d)))
        .unwrap_or_default();
    let exit = c.exit.map(|e| format!("exit {e}"));
    let why = || {
        exit.clone()
            .or(c.summary.as_deref().map(|s| truncate(s, 40)))
    };
    use TaskStatus as S;
    let ended = |word: &str| {
        let what = why().unwrap_or_else(|| word.to_owned());
        (format!("✗ {what}{took}"), t.err())
    };
    match c.status {
        CommandState::Starting => ("starting…".into(), t.dim()),
        CommandState::NotStarted => (
            format!("✗ not started: {}", why().unwrap_or_default()),
            t.err(),
        ),
        CommandState::Task(S::Queued) => ("queued".into(), t.dim()),
        CommandState::Task(S::Running) => ("⋯ running".into(), t.dim()),
        CommandState::Task(S::Cancelling) => ("stopping…".into(), t.dim()),
        CommandState::Task(S::Completed) if c.exit.is_none_or(|e| e == 0) => {
            (format!("✓ {}{took}", exit.unwrap_or("done".into())), t.ok())
        }
        CommandState::Task(S::Cancelled) => (format!("■ stopped{took}"), t.dim()),
        CommandState::Task(S::Completed) => ended("completed"),
        CommandState::Task(S::Failed) => ended("failed"),
        CommandState::Task(S::Interrupted) => ended("interrupted"),
    }
}

fn output_lines(out: &str, width: usize, t: Theme, keep: usize) -> Vec<Line<'static>> {
    let text = sanitize(out);
    let all: Vec<&str> = text.trim_end().lines().collect();
    let skip = all.len().saturating_sub(keep);
    let gutter = Span::styled("  │ ", t.dim());
    let mut lines = Vec::new();
    if skip > 0 {
        let note = format!("… {skip} earlier lines (/tasks shows all)");
        lines.push(Line::from(vec![
            gutter.clone(),
            Span::styled(note, t.dim()),
        ]));
    }
    for l in &all[skip..] {
        for piece in chop(l, width.saturating_sub(4)) {
            lines.push(Line::from(vec![gutter.clone(), Span::raw(piece)]));
        }
    }
    lines
}

fn event(op: &OperatorEvent, width: usize, t: Theme) -> Vec<Line<'static>> {
    let glyph = match op.category {
        Category::Tool => "↳ ",
        Category::AssistantProgress => "◦ ",
        Category::WorkItem => "◆ ",
        Category::Waiting => "◷ ",
        Category::Task => "$ ",
        Category::OperatorNotification => "» ",
        Category::Brief
        | Category::Message
        | Category::Workspace
        | Category::Runtime
        | Category::StateSync
        | Category::Trace => "· ",
    };
    let style = match op.visibility {
        Visibility::Trace => t.dim(),
        Visibility::ActionRequired
        | Visibility::WorkDone
        | Visibility::TurnResult
        | Visibility::Progress => t.text(),
    };
    let spans = [Span::styled(sanitize(&op.summary), style)];
    wrap(&spans, width, &[Span::styled(glyph, t.dim())], &[pad()])
}
