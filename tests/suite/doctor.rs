//! `holon doctor` through the binary, against a local stub model: the
//! default model resolved and probed with its credential (sent in its
//! header, never printed), a fallback that cannot be used said so, and an
//! endpoint that does not answer failing the command.

use serde_json::json;

use super::stub_provider::{Canned, StubServer};
use super::support::{stderr, Home};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_probes_each_model_with_its_credential() {
    let stub = StubServer::start(Vec::new()).await;
    stub.route("/v1/models", Canned::json(200, json!({"data": []})));
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config/config.toml"),
        "[model]\nfallbacks = [\"anthropic/claude-doc\"]\n",
    )
    .unwrap();
    let base = format!("{}/v1", stub.base());
    let out = home
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-doc")
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "sk-doctor-secret")
        .env_remove("ANTHROPIC_API_KEY")
        .arg("doctor")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("openai/gpt-doc (default)"), "{text}");
    assert!(text.contains("OPENAI_API_KEY (set)"), "{text}");
    assert!(text.contains("answered 200"), "{text}");
    assert!(text.contains("anthropic/claude-doc (fallback)"), "{text}");
    assert!(
        text.contains("ANTHROPIC_API_KEY"),
        "the fallback says what it lacks: {text}"
    );
    assert!(text.contains("retry "), "{text}");
    assert!(!text.contains("sk-doctor-secret"), "{text}");
    let probe = &stub.requests()[0];
    assert_eq!(
        (probe.method.as_str(), probe.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(
        probe.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-doctor-secret")
    );

    // Nothing answers: the default model cannot be used, and it says so.
    let json_out = home
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-doc")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("OPENAI_API_KEY", "sk-doctor-secret")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    assert!(!json_out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(
        report["models"][0]["probe"]["result"], "unreachable",
        "{report}"
    );
    assert!(
        stderr(&json_out).contains("cannot be used"),
        "{}",
        stderr(&json_out)
    );
    assert!(!stdout(&json_out).contains("sk-doctor-secret"));
}

/// `holon daemon logs | head` ends quietly when the reader goes, and a
/// log line that quotes a terminal escape (a provider's error text, say)
/// is shown escaped.
#[test]
fn daemon_logs_stops_quietly_for_a_gone_reader_and_escapes_what_it_quotes() {
    let home = Home::new();
    let logs = home.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let line = "2026-11-30T00:00:00Z ERROR provider said \u{1b}]0;owned\u{7}\u{1b}[2J\n";
    // A line that is not UTF-8 hides nothing else.
    // More than a pipe holds, so the write after the reader went fails.
    let mut bytes = line.repeat(50).into_bytes();
    for n in 0..3000 {
        bytes.extend_from_slice(format!("2026-11-30T00:00:00Z INFO filler line {n}\n").as_bytes());
    }
    bytes.extend_from_slice(b"2026-11-30T00:00:01Z INFO a command wrote \xff\xfe\n");
    std::fs::write(logs.join("holon.log.2026-11-30"), bytes).unwrap();
    let shown = home.ok(&["daemon", "logs"]);
    assert!(shown.contains("recent failures (50)"), "{shown}");
    assert!(shown.contains("a command wrote \u{fffd}"), "{shown}");
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown}"
    );
    assert!(shown.contains("provider said \\u{1b}]0;owned"), "{shown}");

    let out = home.run_reader_gone(&["daemon", "logs", "--lines", "5000"]);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(
        out.status.code(),
        Some(141),
        "as any writer to a closed pipe"
    );
}

/// A daemon that cannot start (its store is not a store) keeps why, with
/// the phase and the time, and `daemon status` and `daemon logs` show it
/// though no runtime runs. A clean start and stop keeps nothing.
#[test]
fn a_failed_start_is_kept_and_shown() {
    let home = Home::new();
    let data = home.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("holon.redb"), b"this is not a redb file").unwrap();
    let failed = home.run(&["daemon", "run"]);
    assert!(!failed.status.success());
    let status = home.run(&["daemon", "status"]);
    let text = stdout(&status);
    assert!(text.contains("last failure: start-up failed at "), "{text}");
    let json = home.run(&["daemon", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["runtime"], "not_running", "{v}");
    assert_eq!(v["daemon_failure"]["phase"], "startup", "{v}");
    assert!(
        v["daemon_failure"]["summary"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{v}"
    );
    let logs = home.ok(&["daemon", "logs"]);
    assert!(logs.contains("start-up failed at "), "{logs}");
    let kept = home.path().join("logs/daemon-failure.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "kept privately");
    assert!(logs.contains("failure file  "), "{logs}");

    // Mended, it starts: the failure is history (in the log), not news.
    std::fs::remove_file(data.join("holon.redb")).unwrap();
    let started = home.cmd().arg("--detach").output().unwrap();
    assert!(started.status.success(), "{}", stderr(&started));
    let _daemon = super::support::Daemon(&home);
    let json = home.run(&["daemon", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["daemon_failure"].is_null(), "{v}");
    assert!(!kept.exists(), "a healthy start clears it");
    home.ok(&["daemon", "stop"]);
    let text = stdout(&home.run(&["daemon", "status"]));
    assert!(!text.contains("last failure"), "{text}");

    let clean = Home::new();
    let started = clean.cmd().arg("--detach").output().unwrap();
    assert!(started.status.success(), "{}", stderr(&started));
    // A second start finds it running: not a failure either.
    let again = clean.run(&["daemon", "start"]);
    assert!(again.status.success(), "{}", stderr(&again));
    clean.ok(&["daemon", "stop"]);
    assert!(
        !clean.path().join("logs/daemon-failure.json").exists(),
        "a clean start and stop keeps no failure"
    );
}
