//! The sandbox for model commands: what the kernel can enforce here
//! (`Support`, probed once), what a command may write (`Plan`, pure: the
//! writable roots, the paths inside them that stay read-only, the network),
//! and what the execution snapshot says is enforced (`confinement`).
//! Applying a plan to a child process is `linux` (Landlock for the file
//! system, seccomp for the network, a private mount namespace for the
//! read-only carve-outs); elsewhere nothing can be enforced and the
//! snapshot says so.
//!
//! Operator commands (`!cmd`, `task.run`) are the operator's own and are
//! never sandboxed.

use std::path::{Path, PathBuf};

use crate::model::sandbox::{NetworkAccess, SandboxMode};
use crate::model::workspace::{DirPin, Enforcement, ExecutionPolicySnapshot, ExecutionProfile};

#[cfg(target_os = "linux")]
pub mod linux;

/// The oldest Landlock ABI Holon uses: 3 (Linux 6.2) is the first that
/// controls truncation, so no write outside the roots goes unchecked.
pub const MIN_LANDLOCK_ABI: i32 = 3;

/// What this kernel can enforce, probed once at start.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Support {
    /// The Landlock ABI version (0: none).
    pub landlock_abi: i32,
    /// Whether a seccomp filter can be installed.
    pub seccomp: bool,
    /// Whether a private mount namespace can be made (for the read-only
    /// carve-outs inside writable roots).
    pub mount_namespace: bool,
    /// Why the sandbox cannot be used, when it cannot.
    pub missing: Option<String>,
}

impl Support {
    /// No enforcement at all (another OS, or forced for tests).
    pub fn none(why: &str) -> Support {
        Support {
            landlock_abi: 0,
            seccomp: false,
            mount_namespace: false,
            missing: Some(why.to_owned()),
        }
    }

    /// Whether commands can be confined at all.
    pub fn usable(&self) -> bool {
        self.missing.is_none()
    }

    /// Probe the running kernel (once; later calls get the first answer).
    /// `HOLON_SANDBOX_UNSUPPORTED=1` makes a test build (debug assertions
    /// on) answer "none", to exercise the fallback on a kernel that could
    /// sandbox; a release build ignores it, so one exported variable
    /// cannot turn the sandbox off.
    pub fn probe() -> &'static Support {
        static PROBED: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
        PROBED.get_or_init(|| {
            if cfg!(debug_assertions)
                && std::env::var_os("HOLON_SANDBOX_UNSUPPORTED").is_some_and(|v| v == "1")
            {
                return Support::none("disabled by HOLON_SANDBOX_UNSUPPORTED=1");
            }
            #[cfg(target_os = "linux")]
            {
                linux::probe()
            }
            #[cfg(not(target_os = "linux"))]
            {
                Support::none("only Linux (Landlock and seccomp) is supported")
            }
        })
    }
}

/// For tests that need the sandbox: whether this kernel gives one. Under
/// `CI=true` it must — a kernel that cannot fails the test loudly rather
/// than letting it pass without testing anything; elsewhere it says so and
/// the test skips.
pub fn tests_can_sandbox() -> bool {
    let support = Support::probe();
    if support.usable() {
        return true;
    }
    let msg = format!(
        "THIS KERNEL CANNOT SANDBOX ({support:?}): the sandbox tests need Landlock ABI \
         {MIN_LANDLOCK_ABI}+ and seccomp"
    );
    assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{msg}");
    eprintln!("{msg}");
    false
}

