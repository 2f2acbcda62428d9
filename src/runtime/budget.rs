//! Spend and daily budgets. Each recorded round adds its tokens and cost
//! to the agent's day (UTC); before each model request the turn asks
//! `enforce_in`, which pauses the agent, durably and with its event, once
//! the day's spend reached its budget. A turn is never cut inside a round:
//! the round that crosses the limit finishes (its tools run), and the turn
//! stops before its next request. The agent resumes by itself when the day
//! is over (`resume_in`, from its actor), or when the operator resumes it,
//! which waives the budget for the rest of that day.

use crate::model::agent::AgentRecord;
use crate::model::agent::{AgentStatus, Budget, BudgetLimit};
use crate::model::event::Provenance;
use crate::model::usage::TokenUsage;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::ControlAction;
use crate::runtime::agent::agent_in;
use crate::runtime::provider::catalog::usd;
use crate::store::{StoreError, WriteCtx};

const DAY_MS: i64 = 86_400_000;

/// `YYYY-MM-DD` of a moment, UTC.
pub fn day_of(ms: i64) -> String {
    let ts = crate::format_ts(ms);
    ts.get(..10).unwrap_or(&ts).to_owned()
}

/// The next UTC midnight after `ms`.
pub fn next_midnight_ms(ms: i64) -> i64 {
    (ms.div_euclid(DAY_MS) + 1) * DAY_MS
}

/// The day an agent's budget counts at `now_ms`: today, or a later day it
/// already recorded (a spend, a pause, a waiver) when the clock stepped
/// back over midnight, so a budget's day never goes back and a step back
/// neither resumes a paused agent nor refills its day. A recorded day more
/// than a day ahead is a clock that was wrong then, and is not followed.
/// (`YYYY-MM-DD` text sorts as time does.)
pub fn budget_day(agent: &AgentRecord, now_ms: i64) -> String {
    let today = day_of(now_ms);
    let tomorrow = day_of(now_ms.saturating_add(DAY_MS));
    let recorded = [
        Some(agent.spend_today.day.as_str()),
        agent.budget_paused_day.as_deref(),
        agent.budget_waived_day.as_deref(),
    ];
    recorded
        .into_iter()
        .flatten()
        .filter(|d| *d > today.as_str() && *d <= tomorrow.as_str())
        .max()
        .map_or(today.clone(), str::to_owned)
}

/// The midnight that ends `day`, or `now_ms`'s next one if that is later:
/// when a budget paused on `day` lets the agent run again.
fn midnight_after(day: &str, now_ms: i64) -> i64 {
    let mut at = next_midnight_ms(now_ms);
    // `day` is at most tomorrow (`budget_day`): two steps at most.
    for _ in 0..2 {
        if day_of(at).as_str() > day {
            break;
        }
        at += DAY_MS;
    }
    at
}

/// A recorded round, on the agent's totals and its day. `cost` is `None`
/// when the price or the usage is unknown.
pub fn add_round(agent: &mut AgentRecord, day: &str, usage: &TokenUsage, cost: Option<u64>) {
    // Saturating: an absurd report from a provider never wraps a total.
    let add = |total: &mut u64, n: u64| *total = total.saturating_add(n);
    add(&mut agent.total_input_tokens, usage.input_tokens);
    add(&mut agent.total_output_tokens, usage.output_tokens);
    add(
        &mut agent.total_cached_input_tokens,
        usage.cached_input_tokens,
    );
    add(
        &mut agent.total_cache_write_tokens,
        usage.cache_write_tokens,
    );
    add(&mut agent.total_reasoning_tokens, usage.reasoning_tokens);
    add(&mut agent.total_model_rounds, 1);
    match cost {
        Some(c) => add(&mut agent.total_cost_micro_usd, c),
        None => add(&mut agent.total_unpriced_rounds, 1),
    }
    let tokens = usage.input_tokens.saturating_add(usage.output_tokens);
    agent.spend_today.add(day, cost, tokens);
}

/// What the budget says about an agent's next model request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// Already paused by its budget today.
    Paused,
    /// Its day's spend reached this limit: pause it now.
    Pause(BudgetLimit),
}

