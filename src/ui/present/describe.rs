//! The wording of each event kind: what `present` puts in an operator
//! event's summary, title and body, read from the typed payload (an
//! optional field missing is sensible text, never a panic).

use serde_json::Value;

use super::describe_turns::*;
use super::describe_waits::*;
use super::words::*;
use super::{Category, OperatorEvent, Visibility};
use crate::protocol::events::{self as ev, Event};
use crate::protocol::types::MessageBody;
use crate::protocol::EventRecord;

/// The summary of each kind; sets the body and refines the class where the
/// payload decides them. A table by design: one arm per kind, exhaustive,
/// a kind worded at more length by a function of its own.
pub(super) fn describe(event: &Event, e: &EventRecord, out: &mut OperatorEvent) -> String {
    let msg = message_id(event, e).map_or("A message".to_owned(), |m| format!("Message {m}"));
    match event {
        Event::AgentCreated(p) => format!("Agent {} created", nonblank(&p.agent.id).unwrap_or(&e.agent_id)),
        Event::AgentArchived(p) => agent_archived(p, e),
        Event::SkillActivated(p) => skill_activated(p),
        Event::AgentStateChanged(p) => {
            let head = format!("Agent state {} -> {}", p.from.as_str(), p.to.as_str());
            paren(head, Some(p.cause.as_str()))
        }
        Event::ControlApplied(p) => control_applied(p),
        Event::BudgetExceeded(p) => budget_exceeded(p),
        Event::AgentBudgetChanged(p) => {
            let words = |b| super::usage::budget_words(b).unwrap_or_else(|| "the runtime's".into());
            format!("Budget set: {} (was {})", words(&p.to), words(&p.from))
        }
        Event::MessageAdmitted(p) => message_admitted(p, out),
        Event::MessageRejected(p) => message_rejected(p, out),
        Event::MessageProcessingStarted(p) => {
            let what = format!("message {}", p.message_id);
            let head = paren(format!("Processing {what}"), Some(words(&wire_name(&p.kind))));
            let replay = p.replay.then_some(", replayed after a restart");
            head + replay.unwrap_or_default()
        }
        Event::MessageProcessed(p) if p.detail.reduced_without_turn == Some(true) => {
            format!("{msg} settled without a turn")
        }
        Event::MessageProcessed(p) => {
            let turn = p.detail.turn_terminal.map(|t| format!("turn {}", words(t.as_str())));
            paren(format!("{msg} processed"), turn)
        }
        Event::MessageAborted(_) => format!("{msg} aborted"),
        Event::MessageDropped(p) => colon(format!("{msg} dropped"), p.detail.reason.as_deref()),
        Event::MessageInterjected(_) => format!("{msg} joined the running turn"),
        Event::SchedulerDecision(p) => scheduler_decision(p, out),
        Event::SystemTickEmitted(p) => {
            let head = paren("System tick", Some(words(&wire_name(&p.reason))));
            for_work_item(head, p.work_item_id.as_deref())
        }
        Event::TurnStarted(p) => {
            let head = format!("Turn started for message {}", p.message_id);
            paren(head, Some(words(&wire_name(&p.trigger_kind))))
        }
        Event::TurnContextBuilt(p) => format!(
            "Context built: ~{} tokens (~{} cacheable), {} blocks, {}",
            p.prompt_tokens_estimate,
            p.cacheable_tokens_estimate,
            p.sections.len(),
            duration(p.context_build_ms)
        ),
        Event::ProviderRoundCompleted(p) => provider_round(p),
        Event::AssistantRoundRecorded(p) => assistant_round(p, out),
        Event::ToolStarted(p) => match crate::model::mcp::split_tool_name(&p.tool_name) {
            Some((server, tool)) => format!("{server} · {tool} started"),
            None => format!("{} started", p.tool_name),
        },
        Event::ToolExecuted(p) => tool_executed(p, out),
        Event::WorkspaceAttached(p) => format!("Workspace attached: {}", p.anchor),
        Event::WorkspaceDetached(p) => format!(
            "Workspace detached: {} (nothing on disk was removed)",
            p.workspace_id
        ),
        Event::WorkspaceUsed(p) => workspace_used(p),
        Event::WorkspaceMissing(p) => format!(
            "Execution root {} is gone; back in the agent home (nothing recorded was lost)",
            p.execution_root
        ),
        Event::WorktreeCreated(p) => format!(
            "Worktree created: {} on branch {}",
            p.worktree_path, p.worktree_branch
        ),
        Event::WorktreeRemoved(p) => format!(
            "Clean worktree removed: {} (branch {} deleted)",
            p.worktree_path, p.worktree_branch
        ),
        Event::WorktreeRetained(p) => format!(
            "Worktree kept for review: {} on branch {} ({} uncommitted file(s), {} commit(s) ahead)",
            p.worktree_path, p.worktree_branch, p.uncommitted_files, p.commits_ahead
        ),
        Event::ContextCompactionStarted(p) => compaction_started(p),
        Event::ContextCompacted(p) => context_compacted(p),
        Event::TurnCheckpoint(p) => turn_checkpoint(p),
        Event::TurnAwaitingApproval(p) => awaiting_approval(p),
        Event::TurnTerminal(p) => turn_terminal(p),
        Event::BriefCreated(p) => brief_created(p, out),
        Event::WorkItemCreated(p) => {
            let by = (p.source == crate::protocol::types::WorkItemSource::Operator)
                .then_some("by the operator");
            paren(format!("Work item created: {}", objective(&p.work_item)), by)
        }
        Event::WorkItemPicked(p) => {
            let what = nonblank(&p.objective).unwrap_or(&p.work_item_id);
            format!("Working on: {}", preview(what))
        }
        Event::WorkItemUpdated(p) => work_item_updated(p, out),
        Event::WorkItemCompleted(p) => {
            out.body = body(p.work_item.result_summary.as_deref());
            format!("Work item completed: {}", objective(&p.work_item))
        }
        Event::WorkItemRecheckDue(p) => {
            let blocker = p.blocked_by.as_deref().and_then(nonblank);
            let blocker = blocker.map(|b| format!("blocked by {}", preview(b)));
            paren(format!("Recheck due for {}", p.work_item_id), blocker)
        }
        Event::TaskCreated(p) => {
            let cmd = p.task.command_detail().cmd;
            let what = cmd.as_deref().or(p.task.summary.as_deref().and_then(nonblank));
            colon(format!("Task {} queued", p.task.id), what.map(preview))
        }
        Event::TaskStatusChanged(p) => task_status_changed(p, out),
        Event::TaskOutput(p) => {
            out.body = body(p.preview.as_deref());
            let id = p.task_id.as_deref().unwrap_or("task");
            let head = format!("Task {id} produced output");
            paren(head, p.bytes.map(|b| format!("{b} bytes")))
        }
        Event::TaskResultQueued(p) => {
            let head = format!("Task {} result queued for the agent", p.task_id);
            paren(head, Some(&p.message_id))
        }
        Event::TaskReattached(p) => {
            let head = format!("Task {} still runs after the restart; supervised again", p.task_id);
            let pid = format!("holder pid {}", p.pid);
            paren(head, Some(&pid))
        }
        Event::WaitingIntentCreated(p) => wait_created(p),
        Event::WaitingIntentTriggered(p) => colon("Wait resolved", waited_for(p)),
        Event::WaitingIntentCancelled(p) => wait_cancelled(p),
        Event::TimerCreated(p) => {
            let head = format!("Timer set for {}", duration(p.delay_ms));
            colon(head, timer_reason(&p.timer))
        }
        Event::TimerFired(p) => colon("Timer fired", timer_reason(&p.timer)),
        Event::TimerCancelled(p) => colon("Timer cancelled", timer_reason(&p.timer)),
        Event::WakeHintSubmitted(p) => wake_hint_submitted(p, e),
        Event::WakeHintCoalesced(p) => colon(
            "Wake hint merged into the pending one",
            nonblank(&p.reason).map(preview),
        ),
        Event::WakeHintIgnored(p) => {
            let why = nonblank(&p.note).unwrap_or("the agent is stopped");
            format!("Wake hint ignored: {why}")
        }
        Event::ExternalTriggerProvisioned(p) => {
            format!("Trigger URL issued ({})", p.trigger.external_trigger_id)
        }
        Event::ExternalTriggerRotated(p) => trigger_rotated(p),
        Event::ExternalTriggerRevoked(p) => format!(
            "Trigger URL revoked ({}); `holon trigger rotate` issues a new one",
            p.trigger.external_trigger_id
        ),
        Event::ExternalTriggerDelivered(p) => trigger_delivered(p),
        Event::ApprovalRequested(p) => approval_requested(p, out),
        Event::ApprovalReviewed(p) => approval_reviewed(p, out),
        Event::ApprovalGranted(p) => approval_granted(p),
        Event::ApprovalDenied(p) => approval_denied(p),
        Event::WorkspacePolicyChanged(p) => policy_changed(p),
        Event::DefaultPolicyChanged(p) => default_policy_changed(p),
        Event::McpServerApproved(p) => format!(
            "MCP server `{}` of {} approved to run `{}`",
            p.name, p.workspace, p.command_line
        ),
        Event::McpServerReviewed(p) => format!(
            "MCP server `{}` of {} (`{}`): {}",
            p.name,
            p.workspace,
            p.command_line,
            super::mcp::review_words(&p.review, "awaiting_approval")
        ),
        Event::ProposalApproved(p) => proposal_approved(p),
        Event::McpServerSwitched(p) => format!(
            "MCP server `{}`{} {} by the operator",
            p.name,
            super::mcp::of_workspace(p.workspace.as_deref()),
            if p.disabled { "disabled" } else { "enabled" }
        ),
        Event::McpServerStarted(p) => super::mcp::started(p),
        Event::McpServerFailed(p) => super::mcp::failed(p),
        Event::McpServerStopped(p) => super::mcp::stopped(p),
        Event::StorePruned(p) => store_pruned(p),
        Event::HistoryLost(p) => history_lost(p),
        Event::RuntimeStarted(p) => runtime_started(p),
        Event::RuntimeStopped(p) => colon("Runtime stopped", p.reason.as_deref().map(preview)),
        Event::RuntimeError(p) => runtime_error(p, out),
        Event::HookRan(p) => hook_ran(p, out),
        Event::ConfigReloaded(p) => config_reloaded(p),
        Event::DisplayModeChanged(p) => colon("Display mode changed", Some(p.to.as_str())),
        Event::ModelOverrideChanged(p) => match &p.to {
            None => "Model override cleared".to_owned(),
            Some(to) => colon("Model override set", Some(to)),
        },
        Event::Unknown { .. } => unknown(e, out),
        Event::Unreadable { kind, error } => {
            (out.visibility, out.category) = (Visibility::Trace, Category::Trace);
            out.title = "Event".to_owned();
            out.body = raw_body(e).map(|raw| format!("{error}\n{raw}"));
            format!("Unreadable `{kind}` event (a different Holon version wrote it?)")
        }
    }
}

