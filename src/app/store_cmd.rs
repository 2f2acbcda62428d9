//! `holon store`: compact, verify and measure the store file. Each needs
//! the file to itself, so a running runtime is named and nothing waits.

use std::process::ExitCode;

use super::commands::Out;
use super::Context;

/// `holon store compact`: shrink the store file. A running runtime holds
/// the file, so it is refused with what to do instead of waiting.
pub async fn store_compact(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    if super::daemon::connect(ctx).await.is_some() {
        anyhow::bail!(
            "a runtime is running on this store; stop it first (`holon daemon stop`), then compact"
        );
    }
    let path = ctx.paths.store_file();
    let report =
        tokio::task::spawn_blocking(move || crate::store::compact::compact(&path)).await??;
    let mut out = Out::new();
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["bytes_reclaimed"] = report.reclaimed().into();
        out.line(&serde_json::to_string_pretty(&v)?)?;
    } else {
        out.line(&format!(
            "compacted {}: {} -> {} bytes ({} reclaimed, {} passes)",
            report.path.display(),
            report.bytes_before,
            report.bytes_after,
            report.reclaimed(),
            report.passes
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `holon store verify [PATH]`: the storage engine's integrity check and
/// Holon's own (ledgers without gaps, every event decoding); non-zero exit
/// naming what is wrong.
pub async fn store_verify(
    ctx: &Context,
    path: Option<std::path::PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if path.is_none() && super::daemon::connect(ctx).await.is_some() {
        anyhow::bail!(
            "a runtime is running on this store; stop it first (`holon daemon stop`), then verify"
        );
    }
    let path = path.unwrap_or_else(|| ctx.paths.store_file());
    if !path.is_file() {
        anyhow::bail!("{} is not a store file", path.display());
    }
    let report = tokio::task::spawn_blocking(move || crate::store::verify::verify(&path)).await??;
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&report)?)?;
    } else {
        out.line(&format!(
            "{}: {} agents, {} events: {}",
            report.path.display(),
            report.agents,
            report.events,
            if report.sound() { "sound" } else { "PROBLEMS" }
        ))?;
        for p in &report.problems {
            out.line(&format!("  {p}"))?;
        }
    }
    Ok(match report.sound() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

/// `holon store stats`: the store's tables and their sizes.
pub async fn store_stats(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    if super::daemon::connect(ctx).await.is_some() {
        anyhow::bail!(
            "a runtime is running on this store; stop it first (`holon daemon stop`), then measure"
        );
    }
    let path = ctx.paths.store_file();
    let stats = tokio::task::spawn_blocking(move || crate::store::compact::stats(&path)).await??;
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&stats)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    out.line(&format!(
        "{}: {} bytes on disk",
        stats.path.display(),
        stats.file_bytes
    ))?;
    out.line(&format!(
        "{:<22} {:>9} {:>12} {:>10} {:>11}",
        "TABLE", "ROWS", "STORED", "B-TREE", "UNUSED"
    ))?;
    for t in &stats.tables {
        out.line(&format!(
            "{:<22} {:>9} {:>12} {:>10} {:>11}",
            t.table, t.rows, t.stored_bytes, t.metadata_bytes, t.fragmented_bytes
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
