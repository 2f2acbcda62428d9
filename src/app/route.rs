//! Which command runs: `command`, one match over the CLI's commands, a
//! group of subcommands (`holon store`, `holon mcp`, `holon daemon` ...)
//! handed to a function of its own.

use std::process::ExitCode;

use super::cli::{
    self, Command, DaemonCommand, DebugCommand, HooksCommand, McpCommand, StoreCommand, WorkCommand,
};
use super::{
    access, agent_cmd, approval_cmd, commands, console, console_open, daemon, debug, doctor,
    dumb_terminal, hooks_cmd, life, login, mcp_cmd, proposal_cmd, remote_cmd, run, store_cmd,
    stress, transcript_cmd, trigger_cmd, usage_cmd, workspace_cmd, Context,
};
use crate::model::proposal::ProposalKind;

/// Run `command` (none: the console, or the overview where no terminal
/// can draw it). A table by design: one arm per command or group.
pub(super) async fn command(
    ctx: &Context,
    command: Option<Command>,
    screen: console::Screen,
) -> anyhow::Result<ExitCode> {
    match command {
        None => console_or_overview(ctx, screen).await,
        Some(Command::Status { json, all: true }) => remote_cmd::status_all(ctx, json).await,
        Some(Command::Status { json, .. }) => commands::status(ctx, json).await,
        Some(Command::Models { json }) => usage_cmd::models(ctx, json).await,
        Some(Command::Usage { agent, since, json }) => {
            usage_cmd::usage(ctx, agent, since, json).await
        }
        Some(Command::Send(args)) => commands::send(ctx, args).await,
        Some(Command::Events(args)) => commands::events(ctx, args).await,
        Some(Command::Transcript { agent, limit, json }) => {
            transcript_cmd::transcript(ctx, agent, limit, json).await
        }
        Some(Command::Tail { agent }) => transcript_cmd::tail(ctx, agent).await,
        Some(Command::Doctor { json }) => doctor::doctor(ctx, json).await,
        Some(Command::RemoteInfo { json }) => remote_cmd::remote_info(ctx, json).await,
        Some(Command::Remotes(what)) => remote_cmd::remotes(ctx, what),
        Some(Command::Login { provider }) => login::login(ctx, &provider).await,
        Some(Command::Logout { provider }) => login::logout(ctx, &provider),
        Some(Command::Run(args)) => run::run(ctx, args).await,
        Some(Command::Work(WorkCommand::Add {
            objective,
            agent,
            json,
        })) => commands::work_add(ctx, objective, agent, json).await,
        Some(Command::Workspace(cmd)) => workspace_cmd::run(ctx, cmd).await,
        Some(Command::Trigger(cmd)) => trigger_cmd::run(ctx, cmd).await,
        Some(Command::Agent(cmd)) => agent_cmd::run(ctx, cmd).await,
        Some(Command::Skills(cmd)) => agent_cmd::skills(ctx, cmd).await,
        Some(Command::Approvals {
            what:
                Some(cli::ApprovalsCommand::Audit {
                    since,
                    verdict,
                    agent,
                    json,
                }),
            ..
        }) => approval_cmd::audit(ctx, agent, since, verdict, json).await,
        Some(Command::Approvals {
            what: None,
            agent,
            all,
            json,
        }) => approval_cmd::list(ctx, agent, all, json).await,
        Some(Command::Policy { what, change, json }) => policy(ctx, what, change, json).await,
        Some(Command::Approve {
            approval_id,
            always,
            agent,
            json,
        }) => approval_cmd::approve(ctx, approval_id, always, agent, json).await,
        Some(Command::Deny {
            approval_id,
            note,
            agent,
            json,
        }) => approval_cmd::deny(ctx, approval_id, note, agent, json).await,
        Some(Command::Daemon(cmd)) => daemon_command(ctx, cmd).await,
        Some(Command::Attach(how)) => attach(ctx, how, screen).await,
        Some(Command::Hooks(cmd)) => hooks(ctx, cmd).await,
        Some(Command::Mcp(cmd)) => mcp(ctx, cmd).await,
        Some(Command::Store(cmd)) => store(ctx, cmd).await,
        Some(Command::Debug(cmd)) => debug_command(ctx, cmd).await,
    }
}

