//! The command line (clap). Help text is written for a newcomer: each
//! command says what it does and whether it needs a running runtime.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::model::message::Priority;

mod admin;
mod agents;
mod debug;
pub use admin::{
    AccessArgs, DaemonCommand, HooksCommand, McpCommand, RemotesCommand, StoreCommand,
};
pub use agents::{
    AdoptArgs, AgentCommand, ApprovalsCommand, PolicyArgs, PolicyCommand, ProposalArgs,
    SkillsCommand, TriggerCommand, TriggerOpts, WorkspaceCommand, WorkspaceOpts,
};
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
        /// Print the answer as JSON.
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
        /// Print the answer as JSON.
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
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// How to reach this runtime from another machine: its listener's
    /// `wss://` URL, the certificate fingerprint to pin, the token file to
    /// copy (never the token), and the ssh address that needs neither.
    RemoteInfo {
        /// Print the answer as JSON.
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
        /// Only this agent's (default: every agent's).
        #[arg(long)]
        agent: Option<String>,
        /// Include recently answered ones.
        #[arg(long)]
        all: bool,
        /// Print the answer as JSON.
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
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a waiting tool call: it runs and its result goes to the
    /// agent. Needs the running runtime.
    Approve {
        /// The approval's id (`holon approvals` lists them).
        approval_id: String,
        /// Also allow calls like it from now on (the command's program and
        /// subcommand, or the patch's paths) in that workspace.
        #[arg(long)]
        always: bool,
        /// The agent (default: HOLON_AGENT_ID, the config's
        /// `runtime.default_agent`, or `main`).
        #[arg(long)]
        agent: Option<String>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Deny a waiting tool call; the agent is told, with your note.
    Deny {
        /// The approval's id (`holon approvals` lists them).
        approval_id: String,
        /// Why, for the agent to read.
        #[arg(long)]
        note: Option<String>,
        /// The agent (default: HOLON_AGENT_ID, the config's
        /// `runtime.default_agent`, or `main`).
        #[arg(long)]
        agent: Option<String>,
        /// Print the answer as JSON.
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

#[derive(Debug, Subcommand)]
pub enum WorkCommand {
    /// Queue a new open work item for an agent (it does not replace the
    /// agent's current focus).
    Add {
        /// What the work item should achieve.
        objective: String,
        /// The agent (default: HOLON_AGENT_ID, the config's
        /// `runtime.default_agent`, or `main`).
        #[arg(long)]
        agent: Option<String>,
        /// Print the work item as JSON.
        #[arg(long)]
        json: bool,
    },
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
    /// The agent (default: HOLON_AGENT_ID, the config's
    /// `runtime.default_agent`, or `main`).
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `--help` explains every argument of every command a person sees.
    #[test]
    fn every_argument_says_what_it_is() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if a.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "holon", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without help:\n{}",
            missing.join("\n")
        );
    }
}
