//! Serving the HTTP listener's connections: hyper's HTTP/1 (with upgrades,
//! for `/ws`) under a connection cap, a header timeout and an open-file
//! budget, so slow or idle clients cannot starve the runtime; graceful at
//! shutdown.

use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// Once `shutdown` turns true.
async fn stopped(mut shutdown: watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}

/// Descriptors kept for the store, the control socket and command tasks
/// whatever the HTTP listener holds.
const FD_RESERVE: u64 = 256;

/// Raise the soft open-file limit to the hard one, and say how many HTTP
/// connections fit under it with the reserve kept.
pub(super) fn fd_budget() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit fill and read the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return usize::MAX;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                // Commands get the limit they would have had.
                crate::runtime::exec_env::remember_fd_limit(lim.rlim_cur);
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    let budget = lim.rlim_cur.saturating_sub(FD_RESERVE).max(16);
    usize::try_from(budget).unwrap_or(usize::MAX)
}

/// Accept and serve HTTP/1 connections: at most `max` at once (at the
/// limit, accepting waits until one closes; the kernel's backlog holds the
/// rest), each given `header_timeout` to send a request's headers (also
/// between requests on a kept-alive connection), until `shutdown`; then
/// the open connections finish (at most 5 s).
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    mut shutdown: watch::Receiver<bool>,
    max: usize,
    header_timeout: std::time::Duration,
) {
    let slots = Arc::new(Semaphore::new(max));
    let mut failures = 0u32;
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                failures = 0;
                stream
            }
            Err(e) => {
                // Out of descriptors or memory: back off rather than spin.
                failures = failures.saturating_add(1);
                if failures == 1 || failures.is_multiple_of(100) {
                    tracing::warn!(error = %e, failures, "HTTP accept failed; backing off");
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
            .with_upgrades();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stopped(stop) => {
                    // Finish the request in hand, take no other.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(slot);
        });
    }
    // The open connections finish (WebSockets close on shutdown too).
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), slots.acquire_many(all)).await;
}
