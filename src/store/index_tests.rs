//! The membership indexes: entries removed by prefix.

use super::*;

#[tokio::test]
async fn an_index_prefix_goes_and_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    let removed = store
        .write(|tx| {
            for (agent, id) in [
                ("a", "work_queue:x:w1:1"),
                ("a", "work_queue:x:w1:2"),
                ("a", "work_queue:x:w10:1"),
                ("a", "work_queue:y:w1:1"),
                ("b", "work_queue:x:w1:1"),
            ] {
                tx.index_insert(Index::TickKeys, agent, id)?;
            }
            tx.index_remove_prefix(Index::TickKeys, "a", "work_queue:x:w1:")
        })
        .await
        .unwrap();
    assert_eq!(removed, 2);
    let rx = store.read().unwrap();
    assert_eq!(
        rx.index_list(Index::TickKeys, "a").unwrap(),
        ["work_queue:x:w10:1", "work_queue:y:w1:1"]
    );
    assert_eq!(rx.index_list(Index::TickKeys, "b").unwrap().len(), 1);
}
