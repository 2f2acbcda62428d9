//! The daily budget's rules: days, verdicts, waivers, and a clock that
//! steps back or was ahead.

use super::*;
use crate::model::agent::DailySpend;

#[test]
fn an_operator_resume_waives_the_day_and_an_operator_pause_is_never_undone_by_midnight() {
    let noon = 1_795_608_000_000; // 2026-11-25T12:00:00Z
    let budget = Budget {
        daily_micro_usd: Some(1),
        daily_tokens: None,
    };
    let mut agent = AgentRecord::new("a", String::new());
    agent.spend_today.add("2026-11-25", Some(5), 10);
    assert_eq!(
        verdict(&agent, noon, budget),
        Verdict::Pause(BudgetLimit::Usd)
    );
    agent.status = AgentStatus::Paused;
    agent.budget_paused_day = Some("2026-11-25".into());
    assert_eq!(verdict(&agent, noon, budget), Verdict::Paused);
    // The operator resumes: the budget is waived for the rest of the day.
    on_control(&mut agent, ControlAction::Resume, noon);
    agent.status = AgentStatus::AwakeIdle;
    assert_eq!(verdict(&agent, noon, budget), Verdict::Run);
    assert_eq!(resumes_at_ms(&agent, noon), None);
    // Then pauses it: that pause is theirs, midnight does not lift it.
    on_control(&mut agent, ControlAction::Pause, noon);
    agent.status = AgentStatus::Paused;
    assert_eq!(resumes_at_ms(&agent, noon + DAY_MS), None);
    // The next day the budget applies again.
    agent.status = AgentStatus::AwakeIdle;
    agent.spend_today.add("2026-11-26", Some(5), 10);
    assert_eq!(
        verdict(&agent, noon + DAY_MS, budget),
        Verdict::Pause(BudgetLimit::Usd)
    );
}

#[test]
fn a_clock_stepped_back_over_midnight_neither_resumes_nor_refills_a_budget() {
    let noon = 1_795_608_000_000; // 2026-11-25T12:00:00Z
    let back = noon - DAY_MS; // the clock steps back a day
    let budget = Budget {
        daily_micro_usd: Some(10),
        daily_tokens: None,
    };
    let mut agent = AgentRecord::new("a", String::new());
    agent
        .spend_today
        .add(&budget_day(&agent, noon), Some(8), 10);
    // Spent on the 25th, the clock now says the 24th: still the 25th.
    assert_eq!(budget_day(&agent, back), "2026-11-25");
    agent
        .spend_today
        .add(&budget_day(&agent, back), Some(8), 10);
    assert_eq!(agent.spend_today.cost_micro_usd, 16);
    assert_eq!(
        verdict(&agent, back, budget),
        Verdict::Pause(BudgetLimit::Usd)
    );
    // Paused at the 24th on the 25th's spend: the pause is the 25th's,
    // and it ends when the 25th does.
    agent.status = AgentStatus::Paused;
    agent.budget_paused_day = Some(budget_day(&agent, back));
    assert_eq!(agent.budget_paused_day.as_deref(), Some("2026-11-25"));
    assert_eq!(verdict(&agent, back, budget), Verdict::Paused);
    let end_of_25th = next_midnight_ms(noon);
    assert_eq!(resumes_at_ms(&agent, back), Some(end_of_25th));
    assert_eq!(resumes_at_ms(&agent, end_of_25th), Some(end_of_25th));
    // The operator's waiver at the 24th is the 25th's.
    on_control(&mut agent, ControlAction::Resume, back);
    agent.status = AgentStatus::AwakeIdle;
    assert_eq!(agent.budget_waived_day.as_deref(), Some("2026-11-25"));
    assert_eq!(verdict(&agent, noon, budget), Verdict::Run);
}

#[test]
fn a_day_recorded_far_ahead_is_a_clock_that_was_wrong_and_is_not_followed() {
    let noon = 1_795_608_000_000; // 2026-11-25T12:00:00Z
    let budget = Budget {
        daily_micro_usd: Some(10),
        daily_tokens: None,
    };
    let mut agent = AgentRecord::new("a", String::new());
    // The clock read 2027 for a while: spent, then paused, then fixed.
    agent.spend_today.add("2027-03-01", Some(50), 10);
    agent.status = AgentStatus::Paused;
    agent.budget_paused_day = Some("2027-03-01".into());
    assert_eq!(budget_day(&agent, noon), "2026-11-25");
    assert_eq!(
        agent
            .spend_today
            .on(&budget_day(&agent, noon))
            .cost_micro_usd,
        0
    );
    assert_eq!(resumes_at_ms(&agent, noon), Some(noon), "resumes at once");
    agent.status = AgentStatus::AwakeIdle;
    agent.budget_paused_day = None;
    assert_eq!(verdict(&agent, noon, budget), Verdict::Run);
}

#[test]
fn days_are_utc_and_midnight_is_the_next_one() {
    // 2026-11-25T23:59:59.999Z
    let late = 1_795_651_199_999;
    assert_eq!(day_of(late), "2026-11-25");
    assert_eq!(day_of(late + 1), "2026-11-26");
    assert_eq!(next_midnight_ms(late), late + 1);
    assert_eq!(next_midnight_ms(late + 1), late + 1 + DAY_MS);
}

#[test]
fn a_round_adds_to_the_day_and_a_new_day_starts_from_nothing() {
    let mut agent = AgentRecord::new("a", String::new());
    let usage = TokenUsage {
        input_tokens: 100,
        output_tokens: 20,
        cached_input_tokens: 60,
        reasoning_tokens: 5,
        ..TokenUsage::default()
    };
    add_round(&mut agent, "2026-11-25", &usage, Some(1_500));
    add_round(&mut agent, "2026-11-25", &usage, None);
    assert_eq!(agent.spend_today.cost_micro_usd, 1_500);
    assert_eq!(agent.spend_today.unpriced_rounds, 1);
    assert_eq!(agent.spend_today.tokens, 240);
    assert_eq!(agent.total_cached_input_tokens, 120);
    add_round(&mut agent, "2026-11-26", &usage, Some(10));
    assert_eq!(
        agent.spend_today,
        DailySpend {
            day: "2026-11-26".into(),
            cost_micro_usd: 10,
            tokens: 120,
            unpriced_rounds: 0,
        }
    );
    assert_eq!(agent.total_cost_micro_usd, 1_510);
    assert_eq!(agent.total_unpriced_rounds, 1);
}

#[test]
fn the_agent_budget_wins_where_it_sets_a_limit_and_tokens_hold_without_prices() {
    let global = Budget {
        daily_micro_usd: Some(5_000_000),
        daily_tokens: Some(1_000),
    };
    let own = Budget {
        daily_micro_usd: Some(1_000_000),
        daily_tokens: None,
    };
    let b = own.over(global);
    assert_eq!(
        (b.daily_micro_usd, b.daily_tokens),
        (Some(1_000_000), Some(1_000))
    );
    let spend = |cost, tokens| DailySpend {
        day: "d".into(),
        cost_micro_usd: cost,
        tokens,
        unpriced_rounds: 0,
    };
    assert_eq!(b.reached(&spend(999_999, 10)), None);
    assert_eq!(b.reached(&spend(1_000_000, 10)), Some(BudgetLimit::Usd));
    assert_eq!(b.reached(&spend(0, 1_000)), Some(BudgetLimit::Tokens));
    assert_eq!(Budget::default().reached(&spend(u64::MAX, u64::MAX)), None);
}
