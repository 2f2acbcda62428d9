//! The commands that keep the house: the daemon and how it is reached,
//! the store, remote runtimes, hooks and MCP servers.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::agents::{AdoptArgs, ProposalArgs};
use super::parse_days;

#[derive(Debug, Subcommand)]
pub enum RemotesCommand {
    /// The configured remotes (no connection is made: `holon status --all`
    /// asks each).
    List {
        /// Print the answer as JSON.
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
    Remove {
        /// The remote's name (`holon remotes list` shows them).
        name: String,
    },
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
        /// The event whose hooks run (`pre_tool`, `post_tool`, ...).
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
        /// The server's name in `.mcp.json`.
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
        /// The server's name (`holon mcp list` shows them).
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
        /// The server's name (`holon mcp list` shows them).
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
        /// Print the answer as JSON.
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
