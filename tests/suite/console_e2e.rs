//! The real `holon` console in a real pseudo-terminal, end to end: open it
//! (embedded runtime), type a prompt, run `!echo hello` and see it finish,
//! open and filter `/events`, create and pick a work item from its overlay,
//! switch display modes, quit, and find the terminal restored — then check
//! the store recorded what the screen showed.

use super::pty::Console;
use super::support::{json_lines, Daemon, Home};

#[test]
fn the_console_end_to_end_in_a_pseudo_terminal() {
    let home = Home::new();
    let mut c = Console::start(home.path(), &[], 100, 30, &[]);
    c.wait_until("the status line", |s| {
        s.contains("main ·") && s.contains("embedded")
    });

    // A prompt shows at once; without a provider the failure is visible at
    // the default (info) level, with how to fix it.
    c.type_text("hello there");
    c.enter();
    c.wait_for("› hello there");
    c.wait_for("Turn failed");
    c.wait_for("HOLON_MODEL");

    // An operator command runs as a task and finishes in one row.
    c.type_text("!echo hello");
    c.enter();
    c.wait_until("the command row", |s| {
        s.contains("echo hello") && s.contains("exit 0")
    });

    // The events inspector, filtered by kind.
    c.type_text("/events");
    c.enter();
    c.wait_for("Events · main");
    c.type_text("/");
    c.type_text("task_status");
    c.enter();
    c.wait_until("only task events", |s| {
        s.contains("task_status_changed") && !s.contains("agent_created")
    });
    c.key(b"\x1b");
    c.wait_until("the inspector closed", |s| !s.contains("Events · main"));

    // Work items: add one from the overlay, then pick it.
    c.key(b"\x0f");
    c.type_text("w");
    c.wait_for("Work items · main");
    c.type_text("a");
    c.type_text("write the e2e report");
    c.enter();
    c.wait_for("write the e2e report");
    c.type_text("p");
    c.wait_until("it is current", |s| {
        s.contains("Current (1)") && s.contains("write the e2e report")
    });
    c.key(b"\x1b");
    c.wait_until("the overlay closed", |s| !s.contains("Work items · main"));

    // Display modes: verbose adds progress rows (the turn endings); info
    // (3) shows results only again.
    c.type_text("/display verbose");
    c.enter();
    c.wait_for("Turn ended early");
    c.type_text("/display 3");
    c.enter();
    c.wait_until("info mode", |s| !s.contains("Turn ended early"));

    // Quit: exit 0, the alternate screen left, the cursor shown again.
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    let raw = c.raw_output();
    let has = |seq: &[u8]| raw.windows(seq.len()).any(|w| w == seq);
    assert!(
        has(b"\x1b[?1049h") && has(b"\x1b[?1049l"),
        "entered and left the alternate screen"
    );
    assert!(has(b"\x1b[?25h"), "the cursor is shown again");
    assert!(has(b"\x1b[?2004l"), "bracketed paste switched off");
    assert!(!c.alternate_screen());

    // Everything the screen showed is durable.
    let events = json_lines(&home.ok(&["events", "--json"]));
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    for k in [
        "message_admitted",
        "brief_created",
        "task_created",
        "work_item_created",
        "work_item_picked",
        "display_mode_changed",
    ] {
        assert!(kinds.contains(&k), "{k} recorded");
    }
    let created = events
        .iter()
        .find(|e| e["kind"] == "work_item_created")
        .map(|e| e["payload"]["work_item"]["objective"].clone());
    assert_eq!(created, Some(serde_json::json!("write the e2e report")));
    // The display mode is remembered per agent.
    let status: serde_json::Value =
        serde_json::from_str(&home.ok(&["status", "--json"])).unwrap_or_default();
    assert!(status["agents"][0]["id"] == "main");
    super::support::assert_typed_lines(&home, "main");
}

