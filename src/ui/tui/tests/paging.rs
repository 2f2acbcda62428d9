//! The conversation as a window on the ledger: older turns paged in when
//! scrolled up to, the view kept where it is; the oldest rows handed back
//! to the ledger while following, memory following the window.

use crossterm::event::{KeyCode, KeyModifiers};

use super::super::conversation::{Scroll, WINDOW_ROWS};
use super::super::msg::{Effect, Msg};
use super::super::update;
use super::fixtures::*;
use crate::model::agent::DisplayMode as StoredMode;
use crate::protocol::Request;

/// `turns` turns: a prompt, its turn, its answer, its end.
fn turns(script: &mut Script, range: std::ops::Range<usize>) -> Vec<crate::protocol::EventRecord> {
    let mut out = Vec::new();
    for t in range {
        let (mid, run) = (format!("msg_{t:05}"), format!("run_{t:05}"));
        out.push(script.prompt(&mid, &format!("question {t}")));
        out.push(script.turn(&mid, &run));
        out.push(script.brief(
            &mid,
            "result",
            &format!("answer number {t}"),
            "operator",
            None,
        ));
        out.push(script.turn_end(&mid, &run, "completed", 1, 900, ""));
    }
    out
}

/// Answer the `events.page` among `fx`, if there is one, from `script`:
/// the span it asked for.
fn answer_page(st: &mut super::super::State, script: &Script, fx: &[Effect]) -> Option<(u64, u64)> {
    let (id, from, limit) = fx.iter().find_map(|e| match e {
        Effect::Call {
            id,
            request: Request::EventsPage {
                from_seq, limit, ..
            },
        } => Some((*id, *from_seq, *limit as u64)),
        _ => None,
    })?;
    let upto = from + limit - 1;
    let events: Vec<_> = script
        .events
        .iter()
        .filter(|e| (from..=upto).contains(&e.event_seq))
        .cloned()
        .collect();
    let json = page(&events, script.seq());
    update(
        st,
        Msg::Response {
            id,
            result: answer(fx, id, json),
        },
    );
    Some((from, upto))
}

