//! Bounds the runtime is started with: how far delegation may go
//! (`[agents]`, read by `SpawnAgent` and the lifecycle), how much of a
//! tool's output re-enters the model, and what share of the prompt MCP
//! tools may take whole.

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

/// A rough bytes-per-token figure for bounding previews.
const BYTES_PER_TOKEN: u64 = 4;

/// How much command output re-enters the model (Repo Inspection Contract):
/// by default 8,000 estimated tokens (about 32,000 characters), and never
/// more than the cap, whatever a call asks for. Set by
/// `runtime.default_tool_output_tokens` / `runtime.max_tool_output_tokens`
/// and `HOLON_DEFAULT_TOOL_OUTPUT_TOKENS` / `HOLON_MAX_TOOL_OUTPUT_TOKENS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolOutputBudget {
    pub default_tokens: u64,
    pub max_tokens: u64,
}

impl Default for ToolOutputBudget {
    fn default() -> Self {
        ToolOutputBudget {
            default_tokens: 8_000,
            max_tokens: 64_000,
        }
    }
}

impl ToolOutputBudget {
    /// The byte bound for a call that asked for `requested` tokens.
    pub fn bytes(&self, requested: Option<u64>) -> u64 {
        requested
            .unwrap_or(self.default_tokens)
            .clamp(1, self.max_tokens.max(1))
            * BYTES_PER_TOKEN
    }
}

/// The default share of the prompt budget MCP tools may take whole
/// (`[mcp] tool_budget_share`); past it their specs are deferred behind
/// `ToolSearch`.
pub const DEFAULT_MCP_TOOL_SHARE: f64 = 0.10;
