//! Working memory, pure: a turn's evidence read from its transcript
//! entries, merged into the agent's working state (bounded), the delta a
//! change leaves for the next prompt, and the block that prompt shows.

use crate::model::text::truncate_chars;
use crate::model::transcript::{TranscriptBody, TranscriptEntry};
use crate::model::working::{CommandNote, WorkFocus, WorkingMemory, WorkingState};

/// Files kept, at most.
pub const MAX_FILES: usize = 12;
/// Commands kept, at most.
pub const MAX_COMMANDS: usize = 6;
/// Characters of a command, of a todo, of the last result, at most.
const MAX_CMD: usize = 160;
const MAX_TODO: usize = 120;
const MAX_RESULT: usize = 240;
const MAX_TODOS: usize = 8;
/// Lines of delta kept, at most.
pub const MAX_DELTA: usize = 8;

/// What one turn showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnEvidence {
    pub focus: Option<WorkFocus>,
    pub files: Vec<String>,
    pub commands: Vec<CommandNote>,
    pub waiting_on: Vec<String>,
    pub result: Option<String>,
}

/// Waited-on tasks named, at most.
const MAX_WAITING: usize = 8;

/// `s` on one line (control characters and line breaks as spaces), at most
/// `max` characters: text the model or a command wrote cannot forge lines
/// in a block the runtime keeps.
fn line(s: &str, max: usize) -> String {
    let flat: String = s
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    truncate_chars(&flat, max)
}

/// Bound a focus's texts.
pub fn bounded_focus(mut f: WorkFocus) -> WorkFocus {
    f.objective = line(&f.objective, MAX_TODO * 2);
    f.blocked_by = f.blocked_by.map(|b| line(&b, MAX_TODO));
    f.open_todos.truncate(MAX_TODOS);
    for t in &mut f.open_todos {
        *t = line(t, MAX_TODO);
    }
    f
}

/// The files and commands of one run's transcript entries (a patch's
/// files from its result; a command's exit status from its result).
pub fn from_entries(entries: &[TranscriptEntry], run_id: &str) -> (Vec<String>, Vec<CommandNote>) {
    let mut files = Vec::new();
    let mut commands: Vec<(String, CommandNote)> = Vec::new();
    for e in entries.iter().filter(|e| e.run_id == run_id) {
        match &e.body {
            TranscriptBody::AssistantRound { tool_calls, .. } => {
                for c in tool_calls {
                    if c.name == "ExecCommand" {
                        if let Some(cmd) = c.arguments.get("cmd").and_then(|v| v.as_str()) {
                            let note = CommandNote {
                                cmd: truncate_chars(cmd.trim(), MAX_CMD),
                                exit_status: None,
                            };
                            commands.push((c.id.clone(), note));
                        }
                    }
                }
            }
            TranscriptBody::ToolResult {
                call_id,
                tool_name,
                content,
                is_error,
                ..
            } => {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(content) else {
                    continue;
                };
                if tool_name == "ApplyPatch" && !is_error {
                    for f in v["files"].as_array().into_iter().flatten() {
                        if let Some(p) = f["path"].as_str().or(f.as_str()) {
                            files.push(truncate_chars(p, MAX_CMD));
                        }
                    }
                }
                if let Some((_, note)) = commands.iter_mut().find(|(id, _)| id == call_id) {
                    note.exit_status = v["exit_status"].as_i64();
                }
            }
            _ => {}
        }
    }
    (files, commands.into_iter().map(|(_, n)| n).collect())
}

/// Whether a command builds or tests the work (its verification).
pub fn verifies(cmd: &str) -> bool {
    const WORDS: [&str; 14] = [
        "cargo test",
        "cargo check",
        "cargo clippy",
        "cargo build",
        "cargo nextest",
        "npm test",
        "npm run test",
        "pnpm test",
        "yarn test",
        "pytest",
        "go test",
        "go build",
        "make test",
        "make check",
    ];
    let lower = cmd.to_ascii_lowercase();
    WORDS.iter().any(|w| lower.contains(w)) || lower.contains("tox") || lower.contains("jest")
}

/// Keep the last `max` of `items` without repeats (a repeat moves last).
fn recent<T: PartialEq + Clone>(
    old: &[T],
    new: &[T],
    max: usize,
    same: impl Fn(&T, &T) -> bool,
) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in old.iter().chain(new) {
        out.retain(|y| !same(x, y));
        out.push(x.clone());
    }
    let cut = out.len().saturating_sub(max);
    out.drain(..cut);
    out
}

