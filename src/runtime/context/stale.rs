//! The stale-progress reminder, pure: when many provider rounds of one
//! turn pass without a successful work-item call, the next request is
//! given a provider-only reminder of the current work item (objective,
//! status, plan, open todos, blocker), bounded, and not again until a
//! cooldown has passed. It records nothing and marks no progress.

use crate::model::text::truncate_chars;
use crate::model::work::{TodoState, WorkItemRecord};
use crate::runtime::context::budget::estimate_tokens;

/// The calls that count as work-item progress.
pub const PROGRESS_TOOLS: [&str; 4] = [
    "CreateWorkItem",
    "PickWorkItem",
    "UpdateWorkItem",
    "CompleteWorkItem",
];

/// Thresholds, from `HOLON_WORK_ITEM_STALE_REMINDER_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleConfig {
    /// Rounds without progress before a reminder (0: never).
    pub rounds: u32,
    /// Rounds after a reminder before another.
    pub cooldown_rounds: u32,
    /// The reminder's estimated tokens, at most.
    pub max_tokens: u64,
}

impl Default for StaleConfig {
    fn default() -> StaleConfig {
        StaleConfig {
            rounds: 8,
            cooldown_rounds: 8,
            max_tokens: 400,
        }
    }
}

impl StaleConfig {
    /// The defaults with whatever `var` gives (unparsable values ignored).
    pub fn from(var: impl Fn(&str) -> Option<String>) -> StaleConfig {
        let d = StaleConfig::default();
        let num = |name: &str, default: u64| {
            var(name)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        StaleConfig {
            rounds: num("HOLON_WORK_ITEM_STALE_REMINDER_ROUNDS", u64::from(d.rounds)) as u32,
            cooldown_rounds: num(
                "HOLON_WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS",
                u64::from(d.cooldown_rounds),
            ) as u32,
            max_tokens: num("HOLON_WORK_ITEM_STALE_REMINDER_MAX_TOKENS", d.max_tokens),
        }
    }
}

/// One turn's count of rounds without progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StaleProgress {
    pub rounds_without: u32,
    /// Rounds since the last reminder (`None`: none yet this turn).
    pub since_reminder: Option<u32>,
}

impl StaleProgress {
    /// A round ran its tools: `progressed` when one was a successful
    /// work-item call.
    pub fn after_round(&mut self, progressed: bool) {
        self.rounds_without = match progressed {
            true => 0,
            false => self.rounds_without.saturating_add(1),
        };
        if let Some(n) = &mut self.since_reminder {
            *n = n.saturating_add(1);
        }
    }

    /// Whether the next request gets a reminder.
    pub fn due(&self, cfg: StaleConfig) -> bool {
        cfg.rounds > 0
            && self.rounds_without >= cfg.rounds
            && self.since_reminder.is_none_or(|n| n >= cfg.cooldown_rounds)
    }

    pub fn reminded(&mut self) {
        self.since_reminder = Some(0);
    }
}

/// The reminder for `w`, within `max_tokens` (completed todos left out).
pub fn reminder(w: &WorkItemRecord, rounds_without: u32, max_tokens: u64) -> String {
    let mut s = format!(
        "[Runtime reminder, not from the operator] {rounds_without} rounds have passed without a \
         work-item update. Current work item {} ({:?}): {}.",
        w.id,
        w.plan_status,
        truncate_chars(&w.objective, 300)
    );
    if let Some(b) = &w.blocked_by {
        s.push_str(&format!(" Blocked by: {}.", truncate_chars(b, 200)));
    }
    let open: Vec<String> = w
        .todo_list
        .iter()
        .filter(|t| t.state != TodoState::Completed)
        .map(|t| format!("[{:?}] {}", t.state, truncate_chars(&t.text, 120)))
        .collect();
    if !open.is_empty() {
        s.push_str(&format!(" Open todos: {}.", open.join("; ")));
    }
    s.push_str(
        " If material progress, a scope change, a blocker or a finished todo has emerged, \
         record it with UpdateWorkItem (or CompleteWorkItem); otherwise carry on.",
    );
    // Bounded: cut by characters until the estimate fits.
    let mut max_chars = s.chars().count();
    let mut out = s.clone();
    while estimate_tokens(&out) > max_tokens && max_chars > 80 {
        max_chars = max_chars * 3 / 4;
        out = truncate_chars(&s, max_chars);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::work::{PlanStatus, TodoItem};

    fn item() -> WorkItemRecord {
        let mut w: WorkItemRecord = serde_json::from_value(serde_json::json!({
            "id": "w1", "agent_id": "a", "objective": "port the parser",
            "created_at": "t", "updated_at": "t"
        }))
        .unwrap();
        w.plan_status = PlanStatus::Ready;
        w.todo_list = vec![
            TodoItem {
                text: "lexer".into(),
                state: TodoState::Completed,
            },
            TodoItem {
                text: "grammar".into(),
                state: TodoState::Pending,
            },
        ];
        w
    }

    #[test]
    fn due_after_the_threshold_then_after_the_cooldown_and_progress_resets_it() {
        let cfg = StaleConfig {
            rounds: 3,
            cooldown_rounds: 2,
            max_tokens: 400,
        };
        let mut p = StaleProgress::default();
        for _ in 0..2 {
            p.after_round(false);
            assert!(!p.due(cfg));
        }
        p.after_round(false);
        assert!(p.due(cfg));
        p.reminded();
        p.after_round(false);
        assert!(!p.due(cfg), "within the cooldown");
        p.after_round(false);
        assert!(p.due(cfg), "after the cooldown");
        p.after_round(true);
        assert!(!p.due(cfg), "progress starts the count again");
        assert!(!StaleProgress {
            rounds_without: 100,
            since_reminder: None
        }
        .due(StaleConfig { rounds: 0, ..cfg }));
    }

    #[test]
    fn the_reminder_names_the_item_and_its_open_todos_and_is_bounded() {
        let text = reminder(&item(), 9, 400);
        assert!(text.contains("w1 (Ready): port the parser"), "{text}");
        assert!(text.contains("[Pending] grammar"), "{text}");
        assert!(!text.contains("lexer"), "completed todos are left out");
        let mut big = item();
        big.objective = "x".repeat(50_000);
        let short = reminder(&big, 9, 60);
        assert!(estimate_tokens(&short) <= 60 || short.chars().count() <= 81);
    }

    #[test]
    fn thresholds_come_from_the_environment_and_bad_values_are_ignored() {
        let cfg = StaleConfig::from(|k| match k {
            "HOLON_WORK_ITEM_STALE_REMINDER_ROUNDS" => Some("3".into()),
            "HOLON_WORK_ITEM_STALE_REMINDER_MAX_TOKENS" => Some("lots".into()),
            _ => None,
        });
        assert_eq!(cfg.rounds, 3);
        assert_eq!(cfg.max_tokens, 400);
        assert_eq!(cfg.cooldown_rounds, 8);
    }
}
