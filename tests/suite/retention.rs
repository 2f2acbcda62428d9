//! Retention on a real store: what a prune removes and what it keeps, the
//! "pruned before" marker, a dry run, a rerun, and a prune cut short by a
//! failed commit (what a kill between commits leaves) that a rerun
//! finishes.

use std::path::Path;

use holon::model::retention::{PruneBy, PruneReport};
use holon::runtime::envelope::Priority;
use holon::runtime::provider::scripted::Scripted;
use holon::runtime::queue::QueueEntry;
use holon::runtime::retention::prune_store;
use holon::store::{Keyed, Store, StoreOptions};
use serde_json::Value;

use super::runtime_core::{prompt, rig};

const DAY_MS: i64 = 86_400_000;

/// A cutoff a day ahead: everything written so far counts as old, so the
/// test sees what only the "still needed" rules keep.
fn future() -> i64 {
    holon::now_ms() + DAY_MS
}

/// An agent's history: prompts answered, then an open work item, then
/// more prompts, and a compaction boundary in the middle of the
/// transcript. Returns the store's path (the runtime is stopped).
async fn history(dir: &Path, agents: &[&str]) -> std::path::PathBuf {
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
        let req = holon::runtime::work_ops::CreateWorkItem {
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

fn sound(path: &Path) {
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
    let page = holon::runtime::inspect::events_page(&rx, "main", 1, 10, None)
        .unwrap()
        .unwrap();
    assert_eq!(page.pruned_before, Some(main.ledger_start));
    assert_eq!(page.events[0].event_seq, main.ledger_start);
    let page = holon::runtime::inspect::events_page(&rx, "main", main.ledger_start, 10, None)
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
            holon::runtime::retention::prune_agent_in(tx, "main", cutoff, false, PruneBy::Operator)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_prune_runs_offline_and_in_the_runtime_on_its_clock() {
    use super::support::{stderr, Daemon, Home};
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let path = history(dir.path(), &["main"]).await;
    std::fs::create_dir_all(home.store_file().parent().unwrap()).unwrap();
    std::fs::copy(&path, home.store_file()).unwrap();
    // The runtime's clock, 40 days on: the history is 40 days old.
    let later = holon::format_ts(holon::now_ms() + 40 * DAY_MS);
    let run = |args: &[&str]| {
        home.cmd()
            .env("HOLON_DEBUG_CLOCK", &later)
            .args(args)
            .output()
            .unwrap()
    };
    let json = |args: &[&str]| -> Value {
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };

    // Bad input is refused with what to give instead.
    let out = run(&["store", "prune"]);
    assert!(
        stderr(&out).contains("[store] retain_days"),
        "{}",
        stderr(&out)
    );
    let out = run(&["store", "prune", "--older-than", "0d"]);
    assert!(stderr(&out).contains("out of range"), "{}", stderr(&out));
    let out = home
        .cmd()
        .env("HOLON_DEBUG_CLOCK", "last tuesday")
        .args(["store", "prune", "--older-than", "1d"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("HOLON_DEBUG_CLOCK: `last tuesday` is not an RFC 3339 instant"),
        "{}",
        stderr(&out)
    );

    // Nothing is 50 days old; on the wall clock nothing is even a day old.
    let none = json(&["store", "prune", "--older-than", "50d", "--json"]);
    assert_eq!(none["agents"].as_array().map(Vec::len), Some(0), "{none}");
    let out = home.ok(&[
        "store",
        "prune",
        "--older-than",
        "1d",
        "--dry-run",
        "--json",
    ]);
    assert!(out.contains("\"agents\": []"), "{out}");

    // A clock that stepped back (before the history was written) prunes
    // nothing: everything is younger than its cutoff.
    let earlier = holon::format_ts(holon::now_ms() - 40 * DAY_MS);
    let out = home
        .cmd()
        .env("HOLON_DEBUG_CLOCK", &earlier)
        .args(["store", "prune", "--older-than", "1d", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agents"].as_array().map(Vec::len), Some(0), "{v}");

    // Offline, a dry run says what would go and removes nothing.
    let dry = json(&[
        "store",
        "prune",
        "--older-than",
        "30d",
        "--dry-run",
        "--json",
    ]);
    let would = dry["agents"][0]["events"].as_u64().unwrap();
    assert!(would > 0, "{dry}");
    let again = json(&[
        "store",
        "prune",
        "--older-than",
        "30d",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(again["agents"][0]["events"], would);

    // Through a runtime whose config keeps 30 days: it prunes by itself
    // at start, on its clock.
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config/config.toml"),
        "[store]\nretain_days = 30\n",
    )
    .unwrap();
    let out = run(&["--detach"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&home);
    let pruned = super::support::poll("the scheduled prune", || {
        let out = home.ok(&["events", "--kind", "store_pruned", "--json"]);
        super::support::json_lines(&out).into_iter().next()
    });
    assert_eq!(pruned["payload"]["by"], "retain_days");
    assert_eq!(pruned["payload"]["events"].as_u64(), Some(would));
    let start = pruned["payload"]["ledger_start"].as_u64().unwrap();
    // Paging from 1 says where history starts now.
    let out = home.run(&["events", "--json", "--limit", "1"]);
    assert!(
        stderr(&out).contains(&format!("events before seq {start} were pruned")),
        "{}",
        stderr(&out)
    );
    let first: Value =
        serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first["event_seq"].as_u64(), Some(start));
    // Asked through the runtime: nothing more to prune.
    let online = json(&["store", "prune", "--json"]);
    assert_eq!(
        online["agents"].as_array().map(Vec::len),
        Some(0),
        "{online}"
    );
    drop(_daemon);
    let text = home.ok(&["store", "verify"]);
    assert!(text.ends_with(": sound\n"), "{text}");
}

/// The simulated life, CI-sized: 3 agents for 40 days on a paused clock
/// with 10 days kept. Only correctness is asserted (no figure): the store
/// is sound, history was pruned yet nothing still needed went, and every
/// prompt was answered.
#[test]
fn a_simulated_life_with_retention_keeps_what_is_needed() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("life");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_holon"))
        .args(["debug", "life", "--agents", "3", "--days", "40"])
        .args(["--retain-days", "10", "--json", "--dir"])
        .arg(&home)
        .env_remove("HOLON_DEBUG_CLOCK")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let months = report["months"].as_array().unwrap();
    assert_eq!(months.len(), 3, "day 0, day 30 and the last day: {report}");
    let last = months.last().unwrap();
    assert!(
        last["events_kept"].as_u64() < last["events_written"].as_u64(),
        "history was pruned: {last}"
    );
    let store_file = home.join("data").join("holon.redb");
    sound(&store_file);
    let store = Store::open(&store_file, StoreOptions::default()).unwrap();
    let rx = store.read().unwrap();
    for agent in report["agents"].as_array().unwrap() {
        let a = agent.as_str().unwrap();
        let start = rx.ledger_start(a).unwrap();
        assert!(start > 1, "{a} was pruned");
        // Every prompt was answered: nothing is left queued or in flight.
        assert!(rx.queue_pending(a).unwrap().is_empty(), "{a}");
        assert!(rx
            .index_list(holon::store::Index::Dequeued, a)
            .unwrap()
            .is_empty());
        // Every open work item's creation is still in the ledger.
        let created = rx
            .events_of_kind(a, "work_item_created", 1, 10_000)
            .unwrap();
        for id in rx
            .index_list(holon::store::Index::OpenWorkItems, a)
            .unwrap()
        {
            assert!(
                created
                    .iter()
                    .any(|e| e.payload["work_item"]["id"] == id.as_str()),
                "{a}: the creation of open work item {id} was kept"
            );
        }
        // The latest brief is there; the transcript after the compaction
        // boundary is whole.
        assert!(!rx
            .events_of_kind_latest(a, "brief_created", 1)
            .unwrap()
            .is_empty());
        let events = rx.events(a, 1, 100_000).unwrap();
        assert_eq!(events[0].event_seq, start);
        super::support::assert_typed(&events);
    }
    let compactions: usize = report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            rx.events_of_kind(a.as_str().unwrap(), "context_compacted", 1, 1000)
                .unwrap()
                .len()
        })
        .sum();
    assert!(compactions > 0, "the agents compacted their context");
}

/// An agent with nothing to keep (no brief, nothing open) still keeps its
/// newest event: a ledger is never emptied, so a sequence is never given
/// out twice, even by a process that reads the last one from the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_never_empties_a_ledger_nor_lets_a_sequence_be_reused() {
    use holon::runtime::agent::AgentRecord;
    use holon::store::{NewEvent, Provenance};
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

/// `holon store prune` killed with SIGKILL at several moments of its run:
/// whatever the moment, the store is sound, each agent is as it was or cut
/// with its `store_pruned` event saying where, and a rerun ends where an
/// uninterrupted prune does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_killed_at_any_moment_leaves_nothing_half_pruned() {
    use super::support::Home;
    let dir = tempfile::tempdir().unwrap();
    let path = history(dir.path(), &["main", "dev"]).await;
    let later = holon::format_ts(holon::now_ms() + 40 * DAY_MS);
    let starts = |store_file: &Path| -> Vec<(u64, Option<u64>)> {
        let store = Store::open(store_file, StoreOptions::default()).unwrap();
        let rx = store.read().unwrap();
        let out = ["main", "dev"]
            .iter()
            .map(|a| {
                let recorded = rx
                    .events_of_kind(a, "store_pruned", 1, 100)
                    .unwrap()
                    .last()
                    .map(|e| e.payload["ledger_start"].as_u64().unwrap());
                (rx.ledger_start(a).unwrap(), recorded)
            })
            .collect();
        drop(rx);
        drop(store);
        out
    };
    let prune = |home: &Home| {
        let mut c = home.cmd();
        c.env("HOLON_DEBUG_CLOCK", &later)
            .args(["store", "prune", "--older-than", "30d"]);
        c
    };
    // Uninterrupted, on its own copy: where each agent ends.
    let whole = Home::new();
    std::fs::create_dir_all(whole.store_file().parent().unwrap()).unwrap();
    std::fs::copy(&path, whole.store_file()).unwrap();
    assert!(prune(&whole).output().unwrap().status.success());
    let want: Vec<u64> = starts(&whole.store_file()).iter().map(|s| s.0).collect();
    assert!(want.iter().all(|s| *s > 1), "{want:?}");

    for delay_ms in [0u64, 5, 10, 20, 40, 80] {
        let home = Home::new();
        std::fs::create_dir_all(home.store_file().parent().unwrap()).unwrap();
        std::fs::copy(&path, home.store_file()).unwrap();
        let mut child = prune(&home)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        // SAFETY: the test's own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();
        sound(&home.store_file());
        for (start, recorded) in starts(&home.store_file()) {
            match recorded {
                Some(s) => assert_eq!(s, start, "killed after {delay_ms} ms"),
                None => assert_eq!(start, 1, "killed after {delay_ms} ms"),
            }
        }
        assert!(prune(&home).output().unwrap().status.success());
        let now: Vec<u64> = starts(&home.store_file()).iter().map(|s| s.0).collect();
        assert_eq!(
            now, want,
            "the rerun after a kill at {delay_ms} ms finished it"
        );
    }
}
