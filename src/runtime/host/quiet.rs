//! Hand freed heap back to the system once the runtime goes quiet.
//!
//! glibc's allocator keeps memory a burst of work freed (start-up, a
//! turn's request and transcript, a page of events) in its arenas, and a
//! daemon that then idles for hours holds it as resident memory for
//! nothing: ~2.4 MiB of the idle daemon's 6 MiB of heap just after start.
//! Each actor says when it has nothing left to do; once none has said so
//! for [`QUIET`], `malloc_trim` returns the free pages. Under steady work
//! the actors keep saying it and nothing is trimmed; an idle runtime waits
//! on the notify and wakes for nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

/// How long no actor may have gone idle before the heap is trimmed.
pub(super) const QUIET: Duration = Duration::from_secs(1);

/// Call `trim` once the actors have been quiet for [`QUIET`] after any of
/// them went idle; return at shutdown.
pub(super) async fn run(
    went_idle: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
    trim: impl Fn(),
) {
    loop {
        tokio::select! {
            _ = went_idle.notified() => {}
            _ = shutdown.changed() => return,
        }
        loop {
            tokio::select! {
                _ = went_idle.notified() => {}
                _ = tokio::time::sleep(QUIET) => break,
                _ = shutdown.changed() => return,
            }
        }
        trim();
    }
}

/// Return the allocator's free pages to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn release_free_heap() {
    // SAFETY: malloc_trim takes no pointers; it walks glibc's own free
    // lists under their locks and may be called from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_free_heap() {}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn trims_once_per_quiet_spell_and_never_while_actors_keep_going_idle() {
        let went_idle = Arc::new(Notify::new());
        let (stop, shutdown) = watch::channel(false);
        let trims = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&trims);
        let task = tokio::spawn(run(Arc::clone(&went_idle), shutdown, move || {
            counted.fetch_add(1, Ordering::SeqCst);
        }));
        let step = |ms| tokio::time::sleep(Duration::from_millis(ms));
        // Nothing went idle yet: no trim, however long it waits.
        step(5_000).await;
        assert_eq!(trims.load(Ordering::SeqCst), 0);
        // Busy: an actor goes idle every 300 ms for 3 s.
        for _ in 0..10 {
            went_idle.notify_one();
            step(300).await;
        }
        assert_eq!(trims.load(Ordering::SeqCst), 0);
        step(1_000).await;
        assert_eq!(trims.load(Ordering::SeqCst), 1);
        // Quiet: still one.
        step(10_000).await;
        assert_eq!(trims.load(Ordering::SeqCst), 1);
        went_idle.notify_one();
        step(1_100).await;
        assert_eq!(trims.load(Ordering::SeqCst), 2);
        let _ = stop.send(true);
        task.await.unwrap();
    }
}
