//! Store backups while the runtime runs: on request (`store.backup`, `holon
//! store backup`) and on a schedule (`[store] backup_every_hours`), each a
//! read snapshot copied beside the store (`Store::backup_rotated`), the
//! oldest beyond `[store] backup_keep` removed.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::watch;

use super::{HostInner, RuntimeHost};
use crate::protocol::{ApiError, ErrorCode};
use crate::store::backup::BackupReport;

/// When the runtime backs the store up by itself, and how many rotated
/// copies it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupSchedule {
    /// `None`: only on request.
    pub every: Option<Duration>,
    pub keep: usize,
}

impl Default for BackupSchedule {
    fn default() -> Self {
        BackupSchedule {
            every: None,
            keep: 3,
        }
    }
}

impl RuntimeHost {
    /// Write a rotated copy of the store now (waits for one already being
    /// written).
    pub async fn backup_store(&self, copy: bool) -> Result<BackupReport, ApiError> {
        backup(&self.inner, copy).await
    }
}

/// A rotated backup, or (`copy`) one outside the rotation for a client to
/// move (`Store::backup_copy`).
async fn backup(inner: &HostInner, copy: bool) -> Result<BackupReport, ApiError> {
    let _one = inner.backup_lock.lock().await;
    let store = inner.store.clone();
    let keep = inner.config.backups.keep;
    let report = tokio::task::spawn_blocking(move || match copy {
        true => store.backup_copy(),
        false => store.backup_rotated(keep),
    })
    .await
    .map_err(|e| ApiError::new(ErrorCode::Internal, format!("the backup stopped: {e}")))?
    .map_err(|e| {
        tracing::warn!(error = %e, "store backup failed");
        ApiError::new(ErrorCode::Storage, format!("the backup failed: {e}"))
    })?;
    tracing::info!(
        path = %report.path.display(),
        bytes = report.bytes,
        rows = report.rows,
        millis = report.millis,
        removed = report.removed.len(),
        "store backed up"
    );
    Ok(report)
}

/// How long until the next scheduled backup, given the newest rotated
/// copy's age (`None`: there is none) and the interval: due now when there
/// is none or it is older than the interval.
pub fn next_due(newest_age: Option<Duration>, every: Duration) -> Duration {
    match newest_age {
        Some(age) => every.saturating_sub(age),
        None => Duration::ZERO,
    }
}

/// Back the store up every `every`, counting from the newest rotated copy
/// (so a restart neither skips nor repeats one), until shutdown. A failed
/// backup is logged and tried again after a tenth of the interval (at most
/// an hour).
pub(super) async fn schedule(
    inner: Weak<HostInner>,
    every: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut wait = {
        let Some(inner) = inner.upgrade() else { return };
        next_due(inner.store.newest_backup_age(), every)
    };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        let Some(inner) = inner.upgrade() else { return };
        wait = match backup(&inner, false).await {
            Ok(_) => every,
            Err(_) => (every / 10).min(Duration::from_secs(3600)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_backup_is_due_at_once_and_then_by_the_newest_copy() {
        let day = Duration::from_secs(86_400);
        assert_eq!(next_due(None, day), Duration::ZERO);
        assert_eq!(
            next_due(Some(Duration::from_secs(3_600)), day),
            day - Duration::from_secs(3_600)
        );
        assert_eq!(next_due(Some(2 * day), day), Duration::ZERO);
    }
}