/// Who or what archived the agent.
fn agent_archived(p: &ev::AgentArchived, e: &EventRecord) -> String {
    paren(
        format!("Agent {} archived", e.agent_id),
        Some(match p.reason.as_str() {
            "operator" => "by the operator",
            "supervision_completed" => "its supervising task ended",
            "supervision_missing" => "its supervising task is gone",
            "parent_archived" => "its parent was archived",
            "run_finished" => "its run finished",
            other => other,
        }),
    )
}

/// A skill the agent read, ran or was given.
fn skill_activated(p: &ev::SkillActivated) -> String {
    format!(
        "Skill {} ({}) activated: {} {}",
        p.name,
        p.scope.as_str(),
        match p.load_reason {
            crate::protocol::types::LoadReason::ReadSkillMd => "read",
            crate::protocol::types::LoadReason::RunSkillScript => "ran",
            crate::protocol::types::LoadReason::PromptInjection => "injected",
        },
        p.path
    )
}

/// An operator's control action, with its note.
fn control_applied(p: &ev::ControlApplied) -> String {
    use crate::protocol::ControlAction as A;
    let head = match p.action {
        A::Pause => "Paused",
        A::Resume => "Resume",
        A::Stop => "Stopped",
        A::Wake => "Wake requested",
        A::Abort => "Abort of the running turn requested",
    };
    colon(head, Some(&p.note))
}

