//! Retention's edges on a real store: briefs a prune killed before its
//! index step left searchable, an agent with 100,000 queued prompts, and
//! rows an older build never sealed.

use holon::model::retention::PruneBy;
use holon::runtime::retention::prune_store;
use holon::store::{Store, StoreOptions};

use super::retention::{future, history};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn briefs_a_killed_prune_left_in_the_index_go_at_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = history(dir.path(), &["main"]).await;
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let data = dir.path().join("data");
    let home = holon::runtime::agent::home_dir(&data, "main");
    std::fs::create_dir_all(&home).unwrap();
    let found = |q: &str| {
        let rx = store.read().unwrap();
        holon::runtime::recall::search(&rx, &home, "main", q, None, 100)
            .unwrap()
            .0
            .len()
    };
    let all = found("answer");
    assert!(all >= 40, "every turn's brief is searchable: {all}");
    // A prune that died after its cut, before its index step (no data
    // dir: the step never runs).
    let cut = prune_store(&store, None, future(), false, PruneBy::Operator)
        .await
        .unwrap();
    assert!(cut.events > 0, "{cut:?}");
    assert_eq!(found("answer"), all, "the index still holds the cut briefs");
    // The rerun cuts nothing more, and the index forgets them.
    let rerun = prune_store(&store, Some(&data), future(), false, PruneBy::Operator)
        .await
        .unwrap();
    assert_eq!(rerun.events, 0, "{rerun:?}");
    let kept = found("answer");
    assert!(kept > 0 && kept < all, "{kept} of {all} briefs searchable");
    // What stays is what the ledger holds: the latest brief among them.
    let rx = store.read().unwrap();
    let latest = rx
        .events_of_kind_latest("main", "brief_created", 1)
        .unwrap()
        .pop()
        .unwrap();
    let text = latest.payload["brief"]["text"].as_str().unwrap();
    let first_words: String = text.chars().take(9).collect();
    let hits = holon::runtime::recall::search(&rx, &home, "main", &first_words, None, 100)
        .unwrap()
        .0;
    assert!(
        hits.iter().any(|h| h.snippet.contains(&first_words)),
        "{first_words:?} in {hits:?}"
    );
}