/// The budget's word on `agent` at `now_ms` (`global` where it has no
/// budget of its own). Resumed by the operator on the day its budget
/// paused it, it runs for the rest of that day.
pub fn verdict(agent: &AgentRecord, now_ms: i64, global: Budget) -> Verdict {
    let today = budget_day(agent, now_ms);
    if agent.budget_waived_day.as_deref() == Some(today.as_str()) {
        return Verdict::Run;
    }
    if agent.budget_paused_day.as_deref() == Some(today.as_str()) {
        return match agent.status {
            AgentStatus::Paused => Verdict::Paused,
            _ => Verdict::Run,
        };
    }
    match agent
        .budget
        .over(global)
        .reached(&agent.spend_today.on(&today))
    {
        Some(limit) => Verdict::Pause(limit),
        None => Verdict::Run,
    }
}

/// Whether the agent may make its next model request; pauses it (with
/// `budget_exceeded`) when its day's spend reached its budget.
pub fn enforce_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    global: Budget,
) -> Result<bool, StoreError> {
    let mut agent = agent_in(tx, agent_id)?;
    if agent.status == AgentStatus::Stopped {
        // Stopped by the operator: nothing runs, and the budget does not
        // turn the stop into a pause.
        return Ok(false);
    }
    let now = tx.now_ms();
    let limit = match verdict(&agent, now, global) {
        Verdict::Run => return Ok(true),
        Verdict::Paused => return Ok(false),
        Verdict::Pause(limit) => limit,
    };
    let today = budget_day(&agent, now);
    let budget = agent.budget.over(global);
    let spend = agent.spend_today.on(&today);
    let from = agent.status;
    agent.status = AgentStatus::Paused;
    agent.budget_paused_day = Some(today.clone());
    tx.put_agent(agent_id, &agent)?;
    let resumes_at = crate::format_ts(midnight_after(&today, now));
    let exceeded = ev::BudgetExceeded {
        day: today,
        limit,
        spent_usd: usd(spend.cost_micro_usd),
        budget_usd: budget.daily_micro_usd.map(usd),
        tokens: spend.tokens,
        budget_tokens: budget.daily_tokens,
        resumes_at,
    };
    tracing::info!(
        agent_id,
        ?from,
        ?limit,
        "daily budget reached; agent paused"
    );
    tx.append_event(new_event(
        agent_id,
        runtime_provenance(),
        Event::BudgetExceeded(exceeded),
    ))?;
    Ok(false)
}

/// An agent paused by its budget on an earlier day runs again. Returns
/// whether it changed.
pub fn resume_in(tx: &mut WriteCtx<'_>, agent_id: &str, now_ms: i64) -> Result<bool, StoreError> {
    let mut agent = agent_in(tx, agent_id)?;
    let today = budget_day(&agent, now_ms);
    match agent.budget_paused_day.as_deref() {
        Some(day) if day != today => {}
        _ => return Ok(false),
    }
    agent.budget_paused_day = None;
    let from = agent.status;
    if from == AgentStatus::Paused {
        agent.status = AgentStatus::AwakeIdle;
        let applied = ev::ControlApplied {
            action: ControlAction::Resume,
            from,
            to: agent.status,
            note: "a new day: the daily budget starts again".into(),
        };
        tx.append_event(new_event(
            agent_id,
            runtime_provenance(),
            Event::ControlApplied(applied),
        ))?;
    }
    tx.put_agent(agent_id, &agent)?;
    Ok(true)
}

/// The operator's control action, as the budget sees it: a resume of an
/// agent its budget paused waives the budget for the rest of the day; a
/// pause or stop is the operator's own, which no new day undoes.
pub fn on_control(agent: &mut AgentRecord, action: ControlAction, now_ms: i64) {
    match action {
        ControlAction::Resume if agent.budget_paused_day.is_some() => {
            agent.budget_waived_day = Some(budget_day(agent, now_ms));
            agent.budget_paused_day = None;
        }
        ControlAction::Pause | ControlAction::Stop => agent.budget_paused_day = None,
        ControlAction::Resume | ControlAction::Wake | ControlAction::Abort => {}
    }
}

/// A change to an agent's own budget, in the operator's units.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetChange {
    pub daily_usd: Option<f64>,
    pub daily_tokens: Option<u64>,
    pub clear: bool,
}

