//! `holon debug bench workspace`: what workspaces cost on a repository of
//! 10,000 files. UseWorkspace direct (discovery, binding, one commit) and
//! isolated (`git worktree add` of the whole tree, then its removal when
//! the clean session ends), and the prompt frame's execution block (one
//! `git status`) that every turn pays.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redb::Durability;

use super::bench::{millis, percentile};
use super::bench_turns::start_host;
use crate::model::workspace::UseWorkspace;
use crate::model::workspace::WorkspaceMode;
use crate::model::workspace::AGENT_HOME_ID;
use crate::runtime::provider::scripted::ScriptedProvider;

const FILES: usize = 10_000;

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// 10,000 small files in 100 directories, one commit.
fn make_repo(dir: &Path) -> anyhow::Result<()> {
    for d in 0..100 {
        let sub = dir.join(format!("src/m{d:03}"));
        std::fs::create_dir_all(&sub)?;
        for f in 0..FILES / 100 {
            std::fs::write(
                sub.join(format!("f{f:03}.rs")),
                format!("// file {d}/{f}\npub fn f() {{}}\n"),
            )?;
        }
    }
    git(dir, &["init", "--quiet", "--initial-branch=main"])?;
    git(dir, &["add", "."])?;
    git(dir, &["commit", "--quiet", "-m", "bench"])?;
    Ok(())
}

fn row(name: &str, what: &str, times: &mut [Duration]) {
    times.sort();
    println!(
        "{name:<17} {what}: p50 {} p95 {} (n={})",
        millis(percentile(times, 0.5)),
        millis(percentile(times, 0.95)),
        times.len()
    );
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    let repo = dir.join("ws-repo");
    std::fs::create_dir_all(&repo)?;
    let t = Instant::now();
    make_repo(&repo)?;
    println!(
        "workspace.repo    {FILES} files, one commit, made in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let provider = Arc::new(ScriptedProvider::new(Vec::new()));
    let host = start_host(dir, "ws", provider, Durability::Immediate).await?;
    host.create_agent("bench").await?;
    let repo_s = repo.canonicalize()?.display().to_string();
    let use_path = |mode| UseWorkspace {
        path: Some(repo_s.clone()),
        workspace_id: None,
        mode,
    };
    let home = UseWorkspace {
        workspace_id: Some(AGENT_HOME_ID.into()),
        path: None,
        mode: WorkspaceMode::Direct,
    };

    let mut direct = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        host.use_workspace("bench", use_path(WorkspaceMode::Direct))
            .await?;
        direct.push(t.elapsed());
        host.use_workspace("bench", home.clone()).await?;
    }
    row(
        "workspace.direct",
        "UseWorkspace(path, direct) on the repository",
        &mut direct,
    );

    let mut frame = Vec::new();
    host.use_workspace("bench", use_path(WorkspaceMode::Direct))
        .await?;
    let snap = host.execution_snapshot("bench")?;
    for _ in 0..20 {
        let t = Instant::now();
        let block = crate::runtime::turn::frame::execution_block(&snap);
        frame.push(t.elapsed());
        anyhow::ensure!(
            block.contains("git: branch main"),
            "no git status in {block}"
        );
    }
    row(
        "workspace.frame",
        "execution block per turn (git status)",
        &mut frame,
    );

    let (mut create, mut remove) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        host.use_workspace("bench", use_path(WorkspaceMode::Isolated))
            .await?;
        create.push(t.elapsed());
        let t = Instant::now();
        let out = host.use_workspace("bench", home.clone()).await?;
        remove.push(t.elapsed());
        anyhow::ensure!(out.retained.is_empty(), "a clean worktree was kept");
    }
    row(
        "workspace.isolate",
        "UseWorkspace(isolated): git worktree add of 10,000 files",
        &mut create,
    );
    row(
        "workspace.leave",
        "leaving it clean: status, worktree remove, branch -d",
        &mut remove,
    );

    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    Ok(())
}