#[test]
fn scrolling_up_pages_in_older_turns_back_to_the_first() {
    let mut script = Script::default();
    turns(&mut script, 0..300);
    let mut st = booted(&script, StoredMode::Info, 80, 24);
    // The console opened on the newest 500 events.
    assert_eq!(st.conversation.first_seq, script.seq() - 499);
    assert!(!screen(&st).contains("question 0"));
    let mut pages = 0;
    loop {
        let fx = update(&mut st, with(KeyCode::Home, KeyModifiers::CONTROL));
        let before = screen(&st);
        let Some((from, upto)) = answer_page(&mut st, &script, &fx) else {
            break;
        };
        pages += 1;
        assert_eq!(
            upto + 1 - from,
            500.min(upto),
            "a page of 500 events at most"
        );
        // The rows came in above: what was on screen stays on screen.
        assert_eq!(
            screen(&st),
            before,
            "the view moved when older rows came in"
        );
        assert!(pages < 10, "paging never ended");
    }
    assert_eq!(pages, 2, "1,200 events: two more pages after the first 500");
    assert_eq!(st.conversation.first_seq, 1);
    update(&mut st, with(KeyCode::Home, KeyModifiers::CONTROL));
    assert!(screen(&st).contains("question 0"), "{}", screen(&st));
    // Every turn once, in order.
    let prompts: Vec<u64> = st
        .conversation
        .rows
        .iter()
        .filter(|r| matches!(r.kind(), super::super::rows::RowKind::Operator { .. }))
        .map(|r| r.seq)
        .collect();
    assert_eq!(prompts.len(), 300);
    assert!(prompts.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_long_session_keeps_a_window_and_pages_the_rest_back_in() {
    let mut script = Script::default();
    let mut st = booted(&script, StoredMode::Info, 80, 24);
    for e in turns(&mut script, 0..2_000) {
        update(&mut st, Msg::Event(Box::new(e)));
    }
    let rows = st.conversation.rows.len();
    assert!(rows <= WINDOW_ROWS, "{rows} rows kept");
    assert!(st.conversation.first_seq > 1);
    assert!(screen(&st).contains("question 1999"), "{}", screen(&st));
    // Scrolled up to the oldest row kept, the rest comes back from the
    // ledger, starting right below it.
    let first = st.conversation.first_seq;
    let fx = update(&mut st, with(KeyCode::Home, KeyModifiers::CONTROL));
    let (from, upto) = answer_page(&mut st, &script, &fx).expect("an older page asked for");
    assert_eq!((from, upto), (first - 500, first - 1));
    assert!(st.conversation.rows.len() > rows);
    assert!(matches!(st.conversation.scroll, Scroll::Anchor { .. }));
}

/// Scrolled back, the rule says how many rows are below, and whether the
/// answer is streaming there.
#[test]
fn the_marker_counts_the_rows_below() {
    let mut st = fresh();
    for n in 0..30 {
        st.conversation
            .note(format!("note {n}"), super::super::rows::Tone::Info);
    }
    let first = st.conversation.rows.len() - 30;
    st.conversation.scroll = Scroll::Anchor {
        row: first + 25,
        skip: 0,
    };
    assert!(
        screen(&st).contains("↓ 4 newer rows below"),
        "{}",
        screen(&st)
    );
    st.conversation.scroll = Scroll::Anchor {
        row: first + 28,
        skip: 0,
    };
    assert!(
        screen(&st).contains("↓ 1 newer row below"),
        "{}",
        screen(&st)
    );
    st.conversation.stream = Some(("run_1".into(), "partial answer".into()));
    assert!(
        screen(&st).contains("↓ 1 newer row and the answer streaming below"),
        "{}",
        screen(&st)
    );
}

/// A history whose newest events show few rows (most kinds are not shown
/// in Info): the view never leaves the bottom, and scrolling up still
/// pages older turns in.
#[test]
fn a_short_window_still_pages_in_older_turns() {
    let mut script = Script::default();
    turns(&mut script, 0..5);
    for n in 0..600 {
        script.push("tick", None, serde_json::json!({ "n": n }));
    }
    let mut st = booted(&script, StoredMode::Info, 80, 24);
    assert!(!screen(&st).contains("question 0"));
    for _ in 0..4 {
        let fx = update(&mut st, with(KeyCode::Home, KeyModifiers::CONTROL));
        if answer_page(&mut st, &script, &fx).is_none() {
            break;
        }
    }
    update(&mut st, with(KeyCode::Home, KeyModifiers::CONTROL));
    assert!(screen(&st).contains("question 0"), "{}", screen(&st));
}

/// Answer every `events.page` the console asks for, one after another,
/// from `script`; how many were answered.
fn answer_pages(st: &mut super::super::State, script: &Script, mut fx: Vec<Effect>) -> usize {
    let mut n = 0;
    loop {
        let Some((id, from, limit)) = fx.iter().find_map(|e| match e {
            Effect::Call {
                id,
                request:
                    Request::EventsPage {
                        from_seq, limit, ..
                    },
            } => Some((*id, *from_seq, *limit as u64)),
            _ => None,
        }) else {
            return n;
        };
        let events: Vec<_> = script
            .events
            .iter()
            .filter(|e| (from..from + limit).contains(&e.event_seq))
            .cloned()
            .collect();
        let json = page(&events, script.seq());
        let result = answer(&fx, id, json);
        fx = update(st, Msg::Response { id, result });
        n += 1;
    }
}

fn find_line(st: &super::super::State) -> String {
    screen(st)
        .lines()
        .find(|l| l.contains("Find"))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn find_looks_through_the_whole_conversation_and_moves_both_ways() {
    let mut script = Script::default();
    turns(&mut script, 0..400);
    let mut st = booted(&script, StoredMode::Info, 80, 24);
    assert!(
        st.conversation.first_seq > 1,
        "the oldest turns are not held"
    );
    // Ctrl+F on the empty composer, the text, Enter: the newest match.
    update(&mut st, ctrl('f'));
    typ(&mut st, "question 39");
    assert!(
        find_line(&st).contains("Find: question 39"),
        "{}",
        screen(&st)
    );
    let fx = update(&mut st, key(KeyCode::Enter));
    assert_eq!(answer_pages(&mut st, &script, fx), 0, "held rows match");
    let shown = screen(&st);
    assert!(shown.contains("question 399"), "{shown}");
    assert!(find_line(&st).contains("n older · N newer"), "{shown}");
    // n: the next older match, paged in from the ledger when needed
    // (question 39 is in the first turns).
    for want in ["question 398", "question 397"] {
        let fx = update(&mut st, key(KeyCode::Char('n')));
        answer_pages(&mut st, &script, fx);
        assert!(screen(&st).contains(want), "{want}: {}", screen(&st));
    }
    let mut steps = 0;
    while !screen(&st).contains("› question 39 ") {
        let fx = update(&mut st, key(KeyCode::Char('n')));
        answer_pages(&mut st, &script, fx);
        steps += 1;
        assert!(
            steps < 20,
            "never reached the oldest match: {}",
            screen(&st)
        );
    }
    let fx = update(&mut st, key(KeyCode::Char('n')));
    answer_pages(&mut st, &script, fx);
    assert!(
        st.conversation.first_seq <= 1,
        "looked back to the first event"
    );
    assert!(find_line(&st).contains("no older match"), "{}", screen(&st));
    // N: newer again.
    update(&mut st, key(KeyCode::Char('N')));
    assert!(screen(&st).contains("question 390"), "{}", screen(&st));
    // Esc closes the find line; the view stays where it is.
    update(&mut st, key(KeyCode::Esc));
    assert!(find_line(&st).is_empty());
    assert!(st.conversation.scroll != Scroll::Follow);
    // Nothing to find anywhere: said, once the whole ledger was looked at.
    let fx = enter(&mut st, "/find no such words");
    answer_pages(&mut st, &script, fx);
    assert!(find_line(&st).contains("no older match"), "{}", screen(&st));
}

#[test]
fn find_stops_after_a_bounded_look_back_and_n_goes_further() {
    let mut script = Script::default();
    turns(&mut script, 0..6_000);
    let mut st = booted(&script, StoredMode::Info, 160, 24);
    let fx = enter(&mut st, "/find question 0");
    let pages = answer_pages(&mut st, &script, fx);
    assert_eq!(pages, super::super::find::MAX_PAGES as usize);
    assert!(
        find_line(&st)
            .contains("no match in the 20000 older events looked through; n looks further back"),
        "{}",
        screen(&st)
    );
    let fx = update(&mut st, key(KeyCode::Char('n')));
    answer_pages(&mut st, &script, fx);
    assert!(screen(&st).contains("› question 0 "), "{}", screen(&st));
    // Back at the bottom, what was paged in to find it goes back to the
    // ledger with the next row.
    assert!(st.conversation.rows.len() > WINDOW_ROWS);
    update(&mut st, key(KeyCode::Esc));
    update(&mut st, with(KeyCode::End, KeyModifiers::CONTROL));
    let late = script.prompt("msg_late", "one more");
    update(&mut st, Msg::Event(Box::new(late)));
    assert!(
        st.conversation.rows.len() <= WINDOW_ROWS,
        "{}",
        st.conversation.rows.len()
    );
    assert!(screen(&st).contains("one more"));
}
