//! Hardening against a hostile or unlucky environment, through the real
//! binary: command tasks never see the operator's credentials.

use std::os::unix::fs::PermissionsExt;

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{stderr, Home};
use super::turn_e2e::{holon_run, run_json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_tasks_get_no_credentials_unless_passed_through() {
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json(
                "Listing.",
                &[(
                    "call_env",
                    "ExecCommand",
                    r#"{"cmd":"env; touch made-by-task.txt; echo to-stderr >&2"}"#,
                )],
            ),
        ),
        Canned::json(200, canned::responses_json("Done.", &[])),
    ])
    .await;
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config").join("config.toml"),
        "[exec]\nenv_passthrough = [\"HARDEN_PASS_TOKEN\"]\n",
    )
    .unwrap();
    let base = format!("{}/v1", stub.base());
    let envs = [
        ("HOLON_MODEL", "openai/gpt-env"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-must-not-leak-1"),
        ("HARDEN_DB_PASSWORD", "pw-must-not-leak-2"),
        ("harden_secret_thing", "must-not-leak-3"),
        ("HARDEN_PASS_TOKEN", "passed-through-4"),
        ("HARDEN_PLAIN", "plain-5"),
    ];
    let out = holon_run(&home, &envs, &["--json", "show me the env"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v = run_json(&out);
    assert_eq!(v["outcome"], "completed");
    // Tasks create files with the operator's umask, not Holon's private one.
    let made = home
        .path()
        .join("data/agents")
        .join(v["agent_id"].as_str().unwrap_or_default())
        .join("made-by-task.txt");
    let mode = std::fs::metadata(&made).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode.ok(), Some(0o644), "{}", made.display());
    // What Holon keeps of the task (its output, its stderr's tail) stays
    // private under that umask.
    let tasks = home.path().join("data/tasks");
    let kept: Vec<std::path::PathBuf> = std::fs::read_dir(&tasks)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|agent| {
            std::fs::read_dir(agent.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|f| f.path())
        .collect();
    assert!(
        kept.iter()
            .any(|p| p.extension().is_some_and(|e| e == "err")),
        "{kept:?}"
    );
    for file in &kept {
        let mode = std::fs::metadata(file).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o600), "{}", file.display());
    }
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body.to_string();
    // A sandboxed command gets an allow-list: the base and what the
    // operator lists, not every harmless-looking name.
    assert!(
        sent.contains("PATH="),
        "the task saw its environment: {sent}"
    );
    assert!(sent.contains("HARDEN_PASS_TOKEN=passed-through-4"));
    assert!(!sent.contains("HARDEN_PLAIN"), "{sent}");
    for leaked in [
        "sk-must-not-leak-1",
        "pw-must-not-leak-2",
        "must-not-leak-3",
    ] {
        assert!(!sent.contains(leaked), "{leaked} reached the model");
    }
    // Nor the task's output file or the store.
    let mut files = vec![home.store_file()];
    let tasks = home.path().join("data").join("tasks");
    if let Ok(dir) = std::fs::read_dir(&tasks) {
        files.extend(dir.filter_map(Result::ok).map(|e| e.path()));
    }
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("sk-must-not-leak-1"),
            "{} holds the key",
            f.display()
        );
    }
}

#[test]
fn prompts_and_objectives_never_reach_the_log_at_info() {
    let home = Home::new();
    // Through a runtime, which logs its serving at info, and offline.
    home.ok(&["--detach"]);
    let daemon = super::support::Daemon(&home);
    home.ok(&["send", "secret-prompt-words-1"]);
    home.ok(&["work", "add", "secret-objective-words-2"]);
    home.ok(&["daemon", "stop"]);
    drop(daemon);
    home.ok(&["send", "secret-prompt-words-3"]);
    let logs = home.path().join("logs");
    let mut seen = String::new();
    for entry in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        seen.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
    }
    assert!(
        seen.contains("holon starting"),
        "the log was written: {seen}"
    );
    assert!(!seen.contains("secret-prompt-words-1"), "{seen}");
    assert!(!seen.contains("secret-objective-words-2"), "{seen}");
    assert!(!seen.contains("secret-prompt-words-3"), "{seen}");
}