/// The policy's sandbox fields and what the kernel makes of them: the
/// execution snapshot's policy, minus the approval part.
pub fn confinement(
    mode: SandboxMode,
    network: NetworkAccess,
    support: &Support,
    base: ExecutionPolicySnapshot,
) -> ExecutionPolicySnapshot {
    let enforced = |yes: bool| match yes {
        true => Enforcement::Enforced,
        false => Enforcement::NotEnforced,
    };
    let on = mode != SandboxMode::Off && support.usable();
    ExecutionPolicySnapshot {
        backend: match on {
            true => ExecutionProfile::Sandboxed,
            false => ExecutionProfile::HostLocal,
        },
        sandbox: Some(mode),
        network_access: Some(network),
        filesystem: enforced(on),
        write: enforced(on),
        network: enforced(on && network == NetworkAccess::Off && support.seccomp),
        child_process: enforced(on),
        git_metadata: Some(enforced(on && support.mount_namespace)),
        signals: Some(enforced(on && support.landlock_abi >= 6)),
        abstract_sockets: Some(enforced(on && support.landlock_abi >= 6)),
        unix_sockets: Some(enforced(on && support.seccomp)),
        command_environment: match on {
            true => "allow_list".to_owned(),
            false => base.command_environment.clone(),
        },
        sandbox_note: match (mode, &support.missing) {
            (SandboxMode::Off, _) => None,
            (_, Some(why)) => Some(format!("the kernel cannot sandbox commands: {why}")),
            (_, None) if !support.mount_namespace => Some(
                "no private mount namespace: git metadata (.git) inside a writable \
                 root are not protected, Holon's own files are not hidden, and a command \
                 run as root keeps its capabilities"
                    .to_owned(),
            ),
            (_, None) if support.landlock_abi < 6 => Some(format!(
                "Landlock ABI {} does not scope signals or abstract unix sockets (6+ does)",
                support.landlock_abi
            )),
            (_, None) => None,
        },
        ..base
    }
}

/// How one model command is to be confined: the policy's mode and
/// network, and the roots it works in. Carried by its `CommandSpec`;
/// `None` there means unconfined (the operator's own commands, `off`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confine {
    pub mode: SandboxMode,
    pub network: NetworkAccess,
    pub execution_root: PathBuf,
    pub agent_home: PathBuf,
    /// Path unix sockets the operator lets commands reach (`[policy]
    /// unix_sockets`): none by default.
    pub unix_sockets: Vec<PathBuf>,
    /// What the execution root was when it was chosen: a root replaced
    /// since (a link in its place) is refused.
    pub root_pin: Option<DirPin>,
    /// More directories it may write beneath, that the operator named
    /// for it (an MCP server's `writable`); none for a model's command.
    pub extra_writable: Vec<PathBuf>,
}

/// What a sandboxed command is given: where it runs and what it may
/// write.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub mode: SandboxMode,
    pub network: NetworkAccess,
    /// The active execution root (the worktree root when isolated).
    pub execution_root: &'a Path,
    pub agent_home: &'a Path,
    /// The command's own temporary directory (`TMPDIR`), already made
    /// (`None` for ApplyPatch, which has none).
    pub tmp: Option<&'a Path>,
    /// The task's output file (stdout and stderr), which `/dev/stdout`
    /// names from inside the command.
    pub output: Option<&'a Path>,
    /// Holon's own directories and files (data, config, run, logs, the
    /// store): never writable, and hidden from the command altogether
    /// where no writable root lies beneath them.
    pub holon_dirs: &'a [PathBuf],
    /// Path unix sockets the command may reach.
    pub unix_sockets: &'a [PathBuf],
    /// What the execution root was when it was chosen, if recorded.
    pub root_pin: Option<DirPin>,
    /// More directories it may write beneath (made if missing).
    pub extra_writable: &'a [PathBuf],
}

