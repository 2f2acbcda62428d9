//! Tests of `console.rs`: the real loop on a `TestBackend`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;

use super::*;
use crate::runtime::host::{HostConfig, RuntimeHost};
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
        client,
        endpoint: None,
        host: Some(host.clone()),
        viewed: "main".into(),
        tx,
        client_tx,
        follower,
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
