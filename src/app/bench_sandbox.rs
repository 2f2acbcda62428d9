//! `holon debug bench sandbox`: what confining a command adds, from the
//! decision to spawn to the command's first byte of output. Unconfined is
//! `sh -c 'echo x'` spawned as a command task's shell is; sandboxed adds
//! the plan (path lookups), the Landlock ruleset and seccomp program made
//! in this process, and what the child does before exec (a mount
//! namespace for the git carve-outs, `landlock_restrict_self`, the
//! filter). Runs alternate so machine noise lands on both.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::bench::{millis, percentile};
use crate::model::sandbox::{NetworkAccess, SandboxMode};
use crate::runtime::sandbox::{self, linux::Prepared, Support};

const RUNS: usize = 200;

/// Holon's own paths as a runtime passes them, beside the bench's root:
/// its config, run and log directories and its store, hidden from the
/// command as they are in use.
fn holon_dirs(root: &Path) -> Vec<std::path::PathBuf> {
    let base = root.parent().unwrap_or(root).join("holon");
    ["config", "run", "logs", "data/holon.redb"]
        .iter()
        .map(|p| base.join(p))
        .collect()
}

/// Spawn to first output, once: `None` when unconfined.
fn once(
    root: &Path,
    home: &Path,
    tmp: &Path,
    mode: Option<SandboxMode>,
) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("echo x")
        .current_dir(root)
        .stdout(Stdio::piped());
    if let Some(mode) = mode {
        let request = sandbox::Request {
            mode,
            network: NetworkAccess::Off,
            execution_root: root,
            agent_home: home,
            tmp: Some(tmp),
            output: None,
            holon_dirs: &holon_dirs(root),
            unix_sockets: &[],
            root_pin: sandbox::pin_dir(root),
            extra_writable: &[],
        };
        let plan = sandbox::plan(&request)?.ok_or_else(|| anyhow::anyhow!("no plan"))?;
        let prepared = Prepared::new(&plan, Support::probe())?;
        // SAFETY: apply makes only raw system calls.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        cmd.env("TMPDIR", tmp);
    }
    let mut child = cmd.spawn()?;
    let mut first = [0u8; 1];
    if let Some(out) = child.stdout.as_mut() {
        out.read_exact(&mut first)?;
    }
    let took = start.elapsed();
    child.wait()?;
    anyhow::ensure!(first[0] == b'x', "the command printed nothing");
    Ok(took)
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let support = Support::probe();
    if let Some(why) = &support.missing {
        println!("sandbox.spawn     not measured: this kernel cannot sandbox ({why})");
        return Ok(());
    }
    let root = dir.join("sandbox-repo");
    let (home, tmp) = (dir.join("sandbox-home"), dir.join("sandbox-tmp"));
    for d in holon_dirs(&root).iter().filter(|p| p.extension().is_none()) {
        std::fs::create_dir_all(d)?;
    }
    if let Some(store) = holon_dirs(&root).last() {
        std::fs::create_dir_all(store.parent().unwrap_or(dir))?;
        std::fs::write(store, b"")?;
    }
    for d in [&root, &home, &tmp] {
        std::fs::create_dir_all(d)?;
    }
    // A git checkout, so the carve-outs (and their mount namespace) are
    // part of the cost, as in a real workspace.
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .status();
    let carved = git.is_ok_and(|s| s.success());
    let (root2, home2, tmp2) = (root.clone(), home.clone(), tmp.clone());
    let (off, on) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            off.push(once(&root2, &home2, &tmp2, None)?);
            on.push(once(
                &root2,
                &home2,
                &tmp2,
                Some(SandboxMode::WorkspaceWrite),
            )?);
        }
        off.sort();
        on.sort();
        Ok((off, on))
    })
    .await??;
    let p = |v: &[Duration], q| millis(percentile(v, q));
    println!(
        "sandbox.spawn     spawn to first output, {RUNS} runs each: unconfined p50 {} p99 {}; \
         sandboxed (workspace_write, network off, Holon's paths hidden{}) p50 {} p99 {}; added at p50 {}",
        p(&off, 0.5),
        p(&off, 0.99),
        if carved && support.mount_namespace {
            ", git carve-outs"
        } else {
            ""
        },
        p(&on, 0.5),
        p(&on, 0.99),
        millis(percentile(&on, 0.5).saturating_sub(percentile(&off, 0.5)))
    );
    Ok(())
}
