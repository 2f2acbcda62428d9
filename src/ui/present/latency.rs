//! `holon debug latency`, pure: where each recent turn's time went, from
//! the durable events alone. Queue wait is `message_admitted` to
//! `message_processing_started`; context is `turn_context_built` and each
//! round's `context_build_ms`; the model is the rounds' `provider_round_ms`;
//! tools are `tool_executed`'s `duration_ms`; the rest of `turn_terminal`'s
//! `duration_ms` is the runtime's own (recording, compaction, cleanup).

use std::collections::HashMap;

use serde::Serialize;

use super::counted;
use crate::model::event::EventRecord;

/// One turn's time, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TurnLatency {
    pub run_id: String,
    pub ended_at: String,
    /// `None`: its admission is older than the events read.
    pub queue_wait_ms: Option<u64>,
    pub context_ms: u64,
    pub provider_ms: u64,
    pub rounds: u32,
    pub tools_ms: u64,
    pub tool_calls: u32,
    pub turn_ms: u64,
    pub runtime_ms: u64,
}

/// One tool's calls in the turns read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolTimes {
    pub tool_name: String,
    pub calls: u32,
    pub p50_ms: u64,
    pub max_ms: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LatencyReport {
    pub agent_id: String,
    pub turns: Vec<TurnLatency>,
    pub tools: Vec<ToolTimes>,
}

fn parse_ts_ms(ts: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

fn ms(e: &EventRecord, key: &str) -> u64 {
    e.payload[key].as_u64().unwrap_or(0)
}

/// The last `last` ended turns among `events` (in order), and the tools
/// they called.
pub fn report(agent_id: &str, events: &[EventRecord], last: usize) -> LatencyReport {
    let mut admitted: HashMap<&str, &str> = HashMap::new();
    let mut started: HashMap<&str, &str> = HashMap::new();
    let mut run_message: HashMap<&str, &str> = HashMap::new();
    let mut open: HashMap<String, TurnLatency> = HashMap::new();
    let mut tool_calls: HashMap<String, Vec<(String, u64)>> = HashMap::new();
    let mut turns = Vec::new();
    for e in events {
        let run = e.payload["run_id"].as_str().unwrap_or_default();
        match e.kind.as_str() {
            "message_admitted" => {
                if let Some(id) = e.payload["message"]["id"].as_str() {
                    admitted.insert(id, &e.ts);
                }
            }
            "message_processing_started" => {
                if let Some(id) = e.payload["message_id"].as_str() {
                    started.insert(id, &e.ts);
                }
            }
            "turn_started" => {
                if let Some(id) = e.payload["message_id"].as_str() {
                    run_message.insert(run, id);
                }
            }
            "provider_round_completed" => {
                let t = open.entry(run.to_owned()).or_insert_with(|| TurnLatency {
                    run_id: run.to_owned(),
                    ..TurnLatency::default()
                });
                t.provider_ms += ms(e, "provider_round_ms");
                t.context_ms += ms(e, "context_build_ms");
                t.rounds += 1;
            }
            "tool_executed" => {
                let t = open.entry(run.to_owned()).or_insert_with(|| TurnLatency {
                    run_id: run.to_owned(),
                    ..TurnLatency::default()
                });
                let d = ms(e, "duration_ms");
                t.tools_ms += d;
                t.tool_calls += 1;
                let name = e.payload["tool_name"].as_str().unwrap_or("?").to_owned();
                tool_calls
                    .entry(run.to_owned())
                    .or_default()
                    .push((name, d));
            }
            "turn_terminal" => {
                let mut t = open.remove(run).unwrap_or_else(|| TurnLatency {
                    run_id: run.to_owned(),
                    ..TurnLatency::default()
                });
                t.turn_ms = ms(e, "duration_ms");
                t.ended_at = e.ts.clone();
                t.runtime_ms = t
                    .turn_ms
                    .saturating_sub(t.provider_ms + t.tools_ms + t.context_ms);
                t.queue_wait_ms = run_message.get(run).and_then(|m| {
                    let (a, s) = (admitted.get(m)?, started.get(m)?);
                    Some(parse_ts_ms(s)?.saturating_sub(parse_ts_ms(a)?).max(0) as u64)
                });
                turns.push(t);
            }
            _ => {}
        }
    }
    let cut = turns.len().saturating_sub(last);
    turns.drain(..cut);
    let mut by_tool: HashMap<String, Vec<u64>> = HashMap::new();
    for t in &turns {
        for (name, d) in tool_calls.get(&t.run_id).into_iter().flatten() {
            by_tool.entry(name.clone()).or_default().push(*d);
        }
    }
    let mut tools: Vec<ToolTimes> = by_tool
        .into_iter()
        .map(|(tool_name, mut v)| {
            v.sort_unstable();
            ToolTimes {
                tool_name,
                calls: v.len() as u32,
                p50_ms: v[v.len() / 2],
                max_ms: *v.last().unwrap_or(&0),
            }
        })
        .collect();
    tools.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.tool_name.cmp(&b.tool_name)));
    LatencyReport {
        agent_id: agent_id.to_owned(),
        turns,
        tools,
    }
}

