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

/// How a hook run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// A `pre_tool` hook did not object.
    Allowed,
    /// A `pre_tool` hook refused the call.
    Denied,
    /// A hook of another event finished.
    Done,
    /// It could not start, exited other than 0 (or 2 for `pre_tool`),
    /// was killed, or answered what Holon cannot read.
    Failed,
}

/// `hook_ran`: one run of an operator hook (`[[hooks.EVENT]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRan {
    /// The hook's name.
    pub hook: String,
    /// The hook event it ran for (`pre_tool`, `post_tool`, `turn_end`,
    /// `approval_requested`, `brief`, `agent_idle`, `prompt_submitted`).
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The `event_seq` of the event the hook was told about (every event
    /// but `pre_tool`, which runs before anything is recorded of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about_seq: Option<u64>,
    pub outcome: HookOutcome,
    /// The call was refused: denied, or failed under `on_error = "deny"`.
    #[serde(default)]
    pub refused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    #[serde(default)]
    pub duration_ms: u64,
    /// A denial's reason, as the model sees it (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A failure, in words (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the kernel confined it.
    #[serde(default)]
    pub sandboxed: bool,
    /// Bytes it wrote to stdout and stderr (what Holon kept is bounded).
    #[serde(default)]
    pub output_bytes: u64,
    /// Its failures in a row, this one included (0 when it did not fail):
    /// the console reports the first, not every one after.
    #[serde(default)]
    pub failures: u32,
}