#[test]
fn daemon_stop_never_signals_a_stranger_named_by_a_stale_pid_file() {
    use std::os::unix::process::CommandExt;
    let home = Home::new();
    let mut stranger = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = stranger.id();
    let run = home.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    // Two stale files: an old one without identity, and one whose identity
    // belongs to another process (same pid, another start time).
    let real = holon::model::process::ProcessIdentity::of(pid as i32).expect("no identity");
    let files = [
        serde_json::json!({"pid": pid, "home": null, "socket_path": "x", "started_at": "t", "version": "0"}),
        serde_json::json!({"pid": pid, "home": null, "socket_path": "x", "started_at": "t", "version": "0",
            "process_identity": {"pid": pid, "start_ticks": real.start_ticks + 3, "boot_id": real.boot_id}}),
    ];
    for file in files {
        std::fs::write(run.join("daemon.pid"), file.to_string()).unwrap();
        let out = home.ok(&["daemon", "stop"]);
        assert!(out.contains("no Holon runtime is running"), "{out}");
        assert!(
            !run.join("daemon.pid").exists(),
            "the stale pid file is removed"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            matches!(stranger.try_wait(), Ok(None)),
            "the stranger {pid} was signalled"
        );
    }
    let _ = stranger.kill();
    let _ = stranger.wait();
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn everything_holon_writes_is_private_whatever_the_umask() {
    let home = Home::new();
    // The binary inherits this test process's umask; make it 022 for the
    // child explicitly (as a login shell would).
    let mut cmd = home.cmd();
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: umask is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0o022);
                Ok(())
            });
        }
    }
    let out = cmd.args(["send", "hello"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let p = home.path();
    for dir in ["config", "data", "logs", "run"] {
        assert_eq!(mode(&p.join(dir)), 0o700, "{dir}");
    }
    assert_eq!(mode(p), 0o700, "HOLON_HOME itself");
    assert_eq!(mode(&home.store_file()), 0o600);
    let mut logs = 0;
    for log in std::fs::read_dir(p.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        assert_eq!(mode(&log.path()), 0o600, "{}", log.path().display());
        logs += 1;
    }
    assert!(logs > 0);
}

#[test]
fn a_home_or_run_dir_others_can_write_or_own_is_refused_with_the_fix() {
    let home = Home::new();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = home.run(&["status"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("writable by other users (mode 777)"), "{err}");
    assert!(
        err.contains(&format!("chmod 700 {}", home.path().display())),
        "{err}"
    );
    assert!(!home.path().join("data").exists(), "nothing was created");

    // A run directory that is someone else's symlink (as root: owned by
    // nobody), planted to capture the control socket.
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let home = Home::new();
        let elsewhere = tempfile::tempdir().unwrap();
        let run = home.path().join("run");
        std::os::unix::fs::symlink(elsewhere.path(), &run).unwrap();
        let c = std::ffi::CString::new(run.as_os_str().as_encoded_bytes()).unwrap_or_default();
        // SAFETY: lchown on a path we just made.
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), 65534, 65534) }, 0);
        let out = home.run(&["status"]);
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("symlink owned by another user"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_broken_config_does_not_block_daemon_status_or_stop() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(home.path().join("config/config.toml"), "[model\nbroken = ").unwrap();
    let status = home.run(&["daemon", "status"]);
    assert_eq!(status.status.code(), Some(3), "{}", stderr(&status));
    assert!(
        stderr(&status).contains("config.toml"),
        "the problem is still named"
    );
    let stop = home.run(&["daemon", "stop"]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    // Other commands still refuse a broken config: an offline status
    // would make the default agent anew under the defaults.
    assert!(!home.run(&["status"]).status.success());
    assert!(!home.run(&["send", "hello"]).status.success());
}

#[test]
fn a_failed_start_leaves_no_control_socket_behind() {
    let home = Home::new();
    home.ok(&["status"]);
    // The store is damaged: the daemon binds its socket, then cannot open
    // the store and must take the socket away again.
    std::fs::write(home.store_file(), vec![0x5Au8; 64 * 1024]).unwrap();
    let out = home.run(&["daemon", "run"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("corrupt"), "{}", stderr(&out));
    // The error names the ways out.
    for way in [
        "holon store verify",
        "holon store salvage",
        "holon store backup",
    ] {
        assert!(stderr(&out).contains(way), "{way}: {}", stderr(&out));
    }
    assert!(
        !home.path().join("run/control.sock").exists(),
        "control.sock left behind"
    );
}

/// `n` texts of `len` pseudo-random hex characters from `seed`.
fn hex_texts(seed: u64, n: usize, len: usize) -> Vec<String> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b"0123456789abcdef"[(x % 16) as usize])
                })
                .collect()
        })
        .collect()
}

