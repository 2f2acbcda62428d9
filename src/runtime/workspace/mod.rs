//! Workspaces: where an agent's file and shell tools act.
//!
//! Every agent has exactly one active workspace. Before any project is
//! attached it is `AgentHome` (`workspace_id = "agent_home"`, the agent's
//! own directory), which can be neither exited nor detached. Attaching a
//! directory records a durable binding whose *anchor* is the stable project
//! identity (the git top-level, else the directory); using it binds the
//! *execution root* (the checkout itself in direct mode, a managed git
//! worktree under the data dir in isolated mode) and a *cwd* inside it.
//!
//! This module is the record and the pure rules (ids, snapshot, path
//! resolution); `api` the use request read from what an operator typed;
//! `git` runs git; `session` discovers directories and makes and ends
//! managed worktrees; `ops` writes every change through the store with
//! its event.

use crate::model::workspace::{
    AgentWorkspaces, ExecutionPolicySnapshot, ExecutionSnapshot, ProjectionKind, WorkspaceBinding,
    WorkspaceMode, WorktreeSession, AGENT_HOME_ID,
};

mod api;
pub mod files;
pub mod git;
pub mod ops;
pub mod reach;
pub mod session;
mod target;
pub mod view;

use crate::model::workspace::UseWorkspace;

use std::path::{Component, Path, PathBuf};

/// The snapshot of an agent's workspaces; `default_policy` is the
/// runtime's `[policy]`, for workspaces without their own. What the
/// sandbox enforces is this kernel's (probed once).
pub fn snapshot(
    ws: &AgentWorkspaces,
    agent_home: &Path,
    default_policy: &crate::model::approval::ApprovalPolicy,
) -> ExecutionSnapshot {
    let support = crate::runtime::sandbox::Support::probe();
    snapshot_with(ws, agent_home, default_policy, support)
}

/// `snapshot` on a given kernel (no I/O).
pub fn snapshot_with(
    ws: &AgentWorkspaces,
    agent_home: &Path,
    default_policy: &crate::model::approval::ApprovalPolicy,
    support: &crate::runtime::sandbox::Support,
) -> ExecutionSnapshot {
    let home = agent_home.display().to_string();
    let (workspace_id, anchor, root, cwd, kind, mode, worktree) = match &ws.active {
        None => (
            AGENT_HOME_ID.to_owned(),
            home.clone(),
            home.clone(),
            home.clone(),
            ProjectionKind::CanonicalRoot,
            WorkspaceMode::Direct,
            None,
        ),
        Some(a) => (
            a.workspace_id.clone(),
            ws.binding(&a.workspace_id)
                .map(|b| b.anchor.clone())
                .unwrap_or_else(|| a.execution_root.clone()),
            a.execution_root.clone(),
            a.cwd.clone(),
            a.projection_kind,
            a.mode,
            a.worktree.clone(),
        ),
    };
    let root_pin = ws.active.as_ref().and_then(|a| a.root_pin.clone());
    let (approval, approval_source) = ws.policy_in_force(&workspace_id, default_policy);
    // A workspace's own policy that leaves the sandbox unsaid follows the
    // runtime's.
    let sandbox = (approval.sandbox.or(default_policy.sandbox)).unwrap_or_default();
    let network = (approval.network.or(default_policy.network)).unwrap_or_default();
    let policy = crate::runtime::sandbox::confinement(
        sandbox,
        network,
        support,
        ExecutionPolicySnapshot {
            approval,
            approval_source,
            ..ExecutionPolicySnapshot::host_local()
        },
    );
    ExecutionSnapshot {
        profile: policy.backend,
        policy,
        execution_root_id: root_id(&root),
        workspace_id,
        workspace_anchor: anchor,
        execution_root: root,
        cwd,
        projection_kind: kind,
        mode,
        worktree,
        root_pin,
    }
}

/// FNV-1a: a stable, dependency-free short hash for ids derived from paths.
fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `root_<hash>`: the same directory always has the same id.
pub fn root_id(root: &str) -> String {
    format!("root_{:012x}", fnv(root) & 0xffff_ffff_ffff)
}