/// What the kernel is told, for one command.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    /// Directories the command may write beneath (canonical).
    pub writable: Vec<PathBuf>,
    /// Single files it may write (its own output).
    pub writable_files: Vec<PathBuf>,
    /// Existing paths beneath a writable root that stay read-only (bound
    /// read-only in the command's mount namespace), shallowest first.
    pub read_only: Vec<PathBuf>,
    /// Writable roots beneath a read-only path, bound writable again after
    /// it (the agent's home inside Holon's data directory), shallowest
    /// first.
    pub reopen: Vec<PathBuf>,
    /// Those of `read_only` that are Holon's own directories (which must
    /// never be writable, even where git metadata could be left so).
    pub holon_read_only: Vec<PathBuf>,
    /// Holon's own directories and files no writable root lies beneath
    /// (its control socket's directory, config, logs, the store): hidden
    /// in the command's mount namespace, a directory under an empty
    /// read-only file system, a file under an empty one.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// Path unix sockets the operator lets commands reach; every other
    /// one is refused (by Landlock where the kernel scopes them, else by
    /// refusing `socket(AF_UNIX)` while this is empty).
    #[serde(default)]
    pub unix_sockets: Vec<PathBuf>,
    /// The command's own directory bound over `/dev/shm` (inside its
    /// temporary directory): shared memory private to it.
    #[serde(default)]
    pub shm: Option<PathBuf>,
    /// The execution root as it was chosen (its canonical path, one of
    /// `writable`) and what it must still be when the kernel is told about
    /// it: the rule is made from a descriptor checked against this.
    #[serde(default)]
    pub pinned_root: Option<DirPin>,
    /// Whether network sockets are allowed.
    pub network: bool,
}

impl Plan {
    /// Whether a write to `path` (canonical, or beneath a canonical
    /// directory) is allowed by this plan: beneath a writable root and not
    /// beneath a read-only path, unless beneath a reopened root. The same
    /// rule the kernel applies; ApplyPatch, which writes from Holon's own
    /// process, asks it.
    pub fn allows_write(&self, path: &Path) -> bool {
        let beneath = |roots: &[PathBuf]| roots.iter().any(|r| path.starts_with(r));
        if self.writable_files.iter().any(|f| f == path) {
            return true;
        }
        if !beneath(&self.writable) {
            return false;
        }
        if beneath(&self.hidden) {
            return false;
        }
        !beneath(&self.read_only) || beneath(&self.reopen)
    }
}

/// The git metadata of a checkout at `root`, whatever the shape of its
/// `.git`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GitMeta {
    /// No `.git` here.
    None,
    /// `.git` is the repository itself (a directory).
    Repository(PathBuf),
    /// `.git` is a pointer file (`gitdir: …`): a linked worktree, a
    /// submodule's checkout, a `--separate-git-dir` repository. The file,
    /// its gitdir and that gitdir's common dir.
    Pointer {
        file: PathBuf,
        gitdir: PathBuf,
        common: PathBuf,
    },
    /// `.git` is a symbolic link, which no mount can hold in place.
    Link(PathBuf),
}

fn git_meta(root: &Path) -> GitMeta {
    let dot = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot) else {
        return GitMeta::None;
    };
    if meta.file_type().is_symlink() {
        return GitMeta::Link(dot);
    }
    if meta.is_dir() {
        return GitMeta::Repository(dot);
    }
    // `gitdir: <path>`; the gitdir names its common dir in `commondir`.
    let pointed = std::fs::read_to_string(&dot).ok().and_then(|text| {
        let gitdir = text.trim().strip_prefix("gitdir:")?.trim().to_owned();
        let gitdir = root.join(gitdir).canonicalize().ok()?;
        let common = match std::fs::read_to_string(gitdir.join("commondir")) {
            Ok(c) => gitdir.join(c.trim()).canonicalize().ok()?,
            Err(_) => gitdir.clone(),
        };
        Some((gitdir, common))
    });
    match pointed {
        Some((gitdir, common)) => GitMeta::Pointer {
            file: dot,
            gitdir,
            common,
        },
        // A `.git` file git cannot follow: held read-only as it is, so
        // nothing can make it point somewhere.
        None => GitMeta::Repository(dot),
    }
}

/// Holon's own paths, as the runtime told them at start: what Holon's own
/// confined helpers (its git queries) hide too.
static HOLON_PATHS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();

/// Say, once, which paths are Holon's own (the runtime, at start).
pub fn set_holon_paths(paths: &[PathBuf]) {
    let _ = HOLON_PATHS.set(paths.iter().filter_map(|p| p.canonicalize().ok()).collect());
}

