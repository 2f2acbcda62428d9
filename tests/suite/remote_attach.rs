//! Remote attach and the daemon lifecycle contract: the JSON-RPC protocol
//! over WebSocket on the HTTP listener (bearer token, a request that is
//! not a handshake refused; the same requests, subscriptions and resume as
//! the socket), `holon attach ws://` in a
//! pseudo-terminal surviving a killed runtime, and `daemon restart` with a
//! changed config while `daemon start` fails closed.

use std::time::Duration;

use serde_json::Value;

use super::pty::Console;
use super::support::{daemon_pid, stderr, Daemon, Home};
use holon::protocol::{Request, RuntimeClient, SubscriptionItem};
use holon::ui::ws::Endpoint;

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

fn free_port() -> u16 {
    let l = ok(std::net::TcpListener::bind("127.0.0.1:0"));
    ok(l.local_addr()).port()
}

/// `holon --detach` listening on `listen` (not the suite's port 0).
fn detach_on(home: &Home, listen: &str) {
    let out = ok(home
        .cmd()
        .env("HOLON_LISTEN", listen)
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
}

fn status(home: &Home) -> Value {
    let out = ok(home
        .cmd()
        .env_remove("HOLON_LISTEN")
        .args(["daemon", "status", "--json"])
        .output());
    ok(serde_json::from_slice(&out.stdout))
}

fn token(home: &Home) -> String {
    ok(std::fs::read_to_string(
        home.path().join("run/remote-token"),
    ))
}

/// A WebSocket to the listener at `listen` with the home's token, no
/// client of Holon's between: what a test sends is what goes on the wire.
async fn raw_websocket(
    listen: &str,
    home: &Home,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = ok(format!("ws://{listen}/ws").into_client_request());
    let bearer = ok(format!("Bearer {}", token(home)).parse());
    request.headers_mut().insert("authorization", bearer);
    ok(tokio_tungstenite::connect_async(request).await).0
}

#[test]
fn the_protocol_over_websocket_needs_the_token_and_serves_requests_and_events() {
    let home = Home::new();
    let listen = format!("127.0.0.1:{}", free_port());
    detach_on(&home, &listen);
    let _daemon = Daemon(&home);
    let rt = ok(tokio::runtime::Runtime::new());
    rt.block_on(async {
        let url = format!("ws://{listen}");
        for bad in ["", "wrong-token-0123456789"] {
            let e = Endpoint::websocket(&url, bad.to_owned(), None).unwrap();
            let refused = e
                .connect()
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(refused.contains("401"), "{bad:?}: {refused}");
        }
        // `/ws` over plain HTTP: the token first, then an upgrade, then a
        // whole handshake.
        let http = super::support::http();
        let get = |headers: &[(&str, &str)]| {
            let mut r = http.get(format!("http://{listen}/ws"));
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.send()
        };
        let bearer = format!("Bearer {}", token(&home));
        let upgrade = [
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
        ];
        let r = ok(get(&upgrade).await);
        assert_eq!(r.status().as_u16(), 401, "no token");
        let r = ok(get(&[("authorization", bearer.as_str())]).await);
        assert_eq!(r.status().as_u16(), 426, "no upgrade asked");
        assert_eq!(
            r.headers().get("upgrade").and_then(|v| v.to_str().ok()),
            Some("websocket")
        );
        let mut no_key = upgrade.to_vec();
        no_key.push(("authorization", bearer.as_str()));
        let r = ok(get(&no_key).await);
        assert_eq!(r.status().as_u16(), 400, "no Sec-WebSocket-Key");
        assert!(ok(r.text().await).contains("WebSocket handshake"));
        let mut head = http.head(format!("http://{listen}/ws"));
        for (k, v) in &no_key {
            head = head.header(*k, *v);
        }
        let r = ok(head.send().await);
        assert_eq!(r.status().as_u16(), 405, "HEAD");
        // HTTP/1.0 has no upgrade: refused, not answered 101.
        let handshake = format!(
            "GET /ws HTTP/1.0\r\nHost: {listen}\r\nAuthorization: {bearer}\r\n\
             Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        );
        let addr = listen.clone();
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut c = ok(std::net::TcpStream::connect(&addr));
            ok(c.set_read_timeout(Some(Duration::from_secs(10))));
            ok(c.write_all(handshake.as_bytes()));
            let mut head = [0u8; 12];
            ok(c.read_exact(&mut head));
            String::from_utf8_lossy(&head).into_owned()
        });
        assert_eq!(ok(answer.await), "HTTP/1.0 426", "HTTP/1.0");
        let e = Endpoint::websocket(&url, token(&home), None).unwrap();
        let client = ok(e.connect().await);
        let status: holon::protocol::RuntimeStatus =
            ok(holon::protocol::call_typed(&client, Request::RuntimeStatus).await);
        assert_eq!(status.mode, "daemon");
        // A subscription over the WebSocket sees what the CLI sends.
        let mut sub = ok(client.subscribe("main", 1).await);
        home.ok(&["send", "over the websocket marker-ws"]);
        let found = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(item) = sub.next().await {
                if let SubscriptionItem::Event(e) = item {
                    if e.payload.to_string().contains("marker-ws") {
                        return true;
                    }
                }
            }
            false
        })
        .await;
        assert_eq!(found, Ok(true));
        ok(client
            .call(Request::AgentsList {
                limit: None,
                cursor: None,
                query: None,
            })
            .await);
    });
}

