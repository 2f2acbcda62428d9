//! Store behaviour on real redb files: group commit, sequencing, failure
//! isolation, publication after commit, paging.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::model::event::{NewEvent, Provenance};

fn event(agent: &str, n: u64) -> NewEvent {
    NewEvent {
        agent_id: agent.to_owned(),
        kind: if n.is_multiple_of(3) { "tick" } else { "note" },
        provenance: Provenance::default(),
        payload: json!({ "n": n }),
    }
}

fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap()
}

#[derive(Debug, thiserror::Error)]
#[error("refused on purpose")]
struct Refused;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_get_contiguous_sequences_per_agent() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..600u64 {
        let store = store.clone();
        let agent = if n % 2 == 0 { "a" } else { "b" };
        tasks.spawn(async move {
            store
                .write(move |tx| tx.append_event(event(agent, n)))
                .await
        });
    }
    let mut seqs = Vec::new();
    while let Some(r) = tasks.join_next().await {
        seqs.push(r.unwrap().unwrap());
    }
    seqs.sort();
    // Each agent got 1..=300 exactly once.
    let mut expected: Vec<u64> = (1..=300).chain(1..=300).collect();
    expected.sort();
    assert_eq!(seqs, expected);
    let rx = store.read().unwrap();
    for agent in ["a", "b"] {
        assert_eq!(rx.last_seq(agent).unwrap_or(0), 300);
        let page = rx.events(agent, 1, 1000).unwrap_or_default();
        let got: Vec<u64> = page.iter().map(|e| e.event_seq).collect();
        assert_eq!(got, (1..=300).collect::<Vec<_>>());
        assert!(page.iter().all(|e| e.agent_id == agent));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_leaves_no_trace_and_spares_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..200u64 {
        let store = store.clone();
        tasks.spawn(async move {
            let r = store
                .write(move |tx| {
                    let seq = tx.append_event(event("a", n))?;
                    tx.put(Keyed::WorkItems, "a", &format!("w{n:03}"), &json!({"n": n}))?;
                    if n % 10 == 7 {
                        return Err(StoreError::rejected(Refused));
                    }
                    Ok(seq)
                })
                .await;
            (n, r)
        });
    }
    let mut ok = 0;
    while let Some(r) = tasks.join_next().await {
        let (n, r) = r.unwrap();
        match r {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(n % 10, 7, "only refusing jobs fail: {e}");
                assert_eq!(e.to_string(), "refused on purpose");
            }
        }
    }
    assert_eq!(ok, 180);
    let rx = store.read().unwrap();
    assert_eq!(rx.last_seq("a").unwrap_or(0), 180);
    let items: Vec<serde_json::Value> = rx.list(Keyed::WorkItems, "a").unwrap_or_default();
    assert_eq!(items.len(), 180);
    assert!(items.iter().all(|v| v["n"].as_u64().unwrap_or(7) % 10 != 7));
    let seqs: Vec<u64> = rx
        .events("a", 1, 500)
        .unwrap_or_default()
        .iter()
        .map(|e| e.event_seq)
        .collect();
    assert_eq!(
        seqs,
        (1..=180).collect::<Vec<_>>(),
        "no gap left by refused jobs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_published_after_commit_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let mut sub = store.subscribe();
    let reader = store.clone();
    let check = tokio::spawn(async move {
        let mut got = Vec::new();
        while got.len() < 100 {
            let ev: Arc<EventRecord> = sub.recv().await.unwrap();
            // Published events are already durable: a fresh reader sees them.
            let rx = reader.read().unwrap();
            assert!(rx.last_seq(&ev.agent_id).unwrap_or(0) >= ev.event_seq);
            got.push(ev.event_seq);
        }
        got
    });
    for n in 0..100u64 {
        store
            .write(move |tx| tx.append_event(event("a", n)))
            .await
            .unwrap();
    }
    let got = check.await.unwrap();
    assert_eq!(got, (1..=100).collect::<Vec<_>>());
}

