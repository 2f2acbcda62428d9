//! `git` itself, run as a child process: repository discovery, managed
//! worktrees, and the short status the prompt frame carries. Holon never
//! reimplements git: worktrees made by `git worktree add` are ones the
//! operator's own git understands, lists and can remove.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runtime::GitError;

/// The empty tree: as an attribute source, no attributes at all.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Holon's own git runs as the operator, often in a checkout a sandboxed
/// agent can write: nothing there may make it run a program.
///
/// - No hooks: `core.hooksPath` is `/dev/null`, where no hook can be.
/// - No fsmonitor (`core.fsmonitor=false`), and no attributes at all
///   (`GIT_ATTR_SOURCE` is the empty tree): a filter or a diff driver is
///   a program, and attributes are what name one for a path.
/// - No configuration but the repository's own: no system or global
///   file (the operator's `~/.gitconfig` may lie in a root a command can
///   write), and none of Holon's environment but `PATH`, `HOME` and the
///   locale (no `GIT_*`, no provider key); what is set on the command
///   line wins over the repository's file.
/// - Never a prompt (credentials, editors), a pager or an optional lock.
/// - A query (`status`, `rev-parse`, `rev-list`, `symbolic-ref`) runs in
///   the sandbox, read-only with the network off and Holon's own paths
///   hidden, where the kernel gives one: a repository's own `info/attributes` and config can still name
///   a filter program, and a command may have written both. A change
///   (`worktree add`, `remove`, `branch -d`) runs in the operator's
///   repository only (`ops`: never one a command could have made).
fn git(dir: &Path, args: &[&str]) -> Result<std::process::Output, GitError> {
    let mut cmd = Command::new("git");
    if reads_only(args) {
        confine_query(&mut cmd, dir)?;
    }
    // Nothing of Holon's environment (its provider keys among it) but
    // what git needs to run.
    cmd.env_clear();
    for name in ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.args([
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.attributesFile=/dev/null",
        "-c",
        "submodule.recurse=false",
    ])
    .arg("-C")
    .arg(dir)
    .args(args)
    .env("GIT_ATTR_SOURCE", EMPTY_TREE)
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env("GIT_CONFIG_GLOBAL", "/dev/null")
    .env("GIT_TERMINAL_PROMPT", "0")
    .env("GIT_PAGER", "cat")
    .env("GIT_OPTIONAL_LOCKS", "0")
    .stdin(std::process::Stdio::null())
    .output()
    .map_err(|e| GitError::NotInstalled(e.to_string()))
}

/// Whether a git command only reads (it then runs confined).
fn reads_only(args: &[&str]) -> bool {
    matches!(
        args.first(),
        Some(&("status" | "rev-parse" | "rev-list" | "symbolic-ref" | "--version"))
    )
}

/// Confine a query to the sandbox, read-only with the network off, where
/// this kernel gives one (else it runs as it is, with the safeguards
/// above).
fn confine_query(cmd: &mut Command, dir: &Path) -> Result<(), GitError> {
    use crate::runtime::sandbox::{Prepared, Support};
    use std::os::unix::process::CommandExt;
    let support = Support::probe();
    if !support.usable() {
        return Ok(());
    }
    let failed = |e: std::io::Error| GitError::Failed {
        args: "(the sandbox for a query)".into(),
        dir: dir.display().to_string(),
        stderr: e.to_string(),
    };
    let plan = crate::runtime::sandbox::read_only_plan(dir);
    let mut prepared = Prepared::new(&plan, support).map_err(failed)?;
    prepared.enter(dir).map_err(failed)?;
    // SAFETY: the sandbox's raw system calls are all that run between
    // fork and exec.
    unsafe {
        cmd.pre_exec(move || prepared.apply());
    }
    Ok(())
}

/// Run git and return trimmed stdout, or the failure with git's own words.
fn git_ok(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = git(dir, args)?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned());
    }
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .trim()
        .chars()
        .take(600)
        .collect();
    Err(GitError::Failed {
        args: args.join(" "),
        dir: dir.display().to_string(),
        stderr,
    })
}

/// What git says about a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// `git rev-parse --show-toplevel`: the checkout the directory is in
    /// (a linked worktree's own top-level for a worktree).
    pub toplevel: PathBuf,
    /// The main repository's top-level: differs from `toplevel` when the
    /// directory is inside a linked worktree.
    pub main_toplevel: PathBuf,
    /// The current branch, `None` on a detached HEAD.
    pub branch: Option<String>,
    /// The commit HEAD names, `None` in a repository with no commits.
    pub head: Option<String>,
}

/// `Ok(None)` when the directory is not in a git repository, or git is
/// not installed (direct mode works without git).
pub fn discover(dir: &Path) -> Option<RepoInfo> {
    let out = git(
        dir,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ],
    )
    .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let toplevel = canonical(Path::new(lines.next()?));
    let common = canonical(Path::new(lines.next()?));
    // The common dir of a normal repository is `<main>/.git`; a bare or
    // unusual layout falls back to the checkout itself.
    let main_toplevel = if common.file_name().is_some_and(|n| n == ".git") {
        common
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or(toplevel.clone())
    } else {
        toplevel.clone()
    };
    let head = git_ok(&toplevel, &["rev-parse", "--verify", "--quiet", "HEAD"]).ok();
    let branch = git_ok(&toplevel, &["symbolic-ref", "--quiet", "--short", "HEAD"]).ok();
    Some(RepoInfo {
        toplevel,
        main_toplevel,
        branch,
        head,
    })
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The repository at `dir`, fit to branch a worktree from: with git
/// installed, a repository, and a HEAD (each missing one its own error).
pub fn worktree_source(dir: &Path) -> Result<RepoInfo, GitError> {
    match discover(dir) {
        None => {
            // Tell "no git" apart from "not a repository".
            git(dir, &["--version"])?;
            Err(GitError::NotARepository {
                path: dir.display().to_string(),
            })
        }
        Some(info) if info.head.is_none() => Err(GitError::NoCommits {
            path: dir.display().to_string(),
        }),
        Some(info) => Ok(info),
    }
}

