//! The wording of each event kind: what `present` puts in an operator
//! event's summary, title and body, read defensively from the payload (a
//! missing field is sensible text, never a panic).

use serde_json::Value;

use super::{Category, OperatorEvent, Visibility, PREVIEW_MAX, SUMMARY_MAX};
use crate::protocol::events::EventKind;
use crate::protocol::EventRecord;

/// The summary of each kind; sets the body and refines the class where the
/// payload decides them.
pub(super) fn describe(kind: EventKind, e: &EventRecord, out: &mut OperatorEvent) -> String {
    use EventKind as K;
    let p = &e.payload;
    let msg = message_id(e).map_or("A message".to_owned(), |m| format!("Message {m}"));
    match kind {
        K::AgentCreated => format!("Agent {} created", text_or(p, "/agent/id", &e.agent_id)),
        K::AgentStateChanged => {
            let (from, to) = (text(p, "/from"), text(p, "/to"));
            let head = match (from, to) {
                (Some(from), Some(to)) => format!("Agent state {from} -> {to}"),
                (None, Some(to)) => format!("Agent state -> {to}"),
                (_, None) => "Agent state changed".to_owned(),
            };
            paren(head, text(p, "/cause"))
        }
        K::ControlApplied => {
            let head = match text(p, "/action") {
                Some("pause") => "Paused",
                Some("resume") => "Resume",
                Some("stop") => "Stopped",
                Some("wake") => "Wake requested",
                Some("abort") => "Abort of the running turn requested",
                Some(_) | None => "Control action applied",
            };
            colon(head, text(p, "/note"))
        }
        K::MessageAdmitted => message_admitted(p, out),
        K::MessageRejected => message_rejected(p, out),
        K::MessageProcessingStarted => {
            let what = message_id(e).map_or("a message".into(), |m| format!("message {m}"));
            let head = paren(format!("Processing {what}"), text(p, "/kind").map(words));
            let replay = flag(p, "/replay").then_some(", replayed after a restart");
            head + replay.unwrap_or_default()
        }
        K::MessageProcessed if flag(p, "/detail/reduced_without_turn") => {
            format!("{msg} settled without a turn")
        }
        K::MessageProcessed => {
            let turn = text(p, "/detail/turn_terminal").map(|t| format!("turn {}", words(t)));
            paren(format!("{msg} processed"), turn)
        }
        K::MessageAborted => format!("{msg} aborted"),
        K::MessageDropped => colon(format!("{msg} dropped"), text(p, "/detail/reason")),
        K::MessageInterjected => format!("{msg} joined the running turn"),
        K::SchedulerDecision => scheduler_decision(p, out),
        K::SystemTickEmitted => {
            let head = paren("System tick", text(p, "/reason").map(words));
            for_work_item(head, text(p, "/work_item_id"))
        }
        K::TurnStarted => {
            let head = match text(p, "/message_id") {
                Some(m) => format!("Turn started for message {m}"),
                None => "Turn started".to_owned(),
            };
            paren(head, text(p, "/trigger_kind").map(words))
        }
        K::ProviderRoundCompleted => {
            let usage = p.pointer("/token_usage").filter(|u| u.is_object());
            let count = |u: &Value, k: &str| u64_at(u, k).unwrap_or(0);
            let tokens = usage.map(|u| {
                let (i, o) = (count(u, "/input_tokens"), count(u, "/output_tokens"));
                format!("{i} in / {o} out tokens")
            });
            let parts = [
                text(p, "/model_ref").map(str::to_owned),
                tokens,
                u64_at(p, "/provider_round_ms").map(duration),
                text(p, "/stop_reason").map(|s| format!("stop: {s}")),
            ];
            let head = format!("Provider round{}", round_no(p));
            colon(head, joined(parts, ", "))
        }
        K::AssistantRoundRecorded => assistant_round(p, out),
        K::ToolStarted => match text(p, "/tool_name") {
            Some(name) => format!("{name} started"),
            None => "Tool started".to_owned(),
        },
        K::ToolExecuted => tool_executed(p, out),
        K::WorkspaceAttached => format!(
            "Workspace attached: {}",
            text_or(p, "/anchor", "a directory")
        ),
        K::WorkspaceDetached => format!(
            "Workspace detached: {} (nothing on disk was removed)",
            text_or(p, "/workspace_id", "a workspace")
        ),
        K::WorkspaceUsed => {
            let root = text_or(p, "/execution/execution_root", "?");
            let head = match (
                text(p, "/execution/workspace_id"),
                text(p, "/execution/mode"),
            ) {
                (Some("agent_home"), _) => "Working in the agent home".to_owned(),
                (_, Some("isolated")) => format!("Working in an isolated worktree: {root}"),
                _ => format!("Working in {root}"),
            };
            match text(p, "/reason") {
                Some(r) => format!("{head} ({})", words(r)),
                None => head,
            }
        }
        K::WorkspaceMissing => format!(
            "Execution root {} is gone; back in the agent home (nothing recorded was lost)",
            text_or(p, "/execution_root", "?")
        ),
        K::WorktreeCreated => format!(
            "Worktree created: {} on branch {}",
            text_or(p, "/worktree_path", "?"),
            text_or(p, "/worktree_branch", "?")
        ),
        K::WorktreeRemoved => format!(
            "Clean worktree removed: {} (branch {} deleted)",
            text_or(p, "/worktree_path", "?"),
            text_or(p, "/worktree_branch", "?")
        ),
        K::WorktreeRetained => {
            let n = u64_at(p, "/uncommitted_files").unwrap_or(0);
            let c = u64_at(p, "/commits_ahead").unwrap_or(0);
            format!(
                "Worktree kept for review: {} on branch {} ({n} uncommitted file(s), {c} commit(s) ahead)",
                text_or(p, "/worktree_path", "?"),
                text_or(p, "/worktree_branch", "?")
            )
        }
        K::ContextCompacted => {
            let turns = u64_at(p, "/compacted_turns").unwrap_or(0);
            let tokens = compact_count(u64_at(p, "/summary_tokens").unwrap_or(0));
            let how = match text(p, "/summary_source") {
                Some("model") => "",
                _ => " (extractive)",
            };
            format!(
                "Context compacted: {turns} turn{} → {tokens}-token summary{how}",
                if turns == 1 { "" } else { "s" }
            )
        }
        K::TurnCheckpoint => {
            let rounds = p
                .pointer("/recapped_rounds")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let head = format!("Turn checkpoint: {rounds} earlier round(s) recapped");
            match u64_at(p, "/invalidated_anchor/revision") {
                Some(r) => format!("{head}; work item moved on from revision {r}"),
                None => head,
            }
        }
        K::TurnTerminal => {
            let rounds = u64_at(p, "/rounds").map(|n| match n {
                1 => "1 round".to_owned(),
                n => format!("{n} rounds"),
            });
            let tokens = match (
                u64_at(p, "/token_usage/input_tokens"),
                u64_at(p, "/token_usage/output_tokens"),
            ) {
                (Some(i), Some(o)) if i + o > 0 => Some(format!(
                    "{} in / {} out tokens",
                    compact_count(i),
                    compact_count(o)
                )),
                _ => None,
            };
            let detail = joined(
                [u64_at(p, "/duration_ms").map(duration), rounds, tokens],
                ", ",
            );
            let head = match text(p, "/kind") {
                Some("completed") => "Turn completed".to_owned(),
                Some("aborted") => "Turn ended early".to_owned(),
                Some("baseline_over_budget") => "Turn stopped: prompt over context budget".into(),
                Some(other) => format!("Turn ended ({})", words(other)),
                None => "Turn ended".to_owned(),
            };
            paren(head, detail)
        }
        K::BriefCreated => brief_created(p, out),
        K::WorkItemCreated => {
            let by = (text(p, "/source") == Some("operator")).then_some("by the operator");
            paren(format!("Work item created: {}", objective(p)), by)
        }
        K::WorkItemPicked => {
            let what = first_text(p, &["/objective", "/work_item_id"]);
            format!("Working on: {}", preview(what.unwrap_or("a work item")))
        }
        K::WorkItemUpdated => work_item_updated(p, out),
        K::WorkItemCompleted => {
            out.body = body(text(p, "/work_item/result_summary"));
            format!("Work item completed: {}", objective(p))
        }
        K::WorkItemRecheckDue => {
            let id = text_or(p, "/work_item_id", "a blocked work item");
            let blocker = preview_at(p, "/blocked_by").map(|b| format!("blocked by {b}"));
            paren(format!("Recheck due for {id}"), blocker)
        }
        K::TaskCreated => {
            let what = first_text(p, &["/task/detail/cmd", "/task/summary"]);
            let id = text_or(p, "/task/id", "task");
            colon(format!("Task {id} queued"), what.map(preview))
        }
        K::TaskStatusChanged => task_status_changed(p, out),
        K::TaskOutput => {
            out.body = body(first_text(p, &["/preview", "/chunk", "/output_preview"]));
            let bytes = u64_at(p, "/bytes").or(u64_at(p, "/output_bytes"));
            let head = format!("Task {} produced output", text_or(p, "/task_id", "task"));
            paren(head, bytes.map(|b| format!("{b} bytes")))
        }
        K::TaskResultQueued => {
            let id = text_or(p, "/task_id", "task");
            let head = format!("Task {id} result queued for the agent");
            paren(head, text(p, "/message_id"))
        }
        K::WaitingIntentCreated => {
            let head = match preview_at(p, "/waiting_intent/description") {
                Some(d) => format!("Waiting for: {d}"),
                None => "Waiting for an external change".to_owned(),
            };
            paren(head, text(p, "/waiting_intent/source"))
        }
        K::WaitingIntentTriggered => colon("Wait resolved", waited_for(p)),
        K::WaitingIntentCancelled => match text(p, "/waiting_intent/status") {
            Some("expired") => colon("Wait expired", waited_for(p)),
            _ => colon("Wait cancelled", waited_for(p)),
        },
        K::TimerCreated => {
            let head = match u64_at(p, "/delay_ms") {
                Some(ms) => format!("Timer set for {}", duration(ms)),
                None => "Timer set".to_owned(),
            };
            colon(head, preview_at(p, "/timer/reason"))
        }
        K::TimerFired => colon("Timer fired", preview_at(p, "/timer/reason")),
        K::TimerCancelled => colon("Timer cancelled", preview_at(p, "/timer/reason")),
        K::WakeHintSubmitted => {
            let from = e.provenance.source.as_deref().map(|s| format!("from {s}"));
            paren(colon("Wake hint", preview_at(p, "/reason")), from)
        }
        K::WakeHintCoalesced => {
            let reason = preview_at(p, "/reason");
            colon("Wake hint merged into the pending one", reason)
        }
        K::WakeHintIgnored => {
            let why = text_or(p, "/note", "the agent is stopped");
            format!("Wake hint ignored: {why}")
        }
        K::RuntimeStarted => {
            let replay = p.pointer("/replay_message_ids").and_then(Value::as_array);
            match (flag(p, "/turn_was_in_progress"), replay.map_or(0, Vec::len)) {
                (true, _) => "Runtime started; the interrupted turn will be replayed".to_owned(),
                (false, 0) => "Runtime started".to_owned(),
                (false, 1) => "Runtime started; 1 message to replay".to_owned(),
                (false, n) => format!("Runtime started; {n} messages to replay"),
            }
        }
        K::RuntimeStopped => colon("Runtime stopped", preview_at(p, "/reason")),
        K::RuntimeError => runtime_error(p, out),
        K::ConfigReloaded => {
            let changed = joined(string_list(p, "/changed").into_iter().map(Some), ", ");
            paren(
                "Configuration reloaded",
                changed.map(|c| format!("changed: {c}")),
            )
        }
        K::DisplayModeChanged => {
            let mode = first_text(p, &["/to", "/display_mode", "/mode"]);
            colon("Display mode changed", mode)
        }
        K::ModelOverrideChanged => match p.pointer("/to") {
            Some(Value::Null) => "Model override cleared".to_owned(),
            Some(_) | None => colon("Model override set", text(p, "/to")),
        },
    }
}

