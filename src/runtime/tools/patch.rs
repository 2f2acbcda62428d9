//! `ApplyPatch`: the file-mutation primitive. The input is a unified diff
//! (`--- a/path` / `+++ b/path` headers, `@@ -l,c +l,c @@` hunks); it may
//! modify, create (`--- /dev/null`) and delete (`+++ /dev/null`) several
//! files with several hunks each. Paths are relative to the agent's
//! execution root.
//!
//! Invariants:
//! - all or nothing: every file's result is computed in memory first; a
//!   hunk that does not apply, a bad path or a missing file rejects the
//!   whole patch and nothing is written;
//! - nothing is written outside the execution root: absolute paths and
//!   `..` are refused, and the deepest existing ancestor of every target
//!   (and the target itself, when it is a symlink) is canonicalised and
//!   must stay inside the canonical root;
//! - hunks apply at their stated line or, when the context moved, at the
//!   nearest exact match (no fuzz: every context and removed line must
//!   match exactly, apart from a trailing `\r`);
//! - line endings are preserved: lines are compared without their `\r`,
//!   unchanged lines keep their bytes, and added lines take the file's
//!   style (CRLF when its first line ends in CRLF, else LF).
//!
//! Parsing and applying are plain functions (`parse_patch`, `apply_hunks`,
//! `apply_in_root`); the tool handler only runs them off the async threads
//! and shapes the result envelope.

mod apply;
pub(super) mod beneath;
mod parse;
mod root;
#[cfg(test)]
mod tests;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

pub(crate) use root::apply_in_roots;
use root::FileChange;
pub(super) use root::HOME_PREFIX;

use super::handler::{Gated, Reach, Tool};
use super::{spec, ToolEnv};
use crate::model::approval::Action;
use crate::runtime::provider::ToolSpec;
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct PatchArgs {
    /// A unified diff. Each file starts with `--- a/PATH` and `+++ b/PATH`
    /// (`--- /dev/null` creates a file, `+++ /dev/null` deletes one),
    /// followed by hunks `@@ -OLD_START,OLD_COUNT +NEW_START,NEW_COUNT @@`
    /// whose lines start with ' ' (context), '-' (removed) or '+' (added).
    /// Paths are relative to the execution root; a path starting with
    /// `@home/` is in your agent home (e.g. `@home/memory/self.md`).
    // `input`: the freeform form (OpenAI Responses custom tool), where the
    // diff arrives as raw text.
    #[serde(alias = "input")]
    patch: String,
}

/// The files a patch writes (as written, `@home/` kept), for the
/// approval gate; `None` when the patch does not parse (the tool itself
/// then refuses it).
fn written_paths(patch: &str) -> Option<Vec<String>> {
    let files = parse::parse_patch(patch).ok()?;
    Some(files.into_iter().map(|f| f.path).collect())
}

pub(super) struct ApplyPatch;

impl Tool for ApplyPatch {
    const NAME: &'static str = "ApplyPatch";
    const DESCRIPTION: &'static str = "Apply a unified diff to files in the execution root: modify, create (--- /dev/null) or \
         delete (+++ /dev/null) files. Paths starting with `@home/` are in your agent home (your \
         working memory: `@home/memory/self.md`, `@home/memory/operator.md`). All or nothing: if any hunk does not match, nothing is \
         written and the error names the file, hunk and first mismatching line.";
    type Args = PatchArgs;

    fn gate(&self, args: &PatchArgs) -> Gated {
        match written_paths(&args.patch) {
            Some(paths) => Gated::By(Action::Write(paths)),
            None => Gated::No,
        }
    }

    fn reach(&self) -> Reach {
        Reach::Files
    }

    fn spec(&self) -> ToolSpec {
        // Freeform where the wire supports it: the diff itself is the
        // input, with no JSON string escaping for the model to get wrong.
        ToolSpec {
            freeform_field: Some("patch".into()),
            ..spec::<PatchArgs>(Self::NAME, Self::DESCRIPTION)
        }
    }

