//! Parsing a unified diff into file sections and hunks (pure). Hunk
//! bodies are read by their header counts, so a removed line that looks
//! like a `---` header is still a removed line.

use super::PatchError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_count: usize,
    pub new_start: usize,
    pub new_count: usize,
    pub lines: Vec<HunkLine>,
    /// `\ No newline at end of file` after the old side's last line.
    pub old_no_eol: bool,
    /// `\ No newline at end of file` after the new side's last line.
    pub new_no_eol: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    Modify,
    Create,
    Delete,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// As written in the patch, with git's `a/` / `b/` prefix removed.
    pub path: String,
    pub op: FileOp,
    pub hunks: Vec<Hunk>,
}

/// A header path: up to a tab (timestamps), quotes removed; `None` for
/// `/dev/null`.
fn header_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or("").trim_end();
    let path = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(quoted) => unquote(quoted),
        None => raw.to_owned(),
    };
    (path != "/dev/null").then_some(path)
}

fn unquote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Which file a `---`/`+++` pair names, and what happens to it.
fn file_target(
    old: Option<String>,
    new: Option<String>,
    line: usize,
) -> Result<(String, FileOp), PatchError> {
    match (old, new) {
        (None, None) => Err(PatchError::Parse {
            line,
            message: "both sides are /dev/null".into(),
        }),
        (None, Some(new)) => Ok((strip(&new, "b/"), FileOp::Create)),
        (Some(old), None) => Ok((strip(&old, "a/"), FileOp::Delete)),
        (Some(old), Some(new)) => {
            if old == new {
                return Ok((old, FileOp::Modify));
            }
            let (o, n) = (strip(&old, "a/"), strip(&new, "b/"));
            if o == n {
                Ok((o, FileOp::Modify))
            } else {
                Err(PatchError::Rename { old: o, new: n })
            }
        }
    }
}

fn strip(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_owned()
}

/// `@@ -l[,c] +l[,c] @@ ...` -> (old_start, old_count, new_start, new_count).
fn hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((s, c)) => Some((s.parse().ok()?, c.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (os, oc) = range(old)?;
    let (ns, nc) = range(new)?;
    Some((os, oc, ns, nc))
}

fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

/// Parse a unified diff. Lines before a `---`/`+++` pair (`diff --git`,
/// `index`, prose) are ignored; hunk bodies are read by their header
/// counts. An empty line inside a hunk counts as an empty context line
/// (editors strip the single space).
pub fn parse_patch(text: &str) -> Result<Vec<FilePatch>, PatchError> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    // A final newline ends the last line; it does not start another.
    let n = match lines.last() {
        Some(&"") => lines.len() - 1,
        _ => lines.len(),
    };
    let lines = &lines[..n];
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("@@") {
            return Err(PatchError::Parse {
                line: i + 1,
                message: "hunk without a file header (`--- a/PATH` and `+++ b/PATH` come first)"
                    .into(),
            });
        }
        if !is_file_header(lines, i) {
            i += 1;
            continue;
        }
        let old = header_path(&lines[i][4..]);
        let new = header_path(&lines[i + 1][4..]);
        let (path, op) = file_target(old, new, i + 1)?;
        i += 2;
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@") {
            let number = hunks.len() + 1;
            let (hunk, next) = parse_hunk(lines, i, &path, number)?;
            hunks.push(hunk);
            i = next;
            // A body line right after a complete hunk means the counts
            // were too small.
            if let Some(l) = lines.get(i) {
                let stray = (l.starts_with(' ') || l.starts_with('+') || l.starts_with('-'))
                    && !is_file_header(lines, i);
                if stray {
                    return Err(PatchError::HunkShape {
                        path,
                        hunk: number,
                        message: format!(
                            "patch line {} continues the hunk past the line counts in its header",
                            i + 1
                        ),
                    });
                }
            }
        }
        check_shape(&path, op, &hunks)?;
        files.push(FilePatch { path, op, hunks });
    }
    if files.is_empty() {
        return Err(PatchError::Empty);
    }
    Ok(files)
}

