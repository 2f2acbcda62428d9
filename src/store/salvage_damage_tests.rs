//! Salvage of the damage a disk or a careless copy does, on real files
//! from `sample`: a damaged header, a tenth of the pages overwritten, a
//! file cut in half. Recovery is measured against the intact store, and
//! every event recovered must be the one written.

use std::collections::BTreeMap;

use super::*;
use crate::store::{Keyed, Store, StoreOptions};

/// Places the sample's tool executions, as the runtime's classifier
/// does by their content.
fn tools(_: &str, id: &str, _: &[u8]) -> Option<Keyed> {
    id.starts_with("tool_").then_some(Keyed::ToolExecutions)
}

/// Per agent, every event's JSON by seq, and the count of tool
/// executions, as the engine reads the store.
type Contents = BTreeMap<String, (BTreeMap<u64, serde_json::Value>, u64)>;

async fn contents(path: &Path) -> Contents {
    let store = Store::open(path, StoreOptions::default()).unwrap();
    let mut out = Contents::new();
    {
        let rx = store.read().unwrap();
        let agents: Vec<serde_json::Value> = rx.agents().unwrap();
        for a in agents {
            let id = a["id"].as_str().unwrap().to_owned();
            let events = rx
                .events(&id, 0, usize::MAX)
                .unwrap()
                .into_iter()
                .map(|e| (e.event_seq, serde_json::to_value(&e).unwrap()))
                .collect();
            let tools = rx.count(Keyed::ToolExecutions, &id).unwrap();
            out.insert(id, (events, tools));
        }
    }
    store.close().await.unwrap();
    out
}

/// What of `before` `after` kept, as (events, tool executions); an
/// event kept that differs from the one written fails the test.
fn kept(before: &Contents, after: &Contents) -> (u64, u64) {
    let (mut events, mut tools) = (0, 0);
    for (agent, (evs, t)) in after {
        let (was, _) = &before[agent];
        for (seq, e) in evs {
            assert_eq!(Some(e), was.get(seq), "{agent} event {seq}");
            events += 1;
        }
        tools += t;
    }
    (events, tools)
}

fn totals(c: &Contents) -> (u64, u64) {
    c.values()
        .fold((0, 0), |(e, t), (evs, n)| (e + evs.len() as u64, t + n))
}

async fn sampled(dir: &Path) -> (PathBuf, Contents) {
    let path = dir.join("intact.redb");
    sample(&path, 2, 3_000).await.unwrap();
    let c = contents(&path).await;
    (path, c)
}

fn damaged(dir: &Path, bytes: &[u8]) -> (PathBuf, PathBuf) {
    let (broken, out) = (dir.join("broken.redb"), dir.join("out.redb"));
    std::fs::write(&broken, bytes).unwrap();
    (broken, out)
}

#[tokio::test]
async fn a_damaged_header_loses_almost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (intact, before) = sampled(dir.path()).await;
    let mut bytes = std::fs::read(&intact).unwrap();
    assert!(
        bytes.len() / scan::PAGE > 150,
        "{} pages",
        bytes.len() / 4096
    );
    bytes[..scan::PAGE].fill(0x5a);
    let (broken, out) = damaged(dir.path(), &bytes);
    let report = salvage(&broken, &out, &tools).unwrap();
    assert!(report.tables.iter().any(|t| t.scanned > 0), "{report:?}");
    let after = contents(&out).await;
    let ((events, tools), (all_events, all_tools)) = (kept(&before, &after), totals(&before));
    assert!(
        events * 100 >= all_events * 99,
        "{events} of {all_events} events"
    );
    assert!(
        tools * 100 >= all_tools * 99,
        "{tools} of {all_tools} records"
    );
    assert_eq!(after.len(), 2, "both agents");
}

#[tokio::test]
async fn a_tenth_of_pages_overwritten_keeps_most_events() {
    let dir = tempfile::tempdir().unwrap();
    let (intact, before) = sampled(dir.path()).await;
    let mut bytes = std::fs::read(&intact).unwrap();
    let pages = bytes.len() / scan::PAGE;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..pages / 10 {
        let page = (next() as usize) % pages;
        for b in &mut bytes[page * scan::PAGE..(page + 1) * scan::PAGE] {
            *b = next() as u8;
        }
    }
    let (broken, out) = damaged(dir.path(), &bytes);
    salvage(&broken, &out, &tools).unwrap();
    let (events, _) = kept(&before, &contents(&out).await);
    let (all, _) = totals(&before);
    assert!(events * 100 >= all * 85, "{events} of {all} events");
}

/// Every event whose stored block (or row) lies whole in the half
/// left is recovered: found by searching the bytes for it, apart from
/// the scanner.
#[tokio::test]
async fn a_store_cut_in_half_keeps_every_event_in_the_half_left() {
    use redb::{ReadableDatabase as _, ReadableTable as _};
    let dir = tempfile::tempdir().unwrap();
    let (intact, before) = sampled(dir.path()).await;
    let bytes = std::fs::read(&intact).unwrap();
    let half = &bytes[..bytes.len() / 2];
    let mut left = Vec::new();
    {
        let db = redb::Database::open(&intact).unwrap();
        let txn = db.begin_read().unwrap();
        let blocks = txn.open_table(crate::store::schema::EVENT_BLOCKS).unwrap();
        for row in blocks.iter().unwrap() {
            let (k, v) = row.unwrap();
            let (agent, last) = k.value();
            let stored = v.value();
            let head = &stored[..stored.len().min(48)];
            let found = half
                .windows(head.len())
                .enumerate()
                .filter(|(_, w)| w == &head)
                .any(|(at, _)| half.get(at..at + stored.len()) == Some(stored));
            if found {
                let block = super::super::ledger::Block::decode(agent, last, stored).unwrap();
                left.extend((block.first_seq()..=last).map(|s| (agent.to_owned(), s)));
            }
        }
    }
    assert!(!left.is_empty(), "no block in the first half");
    let (broken, out) = damaged(dir.path(), half);
    salvage(&broken, &out, &tools).unwrap();
    let after = contents(&out).await;
    kept(&before, &after);
    let missing: Vec<_> = left
        .iter()
        .filter(|(a, s)| !after.get(a).is_some_and(|(e, _)| e.contains_key(s)))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} lost: {missing:?}",
        missing.len(),
        left.len()
    );
}
