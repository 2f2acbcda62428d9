//! Frame pacing: the console draws only when its state changed, and at
//! most once a frame (`FRAME`, ~60 a second), however many changes came
//! in between: they coalesce into the next frame. What the operator typed
//! waits at most `INPUT_FRAME` since the last frame, so a key shows within
//! a frame's time even while an answer streams and every frame is taken.
//! Time is tokio's clock, so the pacing is tested on a paused clock.

use std::time::Duration;

use tokio::time::Instant;

/// The shortest time between two frames.
pub const FRAME: Duration = Duration::from_millis(16);

/// The shortest time between a frame and the next that shows input.
pub const INPUT_FRAME: Duration = Duration::from_millis(8);

#[derive(Debug, Clone, Copy)]
pub struct FramePacer {
    frame: Duration,
    last_draw: Option<Instant>,
    /// Input arrived since the last frame.
    input: bool,
}

impl Default for FramePacer {
    fn default() -> Self {
        FramePacer::new(FRAME)
    }
}

impl FramePacer {
    pub fn new(frame: Duration) -> FramePacer {
        FramePacer {
            frame,
            last_draw: None,
            input: false,
        }
    }

    /// The operator typed (a key, a paste, the mouse): the next frame may
    /// come sooner.
    pub fn input(&mut self) {
        self.input = true;
    }

    /// How long until a frame may be drawn for a `dirty` state: `None`
    /// when nothing changed (no frame is wanted), zero when one is due.
    pub fn due_in(&self, dirty: bool) -> Option<Duration> {
        if !dirty {
            return None;
        }
        let frame = match self.input {
            true => self.frame.min(INPUT_FRAME),
            false => self.frame,
        };
        Some(match self.last_draw {
            None => Duration::ZERO,
            Some(at) => frame.saturating_sub(at.elapsed()),
        })
    }

    /// Whether a `dirty` state may be drawn now.
    pub fn may_draw(&self, dirty: bool) -> bool {
        self.due_in(dirty) == Some(Duration::ZERO)
    }

    /// A frame was drawn now.
    pub fn drawn(&mut self) {
        self.last_draw = Some(Instant::now());
        self.input = false;
    }

    /// Resolves when a frame is due for a `dirty` state; never when
    /// nothing changed.
    pub async fn until_due(&self, dirty: bool) {
        match self.due_in(dirty) {
            Some(wait) => tokio::time::sleep(wait).await,
            None => std::future::pending::<()>().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_first_change_draws_at_once_and_later_ones_wait_for_the_frame() {
        let mut pacer = FramePacer::default();
        assert_eq!(pacer.due_in(false), None, "nothing changed: no frame");
        assert!(pacer.may_draw(true), "the first frame is due at once");
        pacer.drawn();
        // A change 5 ms later waits for the rest of the frame.
        tokio::time::advance(Duration::from_millis(5)).await;
        assert_eq!(pacer.due_in(true), Some(Duration::from_millis(11)));
        assert!(!pacer.may_draw(true));
        tokio::time::advance(Duration::from_millis(11)).await;
        assert!(pacer.may_draw(true));
    }

    #[tokio::test(start_paused = true)]
    async fn input_is_drawn_within_half_a_frame() {
        let mut pacer = FramePacer::default();
        pacer.drawn();
        tokio::time::advance(Duration::from_millis(2)).await;
        assert_eq!(pacer.due_in(true), Some(Duration::from_millis(14)));
        pacer.input();
        assert_eq!(pacer.due_in(true), Some(Duration::from_millis(6)));
        tokio::time::advance(Duration::from_millis(6)).await;
        assert!(pacer.may_draw(true));
        pacer.drawn();
        // Drawn: the next change waits a whole frame again.
        assert_eq!(pacer.due_in(true), Some(FRAME));
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_changes_coalesces_into_one_frame() {
        let mut pacer = FramePacer::default();
        pacer.drawn();
        let mut frames = 0;
        // 100 changes, one every millisecond: at most one frame per 16 ms.
        for _ in 0..100 {
            tokio::time::advance(Duration::from_millis(1)).await;
            if pacer.may_draw(true) {
                pacer.drawn();
                frames += 1;
            }
        }
        assert_eq!(frames, 6, "100 ms of changes is 6 frames");
    }

    #[tokio::test(start_paused = true)]
    async fn until_due_sleeps_to_the_frame_and_never_resolves_when_clean() {
        let mut pacer = FramePacer::default();
        pacer.drawn();
        let start = Instant::now();
        pacer.until_due(true).await;
        assert_eq!(start.elapsed(), FRAME);
        let clean = tokio::time::timeout(Duration::from_secs(60), pacer.until_due(false));
        assert!(clean.await.is_err(), "a clean state wants no frame");
    }
}
