//! `holon transcript` and `holon tail` through the real binary: tail
//! follows a daemon's agent through a turn against a local stub model, and
//! transcript reads the same turn back, through the runtime and from the
//! store once it is gone.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{poll, stderr, Daemon, Home};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_follows_a_turn_and_transcript_reads_it_back() {
    let stub = StubServer::start(vec![Canned::json(
        200,
        canned::responses_json("The answer is 42.", &[]),
    )])
    .await;
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let with_model = |c: &mut std::process::Command| {
        c.env("HOLON_MODEL", "openai/gpt-tail")
            .env("OPENAI_BASE_URL", &base)
            .env("OPENAI_API_KEY", "sk-tail");
    };
    let mut detach = home.cmd();
    with_model(&mut detach);
    let out = detach.arg("--detach").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let daemon = Daemon(&home);

    let mut tail = home.cmd();
    with_model(&mut tail);
    let mut tail = tail
        .arg("tail")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = {
        let seen = Arc::clone(&seen);
        let stdout = tail.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                seen.lock().unwrap().push(line);
            }
        })
    };
    let text = || seen.lock().unwrap().join("\n");
    poll("tail to follow", || {
        text().contains("following main").then_some(())
    });
    home.ok(&["send", "what is the answer?"]);
    poll("the answer in tail", || {
        let t = text();
        (t.contains("The answer is 42.") && t.contains("what is the answer?")).then_some(())
    });
    let _ = tail.kill();
    let _ = tail.wait();
    let _ = reader.join();

    // Read back through the runtime: the input, the round, its answer.
    let shown = home.ok(&["transcript"]);
    assert!(shown.contains("▸ "), "{shown}");
    assert!(shown.contains("what is the answer?"), "{shown}");
    assert!(shown.contains("● round 1"), "{shown}");
    assert!(shown.contains("  The answer is 42."), "{shown}");
    let json = home.ok(&["transcript", "--json", "--limit", "1"]);
    let last: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(last["kind"], "assistant_round", "{json}");
    assert_eq!(last["text"], "The answer is 42.");

    // Without a runtime: transcript reads the store, tail says why not.
    drop(daemon);
    let offline = home.ok(&["transcript", "--limit", "5"]);
    assert!(offline.contains("The answer is 42."), "{offline}");
    let refused = home.run(&["tail"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("holon --detach"),
        "{}",
        stderr(&refused)
    );
    let unknown = home.run(&["transcript", "--agent", "nobody"]);
    assert!(!unknown.status.success());
    assert!(stderr(&unknown).contains("nobody"), "{}", stderr(&unknown));
}
