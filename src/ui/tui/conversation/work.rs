//! Commands, tool calls and the working row: a task's one row through
//! its life, a call's row (a patch as its diff, an MCP call, a command),
//! and what the running turn is doing now (its latest activity, a
//! server's progress on its call, a provider retry it waits on).

use super::super::rows::{CommandRow, CommandState, RowKind};
use super::super::tool_rows::{exec_row, exec_task_id, file_diffs, patch_files};
use super::{Conversation, EchoKind};
use crate::model::attempt::RetryNotice;
use crate::model::mcp::McpProgress;
use crate::model::task::CommandOrigin;
use crate::protocol::events as ev;
use crate::protocol::types::TaskRecord;
use crate::protocol::DisplayMode;
use crate::ui::present::OperatorEvent;

impl Conversation {
    pub(super) fn set_activity(&mut self, op: &OperatorEvent) {
        if let Some(turn) = &mut self.turn {
            turn.activity = Some(op.summary.clone());
            turn.tool = None;
            turn.retry = None;
        }
    }

    /// The running turn's provider `attempt` (the run's number) failed
    /// and the chain retries it or moves to the next model: its streamed
    /// text is not the answer, and the working row says what happens
    /// while the turn waits. Whether anything changed.
    pub fn provider_retry(
        &mut self,
        run_id: &str,
        attempt: u32,
        notice: RetryNotice,
        now_ms: i64,
    ) -> bool {
        let Some(turn) = self.turn.as_mut() else {
            return false;
        };
        if turn.run_id.as_deref() != Some(run_id) || self.stream_closed.is_late(run_id, attempt) {
            // Another turn's, or of a round already recorded.
            return false;
        }
        turn.retry = Some((notice, now_ms));
        if attempt > 0 {
            self.stream_closed.close_through(run_id, attempt);
            if self.stream.is_some() && self.stream_attempt <= attempt {
                self.reset_stream();
            }
        }
        true
    }

    /// An MCP server's progress on the call `call_id` of turn `run_id`:
    /// shown after the call's activity while that call runs. Whether the
    /// working row changed.
    pub fn tool_progress(&mut self, run_id: &str, call_id: &str, progress: &McpProgress) -> bool {
        let Some(turn) = self.turn.as_mut() else {
            return false;
        };
        let Some((call, label)) = &turn.tool else {
            return false;
        };
        if turn.run_id.as_deref() != Some(run_id) || call != call_id {
            // Late: that call (or turn) is over.
            return false;
        }
        turn.activity = Some(format!("{label} · {}", progress.line()));
        true
    }

    pub(super) fn task_created(&mut self, task: &TaskRecord, operator: bool) {
        let detail = task.command_detail();
        let cmd = detail.cmd.or(task.summary.clone()).unwrap_or_default();
        let operator = operator || detail.origin == Some(CommandOrigin::Operator);
        if operator {
            self.take_echo(EchoKind::Command, &task.id, &cmd);
        }
        let row = CommandRow {
            task_id: Some(task.id.clone()),
            cmd,
            operator,
            status: CommandState::Task(task.status),
            exit: None,
            duration_ms: None,
            summary: None,
            output: None,
            stderr: None,
        };
        // Every command is one compact row at info (command, exit,
        // duration); verbose adds the agent's command output.
        let i = self.push(RowKind::Command(row), DisplayMode::Info);
        self.tasks.insert(task.id.clone(), i);
    }

    pub(super) fn task_changed(&mut self, p: &ev::TaskStatusChanged, operator: bool) {
        let id = &p.task_id;
        if !self.tasks.contains_key(id) {
            // A task created before the history this console read.
            let cmd = p.cmd.clone().unwrap_or_default();
            if operator {
                self.take_echo(EchoKind::Command, id, &cmd);
            }
            let row = CommandRow {
                task_id: Some(id.clone()),
                cmd,
                operator,
                status: CommandState::Task(p.from),
                exit: None,
                duration_ms: None,
                summary: None,
                output: None,
                stderr: None,
            };
            let i = self.push(RowKind::Command(row), DisplayMode::Info);
            self.tasks.insert(id.clone(), i);
        }
        let Some(&i) = self.tasks.get(id) else {
            return;
        };
        if let RowKind::Command(c) = self.rows[i].kind_mut() {
            c.status = CommandState::Task(p.to);
            c.exit = p.exit_status.or(c.exit);
            c.duration_ms = p.duration_ms.or(c.duration_ms);
            c.summary = p
                .summary
                .clone()
                .filter(|s| *s != c.cmd)
                .or(c.summary.clone());
            let raw = p.output_preview.as_deref();
            let raw = raw
                .map(|o| o.trim_end().to_owned())
                .filter(|o| !o.trim().is_empty());
            c.output = raw.or(c.output.clone());
        }
    }

    pub(super) fn tool_executed(&mut self, p: &ev::ToolExecuted, op: &OperatorEvent) {
        // A gated call did not run: its approval row shows it.
        if p.facts().and_then(|f| f.status).as_deref() == Some("awaiting_approval") {
            return;
        }
        if p.tool_name == "ApplyPatch" && !p.is_error {
            let files = patch_files(p);
            if !files.is_empty() {
                let patch = super::super::tool_rows::patch_text(p);
                let diffs = patch.as_deref().map(file_diffs).unwrap_or_default();
                for (action, path, added, removed) in files {
                    let diff = diffs
                        .iter()
                        .find(|(p, _)| *p == path)
                        .map(|(_, d)| d.clone())
                        .filter(|d| !d.trim().is_empty());
                    let kind = RowKind::Patch {
                        action,
                        path,
                        added,
                        removed,
                        diff,
                    };
                    self.push(kind, DisplayMode::Info);
                }
                return;
            }
        }
        // An MCP call is a row of its own, like a command's.
        if crate::model::mcp::is_mcp_tool(&p.tool_name) {
            self.push(RowKind::Event(op.clone()), DisplayMode::Info);
            return;
        }
        if p.tool_name == "ExecCommand" {
            let task = exec_task_id(p);
            if task.as_ref().is_some_and(|t| self.tasks.contains_key(t)) {
                return; // the task's command row already shows it
            }
            if let Some(row) = exec_row(p, task) {
                self.push(RowKind::Command(row), DisplayMode::Info);
                return;
            }
        }
        self.generic(op);
    }
}