/// A kind from a newer Holon: its name, and the raw payload as the body.
pub(super) fn unknown(e: &EventRecord, out: &mut OperatorEvent) -> String {
    out.body = match &e.payload {
        Value::Object(m) if m.is_empty() => None,
        Value::Null => None,
        other => Some(one_line(&other.to_string(), 400)),
    };
    let kind = Some(e.kind.trim()).filter(|k| !k.is_empty());
    let kind = kind.unwrap_or("(empty kind)");
    format!("Unrecognised event `{kind}` (recorded by a newer Holon?)")
}

/// An admitted operator prompt is the operator's own message; other inputs
/// are classed by what they come from and name their source.
pub(super) fn message_admitted(p: &Value, out: &mut OperatorEvent) -> String {
    use Category as C;
    use Visibility as V;
    let (visibility, category, title) = match text(p, "/message/kind") {
        Some("operator_prompt") => (V::Progress, C::Message, "Operator"),
        Some("channel_event") => (V::Progress, C::OperatorNotification, "Channel message"),
        Some("webhook_event") => (V::Progress, C::OperatorNotification, "Webhook"),
        Some("callback_event") => (V::Progress, C::OperatorNotification, "Callback"),
        Some("timer_tick") => (V::Trace, C::Waiting, "Timer tick"),
        Some("task_result" | "task_status") => (V::Trace, C::Task, "Task result"),
        Some("system_tick") => (V::Trace, C::Runtime, "System tick"),
        Some(_) | None => (V::Trace, C::Runtime, "Runtime input"),
    };
    (out.visibility, out.category) = (visibility, category);
    out.title = title.to_owned();
    let origin = [
        "/message/origin/channel_id",
        "/message/origin/source",
        "/message/origin/descriptor_id",
        "/message/task_id",
    ];
    let from = first_text(p, &origin).map_or(String::new(), |f| format!(" from {f}"));
    let full = message_text(p.pointer("/message/body"));
    out.body = body(full.as_deref());
    let quote = full.as_deref().map_or("(empty)".to_owned(), preview);
    format!("{title}{from}: {quote}")
}

