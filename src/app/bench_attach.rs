//! `holon debug bench attach [--turns N]`: the memory of a console as
//! users run it. A daemon (`holon daemon run`, its own process), a stub
//! provider on 127.0.0.1 that answers every prompt with ~1 KB of markdown
//! (a heading, prose, a list, a code block), and `holon attach` in a
//! pseudo-terminal of 120x40, a process of its own following the agent
//! over the socket and drawing every frame into the terminal. Prompts go
//! in over the socket one at a time (the next once the last is taken up);
//! the console's RSS (VmRSS of the attach process) is printed as the turns
//! add up (default 2,000).

use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bench_scale::Daemon;
use crate::model::message::Priority;
use crate::protocol::client::call_json;
use crate::protocol::{Request, RuntimeClient};
use crate::ui::client::SocketClient;

const AGENT: &str = "bench";

/// An answer of ~1 KB of markdown, streamed in pieces.
fn answer_pieces() -> Vec<String> {
    let mut pieces = vec!["## What I found\n\n".to_owned()];
    pieces.push(
        "The failing test reads the **config** before the workspace is bound, so the \
         default path wins and the fixture is never loaded. Moving the read after \
         `bind_here` fixes it; nothing else depends on the order.\n\n"
            .to_owned(),
    );
    for i in 0..6 {
        pieces.push(format!(
            "- step {i}: checked `src/app/config.rs` and the *fixture* loader, {i}.4 s\n"
        ));
    }
    pieces.push(
        "\n```rust\nfn load(path: &Path) -> Result<Config> {\n    let text = \
         std::fs::read_to_string(path)?;\n    toml::from_str(&text).map_err(Into::into)\n}\n```\n\n"
            .to_owned(),
    );
    pieces.push("All tests pass now; the change is two lines.".to_owned());
    pieces
}

/// `holon attach` on `home` in a new pseudo-terminal, its output read
/// (and the terminal's device-attributes query answered) on a thread.
fn attach(home: &Path) -> anyhow::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    // 120x40, as a held command's terminal.
    let pty = crate::runtime::command_tasks::terminal::Pty::open()?;
    let (master, slave) = match pty.terminal {
        Some(t) => (pty.controller, t),
        None => anyhow::bail!("the pseudo-terminal has no terminal side"),
    };
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("attach")
        .env("HOLON_HOME", home)
        .env("TERM", "xterm-256color")
        .env_remove("HOLON_LOG")
        .env_remove("NO_COLOR")
        .stdin(slave.try_clone()?)
        .stdout(slave.try_clone()?)
        .stderr(slave);
    // SAFETY: only async-signal-safe calls between fork and exec: a new
    // session whose controlling terminal is the pty.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    let mut reader = std::fs::File::from(master.try_clone()?);
    let mut writer = std::fs::File::from(master);
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            if buf[..n].windows(3).any(|w| w == b"\x1b[c") {
                let _ = writer.write_all(b"\x1b[?62;22c");
            }
        }
    });
    Ok(child)
}

/// The console this bench started, ended when the bench ends however it
/// ends (an error too).
struct Attached(std::process::Child);

impl Drop for Attached {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // SAFETY: ending the console this bench started, which has not
            // been reaped (so its pid is still its own).
            unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
}

async fn status(client: &SocketClient) -> anyhow::Result<(u64, u64)> {
    let s = call_json(
        client,
        Request::AgentStatus {
            agent_id: AGENT.into(),
        },
    )
    .await?;
    Ok((
        s["queue_depth"].as_u64().unwrap_or(0),
        s["last_event_seq"].as_u64().unwrap_or(0),
    ))
}

/// Wait until every prompt sent has been answered and the ledger has
/// stopped growing (the turn's last events written), then give the
/// console a moment to draw them.
async fn settle(client: &SocketClient, served: &AtomicU64, sent: u64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = (u64::MAX, u64::MAX);
    loop {
        let now = status(client).await?;
        if served.load(Ordering::Relaxed) >= sent && now.0 == 0 && now == last {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the turns did not finish");
        last = now;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(())
}

pub(super) async fn run(dir: &Path, turns: u64) -> anyhow::Result<()> {
    let served = Arc::new(AtomicU64::new(0));
    let stub =
        super::bench_crowd::counting_stub(answer_pieces(), Duration::ZERO, Arc::clone(&served))
            .await;
    let home = dir.join("attach-home");
    let config = home.join("config");
    std::fs::create_dir_all(&config)?;
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[runtime]\ndefault_agent = \"{AGENT}\"\n\n[model]\ndefault = \"stub/answer\"\n\n\
             [providers.stub]\nbase_url = \"{}/v1\"\nwire = \"openai_chat\"\n\
             streaming = \"on\"\napi_key_env = \"ATTACH_KEY\"\n",
            stub.base()
        ),
    )?;
    let (daemon, _) = Daemon::start_with(&home, false, &[("ATTACH_KEY", "sk-attach")]).await?;
    let socket = super::paths::Paths::under(&home).socket_path();
    let client = SocketClient::connect(&socket).await?;
    let mut console = Attached(attach(&home)?);
    let pid = console.0.id().to_string();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = || super::bench_socket::rss_kib(&pid) as f64 / 1024.0;
    println!(
        "console.attach    `holon attach` at 120x40 before any turn: RSS {:.1} MiB",
        rss()
    );
    let marks: Vec<u64> = [100, 500, 1_000, 2_000, 5_000, 10_000]
        .into_iter()
        .filter(|m| *m < turns)
        .chain([turns])
        .collect();
    let started = Instant::now();
    let mut sent = 0;
    for mark in marks {
        while sent < mark {
            client
                .call(Request::PromptSubmit {
                    agent_id: AGENT.into(),
                    text: format!("look at the failing test, round {sent}"),
                    priority: Priority::Normal,
                    request_id: None,
                })
                .await?;
            sent += 1;
            // One turn a prompt: the next goes in once this one is taken up.
            let deadline = Instant::now() + Duration::from_secs(60);
            while status(&client).await?.0 > 0 {
                anyhow::ensure!(Instant::now() < deadline, "a prompt was never taken up");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        settle(&client, &served, sent).await?;
        anyhow::ensure!(
            console.0.try_wait()?.is_none(),
            "the console ended during the bench"
        );
        let now = rss();
        println!(
            "console.attach      after {mark} turns of ~1 KB answers: RSS {now:.1} MiB ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }
    drop(console);
    daemon.stop();
    Ok(())
}
