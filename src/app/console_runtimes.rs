//! The console's runtimes, the I/O half of `ui::tui::runtimes`: this
//! machine's runtime and each `[remotes.NAME]`, a pool of connections to
//! them (so a switch to a runtime already glanced at costs no new ssh or
//! TLS handshake), the glance every few seconds while remotes exist, and
//! the switch itself. The view never waits on any of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::Context;
use crate::model::approval::ApprovalRecord;
use crate::protocol::{call_typed, ApiError, Request, Response, RuntimeClient, RuntimeStatus};
use crate::ui::present::runtimes::{Seen, ASKED_SHOWN};
use crate::ui::tui::msg::Msg;
use crate::ui::tui::runtimes::{Glance, Place};
use crate::ui::ws::Endpoint;

/// A runtime's client, and the endpoint to reconnect to (none: the
/// runtime this console embeds).
type Reached = (Option<Endpoint>, Arc<dyn RuntimeClient>);

/// How one runtime is reached.
#[derive(Clone)]
enum Reach {
    /// The runtime this console embeds.
    Here(Arc<dyn RuntimeClient>),
    At(Endpoint),
    /// A remote whose address or token file cannot be used.
    Broken(String),
}

/// Every runtime, and the connections held to them.
pub(super) struct Runtimes {
    reach: Vec<(String, Reach)>,
    pool: Mutex<HashMap<String, Arc<dyn RuntimeClient>>>,
    /// Runtimes a connection is being made to, in the background.
    connecting: Mutex<std::collections::HashSet<String>>,
    /// A switch's new client, taken by the loop before `update` sees
    /// `Msg::RuntimeSwitched`.
    pub(super) switched: Mutex<Option<Reached>>,
}

/// How often the runtimes are glanced at while remotes exist.
const GLANCE_EVERY: Duration = Duration::from_secs(15);
/// How long one runtime has to answer a glance.
const GLANCE_WITHIN: Duration = Duration::from_secs(5);
/// How long an answer sent to another runtime may take, a new connection
/// (an ssh handshake) included.
const CALL_ON_WITHIN: Duration = Duration::from_secs(15);

impl Runtimes {
    /// This machine's runtime (`here`: the embedded one's client, else its
    /// socket) and the configured remotes; with the places the view lists
    /// and the name shown first.
    pub(super) fn new(
        ctx: &Context,
        here: Option<Arc<dyn RuntimeClient>>,
        shown: Option<&Endpoint>,
    ) -> (Arc<Runtimes>, Vec<Place>, String) {
        let local = match here {
            Some(client) => Reach::Here(client),
            None => Reach::At(Endpoint::Unix(ctx.paths.socket_path())),
        };
        let mut reach = vec![(super::remotes::LOCAL.to_owned(), local)];
        for (name, remote) in &ctx.config.remotes {
            let r = match remote.endpoint() {
                Ok(e) => Reach::At(e),
                Err(e) => Reach::Broken(e.to_string()),
            };
            reach.push((name.clone(), r));
        }
        // The console opened on one of them (or on an address of its own,
        // listed as such).
        let mut current = super::remotes::LOCAL.to_owned();
        if let Some(shown) = shown {
            match reach
                .iter()
                .find(|(_, r)| matches!(r, Reach::At(e) if e == shown))
            {
                Some((name, _)) => current = name.clone(),
                None => {
                    current = super::remotes::ATTACHED.to_owned();
                    reach.push((current.clone(), Reach::At(shown.clone())));
                }
            }
        }
        let places = reach
            .iter()
            .map(|(name, r)| Place {
                name: name.clone(),
                at: match r {
                    Reach::Here(_) => "this process".to_owned(),
                    Reach::At(e) => e.describe(),
                    Reach::Broken(_) => "(not usable)".to_owned(),
                },
            })
            .collect();
        let runtimes = Runtimes {
            reach,
            pool: Mutex::default(),
            connecting: Mutex::default(),
            switched: Mutex::default(),
        };
        (Arc::new(runtimes), places, current)
    }

    fn remotes(&self) -> bool {
        self.reach.len() > 1
    }

