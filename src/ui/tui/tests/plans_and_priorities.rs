//! Two operator features: the work-item plan preview (served by the
//! bootstrap, kept when later work-item events update the item, shown in
//! the detail) and prompts with a priority (`/interject`, `/next`).

use serde_json::json;

use super::fixtures::*;
use crate::model::event::Provenance;
use crate::protocol::EventRecord;
use crate::ui::tui::msg::Msg;
use crate::ui::tui::update;

#[test]
fn the_plan_preview_survives_work_item_events_and_shows_in_the_detail() {
    let script = session();
    let mut st = console(120, 40);
    let mut boot = bootstrap(&script, crate::model::agent::DisplayMode::Info);
    boot.work_items[0].plan_preview =
        Some("1. Fix the flaky test\n2. Deploy to staging\n3. Announce".into());
    let fx = update(
        &mut st,
        Msg::Bootstrap {
            agent_id: "main".into(),
            state: Box::new(boot),
        },
    );
    let id = call_id(&fx, "events.page");
    update(
        &mut st,
        Msg::Response {
            id,
            result: answer(&fx, id, page(&script.events, script.seq())),
        },
    );
    // A later update of the same item, as the runtime records it.
    let mut item = json!(session_work()[0]);
    item["revision"] = json!(4);
    item["objective"] = json!("Ship the 0.4 release today");
    let e = EventRecord {
        event_seq: script.seq() + 1,
        id: "evt_new".into(),
        ts: ts(9_000),
        kind: "work_item_updated".into(),
        agent_id: "main".into(),
        provenance: Provenance::default(),
        payload: json!({ "work_item": item, "changed": ["objective"], "source": "tool" }),
    };
    update(&mut st, Msg::Event(Box::new(e)));
    let w = st.agent.work_item("wi_release").expect("work item missing");
    assert_eq!(w.objective, "Ship the 0.4 release today");
    assert_eq!(w.revision, 4);
    assert_eq!(
        w.plan_preview.as_deref().map(|p| p.lines().count()),
        Some(3),
        "the preview is kept"
    );
    // The detail shows it.
    prefix(&mut st, 'w');
    update(&mut st, key(crossterm::event::KeyCode::Home));
    update(&mut st, key(crossterm::event::KeyCode::Enter));
    let shown = screen(&st);
    assert!(shown.contains("Plan"), "{shown}");
    assert!(shown.contains("2. Deploy to staging"), "{shown}");
}

#[test]
fn interject_and_next_send_prompts_with_their_priority() {
    use crate::model::message::Priority;
    use crate::protocol::Request;
    let mut st = fresh();
    let fx = enter(&mut st, "/interject also check the logs");
    let sent: Vec<(String, Priority)> = requests(&fx)
        .into_iter()
        .filter_map(|r| match r {
            Request::PromptSubmit { text, priority, .. } => Some((text, priority)),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        vec![("also check the logs".to_owned(), Priority::Interject)]
    );
    let fx = enter(&mut st, "/next then the docs");
    assert!(requests(&fx).iter().any(|r| matches!(
        r,
        Request::PromptSubmit {
            priority: Priority::Next,
            ..
        }
    )));
    // Without a message: a hint, no request.
    let fx = enter(&mut st, "/interject");
    assert!(requests(&fx).is_empty());
    assert!(
        screen(&st).contains("/interject needs the message"),
        "{}",
        screen(&st)
    );
}
