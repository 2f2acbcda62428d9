//! Retention on a real store: what a prune removes and what it keeps, the
//! "pruned before" marker, a dry run, a rerun, a prune cut short after its
//! first job, and a ledger never emptied. The command, the daemon's
//! schedule, a kill and the simulated life are in `retention_cli`.

use std::path::Path;

use holon::model::message::Priority;
use holon::model::retention::{PruneBy, PruneReport};
use holon::runtime::provider::scripted::Scripted;
use holon::runtime::queue::QueueEntry;
use holon::runtime::retention::prune_store;
use holon::store::{Keyed, Store, StoreOptions};
use serde_json::Value;

use super::runtime_core::{prompt, rig};

pub(super) const DAY_MS: i64 = 86_400_000;

/// A cutoff a day ahead: everything written so far counts as old, so the
/// test sees what only the "still needed" rules keep.
pub(super) fn future() -> i64 {
    holon::now_ms() + DAY_MS
}

/// An agent's history: prompts answered, then an open work item, then
/// more prompts, and a compaction boundary in the middle of the
/// transcript. Returns the store's path (the runtime is stopped).
pub(super) async fn history(dir: &Path, agents: &[&str]) -> std::path::PathBuf {
    let replies: Vec<Scripted> = (0..200)
        .map(|i| Scripted::text(&format!("answer {i}: {}", "words ".repeat(40))))
        .collect();
    let r = rig(replies).await;
    for a in agents.iter().filter(|a| **a != "main") {
        r.host.create_agent(a).await.unwrap();
    }
    let turns = |from: usize, to: usize| {
        let host = r.host.clone();
        let agents: Vec<String> = agents.iter().map(|a| (*a).to_owned()).collect();
        async move {
            for i in from..to {
                for a in &agents {
                    let mut req =
                        prompt(&format!("prompt {i} {}", "x".repeat(300)), Priority::Normal);
                    req.agent_id = a.clone();
                    host.submit(req).await.unwrap();
                }
                host.until_idle().await;
            }
        }
    };
    turns(0, 30).await;
    for a in agents {
        let req = holon::protocol::views::CreateWorkItem {
            objective: "keep me".into(),
            ..Default::default()
        };
        r.host.create_work_item(a, req).await.unwrap();
    }
    turns(30, 40).await;
    // A compaction folded the first half of each transcript.
    for a in agents {
        let a = (*a).to_owned();
        r.host
            .store()
            .write(move |tx| {
                let entries: Vec<Value> = tx.list(Keyed::Transcript, &a)?;
                let through = entries[entries.len() / 2]["id"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let mut agent: Value = tx.get_agent(&a)?.unwrap();
                agent["context"]["compacted_through"] = through.into();
                tx.put_agent(&a, &agent)
            })
            .await
            .unwrap();
    }
    let store = r.host.store().clone();
    let from = store.path().to_path_buf();
    r.host.shutdown().await;
    store.close().await.unwrap();
    let path = dir.join("history.redb");
    std::fs::copy(&from, &path).unwrap();
    drop(r);
    path
}

/// A test home whose store is a copy of `store`.
pub(super) fn home_with(store: &Path) -> super::support::Home {
    let home = super::support::Home::new();
    std::fs::create_dir_all(home.store_file().parent().unwrap()).unwrap();
    std::fs::copy(store, home.store_file()).unwrap();
    home
}

pub(super) fn sound(path: &Path) {
    let report = holon::store::verify::verify(path).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_removes_only_what_nothing_needs_and_says_where_history_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = history(dir.path(), &["main"]).await;
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let rx = store.read().unwrap();
    let before = rx.events("main", 1, 100_000).unwrap();
    let transcript: Vec<Value> = rx.list(Keyed::Transcript, "main").unwrap();
    let queue: Vec<QueueEntry> = rx.list(Keyed::QueueEntries, "main").unwrap();
    drop(rx);
    let created = before
        .iter()
        .find(|e| e.kind == "work_item_created")
        .unwrap()
        .clone();
    let latest_brief = before
        .iter()
        .rev()
        .find(|e| e.kind == "brief_created")
        .unwrap()
        .event_seq;

    let dry = prune_store(&store, None, future(), true, PruneBy::Operator)
        .await
        .unwrap();
    assert_eq!(dry.agents.len(), 1, "{dry:?}");
    assert_eq!(
        store
            .read()
            .unwrap()
            .events("main", 1, 100_000)
            .unwrap()
            .len(),
        before.len(),
        "a dry run removes nothing"
    );
    let done: PruneReport = prune_store(&store, None, future(), false, PruneBy::Operator)
        .await
        .unwrap();
    let main = &done.agents[0];
    let dry_main = &dry.agents[0];
    assert_eq!(
        (main.events, main.blocks, main.transcript_entries),
        (
            dry_main.events,
            dry_main.blocks,
            dry_main.transcript_entries
        ),
        "the dry run said what the prune did"
    );
    assert!(main.events > 0 && main.blocks > 0, "{main:?}");
    assert_eq!(main.from_seq, 1);
    assert_eq!(main.ledger_start, main.to_seq + 1);
    assert_eq!(
        main.held_by.as_deref().map(|h| h.starts_with("work item")),
        Some(true),
        "{main:?}"
    );

    let rx = store.read().unwrap();
    let after = rx.events("main", 1, 100_000).unwrap();
    assert_eq!(
        after[0].event_seq, main.ledger_start,
        "one run, from the cut"
    );
    for pair in after.windows(2) {
        assert_eq!(pair[1].event_seq, pair[0].event_seq + 1, "no gap");
    }
    // Kept: everything since the open work item, the latest brief.
    assert!(main.ledger_start <= created.event_seq);
    assert!(after.iter().any(|e| e.event_seq == latest_brief));
    assert!(after.iter().any(|e| e.id == created.id));
    // Recorded: the prune itself, last.
    let last = after.last().unwrap();
    assert_eq!(last.kind, "store_pruned");
    assert_eq!(last.payload["events"], main.events);
    assert_eq!(last.payload["ledger_start"], main.ledger_start);
    super::support::assert_typed(&after);

    // The transcript behind the boundary went; after it, all is there.
    let kept: Vec<Value> = rx.list(Keyed::Transcript, "main").unwrap();
    let boundary = transcript.len() / 2;
    assert_eq!(kept.len(), transcript.len() - boundary);
    assert_eq!(kept[0]["id"], transcript[boundary]["id"]);
    assert_eq!(main.transcript_entries as usize, boundary);
    // Settled queue entries whose admission was cut went; the rest stay.
    let left: Vec<QueueEntry> = rx.list(Keyed::QueueEntries, "main").unwrap();
    for e in &left {
        assert!(e.admitted_seq.unwrap() >= main.ledger_start, "{e:?}");
    }
    let gone = queue
        .iter()
        .filter(|e| e.admitted_seq.unwrap() < main.ledger_start)
        .count();
    assert_eq!(left.len(), queue.len() - gone);
    assert_eq!(main.queue_entries as usize, gone);
    // Paging from before the cut says so.
    let page = holon::runtime::pages::events_page(&rx, "main", 1, 10, None)
        .unwrap()
        .unwrap();
    assert_eq!(page.pruned_before, Some(main.ledger_start));
    assert_eq!(page.events[0].event_seq, main.ledger_start);
    let page = holon::runtime::pages::events_page(&rx, "main", main.ledger_start, 10, None)
        .unwrap()
        .unwrap();
    assert_eq!(page.pruned_before, None, "no marker from the start on");
    drop(rx);

    // Again: nothing more is old enough and unneeded.
    let again = prune_store(&store, None, future(), false, PruneBy::Operator)
        .await
        .unwrap();
    assert!(again.agents.is_empty(), "{again:?}");
    store.close().await.unwrap();
    sound(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_cut_short_leaves_no_half_pruned_agent_and_a_rerun_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let path = history(dir.path(), &["main", "dev"]).await;
    let starts = |store: &Store| -> Vec<u64> {
        let rx = store.read().unwrap();
        ["main", "dev"]
            .iter()
            .map(|a| rx.ledger_start(a).unwrap())
            .collect()
    };
    // The whole prune, uninterrupted, on a copy: where each agent ends.
    let clean = dir.path().join("clean.redb");
    std::fs::copy(&path, &clean).unwrap();
    let store = Store::open(&clean, StoreOptions::default()).unwrap();
    let whole = prune_store(&store, None, future(), false, PruneBy::Operator)
        .await
        .unwrap();
    let want = starts(&store);
    store.close().await.unwrap();
    assert!(want.iter().all(|s| *s > 1), "{whole:?}");

    // A prune killed after its first commit: one agent's first job ran,
    // nothing else did (each job is one transaction, so a kill inside
    // one leaves it undone).
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let cutoff = future();
    let (first, _) = store
        .write(move |tx| {
            holon::runtime::retention::prune_agent_in(
                tx,
                "main",
                cutoff,
                false,
                PruneBy::Operator,
                "",
            )
        })
        .await
        .unwrap();
    let rx = store.read().unwrap();
    assert_eq!(rx.ledger_start("main").unwrap(), first.ledger_start);
    assert_eq!(rx.ledger_start("dev").unwrap(), 1, "dev untouched");
    let recorded = rx.events_of_kind("main", "store_pruned", 1, 10).unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].payload["ledger_start"], first.ledger_start);
    drop(rx);
    store.close().await.unwrap();
    sound(&path);

    // The rerun finishes where the whole prune ended.
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let rest = prune_store(&store, None, future(), false, PruneBy::Operator)
        .await
        .unwrap();
    assert_eq!(starts(&store), want, "{rest:?}");
    assert!(
        rest.agents
            .iter()
            .all(|a| a.agent_id != "main" || a.events == 0),
        "main was already cut as far as it goes: {rest:?}"
    );
    store.close().await.unwrap();
    sound(&path);
}

