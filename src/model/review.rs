//! The reviewer's vocabulary: a verdict on an approval request, how far
//! its word goes (`[policy] reviewer_may`), the durable record of one
//! review kept on the approval, and a workspace's own choice of reviewer.

use serde::{Deserialize, Serialize};

/// A reviewer's verdict on an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    Allow,
    Deny,
    /// A person decides (also what an unusable answer, a failure, a
    /// timeout or a spent budget come to).
    Ask,
}

impl ReviewVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewVerdict::Allow => "allow",
            ReviewVerdict::Deny => "deny",
            ReviewVerdict::Ask => "ask",
        }
    }

    pub fn parse(s: &str) -> Option<ReviewVerdict> {
        match s {
            "allow" => Some(ReviewVerdict::Allow),
            "deny" => Some(ReviewVerdict::Deny),
            "ask" => Some(ReviewVerdict::Ask),
            _ => None,
        }
    }
}

/// How far the reviewer's word goes (`[policy] reviewer_may`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewerMay {
    /// It annotates the request; a person still answers.
    #[default]
    Advise,
    /// Its "deny" answers the request; "allow" only annotates.
    DenyOnly,
    /// Its "allow" and "deny" both answer the request.
    AllowAndDeny,
}

impl ReviewerMay {
    pub const CHOICES: &'static str = "advise, deny_only or allow_and_deny";

    pub fn as_str(self) -> &'static str {
        match self {
            ReviewerMay::Advise => "advise",
            ReviewerMay::DenyOnly => "deny_only",
            ReviewerMay::AllowAndDeny => "allow_and_deny",
        }
    }

    pub fn parse(s: &str) -> Option<ReviewerMay> {
        match s {
            "advise" => Some(ReviewerMay::Advise),
            "deny_only" => Some(ReviewerMay::DenyOnly),
            "allow_and_deny" => Some(ReviewerMay::AllowAndDeny),
            _ => None,
        }
    }

    /// Whether `verdict` answers the request under this reach.
    pub fn answers(self, verdict: ReviewVerdict) -> bool {
        matches!(
            (self, verdict),
            (ReviewerMay::DenyOnly, ReviewVerdict::Deny)
                | (
                    ReviewerMay::AllowAndDeny,
                    ReviewVerdict::Deny | ReviewVerdict::Allow
                )
        )
    }
}

/// The durable record of one review: who reviewed, under which policy,
/// what it said, what it cost, and whether its word answered the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalReview {
    /// `reviewer`: the model configured as `[policy] reviewer`, or the
    /// workspace's own.
    pub reviewed_by: String,
    /// The model asked (`provider/model`), or the one that answered.
    pub model: String,
    pub verdict: ReviewVerdict,
    /// Its reason, as the model sees it on a denial (bounded, cleaned).
    pub reason: String,
    /// Why the verdict is `ask` though the reviewer did not say so (its
    /// answer was unusable, it failed, timed out, or the budget is spent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// The SHA-256 of the written policy it was given (hex).
    pub policy_digest: String,
    /// Where that policy's parts came from: the operator's files, and a
    /// repository's proposal the operator approved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_from: Vec<String>,
    /// How far its word went (`[policy] reviewer_may`) when it answered.
    pub may: ReviewerMay,
    /// Its verdict answered the request (else a person does, or did).
    pub applied: bool,
    /// When an allow that answers runs the call, unless a person denies
    /// it first (`[policy] reviewer_hold_secs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_at: Option<String>,
    pub latency_ms: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub reviewed_at: String,
}

/// A workspace's own reviewer: a model, or none at all (`"off"` or
/// `"provider/model"` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ReviewerChoice {
    /// No reviewer here, whatever config `[policy] reviewer` says.
    Off,
    /// This model (`provider/model`).
    Model(String),
}

impl ReviewerChoice {
    /// What `--reviewer` takes: `off`, `default` (the change that
    /// returns to config `[policy] reviewer`: `None`), or a model.
    pub fn parse(s: &str) -> Result<Option<ReviewerChoice>, String> {
        let s = s.trim();
        match s {
            "off" => Ok(Some(ReviewerChoice::Off)),
            "default" => Ok(None),
            _ => {
                let (provider, model) = s.split_once('/').unwrap_or(("", ""));
                let word = |w: &str| {
                    !w.is_empty()
                        && w.len() <= 128
                        && !w.chars().any(|c| c.is_control() || c.is_whitespace())
                };
                match word(provider) && word(model) {
                    true => Ok(Some(ReviewerChoice::Model(s.to_owned()))),
                    false => Err(format!(
                        "`{}` is not a reviewer: provider/model, off or default",
                        super::text::escape_hidden(s)
                    )),
                }
            }
        }
    }

    /// The model that reviews where this is in force, given config's.
    pub fn model<'a>(
        choice: Option<&'a ReviewerChoice>,
        config: Option<&'a str>,
    ) -> Option<&'a str> {
        match choice {
            Some(ReviewerChoice::Off) => None,
            Some(ReviewerChoice::Model(m)) => Some(m),
            None => config,
        }
    }

    pub fn label(&self) -> &str {
        match self {
            ReviewerChoice::Off => "off",
            ReviewerChoice::Model(m) => m,
        }
    }
}

impl TryFrom<String> for ReviewerChoice {
    type Error = String;
    fn try_from(s: String) -> Result<ReviewerChoice, String> {
        ReviewerChoice::parse(&s)?.ok_or_else(|| "`default` is not a stored reviewer".into())
    }
}

impl From<ReviewerChoice> for String {
    fn from(c: ReviewerChoice) -> String {
        c.label().to_owned()
    }
}

/// `mcp_server_reviewed`: the reviewer's verdict on starting a server
/// that a repository's `.mcp.json` defines, for one command line. Under
/// `reviewer_may` its allow approves the server (`mcp_server_approved`)
/// once the hold is over; otherwise it annotates the server in `holon mcp
/// list`, and the operator approves (or disables) it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerReview {
    /// The workspace's directory (whose `.mcp.json` defines it).
    pub workspace: String,
    pub name: String,
    pub command_line: String,
    pub review: ApprovalReview,
    /// Its allow was acted on once (the server approved, or the operator
    /// had disabled it, or the file changed): never again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub acted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspaces_reviewer_is_a_model_off_or_default() {
        let model = ReviewerChoice::parse(" openai/gpt-4.1-mini ");
        assert_eq!(
            model,
            Ok(Some(ReviewerChoice::Model("openai/gpt-4.1-mini".into())))
        );
        assert_eq!(ReviewerChoice::parse("off"), Ok(Some(ReviewerChoice::Off)));
        assert_eq!(ReviewerChoice::parse("default"), Ok(None));
        for bad in ["", "gpt", "/m", "p/", "p/m x", "p/m\u{1b}[2J"] {
            assert!(ReviewerChoice::parse(bad).is_err(), "{bad:?}");
        }
        let off = Some(ReviewerChoice::Off);
        let own = Some(ReviewerChoice::Model("a/b".into()));
        assert_eq!(ReviewerChoice::model(off.as_ref(), Some("c/d")), None);
        assert_eq!(ReviewerChoice::model(own.as_ref(), None), Some("a/b"));
        assert_eq!(ReviewerChoice::model(None, Some("c/d")), Some("c/d"));
        // On the wire, a plain string; `default` is never stored.
        let wire = serde_json::to_string(&own).unwrap_or_default();
        assert_eq!(wire, "\"a/b\"");
        assert!(serde_json::from_str::<ReviewerChoice>("\"default\"").is_err());
    }
}
