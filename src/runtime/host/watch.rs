//! The watcher that notices when local guidance (`guidance.rs`) or the
//! configuration file changes.
//!
//! One `notify` watcher (inotify on Linux) over the directories
//! holding those files, non-recursive, so an agent's busy home costs one
//! watch and only events naming `AGENTS.md`, `CLAUDE.md` or the config
//! file get through. A burst of events is debounced (`DEBOUNCE`), then the
//! effective content is compared with what was last seen, and only a real
//! change is recorded as `config_reloaded` on the agent's ledger (payload
//! `source: "agents_md" | "config_file"`, `changed`, paths). Guidance is read
//! at each turn start, so a change takes effect on the next turn; a config
//! change calls the host's `ConfigReloader`, which swaps what it can (the
//! provider chain) and reports the changed sections. Nothing polls: the
//! task sleeps on the event channel, and stops on runtime shutdown.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::model::event::Provenance;
use crate::model::BoxFuture;
use crate::protocol::events::{new_event, ConfigReloaded, Event};
use crate::runtime::guidance::{load_guidance, AGENTS_MD, CLAUDE_MD};
use crate::runtime::handle::{ConfigWatch, GuidanceWatcher, HostInner, Reloaded};

/// Quiet time after the last file event before changes are examined.
pub const DEBOUNCE: Duration = Duration::from_millis(150);
/// A steady stream of events is still examined this often.
const MAX_DEBOUNCE: Duration = Duration::from_secs(2);

fn fingerprint<T: Hash>(value: &T) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// What a watched file belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Config,
    Agent(String),
}

#[derive(Default)]
struct Registry {
    /// Watched directory -> agents whose home or workspace anchor it is.
    dirs: BTreeMap<PathBuf, BTreeSet<String>>,
    /// Agent -> (home, workspace anchor) it is watched for.
    agents: BTreeMap<String, (PathBuf, PathBuf)>,
    /// Last seen effective content per target.
    seen: BTreeMap<Target, u64>,
    /// The config file's last reload failed: the next that succeeds is
    /// recorded even when it changes nothing, so the operator sees the
    /// error is over.
    config_failed: bool,
}

impl Registry {
    /// Forget what `agent_id` was watched for; the directories no other
    /// agent needs, to unwatch.
    fn release(&mut self, agent_id: &str) -> Vec<PathBuf> {
        let mut remove = Vec::new();
        if let Some((home, anchor)) = self.agents.remove(agent_id) {
            for d in [home, anchor] {
                if let Some(users) = self.dirs.get_mut(&d) {
                    users.remove(agent_id);
                    if users.is_empty() {
                        self.dirs.remove(&d);
                        remove.push(d);
                    }
                }
            }
        }
        remove
    }
}

/// The host's handle on the watcher task.
pub(crate) struct GuidanceWatch {
    watcher: Mutex<Option<RecommendedWatcher>>,
    registry: Arc<Mutex<Registry>>,
    join: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn relevant_name(path: &Path, config_name: Option<&std::ffi::OsStr>) -> bool {
    let name = path.file_name();
    name == Some(std::ffi::OsStr::new(AGENTS_MD))
        || name == Some(std::ffi::OsStr::new(CLAUDE_MD))
        || (config_name.is_some() && name == config_name)
}

impl GuidanceWatch {
    /// Start the watcher task. A watcher that cannot be created (no inotify
    /// instances left) is logged and the runtime runs without it.
    pub(crate) fn start(
        inner: Weak<HostInner>,
        config: Option<ConfigWatch>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> GuidanceWatch {
        let (tx, rx) = mpsc::unbounded_channel::<PathBuf>();
        let config_name = config
            .as_ref()
            .and_then(|c| c.path.file_name().map(|n| n.to_owned()));
        let filter_name = config_name.clone();
        let handler = move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            for path in event.paths {
                if relevant_name(&path, filter_name.as_deref()) {
                    let _ = tx.send(path);
                }
            }
        };
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch AGENTS.md and the config file");
                None
            }
        };
        let registry = Arc::new(Mutex::new(Registry::default()));
        if let (Some(w), Some(c)) = (watcher.as_mut(), config.as_ref()) {
            if let Some(dir) = c.path.parent() {
                if let Err(e) = w.watch(dir, RecursiveMode::NonRecursive) {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the config directory");
                }
            }
            let initial = std::fs::read(&c.path).ok();
            lock(&registry)
                .seen
                .insert(Target::Config, fingerprint(&initial));
        }
        let join = tokio::spawn(run(inner, Arc::clone(&registry), config, rx, shutdown));
        GuidanceWatch {
            watcher: Mutex::new(watcher),
            registry,
            join: Mutex::new(Some(join)),
        }
    }
}

