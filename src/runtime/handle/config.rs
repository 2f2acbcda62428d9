//! What a runtime is started with: its directories, provider source,
//! bounds, policies and the parts of `[config]` each feature reads
//! (`HostConfig`), and how it presents itself (`RuntimeInfo`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::CommandsFate;
use crate::model::agent::AgentRecord;
use crate::runtime::provider::Provider;

/// Chooses the provider for an agent's next turn (its model override, else
/// the runtime default and fallbacks).
pub type ProviderSource = Arc<dyn Fn(&AgentRecord) -> Arc<dyn Provider> + Send + Sync>;

#[derive(Clone)]
pub struct HostConfig {
    /// Task output files and agent homes live under here.
    pub data_dir: PathBuf,
    pub provider: ProviderSource,
    /// Time between TERM and KILL when a task is stopped.
    pub stop_grace: Duration,
    /// A turn that needs more provider rounds than this fails.
    pub max_rounds: u32,
    /// When a long turn is reminded of its work item's progress
    /// (`HOLON_WORK_ITEM_STALE_REMINDER_*`).
    pub stale_reminder: crate::runtime::context::stale::StaleConfig,
    /// How this runtime presents itself in `runtime.status`.
    pub info: RuntimeInfo,
    /// The config file to watch for changes, and how to apply them.
    pub config_watch: Option<ConfigWatch>,
    /// Which existing agents get an actor at start.
    pub actors: ActorScope,
    /// Which environment variables command tasks see.
    pub exec_env: crate::runtime::exec_env::ExecEnvPolicy,
    /// How much command output re-enters the model.
    pub tool_output: crate::runtime::settings::limits::ToolOutputBudget,
    /// The approval policy of workspaces without their own (`[policy]`).
    pub policy: crate::model::approval::ApprovalPolicy,
    /// The default agent's id (`main` unless configured).
    pub default_agent: String,
    /// The user's home, for user-scope skills and `~/.agents/templates`
    /// (`HOLON_USER_DIR`, else `$HOME`); never written.
    pub user_home: Option<PathBuf>,
    /// Delegation bounds (`[agents]`).
    pub agent_limits: crate::runtime::settings::limits::AgentLimits,
    /// Holon's directories besides `data_dir` (config, run, logs): never
    /// writable from a sandboxed command.
    pub holon_dirs: Vec<PathBuf>,
    /// Path unix sockets sandboxed commands may reach (`[policy]
    /// unix_sockets`).
    pub unix_sockets: Vec<PathBuf>,
    /// Refuse model commands when the kernel cannot sandbox them
    /// (`[policy] sandbox_required`).
    pub sandbox_required: bool,
    /// Rotated store backups (`[store] backup_every_hours`, `backup_keep`).
    pub backups: BackupSchedule,
    /// Days of history kept (`[store] retain_days`; `None`: everything,
    /// and no scheduled prune).
    pub retain_days: Option<u32>,
    /// Prices: the catalog and `[pricing."PROVIDER/MODEL"]`.
    pub pricing: crate::runtime::provider::catalog::Pricing,
    /// Every agent's daily budget unless it has its own (`[budget]`).
    pub budget: crate::model::agent::Budget,
    /// The MCP servers the operator configured (`[mcp_servers]`).
    pub mcp_servers: Vec<crate::runtime::settings::mcp::ServerConfig>,
    /// The share of the prompt budget MCP tools' definitions may take
    /// whole; past it they are found with ToolSearch (`[mcp]
    /// tool_budget_share`).
    pub mcp_tool_share: f64,
    /// The operator's hooks (`[[hooks.EVENT]]`).
    pub hooks: crate::runtime::settings::hooks::Hooks,
    /// The reviewer of approval requests (`[policy] reviewer` and what
    /// goes with it).
    pub reviewer: crate::runtime::settings::reviewer::ReviewerConfig,
    /// Holon's own program, which holds each command task so it can
    /// outlive the runtime (`None`: commands are the runtime's children).
    pub holder: Option<PathBuf>,
    /// What becomes of running commands: reattached at start or not, left
    /// running or stopped at shutdown.
    pub commands: CommandsFate,
    /// How long a turn that asked for approval waits for the answer
    /// before it ends (`[policy] approval_wait_secs`; zero: it ends at
    /// once, and the answer starts a turn of its own).
    pub approval_wait: Duration,
}

