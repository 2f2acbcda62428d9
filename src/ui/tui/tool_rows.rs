//! Rows for tool calls whose result says more than the presentation's
//! one line: `ExecCommand` as a command row (exit status, duration) and
//! `ApplyPatch` as one row per file with its +/- counts. They read the
//! result's facts the event carries whole (`result_facts`), and fall back
//! to the preview's text and the arguments (the diff itself).

use super::rows::{CommandRow, CommandState};
use crate::protocol::events::{ToolExecuted, ToolFacts};
use crate::protocol::types::TaskStatus;

/// `s` trimmed and owned, `None` when blank (the presentation's rule).
fn nonblank(s: Option<&str>) -> Option<String> {
    s.and_then(crate::ui::present::nonblank).map(str::to_owned)
}

/// The task an `ExecCommand` result names.
pub fn exec_task_id(p: &ToolExecuted) -> Option<String> {
    if let Some(t) = p.facts().and_then(|f| nonblank(f.task_id.as_deref())) {
        return Some(t);
    }
    // An event from before `result_facts` whose preview was cut: the
    // text may still hold it.
    let preview = &p.result_preview;
    let start = preview.find("\"task_id\":\"")? + "\"task_id\":\"".len();
    let len = preview[start..].find('"')?;
    Some(preview[start..start + len].to_owned())
}

#[derive(serde::Deserialize)]
struct ExecArgs {
    cmd: String,
}

#[derive(serde::Deserialize)]
struct PatchArgs {
    patch: String,
}

/// An `ApplyPatch` call's diff, when its arguments carry one.
pub fn patch_text(p: &ToolExecuted) -> Option<String> {
    p.args::<PatchArgs>().map(|a| a.patch)
}

/// An `ExecCommand` call as one command row: its command, exit status
/// and duration.
pub fn exec_row(p: &ToolExecuted, task: Option<String>) -> Option<CommandRow> {
    let cmd = nonblank(Some(&p.args::<ExecArgs>()?.cmd))?;
    let facts = p.facts().unwrap_or_default();
    let exit = facts.exit_status;
    let status = match (p.is_error, facts.disposition.as_deref().map(str::trim)) {
        (true, _) => TaskStatus::Failed,
        (false, Some("promoted_to_task") | Some("already_running")) => TaskStatus::Running,
        (false, _) if exit.is_some_and(|e| e != 0) => TaskStatus::Failed,
        (false, _) => TaskStatus::Completed,
    };
    let summary = match p.is_error {
        true => nonblank(facts.message.as_deref()).or(nonblank(facts.error.as_deref())),
        false => None,
    };
    Some(CommandRow {
        task_id: task,
        cmd,
        operator: false,
        status: CommandState::Task(status),
        exit,
        duration_ms: Some(p.duration_ms),
        summary,
        output: nonblank(facts.stdout_preview.as_deref()),
        stderr: nonblank(facts.stderr_preview.as_deref()),
    })
}

/// `(action, path, added, removed)` per file of an applied patch: from
/// the result's `files`, else counted from the diff in the arguments.
pub fn patch_files(p: &ToolExecuted) -> Vec<(String, String, u64, u64)> {
    let ToolFacts { files, .. } = p.facts().unwrap_or_default();
    let rows: Vec<_> = files
        .into_iter()
        .filter_map(|f| {
            let action = nonblank(f.action.as_deref()).unwrap_or_else(|| "modified".into());
            Some((action, nonblank(Some(&f.path))?, f.added, f.removed))
        })
        .collect();
    if !rows.is_empty() {
        return rows;
    }
    let patch = p.args::<PatchArgs>().map(|a| a.patch);
    patch
        .filter(|p| !p.trim().is_empty())
        .map(|p| diff_counts(&p))
        .unwrap_or_default()
}

