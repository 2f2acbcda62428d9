//! What a repository proposes for itself under `.holon/` (a reviewer
//! policy, hooks) and the operator's approval of one exact text. A
//! proposal is in force only while its text is the one approved.

use serde::{Deserialize, Serialize};

/// What a repository may propose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalKind {
    /// `.holon/policy.md`: added to the reviewer's written policy.
    Policy,
    /// `.holon/hooks.toml`: hooks that run for the workspace, confined.
    Hooks,
}

impl ProposalKind {
    pub const CHOICES: &'static str = "policy or hooks";

    /// The file under the repository's `.holon/`.
    pub fn file(self) -> &'static str {
        match self {
            ProposalKind::Policy => "policy.md",
            ProposalKind::Hooks => "hooks.toml",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProposalKind::Policy => "policy",
            ProposalKind::Hooks => "hooks",
        }
    }
}

/// A repository's proposal as the runtime reads it (`proposal.show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub kind: ProposalKind,
    /// The workspace's directory.
    pub workspace: String,
    /// The proposal's path.
    pub file: String,
    /// Its text and SHA-256 (hex), when there is one that can be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Why it cannot be used (a link, not a file, too large, a hook
    /// table a repository may not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The text the operator approved here (its digest), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_digest: Option<String>,
}

impl Proposal {
    /// Whether it is in force now: readable, usable, and approved as is.
    pub fn in_force(&self) -> bool {
        self.refused.is_none() && self.digest.is_some() && self.digest == self.approved_digest
    }
}

/// `proposal_approved`: the operator approved a repository's proposal
/// for its exact text (`approved: false`: withdrew that).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalApproval {
    pub kind: ProposalKind,
    /// The workspace's directory.
    pub workspace: String,
    /// The SHA-256 (hex) of the text approved (or withdrawn).
    pub digest: String,
    pub approved: bool,
}
