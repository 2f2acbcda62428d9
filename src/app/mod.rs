//! The composition root: parse the command line, resolve paths and config,
//! start logging, open the store, and run the chosen mode (console,
//! one-shot command, debug tool). Errors reach the operator here, once, as
//! `holon: error: ...` on stderr with a non-zero exit code.

/// `println!` for a command's output: a reader that went away (`holon
/// daemon status --json | head`) ends the command quietly, with the exit
/// status a shell gives a writer killed by its closed pipe (141), instead
/// of a panic.
macro_rules! say {
    () => {
        $crate::app::say_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::app::say_line(format_args!($($arg)*))
    };
}

/// A command's reader went away while `Out` wrote (`holon tail | head`):
/// the command ends as it would have, then exits with 141, as `say!`
/// does at once.
pub(crate) static READER_GONE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// One line of a command's output (see `say!`).
pub(crate) fn say_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(line)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => {
            eprintln!("holon: cannot write the output: {e}");
            std::process::exit(1);
        }
    }
}

pub mod access;
mod agent_cmd;
mod approval_cmd;
#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "bench")]
mod bench_admit;
#[cfg(feature = "bench")]
mod bench_agents;
#[cfg(feature = "bench")]
mod bench_attach;
#[cfg(feature = "bench")]
mod bench_backup;
#[cfg(feature = "bench")]
mod bench_bridge;
#[cfg(feature = "bench")]
mod bench_connections;
#[cfg(feature = "bench")]
mod bench_context;
#[cfg(feature = "bench")]
mod bench_crowd;
#[cfg(feature = "bench")]
mod bench_frame;
#[cfg(feature = "bench")]
mod bench_hooks;
#[cfg(feature = "bench")]
mod bench_mcp;
#[cfg(feature = "bench")]
mod bench_older;
#[cfg(feature = "bench")]
mod bench_runtime;
#[cfg(feature = "bench")]
mod bench_salvage;
#[cfg(all(feature = "bench", target_os = "linux"))]
mod bench_sandbox;
#[cfg(feature = "bench")]
mod bench_scale;
#[cfg(feature = "bench")]
mod bench_soak;
#[cfg(feature = "bench")]
mod bench_socket;
#[cfg(feature = "bench")]
mod bench_stop;
#[cfg(feature = "bench")]
mod bench_tools;
#[cfg(feature = "bench")]
mod bench_triggers;
#[cfg(feature = "bench")]
mod bench_turns;
#[cfg(feature = "bench")]
mod bench_workspace;
pub mod cli;
pub mod commands;
pub mod config;
mod config_checks;
pub mod console;
mod console_backend;
mod console_calls;
mod console_editor;
mod console_follow;
mod console_open;
mod console_runtimes;
mod console_terminal;
pub mod control;
pub mod daemon;
mod daemon_failure;
pub mod debug;
mod doctor;
mod hooks_cmd;
pub mod http;
mod http_inspect;
mod http_serve;
pub mod life;
pub mod logging;
mod login;
mod mcp_cmd;
pub mod offline;
pub mod paths;
mod prompt_history;
mod proposal_cmd;
pub mod providers;
mod remote_cmd;
pub mod remotes;
mod route;
pub mod run;
mod store_cmd;
pub mod stress;
pub mod tls;
mod transcript_cmd;
mod trigger_cmd;
mod usage_cmd;
mod workspace_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::runtime::admission::ensure_agent;
use crate::store::{Store, StoreOptions};
use cli::{Cli, Command, DaemonCommand, DebugCommand};
use config::{Config, Env};
use paths::Paths;

/// Everything a command needs: where things are, the effective config.
pub struct Context {
    pub paths: Paths,
    pub config: Config,
}

impl Context {
    /// The store for a command that only reads it (status, events, agent
    /// and approval listings): opened as usual, or, when the file system
    /// refuses writes (a read-only mount, an immutable file, no
    /// permission), read-only with a note on stderr saying so.
    pub async fn open_store_for_reading(&self) -> anyhow::Result<Store> {
        let opened = self.open_store().await;
        let err = match opened {
            Ok(store) => return Ok(store),
            Err(e) => e,
        };
        let why = err.chain().find_map(|cause| {
            if let Some(p) = cause.downcast_ref::<paths::PathsError>() {
                return p.is_read_only().then(|| p.to_string());
            }
            match cause.downcast_ref::<crate::store::StoreError>() {
                Some(crate::store::StoreError::Io { source, .. }) if read_only_io(source) => {
                    Some(source.to_string())
                }
                _ => None,
            }
        });
        let Some(why) = why else { return Err(err) };
        let path = self.paths.store_file();
        if !path.is_file() {
            return Err(err);
        }
        let store = Store::open_read_only(&path, &why)?;
        eprintln!(
            "holon: the store {} is read-only ({why}): showing it as it is; nothing can be changed",
            path.display()
        );
        Ok(store)
    }