#[test]
fn attach_over_websocket_survives_a_killed_runtime_and_resumes_from_its_cursor() {
    let home = Home::new();
    let listen = format!("127.0.0.1:{}", free_port());
    detach_on(&home, &listen);
    let _daemon = Daemon(&home);
    home.ok(&["send", "before the kill marker-a"]);
    // The console runs as if on another machine: its own home, a copy of
    // the token.
    let remote = Home::new();
    let token_file = remote.path().join("token");
    ok(std::fs::write(&token_file, token(&home)));
    {
        use std::os::unix::fs::PermissionsExt;
        ok(std::fs::set_permissions(
            &token_file,
            std::fs::Permissions::from_mode(0o600),
        ));
    }
    let target = format!("ws://{listen}");
    let token_arg = token_file.display().to_string();
    let mut c = Console::start(
        remote.path(),
        &["attach", &target, "--token-file", &token_arg],
        120,
        80,
        &[],
    );
    c.wait_until("attached", |s| s.contains("streaming"));
    c.wait_for("before the kill marker-a");
    // SAFETY: the daemon this test started.
    unsafe { libc::kill(daemon_pid(&home), libc::SIGKILL) };
    c.wait_until("reconnecting", |s| s.contains("reconnecting in"));
    home.ok(&["send", "while it was down marker-b"]);
    detach_on(&home, &listen);
    c.wait_for("while it was down marker-b");
    c.type_text("typed remotely marker-c");
    c.enter();
    c.wait_for("› typed remotely marker-c");
    // The echo shows while the prompt is sent; its admission follows.
    super::support::poll("the prompt reached the runtime", || {
        home.ok(&["events", "--json", "--limit", "2000"])
            .contains("marker-c")
            .then_some(())
    });
    // Nothing was shown twice after the resume.
    let screen = c.contents();
    assert_eq!(screen.matches("marker-a").count(), 1, "{screen}");
    c.type_text("/quit");
    c.enter();
    assert_eq!(c.wait_exit(), 0);
}

