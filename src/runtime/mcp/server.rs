//! One MCP server, supervised: started on first need, its tools listed
//! (again when it says they changed), calls sent with a timeout and MCP
//! cancellation, and a server that fails or exits restarted on the next
//! need after a backoff (1 s doubling to 60 s). While it is down its tools
//! answer a tool error naming the reason; the turn goes on.
//!
//! A stdio server is a child process Holon spawns itself: in its own
//! process group, with only the minimal environment plus what its config
//! names, and its stderr kept in a bounded per-server log.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RunningService};
use rmcp::RoleClient;
use serde_json::Value;

use super::client::{list_tools, Handler, ProgressSink, Watchers};
use super::flight::{Abandoned, InFlight};
use super::flight::{CallError, CallResult};
use super::names::Listed;
use super::process::Sandboxing;
use super::process::{ended, ServerProcess};
use super::report::{Lifecycle, Reporter};
use crate::model::mcp::{McpServerFailed, McpServerStarted, McpServerStopped, McpStopReason};
use crate::runtime::process_identity::child_has_exited as has_exited;
use crate::runtime::settings::mcp::ServerConfig;

mod connect;

const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A server up this long has its failure count forgotten.
const HEALTHY: Duration = Duration::from_secs(60);
/// Calls in a row that time out before the server is restarted.
const MAX_TIMEOUTS: u32 = 3;
/// Agents remembered as a connection's users (whose ledgers hear that it
/// failed or stopped).
const MAX_USERS: usize = 256;

/// What every server of a hub shares: the hub's epoch (bumped whenever
/// the tools a server offers may have changed) and where changes are told.
#[derive(Clone, Default)]
pub struct Ties {
    pub epoch: Arc<AtomicU64>,
    pub reporter: Arc<Reporter>,
}

/// Where a server is, as `holon mcp list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Configured, not needed yet.
    Idle,
    Starting,
    Running,
    /// Failed to start, or exited; `retry_in_ms` until the next attempt.
    Failed {
        reason: String,
        retry_in_ms: u64,
    },
    Disabled,
    /// A project's server whose command line the operator has not
    /// approved: never started.
    AwaitingApproval,
}

struct Conn {
    service: RunningService<RoleClient, Handler>,
    tools: Vec<Listed>,
    child: Option<ServerProcess>,
    /// Failures before this start, and when it started: a server that
    /// dies soon after starting keeps backing off.
    failures: u32,
    started: Instant,
    /// Which of the server's connections this is: a call that fails tells
    /// its own, so a late failure never takes down the one after it.
    serial: u64,
}

impl Conn {
    /// The failure count if it went down now: one more than before it
    /// started, unless it had been up long enough to count as healthy.
    fn failures_now(&self) -> u32 {
        match self.started.elapsed() >= HEALTHY {
            true => 1,
            false => self.failures + 1,
        }
    }
}

enum State {
    Idle,
    Up(Box<Conn>),
    Down {
        reason: String,
        retry_at: Instant,
        failures: u32,
    },
}