#[tokio::test]
async fn pages_by_cursor_by_kind_and_backwards() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store
        .write(|tx| {
            for n in 1..=50u64 {
                tx.append_event(event("a", n))?;
            }
            tx.append_event(event("b", 3))?;
            Ok(())
        })
        .await
        .unwrap();
    let rx = store.read().unwrap();
    let page = rx.events("a", 20, 10).unwrap_or_default();
    assert_eq!(page.first().map(|e| e.event_seq), Some(20));
    assert_eq!(page.len(), 10);
    let ticks = rx.events_of_kind("a", "tick", 10, 100).unwrap_or_default();
    let seqs: Vec<u64> = ticks.iter().map(|e| e.event_seq).collect();
    assert_eq!(
        seqs,
        vec![12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48]
    );
    assert!(ticks.iter().all(|e| e.kind == "tick" && e.agent_id == "a"));
    let before = rx.events_before("a", 11, 4).unwrap_or_default();
    assert_eq!(
        before.iter().map(|e| e.event_seq).collect::<Vec<_>>(),
        vec![7, 8, 9, 10]
    );
    assert!(rx.events("a", 51, 10).unwrap_or_default().is_empty());
    assert_eq!(rx.events("b", 1, 10).unwrap_or_default().len(), 1);
}

#[tokio::test]
async fn sequences_continue_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    for n in 0..5u64 {
        store
            .write(move |tx| tx.append_event(event("a", n)))
            .await
            .unwrap();
    }
    store.close().await.unwrap();
    let store = open(&dir);
    let seq = store
        .write(|tx| tx.append_event(event("a", 9)))
        .await
        .unwrap();
    assert_eq!(seq, 6);
}

#[tokio::test]
async fn a_second_open_is_refused_as_locked_until_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    match Store::open(&path, StoreOptions::default()) {
        Err(e @ StoreError::Locked { .. }) => {
            assert!(e.to_string().contains("holon attach"), "{e}")
        }
        Err(e) => panic!("expected Locked, got {e}"),
        Ok(_) => panic!("second open succeeded"),
    }
    store.close().await.unwrap();
    assert!(Store::open(&path, StoreOptions::default()).is_ok());
}

/// A store file written with redb alone: the given schema version and
/// these events' bytes as they are.
pub(super) fn raw_file(path: &std::path::Path, version: u32, events: &[((&str, u64), Vec<u8>)]) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn.open_table(schema::META).unwrap();
        meta.insert("schema_version", version.to_le_bytes().as_slice())
            .unwrap();
        let mut table = txn.open_table(schema::EVENTS).unwrap();
        for (key, bytes) in events {
            table.insert(key, bytes.as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
}

#[test]
fn garbage_and_newer_schema_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.redb");
    std::fs::write(&path, vec![0x5Au8; 64 * 1024]).unwrap();
    match Store::open(&path, StoreOptions::default()) {
        Err(e @ StoreError::Corrupt { .. }) => assert!(e.to_string().contains("mv "), "{e}"),
        Err(e) => panic!("expected Corrupt, got {e}"),
        Ok(_) => panic!("garbage opened"),
    }
    // A file from a newer schema version.
    let path = dir.path().join("n.redb");
    raw_file(&path, 99, &[]);
    match Store::open(&path, StoreOptions::default()) {
        Err(StoreError::NewerSchema { found: 99, .. }) => {}
        Err(e) => panic!("expected NewerSchema, got {e}"),
        Ok(_) => panic!("newer schema opened"),
    }
}

