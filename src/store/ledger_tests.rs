//! The event ledger as rows and sealed blocks (`ledger`), on real redb
//! files: every read path sees one sequence per agent, blocks fill their
//! pages, an older file's rows stay rows, bad blocks are clear errors.

use serde_json::json;

use super::*;
use crate::model::event::{NewEvent, Provenance};

fn open(path: &std::path::Path) -> Store {
    Store::open(path, StoreOptions::default()).unwrap()
}

/// Event `n` of a test ledger: kinds in a fixed pattern, payloads of
/// varied length (some far larger than a block), text that compresses
/// like real records do.
fn nth(agent: &str, n: u64) -> NewEvent {
    with_big(agent, n, true)
}

fn with_big(agent: &str, n: u64, big: bool) -> NewEvent {
    let kind = ["note", "tick", "turn_started", "turn_failed"][(n % 4) as usize];
    let words = (n * 7919 % 23) as usize;
    let mut text = format!("event {n} of {agent}: ");
    for w in 0..words {
        text.push_str(["look at ", "the build ", "and report ", "what broke; "][w % 4]);
    }
    if big && n % 97 == 5 {
        // Incompressible and larger than a block on its own.
        let mut x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        text.extend((0..12_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        }));
    }
    NewEvent {
        agent_id: agent.to_owned(),
        kind,
        provenance: Provenance::default(),
        payload: json!({ "n": n, "text": text }),
    }
}

fn seqs(events: &[EventRecord]) -> Vec<u64> {
    events.iter().map(|e| e.event_seq).collect()
}

/// Append `total` events to "a" (and every fifth batch one to "b") in
/// batches of 1 to 13, with or without events larger than a block.
async fn fill(store: &Store, total: u64, big: bool) {
    let mut n = 0u64;
    let mut batch = 0u64;
    while n < total {
        let size = (batch * 5 % 13 + 1).min(total - n);
        let first = n;
        let b = batch;
        store
            .write(move |tx| {
                for i in first..first + size {
                    tx.append_event(with_big("a", i + 1, big))?;
                }
                if b.is_multiple_of(5) {
                    tx.append_event(with_big("b", b, big))?;
                }
                Ok(())
            })
            .await
            .unwrap();
        n += size;
        batch += 1;
    }
}

/// `batches` writes of ten events of agent `a` each (`nth` from 1000 on).
async fn append_batches(store: &Store, batches: u64) {
    for n in 0..batches {
        store
            .write(move |tx| {
                for i in 0..10 {
                    tx.append_event(nth("a", 1000 + n * 10 + i))?;
                }
                Ok(())
            })
            .await
            .unwrap();
    }
}

/// The keys of `event_blocks` for an agent, and its rows' count.
fn layout(path: &std::path::Path, agent: &str) -> (Vec<u64>, usize) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let keys = |def: redb::TableDefinition<(&str, u64), &[u8]>| -> Vec<u64> {
        let t = txn.open_table(def).unwrap();
        t.range((agent, 0)..=(agent, u64::MAX))
            .unwrap()
            .map(|r| r.map(|(k, _)| k.value().1).unwrap())
            .collect()
    };
    (keys(schema::EVENT_BLOCKS), keys(schema::EVENTS).len())
}

#[tokio::test]
async fn a_long_ledger_is_sealed_into_blocks_and_reads_back_the_same_every_way() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = open(&path);
    let total = 1500u64;
    fill(&store, total, true).await;
    store.close().await.unwrap();
    let (blocks, rows) = layout(&path, "a");
    assert!(blocks.len() >= 40, "{} blocks", blocks.len());
    assert!(rows < 100, "{rows} rows left unsealed");

    let store = open(&path);
    let rx = store.read().unwrap();
    assert_eq!(rx.last_seq("a").unwrap_or(0), total);
    let all = rx.events("a", 1, 10_000).unwrap();
    assert_eq!(seqs(&all), (1..=total).collect::<Vec<_>>());
    for e in &all {
        assert_eq!(e.payload["n"], e.event_seq, "{}", e.event_seq);
        assert_eq!(e.agent_id, "a");
    }
    // Pages starting and ending on and around every block boundary, and
    // on the rows after the last block.
    let mut cursors: Vec<u64> = vec![1, 2, total - 1, total, total + 1];
    for k in &blocks {
        cursors.extend([k - 1, *k, k + 1]);
    }
    for from in cursors {
        for limit in [1usize, 7, 40] {
            let want: Vec<u64> = (from..=total).take(limit).collect();
            let page = rx.events("a", from, limit).unwrap();
            assert_eq!(seqs(&page), want, "from {from} limit {limit}");
            let raw = rx.events_raw("a", from, limit).unwrap();
            let raw_seqs: Vec<u64> = raw.iter().map(|(s, _)| *s).collect();
            assert_eq!(raw_seqs, want);
            for (seq, json) in raw {
                let e: EventRecord =
                    serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{seq}: {e}"));
                assert_eq!(e.event_seq, seq);
            }
            let before = rx.events_before("a", from, limit).unwrap();
            let top = from.min(total + 1);
            let lo = top.saturating_sub(limit as u64).max(1);
            assert_eq!(
                seqs(&before),
                (lo..top).collect::<Vec<_>>(),
                "before {from} limit {limit}"
            );
        }
    }
    // By kind, through the index, forward and newest first.
    let turn_failed: Vec<u64> = (1..=total).filter(|n| n % 4 == 3).collect();
    let page = rx.events_of_kind("a", "turn_failed", 100, 10_000).unwrap();
    let want: Vec<u64> = turn_failed.iter().copied().filter(|n| *n >= 100).collect();
    assert_eq!(seqs(&page), want);
    let latest = rx.events_of_kind_latest("a", "turn_failed", 5).unwrap();
    assert_eq!(seqs(&latest), turn_failed[turn_failed.len() - 5..].to_vec());
    // The other agent's ledger is whole and its own.
    let b = rx.events("b", 1, 10_000).unwrap();
    assert_eq!(seqs(&b), (1..=b.len() as u64).collect::<Vec<_>>());
    assert!(b.iter().all(|e| e.agent_id == "b"));
    drop(rx);
    // Appending goes on from the right number.
    let seq = store
        .write(|tx| tx.append_event(nth("a", 0)))
        .await
        .unwrap();
    assert_eq!(seq, total + 1);
    store.close().await.unwrap();
}

