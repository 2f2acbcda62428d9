//! Ctrl+G: the draft in the operator's own editor. The console steps
//! aside (its terminal input stream is dropped first, so no keystroke meant
//! for the editor is read by the console; raw mode, the alternate screen
//! and the other modes are switched off), the editor runs on a private
//! temporary file with the draft in it, and the console comes back with
//! what was saved. `$VISUAL`, else `$EDITOR`, run by the shell so that
//! `code --wait` works; neither set: `vi`.

use std::io::Write;

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

/// Run the editor on `draft` with the terminal handed over; the saved
/// text, or why there is none. Blocking: call off the async workers.
pub fn edit(screen: Screen, mouse: bool, draft: &str) -> Result<String, String> {
    use std::os::unix::fs::DirBuilderExt;
    // A directory of its own, readable by the operator alone, gone after.
    let dir = std::env::temp_dir().join(crate::new_id("holon-draft"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make a file for the editor: {e}"))?;
    let edited = edit_in(&dir, screen, mouse, draft);
    let _ = std::fs::remove_dir_all(&dir);
    edited
}

fn edit_in(
    dir: &std::path::Path,
    screen: Screen,
    mouse: bool,
    draft: &str,
) -> Result<String, String> {
    let path = dir.join("draft.md");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(draft.as_bytes()))
        .map_err(|e| format!("cannot write the draft for the editor: {e}"))?;
    let command = editor_command(
        std::env::var("VISUAL").ok().as_deref(),
        std::env::var("EDITOR").ok().as_deref(),
    );
    super::console::restore(screen);
    // Ctrl+C or Ctrl+\ typed into an editor that leaves the terminal in
    // cooked mode reach the whole foreground group: Holon ignores them
    // meanwhile, and the editor gets them as usual (their defaults put
    // back in its process, as system(3) does).
    use std::os::unix::process::CommandExt;
    let ignored = ignore_terminal_signals();
    let mut editor = std::process::Command::new("/bin/sh");
    editor
        .arg("-c")
        .arg(format!("{command} \"$1\""))
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
    let status = editor.status();
    restore_terminal_signals(ignored);
    let saved = match &status {
        Ok(s) if s.success() => Some(
            std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read what the editor saved: {e}")),
        ),
        _ => None,
    };
    if let Err(e) = super::console::modes_on(screen, mouse) {
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
    use super::editor_command;

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
