//! Recall over a real store and a real index file: provenance and exact
//! expansion, CJK, workspace scope, corrupt and half-synced rebuilds, and
//! records that change.

use serde_json::json;

use super::*;
use crate::model::work::WorkItemState;
use crate::store::{Store, StoreOptions};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    home: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let dir = ok(tempfile::tempdir());
    let store = ok(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    let home = dir.path().join("home");
    ok(std::fs::create_dir_all(&home));
    Fixture {
        _dir: dir,
        store,
        home,
    }
}

fn brief(f: &Fixture, text: &str, workspace: &str) -> String {
    brief_at(f, text, workspace, "2026-11-23T10:00:00Z")
}

fn brief_at(f: &Fixture, text: &str, workspace: &str, created_at: &str) -> String {
    brief_as(f, &crate::new_id("brief"), text, workspace, created_at)
}

fn brief_as(f: &Fixture, id: &str, text: &str, workspace: &str, created_at: &str) -> String {
    let id = id.to_owned();
    let b = json!({
        "id": id, "agent_id": "main", "kind": "result", "created_at": created_at,
        "text": text, "workspace_id": workspace,
    });
    ok(f.store.write_blocking(move |tx| {
        tx.append_event(crate::model::event::NewEvent {
            agent_id: "main".into(),
            kind: EventKind::BriefCreated.as_str(),
            provenance: crate::model::event::Provenance::default(),
            payload: json!({ "brief": b, "visibility": "turn_result" }),
        })
    }));
    id
}

fn search_in(f: &Fixture, q: &str, ws: Option<&str>) -> Vec<Hit> {
    let rx = ok(f.store.read());
    ok(search(&rx, &f.home, "main", q, ws, 10)).0
}

#[test]
fn briefs_are_found_with_provenance_and_fetched_exactly() {
    let f = fixture();
    let text = "Deployed release 4.2 to staging; the migration took 41 seconds.\nNext: production.";
    brief(&f, text, "agent_home");
    brief(
        &f,
        "Reviewed the parser change; two nits left.",
        "agent_home",
    );
    let hits = search_in(&f, "migration staging", Some("agent_home"));
    assert_eq!(hits.len(), 1, "{hits:?}");
    let h = &hits[0];
    assert_eq!(h.from.kind, "brief");
    assert_eq!(h.from.scope_kind, "workspace");
    assert_eq!(h.from.workspace_id.as_deref(), Some("agent_home"));
    assert_eq!(h.from.agent_id, "main");
    assert!(h.source_ref.starts_with("mref_"));
    assert!(
        h.snippet.contains("migration took 41 seconds"),
        "{}",
        h.snippet
    );
    assert!(h.score > 0.0);
    let got = ok(get(&f.home, &h.source_ref, GET_DEFAULT_CHARS)).expect("gone");
    assert_eq!(got.content, text);
    assert!(!got.truncated);
    let cut = ok(get(&f.home, &h.source_ref, 10)).expect("gone");
    assert_eq!(cut.content, "Deployed r");
    assert!(cut.truncated);
    assert_eq!(cut.total_chars, text.chars().count());
    assert!(ok(get(&f.home, "mref_nope", 100)).is_none());
}

/// Briefs are read from their events after the index's event cursor. An
/// index without that cursor (one built when briefs had their own table
/// and a brief-id cursor) reads them all again: nothing is doubled, and a
/// reference handed out before stays valid.
#[test]
fn briefs_are_indexed_once_from_their_events_whatever_the_cursor() {
    let f = fixture();
    brief(
        &f,
        "Rotated the signing keys on the staging cluster.",
        "agent_home",
    );
    let first = search_in(&f, "signing keys", None);
    assert_eq!(first.len(), 1, "{first:?}");
    {
        let (index, _) = ok(Index::open(&f.home));
        assert!(ok(index.meta(BRIEF_CURSOR)).is_some());
        // As an index from before the change: the old cursor, not the new.
        ok(index.set_meta("cursor:briefs", "brief_old"));
        ok(index.set_meta(BRIEF_CURSOR, "0"));
    }
    brief(
        &f,
        "Signing keys: the production rotation is next week.",
        "agent_home",
    );
    let again = search_in(&f, "signing keys", None);
    assert_eq!(again.len(), 2, "{again:?}");
    assert!(again.iter().any(|h| h.source_ref == first[0].source_ref));
    // Later syncs read only what is new.
    let rx = ok(f.store.read());
    let (_, report) = ok(open_synced(&rx, &f.home, "main"));
    assert_eq!(report.changed, 0);
}

