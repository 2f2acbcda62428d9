//! Ctrl+G: the draft in the operator's own editor. The console steps
//! aside (its terminal input stream is dropped first, so no keystroke meant
//! for the editor is read by the console; raw mode, the alternate screen
//! and the other modes are switched off), the editor runs on a private
//! temporary file with the draft in it, and the console comes back with
//! what was saved. `$VISUAL`, else `$EDITOR`, run by the shell so that
//! `code --wait` works; neither set: `vi`. The shell execs a plain editor
//! command, so the child Holon waits for is the editor itself: a SIGTERM
//! or SIGHUP to the console while it runs stops the editor (what it had
//! is lost) and the console then ends as it would have. What the editor
//! started (a wrapper script's editor, a compound command's) is stopped
//! with it, each only while it is still the same process. The
//! terminal's settings are put back as they were before the editor, so
//! one killed or crashed in its raw mode leaves none behind.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::console::Screen;

/// The editor command: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn editor_command(visual: Option<&str>, editor: Option<&str>) -> String {
    [visual, editor]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|e| !e.is_empty())
        .unwrap_or("vi")
        .to_owned()
}

/// The shell line that runs `command` on the file in `$1`: exec'd, so
/// the child is the editor, unless the command is more than a program
/// and its arguments (an assignment, a list, a pipe, a redirection).
pub fn shell_line(command: &str) -> String {
    let first = command.split_whitespace().next().unwrap_or_default();
    let compound = first.contains('=')
        || matches!(first, "exec" | "command" | "builtin")
        || command.contains([';', '&', '|', '(', ')', '<', '>', '\n', '`']);
    match compound {
        true => format!("{command} \"$1\""),
        false => format!("exec {command} \"$1\""),
    }
}

