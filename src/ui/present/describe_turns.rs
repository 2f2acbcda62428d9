//! The wording of the turn plane's events: messages admitted, refused
//! and decided on, the provider's rounds and the model's, tools, context
//! compaction and checkpoints, how a turn ended, and the work items and
//! tasks it changed.

use serde_json::Value;

use super::describe::{for_work_item, message_text, objective};
use super::words::*;
use super::{Category, OperatorEvent, Visibility};
use crate::protocol::events as ev;
use crate::protocol::types::SchedulerDecisionKind as D;
use crate::protocol::types::{FailureArtifact, MessageKind, MessageOrigin, TaskStatus};

/// A provider round: model, tokens, time, stop reason and the tools sent.
pub(super) fn provider_round(p: &ev::ProviderRoundCompleted) -> String {
    let u = p.token_usage;
    let parts = [
        nonblank(&p.model_ref).map(str::to_owned),
        Some(format!(
            "{} in / {} out tokens",
            u.input_tokens, u.output_tokens
        )),
        Some(duration(p.provider_round_ms)),
        p.stop_reason
            .as_deref()
            .and_then(nonblank)
            .map(|s| format!("stop: {s}")),
        (p.tools_sent > 0).then(|| match p.tools_deferred {
            0 => format!(
                "{} (~{} tokens)",
                counted(p.tools_sent as u64, "tool", "tools"),
                p.tool_tokens
            ),
            d => format!(
                "{} (~{} tokens; {d} more behind ToolSearch, ~{} tokens not sent)",
                counted(p.tools_sent as u64, "tool", "tools"),
                p.tool_tokens,
                p.deferred_tool_tokens
            ),
        }),
    ];
    let head = format!("Provider round {}", p.round);
    colon(head, joined(parts, ", "))
}

/// What a compaction folds into the summary.
pub(super) fn compaction_started(p: &ev::ContextCompactionStarted) -> String {
    let turns = p.folding_turns;
    format!(
        "Compacting context: folding {turns} turn{} ({} tokens) into the summary",
        if turns == 1 { "" } else { "s" },
        compact_count(p.tokens_before)
    )
}

/// What a compaction made of the turns, and how long it took once that is worth saying.
pub(super) fn context_compacted(p: &ev::ContextCompacted) -> String {
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

/// A checkpoint's recapped rounds, and the revision its work item moved on from.
pub(super) fn turn_checkpoint(p: &ev::TurnCheckpoint) -> String {
    let rounds = p.recapped_rounds.len();
    let head = format!("Turn checkpoint: {rounds} earlier round(s) recapped");
    match &p.invalidated_anchor {
        Some(a) => format!("{head}; work item moved on from revision {}", a.revision),
        None => head,
    }
}

/// How long the turn waits, and for which approvals.
pub(super) fn awaiting_approval(p: &ev::TurnAwaitingApproval) -> String {
    let what = match p.approval_ids.as_slice() {
        [one] => format!("approval {one}"),
        many => format!("{} approvals", many.len()),
    };
    format!(
        "The turn waits up to {} for the answer to {what}, to go on with it",
        super::words::duration(p.wait_ms)
    )
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

pub(super) fn turn_terminal(p: &ev::TurnTerminal) -> String {
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