/// The working state after a turn.
pub fn next(prev: &WorkingState, ev: &TurnEvidence) -> WorkingState {
    let files: Vec<String> = ev.files.iter().map(|f| line(f, MAX_CMD)).collect();
    let commands: Vec<CommandNote> = ev
        .commands
        .iter()
        .map(|c| CommandNote {
            cmd: line(&c.cmd, MAX_CMD),
            exit_status: c.exit_status,
        })
        .collect();
    let verification = commands
        .iter()
        .rev()
        .find(|c| verifies(&c.cmd))
        .cloned()
        .or_else(|| prev.verification.clone());
    WorkingState {
        focus: ev.focus.clone().map(bounded_focus),
        files: recent(&prev.files, &files, MAX_FILES, |a, b| a == b),
        commands: recent(&prev.commands, &commands, MAX_COMMANDS, |a, b| {
            a.cmd == b.cmd
        }),
        verification,
        waiting_on: ev
            .waiting_on
            .iter()
            .take(MAX_WAITING)
            .map(|w| line(w, MAX_CMD))
            .collect(),
        last_result: ev
            .result
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| line(r, MAX_RESULT))
            .or_else(|| prev.last_result.clone()),
    }
}

fn status(c: &CommandNote) -> String {
    match c.exit_status {
        Some(0) => "passed".into(),
        Some(n) => format!("failed (exit {n})"),
        None => "no exit status yet".into(),
    }
}

/// What changed from `prev` to `next`, a line each (bounded).
pub fn delta(prev: &WorkingState, next: &WorkingState) -> Vec<String> {
    let mut out = Vec::new();
    match (&prev.focus, &next.focus) {
        (Some(a), Some(b)) if a.id == b.id => {
            if a.plan_status != b.plan_status {
                out.push(format!("{} is now {}", b.id, b.plan_status));
            }
            if a.open_todos.len() != b.open_todos.len() {
                out.push(format!("{} has {} open todo(s)", b.id, b.open_todos.len()));
            }
        }
        (_, Some(b)) => out.push(format!("focus moved to {}: {}", b.id, b.objective)),
        (Some(a), None) => out.push(format!("no work item in focus (was {})", a.id)),
        (None, None) => {}
    }
    let touched: Vec<&str> = next
        .files
        .iter()
        .filter(|f| !prev.files.contains(f))
        .map(String::as_str)
        .collect();
    if !touched.is_empty() {
        out.push(format!("touched {}", touched.join(", ")));
    }
    if next.verification != prev.verification {
        if let Some(v) = &next.verification {
            out.push(format!("verification `{}` {}", v.cmd, status(v)));
        }
    }
    if next.waiting_on != prev.waiting_on {
        out.push(match next.waiting_on.is_empty() {
            true => "no task left to wait for".into(),
            false => format!("waiting on {}", next.waiting_on.join(", ")),
        });
    }
    out.truncate(MAX_DELTA);
    out
}

/// Merge one turn into the memory: a new revision when the state
/// changed, its delta added to what the next prompt has not shown yet.
pub fn advance(wm: &mut WorkingMemory, ev: &TurnEvidence) {
    let next = next(&wm.current, ev);
    if next == wm.current {
        return;
    }
    let mut lines = delta(&wm.current, &next);
    if wm.revision > wm.last_prompted_revision {
        lines.splice(0..0, wm.pending_delta.drain(..));
    } else {
        wm.pending_delta.clear();
    }
    let cut = lines.len().saturating_sub(MAX_DELTA);
    lines.drain(..cut);
    wm.pending_delta = lines;
    wm.current = next;
    wm.revision += 1;
}

/// The prompt's working-memory block (none before the first revision).
pub fn block(wm: &WorkingMemory) -> Option<String> {
    if wm.revision == 0 {
        return None;
    }
    let c = &wm.current;
    let mut s = format!(
        "Working state (revision {}; kept by the runtime from your work items, tools and waits):\n",
        wm.revision
    );
    match &c.focus {
        Some(f) => {
            s.push_str(&format!(
                "- focus: {} [{}] {}",
                f.id, f.plan_status, f.objective
            ));
            if let Some(b) = &f.blocked_by {
                s.push_str(&format!(" (blocked by: {b})"));
            }
            if !f.open_todos.is_empty() {
                s.push_str(&format!("; open: {}", f.open_todos.join("; ")));
            }
            s.push('\n');
        }
        None => s.push_str("- focus: no work item\n"),
    }
    if !c.files.is_empty() {
        s.push_str(&format!("- files touched: {}\n", c.files.join(", ")));
    }
    if !c.commands.is_empty() {
        let cmds: Vec<String> = c
            .commands
            .iter()
            .map(|n| match n.exit_status {
                Some(code) => format!("`{}` → {code}", n.cmd),
                None => format!("`{}`", n.cmd),
            })
            .collect();
        s.push_str(&format!("- recent commands: {}\n", cmds.join("; ")));
    }
    if let Some(v) = &c.verification {
        s.push_str(&format!("- last verification: `{}` {}\n", v.cmd, status(v)));
    }
    if !c.waiting_on.is_empty() {
        s.push_str(&format!("- waiting on: {}\n", c.waiting_on.join(", ")));
    }
    if let Some(r) = &c.last_result {
        s.push_str(&format!("- last result: {r}\n"));
    }
    if wm.revision > wm.last_prompted_revision && !wm.pending_delta.is_empty() {
        s.push_str(&format!(
            "Since your last prompt: {}\n",
            wm.pending_delta.join("; ")
        ));
    }
    Some(s)
}

#[cfg(test)]
#[path = "working_tests.rs"]
mod tests;
