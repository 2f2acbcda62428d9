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
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{command} \"$1\""))
        .arg("holon-editor")
        .arg(&path)
        .status();
    let back = super::console::modes_on(screen, mouse);
    if let Err(e) = back {
        return Err(format!("the terminal could not be taken back: {e}"));
    }
    match status {
        Ok(s) if s.success() => std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read what the editor saved: {e}")),
        Ok(s) => Err(format!(
            "the editor (`{command}`) ended with {s}; the draft is as it was"
        )),
        Err(e) => Err(format!(
            "the editor (`{command}`) could not start: {e}; set $VISUAL or $EDITOR"
        )),
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
