//! The runtimes one console shows, like k9s contexts: this machine's and
//! each `[remotes.NAME]`. `/runtime` (or Ctrl+O m) lists them at a glance
//! (reachable, agents, what needs you, today's spend); `/runtime NAME
//! [AGENT]` switches the console to one (and to one of its agents). While remotes are configured they are
//! glanced every so often, and one that comes to need the operator is
//! said where the eye is, naming it. Pure: the loop asks and connects.

use super::msg::Effect;
use super::rows::Tone;
use super::state::State;
use crate::model::approval::ApprovalRecord;
use crate::protocol::{ApiError, Response};
use crate::ui::present::runtimes::{line, Seen};

/// One runtime the console can show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub name: String,
    /// Where it is (`ssh://…`, `wss://…`, a socket path), for the list.
    pub at: String,
}

/// What one runtime said at a glance.
#[derive(Debug, Clone, PartialEq)]
pub struct Glance {
    pub name: String,
    pub seen: Result<Seen, String>,
}

/// The runtimes, the one shown, and what the others last said.
#[derive(Debug, Clone, Default)]
pub struct Runtimes {
    pub places: Vec<Place>,
    /// The one shown (empty before the loop says: this machine's).
    pub current: String,
    /// What needs the operator elsewhere: (name, count), from the last
    /// glance; a count that grows is said once.
    pub elsewhere: Vec<(String, u64)>,
    /// The operator asked for the list: the next glance is shown.
    pub asked: bool,
    /// A switch is under way (to this name).
    pub switching: Option<String>,
    /// The runtime this console runs in its own process, when it does:
    /// quitting or detaching is about that one, so it is done from there.
    pub embedded: Option<String>,
    /// The agent shown there when the console left it (shown again on
    /// the way back: another runtime's agent may not exist there).
    pub home_agent: Option<String>,
    /// Said once the switch under way is shown (the view starts anew).
    pub then_say: Option<String>,
    /// What needed the operator on the runtime shown, at the last glance:
    /// carried into `elsewhere` when the console leaves it, so leaving it
    /// is not news.
    pub here_need: u64,
    /// Going back to the runtime this console runs failed (its agent is
    /// gone there, say): the next /quit or /detach acts from here.
    pub home_failed: bool,
    /// What each runtime said at the last glance (the agents overlay
    /// shows the others' agents under their runtime's name).
    pub last: Vec<Glance>,
}

/// Why the console cannot switch now: a quit or a detach is under way (it
/// is about the runtime shown), or a prompt is still being sent (its
/// answer would be lost with the view).
fn busy(state: &State) -> Option<&'static str> {
    use super::state::Pending;
    let d = &state.detaching;
    if d.waiting || d.checking || d.asked_ms.is_some() {
        return Some("a detach is under way");
    }
    if state.quit_checking || state.quit_asked || state.quit_after_abort {
        return Some("a quit is under way (Esc or a key cancels it)");
    }
    if state
        .pending
        .values()
        .any(|(_, p)| matches!(p, Pending::Prompt))
    {
        return Some("a prompt is still being sent; switch once it is admitted");
    }
    None
}

impl Runtimes {
    /// More than this machine's: worth naming in the status line.
    pub fn several(&self) -> bool {
        self.places.len() > 1
    }

    /// What waits for the operator on runtimes not shown, in all.
    pub fn waiting_elsewhere(&self) -> u64 {
        self.elsewhere.iter().map(|(_, n)| n).sum()
    }

    /// The calls waiting on runtimes not shown, at the last glance:
    /// (runtime, call), oldest first per runtime.
    pub fn asked_by_others(&self) -> Vec<(String, ApprovalRecord)> {
        let mut out = Vec::new();
        for g in self.last.iter().filter(|g| g.name != self.current) {
            if let Ok(seen) = &g.seen {
                out.extend(seen.asked.iter().rev().map(|a| (g.name.clone(), a.clone())));
            }
        }
        out
    }

    /// The agents of the runtimes not shown, at the last glance:
    /// (runtime, agent, posture).
    pub fn agents_of_others(
        &self,
    ) -> Vec<(
        String,
        String,
        crate::model::decision::AgentSchedulingPosture,
    )> {
        let mut out = Vec::new();
        for g in self.last.iter().filter(|g| g.name != self.current) {
            if let Ok(seen) = &g.seen {
                let listed = seen.listed.iter();
                out.extend(listed.map(|(a, p)| (g.name.clone(), a.clone(), *p)));
            }
        }
        out
    }

    /// Whether the runtime shown listed the call `id` at the last glance.
    pub fn asked_here(&self, id: &str) -> bool {
        let here = self.last.iter().filter(|g| g.name == self.current);
        here.filter_map(|g| g.seen.as_ref().ok())
            .any(|seen| seen.asked.iter().any(|a| a.id == id))
    }