/// A refused operator prompt (or an unlabelled refusal) is a turn result;
/// a refused runtime input (a task result while stopped) is progress.
pub(super) fn message_rejected(p: &Value, out: &mut OperatorEvent) -> String {
    out.body = body(text(p, "/body_preview"));
    let why = text(p, "/hint").map(str::to_owned);
    let why = why.or(text(p, "/reason").map(words));
    match text(p, "/kind") {
        Some("operator_prompt") | None => colon("Prompt refused", why),
        Some(kind) => {
            (out.visibility, out.title) = (Visibility::Progress, "Message refused".into());
            colon(format!("Refused {}", words(kind)), why)
        }
    }
}

pub(super) fn scheduler_decision(p: &Value, out: &mut OperatorEvent) -> String {
    out.body = joined(string_list(p, "/evidence").into_iter().map(Some), "\n");
    let reason = text(p, "/reason").map(words);
    let (msg, task) = (text(p, "/message_id"), text(p, "/task_id"));
    match text(p, "/decision") {
        Some("StartModelTurn") => match msg {
            Some(m) => format!("Start turn for message {m}"),
            None => "Start a model turn".to_owned(),
        },
        Some("ReduceMessageOnly") => match msg {
            Some(m) => format!("Settle message {m} without a turn"),
            None => "Settle a message without a turn".to_owned(),
        },
        Some("EmitSystemTick") => {
            let head = paren("Emit system tick", reason);
            for_work_item(head, text(p, "/work_item_id"))
        }
        Some("WaitForTask") => match task {
            Some(t) => format!("Wait for task {t}"),
            None => "Wait for running tasks".to_owned(),
        },
        Some("WaitForExternalChange") => "Wait for an external change".to_owned(),
        Some("WaitForTimer") => "Wait for a timer".to_owned(),
        Some("WaitForOperator") => "Wait for operator input".to_owned(),
        Some("Sleep") => colon("Sleep", reason),
        Some("StayIdle") => colon("Stay idle", reason),
        Some("Stop") => colon("Hold", reason),
        Some("Noop") => colon("No action", reason),
        Some(other) => colon(format!("Scheduler decision {other}"), reason),
        None => "Scheduler decision".to_owned(),
    }
}

