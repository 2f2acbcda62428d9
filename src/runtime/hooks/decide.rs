//! What a finished hook run means (pure). For `pre_tool`: exit 0 lets the
//! call go on, unless stdout ends with a JSON object deciding otherwise
//! (`{"decision": "deny", "reason": "…"}`; `"block"` is read as `deny`):
//! the whole of stdout, or its last line, so a hook may log before it;
//! exit 2 denies it with stderr as the reason. Anything else (another
//! exit, a signal, the time limit, a decision Holon does not know, JSON
//! that does not parse) is a failure, which the hook's `on_error` turns
//! into allow or deny. A hook never approves: "allow" only means it does
//! not object, and the approval policy still applies.
//!
//! For the other events a hook decides nothing: exit 0 is done, anything
//! else a failure that is recorded and reported.

use crate::runtime::settings::hooks::{HookEvent, OnError};

/// How a hook's process ended, with what it wrote (each stream bounded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// Killed, with everything it started, at its time limit (seconds).
    TimedOut(u64),
    /// It never ran (the sandbox could not be made, no shell).
    NotStarted(String),
}

/// What the run said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A `pre_tool` hook does not object.
    Allow,
    /// A `pre_tool` hook refuses the call, with the reason the model sees.
    Deny(String),
    /// A hook of another event finished.
    Done,
    /// It failed; why.
    Failed(String),
}

impl Verdict {
    /// The word `hook_ran` records.
    pub fn outcome(&self) -> &'static str {
        match self {
            Verdict::Allow => "allowed",
            Verdict::Deny(_) => "denied",
            Verdict::Done => "done",
            Verdict::Failed(_) => "failed",
        }
    }
}

/// A run's verdict and what it means for the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    /// The call is refused, with this reason (a denial, or a failure
    /// under `on_error = "deny"`).
    pub refuse: Option<String>,
}

/// Reasons and errors are cut to this many characters.
pub const REASON_CHARS: usize = 2000;

/// What a run of hook `name` on `event` that ended as `done` means.
pub fn decide(event: HookEvent, name: &str, on_error: OnError, done: &Finished) -> Decision {
    let verdict = verdict(event, name, done);
    let refuse = match (&verdict, on_error) {
        (Verdict::Deny(reason), _) => Some(reason.clone()),
        (Verdict::Failed(error), OnError::Deny) if event.decides() => Some(format!(
            "the hook `{name}` failed ({error}), and its on_error is deny"
        )),
        _ => None,
    };
    Decision { verdict, refuse }
}

fn verdict(event: HookEvent, name: &str, done: &Finished) -> Verdict {
    let stderr = clean(&done.stderr);
    let with_stderr = |what: String| match stderr.is_empty() {
        true => what,
        false => format!("{what}: {stderr}"),
    };
    match &done.exit {
        Exit::NotStarted(why) => Verdict::Failed(format!("could not start: {}", cut(why))),
        Exit::TimedOut(secs) => Verdict::Failed(format!(
            "did not finish within {secs} s and was stopped, with everything it started"
        )),
        Exit::Signal(sig) => Verdict::Failed(with_stderr(format!("killed by signal {sig}"))),
        Exit::Code(0) if !event.decides() => Verdict::Done,
        Exit::Code(0) => answer(&done.stdout),
        Exit::Code(2) if event.decides() => Verdict::Deny(match stderr.is_empty() {
            true => format!("the hook `{name}` denied the call and gave no reason"),
            false => stderr,
        }),
        Exit::Code(code) => Verdict::Failed(with_stderr(format!("exited {code}"))),
    }
}

/// A `pre_tool` hook's stdout after exit 0: nothing, text, or a decision
/// (all of it, or its last line).
fn answer(stdout: &[u8]) -> Verdict {
    let text = String::from_utf8_lossy(stdout);
    let whole = text.trim();
    let last = whole.lines().last().unwrap_or("").trim();
    let text = match (whole.starts_with('{'), last.starts_with('{')) {
        (true, _) => whole,
        (false, true) => last,
        (false, false) => return Verdict::Allow,
    };
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Verdict::Failed(format!("its stdout is not a JSON decision: {e}")),
    };
    let reason = value
        .get("reason")
        .and_then(|r| r.as_str())
        .map(|r| clean(r.as_bytes()))
        .filter(|r| !r.is_empty());
    match value.get("decision") {
        None | Some(serde_json::Value::Null) => Verdict::Allow,
        Some(d) => match d.as_str() {
            Some("allow") => Verdict::Allow,
            Some("deny" | "block") => Verdict::Deny(
                reason.unwrap_or_else(|| "the hook denied the call and gave no reason".into()),
            ),
            _ => Verdict::Failed(format!(
                "it answered the decision {}, which is neither allow nor deny",
                clean(d.to_string().as_bytes())
            )),
        },
    }
}

