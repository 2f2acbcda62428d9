//! Workspaces as they travel: an agent's attached workspaces and the
//! active one, managed worktrees, and the execution snapshot (where its
//! tools act and under which policy), with what clients send to choose a
//! workspace and what they get back. Ids, path rules and git live in the
//! engine (`runtime::workspace`).

use serde::{Deserialize, Serialize};

use std::path::Path;

/// The built-in fallback workspace.
pub const AGENT_HOME_ID: &str = "agent_home";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectionKind {
    /// The workspace's own directory (or an adopted external worktree).
    #[default]
    CanonicalRoot,
    /// A Holon-managed git worktree of the workspace.
    GitWorktreeRoot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    #[default]
    Direct,
    Isolated,
}

impl WorkspaceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceMode::Direct => "direct",
            WorkspaceMode::Isolated => "isolated",
        }
    }
}

/// One attached workspace of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceBinding {
    pub workspace_id: String,
    /// Stable project identity: the git top-level, else the directory.
    pub anchor: String,
    /// Whether the anchor is a git repository (isolated mode needs one).
    #[serde(default)]
    pub git: bool,
    pub attached_at: String,
    /// The anchor as it was when attached: a model may move into it again
    /// only while its path still names that directory (`None` in records
    /// from before: then only while no link is on its path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<DirPin>,
}

/// A Holon-managed worktree (spec: `WorktreeSession`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeSession {
    pub workspace_id: String,
    /// Where the operator was when isolation began.
    pub original_working_directory: String,
    /// The branch the worktree was made from (empty on a detached HEAD).
    pub original_branch: String,
    pub worktree_path: String,
    pub worktree_branch: String,
    /// The commit the worktree was made from: commits after it are the
    /// session's own work (a detached HEAD has no branch to compare with).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_commit: String,
    pub created_at: String,
}

/// The active workspace when it is not AgentHome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveWorkspace {
    pub workspace_id: String,
    pub execution_root: String,
    pub cwd: String,
    #[serde(default)]
    pub projection_kind: ProjectionKind,
    #[serde(default)]
    pub mode: WorkspaceMode,
    /// Set in isolated mode: the managed worktree the root is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeSession>,
    /// An existing worktree of an attached repository, adopted as the root
    /// but not managed (Holon never removes it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted_worktree: bool,
    /// Which directory the root was when it was chosen: a command that
    /// replaces it (a link in its place) changes what its path names,
    /// and the sandbox then refuses to use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_pin: Option<DirPin>,
}

/// A directory as it was when it was chosen: its canonical path (no link
/// on the way) and its identity on its file system, to compare with what
/// its path names now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirPin {
    pub path: String,
    pub dev: u64,
    pub ino: u64,
}

/// An agent's durable workspace state, kept on its record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentWorkspaces {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attached: Vec<WorkspaceBinding>,
    /// `None` is AgentHome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<ActiveWorkspace>,
    /// Managed worktrees that held changes when their session ended: kept,
    /// reported, and re-entered by the next isolated use of the workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained_worktrees: Vec<WorktreeSession>,
    /// Approval policies set per workspace (`agent_home` included); a
    /// workspace without one follows the runtime's `[policy]`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub policies: std::collections::BTreeMap<String, super::approval::ApprovalPolicy>,
    /// What the operator allowed per workspace by answering "always",
    /// added to the policy in force there (`policy_in_force`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub always: std::collections::BTreeMap<String, super::approval::AlwaysAllowed>,
}

impl AgentWorkspaces {
    /// The approval policy in force in `workspace_id`: its own, else the
    /// runtime's `default`, with what "always" allowed there added; and
    /// which of the two it is.
    pub fn policy_in_force(
        &self,
        workspace_id: &str,
        default: &super::approval::ApprovalPolicy,
    ) -> (super::approval::ApprovalPolicy, PolicySource) {
        let (base, source) = match self.policies.get(workspace_id) {
            Some(own) => (own.clone(), PolicySource::Workspace),
            None => (default.clone(), PolicySource::Runtime),
        };
        match self.always.get(workspace_id) {
            Some(always) => (always.over(base), source),
            None => (base, source),
        }
    }

    pub fn binding(&self, workspace_id: &str) -> Option<&WorkspaceBinding> {
        self.attached
            .iter()
            .find(|b| b.workspace_id == workspace_id)
    }

