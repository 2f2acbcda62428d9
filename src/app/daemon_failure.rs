//! The daemon's failures that no store can hold: the one that stopped it
//! starting (the store itself may be what failed) or stopping cleanly,
//! kept with its phase and time in `<logs>/daemon-failure.json` (private,
//! replaced whole), so `holon daemon status` and `holon daemon logs` show
//! the latest without anyone reading raw log files. A turn's failure is
//! the agent's (`runtime_error`), shown from the store as before.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Context;

/// Where in its life the daemon failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Startup,
    Shutdown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonFailure {
    pub phase: Phase,
    /// RFC 3339.
    pub occurred_at: String,
    /// The error and its causes, one line, at most 2,000 characters.
    pub summary: String,
}

pub fn path(ctx: &Context) -> PathBuf {
    ctx.paths.log_dir.join("daemon-failure.json")
}

/// Keep `error` as the latest failure in `phase`. Best effort: a daemon
/// that cannot write it still reports the error on its stderr and log.
pub fn record(ctx: &Context, phase: Phase, error: &anyhow::Error) {
    let summary: String = format!("{error:#}")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(2000)
        .collect();
    let failure = DaemonFailure {
        phase,
        occurred_at: crate::format_ts(crate::now_ms()),
        summary,
    };
    if let Err(e) = write(&path(ctx), &failure) {
        tracing::warn!(error = %e, "the daemon's failure was not kept");
    }
}

fn write(path: &Path, failure: &DaemonFailure) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(serde_json::to_string(failure)?.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// A start that succeeded: the start-up failure kept from an earlier one
/// is no longer news (it stays in the log), so it goes; a shutdown
/// failure stays until the next one replaces it or a start clears it.
pub fn clear_on_start(ctx: &Context) {
    let file = path(ctx);
    match std::fs::remove_file(&file) {
        Ok(()) => {
            tracing::info!(file = %file.display(), "an earlier failure is cleared by this start")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(error = %e, file = %file.display(), "an earlier failure could not be cleared")
        }
    }
}

/// The latest failure kept, if any (an unreadable file reads as none).
pub fn latest(ctx: &Context) -> Option<DaemonFailure> {
    let text = std::fs::read_to_string(path(ctx)).ok()?;
    serde_json::from_str(&text).ok()
}

/// `phase at TIME: summary`, for status and logs.
pub fn line(f: &DaemonFailure) -> String {
    let phase = match f.phase {
        Phase::Startup => "start-up",
        Phase::Shutdown => "shutdown",
    };
    // The summary may quote what a provider or a command said: shown
    // with anything that could act on the terminal escaped.
    let line = format!("{phase} failed at {}: {}", f.occurred_at, f.summary);
    crate::model::text::escape_hidden(&line).into_owned()
}