/// The daily budget reached: what was spent of it, and when the agent resumes.
fn budget_exceeded(p: &ev::BudgetExceeded) -> String {
    use crate::model::agent::BudgetLimit;
    let what = match (p.limit, p.budget_usd, p.budget_tokens) {
        (BudgetLimit::Usd, Some(b), _) => format!("${:.2} of ${b:.2}", p.spent_usd),
        (BudgetLimit::Tokens, _, Some(b)) => format!("{} of {b} tokens", p.tokens),
        _ => format!("${:.2}, {} tokens", p.spent_usd, p.tokens),
    };
    format!(
        "Paused: daily budget reached ({what} on {}); resumes {} or on /resume",
        p.day, p.resumes_at
    )
}

/// Where the agent works now, and why.
fn workspace_used(p: &ev::WorkspaceUsed) -> String {
    use crate::protocol::types::WorkspaceMode;
    let x = &p.execution;
    let head = match (x.workspace_id.as_str(), x.mode) {
        (crate::protocol::types::AGENT_HOME_ID, _) => "Working in the agent home".to_owned(),
        (_, WorkspaceMode::Isolated) => {
            format!("Working in an isolated worktree: {}", x.execution_root)
        }
        (_, WorkspaceMode::Direct) => format!("Working in {}", x.execution_root),
    };
    paren(head, p.reason.as_deref().map(words))
}

