//! `holon daemon run`: the runtime in the foreground of this process until
//! SIGINT or SIGTERM, then a clean shutdown (actors stop after their current
//! step, the store is closed; nothing acknowledged is lost). The control
//! socket, `--detach` and `holon attach` build on this mode.

use std::process::ExitCode;

use tokio::signal::unix::{signal, SignalKind};

use super::providers::provider_source;
use super::Context;
use crate::runtime::host::{HostConfig, RuntimeHost};

pub async fn run(ctx: &Context) -> anyhow::Result<ExitCode> {
    let store = ctx.open_store().await?;
    let config = HostConfig::new(ctx.paths.data_dir.clone(), provider_source(&ctx.config));
    let host = RuntimeHost::start(store, config).await?;
    tracing::info!(home = ?ctx.paths.home, "runtime started");
    eprintln!(
        "holon runtime running (store {}); Ctrl+C stops it",
        ctx.paths.store_file().display()
    );
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
    tracing::info!("shutdown requested");
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    tracing::info!("runtime stopped");
    Ok(ExitCode::SUCCESS)
}