/// Time between TERM and KILL when a command task is stopped, unless
/// configured.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long a turn waits for an approval's answer unless configured: the
/// five minutes a provider's prompt cache commonly lasts, past which going
/// on costs what a new turn would.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(300);

/// Identity facts for `runtime.status`.
#[derive(Debug, Clone, Default)]
pub struct RuntimeInfo {
    /// `embedded` (inside a console), `daemon` or `foreground`.
    pub mode: String,
    pub home: Option<String>,
    pub socket_path: Option<String>,
    /// The effective-config fingerprint the owning process started with.
    pub config_fingerprint: Option<String>,
}

impl HostConfig {
    pub fn new(data_dir: PathBuf, provider: ProviderSource) -> HostConfig {
        HostConfig {
            data_dir,
            provider,
            stop_grace: STOP_GRACE,
            max_rounds: 40,
            stale_reminder: crate::runtime::context::stale::StaleConfig::default(),
            info: RuntimeInfo {
                mode: "embedded".into(),
                home: None,
                socket_path: None,
                config_fingerprint: None,
            },
            config_watch: None,
            exec_env: crate::runtime::exec_env::ExecEnvPolicy::default(),
            tool_output: crate::runtime::settings::limits::ToolOutputBudget::default(),
            policy: crate::model::approval::ApprovalPolicy::default(),
            actors: ActorScope::All,
            default_agent: "main".into(),
            user_home: None,
            agent_limits: crate::runtime::settings::limits::AgentLimits::default(),
            holon_dirs: Vec::new(),
            unix_sockets: Vec::new(),
            sandbox_required: false,
            backups: BackupSchedule::default(),
            retain_days: None,
            pricing: Default::default(),
            budget: Default::default(),
            mcp_servers: Vec::new(),
            mcp_tool_share: crate::runtime::settings::limits::DEFAULT_MCP_TOOL_SHARE,
            hooks: Default::default(),
            reviewer: Default::default(),
            holder: None,
            commands: CommandsFate::StopAtExit,
            approval_wait: DEFAULT_APPROVAL_WAIT,
        }
    }
}

/// Which existing agents a starting runtime gives an actor (recovery runs
/// for all of them either way). A one-shot run starts none and then only
/// the agent it talks to, so other agents' queues wait for a real runtime.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ActorScope {
    #[default]
    All,
    Only(Vec<String>),
}

impl ActorScope {
    pub fn includes(&self, agent_id: &str) -> bool {
        match self {
            ActorScope::All => true,
            ActorScope::Only(ids) => ids.iter().any(|i| i == agent_id),
        }
    }
}

/// When the runtime backs the store up by itself, and how many rotated
/// copies it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupSchedule {
    /// `None`: only on request.
    pub every: Option<Duration>,
    pub keep: usize,
}

impl Default for BackupSchedule {
    fn default() -> Self {
        BackupSchedule {
            every: None,
            keep: 3,
        }
    }
}

/// Re-reads the configuration after its file changed, applies what can be
/// applied live, and names the changed sections (or says why it could not).
pub type ConfigReloader = Arc<dyn Fn() -> Result<Reloaded, String> + Send + Sync>;

/// What a reload of the config file changed.
#[derive(Debug, Clone, Default)]
pub struct Reloaded {
    /// The sections that changed.
    pub changed: Vec<String>,
    /// The MCP servers, when `[mcp_servers]` changed: the runtime's are
    /// replaced (those described as before go on).
    pub mcp_servers: Option<Vec<crate::runtime::settings::mcp::ServerConfig>>,
    /// The hooks, when `[hooks]` changed: the runtime's are replaced
    /// from the next event on.
    pub hooks: Option<crate::runtime::settings::hooks::Hooks>,
    /// The reviewer, when `[policy] reviewer…` changed: replaced for the
    /// next review.
    pub reviewer: Option<crate::runtime::settings::reviewer::ReviewerConfig>,
}

/// The config file to watch and what to do when it changes.
#[derive(Clone)]
pub struct ConfigWatch {
    pub path: PathBuf,
    pub reload: ConfigReloader,
}
