//! The store's file format across storage-engine majors: a store written
//! by the build before the move to redb 4 (kept as a fixture with the
//! fingerprint of every table it held) opens in this build with every
//! record intact, once, and the old file is kept beside it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::runtime_core::{config, prompt};
use holon::model::approval::Approval;
use holon::model::approval::ApprovalPolicy;
use holon::model::message::Priority;
use holon::protocol::views::ControlAction;
use holon::runtime::handle::RuntimeHost;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::store::copy::Fingerprint;
use holon::store::{Store, StoreOptions};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v2")
}

/// Writes the fixture: a store holding a record in (nearly) every table,
/// made by real turns, an approval, a wait, a timer, a trigger, a retried
/// request and a paused agent's queue long enough to seal ledger blocks.
/// Run by hand with `HOLON_WRITE_STORE_FIXTURE=<dir> cargo test --test all
/// write_the_store_fixture -- --ignored`; the committed fixture in
/// `tests/fixtures/store-v2` was written by the build on redb 2.6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes tests/fixtures/store-v2; run by hand"]
async fn write_the_store_fixture() {
    let Some(out) = std::env::var_os("HOLON_WRITE_STORE_FIXTURE") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Making a work item.",
            &[("CreateWorkItem", json!({ "objective": "port the parser" }))],
        ),
        Scripted::text("Created."),
        Scripted::tools(
            "Writing a file.",
            &[("ExecCommand", json!({ "cmd": "echo ran > ran.txt" }))],
        ),
        Scripted::text("It ran."),
        Scripted::tools(
            "Waiting for CI.",
            &[(
                "RecordExternalWait",
                json!({ "description": "CI for PR 12", "source": "ci", "external_ref": "12" }),
            )],
        ),
        Scripted::text("Waiting."),
        Scripted::tools(
            "Sleeping.",
            &[("Sleep", json!({ "duration_ms": 86_400_000 }))],
        ),
        Scripted::text("Asleep."),
    ]));
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    let mut c = config(dir.path(), Arc::clone(&provider));
    c.policy = ApprovalPolicy {
        approval: Approval::OnWrite,
        ..ApprovalPolicy::default()
    };
    let host = RuntimeHost::start(store, c).await.unwrap();
    host.create_agent("main").await.unwrap();
    host.trigger_show("main").await.unwrap();
    host.submit_once(
        prompt("make a work item", Priority::Normal),
        Some("req-1".into()),
    )
    .await
    .unwrap();
    host.until_idle().await;
    host.submit(prompt("write the file", Priority::Normal))
        .await
        .unwrap();
    host.until_idle().await;
    let pending = host.approvals(None, false).unwrap();
    host.approve("main", &pending[0].id, false).await.unwrap();
    host.until_idle().await;
    host.submit(prompt("wait for CI", Priority::Normal))
        .await
        .unwrap();
    host.until_idle().await;
    host.submit(prompt("sleep a day", Priority::Normal))
        .await
        .unwrap();
    host.until_idle().await;
    host.create_agent("queued").await.unwrap();
    host.control("queued", ControlAction::Pause).await.unwrap();
    for n in 0..300 {
        let mut p = prompt(
            &format!("queued prompt {n} {}", "x".repeat(n % 40)),
            Priority::Normal,
        );
        p.agent_id = "queued".into();
        host.submit(p).await.unwrap();
    }
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await.unwrap();

    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out).unwrap();
    let file = out.join("holon.redb");
    std::fs::copy(dir.path().join("s.redb"), &file).unwrap();
    let print = holon::store::copy::fingerprint_file(&file).unwrap();
    let text = serde_json::to_string_pretty(&print).unwrap();
    std::fs::write(out.join("fingerprint.json"), text + "\n").unwrap();
}

fn expected() -> Fingerprint {
    let text = std::fs::read_to_string(fixture_dir().join("fingerprint.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The fixture copied into a fresh directory as `holon.redb`.
fn old_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holon.redb");
    std::fs::copy(fixture_dir().join("holon.redb"), &path).unwrap();
    (dir, path)
}

/// The store's fingerprint without the `meta` row `id_time`: opening it
/// keeps the newest time its ids carry (a row of this build's, derived
/// from the records), which the old build's fixture has not.
fn records_fingerprint(path: &Path) -> holon::store::copy::Fingerprint {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn.open_table(holon::store::schema::META).unwrap();
        let kept = meta.remove("id_time").unwrap().map(|v| v.value().len());
        assert_eq!(kept, Some(8), "id_time kept at open");
    }
    txn.commit().unwrap();
    drop(db);
    holon::store::copy::fingerprint_file(path).unwrap()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_store_from_the_previous_engine_opens_with_every_record() {
    let (dir, path) = old_store();
    let before = std::fs::read(&path).unwrap();

    let store = Store::open(&path, StoreOptions::default()).unwrap();
    // The records read back through the store, not only as bytes.
    let read = store.read().unwrap();
    let agents: Vec<serde_json::Value> = read.agents().unwrap();
    let mut ids: Vec<&str> = agents.iter().filter_map(|a| a["id"].as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["main", "queued"]);
    assert_eq!(read.queue_pending("queued").unwrap().len(), 300);
    let last = read.last_seq("main").unwrap();
    let events = read.events("main", 0, 10_000).unwrap();
    assert_eq!(events.len() as u64, last);
    drop(read);
    store.close().await.unwrap();

    assert_eq!(records_fingerprint(&path), expected());
    // The old file is kept beside the new one, byte for byte.
    assert_eq!(names_in(dir.path()), ["holon.redb", "holon.redb.redb2"]);
    assert_eq!(
        std::fs::read(dir.path().join("holon.redb.redb2")).unwrap(),
        before
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "the new file is the operator's only: {mode:o}"
    );

    // A second open finds the current format: nothing is migrated again.
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    store.close().await.unwrap();
    assert_eq!(names_in(dir.path()), ["holon.redb", "holon.redb.redb2"]);
    assert_eq!(records_fingerprint(&path), expected());
}

#[tokio::test]
async fn an_old_store_with_an_unknown_table_is_left_as_it_was() {
    let (dir, path) = old_store();
    {
        let db = redb2::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn
                .open_table(redb2::TableDefinition::<&str, u64>::new("mystery"))
                .unwrap();
            t.insert("x", 1).unwrap();
        }
        txn.commit().unwrap();
    }
    let before = std::fs::read(&path).unwrap();

    let err = Store::open(&path, StoreOptions::default()).err().unwrap();
    let text = err.to_string();
    assert!(text.contains("mystery"), "{text}");
    assert!(text.contains("left as it was"), "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(names_in(dir.path()), ["holon.redb"]);
}

#[tokio::test]
async fn an_old_store_someone_holds_open_is_not_migrated() {
    let (dir, path) = old_store();
    let held = redb2::Database::open(&path).unwrap();
    let err = Store::open(&path, StoreOptions::default()).err().unwrap();
    assert!(
        matches!(err, holon::store::StoreError::Locked { .. }),
        "{err}"
    );
    drop(held);
    assert_eq!(names_in(dir.path()), ["holon.redb"]);
}
