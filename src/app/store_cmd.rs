//! `holon store`: back up, compact, verify and measure the store file.
//! A backup goes through a running runtime (it copies a read snapshot);
//! the others need the file to itself, so a running runtime is named and
//! nothing waits.

use std::process::ExitCode;

use super::commands::Out;
use super::Context;
use crate::ui::present::counted;

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
            "compacted {}: {} -> {} bytes ({} reclaimed, {})",
            report.path.display(),
            report.bytes_before,
            report.bytes_after,
            report.reclaimed(),
            match report.passes {
                1 => "1 pass".to_owned(),
                n => format!("{n} passes"),
            }
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `holon store backup [PATH]`: through the runtime when one runs (a
/// rotated copy into `backups/`; with PATH, a copy outside the rotation
/// that is then moved to PATH, so only PATH holds it), else by opening the
/// store here.
pub async fn store_backup(
    ctx: &Context,
    dest: Option<std::path::PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use crate::protocol::{Request, RuntimeClient};
    if let Some(d) = &dest {
        if std::fs::symlink_metadata(d).is_ok() {
            anyhow::bail!(
                "{} exists; a backup never replaces a file, choose a new path",
                d.display()
            );
        }
        let dir = d.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = dir.filter(|dir| !dir.is_dir()) {
            anyhow::bail!("{} is not a directory", dir.display());
        }
    }
    let mut report = match super::daemon::connect(ctx).await {
        Some(client) => {
            let copy = dest.is_some();
            let written = match client.call(Request::StoreBackup { copy }).await {
                // A runtime from before copies were asked for: its rotated
                // copy is put at PATH too, as it was then.
                Err(e) if copy && e.code == crate::protocol::ErrorCode::InvalidParams => (
                    client.call(Request::StoreBackup { copy: false }).await?,
                    false,
                ),
                other => (other?, copy),
            };
            let (written, moved) = written;
            let mut report: crate::model::backup::BackupReport = written.take()?;
            if let Some(d) = &dest {
                let (d, from) = (d.clone(), report.path.clone());
                tokio::task::spawn_blocking(move || match moved {
                    true => move_into_place(&from, &d),
                    false => Ok(crate::store::files::place_new(&from, &d)?),
                })
                .await??;
                report.path = dest.clone().unwrap_or_default();
            }
            report
        }
        None => {
            let store = ctx.open_store().await?;
            let keep = ctx.config.store_backup_keep;
            let for_copy = store.clone();
            let written = tokio::task::spawn_blocking(move || match dest {
                Some(d) => for_copy.backup(&d),
                None => for_copy.backup_rotated(keep),
            })
            .await?;
            store.close().await?;
            written?
        }
    };
    if report.path.is_relative() {
        if let Ok(cwd) = std::env::current_dir() {
            report.path = cwd.join(&report.path);
        }
    }
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&report)?)?;
    } else {
        out.line(&format!(
            "backed up to {}: {}, {}, {} bytes in {} ms",
            report.path.display(),
            counted(report.tables as u64, "table", "tables"),
            counted(report.rows as u64, "row", "rows"),
            report.bytes,
            report.millis
        ))?;
        for old in &report.removed {
            out.line(&format!("  removed the older backup {}", old.display()))?;
        }
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
    let given = path.is_some();
    let path = path.unwrap_or_else(|| ctx.paths.store_file());
    if !path.exists() {
        match given {
            true => anyhow::bail!("no file at {}", path.display()),
            false => anyhow::bail!(
                "no store at {} yet: Holon makes it on first use (`holon status`, say)",
                path.display()
            ),
        }
    }
    if !path.is_file() {
        anyhow::bail!("{} is not a store file", path.display());
    }
    let report = tokio::task::spawn_blocking(move || crate::store::verify::verify(&path)).await??;
    let steps = match report.sound() {
        true => Vec::new(),
        false => next_steps(&report.path),
    };
    let mut out = Out::new();
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["next_steps"] = serde_json::json!(steps);
        out.line(&serde_json::to_string_pretty(&v)?)?;
    } else {
        out.line(&format!(
            "{}: {}, {}: {}",
            report.path.display(),
            counted(report.agents, "agent", "agents"),
            counted(report.events, "event", "events"),
            if report.sound() { "sound" } else { "PROBLEMS" }
        ))?;
        for p in &report.problems {
            out.line(&format!("  {p}"))?;
        }
        for n in &report.notes {
            out.line(&format!("  note: {n}"))?;
        }
        if !steps.is_empty() {
            out.line("next steps, in order:")?;
            for (i, step) in steps.iter().enumerate() {
                out.line(&format!("  {}. {step}", i + 1))?;
            }
        }
    }
    Ok(match report.sound() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

/// What `holon store salvage` made: the copy's report, the losses it
/// recorded per agent, and what verifying the new store found.
pub(crate) struct Salvaged {
    pub report: crate::store::salvage::SalvageReport,
    pub lost: Vec<(String, crate::model::retention::HistoryLost)>,
    pub check: crate::store::verify::VerifyReport,
}

/// Salvage BROKEN into a new store at OUT, record what was lost, rebuild
/// the indexes and verify the result: the whole of `holon store salvage`
/// but its printing.
pub(crate) async fn salvage_and_repair(
    broken: &std::path::Path,
    out: &std::path::Path,
) -> anyhow::Result<Salvaged> {
    use crate::store::{Store, StoreOptions};
    let (from, to) = (broken.to_path_buf(), out.to_path_buf());
    let salvaged = tokio::task::spawn_blocking(move || {
        crate::store::salvage::salvage(&from, &to, &crate::runtime::repair::classify_record)
    })
    .await?;
    let mut report = match salvaged {
        Ok(r) => r,
        // Nothing could be read: say what was tried, and point at what is
        // left (a backup), never at salvage again.
        Err(crate::store::StoreError::Corrupt { detail, .. }) => {
            let restore = next_steps(broken).pop().unwrap_or_default();
            anyhow::bail!(
                "salvage read nothing from {}: it tried the file as it is, a repaired copy of \
                 it, each table of it on its own and every page of it ({detail}); nothing was \
                 written to {}. What is left: {restore}",
                broken.display(),
                out.display()
            );
        }
        Err(e) => return Err(e.into()),
    };
    let store = Store::open(out, StoreOptions::default())?;
    // What could not be read back is recorded as lost (and queue entries
    // left pointing at nothing dropped), so the new store verifies sound
    // with its losses known.
    let source = format!("salvage of {}", broken.display());
    let lost = crate::runtime::repair::record_losses(&store, &source).await;
    let rebuilt = crate::runtime::repair::rebuild_indexes(&store).await;
    store.close().await?;
    match rebuilt {
        Ok(r) => {
            report.indexes_rebuilt = r.changed;
            report.problems.extend(r.problems);
        }
        Err(e) => report
            .problems
            .push(format!("the indexes could not be rebuilt: {e}")),
    }
    let lost = match lost {
        Ok(l) => l,
        Err(e) => {
            report
                .problems
                .push(format!("the losses could not be recorded: {e}"));
            Vec::new()
        }
    };
    let to = out.to_path_buf();
    let check = tokio::task::spawn_blocking(move || crate::store::verify::verify(&to)).await??;
    report.problems.extend(check.problems.iter().cloned());
    Ok(Salvaged {
        report,
        lost,
        check,
    })
}

/// `holon store salvage BROKEN OUT`: what can be read of BROKEN, into a
/// new store at OUT with its indexes rebuilt and verified. Exits 0 when OUT
/// was written (the report says what was lost), non-zero when nothing
/// could be.
pub async fn store_salvage(
    broken: &std::path::Path,
    out: &std::path::Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if !broken.is_file() {
        anyhow::bail!("{} is not a file", broken.display());
    }
    let Salvaged {
        report,
        lost,
        check,
    } = salvage_and_repair(broken, out).await?;
    let mut o = Out::new();
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["complete"] = report.complete().into();
        v["lost"] = serde_json::json!(lost
            .iter()
            .map(|(agent, l)| serde_json::json!({"agent_id": agent, "lost": l}))
            .collect::<Vec<_>>());
        v["agents"] = check.agents.into();
        v["events"] = check.events.into();
        o.line(&serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    o.line(&format!(
        "salvaged {} of {} into {}: {}, {}{}",
        counted(report.rows(), "row", "rows"),
        report.source.display(),
        report.out.display(),
        counted(check.agents, "agent", "agents"),
        counted(check.events, "event", "events"),
        if report.repaired_copy {
            " (the source needed a repair, done on a copy of it)"
        } else {
            ""
        }
    ))?;
    match &report.unreadable_tree {
        Some(why) => {
            o.line(&format!(
                "  the file's tree could not be read ({why}): these rows were found on its pages"
            ))?;
            for t in report.tables.iter().filter(|t| t.rows > 0) {
                o.line(&format!(
                    "  {}: {}",
                    t.table,
                    counted(t.rows, "row", "rows")
                ))?;
            }
        }
        None => {
            for t in report.tables.iter().filter(|t| !t.complete()) {
                let of = t.expected.map(|n| format!(" of {n}")).unwrap_or_default();
                let why = t.problem.as_deref().unwrap_or("rows missing");
                let pages = match t.scanned {
                    0 => String::new(),
                    n => format!(", {n} of them found on the file's pages"),
                };
                o.line(&format!(
                    "  lost from {}: kept {}{of} rows{pages} ({why})",
                    t.table, t.rows
                ))?;
            }
        }
    }
    for (agent, l) in &lost {
        o.line(&format!(
            "  recorded as lost for {agent}: {}{}",
            counted(l.events(), "event", "events"),
            match l.dropped_queue_entries.len() {
                0 => String::new(),
                1 => ", and 1 queued message whose record was gone (dropped)".to_owned(),
                n => format!(", and {n} queued messages whose records were gone (dropped)"),
            }
        ))?;
    }
    if report.indexes_rebuilt > 0 {
        o.line(&format!(
            "  {} index rows corrected from the records",
            report.indexes_rebuilt
        ))?;
    }
    for p in &report.problems {
        o.line(&format!("  {p}"))?;
    }
    o.line(if report.complete() {
        "nothing was lost"
    } else {
        "some records were lost (above); the new store opens and runs with the rest"
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `holon store prune`: through the runtime when one runs, else on the
/// store opened here (the same rules and write jobs either way).
pub async fn store_prune(
    ctx: &Context,
    older_than: Option<u32>,
    dry_run: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use crate::model::retention::{PruneBy, PruneReport};
    use crate::protocol::{Request, RuntimeClient};
    use crate::runtime::host::upkeep::days_to_keep;
    let days = days_to_keep(older_than, ctx.config.store_retain_days)
        .map_err(|e| anyhow::anyhow!(e.message))?;
    let report: PruneReport = match super::daemon::connect(ctx).await {
        Some(client) => client
            .call(Request::StorePrune {
                older_than_days: Some(days),
                dry_run,
            })
            .await?
            .take()?,
        None => {
            let store = ctx.open_store().await?;
            let cutoff = crate::runtime::retention::cutoff_ms(crate::now_ms(), days);
            let report = crate::runtime::retention::prune_store(
                &store,
                Some(&ctx.paths.data_dir),
                cutoff,
                dry_run,
                PruneBy::Operator,
            )
            .await;
            store.close().await?;
            report?
        }
    };
    let mut out = Out::new();
    if json {
        out.line(&serde_json::to_string_pretty(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if dry_run { "would prune" } else { "pruned" };
    out.line(&format!(
        "{verb} history older than {} ({}): {} of {}, {}, {} bytes in {} ms",
        report.older_than,
        counted(days as u64, "day", "days"),
        report.agents.len(),
        counted(report.agents_seen, "agent", "agents"),
        counted(report.events, "event", "events"),
        report.bytes,
        report.millis
    ))?;
    for a in &report.agents {
        let mut parts = Vec::new();
        if a.events > 0 {
            parts.push(format!(
                "events {}-{} ({}, {})",
                a.from_seq,
                a.to_seq,
                counted(a.blocks, "block", "blocks"),
                counted(a.rows, "row", "rows")
            ));
        }
        for (n, one, many) in [
            (
                a.transcript_entries,
                "transcript entry",
                "transcript entries",
            ),
            (a.tool_executions, "tool execution", "tool executions"),
            (
                a.queue_entries,
                "settled queue entry",
                "settled queue entries",
            ),
        ] {
            if n > 0 {
                parts.push(counted(n, one, many));
            }
        }
        let held = a
            .held_by
            .as_deref()
            .map(|h| format!("; kept from there on: {h}"))
            .unwrap_or_default();
        out.line(&format!(
            "  {}: {}, {} bytes; history starts at seq {}{held}",
            a.agent_id,
            parts.join(", "),
            a.bytes,
            a.ledger_start
        ))?;
    }
    if !dry_run && report.events > 0 {
        out.line(
            "the freed pages are reused by new writes; `holon store compact` (runtime stopped) gives them back to the file system",
        )?;
    }
    Ok(ExitCode::SUCCESS)
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

/// Move the runtime's copy at `from` to `to` (which must not exist): a
/// link then the copy's removal on the same file system, a private copy
/// across file systems, so nothing but `to` keeps the backup. When it
/// cannot be put there, the copy stays where it is and the error says
/// where (the runtime removes it an hour on).
fn move_into_place(from: &std::path::Path, to: &std::path::Path) -> anyhow::Result<()> {
    match crate::store::files::place_new(from, to) {
        Ok(()) => {
            let _ = std::fs::remove_file(from);
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!(
            "the backup was made but could not be put at {}: {e}; it is at {} for the next hour",
            to.display(),
            from.display()
        )),
    }
}

/// What to do about a damaged store at `path`, in order: salvage it into
/// a new store, or restore the newest backup beside it (named, when there
/// is one).
fn next_steps(path: &std::path::Path) -> Vec<String> {
    let p = path.display();
    let mut steps = vec![format!(
        "holon store salvage {p} {p}.salvaged: copies every record still readable into a new \
         store, which says what it could not read; put it in place with \
         `mv {p} {p}.broken && mv {p}.salvaged {p}` (the runtime stopped)"
    )];
    let dir = path
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join("backups");
    let mut backups: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "redb") && p.is_file())
        .collect();
    backups.sort();
    steps.push(match backups.last() {
        Some(newest) => format!(
            "or restore a backup: the newest of {} in {} is {}; check it with `holon store \
             verify {}` first",
            backups.len(),
            dir.display(),
            newest.display(),
            newest.display()
        ),
        None => format!(
            "or restore a backup: there is none in {} (`[store] backup_every_hours` keeps \
             some from now on; a copy made elsewhere with `holon store backup PATH` will do)",
            dir.display()
        ),
    });
    steps
}
