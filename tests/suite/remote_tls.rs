//! The listener over TLS: a certificate made at first start (its key
//! 0600, kept across restarts), `holon remote-info` printing the `wss://`
//! URL and the fingerprint, a console that pins it (and refuses another
//! certificate, naming both), the operator's own certificate, and
//! plaintext off loopback refused unless allowed.

use serde_json::Value;

use super::pty::Console;
use super::support::{stderr, Daemon, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

fn free_port() -> u16 {
    let l = ok(std::net::TcpListener::bind("127.0.0.1:0"));
    ok(l.local_addr()).port()
}

fn write_config(home: &Home, text: &str) {
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(home.path().join("config/config.toml"), text));
}

fn remote_info(home: &Home) -> Value {
    ok(serde_json::from_str(&home.ok(&["remote-info", "--json"])))
}

/// A copy of `home`'s token, 0600, in `dir`.
fn token_copy(home: &Home, dir: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join("token");
    let token = ok(std::fs::read_to_string(
        home.path().join("run/remote-token"),
    ));
    ok(std::fs::write(&file, token));
    ok(std::fs::set_permissions(
        &file,
        std::fs::Permissions::from_mode(0o600),
    ));
    file.display().to_string()
}

#[test]
fn a_console_pins_the_listeners_certificate_and_refuses_another() {
    use std::os::unix::fs::PermissionsExt;
    let far = Home::new();
    let port = free_port();
    write_config(
        &far,
        &format!("[server]\nlisten = \"127.0.0.1:{port}\"\ntls = true\n"),
    );
    let out = ok(far
        .cmd()
        .env_remove("HOLON_LISTEN")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&far);
    let key = far.path().join("data/tls/key.pem");
    let mode = ok(std::fs::metadata(&key)).permissions().mode();
    assert_eq!(mode & 0o077, 0, "the key is its owner's only");
    let info = remote_info(&far);
    let url = info["url"].as_str().unwrap_or_default().to_owned();
    let pin = info["fingerprint"].as_str().unwrap_or_default().to_owned();
    assert_eq!(url, format!("wss://127.0.0.1:{port}"), "{info}");
    assert!(pin.starts_with("SHA256:") && pin.len() == 71, "{info}");
    let printed = far.ok(&["remote-info"]);
    assert!(
        printed.contains(&format!("holon attach {url} --fingerprint {pin}")),
        "{printed}"
    );
    let token = ok(std::fs::read_to_string(far.path().join("run/remote-token")));
    assert!(
        !printed.contains(token.trim()),
        "the token is never printed"
    );
    far.ok(&["send", "over tls marker-t1"]);

    let near = Home::new();
    let token_file = token_copy(&far, near.path());
    // Another certificate pinned: refused, naming both.
    let wrong = format!("SHA256:{}", "ab".repeat(32));
    let out = near.run(&[
        "attach",
        &url,
        "--fingerprint",
        &wrong,
        "--token-file",
        &token_file,
        "--plain",
    ]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains(&pin) && e.contains(&wrong), "{e}");
    assert!(e.contains("refused"), "{e}");
    // No fingerprint at all, or plaintext against TLS: refused plainly.
    let out = near.run(&["attach", &url, "--token-file", &token_file, "--plain"]);
    assert!(stderr(&out).contains("--fingerprint"), "{}", stderr(&out));
    let plain = format!("ws://127.0.0.1:{port}");
    let out = near.run(&["attach", &plain, "--token-file", &token_file, "--plain"]);
    assert!(stderr(&out).contains("wss://"), "{}", stderr(&out));

    // The pinned certificate: the console works as when local.
    let mut c = Console::start(
        near.path(),
        &[
            "attach",
            &url,
            "--fingerprint",
            &pin,
            "--token-file",
            &token_file,
        ],
        120,
        40,
        &[],
    );
    c.wait_until("attached", |s| s.contains("streaming"));
    c.wait_for("marker-t1");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);

    // A restart keeps the certificate, so the pin still holds.
    let out = ok(far
        .cmd()
        .env_remove("HOLON_LISTEN")
        .args(["daemon", "restart"])
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(remote_info(&far)["fingerprint"], pin.as_str());
}

#[test]
fn the_operators_own_certificate_is_served_and_plaintext_off_loopback_needs_consent() {
    // A pair made by another home stands for the operator's own.
    let maker = Home::new();
    let port = free_port();
    write_config(
        &maker,
        &format!("[server]\nlisten = \"127.0.0.1:{port}\"\ntls = true\n"),
    );
    let out = ok(maker
        .cmd()
        .env_remove("HOLON_LISTEN")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let made = remote_info(&maker)["fingerprint"].clone();
    maker.ok(&["daemon", "stop"]);
    let tls = maker.path().join("data/tls");

    let home = Home::new();
    let port = free_port();
    write_config(
        &home,
        &format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ntls_cert = \"{}\"\ntls_key = \"{}\"\n",
            tls.join("cert.pem").display(),
            tls.join("key.pem").display()
        ),
    );
    let out = ok(home
        .cmd()
        .env_remove("HOLON_LISTEN")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&home);
    assert_eq!(remote_info(&home)["fingerprint"], made);
    assert!(!home.path().join("data/tls").exists(), "no pair of its own");

    // Off loopback, plaintext is refused up front unless allowed.
    let lan = format!("0.0.0.0:{}", free_port());
    write_config(&home, "[server]\ntls = false\n");
    let restart = ["daemon", "restart", "--access", "lan", "--listen", &lan];
    let out = home.run(&restart);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("allow_plaintext"), "{}", stderr(&out));
    write_config(&home, "[server]\ntls = false\nallow_plaintext = true\n");
    let out = home.run(&restart);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("plaintext"), "{}", stderr(&out));
    let info = remote_info(&home);
    assert!(
        info["url"].as_str().is_some_and(|u| u.starts_with("ws://")),
        "{info}"
    );
    assert_eq!(info["fingerprint"], Value::Null);
    // A half-given pair is refused with its key.
    write_config(&home, "[server]\ntls_cert = \"cert.pem\"\n");
    let out = home.run(&["daemon", "restart"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("server.tls_key"), "{}", stderr(&out));
}
