//! The console's prompt history, per agent, across restarts: what the
//! operator typed, like a shell's history. It is the operator's own
//! client-side record (never the runtime's state, which the store and its
//! events hold), kept under this home's data directory in a file only its
//! owner may read (mode 0600), one JSON string per line: `load` gives the
//! newest `KEEP` entries, and once the file passes `REWRITE_BYTES` it is
//! rewritten with the newest entries that fill half of it. An entry over `ENTRY_BYTES` (a huge paste) is
//! not kept.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Entries kept per agent.
pub const KEEP: usize = 1_000;

/// The file may grow to this size before it is rewritten.
const REWRITE_BYTES: u64 = 4 * 1024 * 1024;

/// The largest entry kept.
pub const ENTRY_BYTES: usize = 64 * 1024;

fn file(dir: &Path, agent_id: &str) -> PathBuf {
    // Agent ids are validated (`[a-z0-9_-]`), so one is a safe file name;
    // anything else is refused rather than joined.
    dir.join(format!("{agent_id}.jsonl"))
}

fn safe(agent_id: &str) -> bool {
    crate::model::ids::validate(crate::model::ids::IdKind::Agent, agent_id).is_ok()
}

/// The agent's history, oldest first (the newest `KEEP`). A missing file
/// is an empty history; a line that is not a JSON string is skipped.
pub fn load(dir: &Path, agent_id: &str) -> Vec<String> {
    if !safe(agent_id) {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(file(dir, agent_id)) else {
        return Vec::new();
    };
    let all: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<String>(l).ok())
        .collect();
    let skip = all.len().saturating_sub(KEEP);
    all.into_iter().skip(skip).collect()
}

/// Append one entry; past `REWRITE_BYTES` the file is rewritten with
/// the newest `KEEP` (through a temporary file of this process and a
/// rename, so a crash leaves the old file or the new one).
pub fn append(dir: &Path, agent_id: &str, text: &str) -> std::io::Result<()> {
    if !safe(agent_id) || text.len() > ENTRY_BYTES {
        return Ok(());
    }
    private_dir(dir)?;
    let path = file(dir, agent_id);
    let line = serde_json::to_string(text).map_err(std::io::Error::other)?;
    let mut f = private_file(&path, true)?;
    writeln!(f, "{line}")?;
    drop(f);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if size > REWRITE_BYTES {
        // The newest entries, up to `KEEP` of them and half the bound.
        let all = load(dir, agent_id);
        let mut bytes = 0usize;
        let from = all
            .iter()
            .rposition(|e| {
                bytes += e.len() + 3;
                bytes as u64 > REWRITE_BYTES / 2
            })
            .map_or(0, |i| i + 1);
        let kept = &all[from..];
        let tmp = path.with_extension(format!("jsonl.{}.tmp", std::process::id()));
        let mut f = private_file(&tmp, false)?;
        for e in kept {
            let line = serde_json::to_string(e).map_err(std::io::Error::other)?;
            writeln!(f, "{line}")?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn private_file(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .append(append)
        .write(true)
        .truncate(!append)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_reload_newest_kept_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("history");
        append(&d, "main", "first").unwrap();
        append(&d, "main", "two\nlines").unwrap();
        append(&d, "other", "elsewhere").unwrap();
        assert_eq!(load(&d, "main"), vec!["first", "two\nlines"]);
        assert_eq!(load(&d, "other"), vec!["elsewhere"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("main.jsonl"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let mode = std::fs::metadata(&d).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // A hostile id is never a path.
        append(&d, "../escape", "x").unwrap();
        assert!(!dir.path().join("escape.jsonl").exists());
        assert!(load(&d, "../escape").is_empty());
        // A corrupt line is skipped, the rest kept.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.join("main.jsonl"))
            .unwrap();
        writeln!(f, "not json").unwrap();
        append(&d, "main", "third").unwrap();
        assert_eq!(load(&d, "main"), vec!["first", "two\nlines", "third"]);
    }

    #[test]
    fn the_file_is_bounded_and_huge_entries_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        // ~4.7 MiB of 60 KiB entries: one rewrite on the way.
        let big = "x".repeat(60 * 1024);
        for i in 0..80 {
            append(dir.path(), "main", &format!("{i} {big}")).unwrap();
        }
        let size = std::fs::metadata(dir.path().join("main.jsonl"))
            .unwrap()
            .len();
        assert!(size <= REWRITE_BYTES + 64 * 1024, "{size}");
        let kept = load(dir.path(), "main");
        assert!(kept.last().is_some_and(|e| e.starts_with("79 ")));
        let huge = "y".repeat(ENTRY_BYTES + 1);
        append(dir.path(), "main", &huge).unwrap();
        assert!(load(dir.path(), "main")
            .last()
            .is_some_and(|e| e.starts_with("79 ")));
        // Many small entries: load gives the newest KEEP.
        for i in 0..(KEEP + 5) {
            append(dir.path(), "other", &format!("p{i}")).unwrap();
        }
        let kept = load(dir.path(), "other");
        assert_eq!(kept.len(), KEEP);
        assert_eq!(kept.first().map(String::as_str), Some("p5"));
    }
}
