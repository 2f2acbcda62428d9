//! One console over several runtimes, where another runtime needs you:
//! its waiting call is answered from here without switching, and a remote
//! whose ssh is slow to connect is there at a later glance. Two daemons
//! under different homes; the far one reached through the ssh stand-in.

use super::remote_ssh::{console_knowing_build, fake_ssh, Far};
use super::support::{poll, stderr, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

/// A call waiting on another runtime is said in the console with the words
/// that answer it, and `/approve ID` answers it there without switching:
/// the far turn that asked goes on with the result.
#[test]
fn another_runtimes_approval_is_answered_without_switching() {
    use super::stub_provider::{canned, Canned, StubServer};
    let rt = ok(tokio::runtime::Runtime::new());
    let call = serde_json::json!({ "cmd": "echo far-approved" }).to_string();
    let stub = rt.block_on(StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("Echoing.", &[("call_1", "ExecCommand", &call)]),
        ),
        Canned::json(200, canned::responses_json("Echoed far away.", &[])),
    ]));
    let far = Far(Home::new());
    ok(std::fs::create_dir_all(far.path().join("config")));
    ok(std::fs::write(
        far.path().join("config/config.toml"),
        "[policy]\napproval = \"always\"\n",
    ));
    let base = format!("{}/v1", stub.base());
    let out = ok(far
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-far")
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "sk-far")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    far.ok(&["send", "echo something over there"]);
    let id = poll("the far approval", || {
        let v: Vec<serde_json::Value> =
            serde_json::from_str(&far.ok(&["approvals", "--json"])).unwrap_or_default();
        v.first().and_then(|a| a["id"].as_str().map(str::to_owned))
    });
    let near = Far::start();
    let ssh = fake_ssh(near.path());
    let mut c = console_knowing_build(&near, &far, &ssh, 160);
    c.type_text("/runtime");
    c.enter();
    c.wait_until("the far call, with how to answer it", |s| {
        s.contains("Needs you on another runtime: build (1)")
            && s.contains(&format!("/approve {id}"))
    });
    c.type_text(&format!("/approve {id}"));
    c.enter();
    c.wait_for("On build: ");
    poll("the far turn went on with the result", || {
        far.ok(&["events", "--json", "--limit", "2000"])
            .contains("Echoed far away.")
            .then_some(())
    });
    let left: Vec<serde_json::Value> =
        serde_json::from_str(&far.ok(&["approvals", "--json"])).unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    // Nothing was asked of, or sent to, this machine's runtime.
    assert!(!near
        .ok(&["events", "--json", "--limit", "2000"])
        .contains(&id));
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

/// A remote whose ssh takes longer than a glance waits (5 s) is said so
/// once, then is there at a later glance: its connection was made in the
/// background and kept.
#[test]
fn a_slow_ssh_is_there_at_a_later_glance() {
    use std::os::unix::fs::PermissionsExt;
    let far = Far::start();
    let near = Far::start();
    let ssh = fake_ssh(near.path());
    // The same stand-in, seven seconds slow to connect.
    let slow = near.path().join("slow-ssh");
    ok(std::fs::write(
        &slow,
        format!("#!/bin/sh\nsleep 7\nexec '{}' \"$@\"\n", ssh.display()),
    ));
    ok(std::fs::set_permissions(
        &slow,
        std::fs::Permissions::from_mode(0o755),
    ));
    let mut c = console_knowing_build(&near, &far, &slow, 120);
    c.type_text("/runtime");
    c.enter();
    c.wait_until("the slow one, not yet", |s| {
        s.lines()
            .any(|l| l.contains("build") && l.contains("no answer within 5 s"))
    });
    // Asked again once ssh is through: there, over the kept connection.
    let mut there = false;
    for _ in 0..15 {
        std::thread::sleep(std::time::Duration::from_secs(1));
        c.type_text("/runtime");
        c.enter();
        if (c.contents().lines()).any(|l| l.contains("build") && l.contains("1 agent")) {
            there = true;
            break;
        }
    }
    assert!(there, "{}", c.contents());
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}