    /// The runtime not shown where the call `id` waits, with the call.
    pub fn asked_elsewhere(&self, id: &str) -> Option<(String, ApprovalRecord)> {
        self.asked_by_others().into_iter().find(|(_, a)| a.id == id)
    }
}

/// The answer to a call waiting on `runtime`: said, and the call no
/// longer offered (the next glance says what waits there now).
pub fn answered(state: &mut State, runtime: &str, result: Result<Response, ApiError>) {
    state.dirty = true;
    match result.and_then(Response::take::<ApprovalRecord>) {
        Ok(a) => {
            for g in state.runtimes.last.iter_mut().filter(|g| g.name == runtime) {
                if let Ok(seen) = &mut g.seen {
                    seen.asked.retain(|x| x.id != a.id);
                }
            }
            let text = format!(
                "On {runtime}: {}",
                crate::ui::present::approvals::answered(&a)
            );
            state.conversation.note(text, Tone::Ok);
        }
        Err(e) => {
            let text = format!("On {runtime}: {}", e.message);
            state.conversation.note(text, Tone::Error);
        }
    }
}

/// `/runtime [NAME [AGENT]]`.
pub fn command(state: &mut State, arg: &str, fx: &mut Vec<Effect>) {
    let (arg, agent) = match arg.split_once(char::is_whitespace) {
        Some((name, agent)) => (name, Some(agent.trim()).filter(|a| !a.is_empty())),
        None => (arg, None),
    };
    let r = &mut state.runtimes;
    if !r.several() {
        let hint = "Only this machine's runtime: name others with `holon remotes add NAME \
                    ssh://HOST` (or wss://), then /runtime lists and switches.";
        return state.conversation.note(hint, Tone::Info);
    }
    if arg.is_empty() {
        r.asked = true;
        state.conversation.note("Asking every runtime…", Tone::Info);
        return fx.push(Effect::GlanceRuntimes);
    }
    if let Some(to) = &r.switching {
        let note = format!("A switch to {to} is under way; wait for it.");
        return state.conversation.note(note, Tone::Info);
    }
    if let Some(why) = busy(state) {
        let note = format!("Not switching now: {why}.");
        return state.conversation.note(note, Tone::Info);
    }
    let r = &mut state.runtimes;
    if arg == r.current {
        let note = match agent {
            Some(a) => format!("Already on {arg}: /agent switch {a} shows that agent."),
            None => format!("Already showing {arg}."),
        };
        return state.conversation.note(note, Tone::Info);
    }
    let Some(place) = r.places.iter().find(|p| p.name == arg).cloned() else {
        let names: Vec<&str> = r.places.iter().map(|p| p.name.as_str()).collect();
        let hint = format!("No runtime `{arg}`: {}.", names.join(", "));
        return state.conversation.note(hint, Tone::Error);
    };
    r.switching = Some(place.name.clone());
    let note = format!("Switching to {} ({})…", place.name, place.at);
    state.conversation.note(note, Tone::Info);
    let agent_id = match agent {
        Some(a) => a.to_owned(),
        None => agent_there(state, &place.name),
    };
    fx.push(Effect::SwitchRuntime {
        name: place.name,
        agent_id,
    });
}

/// The agent to show on runtime `name`: the one shown now, or, going back
/// to the runtime this console runs, the one shown there before.
fn agent_there(state: &State, name: &str) -> String {
    let r = &state.runtimes;
    match (&r.embedded, &r.home_agent) {
        (Some(home), Some(agent)) if home == name => agent.clone(),
        _ => state.agent_id.clone(),
    }
}

/// Quitting or detaching while another runtime is shown than the one this
/// console runs: that one is what quits or detaches, so the console goes
/// back to it first and says so (`true`: it did, and the caller stops).
pub fn home_first(state: &mut State, command: &str, fx: &mut Vec<Effect>) -> bool {
    let r = &state.runtimes;
    if let Some(to) = r.switching.clone() {
        // Whatever it acts on would change under it.
        let note = format!("A switch to {to} is under way: {command} once it lands.");
        state.conversation.note(note, Tone::Info);
        return true;
    }
    let Some(home) = r.embedded.clone().filter(|h| *h != r.current) else {
        return false;
    };
    if std::mem::take(&mut state.runtimes.home_failed) {
        // Going back failed: act from here (the runtime's turns replay at
        // its next start; nothing admitted is lost).
        return false;
    }
    {
        let note = format!(
            "This console runs the {home} runtime, which {command} acts on: going back to it \
             first; {command} again there."
        );
        state.conversation.note(note, Tone::Info);
        state.runtimes.then_say = Some(format!(
            "Back on {home}, the runtime this console runs: {command} again to go on."
        ));
        state.runtimes.switching = Some(home.clone());
        let agent_id = agent_there(state, &home);
        fx.push(Effect::SwitchRuntime {
            name: home,
            agent_id,
        });
    }
    true
}