#[test]
fn cjk_queries_match_inside_runs_and_content_has_no_expansion_tokens() {
    let f = fixture();
    let text = "今天完成了上下文压缩的设计，明天测试 compaction。";
    brief(&f, text, "agent_home");
    brief(&f, "与此无关的记录", "agent_home");
    for q in ["上下文", "压缩", "上下文 compaction", "设计"] {
        let hits = search_in(&f, q, None);
        assert_eq!(hits.len(), 1, "{q}: {hits:?}");
        assert!(hits[0].snippet.contains("上下文压缩"));
    }
    let hits = search_in(&f, "上下文", None);
    let got = ok(get(&f.home, &hits[0].source_ref, 1000)).expect("gone");
    assert_eq!(got.content, text, "the exact body, no bigrams");
}

#[test]
fn search_is_scoped_to_the_workspace_and_memory_files_are_always_in() {
    let f = fixture();
    brief(&f, "deploy notes for repo one", "ws_one");
    brief(&f, "deploy notes for repo two", "ws_two");
    crate::runtime::context::memory::ensure(&f.home).unwrap();
    ok(std::fs::write(
        f.home.join("memory/self.md"),
        "Always deploy on Tuesdays.",
    ));
    let scoped = search_in(&f, "deploy", Some("ws_one"));
    let kinds: Vec<(&str, Option<&str>)> = scoped
        .iter()
        .map(|h| (h.from.kind.as_str(), h.from.workspace_id.as_deref()))
        .collect();
    assert!(kinds.contains(&("brief", Some("ws_one"))));
    assert!(kinds.contains(&("memory_file", None)));
    assert!(!kinds.contains(&("brief", Some("ws_two"))));
    assert_eq!(search_in(&f, "deploy", None).len(), 3);
    // An edit made outside the runtime is seen on the next search.
    ok(std::fs::write(
        f.home.join("memory/self.md"),
        "Never deploy on Fridays.",
    ));
    let hits = search_in(&f, "fridays", None);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].from.kind, "memory_file");
    assert!(search_in(&f, "tuesdays", None).is_empty());
}

#[test]
fn a_corrupt_or_half_synced_index_is_rebuilt_never_fatal() {
    let f = fixture();
    brief(&f, "the quarterly report is in notes/q3.md", "agent_home");
    assert_eq!(search_in(&f, "quarterly", None).len(), 1);
    let (db, dirty) = index::paths(&f.home);
    ok(std::fs::write(&db, b"this is not a database at all"));
    let rx = ok(f.store.read());
    let (hits, report) = ok(search(&rx, &f.home, "main", "quarterly", None, 5));
    assert_eq!(hits.len(), 1);
    assert!(report.rebuilt.is_some(), "{report:?}");
    ok(std::fs::write(&dirty, b"sync in progress\n"));
    let (hits, report) = ok(search(&rx, &f.home, "main", "quarterly", None, 5));
    assert_eq!(hits.len(), 1);
    assert_eq!(
        report.rebuilt.as_deref(),
        Some("a previous sync did not finish")
    );
    assert!(!dirty.exists());
    // Deleted outright: rebuilt too.
    ok(std::fs::remove_file(&db));
    assert_eq!(search_in(&f, "quarterly", None).len(), 1);
}