/// Spec wording: the text preview first, else the requested tools, else a
/// concise round line.
pub(super) fn assistant_round(p: &Value, out: &mut OperatorEvent) -> String {
    let tools = tool_list(&string_list(p, "/tool_names"));
    match (text(p, "/text_preview"), tools.is_empty()) {
        (Some(t), _) => {
            let requested = Some(tools.clone()).filter(|t| !t.is_empty());
            let requested = requested.map(|r| format!("Requested tools: {r}"));
            out.body = joined([Some(t.to_owned()), requested], "\n\n");
            format!("Assistant progress: {}", preview(t))
        }
        (None, false) => format!("Model requested tools: {tools}"),
        (None, true) => format!("Model round{} with no text or tool calls", round_no(p)),
    }
}

pub(super) fn tool_executed(p: &Value, out: &mut OperatorEvent) -> String {
    let name = text_or(p, "/tool_name", "Tool");
    out.title = name.to_owned();
    out.body = body(text(p, "/result_preview"));
    let head = match flag(p, "/is_error") {
        true => format!("{name} failed"),
        false => name.to_owned(),
    };
    let hint = p.pointer("/arguments").and_then(|a| tool_hint(name, a));
    paren(colon(head, hint), u64_at(p, "/duration_ms").map(duration))
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
        let ms = u64_at(args, "/duration_ms");
        return Some(ms.map_or("until woken".into(), |ms| format!("for {}", duration(ms))));
    }
    let hint = |v: &Value| {
        v.as_str()
            .filter(|s| !s.trim().is_empty())
            .map(|s| one_line(s, 80))
    };
    let Some(obj) = args.as_object() else {
        return hint(args);
    };
    let known = KEYS.iter().find_map(|k| obj.get(*k).and_then(hint));
    known.or_else(|| obj.values().find_map(hint))
}