impl GuidanceWatcher for GuidanceWatch {
    /// Stop watching an agent's guidance (it was archived): its
    /// directories are unwatched once no other agent needs them.
    fn unwatch_agent(&self, agent_id: &str) {
        let remove = {
            let mut reg = lock(&self.registry);
            reg.seen.remove(&Target::Agent(agent_id.to_owned()));
            reg.release(agent_id)
        };
        if let Some(w) = lock(&self.watcher).as_mut() {
            for d in remove {
                let _ = w.unwatch(&d);
            }
        }
    }

    /// Watch an agent's guidance directories: its home and its active
    /// workspace anchor. Called again when the workspace changes: the old
    /// anchor is unwatched once no agent needs it. Idempotent.
    fn watch_agent(&self, agent_id: &str, home: &Path, anchor: &Path) {
        let (add, remove) = {
            let mut reg = lock(&self.registry);
            let wanted = (home.to_path_buf(), anchor.to_path_buf());
            if reg.agents.get(agent_id) == Some(&wanted) {
                return;
            }
            let mut remove = reg.release(agent_id);
            let mut add = Vec::new();
            for d in [home, anchor] {
                let users = reg.dirs.entry(d.to_path_buf()).or_default();
                if users.is_empty() {
                    add.push(d.to_path_buf());
                }
                users.insert(agent_id.to_owned());
            }
            remove.retain(|d| !reg.dirs.contains_key(d));
            reg.agents.insert(agent_id.to_owned(), wanted);
            reg.seen.insert(
                Target::Agent(agent_id.to_owned()),
                fingerprint(&load_guidance(home, anchor)),
            );
            (add, remove)
        };
        if let Err(e) = std::fs::create_dir_all(home)
            .and_then(|()| crate::runtime::context::memory::ensure(home))
        {
            tracing::warn!(home = %home.display(), error = %e, "cannot create the agent home or its memory files");
        }
        if let Some(w) = lock(&self.watcher).as_mut() {
            for d in remove {
                let _ = w.unwatch(&d);
            }
            for d in add {
                if let Err(e) = w.watch(&d, RecursiveMode::NonRecursive) {
                    tracing::warn!(dir = %d.display(), error = %e, "cannot watch a guidance directory");
                }
            }
        }
    }

    /// Stop watching and wait for the task (after the shutdown signal).
    fn stop(&self) -> BoxFuture<'_, ()> {
        drop(lock(&self.watcher).take());
        let join = lock(&self.join).take();
        Box::pin(async move {
            if let Some(j) = join {
                let _ = j.await;
            }
        })
    }
}

async fn run(
    inner: Weak<HostInner>,
    registry: Arc<Mutex<Registry>>,
    config: Option<ConfigWatch>,
    mut rx: mpsc::UnboundedReceiver<PathBuf>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let mut paths = BTreeSet::new();
        tokio::select! {
            _ = shutdown.changed() => return,
            p = rx.recv() => match p {
                Some(p) => { paths.insert(p); }
                None => return,
            },
        }
        // Debounce: collect until the files have been quiet for DEBOUNCE
        // (at most MAX_DEBOUNCE after the first event).
        let cap = tokio::time::Instant::now() + MAX_DEBOUNCE;
        loop {
            let quiet = (tokio::time::Instant::now() + DEBOUNCE).min(cap);
            tokio::select! {
                _ = shutdown.changed() => return,
                p = rx.recv() => match p {
                    Some(p) => { paths.insert(p); }
                    None => return,
                },
                _ = tokio::time::sleep_until(quiet) => break,
            }
        }
        if *shutdown.borrow() {
            return;
        }
        let Some(host) = inner.upgrade() else { return };
        examine(&host, &registry, config.as_ref(), &paths).await;
    }
}