/// `holon` alone: the console on a terminal that can draw it, else the
/// overview.
async fn console_or_overview(ctx: &Context, screen: console::Screen) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    if terminal && dumb_terminal() {
        eprintln!(
            "holon: this terminal (TERM=dumb) cannot draw the console; here is the \
             overview. `holon --detach`, then `holon attach --plain`, follows an \
             agent line by line"
        );
    }
    if terminal && !dumb_terminal() {
        console_open::open(ctx, screen).await
    } else {
        commands::overview(ctx).await
    }
}

/// `holon policy`: the operator's default policy, its rules, or a
/// workspace's proposed policy shown or adopted.
async fn policy(
    ctx: &Context,
    what: Option<cli::PolicyCommand>,
    change: cli::PolicyArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match what {
        Some(cli::PolicyCommand::Rules(opts)) => approval_cmd::rules(ctx, &opts).await,
        Some(cli::PolicyCommand::Proposal(args)) => {
            proposal_cmd::show(ctx, ProposalKind::Policy, &args).await
        }
        Some(cli::PolicyCommand::Adopt(args)) => {
            proposal_cmd::adopt(ctx, ProposalKind::Policy, &args).await
        }
        None => approval_cmd::default_policy(ctx, &change, json).await,
    }
}

async fn daemon_command(ctx: &Context, cmd: DaemonCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DaemonCommand::Run { mode, access } => daemon::run(ctx, &mode, &access).await,
        DaemonCommand::Start(access) => daemon::detach(ctx, &access).await,
        DaemonCommand::Restart(access) => daemon::restart(ctx, &access).await,
        DaemonCommand::Stop => daemon::stop(ctx).await,
        DaemonCommand::Status { json } => daemon::status(ctx, json).await,
        DaemonCommand::Logs { lines } => daemon::logs(ctx, lines),
    }
}

/// `holon attach`: the console (or, `--plain` or on a dumb terminal, the
/// agent line by line) on a runtime here or elsewhere; `--stdio` is the
/// far end of an ssh link instead.
async fn attach(
    ctx: &Context,
    how: cli::AttachArgs,
    screen: console::Screen,
) -> anyhow::Result<ExitCode> {
    if how.stdio {
        let socket = how.socket.unwrap_or_else(|| ctx.paths.socket_path());
        crate::ui::ssh::serve_stdio(&socket).await?;
        // Leave now: the read of stdin blocks a thread nothing can cancel,
        // and the far console must see the link end (to reconnect) as soon
        // as the runtime's socket does.
        std::process::exit(0);
    }
    let endpoint =
        access::attach_endpoint(ctx, how.target, how.token_file, how.socket, how.fingerprint)?;
    if !how.plain && dumb_terminal() {
        eprintln!(
            "holon: this terminal (TERM=dumb) cannot draw the console; following \
             the agent line by line (--plain)"
        );
    }
    if how.plain || dumb_terminal() {
        commands::attach(ctx, endpoint, how.agent).await
    } else {
        console_open::attach_console(ctx, endpoint, how.agent, screen).await
    }
}

async fn hooks(ctx: &Context, cmd: HooksCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HooksCommand::List { json } => hooks_cmd::hooks_list(ctx, json),
        HooksCommand::Test {
            event,
            name,
            input,
            json,
        } => hooks_cmd::hooks_test(ctx, &event, name, input, json).await,
        HooksCommand::Proposal(args) => proposal_cmd::show(ctx, ProposalKind::Hooks, &args).await,
        HooksCommand::Adopt(args) => proposal_cmd::adopt(ctx, ProposalKind::Hooks, &args).await,
    }
}

async fn mcp(ctx: &Context, cmd: McpCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::List { dir, json } => mcp_cmd::mcp_list(ctx, dir, json).await,
        McpCommand::Approve {
            name,
            dir,
            expect,
            json,
        } => mcp_cmd::mcp_approve(ctx, &name, dir, expect, json).await,
        McpCommand::Disable { name, dir, json } => {
            mcp_cmd::mcp_switch(ctx, &name, dir, true, json).await
        }
        McpCommand::Enable { name, dir, json } => {
            mcp_cmd::mcp_switch(ctx, &name, dir, false, json).await
        }
    }
}

