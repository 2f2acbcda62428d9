//! `/display` and `/model`: what the conversation shows and which model
//! (and reasoning effort) the agent's turns use, kept per agent through
//! `agent.display` and `agent.model`.

use super::msg::Effect;
use super::rows::Tone;
use super::state::{Pending, State};
use super::update::call;
use crate::protocol::DisplayMode;
use crate::protocol::Request;

pub(super) fn display(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    if arg.is_empty() {
        let hint = format!(
            "Display mode: {} ({}). /display info|verbose|debug (or 3|4|5) changes it.",
            state.mode,
            state.mode.level()
        );
        return state.conversation.note(hint, Tone::Info);
    }
    match DisplayMode::parse(arg) {
        Some(mode) => set_display(state, mode, fx),
        None => {
            let hint =
                format!("/display: unknown mode `{arg}`. Use info, verbose, debug (or 3, 4, 5).");
            state.conversation.note(hint, Tone::Error);
        }
    }
}

/// Switch the display mode now and persist it for the agent.
pub(super) fn set_display(state: &mut State, mode: DisplayMode, fx: &mut Vec<Effect>) {
    state.mode = mode;
    state.conversation.scroll = super::conversation::Scroll::Follow;
    state.dirty = true;
    let request = Request::AgentDisplay {
        agent_id: state.agent_id.clone(),
        mode,
    };
    fx.push(call(state, request, Pending::Display));
}

/// `/model [PROVIDER/MODEL|default] [minimal|low|medium|high|auto]`.
pub(super) fn model(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    use crate::model::usage::EffortChoice;
    let words: Vec<&str> = arg.split_whitespace().collect();
    let effort_of = |w: &str| match w {
        "auto" => Some(EffortChoice::Default),
        "default" => None,
        other => EffortChoice::parse(other),
    };
    let own_model = state
        .agent
        .summary
        .as_ref()
        .and_then(|s| s.model_override.clone());
    let (model, effort) = match words.as_slice() {
        [] => {
            let now = state
                .agent
                .model
                .clone()
                .unwrap_or_else(|| "none configured".into());
            let effort = state
                .agent
                .summary
                .as_ref()
                .and_then(|s| s.reasoning_effort)
                .map_or(String::new(), |e| {
                    format!(", reasoning effort {}", e.as_str())
                });
            let hint = format!(
                "Model: {now}{effort}. /model PROVIDER/MODEL [minimal|low|medium|high|auto] \
                 sets them, /model default clears the model."
            );
            return state.conversation.note(hint, Tone::Info);
        }
        [m] if effort_of(m).is_some() => (own_model, effort_of(m)),
        ["default" | "-"] => (None, None),
        [m] => (Some((*m).to_owned()), None),
        // As the second word, `default` is the configured effort.
        [m, e] => match effort_of(e).or((*e == "default").then_some(EffortChoice::Default)) {
            Some(e) => (
                match *m {
                    "default" | "-" => None,
                    m => Some(m.to_owned()),
                },
                Some(e),
            ),
            None => {
                let hint = format!(
                    "/model: unknown reasoning effort `{e}`. Use minimal, low, medium, high or auto."
                );
                return state.conversation.note(hint, Tone::Error);
            }
        },
        _ => {
            let hint = "/model takes a model and an effort at most.".to_owned();
            return state.conversation.note(hint, Tone::Error);
        }
    };
    let request = Request::AgentModel {
        agent_id: state.agent_id.clone(),
        model,
        reasoning_effort: effort,
    };
    fx.push(call(state, request, Pending::Model));
}