/// An agent with nothing to keep (no brief, nothing open) still keeps its
/// newest event: a ledger is never emptied, so a sequence is never given
/// out twice, even by a process that reads the last one from the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_never_empties_a_ledger_nor_lets_a_sequence_be_reused() {
    use holon::model::agent::AgentRecord;
    use holon::model::event::{NewEvent, Provenance};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    store
        .write(|tx| {
            tx.put_agent(
                "x",
                &AgentRecord::new("x", holon::format_ts(holon::now_ms())),
            )
        })
        .await
        .unwrap();
    // Enough events, in batches, for the writer to seal them all into
    // blocks, the last one included.
    for batch in 0..40 {
        store
            .write(move |tx| {
                for i in 0..50 {
                    tx.append_event(NewEvent {
                        agent_id: "x".into(),
                        kind: "config_reloaded",
                        provenance: Provenance::default(),
                        payload: serde_json::json!({ "note": format!("{batch}-{i} {}", "y".repeat(200)) }),
                    })?;
                }
                Ok(())
            })
            .await
            .unwrap();
    }
    let last = store.read().unwrap().last_seq("x").unwrap();
    assert_eq!(last, 2000);
    let report = prune_store(&store, None, future(), false, PruneBy::Operator)
        .await
        .unwrap();
    let x = &report.agents[0];
    assert!(x.events > 0 && x.to_seq < last, "{x:?}");
    store.close().await.unwrap();
    // A fresh open reads the last sequence from the file.
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let next = store
        .write(|tx| {
            tx.append_event(NewEvent {
                agent_id: "x".into(),
                kind: "config_reloaded",
                provenance: Provenance::default(),
                payload: serde_json::json!({}),
            })
        })
        .await
        .unwrap();
    assert_eq!(
        next,
        last + 2,
        "after the prune's own event, never a reused seq"
    );
    store.close().await.unwrap();
    sound(&path);
}