/// Send `texts` as prompts, then the store file's bytes and the 4 KiB
/// pages that hold pieces of them (the ledger's data).
fn sent_and_placed(home: &Home, texts: &[String]) -> (Vec<u8>, std::collections::BTreeSet<usize>) {
    for (i, text) in texts.iter().enumerate() {
        home.ok(&["send", &format!("prompt {i} {text}")]);
    }
    let good = std::fs::read(home.store_file()).unwrap();
    let needles: std::collections::HashSet<&[u8]> =
        texts.iter().flat_map(|t| t.as_bytes().chunks(16)).collect();
    let pages = good
        .windows(16)
        .enumerate()
        .filter(|(_, w)| needles.contains(w))
        .map(|(i, _)| i / 4096 * 4096)
        .collect();
    (good, pages)
}

#[test]
fn a_damaged_or_empty_store_is_a_clear_error_never_a_panic() {
    let home = Home::new();
    // Random hex the store cannot compress, so that pieces of it show
    // where the ledger's records sit in the file even when the records
    // around it are compressed.
    let (good, pages) = sent_and_placed(&home, &hex_texts(0x2545_f491_4f6c_dd1d, 40, 600));
    // Damage each 4 KiB page that holds ledger data, one at a time.
    let pages: std::collections::BTreeSet<usize> = pages.into_iter().take(12).collect();
    assert!(!pages.is_empty());
    let mut failures = 0;
    for page in pages {
        let mut bad = good.clone();
        bad[page..page + 4096].fill(0x5A);
        std::fs::write(home.store_file(), &bad).unwrap();
        for args in [&["status"][..], &["events", "--limit", "100"][..]] {
            let out = home.run(args);
            let err = stderr(&out);
            assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
            assert!(!err.contains("RUST_BACKTRACE"), "{args:?}: {err}");
            if !out.status.success() {
                failures += 1;
                assert!(err.starts_with("holon: error: "), "{err}");
                assert!(err.contains("damaged") || err.contains("corrupt"), "{err}");
            }
        }
    }
    assert!(
        failures > 0,
        "the damage was never noticed: the test damaged nothing"
    );
    // A 0-byte store is an error, not a new, empty store.
    std::fs::write(home.store_file(), b"").unwrap();
    let out = home.run(&["status"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("empty (0 bytes)"), "{}", stderr(&out));
    assert_eq!(
        std::fs::metadata(home.store_file()).map(|m| m.len()).ok(),
        Some(0)
    );
}

#[test]
fn concurrent_sends_without_a_daemon_wait_their_turn_and_land_exactly_once() {
    let home = Home::new();
    home.ok(&["status"]);
    let children: Vec<_> = (0..60)
        .map(|i| {
            home.cmd()
                .args(["send", "--json", &format!("concurrent prompt {i}")])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut acknowledged = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a send failed: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        acknowledged.push(v["message_id"].as_str().unwrap_or_default().to_owned());
    }
    let events = super::support::json_lines(&home.ok(&[
        "events",
        "--json",
        "--kind",
        "message_admitted",
        "--limit",
        "1000",
    ]));
    let mut ledger: Vec<String> = events
        .iter()
        .map(|e| {
            e["payload"]["message"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    ledger.sort();
    acknowledged.sort();
    assert_eq!(
        ledger, acknowledged,
        "every acknowledged prompt exactly once"
    );
}

#[test]
fn store_verify_diagnoses_random_damage_and_never_panics() {
    let home = Home::new();
    for i in 0..60 {
        home.ok(&[
            "send",
            &format!("prompt {i} {}", "some words to fill pages ".repeat(20)),
        ]);
    }
    let good = std::fs::read(home.store_file()).unwrap();
    let pages = good.len() / 4096;
    assert!(pages > 8, "{pages} pages");
    let dir = tempfile::tempdir().unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut diagnosed = 0;
    for round in 0..12 {
        // Three random 4 KiB pages overwritten with random bytes, as the
        // trial did (page 0, the header, included when drawn).
        let mut bad = good.clone();
        for _ in 0..3 {
            let page = (next() as usize) % pages;
            for b in &mut bad[page * 4096..(page + 1) * 4096] {
                *b = next() as u8;
            }
        }
        let copy = dir.path().join(format!("damaged-{round}.redb"));
        std::fs::write(&copy, &bad).unwrap();
        let out = home.run(&["store", "verify", &copy.display().to_string()]);
        let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "round {round}: {err}"
        );
        if out.status.success() {
            assert!(text.contains(": sound"), "{text}");
            continue;
        }
        diagnosed += 1;
        assert!(text.contains("PROBLEMS"), "round {round}: {text}{err}");
        // The next steps, in order: salvage first, then a backup; never
        // a bare engine message.
        let salvage = text.find("holon store salvage").expect("salvage named");
        let backup = text.find("restore a backup").expect("backups named");
        assert!(salvage < backup, "{text}");
    }
    assert!(diagnosed > 0, "no round damaged anything that mattered");
}

#[test]
fn the_listener_answers_under_a_small_descriptor_limit_with_slow_clients() {
    use std::io::{Read, Write};
    use std::os::unix::process::CommandExt;
    let home = Home::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = home.cmd();
    cmd.env("HOLON_LISTEN", &listen).arg("--detach");
    // As many containers set it: 1,024 descriptors, soft and hard.
    // SAFETY: only setrlimit, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = super::support::Daemon(&home);
    // 500 clients that send half a request's headers and wait: more
    // than the listener holds under this limit (256), so the oldest give
    // way to newer ones.
    let slow: Vec<std::net::TcpStream> = (0..500)
        .filter_map(|_| {
            let mut s = std::net::TcpStream::connect(&listen).ok()?;
            s.write_all(b"GET /status HTTP/1.1\r\nHost: holon\r\n")
                .ok()?;
            Some(s)
        })
        .collect();
    assert!(slow.len() > 450, "{} slow clients connected", slow.len());
    let token = std::fs::read_to_string(home.path().join("run/remote-token")).unwrap();
    let mut c = std::net::TcpStream::connect(&listen).unwrap();
    // Answered at once, not after the slow ones' header timeouts (10 s).
    c.set_read_timeout(Some(std::time::Duration::from_secs(3)))
        .unwrap();
    write!(
        c,
        "GET /status HTTP/1.1\r\nHost: holon\r\nAuthorization: bearer {}\r\nConnection: close\r\n\r\n",
        token.trim()
    )
    .unwrap();
    let mut answer = String::new();
    let read = c.read_to_string(&mut answer);
    assert!(read.is_ok(), "no answer: {read:?}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(slow);
}

#[test]
fn a_salvaged_store_records_its_losses_and_verifies_sound() {
    let home = Home::new();
    // Random hex the store cannot compress, so its pages show where the
    // ledger's records sit.
    let (good, pages) = sent_and_placed(&home, &hex_texts(0x51a7_3c09_9d2e_44b1, 60, 900));
    let dir = tempfile::tempdir().unwrap();
    let mut recorded = 0;
    // A page of ledger data in the middle damaged: salvage loses the
    // events on it and records them.
    for (n, page) in pages.iter().skip(pages.len() / 3).take(4).enumerate() {
        let mut bad = good.clone();
        bad[*page..page + 4096].fill(0xA5);
        let broken = dir.path().join(format!("broken-{n}.redb"));
        let out = dir.path().join(format!("salvaged-{n}.redb"));
        std::fs::write(&broken, &bad).unwrap();
        let (b, o) = (broken.display().to_string(), out.display().to_string());
        let text = home.ok(&["store", "salvage", &b, &o]);
        let verified = home.run(&["store", "verify", &o]);
        let said = String::from_utf8_lossy(&verified.stdout).into_owned();
        assert!(verified.status.success(), "{text}\n{said}");
        if !text.contains("recorded as lost") {
            continue;
        }
        recorded += 1;
        assert!(said.contains("lost in a salvage (recorded)"), "{said}");
        // The salvaged store in use: status counts the loss, events
        // marks the gap.
        let user = Home::new();
        std::fs::create_dir_all(user.store_file().parent().unwrap()).unwrap();
        std::fs::copy(&out, user.store_file()).unwrap();
        let status: serde_json::Value =
            serde_json::from_str(&user.ok(&["status", "--json"])).unwrap();
        assert!(
            status["agents"][0]["lost_events"].as_u64() > Some(0),
            "{status}"
        );
        let events = user.run(&["events", "--limit", "100000"]);
        assert!(
            stderr(&events).contains("were lost in a salvage"),
            "{}",
            stderr(&events)
        );
    }
    assert!(recorded > 0, "no damaged page cost the ledger an event");
}

/// The shapes the engine's own tree cannot read past: a store whose
/// header is overwritten, and one cut in half. Salvage reads the file's
/// pages and the prompts come back; the new store verifies sound and
/// serves.
#[test]
fn a_store_without_its_header_or_cut_short_is_salvaged_from_its_pages() {
    let home = Home::new();
    let texts = hex_texts(0x7f4a_7c15_9e37_79b9, 40, 400);
    let (good, _) = sent_and_placed(&home, &texts);
    let dir = tempfile::tempdir().unwrap();
    let mut headless = good.clone();
    headless[..4096].fill(0);
    let half = good[..good.len() / 2 / 4096 * 4096].to_vec();
    for (name, bytes, floor) in [("headless", headless, 40), ("half", half, 1)] {
        let broken = dir.path().join(format!("{name}.redb"));
        let out = dir.path().join(format!("{name}-salvaged.redb"));
        std::fs::write(&broken, &bytes).unwrap();
        let (b, o) = (broken.display().to_string(), out.display().to_string());
        let text = home.ok(&["store", "salvage", &b, &o]);
        assert!(text.contains("pages"), "{name}: {text}");
        let verified = home.run(&["store", "verify", &o]);
        let said = String::from_utf8_lossy(&verified.stdout).into_owned();
        assert!(verified.status.success(), "{name}: {text}\n{said}");
        let user = Home::new();
        std::fs::create_dir_all(user.store_file().parent().unwrap()).unwrap();
        std::fs::copy(&out, user.store_file()).unwrap();
        let events = user.ok(&["events", "--json", "--limit", "100000"]);
        let back = texts.iter().filter(|t| events.contains(t.as_str())).count();
        assert!(
            back >= floor,
            "{name}: {back} of {} prompts back",
            texts.len()
        );
        // The salvaged store takes new work.
        user.ok(&["send", "after the salvage"]);
    }
}
