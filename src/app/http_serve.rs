//! Serving the HTTP listener's connections: hyper's HTTP/1 (with upgrades,
//! for `/ws`) under a connection cap, a header timeout and an open-file
//! budget, so slow or idle clients cannot starve the runtime; graceful at
//! shutdown.

use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// A connection's byte stream: TCP, or TLS over it.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

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
/// taking it all (a third stays for HTTP, at least 16 slots), so the
/// listener always has room for new clients. All the WebSockets the
/// control server allows open at once would then reach into the reserve.
pub(super) fn http_slots(configured: usize, control: usize, budget: usize) -> usize {
    let ws_fds = control.saturating_mul(3);
    let beside_ws = budget.saturating_sub(ws_fds);
    configured
        .min(beside_ws.max(budget / 3))
        .max(16.min(configured.max(1)))
}

/// A connection's standing: waiting for a request (its first, or the
/// next on a kept-alive connection), serving one, or told to give way.
const WAITING: u8 = 0;
const SERVING: u8 = 1;
const EVICTED: u8 = 2;

/// One connection as the listener sees it.
struct Conn {
    state: std::sync::atomic::AtomicU8,
    evict: tokio::sync::Notify,
    /// Its place in `Waiting` while it waits (changes at each wait).
    place: std::sync::atomic::AtomicU64,
}

/// Connections waiting for a request, longest first: the ones to give
/// way when every slot is taken.
#[derive(Default)]
struct Waiting {
    next: u64,
    conns: std::collections::BTreeMap<u64, Arc<Conn>>,
}

impl Waiting {
    fn lock(this: &std::sync::Mutex<Waiting>) -> std::sync::MutexGuard<'_, Waiting> {
        this.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `conn` waits (again), last in line.
    fn enter(this: &std::sync::Mutex<Waiting>, conn: &Arc<Conn>) {
        use std::sync::atomic::Ordering;
        let mut w = Waiting::lock(this);
        let place = w.next;
        w.next += 1;
        conn.place.store(place, Ordering::SeqCst);
        w.conns.insert(place, Arc::clone(conn));
    }

    fn leave(this: &std::sync::Mutex<Waiting>, conn: &Conn) {
        let place = conn.place.load(std::sync::atomic::Ordering::SeqCst);
        Waiting::lock(this).conns.remove(&place);
    }

    /// Tell the connection that has waited longest to give way; whether
    /// one did. One that began serving meanwhile is left alone.
    fn evict_oldest(this: &std::sync::Mutex<Waiting>) -> bool {
        use std::sync::atomic::Ordering;
        loop {
            let Some((_, conn)) = Waiting::lock(this).conns.pop_first() else {
                return false;
            };
            let told = conn
                .state
                .compare_exchange(WAITING, EVICTED, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
            if told {
                conn.evict.notify_one();
                return true;
            }
        }
    }
}

/// Accept and serve HTTP/1 connections: at most `max` at once, each given
/// `header_timeout` from its accept to send a whole request's headers (and
/// as long between requests on a kept-alive connection), until
/// `shutdown`; then the open connections finish (at most 5 s). When a new
/// client comes and every slot is taken, the connection that has waited
/// longest for a request (a first one, or the next on a kept-alive
/// connection) gives way to it, so silent or idle clients can never hold
/// the listener; a request already being served is never cut. Only when
/// every slot serves a request does the newcomer wait, the kernel's
/// backlog holding the rest.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    mut shutdown: watch::Receiver<bool>,
    max: usize,
    header_timeout: std::time::Duration,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
    let slots = Arc::new(Semaphore::new(max));
    let waiting: Arc<std::sync::Mutex<Waiting>> = Arc::default();
    let mut failures = 0u32;
    loop {
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
        // A slot for the newcomer: a free one, else the one of the
        // connection that has waited longest for a request.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => Ok(slot),
            Err(_) => {
                Waiting::evict_oldest(&waiting);
                tokio::select! {
                    slot = Arc::clone(&slots).acquire_owned() => slot,
                    _ = shutdown.wait_for(|s| *s) => break,
                }
            }
        };
        let Ok(slot) = slot else { break };
        let conn = Arc::new(Conn {
            state: AtomicU8::new(WAITING),
            evict: tokio::sync::Notify::new(),
            place: AtomicU64::new(0),
        });
        Waiting::enter(&waiting, &conn);
        let first_place = conn.place.load(Ordering::SeqCst);
        let inner = hyper_util::service::TowerToHyperService::new(app.clone());
        let service = {
            let (conn, waiting) = (Arc::clone(&conn), Arc::clone(&waiting));
            hyper::service::service_fn(move |req| {
                // Serving now, unless it was told to give way first.
                let serving = conn
                    .state
                    .compare_exchange(WAITING, SERVING, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok();
                let answer = serving.then(|| {
                    Waiting::leave(&waiting, &conn);
                    hyper::service::Service::call(&inner, req)
                });
                let (conn, waiting) = (Arc::clone(&conn), Arc::clone(&waiting));
                async move {
                    let Some(answer) = answer else {
                        let busy = axum::http::Response::builder()
                            .status(axum::http::StatusCode::SERVICE_UNAVAILABLE)
                            .header("connection", "close")
                            .body(axum::body::Body::from("the listener is full; try again"))
                            .unwrap_or_default();
                        return Ok(busy);
                    };
                    let response = answer.await;
                    // Waiting for its next request: it may give way again.
                    conn.state.store(WAITING, Ordering::SeqCst);
                    Waiting::enter(&waiting, &conn);
                    response
                }
            })
        };
        let stop = shutdown.clone();
        let waiting = Arc::clone(&waiting);
        let tls = tls.clone();
        let accepted_at = tokio::time::Instant::now();
        tokio::spawn(async move {
            // TLS first, within the time a client has for its headers, and
            // giving way like any connection that has not sent a request.
            let io: Box<dyn Io> = match tls {
                None => Box::new(stream),
                Some(acceptor) => {
                    let deadline = accepted_at + header_timeout;
                    let shaken = tokio::select! {
                        s = tokio::time::timeout_at(deadline, acceptor.accept(stream)) => s.ok().and_then(Result::ok),
                        () = conn.evict.notified() => None,
                        _ = stopped(stop.clone()) => None,
                    };
                    match shaken {
                        Some(tls) => Box::new(tls),
                        None => {
                            Waiting::leave(&waiting, &conn);
                            drop(slot);
                            return;
                        }
                    }
                }
            };
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(io), service)
                .with_upgrades();
            let mut served = std::pin::pin!(served);
            // Counted from the accept, not from the first byte: a client
            // that connects and says nothing is closed as one that stalls.
            let silent = async {
                tokio::time::sleep_until(accepted_at + header_timeout).await;
                if conn.place.load(Ordering::SeqCst) == first_place
                    && conn.state.load(Ordering::SeqCst) == WAITING
                {
                    return;
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = served.as_mut() => {}
                () = silent => {}
                () = conn.evict.notified() => {}
                _ = stopped(stop) => {
                    // Finish the request in hand, take no other.
                    served.as_mut().graceful_shutdown();
                    let _ = served.await;
                }
            }
            Waiting::leave(&waiting, &conn);
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
        // WebSockets could take; a third stays for plain HTTP.
        assert_eq!(http_slots(512, 256, 768), 256);
        // Plenty of descriptors: the configured most.
        assert_eq!(http_slots(512, 256, 1_000_000), 512);
        // Very few: never none.
        assert_eq!(http_slots(512, 256, 10), 16);
        assert_eq!(http_slots(4, 256, 10), 4);
    }
}
