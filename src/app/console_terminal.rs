//! The console's hold on the terminal: raw mode, the alternate screen
//! (unless `--no-alt-screen`), bracketed paste, focus reports, the
//! keyboard enhancement and mouse capture, entered together and undone
//! together, on quit, from the panic hook, and around the external
//! editor.

use std::io::Write;

use crossterm::{execute, terminal};

/// Whether the alternate screen is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Alternate,
    /// Keep the terminal's normal scrollback.
    Inline,
}

/// Terminal setup that undoes itself, also from the panic hook.
pub(super) struct TerminalGuard {
    screen: Screen,
}

/// Whether the kitty keyboard protocol was switched on (and so must be
/// switched off again, also from the panic hook).
pub(super) static KEYBOARD_ENHANCED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

pub(super) fn restore(screen: Screen) {
    let mut out = std::io::stdout();
    if KEYBOARD_ENHANCED.swap(false, std::sync::atomic::Ordering::SeqCst) {
        let _ = execute!(out, crossterm::event::PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        crossterm::event::DisableBracketedPaste,
        crossterm::event::DisableFocusChange,
        crossterm::event::DisableMouseCapture,
        crossterm::cursor::Show
    );
    match screen {
        Screen::Alternate => {
            let _ = execute!(out, terminal::LeaveAlternateScreen);
        }
        Screen::Inline => {
            // The last frame stays on the screen (and in the scrollback);
            // the shell's prompt starts on a clean line below it.
            let rows = terminal::size().map(|(_, h)| h).unwrap_or(1);
            let _ = execute!(out, crossterm::cursor::MoveTo(0, rows.saturating_sub(1)));
            let _ = out.write_all(b"\r\n");
        }
    }
    if let Err(e) = terminal::disable_raw_mode() {
        tracing::error!(error = %e, "could not restore the terminal mode");
    }
    let _ = out.flush();
}

impl TerminalGuard {
    pub(super) fn enter(screen: Screen, mouse: bool) -> std::io::Result<TerminalGuard> {
        // Restore before the default hook prints, so a panic message lands
        // on a sane terminal; restore failures are logged, never re-panic.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore(screen);
            tracing::error!(panic = %info, "console panicked");
            previous(info);
        }));
        modes_on(screen, mouse)?;
        Ok(TerminalGuard { screen })
    }
}

/// Switch the console's terminal modes on (again, after an external
/// editor had the terminal).
pub(super) fn modes_on(screen: Screen, mouse: bool) -> std::io::Result<()> {
    {
        terminal::enable_raw_mode()?;
        let mut out = std::io::stdout();
        if screen == Screen::Alternate {
            execute!(out, terminal::EnterAlternateScreen)?;
        }
        execute!(out, crossterm::event::EnableBracketedPaste)?;
        // Focus reports tell `[console] notify = "unfocused"` when to ring.
        execute!(out, crossterm::event::EnableFocusChange)?;
        if mouse {
            execute!(out, crossterm::event::EnableMouseCapture)?;
        }
        // Where the terminal speaks the kitty keyboard protocol, Shift+Enter
        // is told apart from Enter (a newline, as in other tools); the
        // query is answered at once by real terminals.
        // Asked once: asked again after an editor, a stale wake-up of the
        // terminal reader can make the answer look like "no".
        static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if *SUPPORTED.get_or_init(|| terminal::supports_keyboard_enhancement().unwrap_or(false)) {
            let flags = crossterm::event::KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES;
            if execute!(out, crossterm::event::PushKeyboardEnhancementFlags(flags)).is_ok() {
                KEYBOARD_ENHANCED.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore(self.screen);
    }
}