#[test]
fn an_agent_with_100000_queued_prompts_is_pruned_to_its_oldest_and_restarts_with_it() {
    use holon::model::message::Priority;
    use holon::protocol::ControlAction;
    use holon::runtime::provider::scripted::Scripted;
    use holon::store::Keyed;
    use std::sync::Arc;

    use super::runtime_core::prompt;
    use super::runtime_restart::{runtime, start};

    const QUEUED: usize = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let script = |n: usize| {
        let replies = (0..n).map(|i| Scripted::text(&format!("done {i}")));
        Arc::new(holon::runtime::provider::scripted::ScriptedProvider::new(
            replies,
        ))
    };
    let rt = runtime();
    let host = start(&rt, dir.path(), script(40));
    let first = rt.block_on(async {
        // Some history first: forty prompts answered.
        for i in 0..40 {
            host.submit(prompt(&format!("early {i}"), Priority::Normal))
                .await
                .unwrap();
        }
        host.until_idle().await;
        host.control("main", ControlAction::Pause).await.unwrap();
        let mut first = None;
        for chunk in 0..QUEUED / 1000 {
            let reqs = (0..1000)
                .map(|i| {
                    (
                        prompt(&format!("queued {chunk}/{i}"), Priority::Normal),
                        None,
                    )
                })
                .collect();
            let admitted = holon::runtime::admission::admit_many(host.store(), reqs)
                .await
                .unwrap();
            assert!(admitted.iter().all(Result::is_ok));
            if let (None, Some(Ok(a))) = (&first, admitted.first()) {
                first = Some(a.message_id.clone());
            }
        }
        first.unwrap()
    });

    // The prune takes the answered history (and those forty settled queue
    // entries) and stops before the oldest queued message.
    let report = rt
        .block_on(prune_store(
            host.store(),
            None,
            future(),
            false,
            PruneBy::Operator,
        ))
        .unwrap();
    let main = report.agents.iter().find(|a| a.agent_id == "main").unwrap();
    assert!(main.events > 0, "{main:?}");
    assert_eq!(main.queue_entries, 40, "{main:?}");
    assert!(main.held_by.is_some(), "{main:?}");
    let rx = host.store().read().unwrap();
    let entry: holon::runtime::queue::QueueEntry = rx
        .get(Keyed::QueueEntries, "main", &first)
        .unwrap()
        .unwrap();
    let start_seq = rx.ledger_start("main").unwrap();
    assert!(
        entry.admitted_seq.unwrap() >= start_seq,
        "its envelope kept"
    );
    let live = holon::runtime::projection::load(&rx, "main", 0)
        .unwrap()
        .unwrap();
    assert_eq!(live.projection.replay_message_ids.len(), QUEUED);
    let before_restart = rx.last_seq("main").unwrap();
    drop(rx);
    rt.block_on(host.shutdown());
    drop(host);
    drop(rt);

    // Restarted and resumed, the oldest queued message runs first.
    let rt = runtime();
    let host = start(&rt, dir.path(), script(1));
    rt.block_on(async {
        host.control("main", ControlAction::Resume).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let rx = host.store().read().unwrap();
            let started = rx
                .events_of_kind("main", "message_processing_started", before_restart, 1)
                .unwrap();
            if let Some(e) = started.first() {
                assert_eq!(e.provenance.message_id.as_deref(), Some(first.as_str()));
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no turn started");
            drop(rx);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        host.control("main", ControlAction::Pause).await.unwrap();
        host.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_during_a_turn_keeps_what_the_turn_needs_and_the_turn_ends_whole() {
    use holon::model::message::Priority;
    use holon::runtime::provider::scripted::Scripted;
    use std::time::Duration;

    use super::runtime_core::{events, kind, prompt, rig, wait_event};

    let mut script: Vec<Scripted> = (0..40)
        .map(|i| Scripted::text(&format!("answer {i}")))
        .collect();
    script.push(Scripted::Delay(
        Duration::from_millis(1500),
        Box::new(Scripted::text("the slow answer")),
    ));
    let r = rig(script).await;
    for i in 0..40 {
        r.host
            .submit(prompt(&format!("prompt {i}"), Priority::Normal))
            .await
            .unwrap();
    }
    r.host.until_idle().await;
    let slow = r
        .host
        .submit(prompt("the slow one", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "the slow turn's start", kind("turn_started")).await;
    // The model is still answering: prune everything that may go.
    let report = prune_store(r.host.store(), None, future(), false, PruneBy::Operator)
        .await
        .unwrap();
    let main = report.agents.iter().find(|a| a.agent_id == "main").unwrap();
    assert!(main.events > 0, "{main:?}");
    assert!(
        main.ledger_start <= slow.event_seq,
        "the in-flight admission stays: {main:?}"
    );
    // The turn ends as if nothing happened: its answer, its brief.
    let done = wait_event(&r.host, "the slow turn's brief", |e| {
        e.kind == "brief_created"
            && e.payload["brief"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("the slow answer"))
    })
    .await;
    let evs = events(&r.host);
    let terminal = evs
        .iter()
        .find(|e| {
            e.kind == "turn_terminal"
                && e.event_seq < done.event_seq
                && e.event_seq > slow.event_seq
        })
        .unwrap();
    assert_eq!(
        terminal.payload["kind"], "completed",
        "{}",
        terminal.payload
    );
    assert_eq!(evs.first().map(|e| e.event_seq), Some(main.ledger_start));
    let rx = r.host.store().read().unwrap();
    let transcript: Vec<serde_json::Value> =
        rx.list(holon::store::Keyed::Transcript, "main").unwrap();
    assert!(
        transcript
            .iter()
            .any(|t| t.to_string().contains("the slow answer")),
        "the turn's answer is in the transcript"
    );
}