pub struct Server {
    pub config: ServerConfig,
    /// Where its log and its own directory go, below the hub's: its name,
    /// or `project-<digest>/<name>` for a project's server.
    slot: String,
    log_path: PathBuf,
    state: tokio::sync::Mutex<State>,
    phase: std::sync::Mutex<Phase>,
    changed: Arc<AtomicBool>,
    /// The hub's epoch, bumped whenever the tools this server offers may
    /// have changed.
    generation: Arc<AtomicU64>,
    /// Calls in a row that timed out: at `MAX_TIMEOUTS` the server is
    /// taken for hung and restarted.
    timeouts: std::sync::atomic::AtomicU32,
    /// Progress sinks of the calls in flight, shared with each
    /// connection's handler.
    watchers: Watchers,
    /// The serial of the latest connection.
    serials: AtomicU64,
    reporter: Arc<Reporter>,
    /// The agents that needed the running connection.
    users: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Server {
    /// A server logging below `log_dir` in `slot`, tied to its hub by
    /// `ties`.
    pub fn new(
        config: ServerConfig,
        log_dir: &std::path::Path,
        slot: String,
        ties: &Ties,
    ) -> Server {
        let phase = if config.enabled {
            Phase::Idle
        } else {
            Phase::Disabled
        };
        Server {
            log_path: log_dir.join(format!("{slot}.log")),
            slot,
            config,
            state: tokio::sync::Mutex::new(State::Idle),
            phase: std::sync::Mutex::new(phase),
            changed: Arc::new(AtomicBool::new(false)),
            generation: Arc::clone(&ties.epoch),
            timeouts: std::sync::atomic::AtomicU32::new(0),
            watchers: Watchers::default(),
            serials: AtomicU64::new(0),
            reporter: Arc::clone(&ties.reporter),
            users: Default::default(),
        }
    }

    /// Whether the server may run: `Some(phase)` holds it in that phase
    /// (awaiting approval, or disabled by the operator); `None` lets it,
    /// so a held server becomes idle until its next need.
    pub fn hold(&self, held: Option<Phase>) {
        if let Ok(mut p) = self.phase.lock() {
            match held {
                Some(h) => *p = h,
                None if matches!(*p, Phase::AwaitingApproval | Phase::Disabled) => *p = Phase::Idle,
                None => {}
            }
        }
    }

    /// Whether its process (or connection) is up or coming up.
    pub fn is_running(&self) -> bool {
        matches!(self.phase(), Phase::Running | Phase::Starting)
    }

    pub fn phase(&self) -> Phase {
        self.phase.lock().map(|p| p.clone()).unwrap_or(Phase::Idle)
    }

    pub(super) fn set_phase(&self, p: Phase) {
        if let Ok(mut g) = self.phase.lock() {
            *g = p;
        }
    }

    pub fn log_path(&self) -> &std::path::Path {
        &self.log_path
    }

    /// The server's tools, starting it for `agent` if it is not running
    /// (and its backoff has passed).
    pub async fn tools(&self, sandbox: &Sandboxing, agent: &str) -> Result<Vec<Listed>, String> {
        self.ensure(sandbox, agent).await.map(|(_, tools, _)| tools)
    }

    /// A running connection's peer, tools and serial, `agent` among its
    /// users.
    async fn ensure(
        &self,
        sandbox: &Sandboxing,
        agent: &str,
    ) -> Result<(Peer<RoleClient>, Vec<Listed>, u64), String> {
        let mut state = self.state.lock().await;
        // Checked under the lock: a server disabled (or retired by a
        // config change) while this call waited for it never starts.
        if let Phase::Disabled | Phase::AwaitingApproval = self.phase() {
            return Err(format!("MCP server `{}` is disabled", self.config.name));
        }
        if let State::Up(conn) = &mut *state {
            if conn.service.peer().is_transport_closed() || conn.service.is_closed() {
                let reason = ended(conn.child.as_mut()).await;
                let failures = conn.failures_now();
                let mut told = self.users();
                if !told.iter().any(|u| u == agent) {
                    told.push(agent.to_owned());
                }
                *state = self.down(reason, failures, told);
            } else {
                self.used_by(agent);
                if self.changed.swap(false, Ordering::SeqCst) {
                    match list_tools(conn.service.peer(), self.config.startup_timeout).await {
                        Ok(tools) => conn.tools = tools,
                        Err(e) => {
                            // Listed again at the next need.
                            self.changed.swap(true, Ordering::SeqCst);
                            tracing::warn!(server = %self.config.name, error = %e, "cannot list the MCP server's tools again")
                        }
                    }
                }
                return Ok((conn.service.peer().clone(), conn.tools.clone(), conn.serial));
            }
        }
        let failures = match &*state {
            State::Down {
                reason,
                retry_at,
                failures,
            } => {
                let now = Instant::now();
                if now < *retry_at {
                    self.set_phase(Phase::Failed {
                        reason: reason.clone(),
                        retry_in_ms: retry_at.duration_since(now).as_millis() as u64,
                    });
                    return Err(format!(
                        "{reason} (retried in {} s)",
                        retry_at.duration_since(now).as_secs().max(1)
                    ));
                }
                *failures
            }
            _ => 0,
        };
        self.set_phase(Phase::Starting);
        // A caller that gives up (its turn was cancelled) drops the start:
        // its process goes with it, and the server is idle again.
        let mut starting = Abandoned(Some(self));
        // Cleared before the listing, so a change told during or after it
        // is kept for the next need.
        self.changed.swap(false, Ordering::SeqCst);
        let t0 = Instant::now();
        let connected = self.connect(sandbox, failures).await;
        starting.0 = None;
        match connected {
            Ok(conn) => {
                let out = (conn.service.peer().clone(), conn.tools.clone(), conn.serial);
                if let Ok(mut users) = self.users.lock() {
                    *users = [agent.to_owned()].into();
                }
                let started = McpServerStarted {
                    name: self.config.name.clone(),
                    workspace: self.workspace(),
                    transport: self.config.transport_name().to_owned(),
                    tools: conn.tools.len(),
                    startup_ms: t0.elapsed().as_millis() as u64,
                };
                self.reporter
                    .tell(vec![agent.to_owned()], Lifecycle::Started(started));
                // A start alone changes no catalog: the catalog being built
                // lists what it started with, and a server that was down
                // when one was built is offered from the next turn.
                *state = State::Up(Box::new(conn));
                self.set_phase(Phase::Running);
                Ok(out)
            }
            Err(reason) => {
                tracing::warn!(server = %self.config.name, %reason, "MCP server did not start");
                *state = self.down(reason.clone(), failures + 1, vec![agent.to_owned()]);
                Err(reason)
            }
        }
    }

    /// A `.mcp.json` server's workspace, as its events name it.
    fn workspace(&self) -> Option<String> {
        self.config
            .project
            .as_ref()
            .map(|p| p.display().to_string())
    }

    /// The agents that needed the running connection.
    fn users(&self) -> Vec<String> {
        self.users
            .lock()
            .map(|u| u.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn used_by(&self, agent: &str) {
        if let Ok(mut users) = self.users.lock() {
            if users.len() < MAX_USERS && !users.contains(agent) {
                users.insert(agent.to_owned());
            }
        }
    }

    /// Down after a failure (told to `agents`), until a backoff passes.
    fn down(&self, reason: String, failures: u32, agents: Vec<String>) -> State {
        let wait = if failures == 0 {
            Duration::ZERO
        } else {
            (Duration::from_secs(1) * 2u32.saturating_pow(failures.min(7) - 1)).min(MAX_BACKOFF)
        };
        self.set_phase(Phase::Failed {
            reason: reason.clone(),
            retry_in_ms: wait.as_millis() as u64,
        });
        self.generation.fetch_add(1, Ordering::SeqCst);
        let failed = McpServerFailed {
            name: self.config.name.clone(),
            workspace: self.workspace(),
            reason: reason.clone(),
            retry_in_ms: wait.as_millis() as u64,
            failures: failures.max(1),
        };
        self.reporter.tell(agents, Lifecycle::Failed(failed));
        State::Down {
            reason,
            retry_at: Instant::now() + wait,
            failures: failures.max(1),
        }
    }

    /// Call the server's tool `tool` with `arguments`, its progress (if
    /// the server reports any) to `progress`. Dropped before its answer
    /// (the turn was cancelled), the call is cancelled at the server.
    pub async fn call(
        &self,
        sandbox: &Sandboxing,
        agent: &str,
        tool: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        progress: Option<ProgressSink>,
    ) -> Result<CallResult, CallError> {
        let (peer, _, serial) = self.ensure(sandbox, agent).await.map_err(CallError::Down)?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(self.lost(serial, e.to_string()).await),
        };
        let mut flight = InFlight::new(handle, serial, progress, &self.watchers);
        let limit = self.config.tool_timeout;
        let answer = match flight.wait(limit).await {
            Some(Ok(answer)) => answer,
            Some(Err(_)) => return Err(self.lost(serial, "the connection closed".into()).await),
            None => {
                let hung = self.timeouts.fetch_add(1, Ordering::SeqCst) + 1 >= MAX_TIMEOUTS;
                flight
                    .cancel(format!("no answer within {} s", limit.as_secs()))
                    .await;
                if hung {
                    // Hung, not slow: restart it on the next need.
                    self.timeouts.swap(0, Ordering::SeqCst);
                    let _ = self
                        .lost(serial, format!("{MAX_TIMEOUTS} calls in a row timed out"))
                        .await;
                }
                return Err(CallError::TimedOut(limit));
            }
        };
        self.timeouts.swap(0, Ordering::SeqCst);
        match answer {
            Ok(ServerResult::CallToolResult(r)) => Ok(CallResult {
                content: r
                    .content
                    .iter()
                    .filter_map(|c| serde_json::to_value(c).ok())
                    .collect(),
                structured: r.structured_content,
                is_error: r.is_error.unwrap_or(false),
            }),
            Ok(_) => Err(CallError::Protocol(
                "the server answered with something other than a tool result".into(),
            )),
            Err(rmcp::ServiceError::McpError(e)) => Err(CallError::Protocol(e.message.to_string())),
            Err(rmcp::ServiceError::TransportClosed) => {
                Err(self.lost(serial, "the connection closed".into()).await)
            }
            Err(e) => Err(CallError::Protocol(e.to_string())),
        }
    }

    /// The connection `serial` failed under a call: the server is down
    /// until the next need restarts it. When that connection is already
    /// gone (another call found it failed, or it was restarted or
    /// stopped since), the state is left as it is.
    async fn lost(&self, serial: u64, what: String) -> CallError {
        let mut state = self.state.lock().await;
        let State::Up(conn) = &mut *state else {
            return CallError::Down(what);
        };
        if conn.serial != serial {
            return CallError::Down(what);
        }
        let reason = format!("{what}; {}", ended(conn.child.as_mut()).await);
        let failures = conn.failures_now();
        *state = self.down(reason.clone(), failures, self.users());
        CallError::Down(reason)
    }

    /// Stop the server (for `why`): close the session, then make sure
    /// the process and its group are gone.
    pub async fn stop(&self, why: McpStopReason) {
        let mut state = self.state.lock().await;
        if let State::Up(mut conn) = std::mem::replace(&mut *state, State::Idle) {
            let stopped = McpServerStopped {
                name: self.config.name.clone(),
                workspace: self.workspace(),
                reason: why,
            };
            self.reporter
                .tell(self.users(), Lifecycle::Stopped(stopped));
            let _ = tokio::time::timeout(Duration::from_secs(2), conn.service.close()).await;
            if let Some(ServerProcess(child)) = conn.child.as_mut() {
                if let Some(pid) = child.id() {
                    // The group is the server's own (its own group or
                    // session), and still ours: its leader is unreaped
                    // until the `wait` below. TERM, a grace for the
                    // leader, then KILL for whatever of the group is left.
                    // SAFETY: killpg sends a signal; no memory is touched.
                    unsafe { libc::killpg(pid as i32, libc::SIGTERM) };
                    for _ in 0..200 {
                        if has_exited(pid) {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    // SAFETY: as above; the leader is still unreaped.
                    unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
                    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                }
            }
        }
        if !matches!(self.phase(), Phase::AwaitingApproval | Phase::Disabled) {
            self.set_phase(Phase::Idle);
        }
    }
}
