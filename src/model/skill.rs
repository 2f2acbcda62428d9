//! Skills as they travel: where a skill comes from, whether an agent has
//! it active, and the catalog line a client lists. Discovery and
//! activation live in the engine (`runtime::agents::skills`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillScope {
    User,
    Agent,
    Workspace,
}

impl SkillScope {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillScope::User => "user",
            SkillScope::Agent => "agent",
            SkillScope::Workspace => "workspace",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillState {
    TurnActive,
    SessionActive,
    Restored,
}

impl SkillState {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillState::TurnActive => "turn_active",
            SkillState::SessionActive => "session_active",
            SkillState::Restored => "restored",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadReason {
    ReadSkillMd,
    RunSkillScript,
    /// Reserved: runtime-driven `SKILL.md` injection.
    PromptInjection,
}

/// A skill an agent activated (kept on its record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveSkill {
    pub name: String,
    pub scope: SkillScope,
    pub entrypoint_path: String,
    pub state: SkillState,
}

/// A catalog entry with its activation state (`skills.list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillView {
    pub name: String,
    pub description: String,
    pub scope: SkillScope,
    pub entrypoint_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SkillState>,
}

impl SkillView {
    /// `name (scope) [state]: description`, as the prompt and the CLI
    /// list a skill.
    pub fn line(&self) -> String {
        let state = self
            .state
            .map(|st| format!(" [{}]", st.as_str()))
            .unwrap_or_default();
        let description = match self.description.is_empty() {
            true => "no description",
            false => &self.description,
        };
        format!(
            "{} ({}){state}: {description}",
            self.name,
            self.scope.as_str()
        )
    }
}
