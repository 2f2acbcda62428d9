//! Retention while the runtime runs: on request (`store.prune`, `holon
//! store prune`) and by itself for `[store] retain_days` (at start, then
//! every six hours of the runtime's clock). The rules of what may go are
//! `runtime::retention`'s; each agent is pruned in write jobs of bounded
//! size between everything else the writer does.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::watch;

use super::{HostInner, RuntimeHost};
use crate::model::retention::{PruneBy, PruneReport};
use crate::protocol::{ApiError, ErrorCode};
use crate::runtime::retention;

/// How often the runtime prunes by itself for `[store] retain_days`.
pub const EVERY: Duration = Duration::from_secs(6 * 3600);

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
            "say how much history to keep: older_than_days (`holon store prune --older-than 30d`), or set [store] retain_days".into(),
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

/// Prune for `[store] retain_days` at start and then every `EVERY` of the
/// runtime's clock, until shutdown. A failed pass is logged and tried
/// again at the next.
pub(super) async fn schedule(inner: Weak<HostInner>, mut shutdown: watch::Receiver<bool>) {
    loop {
        {
            let Some(inner) = inner.upgrade() else { return };
            let _ = prune(&inner, None, false, PruneBy::RetainDays).await;
        }
        let wait = async {
            match crate::clock::wall(EVERY) {
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
