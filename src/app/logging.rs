//! Logging: tracing to a daily rolling file under the log directory, never
//! to the terminal (the console owns it). The filter comes from the
//! effective config (`HOLON_LOG`, then `RUST_LOG`, then `[log] filter`).

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;

/// Log lines queued for the file writer before new ones are dropped.
const LOG_QUEUE_LINES: usize = 4096;
use tracing_subscriber::EnvFilter;

pub const LOG_FILE_PREFIX: &str = "holon.log";

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error(
        "log filter `{filter}` is invalid: {message} (set by HOLON_LOG, RUST_LOG or [log] filter)"
    )]
    Filter { filter: String, message: String },
    #[error("cannot open the log directory {dir}: {message}")]
    Dir { dir: String, message: String },
}

/// Install the global subscriber. Keep the guard alive for the process's
/// lifetime: dropping it flushes the writer.
pub fn init(log_dir: &Path, filter: &str) -> Result<WorkerGuard, LoggingError> {
    let env_filter = EnvFilter::try_new(filter).map_err(|e| LoggingError::Filter {
        filter: filter.to_owned(),
        message: e.to_string(),
    })?;
    let appender = tracing_appender::rolling::RollingFileAppender::builder()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix(LOG_FILE_PREFIX)
        .max_log_files(14)
        .build(log_dir)
        .map_err(|e| LoggingError::Dir {
            dir: log_dir.display().to_string(),
            message: e.to_string(),
        })?;
    // The default queue (128,000 lines) is allocated up front: ~4 MiB of
    // an idle daemon's memory. Holon logs a few lines a minute; when the
    // file writer falls this far behind, lines are dropped (and counted by
    // the appender), never the caller blocked.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(true)
        .finish(appender);
    // A second init (tests calling `run` twice) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(env_filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init();
    Ok(guard)
}