    async fn call(&self, env: &ToolEnv<'_>, args: PatchArgs) -> ToolOutcome {
        let (root, snap) = match super::exec::execution_dirs(env) {
            Ok((root, _, snap)) => (root, snap),
            Err(e) => return e,
        };
        let home = env.host.agent_home(env.agent_id);
        let holon_dirs = env.host.holon_dirs();
        let result = tokio::task::spawn_blocking(move || {
            // The same write roots a sandboxed command gets (whether or
            // not this kernel enforces them on commands).
            let request = crate::runtime::sandbox::Request {
                mode: snap.policy.sandbox_mode(),
                network: snap.policy.network_mode(),
                execution_root: &root,
                agent_home: &home,
                tmp: None,
                output: None,
                holon_dirs: &holon_dirs,
                unix_sockets: &[],
                extra_writable: &[],
                root_pin: snap.root_pin,
            };
            let plan = crate::runtime::sandbox::plan(&request).map_err(|e| PatchError::Io {
                path: root.display().to_string(),
                message: format!("could not set up the sandbox: {e}"),
            })?;
            apply_in_roots(&root, Some(&home), plan.as_ref(), &args.patch)
        })
        .await;
        match result {
            Ok(Ok(changes)) => success(&changes),
            Ok(Err(e)) => failure(&e),
            Err(join) => tool_error(
                ToolErrorKind::Failed,
                format!("ApplyPatch did not finish: {join}"),
                None,
                None,
                true,
            ),
        }
    }
}

fn success(changes: &[FileChange]) -> ToolOutcome {
    let summary: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "{} {} (+{} -{})",
                c.action.as_str(),
                c.path,
                c.added,
                c.removed
            )
        })
        .collect();
    ToolOutcome::ok(json!({
        "ok": true,
        "files": changes,
        "summary": summary.join("; "),
    }))
}

fn failure(e: &PatchError) -> ToolOutcome {
    let (kind, hint, retryable) = match e {
        PatchError::Empty | PatchError::Parse { .. } | PatchError::HunkShape { .. } => (
            ToolErrorKind::InvalidArguments,
            "send a unified diff: `--- a/PATH`, `+++ b/PATH`, then `@@ -l,c +l,c @@` hunks whose counts match their lines",
            false,
        ),
        PatchError::Rename { .. } => (
            ToolErrorKind::InvalidArguments,
            "renames are not supported: delete the old file and create the new one",
            false,
        ),
        PatchError::InvalidPath { .. } | PatchError::OutsideRoot { .. } => (
            ToolErrorKind::InvalidArguments,
            "use a relative path inside the execution root",
            false,
        ),
        PatchError::Sandboxed { .. } => (
            ToolErrorKind::Failed,
            "the sandbox keeps this file read-only; if it must change, tell the operator (or \
             run the change with ExecCommand `escalate` and a `justification`, which asks them)",
            false,
        ),
        PatchError::NotFound { .. } => (
            ToolErrorKind::NotFound,
            "create the file with `--- /dev/null`, or check the path with `rg --files`",
            false,
        ),
        PatchError::AlreadyExists { .. } => (
            ToolErrorKind::Conflict,
            "the file exists: modify it with `--- a/PATH` instead of creating it",
            false,
        ),
        PatchError::NotAFile { .. } | PatchError::NotText { .. } => (
            ToolErrorKind::InvalidArguments,
            "ApplyPatch edits UTF-8 text files only",
            false,
        ),
        PatchError::Mismatch { .. } | PatchError::DeleteIncomplete { .. } => (
            ToolErrorKind::Conflict,
            "re-read the current lines (e.g. `sed -n START,ENDp PATH`) and regenerate the hunk; nothing was written",
            false,
        ),
        PatchError::Io { .. } => (
            ToolErrorKind::Failed,
            "check the path's permissions and retry",
            true,
        ),
    };
    let mut outcome = tool_error(kind, e.to_string(), Some(hint), Some("patch"), retryable);
    if let Some(obj) = outcome.content.as_object_mut() {
        obj.insert("details".into(), e.details());
    }
    outcome
}