/// A unified diff split by file: (action, path, its hunks with the
/// headers left out). The path is the file's after the patch (before it,
/// when deleted).
fn split_files(diff: &str) -> Vec<(&'static str, String, String)> {
    let mut out: Vec<(&'static str, String, String)> = Vec::new();
    let mut lines = diff.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(old) = line.strip_prefix("--- ") {
            if let Some(new) = lines.peek().and_then(|l| l.strip_prefix("+++ ")) {
                let (old, new) = (old.trim(), new.trim());
                lines.next();
                let strip = |s: &str| {
                    s.strip_prefix("b/")
                        .or(s.strip_prefix("a/"))
                        .unwrap_or(s)
                        .to_owned()
                };
                let (action, path) = match (old, new) {
                    ("/dev/null", n) => ("created", strip(n)),
                    (o, "/dev/null") => ("deleted", strip(o)),
                    (_, n) => ("modified", strip(n)),
                };
                out.push((action, path, String::new()));
                continue;
            }
        }
        if let Some((_, _, text)) = out.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

/// Each file's hunks, by path (`split_files`).
pub fn file_diffs(diff: &str) -> Vec<(String, String)> {
    split_files(diff)
        .into_iter()
        .map(|(_, path, text)| (path, text))
        .collect()
}

/// `(action, path, added, removed)` per file of a diff.
fn diff_counts(diff: &str) -> Vec<(String, String, u64, u64)> {
    split_files(diff)
        .into_iter()
        .map(|(action, path, text)| {
            let count = |c: char| text.lines().filter(|l| l.starts_with(c)).count() as u64;
            (action.to_owned(), path, count('+'), count('-'))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_a_diff_per_file() {
        let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,3 @@\n a\n-b\n+c\n--- a/OLD.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
        assert_eq!(
            file_diffs(diff),
            [
                (
                    "src/lib.rs".to_owned(),
                    "@@ -1,2 +1,3 @@\n a\n-b\n+c\n".to_owned()
                ),
                ("OLD.md".to_owned(), "@@ -1 +0,0 @@\n-bye\n".to_owned())
            ]
        );
    }

    #[test]
    fn counts_a_diff_per_file() {
        let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,3 @@\n a\n-b\n+c\n+d\n--- /dev/null\n+++ b/NEW.md\n@@ -0,0 +1 @@\n+hi\n";
        assert_eq!(
            diff_counts(diff),
            [
                ("modified".to_owned(), "src/lib.rs".to_owned(), 2, 1),
                ("created".to_owned(), "NEW.md".to_owned(), 1, 0)
            ]
        );
    }

    /// A long result's preview is cut and no longer parses; its facts
    /// still give the row its exit status, task and output.
    #[test]
    fn a_long_result_keeps_its_exit_status_task_and_output() {
        let stdout = "x".repeat(2_000);
        let result = serde_json::json!({
            "disposition": "completed", "exit_status": 3, "stdout_preview": stdout,
            "task_handle": { "task_id": "task_9" }, "ok": false,
        });
        let text = result.to_string();
        let event = ToolExecuted {
            run_id: "run_1".into(),
            tool_execution_id: "tool_1".into(),
            call_id: "call_1".into(),
            tool_name: "ExecCommand".into(),
            arguments: serde_json::json!({ "cmd": "make" }),
            is_error: false,
            duration_ms: 1200,
            malformed_arguments: None,
            result_preview: text.chars().take(ToolExecuted::PREVIEW_CHARS).collect(),
            result_facts: ToolExecuted::facts_of(&result),
            tool_error: None,
        };
        assert!(serde_json::from_str::<serde_json::Value>(&event.result_preview).is_err());
        assert_eq!(exec_task_id(&event).as_deref(), Some("task_9"));
        let row = exec_row(&event, None).expect("a command row");
        assert_eq!(
            (row.exit, row.status),
            (Some(3), CommandState::Task(TaskStatus::Failed))
        );
        assert_eq!(
            row.output.map(|o| o.len()),
            Some(1_200),
            "the output, cut to its facts' bound"
        );
    }

    /// Below verbose, a failed command still says why: the last lines of
    /// its stderr; a command that succeeded shows one row.
    #[test]
    fn a_failed_command_shows_its_stderr_tail_at_the_default_level() {
        use crate::model::agent::DisplayMode;
        use crate::ui::tui::rows::{plain_lines, RowKind};
        let event = |exit: i64, stderr: &str| {
            let result = serde_json::json!({
                "disposition": "completed", "exit_status": exit, "ok": exit == 0,
                "stdout_preview": "compiling a\ncompiling b\n", "stderr_preview": stderr,
            });
            ToolExecuted {
                run_id: "run_1".into(),
                tool_execution_id: "tool_1".into(),
                call_id: "call_1".into(),
                tool_name: "ExecCommand".into(),
                arguments: serde_json::json!({ "cmd": "cargo build" }),
                is_error: exit != 0,
                duration_ms: 900,
                malformed_arguments: None,
                result_preview: String::new(),
                result_facts: ToolExecuted::facts_of(&result),
                tool_error: None,
            }
        };
        let text = |e: &ToolExecuted, mode| {
            let row = exec_row(e, None).expect("a command row");
            plain_lines(&RowKind::Command(row), 80, mode).join("\n")
        };
        let stderr = "warning: unused\nerror[E0308]: mismatched types\n --> src/a.rs:3:5\nerror: could not compile `a`\n";
        let failed = text(&event(101, stderr), DisplayMode::Info);
        assert!(failed.contains("error: could not compile"), "{failed}");
        assert!(failed.contains("--> src/a.rs:3:5"), "{failed}");
        assert!(
            !failed.contains("warning: unused"),
            "three lines at most: {failed}"
        );
        assert!(
            !failed.contains("compiling a"),
            "stderr, not the output: {failed}"
        );
        let ok = text(&event(0, ""), DisplayMode::Info);
        assert_eq!(ok.lines().count(), 1, "{ok}");
        let verbose = text(&event(101, stderr), DisplayMode::Verbose);
        assert!(
            verbose.contains("compiling a"),
            "verbose shows the output: {verbose}"
        );
    }
}
