//! The render benchmark behind `holon debug bench`: one frame of the
//! conversation and one of the `/events` inspector, each with `rows` rows
//! of history, drawn into a `TestBackend`. Both views are virtualised, so
//! the frame time should not grow with `rows`.

use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use super::msg::Connection;
use super::overlays::events::Events;
use super::state::{History, Init, State};
use super::view::view;
use crate::protocol::types::Provenance;
use crate::protocol::DisplayMode;
use crate::protocol::EventRecord;

/// One synthetic event of a busy agent; `i` picks the kind.
pub fn sample_event(seq: u64, i: usize) -> EventRecord {
    let mid = format!("msg_{}", i / 4);
    let (kind, payload) = match i % 4 {
        0 => (
            "message_admitted",
            json!({ "message": { "id": mid, "kind": "operator_prompt",
                "body": { "type": "text", "text": format!("Please check build number {i} and report back.") } },
                "queue_status": "queued" }),
        ),
        1 => (
            "assistant_round_recorded",
            json!({ "round": 1, "text_preview": format!("Looking at build {i}: running the tests first."),
                    "tool_names": ["ExecCommand"] }),
        ),
        2 => (
            "tool_executed",
            json!({ "tool_name": "ExecCommand", "arguments": { "cmd": "cargo test --quiet" },
                    "is_error": false, "duration_ms": 1234 + i as u64 % 1000,
                    "result_preview": "{\"disposition\":\"completed\",\"exit_status\":0}" }),
        ),
        _ => (
            "brief_created",
            json!({ "brief": { "kind": "result", "text": format!(
                "## Build {i}\n\nAll **green**. The slowest test took `2.1 s`:\n\n- unit: 412 passed\n- integration: 38 passed") },
                "visibility": "turn_result" }),
        ),
    };
    EventRecord {
        event_seq: seq,
        id: format!("evt_{seq}"),
        ts: format!("2026-11-22T04:{:02}:{:02}.000Z", (seq / 60) % 60, seq % 60),
        kind: kind.into(),
        agent_id: "main".into(),
        provenance: Provenance {
            message_id: Some(mid),
            ..Provenance::default()
        },
        payload,
    }
}

fn state(width: u16, height: u16) -> State {
    let mut s = State::new(Init {
        agent_id: "main".into(),
        connection: Connection::Embedded,
        width,
        height,
        notify: Default::default(),
        no_color: false,
    });
    s.history = History::Done;
    s.mode = DisplayMode::Verbose;
    s
}

fn frame_time(state: &State, width: u16, height: u16) -> Duration {
    let Ok(mut terminal) = Terminal::new(TestBackend::new(width, height));
    // Warm-up: fills the row caches of what is on screen.
    let _ = terminal.draw(|f| view(state, f));
    let start = Instant::now();
    let _ = terminal.draw(|f| view(state, f));
    start.elapsed()
}

/// The console loop's drawing, as its pacer does it (`frame_pacer`): the
/// frame that shows a typed key waits at most `INPUT_FRAME` after the last
/// one; any other change is drawn when dirty, at most once per 16 ms.
struct Paced {
    terminal: Terminal<TestBackend>,
    last_draw: Instant,
    /// How long each frame took to draw.
    frames: Vec<Duration>,
}

impl Paced {
    fn new(width: u16, height: u16) -> Paced {
        let Ok(terminal) = Terminal::new(TestBackend::new(width, height));
        Paced {
            terminal,
            last_draw: Instant::now() - Duration::from_millis(16),
            frames: Vec::new(),
        }
    }

    fn draw(&mut self, s: &mut State) {
        let t = Instant::now();
        let _ = self.terminal.draw(|f| view(s, f));
        self.frames.push(t.elapsed());
        s.dirty = false;
        self.last_draw = Instant::now();
    }