/// A workspace's proposal approved as written, or no longer.
fn proposal_approved(p: &crate::model::proposal::ProposalApproval) -> String {
    format!(
        "{} proposed by {} {} (sha256 {})",
        match p.kind {
            crate::model::proposal::ProposalKind::Policy => "Reviewer policy",
            crate::model::proposal::ProposalKind::Hooks => "Hooks",
        },
        p.workspace,
        match p.approved {
            true => "approved as written",
            false => "no longer approved",
        },
        p.digest.get(..12).unwrap_or(&p.digest)
    )
}

/// The runtime's start, and what it replays.
fn runtime_started(p: &ev::RuntimeStarted) -> String {
    match (p.turn_was_in_progress, p.replay_message_ids.len()) {
        (true, _) => "Runtime started; the interrupted turn will be replayed".to_owned(),
        (false, 0) => "Runtime started".to_owned(),
        (false, 1) => "Runtime started; 1 message to replay".to_owned(),
        (false, n) => format!("Runtime started; {n} messages to replay"),
    }
}

/// A configuration reload and what it changed, or why the file was not
/// taken.
fn config_reloaded(p: &ev::ConfigReloaded) -> String {
    if let ev::ConfigReloaded::ConfigFile {
        applied: false,
        error,
        ..
    } = p
    {
        return colon(
            "Configuration not reloaded, the previous one stays in effect".to_owned(),
            error.as_deref(),
        );
    }
    let changed = match p {
        ev::ConfigReloaded::AgentsMd { changed, .. }
        | ev::ConfigReloaded::ConfigFile { changed, .. } => changed,
    };
    let changed = joined(changed.iter().map(|c| nonblank(c).map(str::to_owned)), ", ");
    paren(
        "Configuration reloaded",
        changed.map(|c| format!("changed: {c}")),
    )
}

/// The payload as one line of JSON, for events that are shown raw.
fn raw_body(e: &EventRecord) -> Option<String> {
    match &e.payload {
        Value::Object(m) if m.is_empty() => None,
        Value::Null => None,
        other => Some(one_line(&other.to_string(), 400)),
    }
}

/// A kind from a newer Holon: its name, and the raw payload as the body.
pub(super) fn unknown(e: &EventRecord, out: &mut OperatorEvent) -> String {
    out.body = raw_body(e);
    let kind = Some(e.kind.trim()).filter(|k| !k.is_empty());
    let kind = kind.unwrap_or("(empty kind)");
    format!("Unrecognised event `{kind}` (recorded by a newer Holon?)")
}

/// Failure briefs are always turn_result and say the turn failed; other
/// briefs take the payload's visibility, never below turn_result.
pub(super) fn brief_created(p: &ev::BriefCreated, out: &mut OperatorEvent) -> String {
    use ev::{BriefKind, BriefVisibility};
    let b = &p.brief;
    let full = nonblank(&b.text);
    if b.kind == BriefKind::Failure {
        let cause = b
            .failure_artifact
            .as_ref()
            .and_then(|a| nonblank(&a.summary));
        let detail = b.failure_artifact.as_ref().and_then(failure_detail);
        out.body = joined([full.or(cause).map(str::to_owned), detail], "\n");
        out.title = "Turn failed".to_owned();
        return match (cause, full) {
            (Some(c), _) => format!("Turn failed: {}", preview(c)),
            (None, Some(t)) => preview(t),
            (None, None) => "Turn failed".to_owned(),
        };
    }
    let (visibility, title) = match (p.visibility, b.kind) {
        (BriefVisibility::ActionRequired, _) => (Visibility::ActionRequired, "Needs your input"),
        (BriefVisibility::WorkDone, _) => (Visibility::WorkDone, "Work done"),
        (BriefVisibility::TurnResult, BriefKind::Ack) => (Visibility::TurnResult, "Acknowledged"),
        (BriefVisibility::TurnResult, BriefKind::Result | BriefKind::Failure) => {
            (Visibility::TurnResult, "Result")
        }
    };
    let attached = attachments_text(&b.attachments);
    (out.visibility, out.title, out.body) = (
        visibility,
        title.to_owned(),
        joined([body(full), attached], "\n\n"),
    );
    let headline = full.map_or("(no reply text)".to_owned(), headline);
    match b.attachments.len() {
        0 => format!("{title}: {headline}"),
        n => format!("{title}: {headline} [{n} attached]"),
    }
}

