//! Holon: a TUI-first operator console with an embedded runtime for
//! long-lived LLM agents.
//!
//! Dependencies flow one way: `app` -> `ui`, `runtime`, `store`;
//! `ui` -> `protocol` only; `runtime` -> `store`. The store knows nothing
//! of agents beyond keys and JSON records; the runtime owns record shapes and
//! the scheduler contract; the console is a projection of runtime events.

pub mod app;
pub mod clock;
pub mod durable;
pub mod model;
pub mod protocol;
pub mod runtime;
pub mod store;
pub mod ui;

/// Current time as milliseconds since the Unix epoch, on the process's
/// one clock (`clock`: the system clock unless a paused or accelerated one
/// was installed). The only place time is read for record timestamps;
/// pure policies take `now` as an argument instead of calling this.
pub fn now_ms() -> i64 {
    clock::now_ms()
}

/// Formats epoch milliseconds as an RFC 3339 UTC timestamp
/// (`2026-11-22T04:07:02.123Z`), the form every record and event uses.
pub fn format_ts(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => {
            let fmt = time::macros::format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
            );
            t.format(&fmt).unwrap_or_else(|_| ms.to_string())
        }
        Err(_) => ms.to_string(),
    }
}

/// The latest time (epoch ms) an id of this process carries, raised at
/// start to the latest a store recorded (`raise_id_time`).
static ID_TIME: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A new time-ordered identifier with a readable prefix, e.g. `msg_0193…`.
/// UUIDv7 hex sorts by creation time, so ledgers keyed by these ids read back
/// in admission order. Its time is the process's clock (`clock`), so an id
/// says about when it was minted on the same clock as every timestamp;
/// ids minted in one millisecond, or after the clock stepped back, still
/// sort in the order they were minted: an id's time never goes below the
/// latest one minted here or kept by a store this process opened (its
/// `meta` row `id_time`), so a restart under a clock that went back mints
/// ids that sort after the ones already kept, their time then a little
/// ahead of the clock's.
pub fn new_id(prefix: &str) -> String {
    use std::sync::atomic::Ordering;
    use std::sync::{LazyLock, Mutex};
    static CONTEXT: LazyLock<Mutex<uuid::ContextV7>> =
        LazyLock::new(|| Mutex::new(uuid::ContextV7::new()));
    let now = u64::try_from(now_ms()).unwrap_or(0);
    let ms = ID_TIME.fetch_max(now, Ordering::AcqRel).max(now);
    let ts = uuid::Timestamp::from_unix(&*CONTEXT, ms / 1000, (ms % 1000) as u32 * 1_000_000);
    format!("{prefix}_{}", uuid::Uuid::new_v7(ts).simple())
}

/// The latest time an id minted so far carries (epoch ms).
pub fn id_time() -> u64 {
    ID_TIME.load(std::sync::atomic::Ordering::Acquire)
}

/// Ids minted from now on carry at least `ms`: the latest time a store
/// recorded, so ids stay ordered across a restart under an earlier clock.
pub fn raise_id_time(ms: u64) {
    ID_TIME.fetch_max(ms, std::sync::atomic::Ordering::AcqRel);
}

/// The message a panic carried (`&str` or `String` payloads), for hooks
/// that turn panics into errors.
pub fn panic_message(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown failure".to_owned())
}

#[cfg(test)]
mod id_tests {
    #[test]
    fn ids_sort_in_the_order_they_were_minted() {
        let ids: Vec<String> = (0..10_000).map(|_| super::new_id("t")).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids out of order");
        let ms = i64::from_str_radix(&ids[0][2..14], 16).unwrap();
        assert!(
            (super::now_ms() - ms).abs() < 60_000,
            "the id's time is now"
        );
    }
}