impl BudgetChange {
    /// The budget after the change, or why the change is refused.
    pub fn apply(&self, to: Budget) -> Result<Budget, String> {
        let mut b = match self.clear {
            true => Budget::default(),
            false => to,
        };
        if let Some(d) = self.daily_usd {
            if !(d.is_finite() && d > 0.0 && d <= 1_000_000.0) {
                return Err(format!(
                    "daily_usd {d} is out of range: give dollars a day, more than 0 and at most 1000000"
                ));
            }
            b.daily_micro_usd = Some((d * 1_000_000.0).round().max(1.0) as u64);
        }
        if let Some(t) = self.daily_tokens {
            if t == 0 {
                return Err("daily_tokens 0 is out of range: give tokens a day, at least 1".into());
            }
            b.daily_tokens = Some(t);
        }
        Ok(b)
    }
}

/// Set the agent's own budget, recording `agent_budget_changed` when it
/// changes. Returns the budget it has now.
pub fn set_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    change: BudgetChange,
    global: Budget,
) -> Result<Budget, StoreError> {
    let mut agent = agent_in(tx, agent_id)?;
    let to = change
        .apply(agent.budget)
        .map_err(|m| StoreError::rejected(crate::runtime::RuntimeError::Invalid(m)))?;
    if to == agent.budget {
        return Ok(to);
    }
    let from = agent.budget;
    agent.budget = to;
    tx.put_agent(agent_id, &agent)?;
    let changed = ev::AgentBudgetChanged {
        from: from.into(),
        to: to.into(),
    };
    let provenance = Provenance {
        origin: Some("operator".into()),
        ..Provenance::default()
    };
    tx.append_event(new_event(
        agent_id,
        provenance,
        Event::AgentBudgetChanged(changed),
    ))?;
    // Paused by a budget that no longer holds: it runs again.
    let today = budget_day(&agent, tx.now_ms());
    if agent.status == AgentStatus::Paused
        && agent.budget_paused_day.as_deref() == Some(today.as_str())
        && to
            .over(global)
            .reached(&agent.spend_today.on(&today))
            .is_none()
    {
        agent.status = AgentStatus::AwakeIdle;
        agent.budget_paused_day = None;
        tx.put_agent(agent_id, &agent)?;
        let applied = ev::ControlApplied {
            action: ControlAction::Resume,
            from: AgentStatus::Paused,
            to: AgentStatus::AwakeIdle,
            note: "its daily budget was raised above what it spent today".into(),
        };
        tx.append_event(new_event(
            agent_id,
            runtime_provenance(),
            Event::ControlApplied(applied),
        ))?;
    }
    Ok(to)
}

/// When an agent paused by its budget resumes by itself.
pub fn resumes_at_ms(agent: &AgentRecord, now_ms: i64) -> Option<i64> {
    let paused = agent.budget_paused_day.as_deref()?;
    Some(match paused == budget_day(agent, now_ms) {
        true => midnight_after(paused, now_ms),
        false => now_ms,
    })
}

fn runtime_provenance() -> Provenance {
    Provenance {
        origin: Some("runtime".into()),
        ..Provenance::default()
    }
}

/// What the brief of a turn its budget stopped says: what was spent
/// against what, and when the agent runs again.
pub fn paused_brief(agent: &AgentRecord, global: Budget, now_ms: i64) -> String {
    let today = budget_day(agent, now_ms);
    let spend = agent.spend_today.on(&today);
    let budget = agent.budget.over(global);
    let mut spent = format!("${:.2}", usd(spend.cost_micro_usd));
    if let Some(b) = budget.daily_micro_usd {
        spent += &format!(" of ${:.2}", usd(b));
    }
    spent += &format!(" and {} tokens", spend.tokens);
    if let Some(b) = budget.daily_tokens {
        spent += &format!(" of {b}");
    }
    format!(
        "Paused before its next model request: the agent reached its daily budget. Spent \
         {spent} today ({today}, UTC). It resumes by itself at {}, or now with /resume (which \
         lifts the budget for the rest of the day). The turn that was running stopped here; \
         queued messages and work items are as they were.",
        crate::format_ts(midnight_after(&today, now_ms))
    )
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