#[test]
fn work_items_and_episodes_are_indexed_and_follow_updates() {
    let f = fixture();
    let mut w = WorkItemRecord {
        id: "work_1".into(),
        agent_id: "main".into(),
        workspace_id: "agent_home".into(),
        objective: "Upgrade the tokio runtime".into(),
        state: Default::default(),
        plan_status: Default::default(),
        todo_list: Vec::new(),
        blocked_by: None,
        recheck_at: None,
        recheck_consumed_at: None,
        result_summary: None,
        revision: 1,
        created_at: "t".into(),
        updated_at: "t".into(),
    };
    // As the runtime writes them: open ones indexed as open, a completion
    // recorded by its event.
    let put = |w: WorkItemRecord| {
        ok(f.store.write_blocking(move |tx| {
            tx.put(Keyed::WorkItems, "main", &w.id.clone(), &w)?;
            let open = crate::store::Index::OpenWorkItems;
            if w.state == WorkItemState::Open {
                return tx.index_insert(open, "main", &w.id);
            }
            tx.index_remove(open, "main", &w.id)?;
            tx.append_event(crate::model::event::NewEvent {
                agent_id: "main".into(),
                kind: EventKind::WorkItemCompleted.as_str(),
                provenance: crate::model::event::Provenance::default(),
                payload: json!({ "work_item": w, "source": "model" }),
            })
            .map(|_| ())
        }))
    };
    put(w.clone());
    assert_eq!(search_in(&f, "tokio", None)[0].from.kind, "work_item");
    w.result_summary = Some("Moved to tokio 1.40; all tests pass".into());
    w.revision = 2;
    put(w.clone());
    let hits = search_in(&f, "pass", None);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].from.metadata["revision"], 2);
    // Completed after the index last synced: the sync sees the change.
    w.state = WorkItemState::Completed;
    w.result_summary = Some("Shipped to production".into());
    w.revision = 3;
    put(w);
    let hits = search_in(&f, "production", None);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].from.metadata["revision"], 3);
    assert!(search_in(&f, "pass", None).is_empty());
    let e = ContextEpisode {
        id: crate::new_id("ep"),
        agent_id: "main".into(),
        epoch: 1,
        created_at: "t".into(),
        summary: "The operator asked for the flaky websocket test to be fixed.".into(),
        source: crate::model::context::SummarySource::Extractive,
        fallback_reason: None,
        folded_entries: 9,
        folded_turns: 3,
        through_id: "tr_x".into(),
        from_ts: "a".into(),
        through_ts: "b".into(),
        workspace_id: "agent_home".into(),
        tokens_before: 10,
        tokens_after: 5,
        summary_tokens: 5,
    };
    let key = e.id.clone();
    ok(f.store
        .write_blocking(move |tx| tx.put(Keyed::ContextEpisodes, "main", &key, &e)));
    let hits = search_in(&f, "websocket", Some("agent_home"));
    assert_eq!(hits[0].from.kind, "context_episode");
    assert_eq!(hits[0].from.metadata["epoch"], 1);
}

#[test]
fn briefs_retention_pruned_leave_the_index_and_the_rest_stay() {
    let f = fixture();
    brief(
        &f,
        "The nightly deploy of release 4.1 went through.",
        "agent_home",
    );
    assert_eq!(search_in(&f, "nightly deploy", None).len(), 1);
    // A later brief stamped earlier, its id sorting first (an older build
    // under a clock that stepped back), then the first is forgotten as
    // retention would: by where the ledger starts, not by id or time.
    brief_as(
        &f,
        "brief_00000000000000000000000000000000",
        "The nightly deploy of release 4.2 went through.",
        "agent_home",
        "2026-11-01T10:00:00Z",
    );
    assert_eq!(search_in(&f, "nightly deploy", None).len(), 2);
    let seqs: Vec<u64> = ok(ok(f.store.read()).events_of_kind("main", "brief_created", 1, 10))
        .iter()
        .map(|e| e.event_seq)
        .collect();
    let (mut index, _) = ok(index::Index::open(&f.home));
    assert_eq!(ok(index.forget_briefs_before(seqs[0])), 0);
    assert_eq!(ok(index.forget_briefs_before(seqs[1])), 1);
    let hits = search_in(&f, "nightly deploy", None);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].snippet.contains("4.2"), "{hits:?}");
}

#[test]
fn a_link_planted_in_the_index_s_place_is_removed_not_followed() {
    let home = ok(tempfile::tempdir());
    let outside = ok(tempfile::tempdir());
    ok(std::fs::create_dir_all(home.path().join(".holon")));
    ok(std::os::unix::fs::symlink(
        outside.path(),
        home.path().join(".holon/indexes"),
    ));
    let (index, _) = ok(super::index::Index::open(home.path()));
    drop(index);
    assert!(!home.path().join(".holon/indexes").is_symlink());
    assert!(home.path().join(".holon/indexes/memory.sqlite3").is_file());
    let landed: Vec<_> = ok(std::fs::read_dir(outside.path())).collect();
    assert!(landed.is_empty(), "written through the link: {landed:?}");
}
