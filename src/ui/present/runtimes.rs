//! Runtimes at a glance: one line each for `holon status --all` and the
//! console's runtime switcher — reachable or not, its agents, how many
//! need the operator, and what they spent today.

use crate::protocol::RuntimeStatus;

/// What one runtime's status says at a glance.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Seen {
    pub version: String,
    pub agents: u64,
    /// Agents inside a model turn now.
    pub running: u64,
    /// Tool calls waiting for an operator's answer.
    pub approvals: u64,
    /// Agents waiting for the operator (a question, a brief to read).
    pub waiting_for_you: u64,
    /// Today's spend of its listed agents, in US dollars.
    pub spent_today_usd: f64,
    /// Its listed agents (at most 50, the busiest first): id and posture.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<(String, crate::model::decision::AgentSchedulingPosture)>,
    /// The calls waiting there for an operator's answer (newest first,
    /// at most `ASKED_SHOWN`), asked for when there are any: the console
    /// answers them from afar. Not printed (`status --all --json`): their
    /// arguments are whole commands and patches.
    #[serde(skip)]
    pub asked: Vec<crate::model::approval::ApprovalRecord>,
}

/// The waiting calls a glance keeps of one runtime.
pub const ASKED_SHOWN: usize = 20;

impl Seen {
    pub fn of(status: &RuntimeStatus) -> Seen {
        let waiting_for_you = status
            .agents
            .iter()
            .filter(|a| {
                a.posture == crate::model::decision::AgentSchedulingPosture::WaitingForOperator
            })
            .count() as u64;
        let spent_today_usd = status
            .agents
            .iter()
            .filter_map(|a| a.usage.as_ref())
            .map(|u| u.today.cost_usd)
            .fold(0.0, |a, b| a + b);
        Seen {
            version: status.version.clone(),
            agents: status.agent_count.max(status.agents.len() as u64),
            running: status.activity.running_turn_count,
            approvals: status.pending_approvals,
            waiting_for_you,
            spent_today_usd,
            listed: status
                .agents
                .iter()
                .map(|a| (a.id.clone(), a.posture))
                .collect(),
            asked: Vec::new(),
        }
    }

    /// How many things wait for the operator there.
    pub fn need_you(&self) -> u64 {
        self.approvals + self.waiting_for_you
    }

    /// `3 agents (1 running) · 2 need you · $0.42 today`.
    pub fn describe(&self) -> String {
        let agents = match self.agents {
            1 => "1 agent".to_owned(),
            n => format!("{n} agents"),
        };
        let running = match self.running {
            0 => String::new(),
            n => format!(" ({n} running)"),
        };
        let need = match self.need_you() {
            0 => String::new(),
            n => format!(" · {n} need{} you", if n == 1 { "s" } else { "" }),
        };
        format!(
            "{agents}{running}{need} · ${:.2} today",
            self.spent_today_usd
        )
    }
}

/// One runtime's line: its name, where it is, and what it says (or why it
/// could not be asked).
pub fn line(name: &str, at: &str, seen: &Result<Seen, String>) -> String {
    match seen {
        Ok(s) => format!("{name:<12} {at}  {}", s.describe()),
        Err(e) => format!("{name:<12} {at}  unreachable: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glance_counts_what_needs_the_operator() {
        let s = Seen {
            version: "0.1.0".into(),
            agents: 3,
            running: 1,
            approvals: 2,
            waiting_for_you: 1,
            spent_today_usd: 0.4213,
            ..Seen::default()
        };
        assert_eq!(
            s.describe(),
            "3 agents (1 running) · 3 need you · $0.42 today"
        );
        let quiet = Seen {
            agents: 1,
            ..Seen::default()
        };
        assert_eq!(quiet.describe(), "1 agent · $0.00 today");
        let down: Result<Seen, String> = Err("no answer within 5 s".into());
        assert_eq!(
            line("gpu", "wss://gpu:7464", &down),
            "gpu          wss://gpu:7464  unreachable: no answer within 5 s"
        );
    }
}
