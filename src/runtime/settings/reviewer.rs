//! `[policy] reviewer` and what goes with it: which model reviews a
//! request, under which written policy, what it may do and how long it
//! may take.

/// The default time a review may take (`[policy] reviewer_timeout_secs`).
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long an allow that answers waits for a person to revoke it
/// (`[policy] reviewer_hold_secs`).
pub const DEFAULT_HOLD: std::time::Duration = std::time::Duration::from_secs(5);

/// `[policy] reviewer` and what goes with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewerConfig {
    /// `provider/model`: the reviewer of every workspace whose policy
    /// names none of its own (`None`: only those that do are reviewed).
    pub model: Option<String>,
    /// The operator's written policy (`reviewer_policy`, else
    /// `policy.md` in the config directory); read at each review, so the
    /// digest recorded is of the text that review was given.
    pub policy_file: Option<std::path::PathBuf>,
    /// Each workspace's own written policy is `DIR/<workspace id>/policy.md`
    /// (`workspaces` beside config.toml), added to the one above.
    pub workspaces_dir: Option<std::path::PathBuf>,
    pub may: crate::model::review::ReviewerMay,
    pub timeout: std::time::Duration,
    /// How long an allow that answers (`allow_and_deny`) leaves the
    /// request pending, for a person to deny it before the call runs.
    pub hold: std::time::Duration,
}

impl Default for ReviewerConfig {
    fn default() -> ReviewerConfig {
        ReviewerConfig {
            model: None,
            policy_file: None,
            workspaces_dir: None,
            may: crate::model::review::ReviewerMay::Advise,
            timeout: DEFAULT_TIMEOUT,
            hold: DEFAULT_HOLD,
        }
    }
}