    /// Keep `client` as `name`'s connection (the one the console uses).
    pub(super) fn keep(&self, name: &str, client: Arc<dyn RuntimeClient>) {
        if self
            .reach
            .iter()
            .any(|(n, r)| n == name && matches!(r, Reach::At(_)))
        {
            lock(&self.pool).insert(name.to_owned(), client);
        }
    }

    /// Close the kept connection to `name` (no longer shown, or silent).
    pub(super) fn forget(&self, name: &str) {
        lock(&self.pool).remove(name);
    }

    /// A client for `name`: the embedded one, a pooled one, or a new
    /// connection (never asking at the terminal), pooled. The connection is
    /// made in the background, one at a time per runtime, and kept even
    /// when the caller stopped waiting for it: a runtime whose ssh takes
    /// longer than a glance waits is there at the next one.
    async fn client(self: &Arc<Self>, name: &str) -> Result<Reached, String> {
        let Some((_, reach)) = self.reach.iter().find(|(n, _)| n == name) else {
            return Err(format!("no runtime `{name}`"));
        };
        let endpoint = match reach {
            Reach::Here(client) => return Ok((None, Arc::clone(client))),
            Reach::Broken(why) => return Err(why.clone()),
            Reach::At(e) => e.clone(),
        };
        let pooled = lock(&self.pool).get(name).cloned();
        if let Some(client) = pooled {
            return Ok((Some(endpoint), client));
        }
        if !lock(&self.connecting).insert(name.to_owned()) {
            return Err("still connecting (it is slow to answer)".to_owned());
        }
        let (this, key, to) = (Arc::clone(self), name.to_owned(), endpoint.clone());
        let made = tokio::spawn(async move {
            let made = to
                .reconnect()
                .await
                .map(|c| Arc::new(c) as Arc<dyn RuntimeClient>);
            if let Ok(client) = &made {
                lock(&this.pool).insert(key.clone(), Arc::clone(client));
            }
            lock(&this.connecting).remove(&key);
            made
        });
        let made = made.await.map_err(|e| format!("connecting failed: {e}"))?;
        let client: Arc<dyn RuntimeClient> = match made {
            Ok(c) => c,
            // This machine's socket with nothing behind it: said shortly.
            Err(e)
                if matches!(endpoint, Endpoint::Unix(_))
                    && e.kind() != std::io::ErrorKind::InvalidData =>
            {
                return Err("not running".to_owned())
            }
            Err(e) => return Err(endpoint.unreachable(&e)),
        };
        Ok((Some(endpoint), client))
    }

    /// What `name` says at a glance; a pooled connection that failed is
    /// dropped (the next glance connects anew).
    async fn glance(self: &Arc<Self>, name: &str) -> Result<Seen, String> {
        let (_, client) = self.client(name).await?;
        let asked = async {
            let status = call_typed::<RuntimeStatus>(&*client, Request::RuntimeStatus).await?;
            let mut seen = Seen::of(&status);
            // The calls waiting there, so they can be answered from here
            // (a runtime that cannot list them is still glanced at).
            if seen.approvals > 0 {
                let list = Request::ApprovalsList {
                    agent_id: None,
                    include_answered: false,
                };
                match call_typed::<Vec<ApprovalRecord>>(&*client, list).await {
                    Ok(mut asked) => {
                        asked.truncate(ASKED_SHOWN);
                        seen.asked = asked;
                    }
                    Err(e) if e.failure == crate::protocol::Failure::Transport => return Err(e),
                    Err(_) => {}
                }
            }
            Ok::<_, crate::protocol::ApiError>(seen)
        };
        match asked.await {
            Ok(seen) => Ok(seen),
            Err(e) => {
                lock(&self.pool).remove(name);
                Err(e.to_string())
            }
        }
    }