/// Every runtime answered (or not): keep what needs the operator
/// elsewhere, say a count that grew (naming where), and show the list
/// when it was asked for.
pub fn seen(state: &mut State, glances: Vec<Glance>, fx: &mut Vec<Effect>) {
    let r = &mut state.runtimes;
    let before = std::mem::take(&mut r.elsewhere);
    let mut grew = Vec::new();
    for g in &glances {
        let need = g.seen.as_ref().map(Seen::need_you).unwrap_or(0);
        if g.name == r.current {
            r.here_need = need;
            continue;
        }
        if need == 0 {
            continue;
        }
        let had = before
            .iter()
            .find(|(n, _)| *n == g.name)
            .map_or(0, |(_, c)| *c);
        if need > had {
            grew.push(format!("{} ({need})", g.name));
        }
        r.elsewhere.push((g.name.clone(), need));
    }
    if std::mem::take(&mut r.asked) {
        let mut text = String::from("Runtimes (/runtime NAME switches):");
        for g in &glances {
            let at = r
                .places
                .iter()
                .find(|p| p.name == g.name)
                .map_or("", |p| p.at.as_str());
            let mark = if g.name == r.current { "*" } else { " " };
            text.push_str(&format!("\n{mark} {}", line(&g.name, at, &g.seen)));
        }
        state.conversation.note(text, Tone::Info);
    }
    r.last = glances.clone();
    if !grew.is_empty() {
        let text = format!(
            "Needs you on another runtime: {} (/runtime NAME to go there).",
            grew.join(", ")
        );
        // Each call waiting there, with the words that answer it from here.
        let mut said = text.clone();
        // Each field on one line of its own making: a summary cannot
        // draw a line that looks like another call's.
        use super::wrap::truncate;
        for (name, a) in state.runtimes.asked_by_others() {
            said.push_str(&format!(
                "\n  {name} · {} asks to run {} {}: /approve {id} or /deny {id}",
                truncate(&a.agent_id, 40),
                truncate(&a.tool_name, 40),
                truncate(&a.summary, 100),
                id = truncate(&a.id, 64)
            ));
        }
        state.conversation.note(said, Tone::Error);
        super::update::notify(state, text, fx);
    }
    state.dirty = true;
}

/// The loop put the new runtime's client in place: show its agent anew.
pub fn switched(
    state: &mut State,
    name: String,
    agent_id: String,
    took_ms: u64,
    embedded: bool,
    fx: &mut Vec<Effect>,
) {
    state.runtimes.switching = None;
    if state.runtimes.embedded.as_ref() == Some(&state.runtimes.current) {
        state.runtimes.home_agent = Some(state.agent_id.clone());
    }
    let left = std::mem::take(&mut state.runtimes.current);
    let need = std::mem::take(&mut state.runtimes.here_need);
    if need > 0 && !left.is_empty() {
        state.runtimes.elsewhere.push((left, need));
    }
    state.connection = match embedded {
        true => super::msg::Connection::Embedded,
        false => super::msg::Connection::Streaming,
    };
    state.said_unreachable = None;
    state.runtimes.elsewhere.retain(|(n, _)| *n != name);
    state.runtimes.current = name.clone();
    super::commands::view_agent(state, &agent_id, fx);
    let at = state
        .runtimes
        .places
        .iter()
        .find(|p| p.name == name)
        .map_or(String::new(), |p| format!(" ({})", p.at));
    let note = format!("Now showing {name}{at}, switched in {took_ms} ms.");
    state.conversation.note(note, Tone::Info);
    if let Some(then) = state.runtimes.then_say.take() {
        state.conversation.note(then, Tone::Info);
    }
}

/// Switching failed: say why; the view stays where it was.
pub fn failed(state: &mut State, name: &str, reason: &str) {
    state.runtimes.switching = None;
    if state.runtimes.then_say.take().is_some() {
        // It was the way back home for a /quit or /detach: the next one
        // acts from here.
        state.runtimes.home_failed = true;
        let note = format!(
            "Could not go back to {name}: {reason}. /quit or /detach again acts from here \
             (its turns run again at its next start; nothing admitted is lost)."
        );
        return state.conversation.note(note, Tone::Error);
    }
    let note = format!("Could not switch to {name}: {reason}");
    state.conversation.note(note, Tone::Error);
}