    /// Open the store and make sure the default agent exists. Another
    /// one-shot command holding the store briefly is waited for (bounded by
    /// `[store] lock_wait_secs`); a runtime holding it is not (it keeps it:
    /// the error, [`StoreHeld::ByRuntime`], says to attach).
    pub async fn open_store(&self) -> anyhow::Result<Store> {
        self.open_store_as(false).await
    }

    /// Open the store for the runtime that serves this home's socket
    /// (already bound by it): one-shot commands holding it are waited for,
    /// and the socket, which is its own, is never asked who holds it.
    pub async fn open_store_to_serve(&self) -> anyhow::Result<Store> {
        self.open_store_as(true).await
    }

    async fn open_store_as(&self, serving: bool) -> anyhow::Result<Store> {
        self.paths.ensure()?;
        let options = StoreOptions {
            cache_bytes: self.config.store_cache_mib * 1024 * 1024,
            quick_repair: self.config.store_quick_repair,
            ..StoreOptions::default()
        };
        let path = self.paths.store_file();
        let started = std::time::Instant::now();
        let store = loop {
            match Store::open(&path, options.clone()) {
                Ok(store) => break store,
                Err(crate::store::StoreError::Locked { path }) => {
                    let waited = started.elapsed();
                    let runtime = !serving && daemon::connect(self).await.is_some();
                    if waited >= self.config.store_lock_wait || runtime {
                        let holder = daemon::holder(self);
                        return Err(match runtime {
                            true => StoreHeld::ByRuntime { path, holder },
                            false => StoreHeld::Busy {
                                path,
                                holder,
                                waited: waited.as_secs_f64(),
                            },
                        }
                        .into());
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e.into()),
            }
        };
        ensure_agent(&store, &self.config.default_agent).await?;
        Ok(store)
    }
}

/// Why a store could not be opened: another process holds it. Said once,
/// with what to do: a runtime that answers on this home's socket takes
/// requests instead (one-shot commands send them there); anything else
/// was waited for first (`[store] lock_wait_secs`).
#[derive(Debug, thiserror::Error)]
pub enum StoreHeld {
    #[error(
        "the store {} is held by {holder}, which answers on this home's socket: attach to it \
         with `holon attach`, send it a prompt with `holon send`, or stop it with `holon daemon \
         stop`",
        path.display()
    )]
    ByRuntime {
        path: std::path::PathBuf,
        holder: String,
    },
    #[error(
        "the store {} is held by {holder}, still after {waited:.1} s of waiting: try again once \
         it is done (`[store] lock_wait_secs` sets the wait; `holon daemon status` says whether \
         a runtime is starting)",
        path.display()
    )]
    Busy {
        path: std::path::PathBuf,
        holder: String,
        waited: f64,
    },
}

/// The last panic's message and location, recorded by the quiet hook.
static LAST_PANIC: std::sync::Mutex<Option<(String, String)>> = std::sync::Mutex::new(None);

/// Panics never print a backtrace at the operator: they are logged and
/// remembered, and `run` turns one into a clear error. (The console's own
/// hook runs first and restores the terminal.)
fn install_quiet_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = crate::panic_message(info);
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(%message, %location, "panic");
        *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some((message, location));
    }));
}

/// Whether a file can be created in `dir` (false when the file system or
/// the directory refuses writes).
fn writable(dir: &std::path::Path) -> bool {
    let probe = dir.join(format!(".holon-write-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            true
        }
        Err(e) => !read_only_io(&e),
    }
}

use crate::store::read_only_io;

/// The operator-facing error for a panic that reached `run`.
fn panic_error(home: Option<&std::path::Path>) -> String {
    let (message, location) = LAST_PANIC
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_else(|| ("unknown failure".into(), String::new()));
    if location.contains("/redb-") {
        let store = Paths::resolve(home)
            .map(|p| p.store_file().display().to_string())
            .unwrap_or_else(|_| "the store file".into());
        format!(
            "the store {store} is damaged: the storage engine failed while reading it \
             ({message}); nothing was changed. {}",
            crate::store::recovery(std::path::Path::new(&store))
        )
    } else {
        format!("internal error: {message} ({location}); this is a bug, details are in the log")
    }
}

/// Whether the command simulates a runtime's life on a paused clock.
fn simulates_life(cli: &Cli) -> bool {
    matches!(
        &cli.command,
        Some(Command::Debug(DebugCommand::Life { .. }))
    )
}

