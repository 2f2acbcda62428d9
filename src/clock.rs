//! The one clock the runtime reads: record timestamps, timers, wake hints,
//! recheck dues, budgets' days and retention's cutoff all take "now" from
//! `now_ms`, and the runtime waits for a clock duration through `wall`.
//!
//! A process runs the system clock unless another one is installed before
//! it reads the time: `holon debug bench life` installs an accelerated
//! clock, and `HOLON_DEBUG_CLOCK` (read once at start) installs a paused or
//! accelerated one for tests and benchmarks that drive the real binary:
//!
//! - `2026-01-01T00:00:00Z`: paused at that instant (time stands still;
//!   a test in the process moves it with `advance`);
//! - `2026-01-01T00:00:00Z*3600`: starts there and runs 3,600 times
//!   faster than the wall clock.
//!
//! The system clock can jump backwards; nothing here hides that. What
//! reads it copes: a timer fires later, a retention cutoff prunes less,
//! and the ledger orders by `event_seq`, never by timestamp.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The environment variable that installs a paused or accelerated clock.
pub const CLOCK_ENV: &str = "HOLON_DEBUG_CLOCK";

/// The fastest an accelerated clock may run: a simulated year in under
/// ten wall seconds would leave the runtime no time to keep up.
pub const MAX_FACTOR: u32 = 10_000_000;

#[derive(Debug)]
pub enum Clock {
    /// The machine's wall clock.
    System,
    /// Stands still at its instant until `advance` moves it.
    Paused(AtomicI64),
    /// `origin_ms` at `started`, then `factor` clock milliseconds for every
    /// wall millisecond.
    Scaled {
        origin_ms: i64,
        started: Instant,
        factor: u32,
    },
}

static INSTALLED: OnceLock<Clock> = OnceLock::new();

impl Clock {
    pub fn paused(at_ms: i64) -> Clock {
        Clock::Paused(AtomicI64::new(at_ms))
    }

    pub fn scaled(origin_ms: i64, factor: u32) -> Clock {
        Clock::Scaled {
            origin_ms,
            started: Instant::now(),
            factor: factor.clamp(1, MAX_FACTOR),
        }
    }

    /// A clock from its spec (`INSTANT` paused, `INSTANT*FACTOR`
    /// accelerated, `system`), each part named when it is wrong.
    pub fn parse(spec: &str) -> Result<Clock, String> {
        let spec = spec.trim();
        if spec.eq_ignore_ascii_case("system") {
            return Ok(Clock::System);
        }
        let (at, factor) = match spec.split_once('*') {
            Some((at, factor)) => {
                let factor: u32 = factor.trim().parse().map_err(|_| {
                    format!(
                        "`{factor}` is not a speed-up factor (a whole number, 1 to {MAX_FACTOR})"
                    )
                })?;
                if !(1..=MAX_FACTOR).contains(&factor) {
                    return Err(format!(
                        "a speed-up of {factor} is out of range (1 to {MAX_FACTOR})"
                    ));
                }
                (at.trim(), Some(factor))
            }
            None => (spec, None),
        };
        let at_ms = parse_instant(at).ok_or_else(|| {
            format!("`{at}` is not an RFC 3339 instant (e.g. 2026-01-01T00:00:00Z)")
        })?;
        Ok(match factor {
            Some(f) => Clock::scaled(at_ms, f),
            None => Clock::paused(at_ms),
        })
    }

    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => system_ms(),
            Clock::Paused(at) => at.load(Ordering::Acquire),
            Clock::Scaled {
                origin_ms,
                started,
                factor,
            } => {
                let wall = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
                origin_ms.saturating_add(wall.saturating_mul(i64::from(*factor)))
            }
        }
    }

    /// How long the process waits for `d` of this clock's time: `d` on
    /// the system clock, less when accelerated, and `None` when paused
    /// (only `advance` moves it; the waiter looks again when woken).
    pub fn wall(&self, d: Duration) -> Option<Duration> {
        match self {
            Clock::System => Some(d),
            Clock::Paused(_) => None,
            Clock::Scaled { factor, .. } => Some(d / *factor),
        }
    }
}

/// Install `clock` as the process's clock. Refused once anything has read
/// the time through `now_ms` or another clock was installed: a runtime
/// must never see time from two clocks.
pub fn install(clock: Clock) -> Result<(), String> {
    INSTALLED
        .set(clock)
        .map_err(|_| "the clock was already chosen for this process".to_owned())
}

/// Install the clock `HOLON_DEBUG_CLOCK` names, if it is set.
pub fn install_from_env() -> Result<(), String> {
    match std::env::var(CLOCK_ENV) {
        Ok(spec) if !spec.trim().is_empty() => {
            let clock = Clock::parse(&spec).map_err(|e| format!("{CLOCK_ENV}: {e}"))?;
            install(clock)
        }
        _ => Ok(()),
    }
}

fn clock() -> &'static Clock {
    INSTALLED.get_or_init(|| Clock::System)
}

/// Now, as milliseconds since the Unix epoch, on the process's clock.
pub fn now_ms() -> i64 {
    clock().now_ms()
}

/// How long to wait for `d` of clock time (see `Clock::wall`).
pub fn wall(d: Duration) -> Option<Duration> {
    clock().wall(d)
}

/// Move a paused clock forward by `ms` (nothing on another clock). The
/// caller wakes whatever waits on it.
pub fn advance(ms: i64) {
    if let Clock::Paused(at) = clock() {
        at.fetch_add(ms.max(0), Ordering::AcqRel);
    }
}

/// Whether the process runs (or, nothing chosen yet, will run) the system
/// clock. Asking chooses nothing.
pub fn is_system() -> bool {
    matches!(INSTALLED.get(), None | Some(Clock::System))
}

fn parse_instant(at: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

fn system_ms() -> i64 {
    let now = std::time::SystemTime::now();
    match now.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_names_a_paused_or_an_accelerated_clock() {
        let paused = Clock::parse("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(paused.now_ms(), 1_767_225_600_000);
        assert_eq!(paused.wall(Duration::from_secs(5)), None);
        let fast = Clock::parse("2026-01-01T00:00:00Z*3600").unwrap();
        assert!(fast.now_ms() >= 1_767_225_600_000);
        assert_eq!(
            fast.wall(Duration::from_secs(3600)),
            Some(Duration::from_secs(1))
        );
        assert!(matches!(Clock::parse(" system ").unwrap(), Clock::System));
    }

    #[test]
    fn a_bad_spec_says_which_part_is_wrong() {
        let e = Clock::parse("yesterday").unwrap_err();
        assert!(e.contains("`yesterday` is not an RFC 3339 instant"), "{e}");
        let e = Clock::parse("2026-01-01T00:00:00Z*fast").unwrap_err();
        assert!(e.contains("`fast` is not a speed-up factor"), "{e}");
        let e = Clock::parse("2026-01-01T00:00:00Z*0").unwrap_err();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn an_accelerated_clock_runs_its_factor_faster() {
        let c = Clock::scaled(0, 1000);
        std::thread::sleep(Duration::from_millis(20));
        let now = c.now_ms();
        assert!((20_000..2_000_000).contains(&now), "{now}");
    }
}
