//! Store upkeep while the runtime runs, on request and by itself:
//! backups (`store.backup`, `holon store backup`, and `[store]
//! backup_every_hours`), each a read snapshot copied beside the store
//! (`Store::backup_rotated`) with the oldest beyond `[store] backup_keep`
//! removed; and retention (`store.prune`, `holon store prune`, and
//! `[store] retain_days` at start and then every six hours of the
//! runtime's clock). What a prune may remove is `runtime::retention`'s;
//! each agent is pruned in write jobs of bounded size between everything
//! else the writer does.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::watch;

use crate::model::backup::BackupReport;
use crate::model::retention::{PruneBy, PruneReport};
use crate::protocol::{ApiError, ErrorCode};
use crate::runtime::handle::{HostInner, RuntimeHost};
use crate::runtime::retention;

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
pub(super) async fn schedule_backups(
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

/// How often the runtime prunes by itself for `[store] retain_days`.
pub const PRUNE_EVERY: Duration = Duration::from_secs(6 * 3600);

impl RuntimeHost {
    /// Prune history older than `older_than_days` (else `[store]
    /// retain_days`) that nothing current needs; `dry_run` only reports.
    /// One prune runs at a time; a second waits for it.
    pub async fn prune_store(
        &self,
        older_than_days: Option<u32>,
        dry_run: bool,
    ) -> Result<PruneReport, ApiError> {
        prune(&self.inner, older_than_days, dry_run, PruneBy::Operator).await
    }
}

/// The days a prune keeps: the request's, else the config's, each 1 to
/// `MAX_DAYS`.
pub fn days_to_keep(asked: Option<u32>, configured: Option<u32>) -> Result<u32, ApiError> {
    let invalid = |m: String| ApiError::new(ErrorCode::InvalidParams, m);
    match asked.or(configured) {
        None => Err(invalid(
            "say how much history to keep: `holon store prune --older-than 30d` \
             (`older_than_days` over the socket), or set [store] retain_days"
                .into(),
        )),
        Some(0) => Err(invalid(
            "older than 0 days would keep no history at all: give 1 day or more".into(),
        )),
        Some(d) if d > retention::MAX_DAYS => Err(invalid(format!(
            "{d} days is out of range: give 1 to {}",
            retention::MAX_DAYS
        ))),
        Some(d) => Ok(d),
    }
}

async fn prune(
    inner: &HostInner,
    older_than_days: Option<u32>,
    dry_run: bool,
    by: PruneBy,
) -> Result<PruneReport, ApiError> {
    let days = days_to_keep(older_than_days, inner.config.retain_days)?;
    let _one = inner.prune_lock.lock().await;
    let cutoff = retention::cutoff_ms(crate::now_ms(), days);
    let data_dir = inner.config.data_dir.clone();
    let report = retention::prune_store(&inner.store, Some(&data_dir), cutoff, dry_run, by)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "store prune failed");
            ApiError::new(ErrorCode::Storage, format!("the prune failed: {e}"))
        })?;
    tracing::info!(
        older_than = %report.older_than,
        dry_run,
        agents = report.agents.len(),
        events = report.events,
        bytes = report.bytes,
        millis = report.millis,
        "store pruned"
    );
    Ok(report)
}

/// Prune for `[store] retain_days` at start and then every `PRUNE_EVERY` of the
/// runtime's clock, until shutdown. A failed pass is logged and tried
/// again at the next.
pub(super) async fn schedule_prunes(inner: Weak<HostInner>, mut shutdown: watch::Receiver<bool>) {
    loop {
        {
            let Some(inner) = inner.upgrade() else { return };
            let _ = prune(&inner, None, false, PruneBy::RetainDays).await;
        }
        let wait = async {
            match crate::clock::wall(PRUNE_EVERY) {
                Some(d) => tokio::time::sleep(d).await,
                // A paused clock: no time passes, no pass is due.
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wait => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
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

    #[test]
    fn a_prune_keeps_the_days_asked_else_the_configured_ones() {
        assert_eq!(days_to_keep(Some(7), Some(30)).unwrap(), 7);
        assert_eq!(days_to_keep(None, Some(30)).unwrap(), 30);
        let e = days_to_keep(None, None).unwrap_err();
        assert!(e.message.contains("[store] retain_days"), "{}", e.message);
        let e = days_to_keep(Some(0), Some(30)).unwrap_err();
        assert!(e.message.contains("keep no history"), "{}", e.message);
        assert!(days_to_keep(Some(retention::MAX_DAYS + 1), None).is_err());
    }
}
