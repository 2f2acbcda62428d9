//! The patch engine without tokio: parsing, applying in memory, and the
//! execution-root layer on temporary directories.

use std::path::Path;

use super::apply::{apply_hunks, Applied, HunkOffset};
use super::parse::{parse_patch, FileOp, FilePatch, HunkLine};
use super::root::{apply_in_root, FileAction};
use super::*;

fn parse_one(text: &str) -> FilePatch {
    let mut files = parse_patch(text).unwrap_or_else(|e| panic!("parse: {e}"));
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

fn apply(original: &str, patch: &str) -> Result<Applied, PatchError> {
    let fp = parse_one(patch);
    apply_hunks(original, &fp.hunks, &fp.path)
}

fn applied(original: &str, patch: &str) -> Applied {
    apply(original, patch).unwrap_or_else(|e| panic!("apply: {e}"))
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

// ---- parsing ----------------------------------------------------------------

#[test]
fn parses_git_style_modify_ignoring_preamble() {
    let fp = parse_one(
        "diff --git a/src/x.rs b/src/x.rs\nindex 1..2 100644\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1,2 +1,2 @@ fn main\n a\n-b\n+c\n",
    );
    assert_eq!(fp.path, "src/x.rs");
    assert_eq!(fp.op, FileOp::Modify);
    assert_eq!(fp.hunks.len(), 1);
    let h = &fp.hunks[0];
    assert_eq!(
        (h.old_start, h.old_count, h.new_start, h.new_count),
        (1, 2, 1, 2)
    );
    assert_eq!(
        h.lines,
        vec![
            HunkLine::Context("a".into()),
            HunkLine::Remove("b".into()),
            HunkLine::Add("c".into())
        ]
    );
}

#[test]
fn dev_null_means_create_or_delete_and_prefixes_are_stripped() {
    let create = parse_one("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n");
    assert_eq!(
        (create.path.as_str(), create.op),
        ("new.txt", FileOp::Create)
    );
    let delete = parse_one("--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n");
    assert_eq!(
        (delete.path.as_str(), delete.op),
        ("old.txt", FileOp::Delete)
    );
    let plain = parse_one("--- notes.md\n+++ notes.md\n@@ -1 +1 @@\n-x\n+y\n");
    assert_eq!(
        (plain.path.as_str(), plain.op),
        ("notes.md", FileOp::Modify)
    );
}

#[test]
fn header_timestamps_and_quotes_are_removed() {
    let fp = parse_one(
        "--- \"a/with space.txt\"\t2024-01-01 00:00:00\n+++ \"b/with space.txt\"\t2024-01-02\n@@ -1 +1 @@\n-x\n+y\n",
    );
    assert_eq!(fp.path, "with space.txt");
}

#[test]
fn multiple_files_and_hunks() {
    let files = parse_patch(
        "--- a/one\n+++ b/one\n@@ -1 +1 @@\n-a\n+b\n@@ -10,2 +10,3 @@\n x\n+y\n z\n--- a/two\n+++ b/two\n@@ -3 +3 @@\n-c\n+d\n",
    )
    .unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0].hunks.len(), 2);
    assert_eq!(files[0].hunks[1].lines.len(), 3);
    assert_eq!(files[1].path, "two");
}

#[test]
fn a_removed_line_that_looks_like_a_header_is_read_by_count() {
    let fp = parse_one("--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n--- not a header\n keep\n");
    assert_eq!(
        fp.hunks[0].lines[0],
        HunkLine::Remove("-- not a header".into())
    );
}

#[test]
fn crlf_patch_text_parses_like_lf() {
    let lf = parse_patch("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n");
    let crlf = parse_patch("--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n");
    assert_eq!(lf, crlf);
}

#[test]
fn an_empty_line_inside_a_hunk_is_empty_context() {
    let fp = parse_one("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n");
    assert_eq!(fp.hunks[0].lines[1], HunkLine::Context(String::new()));
}

