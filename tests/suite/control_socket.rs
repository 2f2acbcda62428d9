//! The control endpoint on a real unix socket with a real runtime behind
//! it: JSON-RPC errors for bad input with the connection kept, oversized
//! lines closed, slow and half-closed clients, many subscribers, socket
//! permissions and path guarding.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use holon::app::control::{server, socket};
use holon::model::message::Priority;
use holon::protocol::{call_json, Request, RuntimeClient, SubscriptionItem};
use holon::ui::client::SocketClient;

use super::runtime_core::{events, rig, Rig};

pub(super) struct Served {
    pub(super) rig: Rig,
    pub(super) path: std::path::PathBuf,
    _dir: tempfile::TempDir,
    pub(super) stop: tokio::sync::watch::Sender<bool>,
}

pub(super) async fn served() -> Served {
    served_with(Default::default()).await
}

async fn served_with(limits: holon::app::control::ServerLimits) -> Served {
    let rig = rig(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run").join("control.sock");
    let listener = socket::bind(&path).await.unwrap();
    let (stop, rx) = tokio::sync::watch::channel(false);
    let client: Arc<dyn RuntimeClient> = Arc::new(rig.host.clone());
    tokio::spawn(server::serve(listener, client, rx, limits));
    Served {
        rig,
        path,
        _dir: dir,
        stop,
    }
}

struct Raw {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    write: tokio::net::unix::OwnedWriteHalf,
}

impl Raw {
    async fn connect(path: &std::path::Path) -> Raw {
        let s = UnixStream::connect(path).await.unwrap();
        let (r, w) = s.into_split();
        Raw {
            lines: BufReader::new(r).lines(),
            write: w,
        }
    }

    async fn send(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    async fn recv(&mut self) -> Option<Value> {
        match tokio::time::timeout(Duration::from_secs(10), self.lines.next_line()).await {
            Ok(Ok(Some(l))) => {
                Some(serde_json::from_str(&l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
            }
            Ok(Ok(None)) | Ok(Err(_)) => None,
            Err(_) => panic!("no answer within 10 s"),
        }
    }

    async fn ask(&mut self, line: &str) -> Value {
        self.send(line).await;
        self.recv()
            .await
            .unwrap_or_else(|| panic!("connection closed after {line}"))
    }
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_json_rpc_errors_and_the_connection_stays() {
    let s = served().await;
    let mut c = Raw::connect(&s.path).await;
    assert_eq!(code(&c.ask("{not json").await), -32700);
    let v = c
        .ask(r#"{"jsonrpc":"2.0","id":7,"method":"no.such"}"#)
        .await;
    assert_eq!((code(&v), v["id"].clone()), (-32601, json!(7)));
    let v = c
        .ask(r#"{"jsonrpc":"2.0","id":"x","method":"prompt.submit","params":{"agent_id":5}}"#)
        .await;
    assert_eq!((code(&v), v["id"].clone()), (-32602, json!("x")));
    let v = c
        .ask(r#"{"jsonrpc":"1.0","id":8,"method":"runtime.status"}"#)
        .await;
    assert_eq!((code(&v), v["id"].clone()), (-32600, json!(8)));
    assert_eq!(code(&c.ask(r#"[1,2]"#).await), -32600);
    // A key said twice is ambiguous: refused, not read as its last value.
    let v = c
        .ask(r#"{"jsonrpc":"2.0","id":12,"id":13,"method":"runtime.status"}"#)
        .await;
    assert_eq!((code(&v), v["id"].clone()), (-32600, Value::Null));
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("`id` appears twice"),
        "{v}"
    );
    let v = c
        .ask(r#"{"jsonrpc":"2.0","id":9,"method":"agent.status","params":{"agent_id":"ghost"}}"#)
        .await;
    assert_eq!((code(&v), v["id"].clone()), (-32001, json!(9)));
    // Still serving on the same connection.
    let v = c
        .ask(r#"{"jsonrpc":"2.0","id":10,"method":"runtime.status","params":{}}"#)
        .await;
    assert_eq!(v["result"]["holon"], "holon");
    // Optional parameters may all be left out, params and all.
    let v = c
        .ask(r#"{"jsonrpc":"2.0","id":14,"method":"agents.list"}"#)
        .await;
    assert_eq!(v["result"]["agents"][0]["id"], "main", "{v}");
    assert_eq!(v["result"]["total"], 1, "{v}");
    let v = c
        .ask(r#"{"jsonrpc":"2.0","id":15,"method":"store.prune"}"#)
        .await;
    assert_eq!(code(&v), -32602, "no days and no retain_days: {v}");
    let v = c.ask(r#"{"jsonrpc":"2.0","id":11,"method":"prompt.submit","params":{"agent_id":"main","text":"hi"}}"#).await;
    assert_eq!(v["result"]["queue_status"], "queued");
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_line_gets_an_error_and_a_close_and_others_are_unaffected() {
    let s = served().await;
    let mut big = Raw::connect(&s.path).await;
    let mut other = Raw::connect(&s.path).await;
    let payload = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"prompt.submit","params":{{"agent_id":"main","text":"{}"}}}}"#,
        "x".repeat(10 * 1024 * 1024)
    );
    // The server may close while we are still writing; that is the point.
    let _ = big.write.write_all(payload.as_bytes()).await;
    let _ = big.write.write_all(b"\n").await;
    let v = big.recv().await.expect("no error before close");
    assert_eq!(code(&v), -32600);
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("exceeds"));
    assert!(
        big.recv().await.is_none(),
        "connection closed after the oversized line"
    );
    let v = other
        .ask(r#"{"jsonrpc":"2.0","id":2,"method":"agents.list"}"#)
        .await;
    assert!(v["result"]["agents"].is_array(), "{v}");
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_closed_clients_still_get_their_answer() {
    let s = served().await;
    let mut c = Raw::connect(&s.path).await;
    c.send(r#"{"jsonrpc":"2.0","id":1,"method":"runtime.status"}"#)
        .await;
    c.write.shutdown().await.unwrap();
    let v = c.recv().await.expect("no answer after half-close");
    assert_eq!(v["id"], 1);
    assert!(c.recv().await.is_none());
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_does_not_stall_anyone_else() {
    let s = served().await;
    // A subscriber that never reads its socket.
    let mut stuck = Raw::connect(&s.path).await;
    stuck.send(r#"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"agent_id":"main","from_seq":1}}"#).await;
    // Generate far more events than its buffers hold.
    let client = SocketClient::connect(&s.path).await.unwrap();
    for i in 0..40 {
        let req = Request::WorkItemCreate {
            agent_id: "main".into(),
            request_id: None,
            item: holon::protocol::views::CreateWorkItem {
                objective: format!("item {i} {}", "pad".repeat(3000)),
                ..Default::default()
            },
        };
        client.call(req).await.unwrap();
    }
    // Everyone else is still served promptly.
    let status = call_json(&client, Request::RuntimeStatus);
    let v = tokio::time::timeout(Duration::from_secs(2), status)
        .await
        .expect("a stuck reader held up everyone else")
        .unwrap();
    assert_eq!(v["holon"], "holon");
    drop(stuck);
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_subscribers_each_get_every_event_in_order() {
    let s = served().await;
    let mut subs = Vec::new();
    for _ in 0..200 {
        let c = SocketClient::connect(&s.path).await.unwrap();
        let sub = c.subscribe("main", 1).await.unwrap();
        subs.push((c, sub));
    }
    let writer = SocketClient::connect(&s.path).await.unwrap();
    writer
        .call(Request::PromptSubmit {
            agent_id: "main".into(),
            text: "to everyone".into(),
            priority: Priority::Normal,
            request_id: None,
        })
        .await
        .unwrap();
    let last = s
        .rig
        .host
        .store()
        .read()
        .and_then(|rx| rx.last_seq("main"))
        .unwrap_or(0);
    let mut tasks = tokio::task::JoinSet::new();
    for (c, mut sub) in subs {
        tasks.spawn(async move {
            let _keep = c;
            let mut expect = 1;
            while expect <= last {
                match tokio::time::timeout(Duration::from_secs(20), sub.next()).await {
                    Ok(Some(SubscriptionItem::Event(e))) => {
                        assert_eq!(e.event_seq, expect, "gap or duplicate");
                        expect += 1;
                    }
                    other => panic!("subscriber stopped early: {other:?}"),
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_path_is_private_stale_sockets_are_replaced_and_others_refused() {
    let s = served().await;
    let mode = std::fs::metadata(&s.path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0);
    assert_eq!(mode, 0o600);
    // A second server on the same path is refused: the first answers.
    match socket::bind(&s.path).await {
        Err(socket::SocketError::AlreadyRunning { .. }) => {}
        other => panic!("expected AlreadyRunning, got {:?}", other.map(|_| ())),
    }
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;

    let dir = tempfile::tempdir().unwrap();
    // A stale socket (its listener is gone) is replaced.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    assert!(socket::bind(&stale).await.is_ok(), "stale socket replaced");
    // A regular file is never replaced.
    let file = dir.path().join("file.sock");
    std::fs::write(&file, "precious").unwrap();
    assert!(matches!(
        socket::bind(&file).await,
        Err(socket::SocketError::NotASocket { .. })
    ));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap_or_default(),
        "precious"
    );
    // A socket owned by another user is refused, never replaced.
    let theirs = dir.path().join("theirs.sock");
    drop(std::os::unix::net::UnixListener::bind(&theirs).unwrap());
    let c_path = std::ffi::CString::new(theirs.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: chown on a path we created; only meaningful when we may
    // (as root, which the test machine is); otherwise skip this check.
    let chowned = unsafe { libc::chown(c_path.as_ptr(), 12345, 12345) } == 0;
    if chowned {
        assert!(matches!(
            socket::bind(&theirs).await,
            Err(socket::SocketError::OtherUser { uid: 12345, .. })
        ));
        assert!(theirs.exists(), "their socket is left alone");
    }
    // Something that answers but is not Holon is refused.
    let foreign = dir.path().join("foreign.sock");
    let listener = tokio::net::UnixListener::bind(&foreign).unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        }
    });
    assert!(matches!(
        socket::bind(&foreign).await,
        Err(socket::SocketError::NotHolon { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_ids_are_refused_by_every_method_before_any_side_effect() {
    let s = served().await;
    let mut c = Raw::connect(&s.path).await;
    let outside = std::env::temp_dir().join(format!("holon-hostile-{}", std::process::id()));
    let outside_str = outside.display().to_string();
    let dotdot = format!("../../../../../../..{outside_str}");
    let long = "x".repeat(10_000);
    let hostile: Vec<&str> = vec![
        dotdot.as_str(),
        outside_str.as_str(),
        "a\u{0}b",
        long.as_str(),
        "",
        "..",
    ];
    let agents_dir = s.rig._dir.path().join("data").join("agents");
    let listing = || -> Vec<std::ffi::OsString> {
        let mut v: Vec<_> = std::fs::read_dir(&agents_dir)
            .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let before = listing();
    let mut id = 0;
    for method in holon::protocol::METHODS {
        if matches!(
            *method,
            "runtime.status"
                | "runtime.shutdown"
                | "runtime.policy"
                | "agents.list"
                | "mcp.list"
                | "store.backup"
                | "events.unsubscribe"
        ) {
            continue;
        }
        for h in &hostile {
            // A hostile agent id, then (for methods with one) a good agent
            // with a hostile task or work-item id.
            let shapes = [
                json!({"agent_id": h, "task_id": "task_1", "work_item_id": "wi_1",
                       "cmd": format!("touch {outside_str}-cmd")}),
                json!({"agent_id": "main", "task_id": h, "work_item_id": h, "cmd": "true"}),
            ];
            // events.subscribe takes only an agent id (a good one would
            // start a stream on this connection).
            let n = if *method == "events.subscribe" { 1 } else { 2 };
            for mut params in shapes.into_iter().take(n) {
                let extra = json!({
                    "text": "hi",
                    "objective": "write outside", "plan": "plan text",
                    "action": "pause", "mode": "info", "input": "x",
                });
                if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
                    p.extend(e.clone());
                }
                id += 1;
                let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                let v = c.ask(&line.to_string()).await;
                let uses_record_id = v.get("result").is_some();
                if params["agent_id"] == "main" && uses_record_id {
                    // The method takes no task or work-item id: fine.
                    continue;
                }
                assert_eq!(
                    code(&v),
                    -32602,
                    "{method} with {:?}: {v}",
                    &h.chars().take(30).collect::<String>()
                );
                assert_eq!(v["id"], json!(id));
            }
        }
    }
    assert!(!outside.exists(), "{} was created", outside.display());
    assert!(!std::path::Path::new(&format!("{outside_str}-cmd")).exists());
    assert_eq!(before, listing(), "no agent directory appeared");
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_ids_are_echoed_exactly_and_shutdown_is_said_not_just_eof() {
    let s = served().await;
    let mut c = Raw::connect(&s.path).await;
    for id in [
        "9007199254740993",
        "18446744073709551615",
        "123456789012345678901234567890",
        "-42",
    ] {
        c.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"runtime.status"}}"#
        ))
        .await;
        let line = match tokio::time::timeout(Duration::from_secs(10), c.lines.next_line()).await {
            Ok(Ok(Some(l))) => l,
            other => panic!("no answer: {other:?}"),
        };
        assert!(
            line.contains(&format!(r#""id":{id},"#)),
            "{id} echoed as {line}"
        );
    }
    // Shutdown: the client is told why before the connection closes.
    let _ = s.stop.send(true);
    let v = c.recv().await.expect("closed without a word");
    assert_eq!(code(&v), -32005, "{v}");
    assert!(c.recv().await.is_none());
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_request_id_is_admitted_once() {
    let s = served().await;
    let mut c = Raw::connect(&s.path).await;
    let ask = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"prompt.submit","params":{{"agent_id":"main","text":"once","request_id":"req_retry_1"}}}}"#
        )
    };
    let first = c.ask(&ask(1)).await;
    let again = c.ask(&ask(2)).await;
    assert_eq!(
        first["result"]["message_id"], again["result"]["message_id"],
        "{again}"
    );
    let work = r#"{"jsonrpc":"2.0","id":3,"method":"work_item.create","params":{"agent_id":"main","objective":"one item","request_id":"req_work_1"}}"#;
    let w1 = c.ask(work).await;
    let w2 = c.ask(work).await;
    assert_eq!(w1["result"]["id"], w2["result"]["id"], "{w2}");
    // The operator's prompt, once. (The open work item brings the
    // runtime's own `system_tick` message, admitted whenever the agent
    // gets to it: counting every admission raced with that.)
    let admitted = super::runtime_core::events(&s.rig.host)
        .iter()
        .filter(|e| {
            e.kind == "message_admitted" && e.payload["message"]["kind"] == "operator_prompt"
        })
        .count();
    assert_eq!(admitted, 1);
    let created = super::runtime_core::events(&s.rig.host)
        .iter()
        .filter(|e| e.kind == "work_item_created")
        .count();
    assert_eq!(created, 1);
    // A different id is a different request.
    let other = c.ask(&ask(4).replace("req_retry_1", "req_retry_2")).await;
    assert_ne!(other["result"]["message_id"], first["result"]["message_id"]);
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

/// Raise this process's open-file limit to its hard limit (both ends of
/// every test connection live here).
fn raise_fd_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain get/setrlimit on this process.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
    }
    r.rlim_cur
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eleven_hundred_idle_connections_are_limited_and_timed_out() {
    if raise_fd_limit() < 2_600 {
        eprintln!("skipped: the open-file limit is below what 1,100 connections need");
        return;
    }
    let s = served_with(holon::app::control::ServerLimits {
        max_connections: 256,
        idle_timeout: Duration::from_secs(2),
        ..Default::default()
    })
    .await;
    let path = s.path.clone();

    let mut conns = Vec::new();
    for _ in 0..1_100 {
        conns.push(Raw::connect(&path).await);
    }
    // At the limit each newcomer takes the slot of the oldest connection
    // that follows nothing: the first 844 are told why and closed; the
    // last 256 stay.
    let mut evicted = 0;
    for c in conns.iter_mut().take(844) {
        let v = c.recv().await.expect("closed without a word");
        assert_eq!(code(&v), -32006, "{v}");
        assert!(c.recv().await.is_none(), "and closed");
        evicted += 1;
    }
    assert_eq!(evicted, 844);
    // The admitted ones are served.
    let v = conns[844]
        .ask(r#"{"jsonrpc":"2.0","id":1,"method":"runtime.status"}"#)
        .await;
    assert_eq!(v["result"]["holon"], "holon");
    // Idle ones are closed after the timeout, which frees the slots.
    let notice = tokio::time::timeout(Duration::from_secs(10), conns[845].recv());
    let v = notice
        .await
        .expect("an idle client was never closed")
        .expect("no notice");
    assert_eq!(code(&v), -32006, "{v}");
    assert!(conns[845].recv().await.is_none());
    drop(conns);
    let mut fresh = Raw::connect(&path).await;
    let v = fresh
        .ask(r#"{"jsonrpc":"2.0","id":2,"method":"runtime.status"}"#)
        .await;
    assert_eq!(v["result"]["holon"], "holon", "{v}");
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_see_the_answer_as_it_is_written_before_the_durable_round() {
    use holon::runtime::provider::scripted::Scripted;
    let reply = Scripted::Reply {
        text: "streamed answer".into(),
        tool_calls: vec![],
    };
    let rig = rig(vec![Scripted::Delay(
        Duration::from_millis(300),
        Box::new(reply),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.sock");
    let listener = socket::bind(&path).await.unwrap();
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let client: Arc<dyn RuntimeClient> = Arc::new(rig.host.clone());
    tokio::spawn(server::serve(listener, client, rx, Default::default()));

    let mut raw = Raw::connect(&path).await;
    let ok = raw
        .ask(r#"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"agent_id":"main","subscription":"s1"}}"#)
        .await;
    assert_eq!(ok["result"]["subscription"], "s1");
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"prompt.submit","params":{"agent_id":"main","text":"talk"}}"#)
        .await;
    let mut delta_at = None;
    let mut lines = 0;
    loop {
        let v = raw.recv().await.expect("closed");
        lines += 1;
        if v["id"] == 2 {
            assert!(v.get("result").is_some(), "{v}");
        }
        if v["method"] == "assistant.delta" {
            assert_eq!(v["params"]["subscription"], "s1");
            assert_eq!(v["params"]["text"], "streamed answer");
            delta_at.get_or_insert(lines);
        }
        if v["method"] == "event" && v["params"]["event"]["kind"] == "assistant_round_recorded" {
            let at = delta_at.expect("no delta before the durable round");
            assert!(at < lines);
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spliced_events_page_is_the_same_page() {
    let s = served().await;
    // Paused, so no turn appends events between the two pages compared.
    s.rig
        .host
        .control("main", holon::protocol::views::ControlAction::Pause)
        .await
        .unwrap();
    for i in 0..5 {
        s.rig
            .host
            .submit(super::runtime_core::prompt(
                &format!("p{i}"),
                Priority::Normal,
            ))
            .await
            .unwrap();
    }
    // The actor's own records of those admissions settle first.
    s.rig.host.until_idle().await;
    for (from, limit) in [(1, 3), (2, 500), (10_000, 10)] {
        let req = Request::EventsPage {
            agent_id: "main".into(),
            from_seq: from,
            limit,
            kind: None,
        };
        let typed = call_json(&s.rig.host, req.clone()).await.unwrap();
        let raw = s.rig.host.call_raw(req).await.unwrap();
        let spliced: Value = serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{e}: {raw}"));
        assert_eq!(spliced, typed, "from {from}, limit {limit}");
    }
    // And over the socket, an unknown agent is still an error.
    let mut raw = Raw::connect(&s.path).await;
    let v = raw
        .ask(r#"{"jsonrpc":"2.0","id":1,"method":"events.page","params":{"agent_id":"nobody"}}"#)
        .await;
    assert_eq!(code(&v), -32001, "{v}");
    let _ = s.stop.send(true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_client_closes_its_connection_and_its_subscriptions() {
    let s = served_with(holon::app::control::ServerLimits {
        max_connections: 1,
        ..Default::default()
    })
    .await;
    for round in 0..3 {
        // The only slot must come free once the previous client went away,
        // though its subscription is idle (it follows from past the end,
        // so no event ever reveals the closed peer): the server notices
        // the hang-up. Otherwise this client is turned away.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let c = loop {
            let c = SocketClient::connect(&s.path).await.unwrap();
            if c.call(Request::RuntimeStatus).await.is_ok() {
                break c;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: the server is still full of a dropped client"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let sub = c.subscribe("main", 1_000_000).await.unwrap();
        drop(sub);
        drop(c);
    }
    let _ = s.stop.send(true);
}

/// A client may pipeline: 300 prompts written at once on one connection
/// are all admitted, in the order sent (the queue's order), answered in
/// that order, and the connection keeps at most its window in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_admitted_and_answered_in_the_order_sent() {
    let s = served().await;
    s.rig
        .host
        .control("main", holon::protocol::views::ControlAction::Pause)
        .await
        .unwrap();
    let mut c = Raw::connect(&s.path).await;
    let mut burst = String::new();
    for i in 0..300 {
        burst.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"prompt.submit\",\"params\":{{\"agent_id\":\"main\",\"text\":\"p{i}\"}}}}\n"
        ));
    }
    c.write.write_all(burst.as_bytes()).await.unwrap();
    let mut seqs = Vec::new();
    for i in 0..300 {
        let v = c.recv().await.unwrap_or_else(|| panic!("closed at {i}"));
        assert_eq!(v["id"], json!(i), "replies in order");
        assert_eq!(v["result"]["queue_status"], "queued", "{v}");
        seqs.push(v["result"]["event_seq"].as_u64().unwrap_or(0));
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "admitted in order");
    let texts: Vec<String> = events(&s.rig.host)
        .iter()
        .filter(|e| e.kind == "message_admitted")
        .filter_map(|e| {
            e.payload["message"]["body"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    let sent: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
    assert_eq!(texts, sent);
    // A burst mixing prompts, a malformed line, a refused prompt and other
    // methods: every line answered, in order.
    let mixed = [
        r#"{"jsonrpc":"2.0","id":"a","method":"prompt.submit","params":{"agent_id":"main","text":"q1"}}"#,
        r#"{not json"#,
        r#"{"jsonrpc":"2.0","id":"b","method":"prompt.submit","params":{"agent_id":"main","text":"  "}}"#,
        r#"{"jsonrpc":"2.0","id":"c","method":"prompt.submit","params":{"agent_id":"ghost","text":"q2"}}"#,
        r#"{"jsonrpc":"2.0","id":"d","method":"prompt.submit","params":{"agent_id":"main","text":"q3"}}"#,
        r#"{"jsonrpc":"2.0","id":"e","method":"runtime.status"}"#,
    ];
    c.write
        .write_all(format!("{}\n", mixed.join("\n")).as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..mixed.len() {
        let v = c.recv().await.expect("closed");
        got.push((v["id"].clone(), code(&v)));
    }
    assert_eq!(
        got,
        vec![
            (json!("a"), 0),
            (Value::Null, -32700),
            (json!("b"), -32602),
            (json!("c"), -32001),
            (json!("d"), 0),
            (json!("e"), 0),
        ]
    );
    let _ = s.stop.send(true);
    s.rig.host.shutdown().await;
}

/// Only a socket is spoken to: a symlink at the socket path (to another
/// program's socket) gets nothing sent through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_socket_path_is_not_connected_to() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("foreign.sock");
    let listener = tokio::net::UnixListener::bind(&foreign).unwrap();
    let link = dir.path().join("control.sock");
    std::os::unix::fs::symlink(&foreign, &link).unwrap();
    assert!(matches!(
        socket::probe(&link).await,
        socket::Probe::NotHolon
    ));
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(
        accepted.is_err(),
        "something connected to the foreign socket"
    );
    assert!(socket::bind(&link).await.is_err(), "and it is not replaced");
}

/// A runtime that answers with an error (its store failing) is still the
/// runtime: probed as failing, reached by clients, never "not Holon".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_answering_with_an_error_is_still_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let id = serde_json::from_str::<Value>(&line).unwrap_or_default()["id"].clone();
                    let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32004, "message": "Previous I/O error occurred"}});
                    let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
                }
            });
        }
    });
    match socket::probe(&path).await {
        socket::Probe::Failing(message) => assert!(message.contains("I/O error"), "{message}"),
        other => panic!("probed as {other:?}"),
    }
    match socket::bind(&path).await {
        Err(e) => assert!(e.to_string().contains("answers with an error"), "{e}"),
        Ok(_) => panic!("a failing runtime's socket was replaced"),
    }
}

/// At the connection cap a new client takes the slot of the oldest one
/// that follows nothing (pinging does not keep it); followers keep theirs,
/// and when every slot follows an agent the refusal names the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_clients_give_way_at_the_cap_and_followers_keep_their_slots() {
    let s = served_with(holon::app::control::ServerLimits {
        max_connections: 2,
        ..Default::default()
    })
    .await;
    let mut follower = Raw::connect(&s.path).await;
    let sub = follower
        .ask(r#"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"agent_id":"main","from_seq":1000000}}"#)
        .await;
    assert!(sub["error"].is_null(), "{sub}");
    let mut pinger = Raw::connect(&s.path).await;
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"runtime.status"}"#;
    assert_eq!(pinger.ask(ping).await["result"]["holon"], "holon");
    // A third client gets through: the pinger gives way, told why.
    let cli = SocketClient::connect(&s.path).await.unwrap();
    assert!(cli.call(Request::RuntimeStatus).await.is_ok());
    let told = pinger.recv().await.expect("the pinger was told");
    assert!(
        told["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("connection limit"),
        "{told}"
    );
    assert!(pinger.recv().await.is_none(), "and closed");
    // The follower still follows (its connection answers).
    assert_eq!(follower.ask(ping).await["result"]["holon"], "holon");
    // Every slot following: the next one is refused with the limit named.
    let _sub = cli.subscribe("main", 1_000_000).await.unwrap();
    let mut late = Raw::connect(&s.path).await;
    let refused = late.recv().await.expect("a refusal");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("maximum of 2 control connections"),
        "{refused}"
    );
    let _ = s.stop.send(true);
}