/// Failure briefs are always turn_result and say the turn failed; other
/// briefs take the payload's visibility, never below turn_result.
pub(super) fn brief_created(p: &Value, out: &mut OperatorEvent) -> String {
    let full = text(p, "/brief/text");
    if text(p, "/brief/kind") == Some("failure") {
        let cause = text(p, "/brief/failure_artifact/summary");
        let detail = failure_detail(p.pointer("/brief/failure_artifact"));
        out.body = joined([full.or(cause).map(str::to_owned), detail], "\n");
        out.title = "Turn failed".to_owned();
        return match (cause, full) {
            (Some(c), _) => format!("Turn failed: {}", preview(c)),
            (None, Some(t)) => preview(t),
            (None, None) => "Turn failed".to_owned(),
        };
    }
    let (visibility, title) = match (text(p, "/visibility"), text(p, "/brief/kind")) {
        (Some("action_required"), _) => (Visibility::ActionRequired, "Needs your input"),
        (Some("work_done"), _) => (Visibility::WorkDone, "Work done"),
        (_, Some("ack")) => (Visibility::TurnResult, "Acknowledged"),
        _ => (Visibility::TurnResult, "Result"),
    };
    (out.visibility, out.title, out.body) = (visibility, title.to_owned(), body(full));
    let headline = full.map_or("(no reply text)".to_owned(), headline);
    format!("{title}: {headline}")
}

pub(super) fn runtime_error(p: &Value, out: &mut OperatorEvent) -> String {
    let summary = text(p, "/failure_artifact/summary");
    let detail = failure_detail(p.pointer("/failure_artifact"));
    out.body = joined([summary.map(str::to_owned), detail], "\n");
    match (summary, text(p, "/failure_kind")) {
        (Some(s), _) => format!("Runtime error: {}", preview(s)),
        (None, Some(k)) => format!("Runtime error: {}", words(k)),
        (None, None) => "Runtime error (no details recorded)".to_owned(),
    }
}

/// `kind · provider · model · task · HTTP status · exit` of a failure artifact.
pub(super) fn failure_detail(artifact: Option<&Value>) -> Option<String> {
    let a = artifact?;
    let named = ["/kind", "/provider", "/model_ref", "/task_id"].map(|k| text(a, k));
    let status = u64_at(a, "/status").map(|s| format!("HTTP {s}"));
    let exit = a.pointer("/exit_status").and_then(Value::as_i64);
    let numbers = [status, exit.map(|c| format!("exit {c}"))];
    let named = named.map(|n| n.map(str::to_owned));
    joined(named.into_iter().chain(numbers), " · ")
}

