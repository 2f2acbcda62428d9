//! docs/presentation.md against the presenter: the page's mapping table
//! is held by a test, as docs/events.md is.

use super::*;

/// docs/presentation.md's mapping table has a row for every event kind,
/// and for every golden sample (one real event per kind) the visibility
/// and category `present` gives it are the ones a row of its kind states:
/// the page cannot drift from the presenter.
#[test]
fn the_presentation_page_states_what_present_does() {
    use crate::protocol::events::EventKind;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/presentation.md")).unwrap();
    // kind -> the (visibility, category) cells of its rows.
    let mut rows: std::collections::BTreeMap<String, Vec<(String, String)>> = Default::default();
    for line in page.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let Some(kind) = cells[0].split('`').nth(1) else {
            continue;
        };
        if cells.len() < 4 || EventKind::parse(kind).is_none() {
            continue;
        }
        rows.entry(kind.to_owned())
            .or_default()
            .push((cells[1].to_owned(), cells[2].to_owned()));
    }
    let missing: Vec<&str> = EventKind::ALL
        .iter()
        .map(|k| k.as_str())
        .filter(|k| !rows.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/presentation.md has no row for {missing:?}"
    );

    let names = |cell: &str| -> Vec<String> {
        cell.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let dir = root.join("tests/fixtures/events");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let record: EventRecord =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let shown = present(&record);
        let (visibility, category) = (shown.visibility.to_string(), shown.category.to_string());
        let stated = &rows[&record.kind];
        assert!(
            stated
                .iter()
                .any(|(v, c)| { names(v).contains(&visibility) && names(c).contains(&category) }),
            "{}: present gives {visibility}/{category}; docs/presentation.md says {stated:?}",
            record.kind
        );
        checked += 1;
    }
    assert!(checked > 40, "only {checked} golden samples");
}