#[test]
fn no_newline_markers_attach_to_their_side() {
    let fp = parse_one("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n");
    assert!(fp.hunks[0].old_no_eol);
    assert!(!fp.hunks[0].new_no_eol);
    let fp = parse_one("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n");
    assert!(!fp.hunks[0].old_no_eol);
    assert!(fp.hunks[0].new_no_eol);
}

#[test]
fn empty_or_prose_only_patches_are_rejected() {
    assert_eq!(parse_patch(""), Err(PatchError::Empty));
    assert_eq!(
        parse_patch("please change line 3\n"),
        Err(PatchError::Empty)
    );
}

#[test]
fn a_hunk_before_any_file_header_is_rejected_with_its_line() {
    match parse_patch("hello\n@@ -1 +1 @@\n-a\n+b\n") {
        Err(PatchError::Parse { line, .. }) => assert_eq!(line, 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn header_counts_must_match_the_body() {
    // Too few lines promised: a body line is left over.
    match parse_patch("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n") {
        Err(PatchError::HunkShape {
            path,
            hunk,
            message,
        }) => {
            assert_eq!((path.as_str(), hunk), ("f", 1));
            assert!(message.contains("patch line 6"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Too many promised: the body ends early.
    match parse_patch("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n") {
        Err(PatchError::HunkShape { message, .. }) => {
            assert!(message.contains("3 old and 3 new"), "{message}");
            assert!(message.contains("has 2 and 2"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_hunk_lines_and_headers_are_rejected() {
    assert!(matches!(
        parse_patch("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n*b\n"),
        Err(PatchError::Parse { line: 5, .. })
    ));
    assert!(matches!(
        parse_patch("--- a/f\n+++ b/f\n@@ one two @@\n a\n"),
        Err(PatchError::Parse { line: 3, .. })
    ));
}

#[test]
fn renames_are_refused() {
    assert_eq!(
        parse_patch("--- a/old\n+++ b/new\n@@ -1 +1 @@\n-a\n+b\n"),
        Err(PatchError::Rename {
            old: "old".into(),
            new: "new".into()
        })
    );
}

#[test]
fn create_and_delete_hunks_must_have_the_right_shape() {
    assert!(matches!(
        parse_patch("--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"),
        Err(PatchError::HunkShape { hunk: 1, .. })
    ));
    assert!(matches!(
        parse_patch("--- a/f\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n"),
        Err(PatchError::HunkShape { hunk: 1, .. })
    ));
    assert!(matches!(
        parse_patch("--- a/f\n+++ b/f\n"),
        Err(PatchError::HunkShape { .. })
    ));
}

// ---- applying ---------------------------------------------------------------

#[test]
fn modifies_a_line_with_context() {
    let a = applied(
        "a\nb\nc\n",
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
    );
    assert_eq!(a.text, "a\nB\nc\n");
    assert_eq!((a.added, a.removed), (1, 1));
    assert!(a.offsets.is_empty());
}

#[test]
fn later_hunks_account_for_lines_added_by_earlier_ones() {
    let original = numbered(20);
    let patch = "--- a/f\n+++ b/f\n@@ -2,1 +2,3 @@\n-line 2\n+two\n+two and a half\n+two and three quarters\n@@ -15,1 +17,1 @@\n-line 15\n+fifteen\n";
    let a = applied(&original, patch);
    let lines: Vec<&str> = a.text.lines().collect();
    assert_eq!(lines[1], "two");
    assert_eq!(lines[3], "two and three quarters");
    assert_eq!(lines[16], "fifteen");
    assert_eq!(lines.len(), 22);
    assert!(a.offsets.is_empty(), "{:?}", a.offsets);
}

#[test]
fn a_hunk_whose_context_moved_applies_at_the_nearest_exact_match() {
    // Three lines were inserted at the top since the diff was made.
    let original = format!("new 1\nnew 2\nnew 3\n{}", numbered(10));
    let a = applied(
        &original,
        "--- a/f\n+++ b/f\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+five\n line 6\n",
    );
    assert!(a.text.contains("line 4\nfive\nline 6\n"), "{}", a.text);
    assert_eq!(a.offsets, vec![HunkOffset { hunk: 1, offset: 3 }]);
    // Moved up instead.
    let original = numbered(10).replacen("line 1\nline 2\n", "", 1);
    let a = applied(
        &original,
        "--- a/f\n+++ b/f\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+five\n line 6\n",
    );
    assert_eq!(
        a.offsets,
        vec![HunkOffset {
            hunk: 1,
            offset: -2
        }]
    );
}

#[test]
fn on_repeated_context_the_nearest_match_wins() {
    let original = "x\nsame\nx\nx\nx\nx\nsame\nx\n";
    // Stated at line 6 (0-based 5); "same" is at 1 and 6: 6 is nearer.
    let a = applied(original, "--- a/f\n+++ b/f\n@@ -6 +6 @@\n-same\n+SAME\n");
    assert_eq!(a.text, "x\nsame\nx\nx\nx\nx\nSAME\nx\n");
    assert_eq!(a.offsets, vec![HunkOffset { hunk: 1, offset: 1 }]);
}

#[test]
fn a_mismatch_names_the_hunk_line_and_both_texts() {
    let original = "fn a() {}\nfn b() {}\nfn c() {}\n";
    let patch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn a() {}\n-fn b() { todo!() }\n+fn b() { 1 }\n fn c() {}\n";
    let err = apply(original, patch).err();
    assert_eq!(
        err,
        Some(PatchError::Mismatch {
            path: "src/lib.rs".into(),
            hunk: 1,
            line: 2,
            expected: "fn b() { todo!() }".into(),
            found: Some("fn b() {}".into()),
            searched: true,
        })
    );
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("src/lib.rs, hunk 1: does not apply at line 2"),
        "{text}"
    );
    assert!(
        text.contains("expected \"fn b() { todo!() }\", found \"fn b() {}\""),
        "{text}"
    );
}

#[test]
fn the_second_hunk_is_numbered_in_the_error() {
    let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-line 1\n+one\n@@ -5 +5 @@\n-line five\n+five\n";
    match apply(&numbered(6), patch) {
        Err(PatchError::Mismatch {
            hunk, line, found, ..
        }) => {
            assert_eq!((hunk, line), (2, 5));
            assert_eq!(found.as_deref(), Some("line 5"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_mismatch_past_the_end_says_end_of_file() {
    let err = apply("a\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n").err();
    match &err {
        Some(PatchError::Mismatch { line, found, .. }) => {
            assert_eq!((*line, found.as_deref()), (2, None));
        }
        other => panic!("{other:?}"),
    }
    assert!(err
        .map(|e| e.to_string())
        .unwrap_or_default()
        .contains("found end of file"));
}

#[test]
fn hunks_out_of_order_do_not_match_backwards() {
    let patch = "--- a/f\n+++ b/f\n@@ -5 +5 @@\n-line 5\n+five\n@@ -2 +2 @@\n-line 2\n+two\n";
    assert!(matches!(
        apply(&numbered(6), patch),
        Err(PatchError::Mismatch { hunk: 2, .. })
    ));
}

#[test]
fn crlf_files_keep_crlf_and_added_lines_follow_them() {
    let a = applied(
        "a\r\nb\r\nc\r\n",
        "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n",
    );
    assert_eq!(a.text, "a\r\nB\r\nB2\r\nc\r\n");
    // A patch sent with CRLF line endings applies to an LF file as LF.
    let a = applied(
        "a\nb\n",
        "--- a/f\r\n+++ b/f\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+c\r\n",
    );
    assert_eq!(a.text, "a\nc\n");
}

#[test]
fn missing_final_newline_is_handled_both_ways() {
    // The file lacks a final newline; the patch adds one.
    let a = applied(
        "a\nb",
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
    );
    assert_eq!(a.text, "a\nb\n");
    // The patch removes the final newline.
    let a = applied(
        "a\nb\n",
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
    );
    assert_eq!(a.text, "a\nb");
    // Appending after a last line without newline gives it one.
    let a = applied("a", "--- a/f\n+++ b/f\n@@ -1,0 +2 @@\n+b\n");
    assert_eq!(a.text, "a\nb\n");
}

#[test]
fn pure_insertions_at_the_top_and_bottom() {
    let a = applied("b\n", "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+a\n");
    assert_eq!(a.text, "a\nb\n");
    let a = applied("a\n", "--- a/f\n+++ b/f\n@@ -1,0 +2,1 @@\n+b\n");
    assert_eq!(a.text, "a\nb\n");
    assert!(matches!(
        apply("a\n", "--- a/f\n+++ b/f\n@@ -5,0 +6,1 @@\n+b\n"),
        Err(PatchError::Mismatch {
            hunk: 1,
            found: None,
            ..
        })
    ));
}

#[test]
fn create_and_delete_in_memory() {
    let a = applied("", "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+one\n+two\n");
    assert_eq!((a.text.as_str(), a.added), ("one\ntwo\n", 2));
    let a = applied(
        "one\ntwo\n",
        "--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n",
    );
    assert_eq!((a.text.as_str(), a.removed), ("", 2));
}

// ---- the execution root ---------------------------------------------------

struct Root {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn root() -> Root {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("home");
    let outside = dir.path().join("outside");
    for d in [&root, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    Root {
        _dir: dir,
        root,
        outside,
    }
}

fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir`, relative, sorted (to prove nothing else moved).
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = entry.path();
            let rel = p
                .strip_prefix(base)
                .map(|r| r.display().to_string())
                .unwrap_or_default();
            out.push(rel);
            if p.is_dir() && !p.is_symlink() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn modifies_creates_and_deletes_in_one_patch() {
    let r = root();
    write(&r.root.join("src/a.txt"), "one\ntwo\n");
    write(&r.root.join("old.txt"), "bye\n");
    let patch = "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n\
                 --- /dev/null\n+++ b/docs/new/readme.md\n@@ -0,0 +1,2 @@\n+# New\n+text\n\
                 --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    let changes = apply_in_root(&r.root, patch).unwrap();
    let rows: Vec<(&str, FileAction, usize, usize)> = changes
        .iter()
        .map(|c| (c.path.as_str(), c.action, c.added, c.removed))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("src/a.txt", FileAction::Modified, 1, 1),
            ("docs/new/readme.md", FileAction::Created, 2, 0),
            ("old.txt", FileAction::Deleted, 0, 1),
        ]
    );
    assert_eq!(read(&r.root.join("src/a.txt")), "one\nTWO\n");
    assert_eq!(read(&r.root.join("docs/new/readme.md")), "# New\ntext\n");
    assert!(!r.root.join("old.txt").exists());
    assert!(
        tree(&r.root).iter().all(|p| !p.contains("holon-patch")),
        "no staging files left: {:?}",
        tree(&r.root)
    );
    let envelope = success(&changes).content;
    assert_eq!(envelope["ok"], true);
    assert_eq!(envelope["files"][1]["action"], "created");
    assert_eq!(envelope["files"][0]["added"], 1);
}

#[test]
fn one_bad_hunk_means_nothing_is_written() {
    let r = root();
    write(&r.root.join("a.txt"), "a\nb\n");
    write(&r.root.join("b.txt"), "x\ny\n");
    let before = tree(&r.root);
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n\
                 --- /dev/null\n+++ b/new/dir/c.txt\n@@ -0,0 +1 @@\n+c\n\
                 --- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n x\n-zzz\n+Y\n";
    let err = apply_in_root(&r.root, patch).err();
    assert!(
        matches!(&err, Some(PatchError::Mismatch { path, hunk: 1, line: 2, .. }) if path == "b.txt"),
        "{err:?}"
    );
    assert_eq!(read(&r.root.join("a.txt")), "a\nb\n");
    assert_eq!(read(&r.root.join("b.txt")), "x\ny\n");
    assert_eq!(tree(&r.root), before);
}

#[test]
fn a_failure_while_staging_removes_what_was_staged() {
    let r = root();
    write(&r.root.join("a.txt"), "a\n");
    write(&r.root.join("f.txt"), "not a directory\n");
    let before = tree(&r.root);
    // Staged in path order: a.txt, b-dir/z.txt (creating b-dir), then
    // f.txt/x/y.txt fails because f.txt is a file.
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n\
                 --- /dev/null\n+++ b/b-dir/z.txt\n@@ -0,0 +1 @@\n+z\n\
                 --- /dev/null\n+++ b/f.txt/x/y.txt\n@@ -0,0 +1 @@\n+y\n";
    let err = apply_in_root(&r.root, patch).err();
    assert!(
        matches!(&err, Some(PatchError::Io { path, .. }) if path == "f.txt/x/y.txt"),
        "{err:?}"
    );
    assert_eq!(tree(&r.root), before);
    assert_eq!(read(&r.root.join("a.txt")), "a\n");
}

#[test]
fn the_same_file_twice_applies_in_sequence() {
    let r = root();
    write(&r.root.join("f"), "a\nb\nc\n");
    let patch =
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n A\n-b\n+B\n";
    apply_in_root(&r.root, patch).unwrap();
    assert_eq!(read(&r.root.join("f")), "A\nB\nc\n");
}

#[test]
fn missing_files_and_creating_over_existing_files_are_refused() {
    let r = root();
    write(&r.root.join("here.txt"), "x\n");
    assert_eq!(
        apply_in_root(
            &r.root,
            "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n"
        )
        .err(),
        Some(PatchError::NotFound {
            path: "nope.txt".into()
        })
    );
    assert_eq!(
        apply_in_root(
            &r.root,
            "--- /dev/null\n+++ b/here.txt\n@@ -0,0 +1 @@\n+y\n"
        )
        .err(),
        Some(PatchError::AlreadyExists {
            path: "here.txt".into()
        })
    );
    assert_eq!(read(&r.root.join("here.txt")), "x\n");
}

#[test]
fn deleting_needs_every_line_removed() {
    let r = root();
    write(&r.root.join("f"), "a\nb\n");
    assert_eq!(
        apply_in_root(&r.root, "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n").err(),
        Some(PatchError::DeleteIncomplete {
            path: "f".into(),
            remaining: 1
        })
    );
    assert!(r.root.join("f").exists());
}

#[test]
fn paths_outside_the_root_are_refused() {
    let r = root();
    write(&r.outside.join("secret.txt"), "s\n");
    for bad in [
        "/etc/passwd",
        "../outside/secret.txt",
        "a/../../outside/secret.txt",
    ] {
        let patch = format!("--- {bad}\n+++ {bad}\n@@ -1 +1 @@\n-s\n+pwned\n");
        assert!(
            matches!(
                apply_in_root(&r.root, &patch),
                Err(PatchError::InvalidPath { .. })
            ),
            "{bad}"
        );
    }
    assert_eq!(read(&r.outside.join("secret.txt")), "s\n");
}

#[test]
fn symlinks_that_leave_the_root_are_refused() {
    let r = root();
    write(&r.outside.join("secret.txt"), "s\n");
    let link = |target: &Path, name: &str| {
        std::os::unix::fs::symlink(target, r.root.join(name)).unwrap();
    };
    link(&r.outside, "escape");
    link(&r.outside.join("secret.txt"), "secret-link");
    link(&r.outside.join("missing.txt"), "dangling");
    let cases = [
        "--- a/escape/secret.txt\n+++ b/escape/secret.txt\n@@ -1 +1 @@\n-s\n+pwned\n",
        "--- /dev/null\n+++ b/escape/new.txt\n@@ -0,0 +1 @@\n+pwned\n",
        "--- /dev/null\n+++ b/escape/deeper/new.txt\n@@ -0,0 +1 @@\n+pwned\n",
        "--- a/secret-link\n+++ b/secret-link\n@@ -1 +1 @@\n-s\n+pwned\n",
        "--- /dev/null\n+++ b/dangling\n@@ -0,0 +1 @@\n+pwned\n",
    ];
    for patch in cases {
        assert!(
            matches!(
                apply_in_root(&r.root, patch),
                Err(PatchError::OutsideRoot { .. })
            ),
            "{patch}"
        );
    }
    assert_eq!(tree(&r.outside), vec!["secret.txt".to_owned()]);
    assert_eq!(read(&r.outside.join("secret.txt")), "s\n");
}

#[test]
fn a_symlink_inside_the_root_is_followed_and_kept() {
    let r = root();
    write(&r.root.join("real.txt"), "a\n");
    std::os::unix::fs::symlink(r.root.join("real.txt"), r.root.join("alias.txt")).unwrap();
    apply_in_root(
        &r.root,
        "--- a/alias.txt\n+++ b/alias.txt\n@@ -1 +1 @@\n-a\n+b\n",
    )
    .unwrap();
    assert_eq!(read(&r.root.join("real.txt")), "b\n");
    assert!(r.root.join("alias.txt").is_symlink());
}

#[test]
fn file_permissions_survive_a_modification() {
    use std::os::unix::fs::PermissionsExt;
    let r = root();
    let script = r.root.join("run.sh");
    write(&script, "#!/bin/sh\necho a\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    apply_in_root(
        &r.root,
        "--- a/run.sh\n+++ b/run.sh\n@@ -2 +2 @@\n-echo a\n+echo b\n",
    )
    .unwrap();
    let mode = std::fs::metadata(&script)
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn non_text_files_and_directories_are_refused() {
    let r = root();
    std::fs::write(r.root.join("blob"), [0xff, 0xfe, 0x00, 0x01]).unwrap();
    std::fs::create_dir_all(r.root.join("dir")).unwrap();
    assert_eq!(
        apply_in_root(&r.root, "--- a/blob\n+++ b/blob\n@@ -1 +1 @@\n-a\n+b\n").err(),
        Some(PatchError::NotText {
            path: "blob".into()
        })
    );
    assert_eq!(
        apply_in_root(&r.root, "--- a/dir\n+++ b/dir\n@@ -1 +1 @@\n-a\n+b\n").err(),
        Some(PatchError::NotAFile { path: "dir".into() })
    );
}

#[test]
fn the_error_envelope_carries_structured_details() {
    let e = PatchError::Mismatch {
        path: "src/x.rs".into(),
        hunk: 2,
        line: 14,
        expected: "let a = 1;".into(),
        found: Some("let a = 2;".into()),
        searched: true,
    };
    let mut out = failure(&e);
    assert!(out.is_error);
    // Named by the call it answers, as every error envelope is.
    crate::runtime::tool_outcome::finish(&mut out, "ApplyPatch");
    let c = &out.content;
    assert_eq!(c["ok"], false);
    assert_eq!(c["tool_name"], "ApplyPatch");
    assert_eq!(c["kind"], "conflict");
    assert_eq!(c["field"], "patch");
    assert_eq!(c["retryable"], false);
    assert_eq!(c["details"]["hunk"], 2);
    assert_eq!(c["details"]["line"], 14);
    assert_eq!(c["details"]["expected"], "let a = 1;");
    assert_eq!(c["details"]["found"], "let a = 2;");
    assert!(c["hint"]
        .as_str()
        .unwrap_or("")
        .contains("nothing was written"));
    let missing = failure(&PatchError::NotFound { path: "x".into() });
    assert_eq!(missing.content["kind"], "not_found");
}
