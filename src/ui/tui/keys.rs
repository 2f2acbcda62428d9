//! Terminal input: keys (resolved through the key table), bracketed paste
//! and the mouse wheel. The top overlay gets keys first; otherwise the
//! composer. Ctrl+O arms the overlay prefix for exactly one key.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use super::commands;
use super::conversation::Scroll;
use super::keymap::{resolve, Action, KeyContext};
use super::msg::Effect;
use super::overlays::stack;
use super::scroll;
use super::state::{layout, State};
use crate::protocol::DisplayMode;

/// Lines one wheel notch scrolls.
const WHEEL_LINES: usize = 3;

/// A printable character typed without Ctrl/Alt.
fn typed_char(key: &KeyEvent) -> Option<char> {
    match key.code {
        KeyCode::Char(c)
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            Some(c)
        }
        _ => None,
    }
}

pub fn on_key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) {
    if key.kind == KeyEventKind::Release {
        return;
    }
    state.dirty = true;
    if std::mem::take(&mut state.prefix) {
        match resolve(&[KeyContext::Prefix], &key) {
            Some(Action::Open(kind)) => stack::open_kind(state, kind, fx),
            Some(Action::Runtimes) => super::runtimes::command(state, "", fx),
            Some(Action::CycleDisplay) => {
                let next = match state.mode {
                    DisplayMode::Info => DisplayMode::Verbose,
                    DisplayMode::Verbose => DisplayMode::Debug,
                    DisplayMode::Debug => DisplayMode::Info,
                };
                super::settings::set_display(state, next, fx);
            }
            _ => {}
        }
        return;
    }
    if !state.overlays.is_empty() {
        return overlay_key(state, key, fx);
    }
    if state.composer.search_query().is_some() && search_key(state, &key) {
        return;
    }
    if super::find::on_key(state, &key, fx) {
        return;
    }
    // Find: Ctrl+F on an empty composer (a read-only child's too).
    let ctrl_f = key.code == KeyCode::Char('f') && key.modifiers.contains(KeyModifiers::CONTROL);
    if state.composer.is_empty() && ctrl_f {
        return super::find::open(state);
    }
    let action = resolve(&state.composer_contexts(), &key);
    // "Always" changes the allow-list for good: it takes `a` twice.
    let armed = state.always_armed.take();
    let h = usize::from(layout(state).conversation.height);
    let ctx = state.scroll_ctx();
    let menu = state.composer.menu_open();
    match action {
        Some(Action::Quit) if !state.composer.is_empty() => state.composer.clear(),
        Some(Action::Quit) => super::quit::quit(state, fx),
        Some(Action::Prefix) => state.prefix = true,
        Some(Action::Cancel) if menu => state.composer.dismiss_menu(),
        // Scrolled back, Esc returns to the bottom: it never interrupts
        // a turn the operator is reading back through.
        Some(Action::Cancel) if state.conversation.scroll != Scroll::Follow => {
            state.conversation.scroll = Scroll::Follow
        }
        // Detaching waits for a running turn: Esc detaches now, never
        // interrupts the turn it waits for.
        Some(Action::Cancel) if state.detaching.waiting => super::detach::now(state, fx),
        Some(Action::Cancel) if state.conversation.turn.is_some() => {
            // Esc interrupts the running turn (nothing else is open).
            state.conversation.scroll = Scroll::Follow;
            commands::abort(state, fx);
        }
        Some(Action::Cancel) => state.conversation.scroll = Scroll::Follow,
        Some(Action::ScrollUp) => {
            scroll::up(&mut state.conversation, ctx, h.saturating_sub(2).max(1), h);
            super::pages::load_older(state, fx);
        }
        Some(Action::ScrollDown) => {
            scroll::down(&mut state.conversation, ctx, h.saturating_sub(2).max(1))
        }
        Some(Action::ScrollTop) => {
            scroll::top(&mut state.conversation, ctx, h);
            super::pages::load_older(state, fx);
        }
        Some(Action::ScrollBottom) => state.conversation.scroll = Scroll::Follow,
        Some(Action::HistoryPrev) if menu => state.composer.select(-1),
        Some(Action::HistoryNext) if menu => state.composer.select(1),
        Some(Action::Complete) => {
            state.composer.complete();
        }
        Some(Action::HistorySearch) => state.composer.search_older(),
        Some(Action::Find) => super::find::open(state),
        Some(Action::ExternalEditor) => fx.push(Effect::EditDraft {
            text: state.composer.expanded(),
        }),
        Some(Action::Open(kind)) => stack::open_kind(state, kind, fx),
        Some(Action::Approve) => commands::answer_oldest(state, false, fx),
        Some(Action::ApproveAlways) => {
            let oldest = state.composer.approvals.first().map(|(id, _)| id.clone());
            match (armed, oldest) {
                (Some(a), Some(o)) if a == o => commands::answer_oldest(state, true, fx),
                (_, oldest) => state.always_armed = oldest,
            }
        }
        Some(Action::Deny) => {
            if let Some((id, _)) = state.composer.approvals.first() {
                let text = format!("/deny {id} ");
                state.composer.insert(&text);
                state.composer.dismiss_menu();
            }
        }
        Some(Action::Submit) => {
            if menu && complete_before_submit(state) {
                return;
            }
            let text = state.composer.submit();
            if !text.trim().is_empty() {
                fx.push(Effect::RememberPrompt {
                    agent_id: state.agent_id.clone(),
                    text: text.clone(),
                });
            }
            commands::submit(state, &text, fx);
        }
        Some(a) if state.composer.edit(a) => {}
        Some(_) | None => {
            if let Some(c) = typed_char(&key) {
                state.composer.insert(c.encode_utf8(&mut [0; 4]));
            }
        }
    }
    refresh_mentions(state, fx);
}

