//! Small formatting helpers shared by rows, the status line and overlays:
//! durations, clock times of event timestamps, counts, a scheduler
//! decision in words.

/// `850 ms`, `12.3 s`, `2m 05s`, `1h 02m` (the presentation layer's form).
pub fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{}.{} s", ms / 1000, (ms % 1000) / 100),
        60_000..=3_599_999 => format!("{}m {:02}s", ms / 60_000, (ms / 1000) % 60),
        _ => format!("{}h {:02}m", ms / 3_600_000, (ms / 60_000) % 60),
    }
}

/// Whole seconds, compact: `7s`, `2m 05s`, `1h 02m`.
pub fn elapsed(ms: u64) -> String {
    match ms {
        0..=59_999 => format!("{}s", ms / 1000),
        _ => duration(ms),
    }
}

/// `HH:MM:SS` of an RFC 3339 timestamp, `--:--:--` when it has another shape.
pub fn clock(ts: &str) -> String {
    let hms = ts.get(11..19).filter(|t| {
        t.char_indices().all(|(i, c)| match i {
            2 | 5 => c == ':',
            _ => c.is_ascii_digit(),
        })
    });
    hms.map_or("--:--:--".to_owned(), str::to_owned)
}

/// Epoch milliseconds of an RFC 3339 timestamp.
pub fn ts_ms(ts: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339);
    t.ok()
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// `no_runnable_work` -> `no runnable work`.
pub fn words(snake: &str) -> String {
    snake.replace('_', " ")
}

/// `1,234`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A scheduler decision kind as an operator reads it.
pub fn decision_words(decision: crate::model::decision::SchedulerDecisionKind) -> &'static str {
    use crate::model::decision::SchedulerDecisionKind as D;
    match decision {
        D::StartModelTurn => "to start a model turn",
        D::ReduceMessageOnly => "to settle a message without a turn",
        D::EmitSystemTick => "to emit a system tick",
        D::WaitForTask => "to wait for a task",
        D::WaitForExternalChange => "to wait for an external change",
        D::WaitForTimer => "to wait for a timer",
        D::WaitForOperator => "to wait for you",
        D::Sleep => "to sleep",
        D::StayIdle => "to stay idle",
        D::Stop => "to hold (stopped)",
        D::Noop => "to do nothing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(duration(1234), "1.2 s");
        assert_eq!(elapsed(65_000), "1m 05s");
        assert_eq!(clock("2026-11-22T04:42:17.517Z"), "04:42:17");
        assert_eq!(ts_ms("1970-01-01T00:00:01.500Z"), Some(1500));
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
