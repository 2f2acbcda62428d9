//! The runtime as a process: `holon daemon run` (the runtime in this
//! process, serving the control socket until SIGINT/SIGTERM/SIGHUP or a
//! `runtime.shutdown` request), `holon --detach` / `daemon start` (that
//! same mode re-executed in its own session with stdio to a log file,
//! waited for until its socket answers), and `daemon status|stop|logs`.
//! The pid file and socket live in the run directory; stale ones from a
//! dead process are cleaned, anything else is refused.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::signal::unix::{signal, SignalKind};

use super::cli::AccessArgs;
use super::control::socket::{bind, probe, Probe};
use super::Context;
use crate::model::process::ProcessIdentity;
use crate::protocol::{Request, RuntimeClient, RuntimeStatus};
use crate::runtime::process_identity::Liveness;
use crate::ui::client::SocketClient;
use crate::ui::present::counted;

/// Exit code of `daemon status` when no runtime runs (LSB "not running").
pub const EXIT_NOT_RUNNING: u8 = 3;

#[derive(Debug, Serialize, Deserialize)]
pub struct PidFile {
    pub pid: u32,
    pub home: Option<String>,
    pub socket_path: String,
    pub started_at: String,
    pub version: String,
    /// What proves `pid` is still this runtime (pid files written before
    /// it existed have none, and are never signalled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_identity: Option<ProcessIdentity>,
    /// The access options it was started with, so `daemon status` can
    /// tell whether the config on disk still gives the same fingerprint.
    #[serde(default)]
    pub access: AccessArgs,
}

impl PidFile {
    /// Whether the runtime this file names still runs, verified by its
    /// recorded identity; `false` for a pid that now names a stranger.
    fn still_running(&self) -> bool {
        match &self.process_identity {
            Some(id) => id.liveness() == Liveness::Running,
            // Unverifiable: it may be anyone's now.
            None => false,
        }
    }
}

pub fn pid_path(ctx: &Context) -> PathBuf {
    ctx.paths.run_dir.join("daemon.pid")
}

pub fn daemon_out_path(ctx: &Context) -> PathBuf {
    ctx.paths.log_dir.join("daemon.out")
}

/// Whether `pid` names a running process. A zombie (exited, not yet
/// reaped: a detached daemon's parent is often a PID 1 that reaps late)
/// has stopped running and counts as gone.
fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only probes.
    let exists = pid > 0 && unsafe { libc::kill(pid, 0) } == 0;
    exists && !is_zombie(pid)
}

/// The process state letter from `/proc/<pid>/stat` is `Z` or `X`.
fn is_zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The command name may contain spaces and parentheses: the state is the
    // first field after the last `)`.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

fn read_pid_file(path: &Path) -> Option<PidFile> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
}

/// Who holds this home's store, as well as can be told: the runtime named
/// by a verified pid file, else another Holon command.
pub fn holder(ctx: &Context) -> String {
    match read_pid_file(&pid_path(ctx)).filter(PidFile::still_running) {
        Some(p) => format!("the Holon runtime with pid {}", p.pid),
        None => "another Holon command".to_owned(),
    }
}

/// Remove a pid file whose process is gone.
fn clean_stale_pid(path: &Path) {
    if let Some(p) = read_pid_file(path) {
        if !p.still_running() {
            tracing::info!(pid = p.pid, "removing stale pid file");
            let _ = std::fs::remove_file(path);
        }
    } else if path.exists() {
        let _ = std::fs::remove_file(path);
    }
}

/// The runtime's socket client when one answers on this home's socket.
pub async fn connect(ctx: &Context) -> Option<SocketClient> {
    connect_path(&ctx.paths.socket_path()).await
}

/// The socket client when a Holon runtime answers on `path`.
pub async fn connect_path(path: &Path) -> Option<SocketClient> {
    match probe(path).await {
        // A runtime answering with an error is still the runtime: requests
        // go to it (and say its error), never around it to the store.
        Probe::Running(_) | Probe::Failing(_) => SocketClient::connect(path).await.ok(),
        Probe::Absent | Probe::Stale | Probe::NotHolon => None,
    }
}

