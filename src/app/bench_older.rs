//! `holon debug bench older`: paging older turns into an open console, on a
//! store whose agent's ledger holds `--ledger` events of conversation (an
//! operator prompt, its turn and an answer of ~1 KB of markdown, turn after
//! turn). The console opens on it (embedded: the runtime's own client), then
//! Ctrl+Home is pressed again and again at the top: each press asks for the
//! 500 events before the oldest rows held, which are built into rows, put
//! in front, and the frame is drawn. Prints what a page costs (its request
//! answered, built and applied) and key-to-frame (the key to the frame that
//! shows the page), p50 and p99, and the rows a page gives.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use super::bench::{millis, percentile};
use crate::model::event::{NewEvent, Provenance};
use crate::model::message::{normalize, AdmissionRequest, DeliverySurface, Priority};
use crate::protocol::{call_typed, AgentState, Request, RuntimeClient};
use crate::store::{Store, StoreOptions};
use crate::ui::tui::msg::{Connection, Effect, Msg};
use crate::ui::tui::{update, view, Init, State};

/// Pages paged in (at most; fewer when the ledger ends first).
const PAGES: usize = 200;

/// An answer of ~1 KB of markdown, different for each turn.
fn answer(t: u64) -> String {
    format!(
        "## Turn {t}\n\nThe build passed after the change to `retry.rs`; the flaky test \
         now waits on the event instead of sleeping.\n\n- checked the **timeout** path \
         ({t} ms)\n- re-ran the suite three times\n- left the logging as it was\n\n```rust\n\
         fn backoff(attempt: u32) -> u64 {{\n    250u64 << attempt.min({})\n}}\n```\n\n\
         | case | before | after |\n|---|---|---|\n| cold | 41 ms | 12 ms |\n| warm | 9 ms | \
         8 ms |\n\nNext I would look at the connection pool: it opens a socket per request \
         under load, which is where the remaining time goes. Say if you want that now or \
         after the release.",
        t % 7
    )
}

/// One turn's four events: the prompt admitted, its turn, its answer, its
/// end.
fn turn(agent: &str, t: u64, ts: &str) -> Vec<NewEvent> {
    let (mid, run) = (format!("msg_{t:08}"), format!("run_{t:08}"));
    let req = AdmissionRequest::operator_prompt(
        agent,
        &format!("question {t}: why is the retry test flaky?"),
        Priority::Normal,
        DeliverySurface::HttpControlPrompt,
    );
    let envelope = normalize(req, mid.clone(), ts.to_owned());
    let prov = Provenance {
        message_id: Some(mid.clone()),
        ..Provenance::default()
    };
    let ev = |kind: &'static str, payload| NewEvent {
        agent_id: agent.to_owned(),
        kind,
        provenance: prov.clone(),
        payload,
    };
    let brief = json!({ "id": format!("brief_{t:08}"), "agent_id": agent, "work_item_id": null,
        "kind": "result", "created_at": ts, "text": answer(t), "related_message_id": mid,
        "related_task_id": null, "failure_artifact": null });
    vec![
        ev(
            "message_admitted",
            json!({ "message": envelope, "queue_status": "queued", "admission_seq": t + 1 }),
        ),
        ev(
            "turn_started",
            json!({ "run_id": run, "message_id": mid, "trigger_kind": "operator_input",
                "work_item_id": null, "guidance": [] }),
        ),
        ev(
            "brief_created",
            json!({ "brief": brief, "visibility": "turn_result" }),
        ),
        ev(
            "turn_terminal",
            json!({ "run_id": run, "message_id": mid, "kind": "completed", "rounds": 1,
                "last_assistant_message": "", "duration_ms": 4_100 }),
        ),
    ]
}

/// Fill `agent`'s ledger with turns until it holds `target` events.
pub(super) async fn fill(store: &Store, agent: &str, target: u64) -> anyhow::Result<()> {
    let mut have = store.read()?.last_seq(agent)?;
    let ts = "2026-11-29T09:00:00.000Z";
    while have < target {
        let first = have / 4;
        let turns = 250.min((target - have).div_ceil(4));
        let who = agent.to_owned();
        store
            .write(move |tx| {
                for t in first..first + turns {
                    for e in turn(&who, t, ts) {
                        tx.append_event(e)?;
                    }
                }
                Ok(())
            })
            .await?;
        have = store.read()?.last_seq(agent)?;
    }
    Ok(())
}

