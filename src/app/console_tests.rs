//! Tests of `console.rs`: the real loop on a `TestBackend`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;

use super::*;
use crate::runtime::handle::{HostConfig, RuntimeHost};
use crate::runtime::provider::scripted::{Scripted, ScriptedProvider};
use crate::runtime::provider::Provider;
use crate::store::{Store, StoreOptions};

fn key(code: KeyCode) -> std::io::Result<Event> {
    Ok(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(text: &str) -> Vec<std::io::Result<Event>> {
    let mut keys: Vec<_> = text.chars().map(|c| key(KeyCode::Char(c))).collect();
    keys.push(key(KeyCode::Enter));
    keys
}

/// The real loop, driven without a terminal: keys from a channel, a
/// `TestBackend` to draw on, an embedded runtime to talk to. A typed
/// prompt reaches the runtime through the loop and its turn runs;
/// `/quit` ends the loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_runs_on_a_test_backend_and_a_channel_of_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("holon.redb"), StoreOptions::default()).unwrap();
    crate::runtime::admission::ensure_agent(&store, "main")
        .await
        .unwrap();
    let provider: Arc<dyn Provider> =
        Arc::new(ScriptedProvider::new(vec![Scripted::text("hello back")]));
    let config = HostConfig::new(
        dir.path().join("data"),
        Arc::new(move |_| Arc::clone(&provider)),
    );
    let host = RuntimeHost::start(store, config).await.unwrap();
    let client: Arc<dyn RuntimeClient> = Arc::new(host.clone());

    let (tx, rx) = mpsc::channel::<Msg>(64);
    let (client_tx, client_rx) = mpsc::channel(1);
    let (follow_tx, follow_rx) = mpsc::channel(64);
    let follower = tokio::spawn(follow_agent(
        Arc::clone(&client),
        "main".into(),
        None,
        tx.clone(),
    ));
    let state = State::new(Init {
        agent_id: "main".into(),
        connection: Connection::Embedded,
        width: 80,
        height: 24,
        notify: Default::default(),
        no_color: true,
    });
    let mut console = ConsoleLoop {
        state,
        terminal: Terminal::new(TestBackend::new(80, 24)).unwrap(),
        out: Box::new(std::io::sink()),
        synchronized: false,
        clients: tokio::sync::watch::Sender::new(Arc::clone(&client)),
        client,
        endpoint: None,
        host: Some(host.clone()),
        runtimes: None,
        viewed: "main".into(),
        tx,
        client_tx,
        follower,
        follow_tx,
        follow_rx,
        generation: 0,
        reconnect_attempt: 0,
        pacer: FramePacer::default(),
        history_dir: dir.path().join("history"),
        notify_method: Default::default(),
        editing: None,
        screen: crate::app::console::Screen::Alternate,
    };
    let (keys, input) = mpsc::unbounded_channel::<std::io::Result<Event>>();
    let mut committed = host.store().subscribe();
    let driver = async {
        for k in typed("say hi") {
            keys.send(k).unwrap();
        }
        // The typed prompt reaches the runtime, and its turn answers.
        let answered = async {
            let mut admitted = false;
            loop {
                let e = committed.recv().await.unwrap();
                let text = e.payload.to_string();
                admitted |= e.kind == "message_admitted" && text.contains("say hi");
                if admitted && e.kind == "brief_created" && text.contains("hello back") {
                    return;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(15), answered)
            .await
            .expect("the typed prompt was not answered");
        // The console may not have seen the turn end yet (its own
        // follower delivers it): then it asks to confirm, and the
        // second /quit confirms. If it quit at once, the loop is gone
        // and the second goes nowhere.
        for k in typed("/quit").into_iter().chain(typed("/quit")) {
            let _ = keys.send(k);
        }
    };
    let looping = tokio::time::timeout(
        Duration::from_secs(30),
        console.run(tokio_stream_of(input), None, rx, client_rx),
    );
    let (exit, ()) = tokio::join!(looping, driver);
    let exit = exit
        .expect("/quit did not end the loop")
        .map_err(|e| e.to_string());
    let briefs = host
        .store()
        .read()
        .unwrap()
        .events("main", 1, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "brief_created")
        .count();
    assert_eq!(briefs, 1, "the prompt's turn ran");
    assert_eq!(exit, Ok(Exit::Quit));
    console.follower.abort();
    console.terminal.draw(|f| view(&console.state, f)).unwrap();
    let screen: String = console
        .terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(screen.contains("say hi"), "{screen}");
    // What was sent is kept for the next session.
    let kept = crate::app::prompt_history::load(&dir.path().join("history"), "main");
    assert_eq!(kept.first().map(String::as_str), Some("say hi"), "{kept:?}");
    host.shutdown().await;
}

/// An unbounded receiver as a `Stream` (what `EventStream` is for the
/// real terminal).
fn tokio_stream_of<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<T>,
) -> impl Stream<Item = T> + Unpin {
    Box::pin(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

/// The `@` picker's walk: files relative to the root, `.gitignore`d and
/// hidden ones left out.
#[test]
fn the_file_walk_honours_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    for f in [
        "src/main.rs",
        "target/debug/app",
        ".env",
        "README.md",
        ".gitignore",
    ] {
        std::fs::write(root.join(f), "x").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    let index = walk_files(&root.display().to_string());
    let mut files = index.files.clone();
    files.sort();
    assert_eq!(files, ["README.md", "src/main.rs"]);
    assert!(!index.truncated);
}

/// The clipboard write is one OSC 52 sequence, base64 inside, so text
/// with a BEL or an escape of its own cannot end it early or reach the
/// terminal.
#[test]
fn a_copy_is_one_osc52_sequence_of_base64() {
    use base64::Engine as _;
    let text = "line one\n\x07\x1b]0;title\x07 and ünïcode";
    let bytes = super::osc52(text);
    let s = String::from_utf8(bytes).unwrap();
    let body = s
        .strip_prefix("\x1b]52;c;")
        .and_then(|b| b.strip_suffix('\x07'))
        .unwrap_or_else(|| panic!("not an OSC 52 sequence: {s:?}"));
    assert!(!body.contains('\x07') && !body.contains('\x1b'));
    let back = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    assert_eq!(String::from_utf8(back).unwrap(), text);
}

/// A client that records the prompts it is sent and, while `cut`, fails
/// them as a dropped link would.
struct Recording {
    cut: bool,
    sent: Arc<std::sync::Mutex<Vec<Request>>>,
}

impl RuntimeClient for Recording {
    fn call(
        &self,
        request: Request,
    ) -> crate::protocol::BoxFuture<'_, Result<crate::protocol::Response, crate::protocol::ApiError>>
    {
        self.sent.lock().unwrap().push(request);
        let cut = self.cut;
        Box::pin(async move {
            match cut {
                true => Err(crate::protocol::ApiError::transport("the link dropped")),
                false => Err(crate::protocol::ApiError::new(
                    crate::protocol::ErrorCode::InvalidRequest,
                    "answered",
                )),
            }
        })
    }

    fn subscribe(
        &self,
        _agent_id: &str,
        _from_seq: u64,
    ) -> crate::protocol::BoxFuture<
        '_,
        Result<crate::protocol::Subscription, crate::protocol::ApiError>,
    > {
        Box::pin(async { Err(crate::protocol::ApiError::transport("none")) })
    }

    fn transport(&self) -> &'static str {
        "attached"
    }
}

/// A prompt whose answer the link lost is sent again over the next
/// connection with the same request id (the runtime admits it once);
/// other requests are not sent twice.
#[tokio::test]
async fn a_prompt_lost_with_the_link_is_sent_again_with_its_request_id() {
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let cut: Arc<dyn RuntimeClient> = Arc::new(Recording {
        cut: true,
        sent: Arc::clone(&sent),
    });
    let (clients, rx) = tokio::sync::watch::channel(Arc::clone(&cut));
    let prompt = Request::PromptSubmit {
        agent_id: "main".into(),
        text: "once".into(),
        priority: crate::model::message::Priority::Normal,
        request_id: None,
    };
    let call = tokio::spawn(call_once(rx, prompt));
    while sent.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    clients.send_replace(Arc::new(Recording {
        cut: false,
        sent: Arc::clone(&sent),
    }));
    let answer = call.await.unwrap();
    assert_eq!(answer.err().map(|e| e.message), Some("answered".into()));
    let ids: Vec<Option<String>> = sent
        .lock()
        .unwrap()
        .iter()
        .map(|r| match r {
            Request::PromptSubmit { request_id, .. } => request_id.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids[0].is_some() && ids[0] == ids[1], "{ids:?}");

    // A status request lost with the link is reported, not repeated.
    sent.lock().unwrap().clear();
    let (_clients, rx) = tokio::sync::watch::channel(Arc::clone(&cut));
    let lost = call_once(rx, Request::RuntimeStatus).await;
    assert!(lost.is_err());
    assert_eq!(sent.lock().unwrap().len(), 1);
}
