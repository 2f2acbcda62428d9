//! Retention through the binary: `holon store prune` offline and through
//! a daemon pruning for `[store] retain_days` on its own clock, bad input,
//! a clock that stepped back, the command killed with SIGKILL, and the
//! simulated life (CI-sized, correctness only).

use std::path::Path;

use holon::store::{Store, StoreOptions};
use serde_json::Value;

use super::retention::{history, home_with, sound, DAY_MS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_prune_runs_offline_and_in_the_runtime_on_its_clock() {
    use super::support::{stderr, Daemon};
    let dir = tempfile::tempdir().unwrap();
    let path = history(dir.path(), &["main"]).await;
    let home = home_with(&path);
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
    let dry_run = [
        "store",
        "prune",
        "--older-than",
        "30d",
        "--dry-run",
        "--json",
    ];
    let dry = json(&dry_run);
    let would = dry["agents"][0]["events"].as_u64().unwrap();
    assert!(would > 0, "{dry}");
    let again = json(&dry_run);
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
    let whole = home_with(&path);
    assert!(prune(&whole).output().unwrap().status.success());
    let want: Vec<u64> = starts(&whole.store_file()).iter().map(|s| s.0).collect();
    assert!(want.iter().all(|s| *s > 1), "{want:?}");

    for delay_ms in [0u64, 5, 10, 20, 40, 80] {
        let home = home_with(&path);
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