    pub fn active_id(&self) -> &str {
        self.active
            .as_ref()
            .map(|a| a.workspace_id.as_str())
            .unwrap_or(AGENT_HOME_ID)
    }
}

/// The execution backend: commands run as the operator's user on this
/// machine, confined by the kernel (`sandboxed`) or not (`host_local`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionProfile {
    HostLocal,
    Sandboxed,
}

/// Whether the kernel enforces a confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    Enforced,
    NotEnforced,
}

impl Enforcement {
    pub fn is_enforced(self) -> bool {
        self == Enforcement::Enforced
    }
}

/// The execution-policy boundary, stated honestly: what the kernel
/// enforces on model commands (writes outside the roots, the network,
/// git metadata inside a root), and what is only checked (tool path
/// arguments) or not confined at all (reads, secrets on disk).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionPolicySnapshot {
    pub backend: ExecutionProfile,
    /// The sandbox mode the policy asks for (`None` in records from
    /// before the sandbox: they ran unconfined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::sandbox::SandboxMode>,
    /// The network access the policy asks for (`None`: as `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_access: Option<super::sandbox::NetworkAccess>,
    pub filesystem: Enforcement,
    pub write: Enforcement,
    pub network: Enforcement,
    pub secrets: Enforcement,
    pub child_process: Enforcement,
    /// Git metadata inside a writable root (a checkout's `.git`, a
    /// worktree's link to its repository) stays read-only (`None` as `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_metadata: Option<Enforcement>,
    /// Signals reach only processes inside the sandbox (Landlock ABI 6+;
    /// `None` as `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals: Option<Enforcement>,
    /// Abstract unix sockets (an X server, a session bus) reach only
    /// inside the sandbox (Landlock ABI 6+; `None` as `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstract_sockets: Option<Enforcement>,
    /// Path unix sockets (Holon's control socket, tmux, an ssh agent) are
    /// out of reach but for those the operator lists (`None` as `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_sockets: Option<Enforcement>,
    /// Why something the policy asks for is not enforced (a kernel
    /// without Landlock, an older ABI), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_note: Option<String>,
    /// What *is* checked: tool path arguments against the execution root.
    pub tool_path_arguments: String,
    /// What command tasks inherit: secret-looking variables are removed.
    pub command_environment: String,
    /// The approval gate: which tool calls wait for the operator. It is a
    /// gate, not a sandbox: an approved command reaches what the
    /// operator's user can.
    #[serde(default)]
    pub approval: super::approval::ApprovalPolicy,
    /// Whether `approval` is this workspace's own (else the runtime's
    /// `[policy]`).
    #[serde(default)]
    pub approval_source: PolicySource,
}

/// Where a workspace's approval policy comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySource {
    #[default]
    Runtime,
    Workspace,
}

impl ExecutionPolicySnapshot {
    /// The sandbox mode in force (`off` for a record from before it).
    pub fn sandbox_mode(&self) -> super::sandbox::SandboxMode {
        self.sandbox.unwrap_or(super::sandbox::SandboxMode::Off)
    }

    /// The network access in force (`on` for a record from before the
    /// sandbox).
    pub fn network_mode(&self) -> super::sandbox::NetworkAccess {
        self.network_access
            .unwrap_or(super::sandbox::NetworkAccess::On)
    }

