//! `holon debug`: the commands for developers (prompt preview, scheduler
//! fixtures and replay, the simulated year, the benchmarks and the crash
//! test's append stress), apart from the ones operators use.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::parse_days;

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Run the performance benchmarks and print their figures (built with
    /// the `bench` cargo feature only).
    #[cfg(feature = "bench")]
    Bench(BenchArgs),
    /// Print the prompt frame the agent's next turn would send: each
    /// section with its token estimate, the verbatim history, the budget,
    /// and what was (or would be) compacted.
    Prompt {
        /// The agent (default: HOLON_AGENT_ID, the config's
        /// `runtime.default_agent`, or `main`).
        #[arg(long)]
        agent: Option<String>,
        /// The whole preview as JSON.
        #[arg(long)]
        json: bool,
        /// Section headers and sizes only, no text.
        #[arg(long)]
        summary: bool,
    },
    /// Where the agent's recent turns spent their time (queue wait,
    /// context, model, tools, the runtime's own), from its events.
    Latency {
        /// The agent (default: HOLON_AGENT_ID, the config's
        /// `runtime.default_agent`, or `main`).
        #[arg(long)]
        agent: Option<String>,
        /// How many of the last turns.
        #[arg(long, default_value_t = 20)]
        turns: usize,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write an agent's records as a scheduler replay fixture folder
    /// (agent.json, ledger/*.jsonl, expected.json).
    ExportFixture {
        /// The agent (default: HOLON_AGENT_ID, the config's
        /// `runtime.default_agent`, or `main`).
        #[arg(long)]
        agent: Option<String>,
        /// The folder the fixture is written to.
        dir: PathBuf,
    },
    /// Rebuild the scheduler projection from a fixture folder and print the
    /// projection, decision, closure and posture as JSON.
    Replay {
        /// The fixture folder (`holon debug export-fixture` writes one).
        dir: PathBuf,
        /// idle (default), wake_hint or message; a fixture's `input` file
        /// is used when this is not given.
        #[arg(long)]
        input: Option<crate::runtime::fixture::ReplayInput>,
    },
    /// Simulate agents living for days on a paused clock the simulation
    /// moves (prompts, timers, wake hints, work items, children,
    /// compactions), printing the runtime's figures every 30 days.
    Life {
        /// How many agents live it.
        #[arg(long, default_value_t = 3)]
        agents: usize,
        /// How many simulated days.
        #[arg(long, default_value_t = 60)]
        days: u32,
        /// Prune history older than this many days at each day's end.
        #[arg(long, value_name = "DAYS", value_parser = parse_days)]
        retain_days: Option<u32>,
        /// Where the store and agent homes go (kept).
        #[arg(long)]
        dir: PathBuf,
        /// The whole report as JSON at the end.
        #[arg(long)]
        json: bool,
    },
    /// Append events as fast as possible, printing each acknowledged
    /// event_seq on its own line (used by the crash-durability test).
    #[command(hide = true)]
    AppendStress {
        /// Appends kept in flight at once.
        #[arg(long, default_value_t = 256)]
        in_flight: usize,
        /// Stop after this many events (default: run until killed).
        #[arg(long)]
        count: Option<u64>,
    },
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmarks: store (writer burst and latency), paging, status,
    /// scheduler (decide), restart, turns (runtime cost per provider round,
    /// ExecCommand latency), stop (abort and shutdown with a model call in
    /// flight), console, admit (prompt.submit from 8 socket clients, paused
    /// and while turns run), context (prompt frame with 100 and 10,000
    /// transcript entries, compaction per turn, MemorySearch over 100,000
    /// briefs), workspace (UseWorkspace direct and isolated on a
    /// 10,000-file repository, the per-turn execution block), socket,
    /// triggers (HTTP delivery to a durable wake hint, 8 concurrent
    /// senders, runtime.status over WebSocket against the socket), agents
    /// (SpawnAgent to the child's first provider request, 50 children at
    /// once, memory per idle child), sandbox (spawn to first output,
    /// sandboxed and not), all
    /// (the previous ones), hooks (a sandboxed pre_tool hook's cost per
    /// tool call through a real turn, and a post_tool hook's), idle (runtime CPU while idle), soak (RSS
    /// under 50 prompts/s with subscribers, every 10 s), faults (an I/O
    /// fault at every point of a scripted run) or backup (`store backup`
    /// of 1,000 agents and 1M events while 8 writers admit prompts) or
    /// connections (`holon status` and a daemon's RSS under 5,000 idle TCP
    /// and 300 idle control clients) or scale (a daemon holding
    /// `--agents` idle agents: RSS, runtime.status, agents.list, `holon
    /// status`, restart, homes on disk) or life (`--agents` agents for
    /// `--days` simulated days on a paused clock, with and without
    /// retention: RSS, store bytes, decision, frame and search times every
    /// 30 days) or mcp (an MCP server's start, a call's round trip, a
    /// daemon's RSS with three servers configured and none used; needs
    /// `--example mcp_stub` built beside the binary) or tools (MCP tools'
    /// definitions per request sent whole and on demand, three servers;
    /// needs `mcp_stub` too) or crowd (`--agents`
    /// agents, default 100, running turns at once: admissions and an
    /// attached console's key-to-frame) or salvage (`store salvage` of a
    /// store damaged four ways: what it recovers, how fast) or attach
    /// (`holon attach` in a pseudo-terminal through `--turns` turns: its
    /// RSS) or older (older turns paged into an open console at the top
    /// of a `--ledger`-event conversation: page and key-to-frame times)
    /// or bridge (a `--ledger`-event agent, at most 100,000, paged over
    /// the ssh stdio bridge and over the socket: the bridge's overhead);
    /// the last fourteen are not part of all.
    #[arg(default_value = "all")]
    pub which: String,
    /// Events appended in the burst benchmark.
    #[arg(long, default_value_t = 200_000)]
    pub events: u64,
    /// Size of the large ledger for the paging, status and older
    /// benchmarks.
    #[arg(long, default_value_t = 1_000_000)]
    pub ledger: u64,
    /// Seconds the idle benchmark observes the runtime.
    #[arg(long, default_value_t = 30)]
    pub idle_secs: u64,
    /// Agents the scale benchmark holds in one runtime (default 1,000), the
    /// life benchmark simulates (default 50), or the crowd benchmark runs
    /// at once (default 100).
    #[arg(long)]
    pub agents: Option<usize>,
    /// Simulated days of the life benchmark.
    #[arg(long, default_value_t = 365)]
    pub days: u32,
    /// The life benchmark's retention, in days (it also runs keeping
    /// everything, for comparison).
    #[arg(long, default_value_t = 30)]
    pub retain_days: u32,
    /// Seconds the soak benchmark runs.
    #[arg(long, default_value_t = 180)]
    pub secs: u64,
    /// Turns the attach benchmark runs.
    #[arg(long, default_value_t = 2_000)]
    pub turns: u64,
    /// Directory for the benchmark stores (default: a temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}