fn p(values: &mut [u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// The report as text: a row a turn, then p50/p95 of each column, then
/// the tools.
pub fn text(r: &LatencyReport) -> String {
    if r.turns.is_empty() {
        return format!("{}: no ended turn in its events yet\n", r.agent_id);
    }
    let mut s = format!(
        "{}: the last {} (ms)\n{:<28} {:>7} {:>7} {:>8} {:>6} {:>7} {:>5} {:>8} {:>8}\n",
        r.agent_id,
        counted(r.turns.len() as u64, "turn", "turns"),
        "run",
        "queue",
        "context",
        "model",
        "rounds",
        "tools",
        "calls",
        "runtime",
        "turn"
    );
    for t in &r.turns {
        let queue = t.queue_wait_ms.map_or("—".to_owned(), |q| q.to_string());
        s += &format!(
            "{:<28} {:>7} {:>7} {:>8} {:>6} {:>7} {:>5} {:>8} {:>8}\n",
            t.run_id,
            queue,
            t.context_ms,
            t.provider_ms,
            t.rounds,
            t.tools_ms,
            t.tool_calls,
            t.runtime_ms,
            t.turn_ms
        );
    }
    for (label, q) in [("p50", 0.5), ("p95", 0.95)] {
        let col = |f: fn(&TurnLatency) -> u64| {
            let mut v: Vec<u64> = r.turns.iter().map(f).collect();
            p(&mut v, q)
        };
        let mut queue: Vec<u64> = r.turns.iter().filter_map(|t| t.queue_wait_ms).collect();
        s += &format!(
            "{:<28} {:>7} {:>7} {:>8} {:>6} {:>7} {:>5} {:>8} {:>8}\n",
            label,
            p(&mut queue, q),
            col(|t| t.context_ms),
            col(|t| t.provider_ms),
            col(|t| u64::from(t.rounds)),
            col(|t| t.tools_ms),
            col(|t| u64::from(t.tool_calls)),
            col(|t| t.runtime_ms),
            col(|t| t.turn_ms)
        );
    }
    if !r.tools.is_empty() {
        s += "tools: ";
        let parts: Vec<String> = r
            .tools
            .iter()
            .map(|t| {
                format!(
                    "{} ×{} p50 {} ms max {} ms",
                    t.tool_name, t.calls, t.p50_ms, t.max_ms
                )
            })
            .collect();
        s += &parts.join(" · ");
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, ts: &str, kind: &str, payload: serde_json::Value) -> EventRecord {
        EventRecord {
            event_seq: seq,
            id: format!("e{seq}"),
            ts: ts.into(),
            kind: kind.into(),
            agent_id: "a".into(),
            provenance: Default::default(),
            payload,
        }
    }

    fn turn(seq: u64, run: &str, msg: &str, base: &str) -> Vec<EventRecord> {
        vec![
            ev(
                seq,
                &format!("{base}:00.000Z"),
                "message_admitted",
                json!({"message": {"id": msg}}),
            ),
            ev(
                seq + 1,
                &format!("{base}:00.250Z"),
                "message_processing_started",
                json!({"message_id": msg}),
            ),
            ev(
                seq + 2,
                &format!("{base}:00.260Z"),
                "turn_started",
                json!({"run_id": run, "message_id": msg}),
            ),
            ev(
                seq + 3,
                &format!("{base}:01.000Z"),
                "provider_round_completed",
                json!({"run_id": run, "provider_round_ms": 700, "context_build_ms": 2}),
            ),
            ev(
                seq + 4,
                &format!("{base}:01.100Z"),
                "tool_executed",
                json!({"run_id": run, "tool_name": "ExecCommand", "duration_ms": 90}),
            ),
            ev(
                seq + 5,
                &format!("{base}:01.600Z"),
                "provider_round_completed",
                json!({"run_id": run, "provider_round_ms": 400, "context_build_ms": 1}),
            ),
            ev(
                seq + 6,
                &format!("{base}:01.700Z"),
                "turn_terminal",
                json!({"run_id": run, "duration_ms": 1250}),
            ),
        ]
    }

    #[test]
    fn each_turns_time_is_split_from_its_events() {
        let mut events = turn(1, "run_1", "m1", "2026-11-29T10:00");
        events.extend(turn(10, "run_2", "m2", "2026-11-29T10:01"));
        let r = report("a", &events, 20);
        assert_eq!(r.turns.len(), 2);
        let t = &r.turns[0];
        assert_eq!(t.queue_wait_ms, Some(250));
        assert_eq!((t.provider_ms, t.rounds, t.context_ms), (1100, 2, 3));
        assert_eq!((t.tools_ms, t.tool_calls), (90, 1));
        assert_eq!(t.runtime_ms, 1250 - 1100 - 90 - 3);
        assert_eq!(r.tools[0].tool_name, "ExecCommand");
        assert_eq!(r.tools[0].calls, 2);
        let shown = text(&r);
        assert!(shown.contains("p50"), "{shown}");
        assert!(shown.contains("ExecCommand ×2 p50 90 ms"), "{shown}");
        // Only the last ones are kept; an admission not read says so.
        let last = report("a", &events[3..], 1);
        assert_eq!(last.turns.len(), 1);
        assert_eq!(last.turns[0].run_id, "run_2");
        let cut = report("a", &events[1..7], 5);
        assert_eq!(cut.turns[0].queue_wait_ms, None);
        assert!(text(&report("a", &[], 5)).contains("no ended turn"));
    }
}
