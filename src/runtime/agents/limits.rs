//! How far delegation may go: the `[agents]` bounds the runtime is
//! started with, read by `SpawnAgent` and the lifecycle.

/// Bounds on delegation (`[agents]` in the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentLimits {
    /// How deep children may nest: 1 lets the operator's agents spawn
    /// children that cannot spawn their own.
    pub max_spawn_depth: u32,
    /// Live (unarchived) children one parent may supervise at once.
    pub max_children: u32,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits {
            max_spawn_depth: 2,
            max_children: 8,
        }
    }
}