/// `holon daemon run`: serve until told to stop. A failure to start (but
/// finding a runtime already running) or to stop cleanly is kept with its
/// phase for `daemon status` and `daemon logs`.
pub async fn run(ctx: &Context, mode: &str, access: &AccessArgs) -> anyhow::Result<ExitCode> {
    use super::daemon_failure::{record, Phase};
    let mut phase = Phase::Startup;
    let served = serve(ctx, mode, access, &mut phase).await;
    if let Err(e) = &served {
        // Finding a runtime there (running, busy, or still starting) is
        // not this home's runtime failing.
        use super::control::socket::SocketError as S;
        let already = matches!(
            e.downcast_ref::<S>(),
            Some(S::AlreadyRunning { .. } | S::Failing { .. } | S::NotHolon { .. })
        );
        if !already {
            record(ctx, phase, e);
        }
    }
    served
}

async fn serve(
    ctx: &Context,
    mode: &str,
    access: &AccessArgs,
    phase: &mut super::daemon_failure::Phase,
) -> anyhow::Result<ExitCode> {
    let socket_path = ctx.paths.socket_path();
    let pid_file = pid_path(ctx);
    // Options are checked before anything is bound or opened.
    let (http_options, fingerprint) = super::access::resolve(ctx, access)?;
    clean_stale_pid(&pid_file);
    // Bind before opening the store: a running runtime is reported as such.
    let listener = bind(&socket_path).await?;
    // Watches config.toml and AGENTS.md; changes apply to the next turn.
    let host =
        super::run::start_serving_host(ctx, mode, &socket_path, Some(fingerprint.clone())).await?;
    let pid = PidFile {
        process_identity: i32::try_from(std::process::id())
            .ok()
            .and_then(ProcessIdentity::of),
        pid: std::process::id(),
        home: ctx.paths.home.as_ref().map(|h| h.display().to_string()),
        socket_path: socket_path.display().to_string(),
        started_at: crate::format_ts(crate::now_ms()),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        access: access.clone(),
    };
    std::fs::write(&pid_file, serde_json::to_string(&pid)?)?;
    // Started: an earlier failure to start or stop is history now.
    super::daemon_failure::clear_on_start(ctx);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let client: Arc<dyn RuntimeClient> = Arc::new(host.clone());
    // The HTTP listener binds (or says why not) before the socket answers
    // anyone: the first `runtime.status` already tells where it listens.
    // Clients that connect meanwhile wait in the socket's backlog.
    let http = super::http::start(
        &host,
        Arc::clone(&client),
        http_options,
        stop_rx.clone(),
        ctx.config.server_limits,
    )
    .await;
    let server = tokio::spawn(super::control::server::serve(
        listener,
        client,
        stop_rx,
        ctx.config.server_limits,
    ));
    tracing::info!(home = ?ctx.paths.home, socket = %socket_path.display(), mode, "runtime serving");
    if mode == "foreground" {
        eprintln!(
            "holon runtime serving {} (Ctrl+C stops it)",
            socket_path.display()
        );
    }
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
        _ = host.shutdown_requested() => {}
    }
    tracing::info!("shutdown requested");
    *phase = super::daemon_failure::Phase::Shutdown;
    let _ = stop_tx.send(true);
    let _ = server.await;
    if let Some(http) = http {
        let _ = http.await;
    }
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    store.close().await?;
    let _ = std::fs::remove_file(&socket_path);
    let _ = std::fs::remove_file(&pid_file);
    tracing::info!("runtime stopped");
    Ok(ExitCode::SUCCESS)
}