/// Rows of an append-only table leave redb's leaves half empty; blocks
/// fill theirs.
#[tokio::test]
async fn sealed_blocks_fill_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = open(&path);
    fill(&store, 3000, false).await;
    store.close().await.unwrap();
    let stats = compact::stats(&path).unwrap();
    let table = |name: &str| {
        stats
            .tables
            .iter()
            .find(|t| t.table == name)
            .unwrap_or_else(|| panic!("no table {name}"))
    };
    let blocks = table("event_blocks");
    let rows = table("events");
    let unused = blocks.fragmented_bytes as f64 / blocks.stored_bytes as f64;
    assert!(unused < 0.1, "blocks: {blocks:?}");
    // What is left unsealed is about a block's worth per agent.
    assert!(rows.rows < 300, "{blocks:?} {rows:?}");
}

/// A schema-2 file of `rows` events of agent `a`, one row each (kind
/// `note`, stamped `ts(seq)`), with its per-event kind index.
fn schema2_file(path: &std::path::Path, rows: u64, ts: impl Fn(u64) -> &'static str) {
    let old: Vec<((&str, u64), Vec<u8>)> = (1..=rows)
        .map(|n| {
            let e = EventRecord {
                event_seq: n,
                id: format!("evt_old_{n}"),
                ts: ts(n).into(),
                kind: "note".into(),
                agent_id: "a".into(),
                provenance: Provenance::default(),
                payload: json!({ "n": n, "text": "written before blocks, one row per event" }),
            };
            (("a", n), codec::pack(serde_json::to_vec(&e).unwrap()))
        })
        .collect();
    super::tests::raw_file(path, 2, &old);
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut index = txn.open_table(schema::EVENTS_BY_KIND).unwrap();
        for n in 1..=rows {
            index.insert(("a", "note", n), ()).unwrap();
        }
    }
    txn.commit().unwrap();
}

/// A schema-2 file (every event a row) keeps its rows as they are; the
/// events after them are sealed, and the ledger reads as one. Its
/// per-event kind index becomes chunks.
#[tokio::test]
async fn an_older_files_rows_stay_rows_and_what_follows_is_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    schema2_file(&path, 300, |_| "2026-11-01T00:00:00.000Z");
    let store = open(&path);
    append_batches(&store, 40).await;
    let rx = store.read().unwrap();
    let all = rx.events("a", 1, 10_000).unwrap();
    assert_eq!(seqs(&all), (1..=700).collect::<Vec<_>>());
    assert_eq!(all[299].id, "evt_old_300");
    let back = rx.events_before("a", 310, 20).unwrap();
    assert_eq!(seqs(&back), (290..310).collect::<Vec<_>>());
    // The old index was rebuilt: old and new events, by kind.
    let notes = rx.events_of_kind("a", "note", 1, 10_000).unwrap();
    let want: Vec<u64> = (1..=300)
        .chain((301..=700).filter(|s| (1000 + s - 301) % 4 == 0))
        .collect();
    assert_eq!(seqs(&notes), want);
    drop(rx);
    store.close().await.unwrap();
    let tables = compact::stats(&path).unwrap().tables;
    assert!(
        tables.iter().all(|t| t.table != "events_by_kind"),
        "{tables:?}"
    );
    let (blocks, rows) = layout(&path, "a");
    assert!(!blocks.is_empty());
    assert!(blocks.iter().all(|k| *k > 300), "{blocks:?}");
    assert!((300..400).contains(&rows), "{rows} rows");
}

fn refused(stored: &[u8]) -> String {
    match ledger::Block::decode("a", 9, stored) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("decoded a corrupt block"),
    }
}