    /// Ask `name` on behalf of the view (an answer to one of its waiting
    /// calls), connecting if need be, within `CALL_ON_WITHIN`; a
    /// connection that failed is dropped.
    pub(super) async fn call_on(
        self: &Arc<Self>,
        name: &str,
        request: Request,
    ) -> Result<Response, ApiError> {
        let asked = async {
            let (_, client) = self.client(name).await.map_err(ApiError::transport)?;
            client.call(request).await
        };
        let answer = match tokio::time::timeout(CALL_ON_WITHIN, asked).await {
            Ok(answer) => answer,
            Err(_) => Err(ApiError::transport(format!(
                "{name} did not answer within 15 s: the answer may have reached it (the next \
                 glance shows what still waits there)"
            ))),
        };
        if matches!(&answer, Err(e) if e.failure == crate::protocol::Failure::Transport) {
            self.forget(name);
        }
        answer
    }

    /// Every runtime at once, each within `GLANCE_WITHIN`.
    pub(super) async fn glance_all(self: &Arc<Self>) -> Vec<Glance> {
        let asked: Vec<_> = self
            .reach
            .iter()
            .map(|(name, _)| {
                let (this, name) = (Arc::clone(self), name.clone());
                tokio::spawn(async move {
                    let seen = match tokio::time::timeout(GLANCE_WITHIN, this.glance(&name)).await {
                        Ok(seen) => seen,
                        Err(_) => {
                            // A connection that hangs is not kept.
                            this.forget(&name);
                            Err("no answer within 5 s".into())
                        }
                    };
                    Glance { name, seen }
                })
            })
            .collect();
        let mut out = Vec::new();
        for task in asked {
            if let Ok(g) = task.await {
                out.push(g);
            }
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Glance at every runtime when asked (`now`), and every `GLANCE_EVERY`
/// while remotes exist; answers come back as `Msg::RuntimesSeen`.
pub(super) fn glancer(
    runtimes: Arc<Runtimes>,
    tx: mpsc::Sender<Msg>,
) -> (mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
    let (now_tx, mut now_rx) = mpsc::channel::<()>(4);
    let task = tokio::spawn(async move {
        let start = tokio::time::Instant::now() + GLANCE_EVERY;
        let mut every = tokio::time::interval_at(start, GLANCE_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let periodic = runtimes.remotes();
        loop {
            tokio::select! {
                asked = now_rx.recv() => if asked.is_none() { return },
                _ = every.tick(), if periodic => {}
            }
            let glances = runtimes.glance_all().await;
            if tx.send(Msg::RuntimesSeen(glances)).await.is_err() {
                return;
            }
        }
    });
    (now_tx, task)
}

/// Connect to `name`, check it has `agent_id` (the agent shown stays
/// shown), and hand the client over: into `switched`, then
/// `Msg::RuntimeSwitched` (or `Msg::SwitchFailed`, the view unchanged).
/// A kept connection that does not answer is dropped and made anew once.
pub(super) fn switch(
    runtimes: Arc<Runtimes>,
    name: String,
    agent_id: String,
    tx: mpsc::Sender<Msg>,
) {
    tokio::spawn(async move {
        let started = Instant::now();
        let mut tries = 0;
        let msg = loop {
            tries += 1;
            let (endpoint, client) = match runtimes.client(&name).await {
                Ok(found) => found,
                Err(reason) => break Msg::SwitchFailed { name, reason },
            };
            let asked = client.call_raw(Request::AgentStatus {
                agent_id: agent_id.clone(),
            });
            match tokio::time::timeout(GLANCE_WITHIN, asked).await {
                Ok(Ok(_)) => {
                    let embedded = endpoint.is_none();
                    *lock(&runtimes.switched) = Some((endpoint, client));
                    let took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    break Msg::RuntimeSwitched {
                        name,
                        agent_id,
                        took_ms,
                        embedded,
                    };
                }
                Ok(Err(e)) if e.code == crate::protocol::ErrorCode::NotFound => {
                    let reason = format!(
                        "it has no agent `{agent_id}`: show one it has here first (/agent switch NAME)"
                    );
                    break Msg::SwitchFailed { name, reason };
                }
                failed => {
                    runtimes.forget(&name);
                    if tries < 2 {
                        continue;
                    }
                    let reason = match failed {
                        Ok(Err(e)) => e.to_string(),
                        _ => "no answer within 5 s".to_owned(),
                    };
                    break Msg::SwitchFailed { name, reason };
                }
            }
        };
        let _ = tx.send(msg).await;
    });
}