#[test]
fn restart_applies_a_changed_config_while_start_fails_closed() {
    let home = Home::new();
    let (p1, p2) = (free_port(), free_port());
    let config = home.path().join("config/config.toml");
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        &config,
        format!("[server]\nlisten = \"127.0.0.1:{p1}\"\n"),
    ));
    let run = |args: &[&str]| ok(home.cmd().env_remove("HOLON_LISTEN").args(args).output());
    let out = run(&["daemon", "start"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&home);
    let s = status(&home);
    assert_eq!(s["http_addr"], format!("127.0.0.1:{p1}"), "{s}");
    assert_eq!(s["config_fingerprint_match"], true, "{s}");
    let pid = s["status"]["pid"].clone();

    ok(std::fs::write(
        &config,
        format!("[server]\nlisten = \"127.0.0.1:{p2}\"\n"),
    ));
    assert_eq!(status(&home)["config_fingerprint_match"], false);
    let refused = run(&["daemon", "start"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("daemon restart"),
        "{}",
        stderr(&refused)
    );
    // A non-loopback address without an access choice is refused up front.
    let open = run(&["daemon", "restart", "--listen", "0.0.0.0:1"]);
    assert!(!open.status.success());
    assert!(stderr(&open).contains("--access lan"), "{}", stderr(&open));
    assert_eq!(status(&home)["status"]["pid"], pid, "nothing was stopped");

    let out = run(&["daemon", "restart"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = status(&home);
    assert_eq!(s["http_addr"], format!("127.0.0.1:{p2}"), "{s}");
    assert_eq!(s["config_fingerprint_match"], true);
    assert_ne!(s["status"]["pid"], pid);
    // Stale pid metadata (a killed runtime) is cleaned by restart.
    super::support::kill_daemon(daemon_pid(&home));
    let out = run(&["daemon", "restart"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(status(&home)["running"], true);
    // Another host's reach needs the explicit choice, and is served over
    // TLS (see remote_tls for plaintext).
    let lan = format!("0.0.0.0:{}", free_port());
    let out = run(&["daemon", "restart", "--access", "lan", "--listen", &lan]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("plaintext"), "{}", stderr(&out));
    let s = status(&home);
    assert_eq!(s["status"]["http"]["access"], "lan", "{s}");
    let pinned = s["status"]["http"]["tls_fingerprint"]
        .as_str()
        .unwrap_or_default();
    assert!(pinned.starts_with("SHA256:"), "{s}");
    assert_eq!(s["status"]["http"]["state"], "listening", "{s}");
    assert_eq!(s["config_fingerprint_match"], true, "started with lan: {s}");
    // A taken address: the runtime still runs on its socket and says why.
    let blocker = ok(std::net::TcpListener::bind("127.0.0.1:0"));
    let taken = ok(blocker.local_addr()).to_string();
    ok(std::fs::write(
        &config,
        format!("[server]\nlisten = \"{taken}\"\n"),
    ));
    let out = run(&["daemon", "restart"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = status(&home);
    assert_eq!(s["status"]["http"]["state"], "down", "{s}");
    assert_eq!(
        s["health"], "degraded",
        "a configured listener is down: {s}"
    );
    assert!(s["http_addr"].is_null(), "nothing listens there: {s}");
    let text = String::from_utf8_lossy(&run(&["daemon", "status"]).stdout).into_owned();
    assert!(text.contains("http      down: cannot listen on"), "{text}");
    drop(blocker);
}

#[test]
fn a_websocket_subscriber_that_never_reads_is_cut_off_and_the_runtime_stays_responsive() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let home = Home::new();
    // ~12 MB of ledger: more than every buffer between the runtime and a
    // client that does not read (its outbound bound, the socket pair, TCP).
    home.ok(&["debug", "append-stress", "--count", "40000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    detach_on(&home, &listen);
    let _daemon = Daemon(&home);
    let rt = ok(tokio::runtime::Runtime::new());
    rt.block_on(async {
        let mut ws = raw_websocket(&listen, &home).await;
        let subscribe = r#"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"agent_id":"main","from_seq":1,"subscription":"deaf"}}"#;
        ok(ws.send(Message::text(subscribe)).await);
        // Not reading until the runtime has cut it off (its log says so);
        // meanwhile it answers everyone else at once.
        let logs = home.path().join("logs");
        let cut_off = || {
            std::fs::read_dir(&logs)
                .into_iter()
                .flatten()
                .flatten()
                .any(|f| {
                    std::fs::read_to_string(f.path())
                        .is_ok_and(|t| t.contains("fell behind was cut off"))
                })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !cut_off() {
            assert!(std::time::Instant::now() < deadline, "the deaf subscriber was never cut off");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let socket = ok(holon::ui::client::SocketClient::connect(
            &home.path().join("run/control.sock"),
        )
        .await);
        let status = socket.call(Request::RuntimeStatus);
        let answered = tokio::time::timeout(Duration::from_secs(1), status).await;
        ok(answered.expect("a client that does not read held up the runtime"));
        // Reading now: the subscription was cut off with "lagged, resume
        // from N" instead of buffering the whole ledger.
        let mut events = 0usize;
        let lagged = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(Ok(m)) = ws.next().await {
                let Message::Text(t) = m else { continue };
                if t.contains("subscription.lagged") {
                    return Some(t.to_string());
                }
                if t.contains(r#""method":"event""#) {
                    events += 1;
                }
            }
            None
        })
        .await;
        let lagged = lagged.ok().flatten().unwrap_or_else(|| panic!("no lagged after {events} events"));
        assert!(lagged.contains("resume_from"), "{lagged}");
        assert!(events < 40_000, "{events} events were buffered");
    });
}

#[test]
fn a_websocket_message_past_the_line_limit_is_refused_and_the_runtime_goes_on() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let home = Home::new();
    let listen = format!("127.0.0.1:{}", free_port());
    detach_on(&home, &listen);
    let _daemon = Daemon(&home);
    let rt = ok(tokio::runtime::Runtime::new());
    rt.block_on(async {
        let mut ws = raw_websocket(&listen, &home).await;
        // Two MiB in one text message: past the socket's 1 MiB line.
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"prompt.submit","params":{{"agent_id":"main","text":"{}"}}}}"#,
            "x".repeat(2 * 1024 * 1024)
        );
        let _ = ws.send(Message::text(text)).await;
        // The WebSocket refuses it before it is a line: the control server
        // never reads it (it would say the line is too long).
        let said = tokio::time::timeout(Duration::from_secs(10), async {
            let mut said = Vec::new();
            while let Some(Ok(m)) = ws.next().await {
                match m {
                    Message::Text(t) => said.push(t.to_string()),
                    Message::Close(_) => break,
                    _ => {}
                }
            }
            said
        })
        .await;
        let said = ok(said);
        assert!(said.is_empty(), "{said:?}");
    });
    // Nothing was admitted, and the runtime answers.
    let out = home.ok(&["events", "--json"]);
    assert!(
        !out.contains("xxxxxxxx"),
        "the oversized prompt was admitted"
    );
    assert_eq!(status(&home)["runtime"], "running");
}

#[test]
fn websocket_connections_give_way_as_the_sockets_do_and_a_slot_is_freed() {
    let home = Home::new();
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        "[server]\nmax_connections = 1\n",
    ));
    let listen = format!("127.0.0.1:{}", free_port());
    detach_on(&home, &listen);
    let _daemon = Daemon(&home);
    let rt = ok(tokio::runtime::Runtime::new());
    rt.block_on(async {
        let url = format!("ws://{listen}");
        let e = Endpoint::websocket(&url, token(&home), None).unwrap();
        let idle = ok(e.connect().await);
        // A refused handshake takes no slot: the one connection stays.
        let r = super::support::http()
            .get(format!("http://{listen}/ws"))
            .header("authorization", format!("Bearer {}", token(&home)))
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "!!")
            .send();
        assert_eq!(ok(r.await).status().as_u16(), 400, "a key that is not one");
        ok(idle.call(Request::RuntimeStatus).await);
        // An idle connection gives way to a new one.
        let following = ok(e.connect().await);
        let gone = idle.call(Request::RuntimeStatus).await;
        assert!(gone.is_err(), "the idle one was closed: {gone:?}");
        // One that follows an agent does not: the next is refused, saying
        // why, and not as if no runtime were there.
        let _sub = ok(following.subscribe("main", 1).await);
        let refused = e.connect().await.err().expect("refused at the limit");
        assert!(refused.to_string().contains("503"), "{refused}");
        let told = e.unreachable(&refused);
        assert!(told.contains("following an agent"), "{told}");
        assert!(!told.contains("start one"), "{told}");
        drop(_sub);
        drop(following);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let again = loop {
            match e.connect().await {
                Ok(c) => break c,
                Err(err) => {
                    assert!(std::time::Instant::now() < deadline, "never freed: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        let status: holon::protocol::RuntimeStatus =
            ok(holon::protocol::call_typed(&again, Request::RuntimeStatus).await);
        assert_eq!(status.mode, "daemon");
    });
}