async fn store(ctx: &Context, cmd: StoreCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        StoreCommand::Compact { json } => store_cmd::store_compact(ctx, json).await,
        StoreCommand::Verify { path, json } => store_cmd::store_verify(ctx, path, json).await,
        StoreCommand::Backup { path, json } => store_cmd::store_backup(ctx, path, json).await,
        StoreCommand::Salvage { broken, out, json } => {
            store_cmd::store_salvage(&broken, &out, json).await
        }
        StoreCommand::Prune {
            older_than,
            dry_run,
            json,
        } => store_cmd::store_prune(ctx, older_than, dry_run, json).await,
        StoreCommand::Stats { json } => store_cmd::store_stats(ctx, json).await,
    }
}

async fn debug_command(ctx: &Context, cmd: DebugCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DebugCommand::ExportFixture { agent, dir } => debug::export(ctx, agent, &dir).await,
        DebugCommand::Replay { dir, input } => debug::replay(&dir, input),
        DebugCommand::Latency { agent, turns, json } => {
            debug::latency(ctx, agent, turns, json).await
        }
        DebugCommand::Prompt {
            agent,
            json,
            summary,
        } => debug::prompt(ctx, agent, json, summary).await,
        #[cfg(feature = "bench")]
        DebugCommand::Bench(args) => super::bench::run(args).await,
        DebugCommand::Life {
            agents,
            days,
            retain_days,
            dir,
            json,
        } => {
            let args = life::LifeArgs {
                agents,
                days,
                retain_days,
                dir,
            };
            simulate_life(args, json).await
        }
        DebugCommand::AppendStress { in_flight, count } => {
            stress::append_stress(ctx, in_flight, count).await
        }
    }
}

/// `holon debug life`: a runtime's simulated life, each step said as it
/// goes (or, with `json`, the report at the end).
async fn simulate_life(args: life::LifeArgs, json: bool) -> anyhow::Result<ExitCode> {
    let report = life::simulate(&args, |m| {
        if !json {
            say!("{}", m.line());
        }
    })
    .await?;
    match json {
        true => say!("{}", serde_json::to_string_pretty(&report)?),
        false => say!(
            "{} agents, {} days, {} prompts in {:.0} s",
            args.agents,
            args.days,
            report.prompts,
            report.wall_secs
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether the command serves a runtime for longer than itself: the
/// console's own, or `holon daemon run` (which `--detach` and `daemon
/// start` spawn; `detach` is whether this is `holon --detach`, which only
/// spawns it).
pub(super) fn starts_a_runtime(command: &Option<Command>, detach: bool) -> bool {
    match command {
        None => !detach,
        Some(Command::Daemon(DaemonCommand::Run { .. })) => true,
        Some(_) => false,
    }
}

/// The command's name, without its arguments.
pub(super) fn command_name(command: &Option<Command>) -> &'static str {
    match command {
        None => "console",
        Some(Command::Status { .. }) => "status",
        Some(Command::Models { .. }) => "models",
        Some(Command::Usage { .. }) => "usage",
        Some(Command::Send(_)) => "send",
        Some(Command::Events(_)) => "events",
        Some(Command::Transcript { .. }) => "transcript",
        Some(Command::Doctor { .. }) => "doctor",
        Some(Command::RemoteInfo { .. }) => "remote-info",
        Some(Command::Remotes(_)) => "remotes",
        Some(Command::Login { .. }) => "login",
        Some(Command::Logout { .. }) => "logout",
        Some(Command::Tail { .. }) => "tail",
        Some(Command::Run(_)) => "run",
        Some(Command::Work(_)) => "work",
        Some(Command::Workspace(_)) => "workspace",
        Some(Command::Trigger(_)) => "trigger",
        Some(Command::Agent(_)) => "agent",
        Some(Command::Skills(_)) => "skills",
        Some(Command::Approvals { .. }) => "approvals",
        Some(Command::Approve { .. }) => "approve",
        Some(Command::Policy { .. }) => "policy",
        Some(Command::Deny { .. }) => "deny",
        Some(Command::Attach(_)) => "attach",
        Some(Command::Daemon(_)) => "daemon",
        Some(Command::Store(_)) => "store",
        Some(Command::Mcp(_)) => "mcp",
        Some(Command::Hooks(_)) => "hooks",
        Some(Command::Debug(_)) => "debug",
    }
}