/// `ws_<name>_<hash>`: readable, stable for one anchor, and valid under
/// the id rules (letters, digits, `-`, `_`). The hash is 64 bits of the
/// anchor's SHA-256: an id keys a workspace's policy, its "always" rules,
/// its reviewer and its written policy file, so no directory may be
/// named to take another's (workspaces attached before keep the shorter
/// ids they were given).
pub fn workspace_id_for(anchor: &Path) -> String {
    let name: String = anchor
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    use sha2::Digest;
    let digest = sha2::Sha256::digest(anchor.display().to_string().as_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    if name.is_empty() {
        format!("ws_{hash}")
    } else {
        format!("ws_{name}_{hash}")
    }
}

/// Why a tool path argument is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRefusal {
    Absolute,
    ParentDir,
    /// Resolves (through a symlink) outside the root.
    Escapes,
    Missing,
    NotADirectory,
}

impl PathRefusal {
    pub fn message(&self, shown: &str, root: &Path) -> String {
        match self {
            PathRefusal::Absolute => format!(
                "`{shown}` is absolute; paths are relative to the execution root {}",
                root.display()
            ),
            PathRefusal::ParentDir => {
                format!("`{shown}` uses `..`; it must stay inside the execution root")
            }
            PathRefusal::Escapes => format!(
                "`{shown}` leads outside the execution root {} (through a symlink)",
                root.display()
            ),
            PathRefusal::Missing => format!("`{shown}` does not exist in the execution root"),
            PathRefusal::NotADirectory => format!("`{shown}` is not a directory"),
        }
    }
}

/// Resolve a relative directory argument inside `root` (canonical): no
/// absolute paths, no `..`, and no symlink that leads out.
pub fn resolve_dir_in_root(root: &Path, rel: &str) -> Result<PathBuf, PathRefusal> {
    let p = Path::new(rel);
    let mut joined = root.to_path_buf();
    for c in p.components() {
        match c {
            Component::Normal(part) => joined.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(PathRefusal::ParentDir),
            Component::RootDir | Component::Prefix(_) => return Err(PathRefusal::Absolute),
        }
    }
    let real = joined.canonicalize().map_err(|_| PathRefusal::Missing)?;
    if !real.starts_with(root) {
        return Err(PathRefusal::Escapes);
    }
    if !real.is_dir() {
        return Err(PathRefusal::NotADirectory);
    }
    Ok(real)
}

