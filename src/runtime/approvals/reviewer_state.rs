//! The runtime's reviewer as it runs: its configuration (replaced when
//! config.toml changes), the requests it is on, its running reviews
//! (stopped when the runtime stops), and each agent's denials in a row,
//! past `MAX_DENIALS_IN_A_ROW` of which a person decides instead.

use std::collections::HashMap;

use crate::runtime::settings::reviewer::ReviewerConfig;

/// Reviews running at once.
pub const SLOTS: usize = 4;
/// Reviewer denials in a row, of one agent's requests, after which the
/// reviewer is not asked until a person answers one: a model that asks
/// again after each denial would otherwise loop on the reviewer's dime.
pub const MAX_DENIALS_IN_A_ROW: u32 = 5;

/// The runtime's reviewer: what it is (replaced when config.toml
/// changes), which requests it is on, and its running reviews (stopped
/// when the runtime stops, before its commands are).
pub struct Reviewer {
    config: std::sync::RwLock<ReviewerConfig>,
    busy: std::sync::Mutex<std::collections::HashSet<String>>,
    pub(crate) slots: tokio::sync::Semaphore,
    tasks: std::sync::Mutex<tokio::task::JoinSet<()>>,
    /// Reviews claimed and not yet over, and who waits for none.
    running: std::sync::atomic::AtomicUsize,
    settled: tokio::sync::Notify,
    /// Each agent's reviewer denials that answered, in a row.
    denials: std::sync::Mutex<HashMap<String, u32>>,
}

impl Reviewer {
    pub fn new(config: ReviewerConfig) -> Reviewer {
        Reviewer {
            config: std::sync::RwLock::new(config),
            busy: std::sync::Mutex::default(),
            slots: tokio::sync::Semaphore::new(SLOTS),
            tasks: std::sync::Mutex::default(),
            running: std::sync::atomic::AtomicUsize::new(0),
            settled: tokio::sync::Notify::new(),
            denials: std::sync::Mutex::default(),
        }
    }

    /// Whether `agent_id`'s reviewer denied `MAX_DENIALS_IN_A_ROW` of its
    /// requests in a row (then a person decides the next).
    pub fn denied_too_often(&self, agent_id: &str) -> bool {
        let denials = self.denials.lock().unwrap_or_else(|p| p.into_inner());
        denials
            .get(agent_id)
            .is_some_and(|n| *n >= MAX_DENIALS_IN_A_ROW)
    }

    /// Count a verdict that answered one of `agent_id`'s requests (a
    /// denial adds one; anything else starts again), or a person's
    /// answer (`denied: false`).
    pub fn count(&self, agent_id: &str, denied: bool) {
        let mut denials = self.denials.lock().unwrap_or_else(|p| p.into_inner());
        match denied {
            true => *denials.entry(agent_id.to_owned()).or_default() += 1,
            false => {
                denials.remove(agent_id);
            }
        }
    }

    /// Wait until no review runs (tests and benchmarks: what a review
    /// did, or chose not to do, is then recorded).
    pub async fn settled(&self) {
        use std::sync::atomic::Ordering;
        loop {
            let told = self.settled.notified();
            if self.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            told.await;
        }
    }

    /// What is configured now.
    pub fn config(&self) -> ReviewerConfig {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Take the `[policy] reviewer` of a changed config file.
    pub fn replace(&self, config: ReviewerConfig) {
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config;
    }

    /// Claim `approval_id` (false: a review of it is already running).
    pub(crate) fn claim(&self, approval_id: &str) -> bool {
        let claimed = self
            .busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(approval_id.to_owned());
        if claimed {
            self.running
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        claimed
    }

    pub(crate) fn release(&self, approval_id: &str) {
        let released = self
            .busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(approval_id);
        if released {
            self.running
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            self.settled.notify_waiters();
        }
    }

    /// Run `review` among the reviews the runtime stops at shutdown.
    pub(crate) fn spawn(&self, review: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Forget the finished ones.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(review);
    }

    /// Stop every running review: a verdict not yet recorded is asked
    /// again at the next start; one recorded, not yet acted on, is acted
    /// on then (if the reach in force allows it).
    pub async fn stop(&self) {
        let mut tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}

impl crate::runtime::handle::HostInner {
    /// The reviewer of approval requests (`approvals::reviewer`).
    pub(crate) fn reviewer(&self) -> &Reviewer {
        self.part()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_in_a_row_count_until_anything_else() {
        let r = Reviewer::new(ReviewerConfig::default());
        for _ in 0..MAX_DENIALS_IN_A_ROW - 1 {
            r.count("a", true);
        }
        assert!(!r.denied_too_often("a"));
        r.count("a", true);
        assert!(r.denied_too_often("a"));
        assert!(!r.denied_too_often("b"));
        r.count("a", false);
        assert!(!r.denied_too_often("a"));
    }
}
