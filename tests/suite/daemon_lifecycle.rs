//! The daemon with real processes: `--detach` is idempotent, the one-shot
//! commands go through the socket, `kill -9` loses nothing acknowledged,
//! and a client resumes from its cursor with no gap or duplicate.

use std::process::Output;
use std::time::Duration;

use holon::protocol::{RuntimeClient, SubscriptionItem};
use holon::ui::client::SocketClient;

use super::support::{daemon_pid, kill_daemon, poll, stderr, Daemon, Home};

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn detach_is_idempotent_and_one_shots_go_through_the_socket() {
    let home = Home::new();
    let first = ok(home.run(&["--detach"]));
    let _guard = Daemon(&home);
    assert!(first.contains("started"), "{first}");
    assert!(first.contains("holon attach"), "{first}");
    let second = ok(home.run(&["--detach"]));
    assert!(second.contains("already running"), "{second}");
    let pid = daemon_pid(&home);
    assert!(pid > 0);

    ok(home.run(&["send", "through the socket"]));
    ok(home.run(&["work", "add", "socket work"]));
    let status: serde_json::Value =
        serde_json::from_str(&ok(home.run(&["status", "--json"]))).unwrap_or_default();
    assert_eq!(status["runtime"], "running", "{status}");
    assert_eq!(status["pid"], pid, "{status}");
    assert_eq!(status["mode"], "daemon", "{status}");
    let events = ok(home.run(&["events", "--json"]));
    assert!(events.contains("through the socket"));
    assert!(events.contains("socket work"));
    // The prompt frame, from the running runtime over the socket.
    let frame = ok(home.run(&["debug", "prompt", "--summary"]));
    assert!(frame.contains("── work_queue · ~"), "{frame}");
    let ds = home.run(&["daemon", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&ds.stdout).unwrap_or_default();
    assert_eq!(v["running"], true);
    assert_eq!(v["runtime"], "running", "the same word as `status --json`");
    assert_eq!(v["status"]["pid"].as_i64(), Some(i64::from(pid)));
    // `holon run` starts a runtime of its own: refused, said once, with
    // where to go instead.
    let run = home.run(&["run", "hello"]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains(&format!(
            "held by the Holon runtime with pid {pid}, which answers"
        )),
        "{err}"
    );
    assert!(err.contains("`holon send`"), "{err}");
    assert_eq!(err.matches("held by").count(), 1, "{err}");

    let stop = ok(home.run(&["daemon", "stop"]));
    assert!(stop.contains("stopped gracefully"), "{stop}");
    let after = home.run(&["daemon", "status"]);
    assert_eq!(after.status.code(), Some(3));
    assert!(!home.path().join("run/control.sock").exists());
}

#[test]
fn kill_dash_nine_loses_nothing_and_the_client_resumes_without_gap_or_duplicate() {
    let home = Home::new();
    ok(home.run(&["--detach"]));
    let _guard = Daemon(&home);
    let socket = home.path().join("run/control.sock");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut seen: Vec<u64> = Vec::new();
    let mut cursor = 1u64;
    // Stream while prompts arrive, then kill -9 mid-stream.
    rt.block_on(async {
        let client = SocketClient::connect(&socket).await.unwrap();
        let mut sub = client.subscribe("main", cursor).await.unwrap();
        for i in 0..5 {
            ok(home.run(&["send", &format!("before kill {i}")]));
        }
        while let Ok(Some(item)) =
            tokio::time::timeout(Duration::from_millis(500), sub.next()).await
        {
            if let SubscriptionItem::Event(e) = item {
                seen.push(e.event_seq);
                cursor = e.event_seq + 1;
            }
        }
    });
    let pid = daemon_pid(&home);
    kill_daemon(pid);
    // Acknowledged while it was down? Nothing: sends go to the store directly.
    ok(home.run(&["send", "while down"]));
    ok(home.run(&["--detach"]));
    rt.block_on(async {
        let client = SocketClient::connect(&socket).await.unwrap();
        let mut sub = client.subscribe("main", cursor).await.unwrap();
        ok(home.run(&["send", "after restart"]));
        while let Ok(Some(item)) =
            tokio::time::timeout(Duration::from_millis(700), sub.next()).await
        {
            if let SubscriptionItem::Event(e) = item {
                seen.push(e.event_seq);
            }
        }
    });
    let expected: Vec<u64> = (1..=*seen.last().unwrap_or(&0)).collect();
    assert_eq!(
        seen, expected,
        "the resumed stream has no gap and no duplicate"
    );
    let events = ok(home.run(&["events", "--json"]));
    for text in [
        "before kill 0",
        "before kill 4",
        "while down",
        "after restart",
    ] {
        assert!(events.contains(text), "{text} is in the ledger");
    }
    assert!(events.contains("runtime_started"), "restart recorded");
    // The first open after the kill repaired the store, and said so.
    let logs: String = std::fs::read_dir(home.path().join("logs"))
        .unwrap()
        .filter_map(|f| std::fs::read_to_string(f.ok()?.path()).ok())
        .collect();
    assert!(
        logs.contains("the store was not closed cleanly: repairing it"),
        "the repair is logged"
    );
}

/// `holon events --follow` (the shared follow loop): with no runtime it
/// says one is needed; with one it prints the live tail and ends at
/// `--limit`, and says so when the runtime goes away before that.
#[test]
fn events_follow_tails_the_runtime_and_says_when_it_is_gone() {
    let home = Home::new();
    let out = home.run(&["events", "--follow"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("needs a running runtime"),
        "{}",
        stderr(&out)
    );

    home.ok(&["--detach"]);
    let _daemon = Daemon(&home);
    home.ok(&["send", "one"]);
    let last = super::support::json_lines(&home.ok(&["events", "--json"])).len() as u64;
    let from = (last + 1).to_string();
    let tail = home
        .cmd()
        .args([
            "events",
            "--follow",
            "--json",
            "--from",
            &from,
            "--limit",
            "2",
            "--kind",
            "message_admitted",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    home.ok(&["send", "two"]);
    home.ok(&["send", "three"]);
    let done = tail.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    let printed = super::support::json_lines(&String::from_utf8_lossy(&done.stdout));
    let texts: Vec<_> = printed
        .iter()
        .map(|e| e["payload"]["message"]["body"]["text"].clone())
        .collect();
    assert_eq!(
        texts,
        [serde_json::json!("two"), serde_json::json!("three")]
    );

    let mut waiting = home
        .cmd()
        .args(["events", "--follow", "--from", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Following once its first event is printed.
    let out = waiting.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(out).lines();
        let _ = tx.send(lines.next().is_some());
        lines.for_each(drop);
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(15)),
        Ok(true),
        "it follows"
    );
    home.ok(&["daemon", "stop"]);
    let gone = waiting.wait_with_output().unwrap();
    assert!(!gone.status.success());
    assert!(
        stderr(&gone).contains("the runtime went away"),
        "{}",
        stderr(&gone)
    );
}

/// A prompt a sender sent, and what it was refused with, if it was.
type Sent = (String, Option<String>);

#[test]
fn restarts_under_four_senders_refuse_no_send_and_lose_none() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let home = Arc::new(Home::new());
    ok(home.cmd().arg("--detach").output().unwrap());
    let _daemon = Daemon(&home);
    let stop = Arc::new(AtomicBool::new(false));
    let sent: Arc<Mutex<Vec<Sent>>> = Arc::default();
    let senders: Vec<_> = (0..4)
        .map(|t| {
            let (home, stop, sent) = (Arc::clone(&home), Arc::clone(&stop), Arc::clone(&sent));
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let marker = format!("storm-{t}-{n}");
                    let out = home.run(&["send", &marker]);
                    let refused = (!out.status.success()).then(|| stderr(&out));
                    sent.lock().unwrap().push((marker, refused));
                    n += 1;
                }
            })
        })
        .collect();
    // Each kill lands under load: a few more sends acknowledged (or
    // refused) since the last start.
    let more_sent = |n: usize| {
        let from = sent.lock().unwrap().len();
        poll("more sends", || {
            (sent.lock().unwrap().len() >= from + n).then_some(())
        });
    };
    for _ in 0..3 {
        more_sent(8);
        kill_daemon(daemon_pid(&home));
        let started = std::time::Instant::now();
        ok(home.cmd().arg("--detach").output().unwrap());
        eprintln!("restarted under load in {:?}", started.elapsed());
    }
    more_sent(8);
    stop.store(true, Ordering::SeqCst);
    for s in senders {
        s.join().unwrap();
    }
    let sent = sent.lock().unwrap().clone();
    let refused: Vec<&Sent> = sent.iter().filter(|(_, r)| r.is_some()).collect();
    assert!(
        refused.is_empty(),
        "{} of {} refused: {refused:?}",
        refused.len(),
        sent.len()
    );
    // Every acknowledged prompt is in the ledger exactly once.
    let events = ok(home
        .cmd()
        .args([
            "events",
            "--kind",
            "message_admitted",
            "--json",
            "--limit",
            "100000",
        ])
        .output()
        .unwrap());
    for (marker, _) in &sent {
        let quoted = format!("\"{marker}\"");
        let n = events.lines().filter(|l| l.contains(&quoted)).count();
        assert_eq!(n, 1, "{marker} admitted {n} times");
    }
}

#[test]
fn detach_from_a_project_binds_it_as_the_console_does() {
    let home = Home::new();
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().canonicalize().unwrap();
    let out = ok(home
        .cmd()
        .current_dir(&dir)
        .arg("--detach")
        .output()
        .unwrap());
    let _daemon = Daemon(&home);
    assert!(
        out.contains(&format!("works in {} now", dir.display())),
        "{out}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&ok(home.cmd().args(["status", "--json"]).output().unwrap())).unwrap();
    assert_eq!(
        status["agents"][0]["execution"]["execution_root"],
        dir.display().to_string(),
        "{status}"
    );
    // Again from elsewhere: not moved, told where it works.
    let other = tempfile::tempdir().unwrap();
    let out = ok(home
        .cmd()
        .current_dir(other.path())
        .arg("--detach")
        .output()
        .unwrap());
    assert!(
        out.contains("not here; `holon workspace use .` moves it"),
        "{out}"
    );
}