/// Run the editor on `draft` with the terminal handed over; the saved
/// text, or why there is none. Blocking: call off the async workers. Once
/// `stop` is set the editor is asked to end (SIGTERM, then SIGKILL after
/// two seconds).
pub fn edit(screen: Screen, mouse: bool, draft: &str, stop: &AtomicBool) -> Result<String, String> {
    use std::os::unix::fs::DirBuilderExt;
    // A directory of its own, readable by the operator alone, gone after.
    let dir = std::env::temp_dir().join(crate::new_id("holon-draft"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make a file for the editor: {e}"))?;
    let edited = edit_in(&dir, screen, mouse, draft, stop);
    let _ = std::fs::remove_dir_all(&dir);
    edited
}

fn edit_in(
    dir: &std::path::Path,
    screen: Screen,
    mouse: bool,
    draft: &str,
    stop: &AtomicBool,
) -> Result<String, String> {
    let path = dir.join("draft.md");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(draft.as_bytes()))
        .map_err(|e| format!("cannot write the draft for the editor: {e}"))?;
    let command = editor_command(
        std::env::var("VISUAL").ok().as_deref(),
        std::env::var("EDITOR").ok().as_deref(),
    );
    super::console_terminal::restore(screen);
    // Ctrl+C or Ctrl+\ typed into an editor that leaves the terminal in
    // cooked mode reach the whole foreground group: Holon ignores them
    // meanwhile, and the editor gets them as usual (their defaults put
    // back in its process, as system(3) does).
    use std::os::unix::process::CommandExt;
    let ignored = ignore_terminal_signals();
    let mut editor = std::process::Command::new("/bin/sh");
    editor
        .arg("-c")
        .arg(shell_line(&command))
        .arg("holon-editor")
        .arg(&path);
    // SAFETY: only signal(2), async-signal-safe, between fork and exec.
    unsafe {
        editor.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    let before = Termios::now();
    let status = editor.spawn().and_then(|child| wait(child, stop));
    restore_terminal_signals(ignored);
    if let Some(t) = &before {
        t.put_back();
    }
    if stop.load(Ordering::SeqCst) {
        // The console ends: its terminal stays as the editor left it, put
        // back to the operator's settings.
        return Err("the editor was stopped: the console is ending".to_owned());
    }
    let saved = match &status {
        Ok(s) if s.success() => Some(
            std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read what the editor saved: {e}")),
        ),
        _ => None,
    };
    if let Err(e) = super::console_terminal::modes_on(screen, mouse) {
        return Err(format!("the terminal could not be taken back: {e}"));
    }
    match (status, saved) {
        (_, Some(saved)) => saved,
        (Ok(s), _) if s.code() == Some(127) => Err(format!(
            "the editor `{command}` was not found; set $VISUAL or $EDITOR"
        )),
        (Ok(s), _) if s.code() == Some(126) => Err(format!(
            "the editor `{command}` cannot be run; set $VISUAL or $EDITOR"
        )),
        (Ok(s), _) => Err(format!(
            "the editor (`{command}`) ended with {s}; the draft is as it was"
        )),
        (Err(e), _) => Err(format!("the editor (`{command}`) could not start: {e}")),
    }
}

/// Wait for the editor; once `stop` is set, ask it to end. The child is
/// signalled only before it has been waited for, so its pid is still its
/// own.
fn wait(
    mut child: std::process::Child,
    stop: &AtomicBool,
) -> std::io::Result<std::process::ExitStatus> {
    let mut asked: Option<Instant> = None;
    let mut descendants = Vec::new();
    loop {
        if let Some(status) = child.try_wait()? {
            // A wrapper that ended on the signal leaves what it started:
            // it gets the rest of the two seconds, then SIGKILL.
            if let Some(at) = asked {
                stop_rest(&descendants, at);
            }
            return Ok(status);
        }
        match asked {
            None if stop.load(Ordering::SeqCst) => {
                if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                    // What the editor started (a wrapper script's editor)
                    // first, each only while it is still the same process.
                    descendants = descendants_of(pid);
                    for d in &descendants {
                        d.signal(libc::SIGTERM);
                    }
                    // SAFETY: kill(2) on our own child, not yet reaped.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                }
                asked = Some(Instant::now());
            }
            Some(at) if at.elapsed() > Duration::from_secs(2) => {
                for d in &descendants {
                    d.signal(libc::SIGKILL);
                }
                let _ = child.kill();
                return child.wait();
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processes `pid` started, and theirs (from `/proc`), each with its
/// identity read now; children before their parents' siblings.
fn descendants_of(pid: i32) -> Vec<crate::model::process::ProcessIdentity> {
    use crate::model::process::ProcessIdentity;
    let mut found = Vec::new();
    let mut next = vec![pid];
    while let Some(p) = next.pop() {
        // Bounded: an editor does not start thousands of processes.
        if found.len() >= 256 {
            break;
        }
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten();
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for c in children
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if let Some(id) = ProcessIdentity::of(c) {
                    found.push(id);
                    next.push(c);
                }
            }
        }
    }
    found
}

/// Wait for `descendants` to end until two seconds after `asked`, then
/// SIGKILL those still running (the same processes only).
fn stop_rest(descendants: &[crate::model::process::ProcessIdentity], asked: Instant) {
    use crate::runtime::process_identity::Liveness;
    let running = || {
        descendants
            .iter()
            .any(|d| d.liveness() == Liveness::Running)
    };
    while running() && asked.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for d in descendants {
        d.signal(libc::SIGKILL);
    }
}

/// The terminal's settings at one moment (`/dev/tty`'s).
struct Termios {
    tty: std::fs::File,
    settings: libc::termios,
}

impl Termios {
    fn now() -> Option<Termios> {
        use std::os::fd::AsRawFd;
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let mut settings = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: tcgetattr fills `settings` on success, checked.
        let read = unsafe { libc::tcgetattr(tty.as_raw_fd(), settings.as_mut_ptr()) };
        if read != 0 {
            return None;
        }
        // SAFETY: initialised by the successful tcgetattr above.
        let settings = unsafe { settings.assume_init() };
        Some(Termios { tty, settings })
    }

    fn put_back(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: tcsetattr with settings tcgetattr gave for this tty.
        unsafe { libc::tcsetattr(self.tty.as_raw_fd(), libc::TCSANOW, &self.settings) };
    }
}

/// SIGINT and SIGQUIT ignored; their previous dispositions.
fn ignore_terminal_signals() -> [libc::sighandler_t; 2] {
    // SAFETY: plain signal(2) calls; the previous dispositions are put
    // back by `restore_terminal_signals`.
    unsafe {
        [
            libc::signal(libc::SIGINT, libc::SIG_IGN),
            libc::signal(libc::SIGQUIT, libc::SIG_IGN),
        ]
    }
}

fn restore_terminal_signals(previous: [libc::sighandler_t; 2]) {
    // SAFETY: as above, restoring what was there.
    unsafe {
        libc::signal(libc::SIGINT, previous[0]);
        libc::signal(libc::SIGQUIT, previous[1]);
    }
}

#[cfg(test)]
mod tests {
    use super::{editor_command, shell_line};

    #[test]
    fn a_plain_editor_is_execd_and_a_compound_one_is_not() {
        assert_eq!(shell_line("code --wait"), "exec code --wait \"$1\"");
        assert_eq!(
            shell_line("vim -c 'set tw=72'"),
            "exec vim -c 'set tw=72' \"$1\""
        );
        assert_eq!(shell_line("TERM=xterm vim"), "TERM=xterm vim \"$1\"");
        assert_eq!(shell_line("cd /tmp && vi"), "cd /tmp && vi \"$1\"");
        assert_eq!(shell_line("exec vim"), "exec vim \"$1\"");
        assert_eq!(shell_line("command vim"), "command vim \"$1\"");
    }

    #[test]
    fn visual_then_editor_then_vi() {
        assert_eq!(
            editor_command(Some("code --wait"), Some("nano")),
            "code --wait"
        );
        assert_eq!(editor_command(Some(" "), Some("nano")), "nano");
        assert_eq!(editor_command(None, None), "vi");
    }
}
