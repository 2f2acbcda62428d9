//! What the operator sent that has no durable record yet (a prompt, a
//! `!command`): shown at once, marked when the runtime answers, kept as a
//! failed row when the send fails, and replaced by its record.

use super::super::msg::RequestId;
use super::super::rows::{CommandRow, CommandState, PromptState, RowKind};
use super::Conversation;
use crate::protocol::types::TaskStatus;
use crate::protocol::DisplayMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoKind {
    Prompt,
    /// `!CMD`.
    Command,
}

/// Something the operator sent that has no durable record yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Echo {
    pub request: RequestId,
    pub kind: EchoKind,
    pub text: String,
    /// The runtime answered (`queued` / task started).
    pub answered: bool,
    /// The message id or task id from the answer.
    pub bound: Option<String>,
}

impl Echo {
    pub fn row(&self) -> RowKind {
        match self.kind {
            EchoKind::Prompt => RowKind::Operator {
                text: self.text.clone(),
                state: match self.answered {
                    true => PromptState::Queued,
                    false => PromptState::Sending,
                },
            },
            EchoKind::Command => RowKind::Command(CommandRow {
                task_id: self.bound.clone(),
                cmd: self.text.clone(),
                operator: true,
                status: match self.answered {
                    true => CommandState::Task(TaskStatus::Queued),
                    false => CommandState::Starting,
                },
                exit: None,
                duration_ms: None,
                summary: None,
                output: None,
                stderr: None,
            }),
        }
    }
}

impl Conversation {
    pub fn echo(&mut self, request: RequestId, kind: EchoKind, text: &str) {
        self.echoes.push(Echo {
            request,
            kind,
            text: text.to_owned(),
            answered: false,
            bound: None,
        });
    }

    /// The runtime accepted the request; `bound` is its message or task id.
    pub fn echo_answered(&mut self, request: RequestId, bound: Option<String>) {
        if let Some(e) = self.echoes.iter_mut().find(|e| e.request == request) {
            e.answered = true;
            e.bound = bound;
        }
    }

    /// The request failed: the echo becomes a durable failed row.
    pub fn echo_failed(&mut self, request: RequestId, error: &str) {
        let Some(i) = self.echoes.iter().position(|e| e.request == request) else {
            return;
        };
        let echo = self.echoes.remove(i);
        let kind = match echo.kind {
            EchoKind::Prompt => RowKind::Operator {
                text: echo.text,
                state: PromptState::Failed(error.to_owned()),
            },
            EchoKind::Command => RowKind::Command(CommandRow {
                task_id: None,
                cmd: echo.text,
                operator: true,
                status: CommandState::NotStarted,
                exit: None,
                duration_ms: None,
                summary: Some(error.to_owned()),
                output: None,
                stderr: None,
            }),
        };
        self.push(kind, DisplayMode::Info);
    }

    /// The echo this durable record replaces: bound to `id`, else the
    /// oldest unbound one with the same text.
    pub(super) fn take_echo(&mut self, kind: EchoKind, id: &str, text: &str) -> bool {
        let bound = self
            .echoes
            .iter()
            .position(|e| e.kind == kind && e.bound.as_deref() == Some(id));
        let by_text = || {
            self.echoes
                .iter()
                .position(|e| e.kind == kind && e.bound.is_none() && e.text.trim() == text.trim())
        };
        match bound.or_else(by_text) {
            Some(i) => {
                self.echoes.remove(i);
                true
            }
            None => false,
        }
    }
}