/// A plan for a helper of Holon's that only reads, working in `dir`:
/// nothing writable, the network off, Holon's own paths that do not hold
/// `dir` hidden.
pub fn read_only_plan(dir: &Path) -> Plan {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let hidden: Vec<PathBuf> = HOLON_PATHS
        .get()
        .into_iter()
        .flatten()
        .filter(|p| p.exists() && !dir.starts_with(p))
        .cloned()
        .collect();
    Plan {
        hidden: outermost(hidden),
        ..Plan::default()
    }
}

/// The paths no other of them lies beneath, shallowest first: hiding one
/// hides what is inside it (and a mount over a path already hidden would
/// find nothing there to cover).
fn outermost(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort_by_key(|p| p.components().count());
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    kept
}

/// The directory `path` names now, pinned: its canonical path and its
/// identity there, read without following a link (a link swapped in
/// between the two reads gives no pin). `None` when it is no directory.
pub fn pin_dir(path: &Path) -> Option<DirPin> {
    use std::os::unix::fs::MetadataExt;
    let canonical = path.canonicalize().ok()?;
    let meta = std::fs::symlink_metadata(&canonical).ok()?;
    meta.is_dir().then(|| DirPin {
        path: canonical.display().to_string(),
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Whether `path` still names the pinned directory, by the same path.
pub fn pin_holds(pin: &DirPin, path: &Path) -> bool {
    pin_dir(path).as_ref() == Some(pin)
}

/// Build the plan for one command (reads the file system: canonical
/// paths, `.git` files). `None` for `SandboxMode::Off`.
pub fn plan(req: &Request<'_>) -> std::io::Result<Option<Plan>> {
    let canon = |p: &Path| p.canonicalize();
    // A pinned root is used by its pinned path, read once: it must still
    // name the directory that was chosen.
    if let Some(pin) = &req.root_pin {
        if !pin_holds(pin, req.execution_root) {
            return Err(std::io::Error::other(format!(
                "the execution root {} is no longer the directory that was chosen (it was \
                 replaced, perhaps by a link): nothing runs there; choose it again with \
                 UseWorkspace",
                req.execution_root.display()
            )));
        }
    }
    let root_canonical = |p: &Path| match &req.root_pin {
        Some(pin) => Ok(PathBuf::from(&pin.path)),
        None => canon(p),
    };
    let mut writable = match req.mode {
        SandboxMode::Off => return Ok(None),
        SandboxMode::WorkspaceWrite => {
            // The agent's home is Holon's to make.
            std::fs::create_dir_all(req.agent_home)?;
            vec![root_canonical(req.execution_root)?, canon(req.agent_home)?]
        }
        SandboxMode::ReadOnly => vec![],
    };
    let root = writable.first().cloned();
    for extra in req.extra_writable {
        std::fs::create_dir_all(extra)?;
        writable.push(canon(extra)?);
    }
    let mut shm = None;
    if let Some(tmp) = req.tmp {
        let tmp = canon(tmp)?;
        let own = tmp.join(".shm");
        std::fs::create_dir_all(&own)?;
        shm = Some(own);
        writable.push(tmp);
    }
    let mut protected: Vec<PathBuf> = Vec::new();
    if let Some(root) = root {
        match git_meta(&root) {
            GitMeta::None => {}
            // A repository checked out here (direct mode): its whole `.git`
            // stays read-only — hooks and config, but also what would let
            // a command redirect them (a `commondir` file, a submodule's
            // gitdir under `modules/`, `.git` itself renamed and replaced:
            // a mount point cannot be). Commits are made from an isolated
            // worktree, or by escaping.
            GitMeta::Repository(dot) => protected.push(dot),
            // A `.git` link could be replaced by one to a gitdir the
            // command made, whose hooks the operator's next git runs.
            GitMeta::Link(dot) => {
                return Err(std::io::Error::other(format!(
                    "{} is a symbolic link, which the sandbox cannot hold read-only; work in \
                     an isolated worktree (UseWorkspace mode=isolated), replace the link with \
                     a `gitdir:` file, or set the workspace's sandbox to read_only or off",
                    dot.display()
                )))
            }
            // A linked worktree (isolated mode) commits through its own
            // gitdir, the repository's objects and Holon's own branches
            // (`refs/heads/holon/`, with their logs), which are writable:
            // not the operator's branches, tags or `refs/replace`. The
            // repository's hooks and config are outside every root, and
            // what says which repository this is and how it is configured
            // (the `.git` file, the gitdir's `commondir`, `gitdir` and
            // `config.worktree`) stays read-only.
            GitMeta::Pointer {
                file,
                gitdir,
                common,
            } if gitdir != common => {
                for extra in [
                    gitdir.clone(),
                    common.join("objects"),
                    common.join("refs/heads/holon"),
                    common.join("logs/refs/heads/holon"),
                ] {
                    if extra.is_dir() {
                        writable.push(extra);
                    }
                }
                // Held read-only whether or not it exists: an empty one is
                // what git reads when there is none.
                let worktree_config = gitdir.join("config.worktree");
                if let Err(e) = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&worktree_config)
                {
                    if e.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                }
                protected.extend([
                    file,
                    gitdir.join("commondir"),
                    gitdir.join("gitdir"),
                    worktree_config,
                ]);
            }
            // A submodule's checkout or a separate gitdir: the pointer and
            // the repository it names both stay read-only.
            GitMeta::Pointer { file, gitdir, .. } => protected.extend([file, gitdir]),
        }
    }
    if req.mode == SandboxMode::WorkspaceWrite {
        // The agent home's `.holon/` is the runtime's (its memory index,
        // the template's state): a command can read it, never plant a
        // link Holon would follow.
        let runtime_own = canon(req.agent_home)?.join(".holon");
        std::fs::create_dir_all(&runtime_own)?;
        protected.push(runtime_own);
    }
    let holon: Vec<PathBuf> = req
        .holon_dirs
        .iter()
        .filter_map(|d| canon(d).ok())
        .collect();
    let writable_files: Vec<PathBuf> = req.output.and_then(|o| canon(o).ok()).into_iter().collect();
    let mut plan = shape(writable, writable_files, protected, holon, req.network);
    plan.shm = shm;
    plan.pinned_root = req
        .root_pin
        .clone()
        .filter(|_| req.mode == SandboxMode::WorkspaceWrite);
    plan.unix_sockets = req
        .unix_sockets
        .iter()
        .filter_map(|p| canon(p).ok())
        .collect();
    Ok(Some(plan))
}

/// Made ready to apply to a command's child process (see `linux`).
#[cfg(target_os = "linux")]
pub use linux::Prepared;

/// Elsewhere nothing can be applied (and `Support` says so).
#[cfg(not(target_os = "linux"))]
pub enum Prepared {}

#[cfg(not(target_os = "linux"))]
impl Prepared {
    /// # Safety
    /// Never called: no `Prepared` exists here.
    pub unsafe fn apply(&self) -> std::io::Result<()> {
        match *self {}
    }
}

/// Plan one command's sandbox (its own `tmp`, its `output` file); `ready`
/// makes the plan ready to apply between fork and exec.
pub fn plan_command(
    c: &Confine,
    tmp: &Path,
    output: &Path,
    holon_dirs: &[PathBuf],
) -> std::io::Result<Plan> {
    let failed = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("could not set up the sandbox: {e}"))
    };
    let request = Request {
        mode: c.mode,
        network: c.network,
        execution_root: &c.execution_root,
        agent_home: &c.agent_home,
        tmp: Some(tmp),
        output: Some(output),
        holon_dirs,
        unix_sockets: &c.unix_sockets,
        root_pin: c.root_pin.clone(),
        extra_writable: &c.extra_writable,
    };
    let plan = plan(&request).map_err(failed)?;
    plan.ok_or_else(|| std::io::Error::other("the sandbox is off"))
}