/// `holon --detach` / `holon daemon start`: start `holon daemon run` in
/// its own session, wait until it answers, print how to attach. A healthy
/// runtime already running is reported, not duplicated.
pub async fn detach(ctx: &Context, access: &AccessArgs) -> anyhow::Result<ExitCode> {
    let socket_path = ctx.paths.socket_path();
    // Checked before anything starts: a bad option fails here, not in the
    // background.
    let (options, fingerprint) = super::access::resolve(ctx, access)?;
    if let Some(warning) = super::access::exposure_warning(&options) {
        eprintln!("holon: warning: {warning}");
    }
    if let Probe::Running(status) = probe(&socket_path).await {
        if status.config_fingerprint.as_deref() != Some(fingerprint.as_str()) {
            anyhow::bail!(
                "a Holon runtime is already running (pid {}) with a different effective config \
                 (listener {}); `holon daemon restart` replaces it with this one",
                status.pid,
                status.http.describe()
            );
        }
        say!(
            "a Holon runtime is already running (pid {}) on {}",
            status.pid,
            socket_path.display()
        );
        say!("attach with: holon attach");
        return Ok(ExitCode::SUCCESS);
    }
    clean_stale_pid(&pid_path(ctx));
    let out_path = daemon_out_path(ctx);
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out_path)?;
    let err = out.try_clone()?;
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["daemon", "run", "--mode", "daemon"])
        .args(access.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    if let Some(home) = &ctx.paths.home {
        cmd.env("HOLON_HOME", home);
    }
    // SAFETY: setsid is async-signal-safe; it detaches the child from our
    // session and terminal so closing this terminal does not stop it.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Probe::Running(status) = probe(&socket_path).await {
            say!(
                "holon runtime started (pid {}) on {}",
                status.pid,
                socket_path.display()
            );
            say!("http      {}", status.http.describe());
            say!("attach with: holon attach");
            return Ok(ExitCode::SUCCESS);
        }
        if let Ok(Some(status)) = child.try_wait() {
            anyhow::bail!(
                "the runtime exited during start-up ({status}); see `holon daemon logs` ({})",
                out_path.display()
            );
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "the runtime did not answer on {} within 15 s; see `holon daemon logs`",
                socket_path.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `holon --detach`: the runtime in the background, then, as the console
/// opened here does, the default agent bound to this directory (see
/// `bind_here`). `holon daemon start|restart` and the console's detach
/// bind nothing.
pub async fn detach_here(ctx: &Context, access: &AccessArgs) -> anyhow::Result<ExitCode> {
    let code = detach(ctx, access).await?;
    bind_here(ctx).await;
    Ok(code)
}

/// As the console opened here does: the default agent, still in its
/// home, starts working in this directory (the project `holon --detach`
/// was run in); one working elsewhere is not moved, only told. Either
/// way the line says which workspace it works in. Never `/`, the user's
/// home itself, or a directory of Holon's own (its config, run, log or
/// data directories): those are not projects.
async fn bind_here(ctx: &Context) {
    use crate::protocol::{call_typed, AgentState, Request, RuntimeClient as _};
    use crate::ui::tui::overlays::workspaces::{open_binding, OpenBinding};
    let Ok(here) = std::env::current_dir() else {
        return;
    };
    let here = here.canonicalize().unwrap_or(here);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let mut own = super::run::holon_dirs(ctx);
    own.push(ctx.paths.data_dir.clone());
    let holons = own
        .iter()
        .any(|d| here.starts_with(d.canonicalize().unwrap_or_else(|_| d.clone())));
    if here.parent().is_none() || home.as_deref() == Some(here.as_path()) || holons {
        return;
    }
    let Some(client) = connect(ctx).await else {
        return;
    };
    let agent = ctx.config.default_agent.clone();
    let request = Request::AgentState {
        agent_id: agent.clone(),
    };
    let Ok(state) = call_typed::<AgentState>(&client, request).await else {
        return;
    };
    let x = &state.agent.execution;
    match open_binding(x, &here) {
        OpenBinding::Nothing => say!("agent    {agent} works in {}", x.execution_root),
        OpenBinding::Offer(_) => say!(
            "agent    {agent} works in {} ({}), not here; `holon workspace use .` moves it",
            x.label(),
            x.execution_root
        ),
        OpenBinding::Use => {
            let request = Request::WorkspaceUse {
                agent_id: agent.clone(),
                target: crate::protocol::types::UseWorkspace {
                    path: Some(here.display().to_string()),
                    workspace_id: None,
                    mode: crate::protocol::types::WorkspaceMode::Direct,
                },
            };
            match client.call(request).await {
                Ok(_) => say!("agent    {agent} works in {} now", here.display()),
                Err(e) => eprintln!(
                    "holon: {agent} stays in its home: {} could not be used ({e})",
                    here.display()
                ),
            }
        }
    }
}

/// `holon daemon restart`: stop what runs (a stale pid file is cleaned,
/// not an error), then start with `access` (none: the configured local
/// defaults). In-flight turns are interrupted and replay per the restart
/// contract.
pub async fn restart(ctx: &Context, access: &AccessArgs) -> anyhow::Result<ExitCode> {
    super::access::resolve(ctx, access)?;
    stop(ctx).await?;
    detach(ctx, access).await
}

pub async fn status(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let socket_path = ctx.paths.socket_path();
    // The latest start-up or shutdown failure, whatever runs now.
    let kept = super::daemon_failure::latest(ctx);
    let kept_line = kept.as_ref().map(super::daemon_failure::line);
    match probe(&socket_path).await {
        Probe::Running(status) => {
            // Whether this home's config, as read now, is what the runtime
            // started with (a mismatch needs `daemon restart`).
            let started_with = read_pid_file(&pid_path(ctx))
                .filter(|p| p.pid == status.pid)
                .map(|p| p.access)
                .unwrap_or_default();
            let expected = super::access::resolve(ctx, &started_with)
                .ok()
                .map(|(_, f)| f);
            let config_fingerprint_match =
                expected.is_some() && expected == status.config_fingerprint;
            if json {
                // A listener configured but down (its address taken) is
                // part of the runtime's health, and has no address.
                let listening = status.http.state == crate::model::trigger::IngressState::Listening;
                let down = status.http.state == crate::model::trigger::IngressState::Down;
                say!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "running": true,
                        "runtime": "running",
                        "health": match status.store_failure.is_some() || down {
                            true => "degraded",
                            false => "ok",
                        },
                        "http_addr": status.http.http_addr.as_ref().filter(|_| listening),
                        "config_fingerprint_match": config_fingerprint_match,
                        "status": status,
                        "daemon_failure": kept,
                    }))?
                );
            } else {
                print_runtime_status(&status);
                // Only a failure since this runtime started is news.
                let recent = kept.as_ref().filter(|f| f.occurred_at > status.started_at);
                if let Some(f) = recent {
                    say!("earlier   {}", super::daemon_failure::line(f));
                }
                if !config_fingerprint_match {
                    say!(
                        "config    differs from what this runtime started with; \
                         `holon daemon restart` applies it"
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Probe::Failing(message) => {
            if json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "running": true, "runtime": "running",
                        "health": "failing", "error": message,
                        "socket_path": socket_path, "daemon_failure": kept,
                    }))?
                );
            } else {
                say!(
                    "runtime   running, but it answers with an error: {}",
                    crate::model::text::escape_hidden(&message)
                );
                say!("          `holon daemon logs` says more; `holon daemon restart` restarts it");
            }
            Ok(ExitCode::FAILURE)
        }
        other => {
            let stale_pid = read_pid_file(&pid_path(ctx)).filter(|p| !p.still_running());
            let note = match other {
                Probe::Stale => {
                    "stale socket left by a dead runtime (it is replaced on the next start)"
                }
                Probe::NotHolon => "something that is not Holon answers on the socket path",
                Probe::Absent | Probe::Running(_) | Probe::Failing(_) => "",
            };
            if json {
                say!(
                    "{}",
                    serde_json::json!({ "running": false, "runtime": "not_running",
                                                   "socket_path": socket_path,
                                                   "note": if note.is_empty() { "not running" } else { note },
                                                   "stale_pid": stale_pid.map(|p| p.pid),
                                                   "daemon_failure": kept })
                );
            } else {
                match note {
                    "" => say!("no Holon runtime is running for this home"),
                    note => say!("no Holon runtime is running for this home ({note})"),
                }
                if let Some(l) = &kept_line {
                    say!("last failure: {l}");
                }
                say!("start one with: holon --detach");
            }
            Ok(ExitCode::from(EXIT_NOT_RUNNING))
        }
    }
}

