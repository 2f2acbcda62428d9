//! Salvage of intact, unclean and page-by-page damaged stores.

use super::*;
use crate::store::{Keyed, Store, StoreOptions};

/// A classifier that places no record: tables are filled from pages
/// only by what the store itself recognises.
fn none(_: &str, _: &str, _: &[u8]) -> Option<Keyed> {
    None
}

/// A store whose `messages` table spans many pages.
async fn written(path: &Path) {
    let store = Store::open(path, StoreOptions::default()).unwrap();
    store
        .write(|tx| {
            tx.put_agent("a", &serde_json::json!({ "id": "a" }))?;
            for n in 0..2_000u32 {
                let id = format!("msg_{n:05}");
                // Digests, so the codec cannot shrink the table to a
                // few pages.
                use sha2::Digest as _;
                let text: String = (0..3u8)
                    .flat_map(|k| sha2::Sha256::digest([n.to_le_bytes().as_slice(), &[k]].concat()))
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let body = serde_json::json!({ "id": id, "text": text });
                tx.put(Keyed::Messages, "a", &id, &body)?;
            }
            Ok(())
        })
        .await
        .unwrap();
    store.close().await.unwrap();
}

#[tokio::test]
async fn an_intact_store_is_salvaged_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (src, out) = (dir.path().join("s.redb"), dir.path().join("o.redb"));
    written(&src).await;
    let before = std::fs::read(&src).unwrap();
    let report = salvage(&src, &out, &none).unwrap();
    assert!(report.complete(), "{report:?}");
    assert!(!report.repaired_copy);
    assert_eq!(
        std::fs::read(&src).unwrap(),
        before,
        "the source is only read"
    );
    assert_eq!(
        crate::store::copy::fingerprint_file(&out).unwrap(),
        crate::store::copy::fingerprint_file(&src).unwrap()
    );
    let err = salvage(&src, &out, &none).unwrap_err().to_string();
    assert!(err.contains("exists"), "{err}");
}

/// A store left by a killed process (copied while still open) needs a
/// repair: salvage repairs a copy of it and reads everything.
#[tokio::test]
async fn a_store_not_closed_cleanly_is_salvaged_from_a_repaired_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (src, out) = (dir.path().join("s.redb"), dir.path().join("o.redb"));
    written(&src).await;
    let store = Store::open(&src, StoreOptions::default()).unwrap();
    store
        .write(|tx| tx.put_agent("b", &serde_json::json!({ "id": "b" })))
        .await
        .unwrap();
    let unclean = dir.path().join("unclean.redb");
    std::fs::copy(&src, &unclean).unwrap();
    store.close().await.unwrap();
    let before = std::fs::read(&unclean).unwrap();
    let report = salvage(&unclean, &out, &none).unwrap();
    assert!(report.repaired_copy, "{report:?}");
    assert!(report.complete(), "{report:?}");
    let messages = report
        .tables
        .iter()
        .find(|t| t.table == "messages")
        .unwrap();
    assert_eq!(messages.rows, 2_000);
    assert_eq!(
        std::fs::read(&unclean).unwrap(),
        before,
        "the source is only read"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("o.redb."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Every page damaged in turn: salvage never panics, either says
/// nothing could be read or writes a store that opens; a damaged page
/// in the middle of a table loses only that part of it (the forward
/// and backward passes meet at it).
#[tokio::test]
async fn each_damaged_page_loses_only_what_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.redb");
    written(&src).await;
    let clean = std::fs::read(&src).unwrap();
    let pages = clean.len() / 4096;
    let (mut partial, mut leaf_sized, mut worst) = (0, 0, u64::MAX);
    for page in 1..pages {
        let broken = dir.path().join("b.redb");
        let out = dir.path().join(format!("o{page}.redb"));
        let mut bytes = clean.clone();
        for (i, b) in bytes[page * 4096..(page + 1) * 4096].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31) ^ 0x5a;
        }
        std::fs::write(&broken, &bytes).unwrap();
        match salvage(&broken, &out, &none) {
            Err(StoreError::Corrupt { .. }) => continue,
            Err(e) => panic!("page {page}: {e}"),
            Ok(report) => {
                let messages = report
                    .tables
                    .iter()
                    .find(|t| t.table == "messages")
                    .unwrap();
                if messages.rows > 0 && messages.rows < 2_000 && messages.problem.is_some() {
                    partial += 1;
                    worst = worst.min(messages.rows);
                    if messages.rows >= 1_950 {
                        leaf_sized += 1;
                    }
                }
                let store = Store::open(&out, StoreOptions::default())
                    .unwrap_or_else(|e| panic!("page {page}: {e}"));
                store.close().await.unwrap();
            }
        }
        let _ = std::fs::remove_file(&out);
    }
    assert!(
        partial > 0,
        "no page of {pages} lost only part of the messages"
    );
    // A leaf holds a few dozen of these rows, and nearly every page of
    // the table is a leaf: a damaged one costs only its rows. A damaged
    // branch page costs the rows under it (the worst case).
    assert!(
        leaf_sized * 10 >= partial * 9,
        "{leaf_sized} of {partial} partial losses were leaf-sized; the worst kept {worst} of 2000"
    );
}
