//! The overlay stack: the open overlays, bottom to top, and the one way
//! the core reaches them. Keys, pastes, the wheel and ticks go to the top
//! overlay; an answer goes to the topmost overlay of the kind that asked;
//! live events reach every open overlay. Whatever an overlay asks for
//! while it handles one of these (requests, closing itself, opening
//! another, viewing another agent) is performed here, after it returns.

use super::{open, Ctx, Intent, Overlay};
use crate::protocol::EventRecord;
use crate::ui::tui::commands;
use crate::ui::tui::keymap::OverlayKind;
use crate::ui::tui::msg::Effect;
use crate::ui::tui::state::{layout, Pending, State};

/// The open overlays, bottom to top.
#[derive(Default)]
pub struct OverlayStack {
    open: Vec<Overlay>,
}

impl OverlayStack {
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// The kinds open, bottom to top.
    pub fn kinds(&self) -> Vec<OverlayKind> {
        self.open.iter().map(|o| o.kind()).collect()
    }

    /// The overlay keys go to (the one drawn).
    pub fn top(&self) -> Option<&Overlay> {
        self.open.last()
    }

    pub fn top_mut(&mut self) -> Option<&mut Overlay> {
        self.open.last_mut()
    }

    /// Put `overlay` on top.
    pub fn push(&mut self, overlay: Overlay) {
        self.open.push(overlay);
    }

    /// Close the top overlay (the one below, if any, shows again).
    pub fn close_top(&mut self) {
        self.open.pop();
    }

    /// Close every overlay (another agent is shown).
    pub fn close_all(&mut self) {
        self.open.clear();
    }

    /// A live event reaches every open overlay.
    pub fn on_event(&mut self, e: &EventRecord) {
        for o in &mut self.open {
            o.on_event(e);
        }
    }

    fn topmost(&self, kind: OverlayKind) -> Option<usize> {
        self.open.iter().rposition(|o| o.kind() == kind)
    }
}

/// Open the overlay of `kind` on top (one of the same kind already on
/// top is kept).
pub fn open_kind(state: &mut State, kind: OverlayKind, fx: &mut Vec<Effect>) {
    if state.overlays.top().is_some_and(|o| o.kind() == kind) {
        return;
    }
    if kind == OverlayKind::Agents {
        // With the other runtimes' agents, from the last glance.
        let elsewhere = state.runtimes.agents_of_others();
        return open_with(state, fx, |ctx| {
            Box::new(super::agents::Agents::open(ctx, elsewhere))
        });
    }
    if kind == OverlayKind::Approvals {
        // With the calls waiting on the other runtimes, from the last glance.
        let elsewhere = state.runtimes.asked_by_others();
        return open_with(state, fx, |ctx| {
            Box::new(super::approvals::Approvals::open(ctx, elsewhere))
        });
    }
    open_with(state, fx, |ctx| open(kind, ctx));
}

/// Push the overlay `make` builds (it may ask for requests).
pub fn open_with(
    state: &mut State,
    fx: &mut Vec<Effect>,
    make: impl FnOnce(&mut Ctx<'_>) -> Overlay,
) {
    let mut overlay = None;
    let intents = with_ctx(state, fx, |_, ctx| overlay = Some(make(ctx)));
    if let Some(o) = overlay {
        state.overlays.push(o);
    }
    perform(state, intents, fx);
    state.dirty = true;
}

/// Run `f` on the top overlay, then perform what it asked.
pub fn with_top(
    state: &mut State,
    fx: &mut Vec<Effect>,
    f: impl FnOnce(&mut Overlay, &mut Ctx<'_>),
) {
    if let Some(i) = state.overlays.open.len().checked_sub(1) {
        let intents = with_ctx(state, fx, |open, ctx| f(&mut open[i], ctx));
        perform(state, intents, fx);
    }
}

/// Run `f` on the topmost overlay of `kind` (answers go to their asker),
/// then perform what it asked.
pub fn with_kind(
    state: &mut State,
    fx: &mut Vec<Effect>,
    kind: OverlayKind,
    f: impl FnOnce(&mut Overlay, &mut Ctx<'_>),
) {
    if let Some(i) = state.overlays.topmost(kind) {
        let intents = with_ctx(state, fx, |open, ctx| f(&mut open[i], ctx));
        perform(state, intents, fx);
    }
}

/// Run `f` with the open overlays and a context over the viewed agent,
/// send the requests it made (answers are routed back to the overlay
/// that asked), and return what else it asked for.
fn with_ctx(
    state: &mut State,
    fx: &mut Vec<Effect>,
    f: impl FnOnce(&mut Vec<Overlay>, &mut Ctx<'_>),
) -> Vec<Intent> {
    let page = usize::from(layout(state).overlay.height.saturating_sub(4)).max(1);
    let last_seq = state.last_seq();
    let (calls, intents) = {
        let State {
            overlays,
            agent,
            agent_id,
            next_id,
            now_ms,
            ..
        } = state;
        let mut ctx = Ctx::new(agent_id, agent, last_seq, *now_ms, page, next_id);
        f(&mut overlays.open, &mut ctx);
        (ctx.calls, ctx.intents)
    };
    for (id, request, kind) in calls {
        let pending = (state.agent_id.clone(), Pending::Overlay(kind));
        state.pending.insert(id, pending);
        fx.push(Effect::Call { id, request });
    }
    intents
}

/// Perform what an overlay asked for besides requests.
fn perform(state: &mut State, intents: Vec<Intent>, fx: &mut Vec<Effect>) {
    for intent in intents {
        match intent {
            Intent::Close => state.overlays.close_top(),
            Intent::Push(o) => state.overlays.push(o),
            Intent::ViewAgent(id) => commands::view_agent(state, &id, fx),
            Intent::SwitchRuntime { name, agent } => {
                state.overlays.close_top();
                crate::ui::tui::runtimes::command(state, &format!("{name} {agent}"), fx);
            }
            Intent::AnswerOn { runtime, request } => {
                let pending = crate::ui::tui::state::Pending::AnswerOn(runtime.clone());
                fx.push(crate::ui::tui::update::call_on(
                    state, runtime, request, pending,
                ));
            }
        }
    }
}