fn parse_hunk(
    lines: &[&str],
    at: usize,
    path: &str,
    number: usize,
) -> Result<(Hunk, usize), PatchError> {
    let (old_start, old_count, new_start, new_count) =
        hunk_header(lines[at]).ok_or_else(|| PatchError::Parse {
            line: at + 1,
            message: format!(
                "malformed hunk header {:?} (expected `@@ -l,c +l,c @@`)",
                lines[at]
            ),
        })?;
    let mut hunk = Hunk {
        old_start,
        old_count,
        new_start,
        new_count,
        lines: Vec::new(),
        old_no_eol: false,
        new_no_eol: false,
    };
    let (mut old_seen, mut new_seen) = (0, 0);
    let mut i = at + 1;
    let short = |old_seen: usize, new_seen: usize| {
        PatchError::HunkShape {
        path: path.to_owned(),
        hunk: number,
        message: format!(
            "the header promises {old_count} old and {new_count} new lines, the body has {old_seen} and {new_seen}"
        ),
    }
    };
    while old_seen < old_count || new_seen < new_count {
        let Some(line) = lines.get(i) else {
            return Err(short(old_seen, new_seen));
        };
        if line.starts_with("@@") || is_file_header(lines, i) {
            return Err(short(old_seen, new_seen));
        }
        let (tag, body) = line.split_at(line.len().min(1));
        match tag {
            " " | "" => {
                hunk.lines.push(HunkLine::Context(body.to_owned()));
                old_seen += 1;
                new_seen += 1;
            }
            "-" => {
                hunk.lines.push(HunkLine::Remove(body.to_owned()));
                old_seen += 1;
            }
            "+" => {
                hunk.lines.push(HunkLine::Add(body.to_owned()));
                new_seen += 1;
            }
            "\\" => mark_no_eol(&mut hunk),
            _ => {
                return Err(PatchError::Parse {
                    line: i + 1,
                    message: format!(
                        "{path}, hunk {number}: a hunk line must start with ' ', '-' or '+', found {line:?}"
                    ),
                })
            }
        }
        if old_seen > old_count || new_seen > new_count {
            return Err(short(old_seen, new_seen));
        }
        i += 1;
    }
    while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
        mark_no_eol(&mut hunk);
        i += 1;
    }
    Ok((hunk, i))
}

fn mark_no_eol(hunk: &mut Hunk) {
    match hunk.lines.last() {
        Some(HunkLine::Context(_)) => {
            hunk.old_no_eol = true;
            hunk.new_no_eol = true;
        }
        Some(HunkLine::Remove(_)) => hunk.old_no_eol = true,
        Some(HunkLine::Add(_)) => hunk.new_no_eol = true,
        None => {}
    }
}

fn check_shape(path: &str, op: FileOp, hunks: &[Hunk]) -> Result<(), PatchError> {
    let bad = |hunk: usize, message: &str| PatchError::HunkShape {
        path: path.to_owned(),
        hunk,
        message: message.to_owned(),
    };
    match op {
        FileOp::Modify if hunks.is_empty() => Err(bad(0, "no hunks for this file")),
        FileOp::Modify => Ok(()),
        FileOp::Create => match hunks.iter().position(|h| h.old_count != 0) {
            Some(k) => Err(bad(
                k + 1,
                "a new file's hunks cannot have old lines (`@@ -0,0 +1,N @@`)",
            )),
            None => Ok(()),
        },
        FileOp::Delete => match hunks.iter().position(|h| h.new_count != 0) {
            Some(k) => Err(bad(
                k + 1,
                "a deleted file's hunks cannot have new lines (`@@ -1,N +0,0 @@`)",
            )),
            None => Ok(()),
        },
    }
}