fn print_runtime_status(s: &RuntimeStatus) {
    say!(
        "runtime   running, pid {} ({}), up {} s",
        s.pid,
        s.mode,
        s.uptime_ms / 1000
    );
    say!("socket    {}", s.socket_path.clone().unwrap_or_default());
    say!("http      {}", s.http.describe());
    match &s.store_failure {
        None => say!("store     {}", s.store),
        Some(why) => say!(
            "store     {} (DEGRADED: writes are failing: {why}; they resume by themselves once \
             the cause, e.g. a full disk, is fixed)",
            s.store
        ),
    }
    say!(
        "activity  {:?}: {}, {} processing, {} waiting, {}",
        s.activity.state,
        counted(s.activity.active_agent_count, "agent", "agents"),
        s.activity.processing_agent_count,
        s.activity.waiting_agent_count,
        counted(s.activity.active_task_count, "active task", "active tasks")
    );
    if s.pending_approvals > 0 {
        say!(
            "approvals {} waiting for you (`holon approvals`)",
            s.pending_approvals
        );
    }
    if let Some(f) = &s.last_failure {
        let at = f["occurred_at"]
            .as_str()
            .map(|t| format!(" (at {t})"))
            .unwrap_or_default();
        say!(
            "last failure  {}{at}",
            f["summary"].as_str().unwrap_or_default()
        );
    }
}

