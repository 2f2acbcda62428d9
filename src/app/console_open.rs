//! How a console opens and what it says when it closes: `holon` attaches
//! to the runtime that serves this home, or runs one embedded in this
//! process (serving the control socket and the HTTP listener while the
//! console runs, and handing over to a daemon on `/detach`); `holon
//! attach` opens one on any endpoint. The loop itself is `console.rs`.

use std::process::ExitCode;
use std::sync::Arc;

use super::console::{run, BindHere, Exit, Screen, Target};
use super::control::socket::bind;
use super::Context;
use crate::protocol::RuntimeClient;
use crate::ui::ws::Endpoint;

/// `holon` with no command: attach to a running runtime, or run one
/// embedded in this process.
pub async fn open(ctx: &Context, screen: Screen) -> anyhow::Result<ExitCode> {
    if let Some(client) = super::daemon::connect(ctx).await {
        let endpoint = Endpoint::Unix(client.path().to_path_buf());
        let client: Arc<dyn RuntimeClient> = Arc::new(client);
        let at = endpoint.describe();
        let target = Target::Attached { client, endpoint };
        let agent = ctx.config.default_agent.clone();
        let exit = run(ctx, target, agent, screen, BindHere::Yes).await?;
        return Ok(closed_attached(exit, &at, false));
    }
    embedded(ctx, screen).await
}

async fn embedded(ctx: &Context, screen: Screen) -> anyhow::Result<ExitCode> {
    let socket_path = ctx.paths.socket_path();
    let local = super::cli::AccessArgs::default();
    let (http_options, fingerprint) = super::access::resolve(ctx, &local)?;
    let listener = bind(&socket_path).await?;
    let host =
        super::run::start_serving_host(ctx, "embedded", &socket_path, Some(fingerprint)).await?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let client: Arc<dyn RuntimeClient> = Arc::new(host.clone());
    let server = tokio::spawn(super::control::server::serve(
        listener,
        Arc::clone(&client),
        stop_rx.clone(),
        ctx.config.server_limits,
    ));
    let http = super::http::start(
        &host,
        Arc::clone(&client),
        http_options,
        stop_rx,
        ctx.config.server_limits,
    )
    .await;
    let exit = run(
        ctx,
        Target::Embedded {
            client,
            host: host.clone(),
        },
        ctx.config.default_agent.clone(),
        screen,
        BindHere::Yes,
    )
    .await;
    // Leave cleanly whatever happened: stop serving, stop the actors,
    // release the store (nothing durable is lost).
    let _ = stop_tx.send(true);
    let _ = server.await;
    if let Some(http) = http {
        let _ = http.await;
    }
    // Quitting stops every command (the viewed agent's turn was aborted
    // before, as its quit confirmed); detaching leaves the commands to the
    // daemon that takes over, which reattaches them. Other agents' turns,
    // which no one was asked about, replay at the next start.
    host.shutdown_with(matches!(exit, Ok(Exit::Detach))).await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    let _ = std::fs::remove_file(&socket_path);
    match exit? {
        Exit::Quit | Exit::QuitUnreached | Exit::Lost => Ok(ExitCode::SUCCESS),
        Exit::Detach => {
            // The store and socket are released: hand over to a daemon.
            let code = super::daemon::detach(ctx, &local).await?;
            say!("the runtime keeps running in the background; this console has detached");
            Ok(code)
        }
    }
}

/// `holon attach [ws://HOST:PORT | ssh://HOST] [--socket PATH]`.
pub async fn attach_console(
    ctx: &Context,
    endpoint: Endpoint,
    agent: Option<String>,
    screen: Screen,
) -> anyhow::Result<ExitCode> {
    let client = endpoint
        .connect()
        .await
        .map_err(|e| anyhow::anyhow!(endpoint.unreachable(&e)))?;
    let agent = agent.unwrap_or_else(|| ctx.config.default_agent.clone());
    let client: Arc<dyn RuntimeClient> = Arc::new(client);
    let at = endpoint.describe();
    let remote = endpoint.remote();
    let target = Target::Attached { client, endpoint };
    let exit = run(ctx, target, agent, screen, BindHere::No).await?;
    Ok(closed_attached(exit, &at, remote))
}

/// What an attached console says as it closes: closing it stops nothing,
/// so it says so and how to come back; one that had lost its link says
/// that instead; one gone without the operator's word says nothing.
fn closed_attached(exit: Exit, at: &str, remote: bool) -> ExitCode {
    match exit {
        Exit::Quit | Exit::Detach => left_running(at, remote),
        Exit::QuitUnreached => left_unreached(at, remote),
        Exit::Lost => {}
    }
    ExitCode::SUCCESS
}

/// The runtime goes on: how to come back (naming a remote runtime, which
/// plain `holon attach` would not).
fn left_running(at: &str, remote: bool) {
    let again = match remote {
        true => format!("holon attach {at}"),
        false => "holon attach".to_owned(),
    };
    say!(
        "closed the console; the runtime on {at} keeps running, its agents' work goes on \
         (`{again}` opens it again)"
    );
}

/// Closed while the link to the runtime was lost: whether it runs is not
/// known, so say what was seen and how to find out.
fn left_unreached(at: &str, remote: bool) {
    let next = match remote {
        true => format!("`holon attach {at}` opens it again when it runs"),
        false => {
            "`holon daemon status` tells whether it runs; `holon attach` opens it again".to_owned()
        }
    };
    say!("closed the console, which had lost its link to the runtime on {at} ({next})");
}
