//! The wording of each event kind: what `present` puts in an operator
//! event's summary, title and body, read from the typed payload (an
//! optional field missing is sensible text, never a panic).

use serde_json::Value;

use super::describe_waits::*;
use super::words::*;
use super::{Category, OperatorEvent, Visibility};
use crate::protocol::events::{self as ev, Event};
use crate::protocol::types::FailureArtifact;
use crate::protocol::types::SchedulerDecisionKind as D;
use crate::protocol::types::TaskStatus;
use crate::protocol::types::{MessageBody, MessageKind, MessageOrigin};
use crate::protocol::EventRecord;

/// The summary of each kind; sets the body and refines the class where the
/// payload decides them.
pub(super) fn describe(event: &Event, e: &EventRecord, out: &mut OperatorEvent) -> String {
    let msg = message_id(event, e).map_or("A message".to_owned(), |m| format!("Message {m}"));
    match event {
        Event::AgentCreated(p) => format!("Agent {} created", nonblank(&p.agent.id).unwrap_or(&e.agent_id)),
        Event::AgentArchived(p) => paren(
            format!("Agent {} archived", e.agent_id),
            Some(match p.reason.as_str() {
                "operator" => "by the operator",
                "supervision_completed" => "its supervising task ended",
                "supervision_missing" => "its supervising task is gone",
                "parent_archived" => "its parent was archived",
                "run_finished" => "its run finished",
                other => other,
            }),
        ),
        Event::SkillActivated(p) => format!(
            "Skill {} ({}) activated: {} {}",
            p.name,
            p.scope.as_str(),
            match p.load_reason {
                crate::protocol::types::LoadReason::ReadSkillMd => "read",
                crate::protocol::types::LoadReason::RunSkillScript => "ran",
                crate::protocol::types::LoadReason::PromptInjection => "injected",
            },
            p.path
        ),
        Event::AgentStateChanged(p) => {
            let head = format!("Agent state {} -> {}", p.from.as_str(), p.to.as_str());
            paren(head, Some(p.cause.as_str()))
        }
        Event::ControlApplied(p) => {
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
        Event::BudgetExceeded(p) => {
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
        Event::ProviderRoundCompleted(p) => {
            let u = p.token_usage;
            let parts = [
                nonblank(&p.model_ref).map(str::to_owned),
                Some(format!("{} in / {} out tokens", u.input_tokens, u.output_tokens)),
                Some(duration(p.provider_round_ms)),
                p.stop_reason.as_deref().and_then(nonblank).map(|s| format!("stop: {s}")),
                (p.tools_sent > 0).then(|| match p.tools_deferred {
                    0 => format!("{} tools (~{} tokens)", p.tools_sent, p.tool_tokens),
                    d => format!(
                        "{} tools (~{} tokens; {d} more behind ToolSearch, ~{} tokens not sent)",
                        p.tools_sent, p.tool_tokens, p.deferred_tool_tokens
                    ),
                }),
            ];
            let head = format!("Provider round {}", p.round);
            colon(head, joined(parts, ", "))
        }
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
        Event::WorkspaceUsed(p) => {
            use crate::protocol::types::WorkspaceMode;
            let x = &p.execution;
            let head = match (x.workspace_id.as_str(), x.mode) {
                (crate::protocol::types::AGENT_HOME_ID, _) => {
                    "Working in the agent home".to_owned()
                }
                (_, WorkspaceMode::Isolated) => {
                    format!("Working in an isolated worktree: {}", x.execution_root)
                }
                (_, WorkspaceMode::Direct) => format!("Working in {}", x.execution_root),
            };
            paren(head, p.reason.as_deref().map(words))
        }
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
        Event::ContextCompactionStarted(p) => {
            let turns = p.folding_turns;
            format!(
                "Compacting context: folding {turns} turn{} ({} tokens) into the summary",
                if turns == 1 { "" } else { "s" },
                compact_count(p.tokens_before)
            )
        }
        Event::ContextCompacted(p) => {
            let turns = p.compacted_turns;
            let tokens = compact_count(p.summary_tokens);
            let how = match p.summary_source {
                crate::protocol::types::SummarySource::Model => "",
                crate::protocol::types::SummarySource::Extractive => " (extractive)",
            };
            // How long it took, once that is worth saying.
            let took = match p.duration_ms as u64 {
                ms @ 1_000.. => format!(" in {}", duration(ms)),
                _ => String::new(),
            };
            format!(
                "Context compacted: {turns} turn{} → {tokens}-token summary{how}{took}",
                if turns == 1 { "" } else { "s" }
            )
        }
        Event::TurnCheckpoint(p) => {
            let rounds = p.recapped_rounds.len();
            let head = format!("Turn checkpoint: {rounds} earlier round(s) recapped");
            match &p.invalidated_anchor {
                Some(a) => format!("{head}; work item moved on from revision {}", a.revision),
                None => head,
            }
        }
        Event::TurnAwaitingApproval(p) => {
            let what = match p.approval_ids.as_slice() {
                [one] => format!("approval {one}"),
                many => format!("{} approvals", many.len()),
            };
            format!(
                "The turn waits up to {} for the answer to {what}, to go on with it",
                super::words::duration(p.wait_ms)
            )
        }
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
        Event::ProposalApproved(p) => format!(
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
        ),
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
        Event::RuntimeStarted(p) => {
            match (p.turn_was_in_progress, p.replay_message_ids.len()) {
                (true, _) => "Runtime started; the interrupted turn will be replayed".to_owned(),
                (false, 0) => "Runtime started".to_owned(),
                (false, 1) => "Runtime started; 1 message to replay".to_owned(),
                (false, n) => format!("Runtime started; {n} messages to replay"),
            }
        }
        Event::RuntimeStopped(p) => colon("Runtime stopped", p.reason.as_deref().map(preview)),
        Event::RuntimeError(p) => runtime_error(p, out),
        Event::HookRan(p) => hook_ran(p, out),
        Event::ConfigReloaded(p) => {
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

/// An admitted operator prompt is the operator's own message; other inputs
/// are classed by what they come from and name their source.
pub(super) fn message_admitted(p: &ev::MessageAdmitted, out: &mut OperatorEvent) -> String {
    use Category as C;
    use MessageKind as K;
    use Visibility as V;
    let m = &p.message;
    let (visibility, category, title) = match m.kind {
        K::OperatorPrompt => (V::Progress, C::Message, "Operator"),
        K::ChannelEvent => (V::Progress, C::OperatorNotification, "Channel message"),
        K::WebhookEvent => (V::Progress, C::OperatorNotification, "Webhook"),
        K::CallbackEvent => (V::Progress, C::OperatorNotification, "Callback"),
        K::TimerTick => (V::Trace, C::Waiting, "Timer tick"),
        K::TaskResult | K::TaskStatus => (V::Trace, C::Task, "Task result"),
        K::SystemTick => (V::Trace, C::Runtime, "System tick"),
        K::Control | K::BriefAck | K::BriefResult | K::InternalFollowup => {
            (V::Trace, C::Runtime, "Runtime input")
        }
    };
    (out.visibility, out.category) = (visibility, category);
    out.title = title.to_owned();
    let origin = match &m.origin {
        MessageOrigin::Channel { channel_id, .. } => Some(channel_id.as_str()),
        MessageOrigin::Webhook { source, .. } => Some(source.as_str()),
        MessageOrigin::Callback { descriptor_id, .. } => Some(descriptor_id.as_str()),
        MessageOrigin::Operator { .. }
        | MessageOrigin::Timer { .. }
        | MessageOrigin::System { .. }
        | MessageOrigin::Task { .. } => None,
    };
    let from = origin
        .and_then(nonblank)
        .or(m.task_id.as_deref().and_then(nonblank));
    let from = from.map_or(String::new(), |f| format!(" from {f}"));
    let full = message_text(&m.body);
    out.body = body(full.as_deref());
    let quote = full
        .as_deref()
        .and_then(nonblank)
        .map_or("(empty)".to_owned(), preview);
    format!("{title}{from}: {quote}")
}

/// A refused operator prompt is a turn result; a refused runtime input (a
/// task result while stopped) is progress.
pub(super) fn message_rejected(p: &ev::MessageRejected, out: &mut OperatorEvent) -> String {
    out.body = body(Some(&p.body_preview));
    let why = nonblank(&p.hint)
        .map(str::to_owned)
        .or(nonblank(&p.reason).map(words));
    match p.kind {
        MessageKind::OperatorPrompt => colon("Prompt refused", why),
        kind => {
            (out.visibility, out.title) = (Visibility::Progress, "Message refused".into());
            colon(format!("Refused {}", words(&wire_name(&kind))), why)
        }
    }
}

pub(super) fn scheduler_decision(p: &ev::SchedulerDecisionMade, out: &mut OperatorEvent) -> String {
    let d = &p.decision;
    out.body = joined(
        d.evidence.iter().map(|e| nonblank(e).map(str::to_owned)),
        "\n",
    );
    let reason = Some(words(d.reason.as_str()));
    let (msg, task) = (d.message_id.as_deref(), d.task_id.as_deref());
    match d.kind {
        D::StartModelTurn => match msg {
            Some(m) => format!("Start turn for message {m}"),
            None => "Start a model turn".to_owned(),
        },
        D::ReduceMessageOnly => match msg {
            Some(m) => format!("Settle message {m} without a turn"),
            None => "Settle a message without a turn".to_owned(),
        },
        D::EmitSystemTick => {
            let head = paren("Emit system tick", reason);
            for_work_item(head, d.work_item_id.as_deref())
        }
        D::WaitForTask => match task {
            Some(t) => format!("Wait for task {t}"),
            None => "Wait for running tasks".to_owned(),
        },
        D::WaitForExternalChange => "Wait for an external change".to_owned(),
        D::WaitForTimer => "Wait for a timer".to_owned(),
        D::WaitForOperator => "Wait for operator input".to_owned(),
        D::Sleep => colon("Sleep", reason),
        D::StayIdle => colon("Stay idle", reason),
        D::Stop => colon("Hold", reason),
        D::Noop => colon("No action", reason),
    }
}

/// Spec wording: the text preview first, else the requested tools, else a
/// concise round line.
pub(super) fn assistant_round(p: &ev::AssistantRoundRecorded, out: &mut OperatorEvent) -> String {
    let names: Vec<String> = p
        .tool_names
        .iter()
        .filter(|n| nonblank(n).is_some())
        .cloned()
        .collect();
    let tools = tool_list(&names);
    match (nonblank(&p.text_preview), tools.is_empty()) {
        (Some(t), _) => {
            let requested = Some(tools.clone()).filter(|t| !t.is_empty());
            let requested = requested.map(|r| format!("Requested tools: {r}"));
            out.body = joined([Some(t.to_owned()), requested], "\n\n");
            format!("Assistant progress: {}", preview(t))
        }
        (None, false) => format!("Model requested tools: {tools}"),
        (None, true) => format!("Model round {} with no text or tool calls", p.round),
    }
}

pub(super) fn tool_executed(p: &ev::ToolExecuted, out: &mut OperatorEvent) -> String {
    let name = nonblank(&p.tool_name).unwrap_or("Tool");
    if let Some((server, tool)) = crate::model::mcp::split_tool_name(name) {
        return super::mcp::executed(p, server, tool, out);
    }
    out.title = name.to_owned();
    out.body = body(Some(&p.result_preview));
    let head = match p.is_error {
        true => format!("{name} failed"),
        false => name.to_owned(),
    };
    let hint = tool_hint(name, &p.arguments);
    paren(colon(head, hint), Some(duration(p.duration_ms)))
}

/// A compact argument hint: ExecCommand's command, the task or work item a
/// tool targets, Sleep's duration, else the first short string argument.
pub(super) fn tool_hint(name: &str, args: &Value) -> Option<String> {
    const KEYS: [&str; 6] = [
        "cmd",
        "path",
        "task_id",
        "work_item_id",
        "objective",
        "query",
    ];
    if name == "Sleep" {
        #[derive(serde::Deserialize)]
        struct SleepArgs {
            duration_ms: Option<u64>,
        }
        let args = <SleepArgs as serde::Deserialize>::deserialize(args);
        let ms = args.ok().and_then(|a| a.duration_ms);
        return Some(ms.map_or("until woken".into(), |ms| format!("for {}", duration(ms))));
    }
    let hint = |v: &Value| {
        v.as_str()
            .filter(|s| !s.trim().is_empty())
            .map(|s| one_line(s, 80))
    };
    if name == "ExecCommandBatch" {
        let cmds: Vec<&str> = args["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["cmd"].as_str())
            .collect();
        let n = cmds.len();
        let head = format!("{n} command{}", if n == 1 { "" } else { "s" });
        return Some(one_line(&format!("{head}: {}", cmds.join(" · ")), 80));
    }
    let Some(obj) = args.as_object() else {
        return hint(args);
    };
    let known = KEYS.iter().find_map(|k| obj.get(*k).and_then(hint));
    known.or_else(|| obj.values().find_map(hint))
}

fn turn_terminal(p: &ev::TurnTerminal) -> String {
    use crate::protocol::types::TurnTerminalKind as T;
    let rounds = match p.rounds {
        1 => "1 round".to_owned(),
        n => format!("{n} rounds"),
    };
    let (i, o) = (p.token_usage.input_tokens, p.token_usage.output_tokens);
    let tokens =
        (i + o > 0).then(|| format!("{} in / {} out tokens", compact_count(i), compact_count(o)));
    let cost = p.cost_usd.filter(|c| *c > 0.0).map(|c| format!("${c:.4}"));
    let detail = joined(
        [Some(duration(p.duration_ms)), Some(rounds), tokens, cost],
        ", ",
    );
    let head = match p.kind {
        T::Completed => "Turn completed",
        T::Aborted => "Turn ended early",
        T::BaselineOverBudget => "Turn stopped: prompt over context budget",
    };
    paren(head, detail)
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

/// `kind · provider · model · task · HTTP status · exit` of a failure artifact.
pub(super) fn failure_detail(a: &FailureArtifact) -> Option<String> {
    let named = [
        Some(a.kind.as_str()),
        a.provider.as_deref(),
        a.model_ref.as_deref(),
        a.task_id.as_deref(),
    ];
    let named = named.map(|n| n.and_then(nonblank).map(str::to_owned));
    let status = a.status.map(|s| format!("HTTP {s}"));
    let numbers = [status, a.exit_status.map(|c| format!("exit {c}"))];
    joined(named.into_iter().chain(numbers), " · ")
}

/// A blocker set or cleared is progress; other updates are trace.
pub(super) fn work_item_updated(p: &ev::WorkItemUpdated, out: &mut OperatorEvent) -> String {
    let what = objective(&p.work_item);
    if !p.changed.iter().any(|c| c == "blocked_by") {
        let fields = Some(words(&p.changed.join(", ")));
        return format!("{}: {what}", paren("Work item updated", fields));
    }
    out.visibility = Visibility::Progress;
    match p.work_item.blocked_by.as_deref().and_then(nonblank) {
        Some(b) => format!("Work item blocked by {}: {what}", one_line(b, 60)),
        None => format!("Work item unblocked: {what}"),
    }
}

/// Terminal statuses are progress with exit status (or the runtime's
/// summary, e.g. a signal) and duration; others are trace.
pub(super) fn task_status_changed(p: &ev::TaskStatusChanged, out: &mut OperatorEvent) -> String {
    let id = &p.task_id;
    let cmd = p.cmd.as_deref().and_then(nonblank);
    let head = match p.to {
        TaskStatus::Running => format!("Task {id} running"),
        TaskStatus::Cancelling => format!("Task {id} stopping"),
        status => format!("Task {id} {}", words(&wire_name(&status))),
    };
    let head = colon(head, cmd.map(|c| one_line(c, 80)));
    if !p.to.is_terminal() {
        return head;
    }
    out.visibility = Visibility::Progress;
    out.body = body(p.output_preview.as_deref());
    let summary = p
        .summary
        .as_deref()
        .and_then(nonblank)
        .filter(|s| Some(*s) != cmd);
    let outcome = match p.exit_status {
        Some(code) => Some(format!("exit {code}")),
        None => summary.map(|s| one_line(s, 60)),
    };
    let took = p.duration_ms.map(duration);
    paren(head, joined([outcome, took], ", "))
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