/// A pidfd for `pid` (Linux 5.3+): readable once the process has exited.
fn pidfd(pid: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: a fresh descriptor this function now owns.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Whether the process behind pidfd `fd` exits within `limit`.
async fn exited(fd: std::os::fd::OwnedFd, limit: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let ms = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX);
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + limit;
        loop {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = i32::try_from(left.as_millis()).unwrap_or(ms);
            // SAFETY: one pollfd, owned by this frame.
            match unsafe { libc::poll(&mut p, 1, wait) } {
                n if n > 0 => return p.revents & libc::POLLIN != 0,
                0 => return false,
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                _ => return false,
            }
        }
    })
    .await
    .unwrap_or(false)
}

pub async fn stop(ctx: &Context) -> anyhow::Result<ExitCode> {
    let socket_path = ctx.paths.socket_path();
    let pid_file = pid_path(ctx);
    // Only a process proven to be this home's runtime is ever signalled: the
    // one answering on its socket, or the one its pid file identifies (pid,
    // start time and boot all matching), never whatever has that pid now.
    let recorded = read_pid_file(&pid_file);
    // A pid file whose recorded identity (pid, start time, boot) is still
    // running names the runtime without asking it for its whole status;
    // otherwise the socket is asked who answers.
    let (pid, identity) = match recorded.filter(PidFile::still_running) {
        Some(p) => (Some(p.pid), p.process_identity),
        None => match probe(&socket_path).await {
            Probe::Running(status) => {
                let identity = i32::try_from(status.pid).ok().and_then(ProcessIdentity::of);
                (Some(status.pid), identity)
            }
            Probe::Absent | Probe::Stale | Probe::NotHolon | Probe::Failing(_) => (None, None),
        },
    };
    let Some(pid) = pid else {
        clean_stale_pid(&pid_file);
        say!("no Holon runtime is running for this home");
        return Ok(ExitCode::SUCCESS);
    };
    // Held from now on, the pidfd names this process and no other, and
    // says when it exits (no polling).
    let exit_fd = pidfd(pid).filter(|_| {
        identity
            .as_ref()
            .is_none_or(|id| id.liveness() == Liveness::Running)
    });
    // 1. Graceful shutdown through the socket.
    let mut left_running = 0;
    if let Ok(client) = SocketClient::connect(&socket_path).await {
        let ack = tokio::time::timeout(
            Duration::from_secs(5),
            client.call(Request::RuntimeShutdown),
        )
        .await;
        if let Ok(Ok(crate::protocol::Response::RuntimeShutdown(ack))) = ack {
            left_running = ack.commands_left_running;
        }
    }
    let alive = {
        let identity = identity.clone();
        move || match &identity {
            Some(id) => id.liveness() == Liveness::Running,
            None => pid_alive(pid),
        }
    };
    let gone = |limit: Duration| {
        let alive = alive.clone();
        // The closure owns its own copy of the pidfd.
        let exit_fd = exit_fd.as_ref().and_then(|fd| fd.try_clone().ok());
        async move {
            if let Some(fd) = exit_fd {
                return exited(fd, limit).await;
            }
            let deadline = Instant::now() + limit;
            while Instant::now() < deadline {
                if !alive() {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            !alive()
        }
    };
    let mut how = "gracefully";
    if !gone(Duration::from_secs(10)).await {
        let Some(identity) = &identity else {
            anyhow::bail!(
                "the runtime (pid {pid}) did not stop and its identity cannot be verified, so it \
                 was not signalled; see `holon daemon logs`"
            );
        };
        how = "after SIGTERM";
        identity.signal(libc::SIGTERM);
        if !gone(Duration::from_secs(5)).await {
            how = "after SIGKILL";
            identity.signal(libc::SIGKILL);
            if !gone(Duration::from_secs(5)).await {
                anyhow::bail!("the runtime (pid {pid}) did not stop; see `holon daemon logs`");
            }
        }
    }
    clean_stale_pid(&pid_file);
    if matches!(probe(&socket_path).await, Probe::Stale) {
        let _ = std::fs::remove_file(&socket_path);
    }
    say!("holon runtime (pid {pid}) stopped {how}");
    match left_running {
        0 => {}
        1 => say!(
            "1 command left running under its holder; the next start reattaches it and \
             delivers its result (to end it, stop it first from the console's /tasks)"
        ),
        n => say!(
            "{n} commands left running under their holders; the next start reattaches them \
             and delivers their results (to end one, stop it first from the console's /tasks)"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn latest_log(dir: &Path) -> Option<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(super::logging::LOG_FILE_PREFIX))
        })
        .collect();
    logs.sort();
    logs.pop()
}

/// Where the runtime's logs are and their last lines. Stops quietly when
/// the reader goes (`holon daemon logs | head`); a log line is shown with
/// anything in it that could act on the terminal escaped, since it may
/// quote what a provider or a command said.
pub fn logs(ctx: &Context, lines: usize) -> anyhow::Result<ExitCode> {
    let log = latest_log(&ctx.paths.log_dir);
    let mut o = super::commands::Out::new();
    let shown = log
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "(none yet)".into());
    o.text(&format!("log file      {shown}"))?;
    o.text(&format!("daemon output {}", daemon_out_path(ctx).display()))?;
    o.text(&format!("pid file      {}", pid_path(ctx).display()))?;
    o.text(&format!(
        "failure file  {}",
        super::daemon_failure::path(ctx).display()
    ))?;
    // Read whatever it holds: a line that is not UTF-8 (a command's bytes
    // quoted in an error) must not hide the rest.
    let text = log
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    if let Some(f) = super::daemon_failure::latest(ctx) {
        o.line("\nlast start-up or shutdown failure:")?;
        o.text(&format!("  {}", super::daemon_failure::line(&f)))?;
    }
    let failures: Vec<&str> = text.lines().filter(|l| l.contains(" ERROR ")).collect();
    o.line(&format!("\nrecent failures ({}):", failures.len()))?;
    for l in failures.iter().rev().take(5).rev() {
        o.text(&format!("  {l}"))?;
    }
    let all: Vec<&str> = text.lines().collect();
    o.line(&format!(
        "\nlast {}:",
        counted(lines.min(all.len()) as u64, "line", "lines")
    ))?;
    for l in &all[all.len().saturating_sub(lines)..] {
        o.text(l)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::pid_alive;

    #[test]
    fn a_zombie_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped yet: a zombie.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while pid_alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!pid_alive(pid), "a zombie counts as gone");
        let _ = child.wait();
        assert!(pid_alive(std::process::id()));
    }
}
