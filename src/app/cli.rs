//! The command line (clap). Help text is written for a newcomer: each
//! command says what it does and whether it needs a running runtime.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::model::message::Priority;

mod debug;
pub use debug::{BenchArgs, DebugCommand};

#[derive(Debug, Parser)]
#[command(
    name = "holon",
    version,
    about = "Operator console and runtime for long-lived LLM agents",
    long_about = "Holon runs long-lived LLM agents that keep durable queues, work items, \
background tasks, waits and timers, and report back through briefs.\n\n\
Run `holon` with no command to open the console. Everything Holon keeps (config, \
store, logs, control socket) lives under HOLON_HOME when it is set."
)]
pub struct Cli {
    /// Keep every file (config, data, logs, socket) under this directory.
    #[arg(long, env = "HOLON_HOME", global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,

    /// Start the runtime as a background daemon (or report the one already
    /// running), print how to attach, and exit.
    #[arg(long)]
    pub detach: bool,

    /// Draw the console in the terminal's normal screen, keeping its
    /// scrollback, instead of the alternate screen.
    #[arg(long, global = true)]
    pub no_alt_screen: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show each agent's status, queue depth and counts.
    Status {
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// One line per runtime: this machine's and every `[remotes.NAME]`
        /// (reachable, agents, how many need you, today's spend), asked
        /// at once, an unreachable one said as such within 5 s.
        #[arg(long)]
        all: bool,
    },
    /// The model catalog: windows, output limits, prices, reasoning, and
    /// whether each route's credential is set.
    Models {
        #[arg(long)]
        json: bool,
    },
    /// Tokens and cost by day, agent and model, from the ledger.
    Usage {
        /// Only this agent (default: every listed agent).
        #[arg(long)]
        agent: Option<String>,
        /// From this day (2026-11-01) or this many days back (7d).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Send an operator prompt to an agent. It is queued durably and runs
    /// when the agent's runtime processes its queue.
    Send(SendArgs),
    /// Print an agent's events (the durable event ledger), oldest first.
    Events(EventsArgs),
    /// Sign in to a provider: `openai-codex` with ChatGPT (a device code
    /// to enter on any device). Kept in the config directory, mode 0600.
    Login {
        /// The provider (`openai-codex`).
        provider: String,
    },
    /// Forget a provider's sign-in (`openai-codex`).
    Logout {
        /// The provider (`openai-codex`).
        provider: String,
    },
    /// Check the models this runtime would use: how each resolves, its
    /// credential, a probe of its endpoint with that credential, and the
    /// retry policy. Exits non-zero when the default model cannot be used.
    Doctor {
        #[arg(long)]
        json: bool,
    },
    /// How to reach this runtime from another machine: its listener's
    /// `wss://` URL, the certificate fingerprint to pin, the token file to
    /// copy (never the token), and the ssh address that needs neither.
    RemoteInfo {
        #[arg(long)]
        json: bool,
    },
    /// Other machines' runtimes this console reaches by name
    /// (`[remotes.NAME]` in config.toml): `holon attach NAME`, the
    /// console's runtime switcher, `holon status --all`.
    #[command(subcommand)]
    Remotes(RemotesCommand),
    /// Print an agent's transcript, oldest first: what the model was
    /// given, what it said and called, each tool's result, and failed
    /// turns with their provider attempts. Works without a runtime.
    Transcript {
        /// Whose transcript (default: the default agent).
        #[arg(long)]
        agent: Option<String>,
        /// The newest N entries (at most 1,000).
        #[arg(long, default_value_t = 50, value_name = "N")]
        limit: usize,
        /// One transcript entry per line, as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Follow an agent as it works: its transcript and briefs as they
    /// happen, the answer as it streams (needs a running runtime; Ctrl+C
    /// ends it, never the agent).
    Tail {
        /// Whose (default: the default agent).
        #[arg(long)]
        agent: Option<String>,
    },
    /// Run one prompt to completion with the runtime in this process (it
    /// needs the store: stop a running runtime first) and print the result.
    Run(RunArgs),
    /// Work items: the durable, goal-oriented units of an agent's work.
    #[command(subcommand)]
    Work(WorkCommand),
    /// Workspaces: the directories (usually git repositories) an agent's
    /// tools work in. Works with or without a running runtime.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// The agent's external trigger: a URL that outside systems (CI,
    /// webhooks) POST to, to wake it. Works with or without a running
    /// runtime (only a running one serves the URL).
    #[command(subcommand)]
    Trigger(TriggerCommand),
    /// Agents: list the public ones (with their children), create one from
    /// a template, show one, archive one.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Skills an agent's prompt lists, with their activation state.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Tool calls waiting for your approval, across agents (works without
    /// a running runtime).
    Approvals {
        #[command(subcommand)]
        what: Option<ApprovalsCommand>,
        #[arg(long)]
        agent: Option<String>,
        /// Include recently answered ones.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// The default policy of every workspace without its own: which tool
    /// calls wait for your approval, and how the kernel confines model
    /// commands. Kept by the runtime over config `[policy]` until
    /// `--reset`; with no option, shows it. `holon policy rules` lists
    /// what your "always" answers allowed, workspace by workspace.
    #[command(args_conflicts_with_subcommands = true)]
    Policy {
        #[command(subcommand)]
        what: Option<PolicyCommand>,
        #[command(flatten)]
        change: PolicyArgs,
        #[arg(long)]
        json: bool,
    },
    /// Approve a waiting tool call: it runs and its result goes to the
    /// agent. Needs the running runtime.
    Approve {
        approval_id: String,
        /// Also allow calls like it from now on (the command's program and
        /// subcommand, or the patch's paths) in that workspace.
        #[arg(long)]
        always: bool,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Deny a waiting tool call; the agent is told, with your note.
    Deny {
        approval_id: String,
        #[arg(long)]
        note: Option<String>,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Open the console on a running runtime (started with `holon
    /// --detach`). Closing it never stops the runtime.
    Attach(AttachArgs),
    /// The runtime process: run it, start it in the background, stop it,
    /// inspect it.
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// The store file: maintenance that needs it to itself.
    #[command(subcommand)]
    Store(StoreCommand),
    /// MCP servers (`[mcp_servers.NAME]`): their state and the tools they
    /// offer the model.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Operator hooks (`[[hooks.EVENT]]` in config.toml): what runs on
    /// each event, and a trial run of one.
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Tools for developers: fixtures, the prompt frame, stress helpers (and benchmarks, built with the `bench` feature).
    #[command(subcommand)]
    Debug(DebugCommand),
}

#[derive(Debug, Clone, Args)]
pub struct TriggerOpts {
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
        #[arg(long)]
        json: bool,
    },
    /// Create a public named agent; its home is made from the template
    /// (`holon-default` unless given), all or nothing.
    Create {
        agent_id: String,
        /// A template id (`holon-default`, `holon-developer`, or one under
        /// `~/.agents/templates/`) or an absolute template directory.
        #[arg(long)]
        template: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One agent: identity, posture, counts and children.
    Show {
        agent_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Archive an agent: it stops, its children stop, it leaves the
    /// listings; records and ledger stay.
    Archive {
        agent_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Show or set the agent's own daily budget (over `[budget]`); when
    /// its spend today (UTC) reaches it, it is paused until the next day.
    Budget {
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
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// The catalog (user, agent and workspace scopes) and what is active.
    List {
        #[arg(long)]
        agent: Option<String>,
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
pub enum RemotesCommand {
    /// The configured remotes (no connection is made: `holon status --all`
    /// asks each).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a remote to config.toml (its comments and layout kept).
    Add {
        /// Its name: lower-case letters, digits, - and _.
        name: String,
        /// `ssh://[USER@]HOST[:PORT][/HOME]`, or `wss://HOST:PORT` with
        /// --fingerprint and --token-file.
        url: String,
        /// The certificate a wss:// remote presents (`holon remote-info`
        /// there prints it).
        #[arg(long, value_name = "SHA256:HEX")]
        fingerprint: Option<String>,
        /// A copy of that runtime's token (0600), for ws:// and wss://.
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// Change a remote of that name instead of refusing.
        #[arg(long)]
        replace: bool,
    },
    /// Remove a remote from config.toml.
    Remove { name: String },
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// The hooks this workspace's repository proposes
    /// (`.holon/hooks.toml`), as written, and whether you approved them:
    /// they run (always sandboxed, without network) only while the file's
    /// text is what you approved.
    Proposal(ProposalArgs),
    /// Approve the repository's proposed hooks for the file's exact text
    /// (shown first, and asked on a terminal), or withdraw that.
    Adopt(AdoptArgs),
    /// Each hook by event: its command, whether the kernel confines it,
    /// its time limit, the tools it runs for, and what its failure means.
    List {
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the hooks of EVENT (pre_tool, post_tool, turn_end,
    /// approval_requested, brief, agent_idle, prompt_submitted) once on
    /// a sample input, as the runtime would, and show what each decided.
    /// Records nothing.
    Test {
        event: String,
        /// Only the hook of this name.
        #[arg(long)]
        name: Option<String>,
        /// A JSON file whose `agent_id`, `workspace`, `tool` and `args`
        /// replace the sample's.
        #[arg(long)]
        input: Option<PathBuf>,
        /// One JSON line per hook.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Each server: its transport, state (idle, starting, running, failed
    /// with the reason, disabled, awaiting approval) and the tools it
    /// offers; the config file's, then those of the `.mcp.json` nearest
    /// above the directory.
    List {
        /// Where to look for a `.mcp.json` (default: here).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let server NAME of the workspace's `.mcp.json` start, with the
    /// command line the file gives it now (a changed command line needs
    /// approving again).
    Approve {
        name: String,
        /// Where to look for the `.mcp.json` (default: here).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The line `holon mcp list` showed, to approve without being
        /// asked (refused if the file now says anything else). Without
        /// it, the line is shown and you are asked, on a terminal only.
        #[arg(long)]
        expect: Option<String>,
        /// Print the approval as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop server NAME and offer none of its tools until enabled again:
    /// the config file's server of that name, else (or with --dir) the
    /// one of the `.mcp.json` nearest above the directory.
    Disable {
        name: String,
        /// Where to look for the `.mcp.json` (default: here).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Enable a server `holon mcp disable` disabled.
    Enable {
        name: String,
        /// Where to look for the `.mcp.json` (default: here).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Compact the store file and report the bytes reclaimed. The runtime
    /// must not be running (`holon daemon stop` first): compaction needs
    /// the file to itself.
    Compact {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a store: the storage engine's integrity check, then every
    /// agent's ledger without gaps, every event decoding, and every index
    /// and queue entry pointing at something that exists. Exits non-zero
    /// naming what is wrong (the runtime must not be running on it).
    Verify {
        /// Another store file (default: this home's).
        path: Option<std::path::PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a consistent copy of the store, also while the runtime runs (a
    /// read snapshot: agents keep working). Without PATH the copy goes to
    /// `backups/` beside the store, where `[store] backup_keep` rotates.
    Backup {
        /// Where to write the copy (must not exist).
        path: Option<std::path::PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy every record still readable from a damaged store into a new
    /// one, rebuild the indexes from the records, verify it, and print what
    /// was recovered and what was lost. BROKEN is only read.
    Salvage {
        /// The damaged store.
        broken: std::path::PathBuf,
        /// The new store (must not exist).
        out: std::path::PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove each agent's history older than `--older-than` (else
    /// `[store] retain_days`) that nothing current needs: whole sealed
    /// blocks of its ledger, transcript entries behind its compaction
    /// boundary, tool executions and settled queue entries. Through a
    /// running runtime, or on the store here. Each agent's ledger records
    /// `store_pruned`, and paging below the cut says so.
    Prune {
        /// How old history must be to go: days, as `30d` or `30`.
        #[arg(long, value_name = "DAYS", value_parser = parse_days)]
        older_than: Option<u32>,
        /// Only say what would go.
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// What the store file holds, table by table: rows, stored bytes,
    /// B-tree overhead and unused space (the runtime must not be running).
    Stats {
        /// Print the sizes as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum WorkCommand {
    /// Queue a new open work item for an agent (it does not replace the
    /// agent's current focus).
    Add {
        /// What the work item should achieve.
        objective: String,
        #[arg(long)]
        agent: Option<String>,
        /// Print the work item as JSON.
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
        workspace_id: String,
        #[command(flatten)]
        opts: WorkspaceOpts,
    },
    /// Set one workspace's own policy (`agent_home` included), over the
    /// runtime's default (`holon policy`): which tool calls wait for your
    /// approval, and how the kernel confines model commands.
    Policy {
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

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Run the runtime in this terminal, serving the control socket, until
    /// Ctrl+C, SIGTERM or a shutdown request.
    Run {
        /// How the runtime describes itself (foreground or daemon).
        #[arg(long, default_value = "foreground", hide = true)]
        mode: String,
        #[command(flatten)]
        access: AccessArgs,
    },
    /// Start the runtime in the background (same as `holon --detach`). A
    /// runtime already running with the same effective config is reported;
    /// one with a different config is left alone (use `daemon restart`).
    Start(AccessArgs),
    /// Stop the background runtime (if any) and start it again with these
    /// options (none: the configured local defaults).
    Restart(AccessArgs),
    /// Stop the background runtime: graceful shutdown through the socket,
    /// then SIGTERM, then SIGKILL, each bounded.
    Stop,
    /// Is a runtime running? pid, socket, uptime, activity, last failure.
    /// Exits 3 when none runs.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Where the logs are, recent failures, and the log's last lines.
    Logs {
        /// How many lines of the log to show.
        #[arg(short = 'n', long = "lines", default_value_t = 50)]
        lines: usize,
    },
}

/// Who may reach the runtime's HTTP listener (trigger ingress and remote
/// attach over WebSocket), and how it presents itself.
#[derive(Debug, Clone, Default, Args, serde::Serialize, serde::Deserialize)]
pub struct AccessArgs {
    /// `local` (loopback only, the default), `lan` or `tailnet`. Anything
    /// but local is plaintext: prefer an ssh tunnel or a tailnet.
    #[arg(long, value_enum)]
    pub access: Option<crate::app::access::Access>,
    /// The listener's IP:PORT (default: `[server] listen`, 127.0.0.1:7464).
    #[arg(long, value_name = "IP:PORT")]
    pub listen: Option<String>,
    /// The base URL trigger URLs are given with (a proxy or tailnet name).
    #[arg(long, value_name = "URL")]
    pub advertise: Option<String>,
    /// The bearer token for remote attach (default: run/remote-token under
    /// the home, created 0600 on first start).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

impl AccessArgs {
    /// The same options as command-line arguments (for the child process).
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut out: Vec<std::ffi::OsString> = Vec::new();
        if let Some(a) = self.access {
            out.extend(["--access".into(), a.as_str().into()]);
        }
        if let Some(l) = &self.listen {
            out.extend(["--listen".into(), l.into()]);
        }
        if let Some(a) = &self.advertise {
            out.extend(["--advertise".into(), a.into()]);
        }
        if let Some(f) = &self.token_file {
            out.extend(["--token-file".into(), f.into()]);
        }
        out
    }
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The prompt text.
    pub text: String,
    /// The agent to send to (default: HOLON_AGENT_ID, the config's
    /// `runtime.default_agent`, or `main`).
    #[arg(long)]
    pub agent: Option<String>,
    /// Scheduling priority: interject, next, normal or background.
    #[arg(long, default_value = "normal")]
    pub priority: Priority,
    /// Print the admission record as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt text.
    pub prompt: String,
    /// Run on this existing agent instead of a temporary private one.
    #[arg(long)]
    pub agent: Option<String>,
    /// With --agent: create the agent when it does not exist.
    #[arg(long, requires = "agent")]
    pub create_agent: bool,
    /// The model for this run, e.g. openai/gpt-4.1 (the agent's model
    /// override; restored afterwards on an existing agent).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Print one JSON object: final_text, raw_final_text, token_usage,
    /// provider_attempt_timeline, failure_artifact, agent_id, message_id,
    /// turn_terminal.
    #[arg(long)]
    pub json: bool,
    /// Work in this directory instead of the current one (the agent's
    /// workspace: its git repository, with this directory as cwd).
    #[arg(short = 'C', long = "workspace", value_name = "PATH")]
    pub workspace: Option<PathBuf>,
    /// Give up after this many seconds (exit 1; the agent keeps its state).
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Whose events (default: the default agent).
    #[arg(long)]
    pub agent: Option<String>,
    /// Start at this event_seq (events are numbered from 1 per agent).
    #[arg(long, default_value_t = 1, value_name = "SEQ")]
    pub from: u64,
    /// Print at most this many events.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only events of this kind, e.g. message_admitted or scheduler_decision.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// One JSON object per line: event_seq, id, ts, kind, agent_id,
    /// provenance, payload.
    #[arg(long)]
    pub json: bool,
    /// Keep printing new events as they are recorded (needs a running
    /// runtime).
    #[arg(long)]
    pub follow: bool,
}

/// A number of days, as `30d` or `30` (1 to 36500).
pub(super) fn parse_days(s: &str) -> Result<u32, String> {
    let digits = s.trim().strip_suffix('d').unwrap_or(s.trim());
    let days: u32 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a number of days (e.g. 30d)"))?;
    if days == 0 || days > crate::runtime::retention::MAX_DAYS {
        return Err(format!(
            "{days} days is out of range: give 1 to {}",
            crate::runtime::retention::MAX_DAYS
        ));
    }
    Ok(days)
}

/// Where `holon attach` opens the console, and how.
#[derive(Debug, Args)]
pub struct AttachArgs {
    /// A runtime on another machine: a `[remotes.NAME]` by its name,
    /// `ssh://[USER@]HOST[:PORT][/HOME]` (the operator's own ssh starts
    /// `holon attach --stdio` there), or a listener, `wss://HOST:PORT`
    /// with `--fingerprint` (`ws://` on loopback or a tailnet);
    /// default: this home's control socket.
    #[arg(value_name = "NAME | ssh://HOST | wss://HOST:PORT")]
    pub target: Option<String>,
    /// The bearer token file for a ws:// or wss:// target (default:
    /// this home's run/remote-token).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The certificate a wss:// target must present: `SHA256:…`, as
    /// `holon remote-info` prints it on that machine.
    #[arg(long, value_name = "SHA256:HEX")]
    pub fingerprint: Option<String>,
    /// The control socket (default: this home's).
    #[arg(long, conflicts_with = "target")]
    pub socket: Option<PathBuf>,
    #[arg(long)]
    pub agent: Option<String>,
    /// No console: print events as text lines and send each line typed
    /// as a prompt (for scripts and dumb terminals).
    #[arg(long)]
    pub plain: bool,
    /// No console: carry the control socket over stdin and stdout (what
    /// `holon attach ssh://` runs on the far side).
    #[arg(
        long,
        conflicts_with_all = ["target", "plain", "agent", "token_file", "fingerprint"]
    )]
    pub stdio: bool,
}
