//! The commands about agents and where they work: agents, skills,
//! triggers, approvals, workspaces and approval policies.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Clone, Args)]
pub struct TriggerOpts {
    /// The agent (default: HOLON_AGENT_ID, the config's
    /// `runtime.default_agent`, or `main`).
    #[arg(long)]
    pub agent: Option<String>,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Public agents, each with its children (posture and task state).
    List {
        /// Only agents whose id contains this (any case).
        #[arg(long)]
        query: Option<String>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a public named agent; its home is made from the template
    /// (`holon-default` unless given), all or nothing.
    Create {
        /// The agent's id.
        agent_id: String,
        /// A template id (`holon-default`, `holon-developer`, or one under
        /// `~/.agents/templates/`) or an absolute template directory.
        #[arg(long)]
        template: Option<String>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One agent: identity, posture, counts and children.
    Show {
        /// The agent's id.
        agent_id: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Archive an agent: it stops, its children stop, it leaves the
    /// listings; records and ledger stay.
    Archive {
        /// The agent's id.
        agent_id: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show or set the agent's own daily budget (over `[budget]`); when
    /// its spend today (UTC) reaches it, it is paused until the next day.
    Budget {
        /// The agent's id.
        agent_id: String,
        /// Dollars a day at priced rounds.
        #[arg(long, value_name = "USD")]
        daily_usd: Option<f64>,
        /// Input + output tokens a day.
        #[arg(long, value_name = "N")]
        daily_tokens: Option<u64>,
        /// Remove its own limits first (the runtime's apply again).
        #[arg(long)]
        clear: bool,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// The catalog (user, agent and workspace scopes) and what is active.
    List {
        /// The agent (default: HOLON_AGENT_ID, the config's
        /// `runtime.default_agent`, or `main`).
        #[arg(long)]
        agent: Option<String>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TriggerCommand {
    /// The trigger URL (issued on first ask), its deliveries and the
    /// agent's open external waits.
    Show(TriggerOpts),
    /// Issue a new URL; the old one stops working at once.
    Rotate(TriggerOpts),
    /// Revoke the URL; nothing can wake the agent through it until
    /// `rotate` issues a new one.
    Revoke(TriggerOpts),
    /// Deliver as an external system would: a wake hint with this
    /// provenance (satisfies a wait naming the same source and resource).
    Deliver {
        #[command(flatten)]
        opts: TriggerOpts,
        /// Which system fired (e.g. ci).
        #[arg(long)]
        source: Option<String>,
        /// What changed there (matched against a wait's external_ref).
        #[arg(long)]
        resource: Option<String>,
        /// One line about what happened.
        #[arg(long)]
        summary: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Every request the reviewer model (`[policy] reviewer`) looked at,
    /// newest first: its verdict, whether its word answered the request,
    /// the model, its reason, time, tokens, cost and the policy's digest.
    Audit {
        /// Only those reviewed since: days (7d) or a date (2026-11-01).
        #[arg(long)]
        since: Option<String>,
        /// Only this verdict: allow, deny or ask.
        #[arg(long)]
        verdict: Option<String>,
        /// Only this agent's.
        #[arg(long)]
        agent: Option<String>,
        /// Print the records as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// The agent's attached workspaces, which one is active, and where its
    /// tools act (execution root, cwd, worktree).
    List(WorkspaceOpts),
    /// Attach a directory (its git repository's top level when inside one)
    /// without making it active. The sandbox lets an agent's commands
    /// write only where the operator attached (or approved).
    #[command(visible_alias = "add")]
    Attach {
        /// The directory (default: the current one).
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        opts: WorkspaceOpts,
    },
    /// Make a workspace active: a path (attached if new), an attached
    /// workspace id, or `agent_home`.
    Use {
        /// A directory, a workspace id, or `agent_home`.
        target: String,
        /// Work in a managed git worktree on its own branch instead of the
        /// checkout itself.
        #[arg(long)]
        isolated: bool,
        #[command(flatten)]
        opts: WorkspaceOpts,
    },
    /// Remove a workspace from the agent's attached set. Never the active
    /// one (switch first); nothing on disk is touched.
    Detach {
        /// The workspace's id (`holon workspace list` shows them).
        workspace_id: String,
        #[command(flatten)]
        opts: WorkspaceOpts,
    },
    /// Set one workspace's own policy (`agent_home` included), over the
    /// runtime's default (`holon policy`): which tool calls wait for your
    /// approval, and how the kernel confines model commands.
    Policy {
        /// The workspace's id (`holon workspace list` shows them).
        workspace_id: String,
        #[command(flatten)]
        change: PolicyArgs,
        #[command(flatten)]
        opts: WorkspaceOpts,
    },
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// The rules your "always" answers added, in each of the agent's
    /// workspaces, with how to remove one (`--forget RULE`).
    Rules(WorkspaceOpts),
    /// The reviewer policy this workspace's repository proposes
    /// (`.holon/policy.md`), as written, and whether you approved it: the
    /// reviewer reads it only while its text is what you approved.
    Proposal(ProposalArgs),
    /// Approve the repository's proposed reviewer policy for its exact
    /// text (shown first, and asked on a terminal), or withdraw that.
    Adopt(AdoptArgs),
}

/// Which workspace's proposal (`holon policy|hooks proposal`).
#[derive(Debug, Args)]
pub struct ProposalArgs {
    /// The workspace (default: the one here).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// An approval of a proposal's exact text (`holon policy|hooks adopt`).
#[derive(Debug, Args)]
pub struct AdoptArgs {
    /// The workspace (default: the one here).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The sha256 `proposal` showed, to approve without being asked
    /// (refused if the text is no longer that).
    #[arg(long, value_name = "SHA256", conflicts_with = "revoke")]
    pub expect: Option<String>,
    /// Withdraw the approval.
    #[arg(long)]
    pub revoke: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A change to an approval policy: every field optional; none at all
/// only shows it.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// on_request (only a command's request to leave the sandbox asks),
    /// never, on_write (commands that may write and patches ask) or
    /// always.
    #[arg(long)]
    pub approval: Option<String>,
    /// workspace_write (the default: writes only inside the execution
    /// root, the agent's home and a private temporary directory),
    /// read_only, or off (no confinement).
    #[arg(long)]
    pub sandbox: Option<String>,
    /// off (the default: model commands open no network sockets) or on.
    #[arg(long)]
    pub network: Option<String>,
    /// Who reviews approval requests here: a model (`provider/model`),
    /// `off`, or `default` (config `[policy] reviewer`). Its written
    /// policy is config `[policy] reviewer_policy` with this
    /// workspace's own `workspaces/ID/policy.md` beside config.toml.
    #[arg(long, value_name = "MODEL")]
    pub reviewer: Option<String>,
    /// A command prefix that never asks (repeatable), e.g. "cargo test".
    #[arg(long = "allow-command", value_name = "PREFIX")]
    pub allow_commands: Vec<String>,
    /// A path prefix patches may write without asking (repeatable).
    #[arg(long = "allow-path", value_name = "PATH")]
    pub allow_paths: Vec<String>,
    /// Remove a rule (repeatable): one your "always" answers added, or an
    /// allow-list entry (`holon policy rules` lists them).
    #[arg(long = "forget", value_name = "RULE", conflicts_with = "reset")]
    pub forget: Vec<String>,
    /// Start again from what is inherited (before any other change
    /// given): a workspace from the runtime's default, the runtime's
    /// default from config `[policy]`.
    #[arg(long)]
    pub reset: bool,
}

#[derive(Debug, Args)]
pub struct WorkspaceOpts {
    /// The agent (default: HOLON_AGENT_ID, `runtime.default_agent`, or
    /// `main`).
    #[arg(long)]
    pub agent: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