/// A blocker set or cleared is progress; other updates are trace.
pub(super) fn work_item_updated(p: &Value, out: &mut OperatorEvent) -> String {
    let what = objective(p);
    let changed = string_list(p, "/changed");
    if !changed.iter().any(|c| c == "blocked_by") {
        let fields = Some(words(&changed.join(", ")));
        return format!("{}: {what}", paren("Work item updated", fields));
    }
    out.visibility = Visibility::Progress;
    match text(p, "/work_item/blocked_by") {
        Some(b) => format!("Work item blocked by {}: {what}", one_line(b, 60)),
        None => format!("Work item unblocked: {what}"),
    }
}

/// Terminal statuses are progress with exit status (or the runtime's
/// summary, e.g. a signal) and duration; others are trace.
pub(super) fn task_status_changed(p: &Value, out: &mut OperatorEvent) -> String {
    let id = text_or(p, "/task_id", "task");
    let (cmd, to) = (text(p, "/cmd"), text(p, "/to"));
    let head = match to {
        Some("running") => format!("Task {id} running"),
        Some("cancelling") => format!("Task {id} stopping"),
        Some(status) => format!("Task {id} {}", words(status)),
        None => format!("Task {id} status changed"),
    };
    let head = colon(head, cmd.map(|c| one_line(c, 80)));
    let terminal = ["completed", "failed", "cancelled", "interrupted"];
    if !to.is_some_and(|t| terminal.contains(&t)) {
        return head;
    }
    out.visibility = Visibility::Progress;
    out.body = body(text(p, "/output_preview"));
    let summary = text(p, "/summary").filter(|s| Some(*s) != cmd);
    let outcome = match p.pointer("/exit_status").and_then(Value::as_i64) {
        Some(code) => Some(format!("exit {code}")),
        None => summary.map(|s| one_line(s, 60)),
    };
    let took = u64_at(p, "/duration_ms").map(duration);
    paren(head, joined([outcome, took], ", "))
}

// ---- small pure helpers -------------------------------------------------

/// A non-blank string at a JSON pointer, trimmed.
/// `812`, `12.3k`, `1.2M`.
pub fn compact_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

pub(super) fn text<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    let s = v.pointer(ptr).and_then(Value::as_str).map(str::trim);
    s.filter(|s| !s.is_empty())
}

pub(super) fn text_or<'a>(v: &'a Value, ptr: &str, default: &'a str) -> &'a str {
    text(v, ptr).unwrap_or(default)
}

pub(super) fn first_text<'a>(v: &'a Value, ptrs: &[&str]) -> Option<&'a str> {
    ptrs.iter().find_map(|ptr| text(v, ptr))
}

pub(super) fn preview_at(v: &Value, ptr: &str) -> Option<String> {
    text(v, ptr).map(preview)
}

pub(super) fn u64_at(v: &Value, ptr: &str) -> Option<u64> {
    v.pointer(ptr).and_then(Value::as_u64)
}

pub(super) fn flag(v: &Value, ptr: &str) -> bool {
    v.pointer(ptr).and_then(Value::as_bool).unwrap_or(false)
}

/// The non-blank strings of an array at `ptr`; other entries are skipped.
pub(super) fn string_list(v: &Value, ptr: &str) -> Vec<String> {
    let items = v
        .pointer(ptr)
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let strings = items
        .filter_map(Value::as_str)
        .filter(|s| !s.trim().is_empty());
    strings.map(str::to_owned).collect()
}

/// The present, non-blank parts joined by `sep`; `None` when there are none.
pub(super) fn joined(parts: impl IntoIterator<Item = Option<String>>, sep: &str) -> Option<String> {
    let parts: Vec<String> = parts
        .into_iter()
        .flatten()
        .filter(|s| !s.trim().is_empty())
        .collect();
    Some(parts.join(sep)).filter(|s| !s.is_empty())
}

/// A body: trimmed, `None` when blank.
pub(super) fn body(s: Option<&str>) -> Option<String> {
    s.map(str::trim)
        .filter(|b| !b.is_empty())
        .map(str::to_owned)
}