/// Compare what the changed paths now hold with what was last seen and
/// record the real changes.
async fn examine(
    host: &Arc<HostInner>,
    registry: &Mutex<Registry>,
    config: Option<&ConfigWatch>,
    paths: &BTreeSet<PathBuf>,
) {
    let mut targets: BTreeMap<Target, Vec<PathBuf>> = BTreeMap::new();
    {
        let reg = lock(registry);
        for p in paths {
            let parent = p.parent().unwrap_or(Path::new(""));
            for agent in reg.dirs.get(parent).into_iter().flatten() {
                targets
                    .entry(Target::Agent(agent.clone()))
                    .or_default()
                    .push(p.clone());
            }
            if config.is_some_and(|c| c.path == *p) {
                targets.entry(Target::Config).or_default().push(p.clone());
            }
        }
    }
    for (target, changed_paths) in targets {
        match &target {
            Target::Agent(agent_id) => {
                let Some((home, anchor)) = lock(registry).agents.get(agent_id).cloned() else {
                    continue;
                };
                let guidance = load_guidance(&home, &anchor);
                if !changed_since(registry, &target, fingerprint(&guidance)) {
                    continue;
                }
                let names: BTreeSet<String> = changed_paths
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                let payload = ConfigReloaded::AgentsMd {
                    changed: names.into_iter().collect(),
                    paths: changed_paths,
                    loaded: guidance.iter().map(|g| g.source.clone()).collect(),
                    note: "takes effect at the agent's next turn".into(),
                };
                record(host, std::slice::from_ref(agent_id), payload).await;
            }
            Target::Config => {
                let Some(c) = config else { continue };
                let bytes = std::fs::read(&c.path).ok();
                if !changed_since(registry, &target, fingerprint(&bytes)) {
                    continue;
                }
                let reloaded = (c.reload)();
                let failed =
                    std::mem::replace(&mut lock(registry).config_failed, reloaded.is_err());
                let payload = match reloaded {
                    // An edit that changes no setting (a comment, say) is
                    // not a change.
                    Ok(Reloaded { ref changed, .. }) if changed.is_empty() && !failed => continue,
                    Ok(Reloaded {
                        changed,
                        mcp_servers,
                        hooks,
                        reviewer,
                    }) => {
                        if let Some(servers) = mcp_servers {
                            host.mcp().reconfigure(servers);
                        }
                        if let Some(hooks) = hooks {
                            host.hooks().replace(hooks);
                        }
                        if let Some(reviewer) = reviewer {
                            host.reviewer().replace(reviewer);
                        }
                        ConfigReloaded::ConfigFile {
                            path: c.path.clone(),
                            changed,
                            applied: true,
                            error: None,
                            note: None,
                        }
                    }
                    Err(error) => ConfigReloaded::ConfigFile {
                        path: c.path.clone(),
                        changed: Vec::new(),
                        applied: false,
                        error: Some(error),
                        note: Some("the previous configuration stays in effect".into()),
                    },
                };
                let agents: Vec<String> = lock(registry).agents.keys().cloned().collect();
                record(host, &agents, payload).await;
            }
        }
    }
}

fn changed_since(registry: &Mutex<Registry>, target: &Target, now: u64) -> bool {
    let mut reg = lock(registry);
    let before = reg.seen.insert(target.clone(), now);
    before != Some(now)
}

async fn record(host: &Arc<HostInner>, agents: &[String], payload: ConfigReloaded) {
    if agents.is_empty() {
        return;
    }
    let agents = agents.to_vec();
    let result = host
        .store
        .write(move |tx| {
            for agent_id in &agents {
                let provenance = Provenance {
                    source: Some("file_watch".into()),
                    ..Provenance::default()
                };
                let event = Event::ConfigReloaded(payload.clone());
                tx.append_event(new_event(agent_id, provenance, event))?;
            }
            Ok(())
        })
        .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "cannot record a guidance or config change");
    }
}