/// Keep the `@` picker's candidates up to the text, asking for a walk of
/// the execution root's files the first time one is needed.
pub fn refresh_mentions(state: &mut State, fx: &mut Vec<Effect>) {
    let root = state
        .agent
        .execution
        .as_ref()
        .map(|x| x.execution_root.clone());
    let (text, cursor) = (state.composer.text().to_owned(), state.composer.cursor());
    if let Some(root) = state
        .composer
        .picker
        .refresh(&text, cursor, root.as_deref())
    {
        fx.push(Effect::IndexFiles { root });
    }
}

/// A key while the history search is open; false when it ends the
/// search and should then act as usual (an editing key).
fn search_key(state: &mut State, key: &KeyEvent) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let c = &mut state.composer;
    match key.code {
        KeyCode::Char('r') if ctrl => c.search_older(),
        KeyCode::Char('c') if ctrl => c.search_cancel(),
        KeyCode::Esc => c.search_cancel(),
        KeyCode::Enter => c.search_accept(),
        KeyCode::Backspace => c.search_edit(None),
        _ if typed_char(key).is_some() => c.search_edit(typed_char(key)),
        _ => {
            c.search_accept();
            return false;
        }
    }
    true
}

/// Enter with the menu open takes the selected command; it runs at once
/// unless it takes arguments (then the operator types them), when the
/// typed text begins it. A letters-in-order match (`/stp` finding
/// `/stop`) is completed instead and runs on the next Enter, once seen.
fn complete_before_submit(state: &mut State) -> bool {
    if state.composer.mentioning() {
        // Enter takes the file, as Tab does; the prompt is sent after.
        return state.composer.complete();
    }
    let candidates = state.composer.candidates();
    let Some(choice) = candidates.get(state.composer.selected) else {
        return false;
    };
    if choice.replacement.trim_end() == state.composer.text().trim_end() {
        return false;
    }
    // A letters-in-order match (`/evt`) is completed, never run unseen
    // (`/stp` must not stop the agent): the next Enter runs it.
    if !choice.replacement.starts_with(state.composer.text()) {
        return state.composer.complete();
    }
    state.composer.complete();
    state.composer.text().ends_with(' ')
}

/// What Enter does with the menu open, for the hint line: insert the
/// file, complete a letters-in-order match, or run the command.
pub(super) fn menu_enter_word(state: &State) -> &'static str {
    if state.composer.mentioning() {
        return "insert";
    }
    let candidates = state.composer.candidates();
    match candidates.get(state.composer.selected) {
        Some(c) if !c.replacement.starts_with(state.composer.text()) => "complete",
        _ => "run",
    }
}

fn overlay_key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) {
    let Some(top) = state.overlays.top() else {
        return;
    };
    let chain = top.contexts();
    let action = resolve(&chain, &key);
    if top.input().is_some() {
        match action {
            Some(Action::Confirm) => stack::with_top(state, fx, |o, ctx| o.confirm_input(ctx)),
            Some(Action::Cancel) | Some(Action::Quit) => {
                if let Some(o) = state.overlays.top_mut() {
                    o.cancel_input();
                }
            }
            Some(a) => {
                if let Some(input) = state.overlays.top_mut().and_then(|o| o.input_mut()) {
                    input.field.edit(a);
                }
            }
            None => {
                let input = state.overlays.top_mut().and_then(|o| o.input_mut());
                if let (Some(input), Some(c)) = (input, typed_char(&key)) {
                    input.field.insert(c.encode_utf8(&mut [0; 4]));
                }
            }
        }
        return;
    }
    match action {
        // Ctrl+C in an overlay closes it, never the console.
        Some(Action::Quit) | Some(Action::Cancel) => {
            state.overlays.close_top();
        }
        Some(Action::Prefix) => state.prefix = true,
        Some(a) => stack::with_top(state, fx, |o, ctx| o.on_action(a, ctx)),
        None => {}
    }
}

pub fn on_paste(state: &mut State, text: &str) {
    state.dirty = true;
    if let Some(top) = state.overlays.top_mut() {
        if let Some(input) = top.input_mut() {
            // One line: a pasted newline would confirm nothing.
            input.field.insert(&text.replace(['\r', '\n'], " "));
        }
        return;
    }
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    state.composer.paste(&text);
}

pub fn on_mouse(state: &mut State, m: MouseEvent, fx: &mut Vec<Effect>) {
    let up = match m.kind {
        MouseEventKind::ScrollUp => true,
        MouseEventKind::ScrollDown => false,
        // A drag selects nothing while the console takes the mouse (for
        // the wheel): say once how to select.
        MouseEventKind::Drag(_) if !state.told_mouse => {
            state.told_mouse = true;
            state.conversation.note(
                "The console takes the mouse for wheel scrolling, so a drag selects nothing: \
                 hold Shift while dragging to select (in most terminals), /mouse off, or /copy \
                 for the newest answer.",
                super::rows::Tone::Info,
            );
            state.dirty = true;
            return;
        }
        _ => return,
    };
    state.dirty = true;
    if !state.overlays.is_empty() {
        return stack::with_top(state, fx, |o, ctx| o.scroll(up, ctx));
    }
    let h = usize::from(layout(state).conversation.height);
    let ctx = state.scroll_ctx();
    match up {
        true => {
            scroll::up(&mut state.conversation, ctx, WHEEL_LINES, h);
            super::pages::load_older(state, fx);
        }
        false => scroll::down(&mut state.conversation, ctx, WHEEL_LINES),
    }
}