    /// A short mark for a status line: how model commands are confined.
    pub fn mark(&self) -> &'static str {
        use super::sandbox::{NetworkAccess, SandboxMode};
        match (self.backend, self.sandbox_mode(), self.network_mode()) {
            (_, SandboxMode::Off, _) => "unsandboxed",
            (ExecutionProfile::HostLocal, _, _) => "unsandboxed!",
            (_, SandboxMode::ReadOnly, NetworkAccess::Off) => "sandbox:ro",
            (_, SandboxMode::ReadOnly, NetworkAccess::On) => "sandbox:ro+net",
            (_, _, NetworkAccess::On) => "sandbox+net",
            (_, _, NetworkAccess::Off) => "sandbox",
        }
    }

    /// One line on how model commands are confined, for the prompt, the
    /// state view and `holon status`.
    pub fn confinement_line(&self) -> String {
        use super::sandbox::{NetworkAccess, SandboxMode};
        let mode = self.sandbox_mode();
        if mode == SandboxMode::Off {
            return "sandbox off: commands reach what the operator's user can (files, network)"
                .to_owned();
        }
        if self.backend == ExecutionProfile::HostLocal {
            let why = self
                .sandbox_note
                .as_deref()
                .unwrap_or("the kernel cannot sandbox");
            return format!(
                "sandbox {} asked for but NOT enforced ({why}): commands reach what the \
                 operator's user can",
                mode.as_str()
            );
        }
        let writes = match mode {
            SandboxMode::ReadOnly => "no writes but $TMPDIR",
            _ => "writes only in the execution root, the agent's home and $TMPDIR",
        };
        let network = match self.network_mode() {
            NetworkAccess::Off => "network off",
            NetworkAccess::On => "network on",
        };
        let git = match self.git_metadata {
            Some(Enforcement::Enforced) => {
                "; git metadata (.git) read-only, so commits need an isolated worktree"
            }
            _ => "; git metadata (.git) NOT protected",
        };
        format!(
            "sandboxed ({}, enforced by the kernel): {writes}; {network}{}; reads are not \
             confined",
            mode.as_str(),
            match mode {
                SandboxMode::WorkspaceWrite => git,
                _ => "",
            }
        )
    }

    pub fn host_local() -> Self {
        ExecutionPolicySnapshot {
            backend: ExecutionProfile::HostLocal,
            sandbox: None,
            network_access: None,
            filesystem: Enforcement::NotEnforced,
            write: Enforcement::NotEnforced,
            network: Enforcement::NotEnforced,
            secrets: Enforcement::NotEnforced,
            child_process: Enforcement::NotEnforced,
            git_metadata: None,
            signals: None,
            abstract_sockets: None,
            unix_sockets: None,
            sandbox_note: None,
            tool_path_arguments: "confined_to_execution_root".into(),
            command_environment: "secrets_scrubbed".into(),
            approval: Default::default(),
            approval_source: PolicySource::Runtime,
        }
    }
}

/// Spec: `ExecutionSnapshot`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionSnapshot {
    pub profile: ExecutionProfile,
    pub policy: ExecutionPolicySnapshot,
    pub workspace_id: String,
    pub workspace_anchor: String,
    pub execution_root: String,
    pub cwd: String,
    pub execution_root_id: String,
    pub projection_kind: ProjectionKind,
    pub mode: WorkspaceMode,
    /// Set in isolated mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeSession>,
    /// What the root was when it was chosen (`ActiveWorkspace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_pin: Option<DirPin>,
}

impl ExecutionSnapshot {
    /// A short label for the status line: `agent_home`, the anchor's
    /// directory name, plus the worktree branch when isolated.
    pub fn label(&self) -> String {
        if self.workspace_id == AGENT_HOME_ID {
            return AGENT_HOME_ID.to_owned();
        }
        let name = Path::new(&self.workspace_anchor)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.workspace_anchor.clone());
        match &self.worktree {
            Some(w) => format!("{name} ⎇ {}", w.worktree_branch),
            None => name,
        }
    }
}

/// What `UseWorkspace` asks for (tool, socket and CLI alike).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UseWorkspace {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    #[serde(default)]
    pub mode: WorkspaceMode,
}

/// The answer to a use: the new snapshot, plus guidance when a worktree
/// path was adopted rather than managed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UseOutcome {
    pub execution: ExecutionSnapshot,
    pub previous_workspace_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Managed worktrees kept because they hold changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained: Vec<WorktreeSession>,
}

/// `workspace.list`: the bindings, which one is active, and the snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceList {
    pub agent_id: String,
    pub active_workspace_id: String,
    pub execution: ExecutionSnapshot,
    /// Whether the execution root still exists where the runtime runs (a
    /// worktree deleted by hand: the runtime moves the agent home when it
    /// next starts). Absent in an older runtime's answer: taken as there.
    #[serde(default = "present")]
    pub execution_root_present: bool,
    pub attached: Vec<WorkspaceEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained_worktrees: Vec<WorktreeSession>,
}

fn present() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceEntry {
    #[serde(flatten)]
    pub binding: WorkspaceBinding,
    pub active: bool,
    /// Whether the anchor directory still exists.
    pub present: bool,
    /// Other agents working directly in this workspace's checkout
    /// (occupancy: isolated mode is the way to work in parallel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub direct_users: Vec<String>,
}
