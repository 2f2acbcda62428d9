//! Rows for tool calls whose result says more than the presentation's
//! one line: `ExecCommand` as a command row (exit status, duration) and
//! `ApplyPatch` as one row per file with its +/- counts. They read the
//! structured result when the event carries it (whole, or as a preview
//! that still parses), and fall back to the arguments (the diff itself).

use serde_json::Value;

use super::fmt::{i64_at, owned, text, u64_at};
use super::rows::CommandRow;

/// The task an `ExecCommand` result names (its preview may be cut short).
pub fn exec_task_id(p: &Value) -> Option<String> {
    if let Some(t) = owned(p, "/result/task_id").or(owned(p, "/result/task_handle/task_id")) {
        return Some(t);
    }
    let preview = text(p, "/result_preview")?;
    let start = preview.find("\"task_id\":\"")? + "\"task_id\":\"".len();
    let len = preview[start..].find('"')?;
    Some(preview[start..start + len].to_owned())
}

/// An `ExecCommand` call as one command row: its command, exit status
/// and duration (from the result, whole or as a preview).
pub fn exec_row(p: &Value, task: Option<String>) -> Option<CommandRow> {
    let cmd = owned(p, "/arguments/cmd")?;
    let preview = text(p, "/result_preview").unwrap_or("");
    let parsed = serde_json::from_str::<Value>(preview).ok();
    let result = p.pointer("/result").or(parsed.as_ref());
    let number = |key: &str| {
        let at = preview.find(&format!("\"{key}\":"))? + key.len() + 3;
        let digits: String = preview[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse::<i64>().ok()
    };
    let exit = result
        .and_then(|r| i64_at(r, "/exit_status"))
        .or_else(|| number("exit_status"));
    let failed = p
        .pointer("/is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let status = match (failed, result.and_then(|r| text(r, "/disposition"))) {
        (true, _) => "failed",
        (false, Some("promoted_to_task") | Some("already_running")) => "running",
        (false, _) if exit.is_some_and(|e| e != 0) => "failed",
        (false, _) => "completed",
    };
    let summary = match failed {
        true => result.and_then(|r| owned(r, "/message").or(owned(r, "/error"))),
        false => None,
    };
    Some(CommandRow {
        task_id: task,
        cmd,
        operator: false,
        status: status.to_owned(),
        exit,
        duration_ms: u64_at(p, "/duration_ms"),
        summary,
        output: result.and_then(|r| owned(r, "/stdout_preview")),
    })
}

/// `(action, path, added, removed)` per file of an applied patch: from
/// the result's `files` when the event carries them (whole or as a
/// parseable preview), else counted from the diff in the arguments.
pub fn patch_files(p: &Value) -> Vec<(String, String, u64, u64)> {
    let parsed = text(p, "/result_preview").and_then(|s| serde_json::from_str::<Value>(s).ok());
    let files = p
        .pointer("/result/files")
        .or(parsed.as_ref().and_then(|v| v.pointer("/files")));
    if let Some(files) = files.and_then(Value::as_array) {
        let rows: Vec<_> = files
            .iter()
            .filter_map(|f| {
                Some((
                    owned(f, "/action").unwrap_or_else(|| "modified".into()),
                    owned(f, "/path")?,
                    u64_at(f, "/added").unwrap_or(0),
                    u64_at(f, "/removed").unwrap_or(0),
                ))
            })
            .collect();
        if !rows.is_empty() {
            return rows;
        }
    }
    text(p, "/arguments/patch")
        .map(diff_counts)
        .unwrap_or_default()
}

fn diff_counts(diff: &str) -> Vec<(String, String, u64, u64)> {
    let mut out: Vec<(String, String, u64, u64)> = Vec::new();
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
                out.push((action.to_owned(), path, 0, 0));
                continue;
            }
        }
        if let Some(last) = out.last_mut() {
            match line.chars().next() {
                Some('+') => last.2 += 1,
                Some('-') => last.3 += 1,
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