#[test]
fn a_corrupt_block_is_a_clear_error_naming_it() {
    // A good block of two events ending at 9, as the writer lays it out.
    let mut good = vec![b'B'];
    good.extend_from_slice(&2u32.to_le_bytes());
    good.extend_from_slice(&2u32.to_le_bytes());
    good.extend_from_slice(&3u32.to_le_bytes());
    good.extend_from_slice(b"{}[1]");
    let block = ledger::Block::decode("a", 9, &good).unwrap();
    assert_eq!(block.get(8), Some(&b"{}"[..]));
    assert_eq!(block.get(9), Some(&b"[1]"[..]));
    assert_eq!(block.get(7), None);
    assert_eq!(block.get(10), None);

    let e = refused(&good[..7]);
    assert!(e.contains("event_blocks") && e.contains("a/9"), "{e}");
    assert!(refused(&good[..good.len() - 1]).contains("runs past its end"));
    let mut longer = good.clone();
    longer.push(b' ');
    assert!(refused(&longer).contains("after its last event"));
    let mut zero = good.clone();
    zero[1..5].copy_from_slice(&0u32.to_le_bytes());
    assert!(refused(&zero).contains("claims 0 events"));
    let mut many = good.clone();
    many[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(refused(&many).contains("events ending at 9"));
    assert!(refused(br#"{"not":"a block"}"#).contains("not a block header"));
    assert!(refused(&[0x07, 1, 2]).contains("encoding tag"));
}

/// A gap in an agent's unsealed rows (a damaged file) is not sealed over:
/// planning fails, the rows stay rows.
#[test]
fn a_gap_in_the_rows_is_not_sealed_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let rows: Vec<((&str, u64), Vec<u8>)> = [1u64, 2, 4]
        .iter()
        .map(|n| {
            (
                ("a", *n),
                format!(r#"{{"pad":"{}"}}"#, "x".repeat(3000)).into_bytes(),
            )
        })
        .collect();
    super::tests::raw_file(&path, 3, &rows);
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(schema::EVENTS).unwrap();
    match seal::plan_seal(&t, 0, "a") {
        Err(e) => assert!(e.to_string().contains("skip from 2 to 4"), "{e}"),
        Ok(plan) => panic!("planned {} blocks over a gap", !plan.is_empty() as u8),
    }
}

/// The block search finds the longest prefix that fits whatever it is
/// told to start from (brute force says which).
#[test]
fn the_block_search_finds_the_longest_prefix_that_fits_from_any_guess() {
    let events: Vec<Vec<u8>> = (0..60u64)
        .map(|n| {
            let e = with_big("a", n, true);
            serde_json::to_vec(&e.payload).unwrap()
        })
        .collect();
    for target in [60usize, 400, 1500, 4000] {
        let want = (1..=events.len())
            .rev()
            .find(|n| {
                // With no limit, the whole prefix is the block.
                seal::longest_fit(&events[..*n], usize::MAX, *n).1.len() <= target
            })
            .unwrap_or(1);
        for guess in [0usize, 1, 2, 7, 30, 59, 60, 500] {
            let (n, bytes) = seal::longest_fit(&events, target, guess);
            assert_eq!(n, want, "target {target} guess {guess}");
            assert!(n == 1 || bytes.len() <= target);
        }
    }
}

/// A schema-2 file's rows are pruned as rows: by their own times (a clock
/// that stepped back among them prunes them all the same), stopping at
/// the first young row, with their kind index; what follows stays whole.
#[tokio::test]
async fn an_older_files_rows_are_pruned_row_by_row_up_to_the_first_young_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let ts = |n: u64| match n {
        1..=100 => "2026-10-01T00:00:00.000Z",
        // The clock stepped back a month, among the old rows.
        101..=200 => "2026-09-01T00:00:00.000Z",
        _ => "2026-11-01T00:00:00.000Z",
    };
    schema2_file(&path, 300, ts);
    let store = open(&path);
    append_batches(&store, 10).await;
    let cut = store
        .write(|tx| tx.cut_ledger("a", u64::MAX, "2026-10-15T00:00:00.000Z", 10_000, true))
        .await
        .unwrap();
    assert_eq!((cut.from_seq, cut.to_seq), (1, 200), "{cut:?}");
    assert_eq!((cut.rows, cut.blocks, cut.events), (200, 0, 200), "{cut:?}");
    let rx = store.read().unwrap();
    assert_eq!(rx.ledger_start("a").unwrap(), 201);
    let all = rx.events("a", 1, 10_000).unwrap();
    assert_eq!(seqs(&all), (201..=400).collect::<Vec<_>>());
    let notes = rx.events_of_kind("a", "note", 1, 10_000).unwrap();
    assert!(
        notes.first().is_some_and(|e| e.event_seq == 201),
        "{:?}",
        seqs(&notes)
    );
    drop(rx);
    store.close().await.unwrap();
    let report = super::verify::verify(&path).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