/// Text a hook wrote, fit to show the model and the operator: control
/// and hidden characters (escape sequences, bidirectional overrides,
/// zero-width marks: `model::text`) dropped but for newlines and tabs,
/// the ends trimmed, cut to `REASON_CHARS`.
pub fn clean(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let kept: String = text
        .chars()
        .filter(|&c| matches!(c, '\n' | '\t') || !crate::model::text::needs_escape(c))
        .collect();
    cut(kept.trim())
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(REASON_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(exit: Exit, stdout: &str, stderr: &str) -> Finished {
        Finished {
            exit,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }

    fn pre(done: Finished, on_error: OnError) -> Decision {
        decide(HookEvent::PreTool, "guard", on_error, &done)
    }

    #[test]
    fn exit_codes_and_json_decide_a_call() {
        let allow = pre(run(Exit::Code(0), "", ""), OnError::Allow);
        assert_eq!((allow.verdict, allow.refuse), (Verdict::Allow, None));
        // Text on stdout is not a decision.
        assert_eq!(
            pre(run(Exit::Code(0), "looks fine\n", ""), OnError::Deny).verdict,
            Verdict::Allow
        );
        let deny = pre(
            run(Exit::Code(2), "", "no pushes to main\n"),
            OnError::Allow,
        );
        assert_eq!(deny.refuse.as_deref(), Some("no pushes to main"));
        let silent = pre(run(Exit::Code(2), "", ""), OnError::Allow);
        assert!(silent
            .refuse
            .is_some_and(|r| r.contains("`guard` denied the call and gave no reason")));
        let json = pre(
            run(
                Exit::Code(0),
                r#"{"decision":"block","reason":"not on Fridays"}"#,
                "",
            ),
            OnError::Allow,
        );
        assert_eq!(json.verdict, Verdict::Deny("not on Fridays".into()));
        let ok = pre(
            run(Exit::Code(0), r#"{"decision":"allow"}"#, ""),
            OnError::Deny,
        );
        assert_eq!(ok.refuse, None);
        // A hook may log before its decision: the last line decides.
        let logged = "checking…\n{\"decision\":\"deny\",\"reason\":\"no\"}\n";
        let logged = pre(run(Exit::Code(0), logged, ""), OnError::Allow);
        assert_eq!(logged.verdict, Verdict::Deny("no".into()));
        // Words other than allow and deny are not guessed at.
        let approve = pre(
            run(Exit::Code(0), r#"{"decision":"approve"}"#, ""),
            OnError::Deny,
        );
        assert!(approve.refuse.is_some());
    }

    #[test]
    fn failures_follow_on_error() {
        for done in [
            run(Exit::Code(1), "", "boom"),
            run(Exit::Signal(9), "", ""),
            run(Exit::TimedOut(10), "", ""),
            run(Exit::NotStarted("no shell".into()), "", ""),
            run(Exit::Code(0), "{not json", ""),
            run(Exit::Code(0), r#"{"decision":"approve_everything"}"#, ""),
            run(Exit::Code(0), r#"{"decision":true}"#, ""),
        ] {
            let lenient = pre(done.clone(), OnError::Allow);
            assert!(matches!(lenient.verdict, Verdict::Failed(_)), "{done:?}");
            assert_eq!(lenient.refuse, None);
            let strict = pre(done.clone(), OnError::Deny);
            assert!(
                strict
                    .refuse
                    .is_some_and(|r| r.contains("on_error is deny")),
                "{done:?}"
            );
        }
        let failed = pre(run(Exit::Code(1), "", "boom\n"), OnError::Allow);
        assert_eq!(failed.verdict, Verdict::Failed("exited 1: boom".into()));
    }

    #[test]
    fn other_events_decide_nothing() {
        let told = decide(
            HookEvent::Brief,
            "n",
            OnError::Deny,
            &run(Exit::Code(0), "{\"decision\":\"deny\"}", ""),
        );
        assert_eq!((told.verdict, told.refuse), (Verdict::Done, None));
        let two = decide(
            HookEvent::Brief,
            "n",
            OnError::Deny,
            &run(Exit::Code(2), "", "x"),
        );
        assert_eq!(
            (two.verdict, two.refuse),
            (Verdict::Failed("exited 2: x".into()), None)
        );
    }

    #[test]
    fn hostile_text_is_cleaned_and_cut() {
        let hostile =
            "\x1b]52;c;cHduZWQ=\x07red \x1b[31mtext\x1b[0m\r\nline\u{202e} two\u{200b}\0\u{9b}";
        let reason = clean(hostile.as_bytes());
        let hidden = |c: char| c != '\n' && crate::model::text::needs_escape(c);
        assert!(!reason.chars().any(hidden), "{reason:?}");
        assert!(reason.contains("line two"));
        let long = "x".repeat(REASON_CHARS * 3);
        assert_eq!(clean(long.as_bytes()).chars().count(), REASON_CHARS + 1);
    }
}
