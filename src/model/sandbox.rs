//! How a model command is confined: the sandbox mode and network access a
//! workspace's policy asks for. What the kernel actually enforced is in the
//! execution snapshot (`workspace::ExecutionPolicySnapshot`).

use serde::{Deserialize, Serialize};

/// Where a model command (ExecCommand, and every process it starts) may
/// write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// The active execution root, the agent's home and the command's own
    /// temporary directory; everything else is read-only.
    #[default]
    WorkspaceWrite,
    /// Only the command's own temporary directory.
    ReadOnly,
    /// No confinement: the command reaches what the operator's user can.
    Off,
}

impl SandboxMode {
    /// The names `parse` takes, for error messages.
    pub const CHOICES: &'static str = "workspace_write, read_only or off";

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace_write",
            SandboxMode::ReadOnly => "read_only",
            SandboxMode::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Option<SandboxMode> {
        match s {
            "workspace_write" => Some(SandboxMode::WorkspaceWrite),
            "read_only" => Some(SandboxMode::ReadOnly),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }
}

/// Whether a model command may open network sockets (unix sockets are
/// always allowed). Holon itself reaches the model provider either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkAccess {
    #[default]
    Off,
    On,
}

impl NetworkAccess {
    /// The names `parse` takes, for error messages.
    pub const CHOICES: &'static str = "off or on";

    pub fn as_str(self) -> &'static str {
        match self {
            NetworkAccess::Off => "off",
            NetworkAccess::On => "on",
        }
    }

    pub fn parse(s: &str) -> Option<NetworkAccess> {
        match s {
            "off" => Some(NetworkAccess::Off),
            "on" => Some(NetworkAccess::On),
            _ => None,
        }
    }
}
