//! Applying one file's hunks to its text in memory (pure): exact matches
//! at the stated line or the nearest place the lines moved to, line
//! endings preserved.

use serde::Serialize;

use super::parse::{Hunk, HunkLine};
use super::PatchError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Lf,
    CrLf,
    None,
}

impl Eol {
    fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::CrLf => "\r\n",
            Eol::None => "",
        }
    }
}

#[derive(Debug, Clone)]
struct Line<'a> {
    text: &'a str,
    eol: Eol,
}

fn split_lines(s: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let raw = &rest[..i];
                let (text, eol) = match raw.strip_suffix('\r') {
                    Some(t) => (t, Eol::CrLf),
                    None => (raw, Eol::Lf),
                };
                out.push(Line { text, eol });
                rest = &rest[i + 1..];
            }
            None => {
                out.push(Line {
                    text: rest.strip_suffix('\r').unwrap_or(rest),
                    eol: Eol::None,
                });
                rest = "";
            }
        }
    }
    out
}

/// How many lines `s` has (a last line without newline counts).
pub(super) fn line_count(s: &str) -> usize {
    split_lines(s).len()
}

/// A hunk that applied somewhere other than its stated line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HunkOffset {
    pub hunk: usize,
    /// Lines after (+) or before (-) the position its header states.
    pub offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub added: usize,
    pub removed: usize,
    pub offsets: Vec<HunkOffset>,
}

fn old_side(h: &Hunk) -> Vec<&str> {
    h.lines
        .iter()
        .filter_map(|l| match l {
            HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
            HunkLine::Add(_) => None,
        })
        .collect()
}

fn matches_at(file: &[Line<'_>], at: usize, old: &[&str]) -> bool {
    at + old.len() <= file.len() && old.iter().zip(&file[at..]).all(|(o, f)| f.text == *o)
}

/// Nearest exact match to `stated` at or after `floor`; on a tie the
/// earlier position wins.
fn find_nearest(file: &[Line<'_>], old: &[&str], stated: usize, floor: usize) -> Option<usize> {
    let last = file.len().checked_sub(old.len())?;
    let max_distance = stated
        .saturating_sub(floor)
        .max(last.saturating_sub(stated));
    for d in 1..=max_distance {
        if let Some(before) = stated.checked_sub(d).filter(|b| *b >= floor) {
            if matches_at(file, before, old) {
                return Some(before);
            }
        }
        let after = stated + d;
        if after <= last && matches_at(file, after, old) {
            return Some(after);
        }
    }
    None
}

/// Apply `hunks` (in file order) to `original`. `path` only labels errors.
pub fn apply_hunks(original: &str, hunks: &[Hunk], path: &str) -> Result<Applied, PatchError> {
    let file = split_lines(original);
    let style = file
        .iter()
        .map(|l| l.eol)
        .find(|e| *e != Eol::None)
        .unwrap_or(Eol::Lf);
    let mut out: Vec<(&str, Eol)> = Vec::with_capacity(file.len());
    let (mut added, mut removed) = (0, 0);
    let mut offsets = Vec::new();
    let mut cursor = 0usize;
    let mut delta: i64 = 0;
    for (k, h) in hunks.iter().enumerate() {
        let number = k + 1;
        let old = old_side(h);
        // Where the old lines begin (0-based). A pure insertion
        // (`-l,0`) goes after line l.
        let expected = if old.is_empty() {
            h.old_start
        } else {
            h.old_start.saturating_sub(1)
        };
        let stated = usize::try_from((expected as i64 + delta).max(0))
            .unwrap_or(0)
            .max(cursor);
        let pos = if old.is_empty() {
            if stated > file.len() {
                return Err(PatchError::Mismatch {
                    path: path.to_owned(),
                    hunk: number,
                    line: stated,
                    expected: "(an insertion point)".into(),
                    found: None,
                    searched: false,
                });
            }
            stated
        } else if matches_at(&file, stated, &old) {
            stated
        } else if let Some(p) = find_nearest(&file, &old, stated, cursor) {
            p
        } else {
            let j = old
                .iter()
                .enumerate()
                .position(|(j, o)| file.get(stated + j).is_none_or(|f| f.text != *o))
                .unwrap_or(0);
            return Err(PatchError::Mismatch {
                path: path.to_owned(),
                hunk: number,
                line: stated + j + 1,
                expected: old[j].to_owned(),
                found: file.get(stated + j).map(|f| f.text.to_owned()),
                searched: true,
            });
        };
        let offset = pos as i64 - expected as i64;
        if offset != 0 {
            offsets.push(HunkOffset {
                hunk: number,
                offset,
            });
        }
        delta = offset;
        out.extend(file[cursor..pos].iter().map(|l| (l.text, l.eol)));
        let mut idx = pos;
        for line in &h.lines {
            match line {
                HunkLine::Context(_) => {
                    out.push((file[idx].text, file[idx].eol));
                    idx += 1;
                }
                HunkLine::Remove(_) => {
                    idx += 1;
                    removed += 1;
                }
                HunkLine::Add(t) => {
                    out.push((t.as_str(), style));
                    added += 1;
                }
            }
        }
        cursor = idx;
        // `\ No newline at end of file` on the new side of a hunk that
        // reaches the end: the file ends without one. (Context lines keep
        // their own ending otherwise; added lines get the file's style.)
        if cursor == file.len() && h.new_count > 0 && h.new_no_eol {
            if let Some(last) = out.last_mut() {
                last.1 = Eol::None;
            }
        }
    }
    out.extend(file[cursor..].iter().map(|l| (l.text, l.eol)));
    let mut text = String::with_capacity(original.len() + added * 40);
    let last = out.len().saturating_sub(1);
    for (i, (t, eol)) in out.iter().enumerate() {
        text.push_str(t);
        let eol = if *eol == Eol::None && i != last {
            style
        } else {
            *eol
        };
        text.push_str(eol.as_str());
    }
    Ok(Applied {
        text,
        added,
        removed,
        offsets,
    })
}
