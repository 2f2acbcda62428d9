//! The control socket's connection slots: who holds one, whether it
//! follows anything, and who gives way at the limit. A new connection at
//! `max_connections` takes the slot of the oldest one that follows nothing
//! (answering requests, pinging, does not keep a slot; a connection busy
//! answering is never chosen), so a command-line client always gets
//! through; only when every connection follows an agent is it refused.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// What the server knows of one open connection: whether it follows
/// anything, and how to ask it to close.
#[derive(Clone, Default)]
pub(crate) struct Watch {
    following: Arc<AtomicBool>,
    evict: Arc<Notify>,
}

impl Watch {
    /// Whether the connection follows something (or is busy answering):
    /// then it is never the one that gives way.
    pub(super) fn set_following(&self, following: bool) {
        self.following.store(following, Ordering::SeqCst);
    }

    /// Once the server asks this connection to give way.
    pub(super) async fn evicted(&self) {
        self.evict.notified().await
    }
}

pub(super) struct Slot {
    pub(super) id: u64,
    pub(super) watch: Watch,
}

/// A connection's slot, given back when its task ends, however it ends.
pub(super) struct Held {
    slots: Arc<Slots>,
    id: u64,
}

impl Held {
    pub(super) fn new(slots: &Arc<Slots>, id: u64) -> Held {
        Held {
            slots: Arc::clone(slots),
            id,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.slots.release(self.id);
    }
}

/// The control socket's connections, oldest first. At the cap a new
/// connection takes the slot of the oldest one that follows nothing
/// (answering requests, pinging, does not keep a slot), so a command-line
/// client always gets through; only when every connection follows an
/// agent is a new one refused.
pub(super) struct Slots {
    max: usize,
    open: std::sync::Mutex<(u64, Vec<Slot>)>,
}

impl Slots {
    pub(super) fn new(max: usize) -> Slots {
        Slots {
            max,
            open: std::sync::Mutex::new((0, Vec::new())),
        }
    }

    pub(super) fn take(&self) -> Option<Slot> {
        let mut guard = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let (next, open) = &mut *guard;
        if open.len() >= self.max {
            let idle = open
                .iter()
                .position(|s| !s.watch.following.load(Ordering::SeqCst))?;
            let evicted = open.remove(idle);
            evicted.watch.evict.notify_one();
        }
        *next += 1;
        let slot = Slot {
            id: *next,
            watch: Watch::default(),
        };
        open.push(Slot {
            id: slot.id,
            watch: slot.watch.clone(),
        });
        Some(slot)
    }

    fn release(&self, id: u64) {
        let mut guard = self.open.lock().unwrap_or_else(|p| p.into_inner());
        guard.1.retain(|s| s.id != id);
    }
}
