//! The presentation layer's small pure text helpers: wire names, trimmed
//! and bounded one-liners, `head: tail` / `head (tail)` joins, counts,
//! durations and clock times. No event knowledge lives here.

use super::{PREVIEW_MAX, SUMMARY_MAX};

/// An enum's wire name (`operator_prompt`); empty for anything else.
pub fn wire_name<T: serde::Serialize>(v: &T) -> String {
    crate::protocol::wire_name(v).unwrap_or_default()
}

/// `s` trimmed, `None` when blank.
pub(crate) fn nonblank(s: &str) -> Option<&str> {
    Some(s.trim()).filter(|s| !s.is_empty())
}

/// `n` with its noun as a person says it: `1 entry`, `3 entries`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// `812`, `12.3k`, `1.2M`.
pub fn compact_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// The present, non-blank parts joined by `sep`; `None` when there are none.
pub(crate) fn joined(parts: impl IntoIterator<Item = Option<String>>, sep: &str) -> Option<String> {
    let parts: Vec<String> = parts
        .into_iter()
        .flatten()
        .filter(|s| !s.trim().is_empty())
        .collect();
    Some(parts.join(sep)).filter(|s| !s.is_empty())
}

/// A body: trimmed, `None` when blank.
pub(crate) fn body(s: Option<&str>) -> Option<String> {
    s.map(str::trim)
        .filter(|b| !b.is_empty())
        .map(str::to_owned)
}

/// `ExecCommand x2, TaskStatus`: first-seen order, repeats counted.
pub(crate) fn tool_list(names: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match seen.iter_mut().find(|(s, _)| s == n) {
            Some((_, count)) => *count += 1,
            None => seen.push((n, 1)),
        }
    }
    let part = |(n, c): (&str, usize)| match c {
        1 => n.to_owned(),
        c => format!("{n} x{c}"),
    };
    seen.into_iter().map(part).collect::<Vec<_>>().join(", ")
}

/// `head: tail`, or `head` when the tail is missing or blank.
pub(crate) fn colon(head: impl Into<String>, tail: Option<impl AsRef<str>>) -> String {
    affix(head.into(), tail, ": ", "")
}

/// `head (tail)`, or `head` when the tail is missing or blank.
pub(crate) fn paren(head: impl Into<String>, tail: Option<impl AsRef<str>>) -> String {
    affix(head.into(), tail, " (", ")")
}

pub(crate) fn affix(
    head: String,
    tail: Option<impl AsRef<str>>,
    open: &str,
    close: &str,
) -> String {
    match tail
        .as_ref()
        .map(|t| t.as_ref().trim())
        .filter(|t| !t.is_empty())
    {
        Some(t) => format!("{head}{open}{t}{close}"),
        None => head,
    }
}

/// `no_runnable_work` -> `no runnable work`.
pub(crate) fn words(snake: &str) -> String {
    snake.replace('_', " ")
}

pub(crate) fn preview(s: &str) -> String {
    one_line(s, PREVIEW_MAX)
}

/// The first non-blank line, marked `…` when more lines follow.
pub(crate) fn headline(s: &str) -> String {
    let mut lines = s.lines().filter(|l| !l.trim().is_empty());
    let head = one_line(lines.next().unwrap_or(""), SUMMARY_MAX);
    match lines.next().is_some() && !head.ends_with('…') {
        true => format!("{head} …"),
        false => head,
    }
}

/// Text safe to print on a terminal: `\r` and tabs made plain, newlines
/// kept, every other control character (an escape sequence's ESC) and
/// hidden format character (a bidi override) shown escaped
/// (`model::text`).
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' | '\r' => out.push(' '),
            c if crate::model::text::needs_escape(c) => {
                crate::model::text::push_escaped(&mut out, c)
            }
            c => out.push(c),
        }
    }
    out
}

/// Whitespace collapsed to single spaces, control and hidden format
/// characters shown escaped, at most `max` characters (a cut ends in
/// `…`).
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let joined = crate::model::text::escape_hidden(&joined).into_owned();
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// `850 ms`, `12.3 s`, `2m 05s`, `1h 02m`.
pub(crate) fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{}.{} s", ms / 1000, (ms % 1000) / 100),
        60_000..=3_599_999 => format!("{}m {:02}s", ms / 60_000, (ms / 1000) % 60),
        _ => format!("{}h {:02}m", ms / 3_600_000, (ms / 60_000) % 60),
    }
}

/// `HH:MM:SS` of an RFC 3339 timestamp (`2026-11-22T04:42:17.517Z`); the
/// raw text when it has another shape, `--:--:--` when empty.
pub(crate) fn clock(ts: &str) -> &str {
    let shape = |(i, c): (usize, char)| match i {
        2 | 5 => c == ':',
        _ => c.is_ascii_digit(),
    };
    let hms = ts.get(11..19).filter(|t| t.char_indices().all(shape));
    match hms.filter(|_| ts.get(10..11) == Some("T")) {
        Some(t) => t,
        None if ts.trim().is_empty() => "--:--:--",
        None => ts,
    }
}