/// The text of a message body (`text`, `brief` or `json`).
pub(super) fn message_text(body: Option<&Value>) -> Option<String> {
    let body = body?;
    match text(body, "/type") {
        Some("json") => body.pointer("/value").map(Value::to_string),
        _ => text(body, "/text").map(str::to_owned),
    }
}

/// The message an event is about, from the payload or the provenance.
pub(super) fn message_id(e: &EventRecord) -> Option<&str> {
    text(&e.payload, "/message_id").or(e.provenance.message_id.as_deref())
}

pub(super) fn objective(p: &Value) -> String {
    let o = first_text(p, &["/work_item/objective", "/work_item/id"]);
    o.map_or("(unnamed)".to_owned(), preview)
}

pub(super) fn waited_for(p: &Value) -> Option<String> {
    preview_at(p, "/waiting_intent/description")
}

pub(super) fn for_work_item(head: String, work_item_id: Option<&str>) -> String {
    match work_item_id {
        Some(w) => format!("{head} for work item {w}"),
        None => head,
    }
}

pub(super) fn round_no(p: &Value) -> String {
    u64_at(p, "/round")
        .map(|r| format!(" {r}"))
        .unwrap_or_default()
}

/// `ExecCommand x2, TaskStatus`: first-seen order, repeats counted.
pub(super) fn tool_list(names: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match seen.iter_mut().find(|(s, _)| s == n) {
            Some((_, count)) => *count += 1,
            None => seen.push((n, 1)),
        }
    }
    let part = |(n, c): (&str, usize)| match c {
        1 => n.to_owned(),
        c => format!("{n} x{c}"),
    };
    seen.into_iter().map(part).collect::<Vec<_>>().join(", ")
}

/// `head: tail`, or `head` when the tail is missing or blank.
pub(super) fn colon(head: impl Into<String>, tail: Option<impl AsRef<str>>) -> String {
    affix(head.into(), tail, ": ", "")
}

/// `head (tail)`, or `head` when the tail is missing or blank.
pub(super) fn paren(head: impl Into<String>, tail: Option<impl AsRef<str>>) -> String {
    affix(head.into(), tail, " (", ")")
}

pub(super) fn affix(
    head: String,
    tail: Option<impl AsRef<str>>,
    open: &str,
    close: &str,
) -> String {
    match tail
        .as_ref()
        .map(|t| t.as_ref().trim())
        .filter(|t| !t.is_empty())
    {
        Some(t) => format!("{head}{open}{t}{close}"),
        None => head,
    }
}

/// `no_runnable_work` -> `no runnable work`.
pub(super) fn words(snake: &str) -> String {
    snake.replace('_', " ")
}

pub(super) fn preview(s: &str) -> String {
    one_line(s, PREVIEW_MAX)
}

/// The first non-blank line, marked `…` when more lines follow.
pub(super) fn headline(s: &str) -> String {
    let mut lines = s.lines().filter(|l| !l.trim().is_empty());
    let head = one_line(lines.next().unwrap_or(""), SUMMARY_MAX);
    match lines.next().is_some() && !head.ends_with('…') {
        true => format!("{head} …"),
        false => head,
    }
}

/// Whitespace collapsed to single spaces, at most `max` characters.
pub(super) fn one_line(s: &str, max: usize) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// `850 ms`, `12.3 s`, `2m 05s`, `1h 02m`.
pub(super) fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{}.{} s", ms / 1000, (ms % 1000) / 100),
        60_000..=3_599_999 => format!("{}m {:02}s", ms / 60_000, (ms / 1000) % 60),
        _ => format!("{}h {:02}m", ms / 3_600_000, (ms / 60_000) % 60),
    }
}

/// `HH:MM:SS` of an RFC 3339 timestamp (`2026-11-22T04:42:17.517Z`); the
/// raw text when it has another shape, `--:--:--` when empty.
pub(super) fn clock(ts: &str) -> &str {
    let shape = |(i, c): (usize, char)| match i {
        2 | 5 => c == ':',
        _ => c.is_ascii_digit(),
    };
    let hms = ts.get(11..19).filter(|t| t.char_indices().all(shape));
    match hms.filter(|_| ts.get(10..11) == Some("T")) {
        Some(t) => t,
        None if ts.trim().is_empty() => "--:--:--",
        None => ts,
    }
}
