//! Ledger replay tests: every folder under `tests/fixtures/scheduler/` is
//! replayed through `holon::runtime::fixture::replay_dir` (with the input
//! named in its optional `input` file, default idle) at a fixed `now_ms`
//! and compared with its `expected.json`. With `HOLON_BLESS_FIXTURES=1`
//! the actual output is written to `expected.json` instead (review the
//! diff like code before committing it).

use std::path::{Path, PathBuf};

use holon::runtime::fixture::{read_input_file, replay_dir, FixtureError, ReplayInput};

/// The fixed clock every fixture replays at (2026-01-01T00:00:00Z).
pub const FIXTURE_NOW_MS: i64 = 1_767_225_600_000;

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scheduler")
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(fixtures_root())
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", fixtures_root().display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    cases
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("<unprintable: {e}>"))
}

#[test]
fn every_scheduler_fixture_replays_to_its_expected_output() {
    let cases = cases();
    assert!(
        cases.len() >= 12,
        "expected at least 12 fixture cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let name = case
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let input = match read_input_file(case) {
            Ok(input) => input.unwrap_or(ReplayInput::Idle),
            Err(e) => {
                failures.push(format!("{name}: bad input file: {e}"));
                continue;
            }
        };
        let actual = match replay_dir(case, input, FIXTURE_NOW_MS) {
            Ok(value) => value,
            Err(e) => {
                failures.push(format!("{name}: replay failed: {e}"));
                continue;
            }
        };
        let expected_path = case.join("expected.json");
        let expected: serde_json::Value = match std::fs::read_to_string(&expected_path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
        {
            Ok(value) => value,
            Err(_) if std::env::var_os("HOLON_BLESS_FIXTURES").is_some() => serde_json::Value::Null,
            Err(e) => {
                failures.push(format!(
                    "{name}: cannot read expected.json: {e}\nactual:\n{}",
                    pretty(&actual)
                ));
                continue;
            }
        };
        if actual != expected {
            if std::env::var_os("HOLON_BLESS_FIXTURES").is_some() {
                if let Err(e) = std::fs::write(&expected_path, format!("{}\n", pretty(&actual))) {
                    failures.push(format!("{name}: cannot bless: {e}"));
                }
                continue;
            }
            failures.push(format!(
                "{name} (input {}): replay differs\n--- expected\n{}\n--- actual\n{}",
                input.as_str(),
                pretty(&expected),
                pretty(&actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn malformed_jsonl_line_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    std::fs::create_dir_all(&ledger).unwrap();
    std::fs::write(
        ledger.join("work_items.jsonl"),
        "{\"id\":\"w1\",\"objective\":\"fine\"}\n{\"id\":\"w2\",\"objective\":\n",
    )
    .unwrap();
    let err = match replay_dir(dir.path(), ReplayInput::Idle, FIXTURE_NOW_MS) {
        Ok(value) => panic!("expected a malformed line error, got {value}"),
        Err(err) => err,
    };
    let text = err.to_string();
    match err {
        FixtureError::MalformedLine { path, line, .. } => {
            assert!(
                path.ends_with("ledger/work_items.jsonl"),
                "{}",
                path.display()
            );
            assert_eq!(line, 2);
            assert!(text.contains("work_items.jsonl:2"), "{text}");
        }
        other => panic!("expected a malformed line error, got {other:?}"),
    }
}

#[test]
fn replay_input_changes_only_what_the_input_can_change() {
    // The same folder replayed with each input: decisions agree on kind
    // and differ only in the recorded input evidence.
    let case = fixtures_root().join("pending_wake_hint_recovery");
    let idle = replay_dir(&case, ReplayInput::Idle, FIXTURE_NOW_MS).unwrap();
    let hint = replay_dir(&case, ReplayInput::WakeHint, FIXTURE_NOW_MS).unwrap();
    assert_eq!(idle["decision"]["kind"], hint["decision"]["kind"]);
    assert_eq!(idle["decision"]["evidence"][0], "input:idle");
    assert_eq!(hint["decision"]["evidence"][0], "input:wake_hint");
    assert_eq!(idle["projection"], hint["projection"]);
}