// ---- errors ---------------------------------------------------------------

/// Why a patch was rejected. Nothing is written when any of these occur.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error("the patch contains no file changes (expected `--- a/PATH` and `+++ b/PATH` headers followed by @@ hunks)")]
    Empty,
    #[error("patch line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("{path}, hunk {hunk}: {message}")]
    HunkShape {
        path: String,
        hunk: usize,
        message: String,
    },
    #[error("`{old}` -> `{new}`: renames are not supported")]
    Rename { old: String, new: String },
    #[error("path `{path}`: {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("path `{path}` resolves outside the execution root")]
    OutsideRoot { path: String },
    #[error(
        "path `{path}` is read-only in the sandbox (git metadata, Holon's own files, \
         or anything under `sandbox = \"read_only\"`)"
    )]
    Sandboxed { path: String },
    #[error("{path}: no such file to modify or delete")]
    NotFound { path: String },
    #[error("{path}: cannot create it, the file already exists")]
    AlreadyExists { path: String },
    #[error("{path}: not a regular file")]
    NotAFile { path: String },
    #[error("{path}: not UTF-8 text")]
    NotText { path: String },
    #[error(
        "{path}, hunk {hunk}: does not apply at line {line}: expected {expected:?}, found {}{}",
        found_text(.found),
        searched_note(*.searched)
    )]
    Mismatch {
        path: String,
        hunk: usize,
        /// 1-based line of the file where the first mismatch is.
        line: usize,
        expected: String,
        /// `None` at end of file.
        found: Option<String>,
        /// An exact match was also searched for elsewhere in the file.
        searched: bool,
    },
    #[error("{path}: deleting it needs every line removed, {remaining} line(s) would remain")]
    DeleteIncomplete { path: String, remaining: usize },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

fn found_text(found: &Option<String>) -> String {
    match found {
        Some(f) => format!("{f:?}"),
        None => "end of file".to_owned(),
    }
}

fn searched_note(searched: bool) -> &'static str {
    if searched {
        " (the hunk's lines do not appear anywhere else in the file either)"
    } else {
        ""
    }
}

impl PatchError {
    /// Structured detail for the tool error envelope.
    fn details(&self) -> serde_json::Value {
        match self {
            PatchError::Empty => json!({ "reason": "empty_patch" }),
            PatchError::Parse { line, .. } => json!({ "reason": "parse", "patch_line": line }),
            PatchError::HunkShape { path, hunk, .. } => {
                json!({ "reason": "hunk_shape", "path": path, "hunk": hunk })
            }
            PatchError::Rename { old, new } => {
                json!({ "reason": "rename", "old_path": old, "new_path": new })
            }
            PatchError::InvalidPath { path, .. } => {
                json!({ "reason": "invalid_path", "path": path })
            }
            PatchError::OutsideRoot { path } => json!({ "reason": "outside_root", "path": path }),
            PatchError::Sandboxed { path } => json!({ "reason": "sandboxed", "path": path }),
            PatchError::NotFound { path } => json!({ "reason": "not_found", "path": path }),
            PatchError::AlreadyExists { path } => {
                json!({ "reason": "already_exists", "path": path })
            }
            PatchError::NotAFile { path } => json!({ "reason": "not_a_file", "path": path }),
            PatchError::NotText { path } => json!({ "reason": "not_text", "path": path }),
            PatchError::Mismatch {
                path,
                hunk,
                line,
                expected,
                found,
                searched,
            } => json!({
                "reason": "hunk_mismatch", "path": path, "hunk": hunk, "line": line,
                "expected": expected, "found": found, "searched_whole_file": searched,
            }),
            PatchError::DeleteIncomplete { path, remaining } => {
                json!({ "reason": "delete_incomplete", "path": path, "remaining_lines": remaining })
            }
            PatchError::Io { path, .. } => json!({ "reason": "io", "path": path }),
        }
    }
}