/// A brief's attachments, a line each with where Holon keeps it.
pub fn attachments_text(list: &[ev::BriefAttachment]) -> Option<String> {
    if list.is_empty() {
        return None;
    }
    let lines: Vec<String> = list
        .iter()
        .map(|a| match &a.uri {
            Some(uri) => format!("- attached {} → {}", printable(&a.line()), printable(uri)),
            None => format!("- attached {}", printable(&a.line())),
        })
        .collect();
    Some(lines.join("\n"))
}

pub(super) fn runtime_error(p: &ev::RuntimeErrorRecorded, out: &mut OperatorEvent) -> String {
    let summary = nonblank(&p.failure_artifact.summary);
    let detail = failure_detail(&p.failure_artifact);
    out.body = joined([summary.map(str::to_owned), detail], "\n");
    match summary {
        Some(s) => format!("Runtime error: {}", preview(s)),
        None => format!("Runtime error: {}", words(&wire_name(&p.failure_kind))),
    }
}

/// A refusal is progress (the call's own row says it too); a hook's first
/// failure in a row is a result the operator should see, later ones in the
/// same row are trace; runs that went well are trace.
pub(super) fn hook_ran(p: &ev::HookRan, out: &mut OperatorEvent) -> String {
    let name = match &p.tool {
        Some(tool) => format!("Hook `{}` ({}, {tool})", p.hook, p.event),
        None => format!("Hook `{}` ({})", p.hook, p.event),
    };
    match p.outcome {
        ev::HookOutcome::Denied => {
            out.visibility = Visibility::Progress;
            out.body = p.reason.clone();
            colon(
                format!("{name} refused the call"),
                p.reason.as_deref().map(preview),
            )
        }
        ev::HookOutcome::Failed => {
            let refused = match p.refused {
                true => "; the call was refused (on_error = deny)",
                false => "",
            };
            out.body = joined(
                [
                    p.error.clone(),
                    Some(format!(
                        "`holon hooks test {}` runs it on a sample input; later failures in a \
                         row are in /events",
                        p.event
                    )),
                ],
                "\n",
            );
            if p.failures <= 1 {
                (out.visibility, out.category) =
                    (Visibility::TurnResult, Category::OperatorNotification);
                format!(
                    "{name} failed{refused}: {}",
                    preview(p.error.as_deref().unwrap_or(""))
                )
            } else {
                format!("{name} failed again ({} in a row){refused}", p.failures)
            }
        }
        ev::HookOutcome::Allowed => format!("{name} allowed the call in {} ms", p.duration_ms),
        ev::HookOutcome::Done => format!("{name} ran in {} ms", p.duration_ms),
    }
}

/// The text of a message body (`text`, `brief` or `json`).
pub(super) fn message_text(body: &MessageBody) -> Option<String> {
    match body {
        MessageBody::Json { value } => Some(value.to_string()),
        MessageBody::Text { text } | MessageBody::Brief { text, .. } => {
            nonblank(text).map(str::to_owned)
        }
    }
}

/// The message an event is about, from the payload or the provenance.
pub(super) fn message_id<'a>(typed: &'a Event, e: &'a EventRecord) -> Option<&'a str> {
    typed
        .message_id()
        .and_then(nonblank)
        .or(e.provenance.message_id.as_deref())
}

pub(super) fn objective(w: &crate::protocol::types::WorkItemRecord) -> String {
    let o = nonblank(&w.objective).unwrap_or(&w.id);
    preview(o)
}

pub(super) fn for_work_item(head: String, work_item_id: Option<&str>) -> String {
    match work_item_id {
        Some(w) => format!("{head} for work item {w}"),
        None => head,
    }
}