/// A terminal that cannot draw the console (`TERM=dumb`: no cursor
/// movement, no alternate screen).
fn dumb_terminal() -> bool {
    std::env::var("TERM").is_ok_and(|t| t.trim() == "dumb")
}

pub fn run() -> ExitCode {
    // Not dumpable: no other process of the operator's (a command Holon
    // started among them) can read this one's memory or environment
    // (`/proc/PID/environ` holds provider keys), nor attach to it. The
    // command a holder runs is dumpable again: `execve` resets it.
    crate::runtime::exec_env::not_dumpable();
    // A command task's holder: before anything else (its umask and
    // environment are the command's).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == crate::runtime::command_tasks::holder::HOLD_ARG)
    {
        return crate::runtime::command_tasks::holder::run();
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == crate::runtime::command_tasks::tee::TEE_ARG)
    {
        return crate::runtime::command_tasks::tee::run();
    }
    crate::runtime::exec_env::make_files_private();
    let cli = Cli::parse();
    if let Err(e) = crate::clock::install_from_env() {
        eprintln!("holon: error: {e}");
        return ExitCode::FAILURE;
    }
    if simulates_life(&cli) && crate::clock::is_system() {
        // A simulated life moves its own paused clock (chosen before
        // anything reads the time).
        let _ = crate::clock::Clock::parse(life::START).and_then(crate::clock::install);
    }
    install_quiet_panic_hook();
    let home = cli.home.clone();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_cli(cli))) {
        Ok(Ok(_)) if READER_GONE.load(std::sync::atomic::Ordering::Relaxed) => ExitCode::from(141),
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            eprintln!("holon: error: {e:#}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("holon: error: {}", panic_error(home.as_deref()));
            ExitCode::FAILURE
        }
    }
}

/// The commands that still run, on the defaults, when config.toml is
/// broken: those that look at, reach or stop a runtime by this home's
/// paths alone.
fn falls_back_on_a_broken_config(command: &Option<Command>) -> bool {
    match command {
        Some(Command::Daemon(
            DaemonCommand::Stop | DaemonCommand::Status { .. } | DaemonCommand::Logs { .. },
        )) => true,
        Some(Command::Remotes(cli::RemotesCommand::Remove { .. })) => true,
        // This home's runtime, or an address: not a remote by its name.
        Some(Command::Attach(a)) => a.target.as_deref().is_none_or(|t| t.contains("://")),
        _ => false,
    }
}

fn run_cli(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = Paths::resolve(cli.home.as_deref())?;
    let env = Env::capture();
    let config = match Config::load(&paths.config_file(), &env) {
        Ok(config) => config,
        // A broken config.toml must not keep the operator from seeing,
        // reaching or stopping a runtime (which keeps the configuration it
        // has): those commands fall back to the defaults. Not `status`,
        // whose offline read would make the default agent anew and show
        // the defaults as if configured; not `attach NAME`, a remote the
        // file names.
        Err(e) if falls_back_on_a_broken_config(&cli.command) => {
            eprintln!(
                "holon: warning: {e}; using the defaults for this command (a running runtime, \
                 if any, keeps the configuration it has)"
            );
            Config::from_parts(&paths.config_file(), None, &env)
                .or_else(|_| Config::from_parts(&paths.config_file(), None, &Env::default()))?
        }
        Err(e) => return Err(e.into()),
    };
    paths.ensure()?;
    let _log_guard = match logging::init(&paths.log_dir, &config.log_filter) {
        Ok(guard) => Some(guard),
        // A read-only home (a read-only mount, an immutable directory) can
        // still be looked at: commands run without a log file, and the
        // store says it is read-only.
        Err(logging::LoggingError::Dir { .. }) if !writable(&paths.log_dir) => None,
        Err(e) => return Err(e.into()),
    };
    // Prompts and objectives are the operator's words: only the command's
    // name is logged, the arguments at debug. A runtime's start is logged
    // at info; a one-shot command's (`status`, `send`, `daemon logs`
    // itself) at debug, or `holon daemon logs` would show little else.
    let command = route::command_name(&cli.command);
    match route::starts_a_runtime(&cli.command, cli.detach) {
        true => tracing::info!(command, home = ?paths.home, "holon starting"),
        false => tracing::debug!(command, home = ?paths.home, "holon starting"),
    }
    tracing::debug!(command = ?cli.command, "command line");
    let ctx = Context { paths, config };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let detach = cli.detach;
    let screen = if cli.no_alt_screen || !ctx.config.alt_screen {
        console::Screen::Inline
    } else {
        console::Screen::Alternate
    };
    rt.block_on(async move {
        if detach {
            return daemon::detach_here(&ctx, &cli::AccessArgs::default()).await;
        }
        route::command(&ctx, cli.command, screen).await
    })
}
