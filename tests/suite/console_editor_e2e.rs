//! Ctrl+G's external editor with the real `holon` in a pseudo-terminal:
//! the draft handed over and what was saved taken back, and a SIGTERM
//! while the editor runs stopping it, what it started, and the console.

use super::pty::Console;
use super::support::Home;

#[test]
fn ctrl_g_hands_the_draft_to_the_editor_and_takes_back_what_it_saved() {
    let home = Home::new();
    // An editor that appends to the draft it is given.
    let editor = home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf ' and the rest from the editor' >> \"$1\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let editor = editor.display().to_string();
    let mut c = Console::start(home.path(), &[], 100, 30, &[("VISUAL", editor.as_str())]);
    c.wait_until("the status line", |s| s.contains("main ·"));
    c.type_text("the start");
    c.wait_for("the start");
    c.key(b"\x07");
    c.wait_for("the start and the rest from the editor");
    c.enter();
    c.wait_for("› the start and the rest from the editor");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

/// A SIGTERM while Ctrl+G's editor has the terminal does not wait for the
/// operator to leave the editor: the editor is stopped (here a wrapper
/// script, and what it started), the console ends and gives the terminal
/// back.
#[test]
fn sigterm_while_the_editor_runs_stops_it_and_the_console() {
    let home = Home::new();
    let pidfile = home.path().join("editor.pid");
    let editor = home.path().join("editor.sh");
    std::fs::write(
        &editor,
        format!(
            // It ignores SIGHUP, as an editor in another terminal's session
            // would never get the pty's: only Holon's stop can end it.
            "#!/bin/sh\ntrap '' HUP\nsleep 60 &\necho $! > '{}'\nwait\n",
            pidfile.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let editor = editor.display().to_string();
    let mut c = Console::start(home.path(), &[], 100, 30, &[("VISUAL", editor.as_str())]);
    c.wait_until("the status line", |s| s.contains("main ·"));
    c.type_text("a draft");
    c.wait_for("a draft");
    c.key(b"\x07");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let editor_pid = loop {
        let pid = std::fs::read_to_string(&pidfile).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<i32>() {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "the editor never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let holon = c.pid().expect("the console's pid") as i32;
    // SAFETY: kill(2) on the console this test started.
    assert_eq!(unsafe { libc::kill(holon, libc::SIGTERM) }, 0);
    // The editor would run 60 s: the console does not wait for it.
    let within = std::time::Duration::from_secs(20);
    c.wait_exit_within(within, "the console waited for its editor");
    // Gone, or a zombie nobody reaped yet (it was orphaned).
    let running = || {
        let stat = std::fs::read_to_string(format!("/proc/{editor_pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        !matches!(state, None | Some("Z") | Some("X"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!running(), "what the editor started was left running");
    let raw = c.raw_output();
    let left = b"\x1b[?1049l";
    assert!(
        raw.windows(left.len()).filter(|w| w == left).count() >= 2,
        "the alternate screen was left for the editor and again at the end"
    );
}