/// A version-1 file (every value plain JSON) opens as it is: its records
/// read back, it is marked the current version so an older build refuses it, and new
/// records are stored compressed next to the old ones (events once sealed).
#[tokio::test]
async fn a_version_1_file_is_read_as_it_is_and_new_records_are_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let old = EventRecord {
        event_seq: 1,
        id: "evt_old".into(),
        ts: "2026-11-01T00:00:00.000Z".into(),
        kind: "note".into(),
        agent_id: "a".into(),
        provenance: Provenance::default(),
        payload: json!({ "text": "written by schema 1, before values were compressed" }),
    };
    let json = serde_json::to_vec(&old).unwrap();
    raw_file(&path, 1, &[(("a", 1), json)]);
    let store = open(&dir);
    let text = "a new record, long enough that the store compresses it on its way to disk";
    store
        .write(move |tx| {
            let objective = format!("{text}; {text}");
            tx.put(
                Keyed::WorkItems,
                "a",
                "w1",
                &json!({ "objective": objective }),
            )?;
            tx.append_event(NewEvent {
                payload: json!({ "text": text }),
                ..event("a", 1)
            })
        })
        .await
        .unwrap();
    let rx = store.read().unwrap();
    let item: Option<serde_json::Value> = rx.get(Keyed::WorkItems, "a", "w1").unwrap();
    assert_eq!(
        item.map(|v| v["objective"].clone()),
        Some(json!(format!("{text}; {text}")))
    );
    assert_eq!(rx.schema_version().unwrap(), schema::SCHEMA_VERSION);
    let page = rx.events("a", 1, 10).unwrap();
    assert_eq!(page.len(), 2);
    assert_eq!(page[0].payload, old.payload);
    assert_eq!(page[1].payload["text"], text);
    // The raw page (what the socket splices) is JSON for both.
    let raw = rx.events_raw("a", 1, 10).unwrap();
    let second: EventRecord = serde_json::from_slice(&raw[1].1).unwrap();
    assert_eq!(second.payload["text"], text);
    drop(rx);
    store.close().await.unwrap();
    // On disk, the old event is JSON, and so is the new one while it is
    // an unsealed row (a block compresses it with its neighbours later);
    // the new work item is compressed.
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let events = txn.open_table(schema::EVENTS).unwrap();
    let first_byte = |seq: u64| match events.get(("a", seq)) {
        Ok(Some(v)) => v.value()[0],
        other => panic!("event {seq}: {:?}", other.map(|v| v.is_some())),
    };
    assert_eq!(first_byte(1), b'{');
    assert_eq!(first_byte(2), b'{');
    let items = txn.open_table(Keyed::WorkItems.definition()).unwrap();
    match items.get(("a", "w1")) {
        Ok(Some(v)) => assert_eq!(v.value()[0], codec::LZ4_DICT_V1),
        other => panic!("work item: {:?}", other.map(|v| v.is_some())),
    }
}

#[tokio::test]
async fn compaction_shrinks_the_file_and_keeps_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = open(&dir);
    // Many small commits leave freed copy-on-write pages behind.
    for n in 0..400u64 {
        store
            .write(move |tx| {
                tx.append_event(NewEvent {
                    payload: json!({ "n": n, "pad": "x".repeat(2048) }),
                    ..event("a", n)
                })
            })
            .await
            .unwrap();
    }
    // While the store is open, compaction is refused and changes nothing.
    match compact::compact(&path) {
        Err(StoreError::Locked { .. }) => {}
        other => panic!("expected Locked, got {other:?}"),
    }
    store.close().await.unwrap();

    let report = compact::compact(&path).unwrap();
    assert!(report.bytes_after < report.bytes_before, "{report:?}");
    assert_eq!(
        report.bytes_after,
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
    );
    let store = open(&dir);
    let events = store.read().and_then(|r| r.events("a", 1, 1000)).unwrap();
    assert_eq!(events.len(), 400);
    assert_eq!(events[399].payload["n"], 399);

    match compact::compact(&dir.path().join("missing.redb")) {
        Err(StoreError::Io { .. }) => {}
        other => panic!("expected Io for a missing store, got {other:?}"),
    }
}