pub async fn run(dir: &Path, ledger: u64) -> anyhow::Result<()> {
    let home = dir.join("older");
    let paths = super::paths::Paths::under(&home);
    paths.ensure()?;
    let store = Store::open(&paths.store_file(), StoreOptions::default())?;
    crate::runtime::admission::ensure_agent(&store, "main").await?;
    let t = Instant::now();
    fill(&store, "main", ledger).await?;
    let filled = t.elapsed();
    let events = store.read()?.last_seq("main")?;
    let (host, mut state) = open_console(store, &paths).await?;
    let client: &dyn RuntimeClient = &host;
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40))?;
    terminal.draw(|f| view(&state, f))?;
    let top = KeyEvent::new(KeyCode::Home, KeyModifiers::CONTROL);
    let (mut pages, mut keys, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    let mut fetched = Vec::new();
    for _ in 0..PAGES {
        let t0 = Instant::now();
        let effects = update(&mut state, Msg::Key(top));
        let Some((id, request)) = effects.into_iter().find_map(|e| match e {
            Effect::Call { id, request } => Some((id, request)),
            _ => None,
        }) else {
            break; // back at the first event
        };
        let before = state.conversation.rows.len();
        let t1 = Instant::now();
        let result = client.call(request).await;
        fetched.push(t1.elapsed());
        let more = update(
            &mut state,
            Msg::Response {
                id,
                result: Box::new(result),
            },
        );
        pages.push(t1.elapsed());
        terminal.draw(|f| view(&state, f))?;
        keys.push(t0.elapsed());
        rows.push(state.conversation.rows.len() - before);
        answer_all(client, &mut state, more).await;
    }
    anyhow::ensure!(
        !pages.is_empty(),
        "no older page to fetch: the ledger fits in the first screen (--ledger {ledger})"
    );
    // Whether a page costs more as the rows held grow: the first and the
    // last tenth of the pages.
    let tenth = (pages.len() / 10).max(1);
    let first = percentile(&sorted(&pages[..tenth]), 0.5);
    let last = percentile(&sorted(&pages[pages.len() - tenth..]), 0.5);
    pages.sort();
    keys.sort();
    fetched.sort();
    let per_page = rows.iter().sum::<usize>() / rows.len().max(1);
    println!(
        "console.older     {} pages of 500 events (~{per_page} rows each) paged in at the top of \
         a {events}-event ledger (filled in {:.1} s): page fetched and applied p50 {} p99 {}; \
         key-to-frame p50 {} p99 {} (of a page: the runtime's answer p50 {} p99 {}; p50 of the \
         first tenth of pages {}, of the last {})",
        pages.len(),
        filled.as_secs_f64(),
        millis(percentile(&pages, 0.5)),
        millis(percentile(&pages, 0.99)),
        millis(percentile(&keys, 0.5)),
        millis(percentile(&keys, 0.99)),
        millis(percentile(&fetched, 0.5)),
        millis(percentile(&fetched, 0.99)),
        millis(first),
        millis(last),
    );
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    Ok(())
}

fn sorted(d: &[Duration]) -> Vec<Duration> {
    let mut v = d.to_vec();
    v.sort();
    v
}

/// A runtime on `store` (a scripted provider that is never called) and a
/// console showing `main` with its history read, as an embedded console
/// opens.
pub(super) async fn open_console(
    store: Store,
    paths: &super::paths::Paths,
) -> anyhow::Result<(crate::runtime::handle::RuntimeHost, State)> {
    let provider: Arc<dyn crate::runtime::provider::Provider> = Arc::new(
        crate::runtime::provider::scripted::ScriptedProvider::new(Vec::new()),
    );
    let config = crate::runtime::handle::HostConfig::new(
        paths.data_dir.clone(),
        Arc::new(move |_| Arc::clone(&provider)),
    );
    let host = crate::runtime::handle::RuntimeHost::start(store, config).await?;
    let client: &dyn RuntimeClient = &host;
    let agent: AgentState = call_typed(
        client,
        Request::AgentState {
            agent_id: "main".into(),
        },
    )
    .await?;
    let mut state = State::new(Init {
        agent_id: "main".into(),
        connection: Connection::Embedded,
        width: 120,
        height: 40,
        notify: Default::default(),
        no_color: false,
    });
    let effects = update(
        &mut state,
        Msg::Bootstrap {
            agent_id: "main".into(),
            state: Box::new(agent),
        },
    );
    answer_all(client, &mut state, effects).await;
    Ok((host, state))
}

/// Answer every request among `effects` (and those the answers ask for).
async fn answer_all(client: &dyn RuntimeClient, state: &mut State, mut effects: Vec<Effect>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Some(effect) = effects.pop() {
        if Instant::now() > deadline {
            return;
        }
        if let Effect::Call { id, request } = effect {
            let result = client.call(request).await;
            effects.extend(update(
                state,
                Msg::Response {
                    id,
                    result: Box::new(result),
                },
            ));
        }
    }
}
