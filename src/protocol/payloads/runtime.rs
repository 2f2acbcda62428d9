//! Payloads of the runtime itself and of operator settings: start, stop, configuration reloads, display mode, model override.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::turns::Guidance;

use crate::model::agent::{AgentStatus, DisplayMode};
pub use crate::model::retention::{AgentPruned, HistoryLost};

/// `runtime_started`: the runtime recovered the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStarted {
    pub status_before: AgentStatus,
    pub status: AgentStatus,
    #[serde(default)]
    pub turn_was_in_progress: bool,
    #[serde(default)]
    pub replay_message_ids: Vec<String>,
}

/// `runtime_stopped` (reserved).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStopped {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `config_reloaded`: AGENTS.md/CLAUDE.md or config.toml changed on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum ConfigReloaded {
    AgentsMd {
        /// The file names that changed.
        changed: Vec<String>,
        paths: Vec<PathBuf>,
        /// The guidance loaded now.
        #[serde(default)]
        loaded: Vec<Guidance>,
        note: Cow<'static, str>,
    },
    ConfigFile {
        path: PathBuf,
        /// The sections that changed.
        changed: Vec<String>,
        /// False when the new file is invalid and the previous one stays.
        applied: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<Cow<'static, str>>,
    },
}

/// `display_mode_changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisplayModeChanged {
    pub from: DisplayMode,
    pub to: DisplayMode,
}

/// `model_override_changed`: null is the runtime's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelOverrideChanged {
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
    /// The agent's own reasoning effort before and after (absent: the
    /// configured one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort_from: Option<crate::model::usage::ReasoningEffort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort_to: Option<crate::model::usage::ReasoningEffort>,
}
