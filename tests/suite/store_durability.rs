//! Durability against real processes: SIGKILL mid-stream loses nothing
//! acknowledged; a second process is refused; damaged files are clear
//! errors with a non-zero exit, never a panic.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use holon::app::stress::{stress_text, STRESS_KIND};
use holon::store::{Store, StoreOptions};

use super::support::{stderr, Home};

/// Run the stress writer, SIGKILL it after `after`, and return every
/// event_seq it reported as acknowledged.
fn kill_mid_stream(home: &Home, after: Duration) -> Vec<u64> {
    let mut child = home
        .cmd()
        .args(["debug", "append-stress", "--in-flight", "512"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let stdout = child.stdout.take().expect("no stdout");
    let reader = std::thread::spawn(move || {
        let mut acked = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(seq) = line.trim().parse::<u64>() {
                acked.push(seq);
            }
        }
        acked
    });
    // Wait for the first acknowledgement so the kill lands mid-stream.
    let start = Instant::now();
    while !home.store_file().exists() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(after);
    // SIGKILL: no destructors, no flush, no clean close.
    let pid = child.id() as i32;
    // SAFETY: plain syscall on a pid we own.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = child.wait();
    reader.join().unwrap_or_default()
}

#[test]
fn sigkill_mid_stream_loses_no_acknowledged_event() {
    let home = Home::new();
    let mut total_acked = 0usize;
    for round in 0..8u64 {
        let acked = kill_mid_stream(&home, Duration::from_millis(150 + 40 * (round % 4)));
        let store = Store::open(&home.store_file(), StoreOptions::default())
            .unwrap_or_else(|e| panic!("reopen after kill (round {round}): {e}"));
        let rx = store.read().unwrap();
        let last = rx.last_seq("main").unwrap();
        let max_acked = acked.iter().copied().max().unwrap_or(0);
        assert!(
            last >= max_acked,
            "round {round}: acknowledged up to {max_acked} but the ledger ends at {last}"
        );
        // Contiguous from 1, every record intact (decodes, content matches).
        let mut expected = 1u64;
        let mut from = 1u64;
        loop {
            let page = rx
                .events("main", from, 5000)
                .unwrap_or_else(|e| panic!("torn record: {e}"));
            let Some(tail) = page.last() else { break };
            from = tail.event_seq + 1;
            for e in &page {
                assert_eq!(e.event_seq, expected, "round {round}: gap in event_seq");
                expected += 1;
                if e.kind == STRESS_KIND {
                    let n = e.payload["n"].as_u64().expect("payload without n");
                    assert_eq!(
                        e.payload["text"].as_str(),
                        Some(stress_text(n).as_str()),
                        "torn payload"
                    );
                }
            }
        }
        assert_eq!(expected - 1, last);
        total_acked += acked.len();
        drop(rx);
        drop(store);
    }
    assert!(
        total_acked > 100,
        "the writer acknowledged too little to prove anything ({total_acked})"
    );
}

#[test]
fn a_store_held_by_another_process_is_refused_clearly() {
    let home = Home::new();
    home.ok(&["status"]);
    let mut holder = home
        .cmd()
        .args(["debug", "append-stress", "--in-flight", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    // Wait until it has written (and so holds the store).
    let stdout = holder.stdout.take().expect("no stdout");
    let mut first = String::new();
    let _ = BufReader::new(stdout).read_line(&mut first);
    assert!(!first.trim().is_empty(), "stress writer produced nothing");
    let out = home.run(&["status"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("is held by another Holon command"), "{err}");
    assert!(err.contains("try again once it is done"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn garbage_and_truncated_stores_are_clear_errors() {
    let home = Home::new();
    home.ok(&["send", "keep me"]);
    for i in 0..300 {
        home.ok(&["send", &format!("filler {i}")]);
        if home.store_file().metadata().map(|m| m.len()).unwrap_or(0) > 64 * 1024 {
            break;
        }
    }
    let good = std::fs::read(home.store_file()).unwrap();
    // Truncated to half.
    std::fs::write(home.store_file(), &good[..good.len() / 2]).unwrap();
    let out = home.run(&["status"]);
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "truncated store opened: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains("corrupt") || err.contains("cannot open"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // Garbage.
    std::fs::write(
        home.store_file(),
        b"this is not a database, just some text\n".repeat(500),
    )
    .unwrap();
    let out = home.run(&["events"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("corrupt"), "{err}");
    assert!(
        err.contains(&home.store_file().display().to_string()),
        "names the file: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