/// Plan one command's sandbox and make it ready to apply here, for a
/// process that starts in `workdir`.
pub fn prepare(
    c: &Confine,
    tmp: &Path,
    output: &Path,
    holon_dirs: &[PathBuf],
    workdir: &Path,
) -> std::io::Result<Prepared> {
    ready(
        &plan_command(c, tmp, output, holon_dirs)?,
        Support::probe(),
        workdir,
    )
}

/// A plan made ready to apply, on a kernel that supports what `support`
/// says (a command's holder gets both from its runtime), for a process
/// that starts in `workdir`: the child enters it again once its mounts
/// are made (a directory entered before would keep what a mount then
/// covers: `.git` read-only, Holon's hidden paths).
pub fn ready(plan: &Plan, support: &Support, workdir: &Path) -> std::io::Result<Prepared> {
    #[cfg(target_os = "linux")]
    {
        let failed = |e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("could not set up the sandbox: {e}"))
        };
        let mut prepared = linux::Prepared::new(plan, support).map_err(failed)?;
        prepared.enter(workdir).map_err(failed)?;
        Ok(prepared)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (plan, support, workdir);
        Err(std::io::Error::other("this system cannot sandbox commands"))
    }
}

/// The pure part of `plan`: keep the protected paths that exist beneath a
/// writable root, reopen the writable roots beneath them, and hide
/// Holon's own paths that hold no writable root.
fn shape(
    mut writable: Vec<PathBuf>,
    writable_files: Vec<PathBuf>,
    git: Vec<PathBuf>,
    holon: Vec<PathBuf>,
    network: NetworkAccess,
) -> Plan {
    writable.sort();
    writable.dedup();
    let under_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let holds_writable = |p: &Path| {
        writable.iter().any(|w| w.starts_with(p)) || writable_files.iter().any(|f| f.starts_with(p))
    };
    let keep = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
        paths
            .into_iter()
            .filter(|p| p.exists() && under_writable(p))
            .collect()
    };
    let (holding, hidden): (Vec<PathBuf>, Vec<PathBuf>) = holon
        .into_iter()
        .filter(|p| p.exists())
        .partition(|p| holds_writable(p));
    let hidden = outermost(hidden);
    let holon_read_only = keep(holding);
    let mut read_only: Vec<PathBuf> = keep(git);
    read_only.extend(holon_read_only.iter().cloned());
    read_only.sort_by_key(|p| p.components().count());
    read_only.dedup();
    let mut reopen: Vec<PathBuf> = writable
        .iter()
        .filter(|w| read_only.iter().any(|r| w.starts_with(r) && *w != r))
        .cloned()
        .collect();
    reopen.sort_by_key(|p| p.components().count());
    Plan {
        writable,
        writable_files,
        read_only,
        reopen,
        holon_read_only,
        hidden,
        unix_sockets: Vec::new(),
        shm: None,
        pinned_root: None,
        network: network == NetworkAccess::On,
    }
}