/// `git worktree add -b BRANCH PATH HEAD` in `repo` (checked by
/// `worktree_source`).
pub fn add_worktree(repo: &Path, path: &Path, branch: &str) -> Result<(), GitError> {
    let path_s = path.to_string_lossy();
    git_ok(
        repo,
        &["worktree", "add", "--quiet", "-b", branch, &path_s, "HEAD"],
    )
    .map(|_| ())
}

/// Uncommitted changes (tracked or untracked, ignored files aside) and
/// commits on the worktree's branch that its base does not have: either
/// means the worktree holds work that must not be deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorktreeChanges {
    pub uncommitted: usize,
    pub commits_ahead: usize,
}

impl WorktreeChanges {
    pub fn is_clean(&self) -> bool {
        self.uncommitted == 0 && self.commits_ahead == 0
    }
}

/// `base` is the commit (or branch) the worktree was made from.
pub fn worktree_changes(path: &Path, base: &str) -> Result<WorktreeChanges, GitError> {
    let status = git_ok(
        path,
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ],
    )?;
    let uncommitted = status.lines().filter(|l| !l.is_empty()).count();
    let ahead = if base.is_empty() {
        0
    } else {
        let range = format!("{base}..HEAD");
        git_ok(path, &["rev-list", "--count", &range])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    };
    Ok(WorktreeChanges {
        uncommitted,
        commits_ahead: ahead,
    })
}

/// Remove a clean worktree and delete its branch (`-d`: git itself
/// refuses to delete an unmerged branch, a second guard against loss).
pub fn remove_worktree(repo: &Path, path: &Path, branch: &str) -> Result<(), GitError> {
    let path_s = path.to_string_lossy();
    git_ok(repo, &["worktree", "remove", &path_s])?;
    git_ok(repo, &["branch", "-d", "--quiet", branch])?;
    Ok(())
}

/// Forget worktrees whose directories are gone (after one was deleted by
/// hand), so the branch name can be reused.
pub fn prune_worktrees(repo: &Path) {
    let _ = git_ok(repo, &["worktree", "prune"]);
}

/// The branch and dirtiness of a checkout, for the prompt frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortStatus {
    /// Branch name, or `detached at <sha>`.
    pub branch: String,
    /// Changed tracked files plus untracked files.
    pub changed: usize,
}

pub fn short_status(root: &Path) -> Option<ShortStatus> {
    let args = [
        "status",
        "--porcelain=v1",
        "--branch",
        "--ignore-submodules=all",
    ];
    let out = git_ok(root, &args).ok()?;
    let mut lines = out.lines();
    let head = lines.next()?.trim_start_matches("## ");
    let branch = if let Some(rest) = head.strip_prefix("No commits yet on ") {
        format!("{rest} (no commits)")
    } else if head.starts_with("HEAD (no branch)") {
        let sha = git_ok(root, &["rev-parse", "--short", "HEAD"]).unwrap_or_default();
        format!("detached at {sha}")
    } else {
        head.split("...").next().unwrap_or(head).to_owned()
    };
    Some(ShortStatus {
        branch,
        changed: lines.filter(|l| !l.is_empty()).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A repository a command could have made: hooks for every step, a
    /// filter driver on every file, an fsmonitor; Holon's git runs none.
    #[test]
    fn holons_git_runs_nothing_a_repository_planted() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let marks = dir.path().join("marks");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&marks).unwrap();
        run(&repo, &["init", "-q", "-b", "main"]);
        let m = marks.display();
        std::fs::write(repo.join(".gitattributes"), "* filter=evil\n").unwrap();
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        run(&repo, &["add", "."]);
        run(
            &repo,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "commit",
                "-q",
                "-m",
                "one",
            ],
        );
        for hook in [
            "post-checkout",
            "reference-transaction",
            "pre-commit",
            "post-index-change",
        ] {
            let path = repo.join(".git/hooks").join(hook);
            std::fs::write(&path, format!("#!/bin/sh\ntouch {m}/{hook}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let planted = [
            (
                "filter.evil.smudge",
                format!("sh -c 'touch {m}/smudge; cat'"),
            ),
            ("filter.evil.clean", format!("sh -c 'touch {m}/clean; cat'")),
            ("core.fsmonitor", format!("{m}/../fsmonitor.sh")),
        ];
        std::fs::write(
            dir.path().join("fsmonitor.sh"),
            format!("#!/bin/sh\ntouch {m}/fsmonitor\n"),
        )
        .unwrap();
        for (key, value) in &planted {
            run(&repo, &["config", key, value]);
        }
        let wt = dir.path().join("wt");
        add_worktree(&repo, &wt, "holon/test").unwrap();
        assert!(wt.join("a.txt").exists());
        let _ = worktree_changes(&wt, "main").unwrap();
        let _ = short_status(&wt);
        remove_worktree(&repo, &wt, "holon/test").unwrap();
        let ran: Vec<String> = std::fs::read_dir(&marks)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        assert!(ran.is_empty(), "Holon's git ran {ran:?}");
    }
}