    /// Type a key, then draw the frame that shows it.
    fn key(&mut self, s: &mut State) {
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let key = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE);
        let _ = super::update(s, super::msg::Msg::Key(key));
        std::thread::sleep(
            super::frame_pacer::INPUT_FRAME.saturating_sub(self.last_draw.elapsed()),
        );
        self.draw(s);
    }

    /// Draw what changed, if a frame is due; then let time pass.
    fn idle(&mut self, s: &mut State) {
        if s.dirty && self.last_draw.elapsed() >= Duration::from_millis(16) {
            self.draw(s);
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// (conversation frame, events frame) with `rows` rows of history.
pub fn bench_render(rows: usize, width: u16, height: u16) -> (Duration, Duration) {
    let events: Vec<EventRecord> = (0..rows).map(|i| sample_event(i as u64 + 1, i)).collect();
    let mut conv = state(width, height);
    for e in &events {
        let typed = e.event();
        let op = crate::ui::present::present_event(e, &typed);
        conv.conversation.apply(e, &typed, &op, false);
    }
    let conversation = frame_time(&conv, width, height);
    let mut inspector = state(width, height);
    inspector
        .overlays
        .push(Box::new(Events::with(events, true)));
    let inspector_time = frame_time(&inspector, width, height);
    (conversation, inspector_time)
}

/// Keystroke-to-frame latency under an event storm, in real time: for
/// `secs` seconds, `events_per_sec` events are applied as they fall due and
/// a key is typed every 20 ms; frames are drawn as the loop draws them
/// (only when dirty, at most one per 16 ms, a typed key wanting the next
/// frame). Returns the latency of each key (update start to frame drawn)
/// and the CPU time the whole run used.
pub fn bench_keystrokes(secs: u64, events_per_sec: u64) -> (Vec<Duration>, Duration) {
    let (width, height) = (120, 40);
    let mut paced = Paced::new(width, height);
    let mut s = state(width, height);
    let cpu0 = cpu_time();
    let start = Instant::now();
    let total = Duration::from_secs(secs);
    let mut applied = 0u64;
    let mut next_key = Duration::from_millis(20);
    let mut latencies = Vec::new();
    while start.elapsed() < total {
        let now = start.elapsed();
        let due = (now.as_secs_f64() * events_per_sec as f64) as u64;
        while applied < due {
            applied += 1;
            let e = sample_event(applied, applied as usize);
            let _ = super::update(&mut s, super::msg::Msg::Event(Box::new(e)));
        }
        if now >= next_key {
            next_key += Duration::from_millis(20);
            let t = Instant::now();
            paced.key(&mut s);
            latencies.push(t.elapsed());
            continue;
        }
        paced.idle(&mut s);
    }
    latencies.sort();
    (latencies, cpu_time().saturating_sub(cpu0))
}

/// Key-to-frame latency in a console attached to a live runtime: for
/// `secs` seconds, every message its follower delivers on `rx` (the
/// bootstrap, events and streamed text of the viewed agent, as they come
/// off the control socket) is applied as it arrives, the clock ticks every
/// 100 ms as the console's does, a key is typed every 20 ms, and frames are
/// drawn as the loop draws them. A key's latency runs from when it was
/// due, so time it waited behind messages counts. The console starts as
/// one whose history is loaded, so the agent's events apply as they come.
/// Returns (key latencies, messages received); none when no event of the
/// agent was applied.
pub fn bench_attached(
    rx: &mut tokio::sync::mpsc::Receiver<super::msg::Msg>,
    agent_id: &str,
    secs: u64,
) -> (Vec<Duration>, u64) {
    let (width, height) = (120, 40);
    let mut paced = Paced::new(width, height);
    let mut s = state(width, height);
    agent_id.clone_into(&mut s.agent_id);
    s.connection = Connection::Streaming;
    s.mode = DisplayMode::Info;
    let start = Instant::now();
    let mut applied = 0u64;
    let mut next_key = Duration::from_millis(20);
    let mut next_tick = Duration::ZERO;
    let mut latencies = Vec::new();
    while start.elapsed() < Duration::from_secs(secs) {
        while let Ok(msg) = rx.try_recv() {
            applied += 1;
            let _ = super::update(&mut s, msg);
        }
        let now = start.elapsed();
        if now >= next_tick {
            next_tick += Duration::from_millis(100);
            let now_ms = crate::now_ms();
            let _ = super::update(&mut s, super::msg::Msg::Tick { now_ms });
        }
        if now >= next_key {
            let due = start + next_key;
            next_key += Duration::from_millis(20);
            paced.key(&mut s);
            latencies.push(due.elapsed());
            continue;
        }
        paced.idle(&mut s);
    }
    latencies.sort();
    // `update` drops what is not the viewed agent's: a console that
    // applied none of its events measured nothing.
    match s.conversation.applied_seq {
        0 => (latencies, 0),
        _ => (latencies, applied),
    }
}

/// A long answer: `sections` sections of 50 lines, each a heading, a
/// paragraph of 30 lines, a fenced Rust block of 15 lines and blank lines.
pub fn long_answer(sections: usize) -> String {
    let mut s = String::new();
    for n in 0..sections {
        s.push_str(&format!("## Step {n}: what changed and why\n\n"));
        for l in 0..30 {
            s.push_str(&format!(
                "Line {l} of step {n}: the **retry** loop reads `clock.now()` once per attempt, so a slow runner never sees the deadline pass twice.\n"
            ));
        }
        s.push_str("\n```rust\n");
        for l in 0..15 {
            s.push_str(&format!(
                "let attempt_{l} = retry(|| client.get(\"/status\"), Backoff::new({l}, limit))?; // step {n}\n"
            ));
        }
        s.push_str("```\n\n");
    }
    s
}

/// Frame and key latency while a long answer streams in: a transcript of
/// `rows` rows, an answer of 2,000 lines with 40 code blocks streaming at
/// `tokens_per_sec` (4-character tokens) for `secs` seconds of real time,
/// the last `secs` seconds of it (the answer is already long, where a
/// frame costs most), a key every 20 ms, frames as the loop draws them.
/// Returns (frame draw times, key-to-frame latencies).
pub fn bench_streaming(
    rows: usize,
    secs: u64,
    tokens_per_sec: u64,
) -> (Vec<Duration>, Vec<Duration>) {
    let (width, height) = (120, 40);
    let mut paced = Paced::new(width, height);
    let mut s = state(width, height);
    s.mode = DisplayMode::Info;
    for i in 0..rows {
        let e = sample_event(i as u64 + 1, i);
        let typed = e.event();
        let op = crate::ui::present::present_event(&e, &typed);
        s.conversation.apply(&e, &typed, &op, false);
    }
    let answer = long_answer(40);
    let tokens: Vec<String> = answer
        .chars()
        .collect::<Vec<char>>()
        .chunks(4)
        .map(|c| c.iter().collect())
        .collect();
    let streamed = (secs * tokens_per_sec) as usize;
    let start_at = tokens.len().saturating_sub(streamed);
    // The answer streams into a running turn (only then is it drawn).
    s.conversation.turn = Some(super::conversation::Turn {
        run_id: Some("run_bench".into()),
        message_id: None,
        started_ms: None,
        activity: None,
        tool: None,
        tokens: 0,
        retry: None,
        awaiting: false,
    });
    s.conversation
        .delta("run_bench", 1, &tokens[..start_at].concat());
    let mut keys = Vec::new();
    let start = Instant::now();
    let mut fed = start_at;
    let mut next_key = Duration::from_millis(20);
    while start.elapsed() < Duration::from_secs(secs) && fed < tokens.len() {
        let now = start.elapsed();
        let due = start_at + (now.as_secs_f64() * tokens_per_sec as f64) as usize;
        while fed < due.min(tokens.len()) {
            s.conversation.delta("run_bench", 1, &tokens[fed]);
            s.dirty = true;
            fed += 1;
        }
        if now >= next_key {
            next_key += Duration::from_millis(20);
            let t = Instant::now();
            paced.key(&mut s);
            keys.push(t.elapsed());
            continue;
        }
        paced.idle(&mut s);
    }
    let mut frames = paced.frames;
    frames.sort();
    keys.sort();
    (frames, keys)
}

/// The `@` picker over `files` synthetic paths: the time of each match
/// as a query is typed letter by letter (200 queries).
pub fn bench_mentions(files: usize) -> Vec<Duration> {
    let dirs = [
        "src",
        "src/ui/tui",
        "src/runtime/turn",
        "tests/suite",
        "docs",
        "crates/stub/src",
    ];
    let index = super::mention::FileIndex {
        root: "/bench".into(),
        files: (0..files)
            .map(|i| format!("{}/module_{}/file_{i}.rs", dirs[i % dirs.len()], i % 997))
            .collect(),
        truncated: false,
    };
    let queries = ["retry", "tuirows", "mod12file", "suitecli", "docsREADME"];
    let mut times = Vec::new();
    for n in 0..200 {
        let q = queries[n % queries.len()];
        let typed = &q[..(n % q.len()) + 1];
        let t = Instant::now();
        let found = super::mention::matches(&index, typed, super::mention::LIMIT);
        times.push(t.elapsed());
        std::hint::black_box(found);
    }
    times.sort();
    times
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