/// Words in a failed sandboxed command's output that suggest the sandbox
/// denied it, and what to tell the model: what is denied, and that it can
/// ask to run outside (`escalate`).
pub fn denial_hint(c: &Confine, output: &str) -> Option<String> {
    let lower = output.to_lowercase();
    let write = [
        "permission denied",
        "read-only file system",
        "operation not permitted",
    ]
    .iter()
    .any(|w| lower.contains(w));
    let net = c.network == NetworkAccess::Off
        && [
            "could not resolve",
            "network is unreachable",
            "temporary failure in name resolution",
            "failed to connect",
            "connection refused",
            "permission denied",
        ]
        .iter()
        .any(|w| lower.contains(w));
    let roots = match c.mode {
        SandboxMode::WorkspaceWrite => format!(
            "{}, {} and $TMPDIR",
            c.execution_root.display(),
            c.agent_home.display()
        ),
        SandboxMode::ReadOnly | SandboxMode::Off => "$TMPDIR".to_owned(),
    };
    let network = match c.network {
        NetworkAccess::Off => "the network is off and ",
        NetworkAccess::On => "",
    };
    (write || net).then(|| {
        format!(
            "this command ran in the sandbox ({}), where {network}it may write only under \
             {roots} (git metadata stays read-only: commit from an isolated worktree); if the failure is the sandbox's \
             and the command must reach further, run it again with `escalate: true` and a \
             `justification`: the operator decides",
            c.mode.as_str()
        )
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