/// A small tmpfs, unmounted on drop (needs root; `None` where mounting is
/// not allowed).
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk { dir })
    }
}

impl SmallDisk {
    /// Fill the disk; the filler file is returned, to free the space later.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let filler = self.dir.path().join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
        filler
    }
}

/// An event big enough to fill a small disk quickly.
fn big(n: u64) -> NewEvent {
    NewEvent {
        payload: json!({ "n": n, "pad": "y".repeat(32 * 1024) }),
        ..event("a", n)
    }
}

/// Append big events until a write fails: the `(event_seq, n)` of each
/// acknowledged one, and the failure.
async fn write_until_full(store: &Store) -> (Vec<(u64, u64)>, Option<StoreError>) {
    let mut acked = Vec::new();
    for n in 0..2_000u64 {
        match store.write(move |tx| tx.append_event(big(n))).await {
            Ok(seq) => acked.push((seq, n)),
            Err(e) => return (acked, Some(e)),
        }
    }
    (acked, None)
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// Freed space heals the store with no request at all: the writer keeps
/// trying, and reads see the reopened file (a failing store never wedges
/// a runtime that only answers status).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freed_disk_heals_the_store_without_any_request() {
    let Some(disk) = SmallDisk::mount("8m") else {
        eprintln!("skipped: cannot mount a tmpfs here (not root)");
        return;
    };
    let path = disk.dir.path().join("s.redb");
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let filler = disk.fill();
    let (acked, _) = write_until_full(&store).await;
    let acked = acked.len() as u64;
    assert!(store.health().is_some(), "the disk never filled");
    // Still full: healing attempts fail and the failure stands.
    let tried = store.heal_attempts();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // Two attempts begun: the first of them has ended, and failed.
    while store.heal_attempts() < tried + 2 {
        assert!(
            store.health().is_some(),
            "healed on a disk that is still full"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never tried to heal"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        store.health().is_some(),
        "healed on a disk that is still full"
    );
    std::fs::remove_file(&filler).unwrap();
    let healed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while store.health().is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(healed.is_ok(), "the store did not heal by itself");
    let events = store.read().and_then(|r| r.events("a", 1, 10_000)).unwrap();
    assert_eq!(
        events.len() as u64,
        acked,
        "every acknowledged event is there"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_clearly_and_the_writer_heals_when_space_returns() {
    let Some(disk) = SmallDisk::mount("8m") else {
        eprintln!("skipped: cannot mount a tmpfs here (not root)");
        return;
    };
    let path = disk.dir.path().join("s.redb");
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    // Fill the disk, keeping the filler to free it later.
    let filler = disk.fill();
    let (acked, failure) = write_until_full(&store).await;
    let failure = failure.expect("the disk never filled");
    assert!(matches!(failure, StoreError::Storage(_)), "{failure}");
    assert!(store.health().is_some(), "health reports the failure");
    // Still full: writes keep failing, clearly and at once (no hang).
    assert!(store
        .write(move |tx| tx.append_event(big(9_999)))
        .await
        .is_err());
    // Space comes back: the next write succeeds without a restart.
    std::fs::remove_file(&filler).unwrap();
    let seq = store
        .write(move |tx| tx.append_event(big(10_000)))
        .await
        .unwrap_or_else(|e| panic!("the writer did not heal: {e}"));
    assert_eq!(store.health(), None);
    // Nothing acknowledged was lost, and sequences stay contiguous.
    let events = store.read().and_then(|r| r.events("a", 1, 10_000)).unwrap();
    for (s, n) in &acked {
        let e = events
            .iter()
            .find(|e| e.event_seq == *s)
            .unwrap_or_else(|| panic!("acknowledged event {s} lost"));
        assert_eq!(e.payload["n"], *n);
    }
    assert_eq!(seq, acked.len() as u64 + 1, "contiguous after the failure");
    store.close().await.unwrap();
}
