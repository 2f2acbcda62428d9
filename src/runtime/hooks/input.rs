//! The JSON object a hook reads on stdin: one per run, versioned by
//! `schema`. Every input has `schema`, `event`, `agent_id` and
//! `workspace` (the agent's execution root, where the hook starts); the
//! rest depends on the event. Golden samples of each are in
//! `tests/fixtures/hooks/` and `docs/hooks.md` describes them; a changed
//! field shows up in the samples' diff.

use serde::Serialize;
use serde_json::{json, Value};

use crate::runtime::settings::hooks::HookEvent;

/// The input's version: raised when a field is renamed, retyped or
/// removed (a new field does not raise it).
pub const SCHEMA: u32 = 1;

/// Texts (a brief, a prompt, a result) longer than this many characters
/// are cut, ending in `…`.
pub const TEXT_CHARS: usize = 16_000;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookInput {
    pub schema: u32,
    pub event: HookEvent,
    pub agent_id: String,
    /// The agent's execution root, where the hook starts.
    pub workspace: Option<String>,
    #[serde(flatten)]
    pub detail: Detail,
}

/// What the input says beyond who and where, by event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Detail {
    /// `pre_tool`: the call about to run, its arguments in full.
    Call {
        run_id: String,
        call_id: String,
        tool: String,
        args: Value,
    },
    /// `post_tool`: the call and how it ended.
    Result {
        run_id: String,
        call_id: String,
        tool: String,
        args: Value,
        is_error: bool,
        duration_ms: u64,
        /// The result's text as the event keeps it (its first 600
        /// characters).
        result_preview: String,
    },
    /// `turn_end`.
    Turn {
        run_id: String,
        message_id: String,
        /// `completed`, `aborted` or `baseline_over_budget`.
        outcome: String,
    },
    /// `approval_requested`.
    Approval {
        approval_id: String,
        tool: String,
        /// What the operator is asked, in a line.
        summary: String,
        /// Why it asks.
        reason: String,
    },
    /// `brief`.
    Brief {
        brief_id: String,
        /// `result`, `failure`, `progress`, …
        kind: String,
        text: String,
    },
    /// `agent_idle`: the status it went to (`asleep`, `awake_idle`).
    Idle { status: String },
    /// `prompt_submitted`.
    Prompt { message_id: String, text: String },
}

impl HookInput {
    pub fn new(
        event: HookEvent,
        agent_id: &str,
        workspace: Option<String>,
        detail: Detail,
    ) -> Self {
        HookInput {
            schema: SCHEMA,
            event,
            agent_id: agent_id.to_owned(),
            workspace,
            detail,
        }
    }

    /// The tool the input is about, for `tools` matchers.
    pub fn tool(&self) -> Option<&str> {
        match &self.detail {
            Detail::Call { tool, .. } | Detail::Result { tool, .. } => Some(tool),
            _ => None,
        }
    }

    /// The bytes written to the hook's stdin: one JSON object and a
    /// newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

/// `text` cut to `TEXT_CHARS`.
pub fn bounded(text: &str) -> String {
    match text.char_indices().nth(TEXT_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// A plausible input of `event` (`holon hooks test`, and the golden
/// samples): agent `main` working in `/work/project`.
pub fn sample(event: HookEvent) -> HookInput {
    let args = json!({ "cmd": "cargo test", "workdir": "crates/core" });
    let detail = match event {
        HookEvent::PreTool => Detail::Call {
            run_id: "run_0001".into(),
            call_id: "call_1".into(),
            tool: "ExecCommand".into(),
            args,
        },
        HookEvent::PostTool => Detail::Result {
            run_id: "run_0001".into(),
            call_id: "call_1".into(),
            tool: "ExecCommand".into(),
            args,
            is_error: false,
            duration_ms: 1840,
            result_preview: "{\"exit_status\":0,\"stdout_preview\":\"test result: ok\"}".into(),
        },
        HookEvent::TurnEnd => Detail::Turn {
            run_id: "run_0001".into(),
            message_id: "msg_0001".into(),
            outcome: "completed".into(),
        },
        HookEvent::ApprovalRequested => Detail::Approval {
            approval_id: "apr_0001".into(),
            tool: "ExecCommand".into(),
            summary: "git push origin main".into(),
            reason: "escalate: the command asks to run outside the sandbox".into(),
        },
        HookEvent::Brief => Detail::Brief {
            brief_id: "brf_0001".into(),
            kind: "result".into(),
            text: "The tests pass; the fix is on branch holon/fix-parser.".into(),
        },
        HookEvent::AgentIdle => Detail::Idle {
            status: "asleep".into(),
        },
        HookEvent::PromptSubmitted => Detail::Prompt {
            message_id: "msg_0002".into(),
            text: "Now run the benchmarks.".into(),
        },
    };
    HookInput::new(event, "main", Some("/work/project".into()), detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden samples in tests/fixtures/hooks (`HOLON_UPDATE_HOOK_FIXTURES=1`
    /// writes them): the schema hooks are written against.
    #[test]
    fn samples_match_the_golden_inputs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks");
        let update = std::env::var_os("HOLON_UPDATE_HOOK_FIXTURES").is_some();
        for event in HookEvent::ALL {
            let text = serde_json::to_string_pretty(&sample(event)).unwrap_or_default() + "\n";
            let file = dir.join(format!("{event}.json"));
            if update {
                let _ = std::fs::create_dir_all(&dir);
                std::fs::write(&file, &text).unwrap();
            }
            let golden = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert_eq!(text, golden, "{event}: the hook input changed shape");
            let value: Value = serde_json::from_str(&golden).unwrap();
            for key in ["schema", "event", "agent_id", "workspace"] {
                assert!(value.get(key).is_some(), "{event} lacks {key}");
            }
        }
    }

    #[test]
    fn long_texts_are_cut() {
        let long = "é".repeat(TEXT_CHARS + 5);
        let cut = bounded(&long);
        assert_eq!(cut.chars().count(), TEXT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn the_tool_is_named_for_tool_events_only() {
        assert_eq!(sample(HookEvent::PreTool).tool(), Some("ExecCommand"));
        assert_eq!(sample(HookEvent::Brief).tool(), None);
        assert!(sample(HookEvent::PreTool).to_bytes().ends_with(b"}\n"));
    }
}
