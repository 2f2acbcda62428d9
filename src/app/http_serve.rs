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

/// The HTTP connections to hold at once: the configured most, within
/// the descriptors `budget` leaves. Each WebSocket (which gives its HTTP
/// slot back at the upgrade) holds three descriptors (its TCP stream and
/// a socket pair to the server), and up to `control` of them may be open;
/// under a small limit they share the budget with plain HTTP instead of
/// taking it all, so the listener always keeps some slots (at least 16)
/// for new clients.
pub(super) fn http_slots(configured: usize, control: usize, budget: usize) -> usize {
    let ws_fds = control.saturating_mul(3);
    let beside_ws = budget.saturating_sub(ws_fds);
    configured
        .min(beside_ws.max(budget / 2))
        .max(16.min(configured.max(1)))
}

/// Connections that have not sent a whole request yet, oldest first:
/// the ones to give way when every slot is taken.
#[derive(Default)]
struct Waiting {
    next: u64,
    conns: std::collections::BTreeMap<u64, Arc<tokio::sync::Notify>>,
}

impl Waiting {
    fn lock(this: &std::sync::Mutex<Waiting>) -> std::sync::MutexGuard<'_, Waiting> {
        this.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Accept and serve HTTP/1 connections: at most `max` at once, each given
/// `header_timeout` from its accept to send a whole request's headers (and
/// as long between requests on a kept-alive connection), until
/// `shutdown`; then the open connections finish (at most 5 s). At the
/// limit, the connection that has waited longest without sending a whole
/// request gives way to the next client (a few slow clients can never
/// hold the listener); only when every slot serves a request does
/// accepting wait, the kernel's backlog holding the rest.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    mut shutdown: watch::Receiver<bool>,
    max: usize,
    header_timeout: std::time::Duration,
) {
    let slots = Arc::new(Semaphore::new(max));
    let waiting: Arc<std::sync::Mutex<Waiting>> = Arc::default();
    let mut failures = 0u32;
    loop {
        // A slot: a free one, else the oldest still-silent connection's.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => Ok(slot),
            Err(_) => {
                let oldest = Waiting::lock(&waiting).conns.pop_first();
                if let Some((_, evict)) = oldest {
                    evict.notify_one();
                }
                tokio::select! {
                    slot = Arc::clone(&slots).acquire_owned() => slot,
                    _ = shutdown.wait_for(|s| *s) => break,
                }
            }
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
                drop(slot);
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let evict = Arc::new(tokio::sync::Notify::new());
        let id = {
            let mut w = Waiting::lock(&waiting);
            let id = w.next;
            w.next += 1;
            w.conns.insert(id, Arc::clone(&evict));
            id
        };
        // The first request's headers are in: no longer one to give way.
        let heard = {
            let waiting = Arc::clone(&waiting);
            move || {
                Waiting::lock(&waiting).conns.remove(&id);
            }
        };
        let inner = hyper_util::service::TowerToHyperService::new(app.clone());
        let service = hyper::service::service_fn(move |req| {
            heard();
            hyper::service::Service::call(&inner, req)
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
            .with_upgrades();
        let stop = shutdown.clone();
        let waiting = Arc::clone(&waiting);
        tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            // Counted from the accept, not from the first byte: a client
            // that connects and says nothing is closed as one that stalls.
            let silent = async {
                tokio::time::sleep(header_timeout).await;
                if Waiting::lock(&waiting).conns.contains_key(&id) {
                    return;
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = conn.as_mut() => {}
                () = silent => {}
                () = evict.notified() => {}
                _ = stopped(stop) => {
                    // Finish the request in hand, take no other.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            Waiting::lock(&waiting).conns.remove(&id);
            drop(slot);
        });
    }
    // The open connections finish (WebSockets close on shutdown too).
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), slots.acquire_many(all)).await;
}

#[cfg(test)]
mod tests {
    use super::http_slots;

    #[test]
    fn a_small_descriptor_limit_still_leaves_the_listener_room() {
        // ulimit -n 1024: 768 after the reserve, all of which 256
        // WebSockets could take; half stays for plain HTTP.
        assert_eq!(http_slots(512, 256, 768), 384);
        // Plenty of descriptors: the configured most.
        assert_eq!(http_slots(512, 256, 1_000_000), 512);
        // Very few: never none.
        assert_eq!(http_slots(512, 256, 10), 16);
        assert_eq!(http_slots(4, 256, 10), 4);
    }
}