#[test]
fn no_alt_screen_keeps_the_normal_screen() {
    let home = Home::new();
    let mut c = Console::start(home.path(), &["--no-alt-screen"], 90, 24, &[]);
    c.wait_until("the status line", |s| s.contains("main ·"));
    assert!(!c.alternate_screen(), "the normal screen is used");
    c.type_text("remember this line");
    c.enter();
    c.wait_for("Turn failed");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    let raw = c.raw_output();
    assert!(
        !raw.windows(8).any(|w| w == b"\x1b[?1049h"),
        "never entered the alternate screen"
    );
    // The conversation is left in the scrollback as plain text, after the
    // terminal is restored, and the shell gets a clean line below it.
    let restored = raw
        .windows(6)
        .rposition(|w| w == b"\x1b[?25h")
        .expect("the cursor was never shown again");
    let after = String::from_utf8_lossy(&raw[restored + 6..]);
    assert!(after.contains("› remember this line"), "{after}");
    assert!(after.contains("Turn failed"), "{after}");
    // (After the move to the last line, nothing but plain text.)
    let text = after.split_once("\r\n").map_or("", |(_, t)| t);
    assert!(!text.contains('\x1b'), "plain text: {after:?}");
    let (_, col) = c.cursor();
    assert_eq!(col, 0, "the cursor is at the start of a fresh line");
}

#[test]
fn attach_shows_what_the_cli_sent_to_a_detached_runtime() {
    let home = Home::new();
    home.ok(&["--detach"]);
    let _daemon = Daemon(&home);
    home.ok(&["send", "sent from the cli"]);
    home.ok(&["work", "add", "queued from the cli"]);
    let mut c = Console::start(home.path(), &["attach"], 120, 30, &[]);
    c.wait_until("attached", |s| {
        s.contains("main ·") && s.contains("streaming")
    });
    c.wait_for("sent from the cli");
    // The work item is in the status line's count and in its overlay.
    c.wait_until("work 1 in the status line", |s| {
        s.lines().next().is_some_and(|l| l.contains("work 1"))
    });
    c.key(b"\x0f");
    c.type_text("w");
    c.wait_for("queued from the cli");
    c.key(b"\x1b");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    // Closing the console never stops the runtime, and it says so.
    let said = String::from_utf8_lossy(&c.raw_output()).into_owned();
    assert!(
        said.contains("keeps running, its agents' work goes on") && said.contains("holon attach"),
        "{said}"
    );
    let status = home.run(&["daemon", "status"]);
    assert_eq!(status.status.code(), Some(0), "the daemon still runs");
    home.ok(&["daemon", "stop"]);
}

#[test]
fn quitting_while_the_runtime_is_gone_does_not_say_it_keeps_running() {
    let home = Home::new();
    home.ok(&["--detach"]);
    let _daemon = Daemon(&home);
    let mut c = Console::start(home.path(), &["attach"], 120, 30, &[]);
    c.wait_until("attached", |s| {
        s.contains("main ·") && s.contains("streaming")
    });
    home.ok(&["daemon", "stop"]);
    c.wait_until("the link lost", |s| s.contains("reconnect"));
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    let said = String::from_utf8_lossy(&c.raw_output()).into_owned();
    assert!(!said.contains("keeps running, its agents"), "{said}");
    assert!(
        said.contains("had lost its link to the runtime") && said.contains("holon daemon status"),
        "{said}"
    );
}