/// `cwd` kept inside `root`: the same relative position when it can be
/// (entering a worktree keeps the subdirectory you were in), else the root.
pub fn carry_cwd(old_root: &Path, old_cwd: &Path, new_root: &Path) -> PathBuf {
    match old_cwd.strip_prefix(old_root) {
        Ok(rel) if new_root.join(rel).is_dir() => new_root.join(rel),
        _ => new_root.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::workspace::ActiveWorkspace;

    fn active(id: &str, root: &str) -> ActiveWorkspace {
        ActiveWorkspace {
            workspace_id: id.into(),
            execution_root: root.into(),
            cwd: format!("{root}/src"),
            projection_kind: ProjectionKind::CanonicalRoot,
            mode: WorkspaceMode::Direct,
            worktree: None,
            adopted_worktree: false,
            root_pin: None,
        }
    }

    #[test]
    fn an_agent_without_workspaces_is_in_agent_home() {
        let unsupported = crate::runtime::sandbox::Support::none("a kernel without Landlock");
        let s = snapshot_with(
            &AgentWorkspaces::default(),
            Path::new("/d/agents/main"),
            &Default::default(),
            &unsupported,
        );
        assert_eq!(s.workspace_id, AGENT_HOME_ID);
        assert_eq!(s.workspace_anchor, "/d/agents/main");
        assert_eq!(s.execution_root, "/d/agents/main");
        assert_eq!(s.cwd, "/d/agents/main");
        assert_eq!(s.projection_kind, ProjectionKind::CanonicalRoot);
        assert_eq!(s.label(), "agent_home");
        let v = serde_json::to_value(&s).unwrap_or_default();
        assert_eq!(v["policy"]["network"], "not_enforced");
        assert_eq!(v["profile"], "host_local");
        assert_eq!(v["policy"]["sandbox"], "workspace_write");
        let able = crate::runtime::sandbox::Support {
            landlock_abi: 7,
            seccomp: true,
            mount_namespace: true,
            missing: None,
        };
        let s = snapshot_with(
            &AgentWorkspaces::default(),
            Path::new("/d/agents/main"),
            &Default::default(),
            &able,
        );
        let v = serde_json::to_value(&s).unwrap_or_default();
        assert_eq!(v["profile"], "sandboxed");
        assert_eq!(v["policy"]["write"], "enforced");
        assert_eq!(v["policy"]["network"], "enforced");
    }

    #[test]
    fn the_snapshot_takes_the_anchor_from_the_binding() {
        let ws = AgentWorkspaces {
            attached: vec![WorkspaceBinding {
                workspace_id: "ws_repo_1".into(),
                anchor: "/src/repo".into(),
                git: true,
                attached_at: "t".into(),
                pin: None,
            }],
            active: Some(ActiveWorkspace {
                execution_root: "/d/worktrees/main/x".into(),
                projection_kind: ProjectionKind::GitWorktreeRoot,
                mode: WorkspaceMode::Isolated,
                worktree: Some(WorktreeSession {
                    workspace_id: "ws_repo_1".into(),
                    original_working_directory: "/src/repo".into(),
                    original_branch: "main".into(),
                    worktree_path: "/d/worktrees/main/x".into(),
                    worktree_branch: "holon/main/x".into(),
                    base_commit: String::new(),
                    created_at: "t".into(),
                }),
                ..active("ws_repo_1", "/d/worktrees/main/x")
            }),
            retained_worktrees: vec![],
            policies: Default::default(),
            always: Default::default(),
        };
        let s = snapshot(&ws, Path::new("/d/agents/main"), &Default::default());
        assert_eq!(s.workspace_anchor, "/src/repo");
        assert_eq!(s.execution_root, "/d/worktrees/main/x");
        assert_eq!(s.execution_root_id, root_id("/d/worktrees/main/x"));
        assert_eq!(s.label(), "repo ⎇ holon/main/x");
    }

    #[test]
    fn workspace_ids_are_stable_readable_and_valid() {
        let a = workspace_id_for(Path::new("/home/me/my repo!"));
        assert_eq!(a, workspace_id_for(Path::new("/home/me/my repo!")));
        assert!(a.starts_with("ws_my_repo__"), "{a}");
        assert_ne!(a, workspace_id_for(Path::new("/other/my repo!")));
        assert!(crate::model::ids::validate(crate::model::ids::IdKind::Workspace, &a).is_ok());
        assert!(workspace_id_for(Path::new("/")).starts_with("ws_"));
    }

    #[test]
    fn directory_arguments_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("f"), "").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        assert_eq!(resolve_dir_in_root(&root, "a/./b"), Ok(root.join("a/b")));
        assert_eq!(
            resolve_dir_in_root(&root, "a/../a"),
            Err(PathRefusal::ParentDir)
        );
        assert_eq!(
            resolve_dir_in_root(&root, "/etc"),
            Err(PathRefusal::Absolute)
        );
        assert_eq!(resolve_dir_in_root(&root, "out"), Err(PathRefusal::Escapes));
        assert_eq!(
            resolve_dir_in_root(&root, "nope"),
            Err(PathRefusal::Missing)
        );
        assert_eq!(
            resolve_dir_in_root(&root, "f"),
            Err(PathRefusal::NotADirectory)
        );
    }

    #[test]
    fn cwd_keeps_its_place_when_the_root_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (dir.path().join("old"), dir.path().join("new"));
        std::fs::create_dir_all(old.join("src/x")).unwrap();
        std::fs::create_dir_all(new.join("src/x")).unwrap();
        assert_eq!(carry_cwd(&old, &old.join("src/x"), &new), new.join("src/x"));
        assert_eq!(carry_cwd(&old, &old.join("gone"), &new), new);
        assert_eq!(carry_cwd(&old, Path::new("/elsewhere"), &new), new);
    }

    #[test]
    fn old_agent_records_have_no_workspaces() {
        let ws: AgentWorkspaces = serde_json::from_str("{}").unwrap_or_default();
        assert_eq!(ws.active_id(), AGENT_HOME_ID);
        assert!(ws.attached.is_empty());
    }
}