#[test]
fn detach_hands_the_runtime_and_its_running_command_to_a_daemon() {
    let home = Home::new();
    let _daemon = Daemon(&home);
    let mut c = Console::start(home.path(), &[], 100, 30, &[]);
    c.wait_until("the status line", |s| {
        s.contains("main ·") && s.contains("embedded")
    });
    c.type_text("before detach");
    c.enter();
    c.wait_for("› before detach");
    c.type_text("!sleep 30");
    c.enter();
    c.wait_until("the command running", |s| {
        s.contains("sleep 30") && s.contains("running")
    });
    c.type_text("/detach");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    // The daemon took over: it answers, and everything recorded is there.
    let status = home.run(&["daemon", "status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "a daemon runs after /detach");
    let events = json_lines(&home.ok(&["events", "--json"]));
    assert!(events.iter().any(|e| e["kind"] == "message_admitted"
        && e["payload"]["message"]["body"]["text"] == "before detach"));
    // The command survives the hand-over under its holder: the daemon
    // supervises it again.
    let back = super::support::poll("the command reattached", || {
        let events = json_lines(&home.ok(&["events", "--json", "--kind", "task_reattached"]));
        events.into_iter().next()
    });
    let cancelled = json_lines(&home.ok(&["events", "--json", "--kind", "task_status_changed"]));
    assert!(
        !cancelled.iter().any(|e| e["payload"]["to"] == "cancelled"),
        "{cancelled:?}"
    );
    // A daemon's stop leaves it running too, and says so.
    let stopped = home.ok(&["daemon", "stop"]);
    assert!(
        stopped.contains("1 command left running under its holder"),
        "{stopped}"
    );
    let holder = back["payload"]["pid"].as_i64().unwrap_or(0) as i32;
    assert!(super::support::running(holder));
    // SAFETY: the holder of the command this test started; it passes
    // TERM on to the command and ends.
    unsafe { libc::kill(holder, libc::SIGTERM) };
    super::support::poll("the holder to end", || {
        (!super::support::running(holder)).then_some(())
    });
    super::support::assert_typed_lines(&home, "main");
}

#[test]
fn switching_to_an_unknown_agent_says_so_and_the_console_stays() {
    let home = Home::new();
    let mut c = Console::start(home.path(), &[], 100, 30, &[]);
    c.wait_until("the status line", |s| s.contains("main ·"));
    c.type_text("/agent switch ghost");
    c.enter();
    c.wait_for("no agent ghost");
    // Still the same console on the same runtime: a prompt still works.
    c.type_text("still here");
    c.enter();
    c.wait_for("› still here");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

#[test]
fn an_attached_console_whose_runtime_is_gone_still_answers_keys_at_once() {
    let home = Home::new();
    home.ok(&["--detach"]);
    let _daemon = Daemon(&home);
    let mut c = Console::start(home.path(), &["attach"], 100, 30, &[]);
    c.wait_until("attached", |s| s.contains("streaming"));
    home.ok(&["daemon", "stop"]);
    c.wait_until("reconnecting", |s| s.contains("reconnecting in"));
    // Wait until the backoff is 8 s: the loop used to sit in its reconnect
    // arm for the whole backoff, ignoring keys, signals and redraws.
    c.wait_until("an 8 s backoff", |s| s.contains("reconnecting in 8s"));
    c.type_text("/quit");
    c.enter();
    let within = std::time::Duration::from_secs(4);
    let code = c.wait_exit_within(within, "/quit sat out the 8 s backoff");
    assert_eq!(code, 0);
}

#[test]
fn shift_enter_is_a_newline_where_the_terminal_can_tell_it_apart() {
    let home = Home::new();
    // A terminal that speaks the kitty keyboard protocol.
    let mut c = Console::start(home.path(), &[], 120, 30, &[("HOLON_TEST_KITTY", "1")]);
    c.wait_for("Shift+Enter newline");
    c.type_text("line one");
    c.key(b"\x1b[13;2u"); // Shift+Enter, kitty-encoded
    c.type_text("line two");
    c.wait_until("two composer lines", |s| {
        s.contains("› line one") && s.contains("  line two")
    });
    c.key(b"\x1b[99;5u"); // Ctrl+C clears the composer
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
    let raw = c.raw_output();
    let has = |seq: &[u8]| raw.windows(seq.len()).any(|w| w == seq);
    assert!(has(b"\x1b[>1u") && has(b"\x1b[<1u"), "pushed, then popped");
    // Frames are drawn inside synchronized updates (DEC mode 2026).
    assert!(
        has(b"\x1b[?2026h") && has(b"\x1b[?2026l"),
        "synchronized frames"
    );

    // A plain terminal: the hint names a key that works there.
    let mut c = Console::start(home.path(), &[], 120, 30, &[]);
    c.wait_for("Alt+Enter newline");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

/// Ctrl+C while a model call is in flight (a local model that takes a
/// minute), confirmed with a second Ctrl+C: the embedded console quits at
/// once, the call is dropped, no
/// `holon` is left running, and the agent's status is true afterwards (not
/// `awake_running` with nothing running). What the warning said is what
/// happens: the turn is recorded as aborted by the operator and the next
/// start does not run it again (no second paid call).
#[test]
fn ctrl_c_during_a_model_turn_quits_at_once_and_leaves_a_true_status() {
    use super::stub_provider::{canned, Canned, StubServer};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stub = rt.block_on(StubServer::start(vec![Canned::json(
        200,
        canned::responses_json("too late", &[]),
    )
    .delay(std::time::Duration::from_secs(60))]));
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let env = [
        ("HOLON_MODEL", "openai/gpt-slow"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-slow"),
    ];
    let mut c = Console::start(home.path(), &[], 100, 30, &env);
    c.wait_until("the status line", |s| s.contains("main ·"));
    c.type_text("take your time");
    c.enter();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while stub.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the model was never called"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Ctrl+C with an empty composer: the console says what quitting
    // stops, and a second Ctrl+C confirms.
    c.key(b"\x03");
    c.wait_for("Quit again to confirm");
    c.key(b"\x03");
    // The model's answer would come in 60 s: quitting does not wait for it.
    let within = std::time::Duration::from_secs(20);
    let code = c.wait_exit_within(within, "quitting waited for the model call");
    assert_eq!(code, 0);
    // Nothing runs any more: the status is read offline from the store.
    let status: serde_json::Value =
        serde_json::from_str(&home.ok(&["status", "--json"])).unwrap_or_default();
    let agent = &status["agents"][0];
    assert_eq!(agent["id"], "main");
    assert_ne!(agent["status"], "awake_running", "{status}");
    let events = json_lines(&home.ok(&["events", "--json", "--kind", "turn_terminal"]));
    assert!(
        events
            .iter()
            .any(|e| e["payload"]["cancel_reason"] == "operator_abort"),
        "{events:?}"
    );
    assert!(!json_lines(&home.ok(&["events", "--json", "--kind", "message_aborted"])).is_empty());
    // The next start: the aborted prompt is not run again.
    let out = home
        .cmd()
        .envs(env)
        .arg("--detach")
        .output()
        .expect("holon --detach");
    assert!(out.status.success());
    let _daemon = super::support::Daemon(&home);
    super::support::settled(&home);
    assert_eq!(stub.requests().len(), 1, "the aborted turn ran again");
    let started = json_lines(&home.ok(&["events", "--json", "--kind", "runtime_started"]));
    let last = started.last().cloned().unwrap_or_default();
    assert_eq!(last["payload"]["turn_was_in_progress"], false, "{last}");
}

/// A link in the model's answer is clickable: the real binary writes it
/// inside an OSC 8 hyperlink to its address.
#[test]
fn a_link_in_an_answer_is_written_as_a_hyperlink() {
    use super::stub_provider::{canned, Canned, StubServer};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let answer = "Read [the guide](https://example.com/guide) first.";
    let stub = rt.block_on(StubServer::start(vec![Canned::json(
        200,
        canned::responses_json(answer, &[]),
    )]));
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let env = [
        ("HOLON_MODEL", "openai/gpt-links"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-links"),
    ];
    let mut c = Console::start(home.path(), &[], 100, 30, &env);
    c.wait_until("the status line", |s| s.contains("main ·"));
    c.type_text("where do I start?");
    c.enter();
    c.wait_for("Read the guide (https://example.com/guide) first.");
    let raw = String::from_utf8_lossy(&c.raw_output()).into_owned();
    let open = raw
        .find("\x1b]8;id=holon-")
        .unwrap_or_else(|| panic!("no hyperlink in {raw:?}"));
    let link = &raw[open..];
    assert!(
        link.contains(";https://example.com/guide\x1b\\") && link.contains("\x1b]8;;\x1b\\"),
        "{link:?}"
    );
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

/// A rate-limited model call is said on the working row while the turn
/// waits on its retry, and the answer follows.
#[test]
fn a_rate_limited_call_says_so_while_the_turn_waits() {
    use super::stub_provider::{canned, Canned, StubServer};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let body = serde_json::json!({"error": {"message": "slow down", "type": "rate_limit_error"}});
    let stub = rt.block_on(StubServer::start(vec![
        Canned::json(429, body).header("Retry-After", "2"),
        Canned::json(200, canned::responses_json("Here it is.", &[])),
    ]));
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let env = [
        ("HOLON_MODEL", "openai/gpt-limited"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-limited"),
    ];
    let mut c = Console::start(home.path(), &[], 100, 30, &env);
    c.wait_until("the status line", |s| s.contains("main ·"));
    c.type_text("go");
    c.enter();
    c.wait_for("rate limited (429) · retry 2 of");
    let done = c.wait_for("Here it is.");
    assert!(!done.contains("rate limited"), "the notice goes: {done}");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

/// A terminal that cannot draw the console (`TERM=dumb`) gets the plain
/// overview and a note saying why and what follows an agent instead,
/// never the full-screen UI.
#[test]
fn a_dumb_terminal_gets_the_overview_not_the_full_screen_console() {
    let home = Home::new();
    let mut c = Console::start(home.path(), &[], 100, 30, &[("TERM", "dumb")]);
    assert_eq!(c.wait_exit(), 0);
    let raw = c.raw_output();
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.contains("TERM=dumb") && text.contains("attach --plain"),
        "{text}"
    );
    let has = |seq: &[u8]| raw.windows(seq.len()).any(|w| w == seq);
    assert!(!has(b"\x1b[?1049h"), "no alternate screen: {text}");
}

/// The real binary on a long history: the console opens on its newest
/// part, and Ctrl+Home pages older events in from the runtime until the
/// first prompt shows.
#[test]
fn a_console_pages_back_to_the_first_prompt_of_a_long_history() {
    let home = Home::new();
    home.ok(&["send", "the very first prompt of this history"]);
    home.ok(&["debug", "append-stress", "--count", "1500"]);
    home.ok(&["send", "the newest prompt"]);
    let mut c = Console::start(home.path(), &[], 100, 30, &[]);
    c.wait_for("the newest prompt");
    assert!(!c.contents().contains("the very first prompt"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // Each Ctrl+Home asks for the 500 events before the oldest held.
    while !c.contents().contains("the very first prompt") {
        assert!(
            std::time::Instant::now() < deadline,
            "never paged back to the first prompt:\n{}",
            c.contents()
        );
        c.key(b"\x1b[1;5H");
        c.shows_within(std::time::Duration::from_secs(2), |s| {
            s.contains("the very first prompt")
        });
    }
}

/// `/detach` with a model call in flight waits for the turn to end, so
/// the background runtime never makes the call again, then hands over.
#[test]
fn detach_waits_for_the_running_turn_and_no_model_call_is_paid_twice() {
    use super::stub_provider::{canned, Canned, StubServer};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stub = rt.block_on(StubServer::start(vec![
        Canned::json(200, canned::responses_json("the one answer", &[]))
            .delay(std::time::Duration::from_secs(3)),
        Canned::json(200, canned::responses_json("the queued answer", &[])),
        Canned::json(200, canned::responses_json("paid twice", &[])),
    ]));
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let env = [
        ("HOLON_MODEL", "openai/gpt-slow"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-slow"),
    ];
    let mut c = Console::start(home.path(), &[], 100, 30, &env);
    c.wait_until("the status line", |s| s.contains("main ·"));
    c.type_text("answer once");
    c.enter();
    super::support::poll("the model called", || {
        (!stub.requests().is_empty()).then_some(())
    });
    // A prompt queued behind it waits for the background runtime.
    c.type_text("and then this");
    c.enter();
    c.wait_for("› and then this");
    c.type_text("/detach");
    c.enter();
    c.wait_for("Detaching once the running turn ends");
    assert_eq!(c.wait_exit(), 0);
    let _daemon = super::support::Daemon(&home);
    let status = home.run(&["daemon", "status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "a daemon runs after /detach");
    let briefs = json_lines(&home.ok(&["events", "--json", "--kind", "brief_created"]));
    assert!(
        briefs
            .iter()
            .any(|e| e["payload"]["brief"]["text"] == "the one answer"),
        "{briefs:?}"
    );
    let ends = json_lines(&home.ok(&["events", "--json", "--kind", "turn_terminal"]));
    assert!(
        !ends
            .iter()
            .any(|e| e["payload"]["cancel_reason"] == "runtime_shutdown"),
        "{ends:?}"
    );
    // The daemon answers the queued prompt; nothing runs twice.
    super::support::poll("the queued prompt answered", || {
        let briefs = json_lines(&home.ok(&["events", "--json", "--kind", "brief_created"]));
        briefs
            .iter()
            .any(|e| e["payload"]["brief"]["text"] == "the queued answer")
            .then_some(())
    });
    super::support::settled(&home);
    assert_eq!(stub.requests().len(), 2, "a turn ran again");
}

/// Ctrl+F finds text in the conversation through the real binary, and n
/// moves to the older match.
#[test]
fn ctrl_f_finds_text_in_the_conversation() {
    let home = Home::new();
    let mut c = Console::start(home.path(), &[], 100, 30, &[]);
    c.wait_until("the status line", |s| s.contains("main ·"));
    for word in ["alpha one", "beta", "alpha two"] {
        c.type_text(word);
        c.enter();
        c.wait_for(&format!("› {word}"));
    }
    c.key(b"\x06");
    c.wait_for("Find:");
    c.type_text("alpha");
    c.enter();
    c.wait_for("Find “alpha”: n older · N newer · Esc close");
    c.type_text("n");
    c.type_text("n");
    c.wait_for("no older match");
    c.key(b"\x1b");
    c.wait_until("the find line closed", |s| !s.contains("Find “alpha”"));
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

/// Compaction through the real binary: once the history passes its share
/// of a small window, the next turn folds it, and the console shows it
/// as a row while the summary is written, then what it made.
#[test]
fn compaction_shows_as_a_row_while_the_summary_is_written() {
    use super::stub_provider::{canned, Canned, Responder, StubServer};
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The summariser's request carries no tools: it is answered slowly,
    // so the row can be seen; every turn gets a long answer until then,
    // and a short one after, so the row that says what the summary made
    // stays on screen.
    let long = "The retry test waits on the event now. ".repeat(300);
    let summarised = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let responder: Responder = std::sync::Arc::new(move |body: &serde_json::Value| {
        use std::sync::atomic::Ordering;
        let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        match (tools, summarised.load(Ordering::SeqCst)) {
            (true, false) => Canned::json(200, canned::responses_json(&long, &[])),
            (true, true) => Canned::json(200, canned::responses_json("Short now.", &[])),
            (false, _) => {
                summarised.store(true, Ordering::SeqCst);
                Canned::json(200, canned::responses_json("the summary", &[]))
                    .delay(std::time::Duration::from_secs(3))
            }
        }
    });
    let stub = rt.block_on(StubServer::serving(responder));
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let env = [
        ("HOLON_MODEL", "openai/gpt-small-window"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-small"),
        ("HOLON_CONTEXT_WINDOW", "16384"),
    ];
    let mut c = Console::start(home.path(), &[], 120, 30, &env);
    c.wait_until("the status line", |s| s.contains("main ·"));
    // Each turn adds ~3k tokens of history; a turn that starts past the
    // history's share folds it first (the summary takes 3 s).
    let mut shown = false;
    for n in 0..6 {
        c.type_text(&format!("turn {n}"));
        c.enter();
        // A turn starts at once: its compaction shows within a second.
        if c.shows_within(std::time::Duration::from_secs(3), |s| {
            s.contains("Compacting context: folding")
        }) {
            shown = true;
            break;
        }
    }
    assert!(shown, "no compaction row while the summary was written");
    c.wait_for("Context compacted:");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}
