//! Where the model may move its writable root. `UseWorkspace` chooses the
//! directory a sandboxed command may write; moving it is leaving the
//! sandbox unless the operator chose that directory. So a target is one
//! of three things (pure: `classify`):
//!
//! - `Known`: an attached workspace (the operator attached it, or
//!   approved it once), the agent's home, or a directory inside the
//!   current execution root, for both the checkout that becomes writable
//!   and its repository: no approval.
//! - `Outside`: anything else: a durable approval, like an escape.
//! - `Refused`: `/`, the user's home and every ancestor of it or of
//!   Holon's own directories, anything inside Holon's directories but the
//!   agent's home, and the system's directories (`/etc`, `/usr`, `/proc`,
//!   `/sys`, `/dev`, `/boot`, `/run`, `/var` and its system parts, the
//!   binaries' and libraries'): never, whoever asks.
//!   An operator may still attach one (`holon workspace add`), and then
//!   it is theirs.

use std::path::{Path, PathBuf};

/// System directories no model moves its writable root into.
const SYSTEM: &[&str] = &[
    "/etc",
    "/usr",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/run",
    "/var/lib",
    "/var/log",
    "/var/spool",
    "/var/cache",
    "/var/run",
    "/var/lock",
    "/var/mail",
    "/var/tmp",
    "/var/backups",
    "/var/opt",
    "/var/db",
];

/// What a target directory is to the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootMove {
    Known,
    /// A root the operator has not chosen: they are asked. `root` is the
    /// checkout that becomes writable, `anchor` its repository's.
    Outside {
        root: PathBuf,
        anchor: PathBuf,
    },
    /// Never: the reason.
    Refused(String),
}

impl RootMove {
    /// How the operator is asked: the directory that becomes writable.
    pub fn asked(root: &Path, anchor: &Path) -> String {
        match root == anchor {
            true => root.display().to_string(),
            false => format!("{} (a worktree of {})", root.display(), anchor.display()),
        }
    }
}

/// What `classify` weighs, all canonical.
#[derive(Debug, Clone, Default)]
pub struct MoveContext {
    /// The anchors of the agent's attached workspaces.
    pub attached: Vec<PathBuf>,
    /// Where the agent works now (`None`: it no longer names what was
    /// chosen, so nothing is known by being inside it).
    pub execution_root: Option<PathBuf>,
    pub agent_home: PathBuf,
    /// The operator's home directory, when known.
    pub user_home: Option<PathBuf>,
    /// Holon's own directories (data, config, run, logs).
    pub holon_dirs: Vec<PathBuf>,
}

/// Classify a move to `target` (the directory asked for), whose checkout
/// (`checkout`: what becomes the writable root) and workspace anchor
/// (`anchor`: its repository's top level) git named; all canonical. All
/// three are weighed: git can be told by a repository's own config to
/// name a checkout far from the target (`core.worktree`), or an anchor
/// elsewhere (a `.git` file's `commondir`), and a command can write that
/// config.
pub fn classify(target: &Path, anchor: &Path, checkout: &Path, cx: &MoveContext) -> RootMove {
    let attached = |p: &Path| cx.attached.iter().any(|a| a == p);
    // What the operator attached is theirs, their home included.
    if attached(anchor) && attached(checkout) {
        return RootMove::Known;
    }
    for p in [target, anchor, checkout] {
        if let Some(why) = refused(p, cx) {
            return RootMove::Refused(why);
        }
    }
    // Where the agent already writes (or what is attached) grants
    // nothing new.
    let known = |p: &Path| {
        p.starts_with(&cx.agent_home)
            || cx.execution_root.as_ref().is_some_and(|r| p.starts_with(r))
            || attached(p)
    };
    match known(checkout) && known(anchor) {
        true => RootMove::Known,
        false => RootMove::Outside {
            root: checkout.to_path_buf(),
            anchor: anchor.to_path_buf(),
        },
    }
}

fn refused(p: &Path, cx: &MoveContext) -> Option<String> {
    let shown = p.display();
    if p.parent().is_none() {
        return Some(format!("{shown} is the file system's root"));
    }
    if let Some(home) = &cx.user_home {
        if home.starts_with(p) {
            return Some(format!("{shown} is the user's home or holds it"));
        }
    }
    for dir in &cx.holon_dirs {
        if dir.starts_with(p) {
            return Some(format!(
                "{shown} holds Holon's own directory {}",
                dir.display()
            ));
        }
        // The agent's home lies inside Holon's data: it is the agent's.
        if p.starts_with(dir) && !p.starts_with(&cx.agent_home) {
            return Some(format!(
                "{shown} is inside Holon's own directory {}",
                dir.display()
            ));
        }
    }
    // `/var` itself, and the system's parts of it: not `/var/home` (the
    // users' homes on some systems) or `/var/www`.
    if p == Path::new("/var") {
        return Some(format!("{shown} is a system directory"));
    }
    SYSTEM
        .iter()
        .map(Path::new)
        .find(|sys| p.starts_with(sys))
        .map(|sys| format!("{shown} is a system directory ({})", sys.display()))
}

/// Who moves the root: the operator (from the CLI or the console),
/// whose choice it is, or the model (UseWorkspace), held to `classify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mover<'a> {
    Operator,
    /// `approved`: the approval the operator granted for this very call,
    /// as its summary (`workspace_summary`), if any.
    Model {
        approved: Option<&'a str>,
    },
}

/// The approval's summary for a move to `asked` (`RootMove::asked`):
/// what the operator sees, and what a granted call is held to.
pub fn workspace_summary(asked: &str) -> String {
    format!("work in {asked}, outside every attached workspace")
}

/// Whether a binding's anchor still names the directory that was
/// attached: by its pin, or (a record from before pins) with no link on
/// its path.
pub fn binding_holds(b: &crate::model::workspace::WorkspaceBinding) -> bool {
    let anchor = Path::new(&b.anchor);
    match &b.pin {
        Some(pin) => crate::runtime::sandbox::pin_holds(pin, anchor),
        None => anchor.canonicalize().is_ok_and(|c| c == anchor),
    }
}

impl crate::runtime::handle::HostInner {
    /// What moving to `found` (as `session::discover` found it) would do
    /// to the agent's writable root.
    pub(crate) fn root_move_to(
        &self,
        agent_id: &str,
        found: &super::session::Discovered,
    ) -> Result<RootMove, crate::runtime::RuntimeError> {
        let snap = self.execution_of(agent_id)?;
        let agent = self.agent_record(agent_id)?;
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        // What is known is weighed as it was chosen, never through what
        // its path names now: a root or an anchor a command replaced with
        // a link counts for nothing.
        let root = Path::new(&snap.execution_root);
        let execution_root = match &snap.root_pin {
            Some(pin) if crate::runtime::sandbox::pin_holds(pin, root) => {
                Some(PathBuf::from(&pin.path))
            }
            Some(_) => None,
            // The agent's home: its parent is Holon's, no command's.
            None if snap.workspace_id == super::AGENT_HOME_ID => Some(canon(root)),
            None if root.canonicalize().is_ok_and(|c| c == root) => Some(root.to_path_buf()),
            None => None,
        };
        let cx = MoveContext {
            attached: agent
                .workspaces
                .attached
                .iter()
                .filter(|b| binding_holds(b))
                .map(|b| PathBuf::from(&b.anchor))
                .collect(),
            execution_root,
            agent_home: canon(&self.agent_home(agent_id)),
            user_home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| canon(Path::new(&h))),
            holon_dirs: self
                .config
                .holon_dirs
                .iter()
                .chain(std::iter::once(&self.config.data_dir))
                .map(|d| canon(d))
                .collect(),
        };
        Ok(classify(
            &canon(&found.cwd),
            &canon(&found.anchor),
            &canon(&found.checkout),
            &cx,
        ))
    }

    /// What a `UseWorkspace` call would do to the agent's writable root,
    /// for its gate. A target that cannot be found is `Known`: the call
    /// itself then fails, saying why, and moves nothing.
    pub(crate) fn root_move(
        &self,
        agent_id: &str,
        req: &super::UseWorkspace,
    ) -> Result<RootMove, crate::runtime::RuntimeError> {
        let Some(path) = req.path.as_deref() else {
            // An attached workspace or the agent's home.
            return Ok(RootMove::Known);
        };
        let snap = self.execution_of(agent_id)?;
        let path = Path::new(&snap.cwd).join(path);
        match super::session::discover(&path) {
            Ok(found) => self.root_move_to(agent_id, &found),
            Err(_) => Ok(RootMove::Known),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> MoveContext {
        MoveContext {
            attached: vec!["/home/op/src/app".into()],
            execution_root: Some("/home/op/src/app".into()),
            agent_home: "/home/op/.local/share/holon/agents/main".into(),
            user_home: Some("/home/op".into()),
            holon_dirs: vec![
                "/home/op/.local/share/holon".into(),
                "/home/op/.config/holon".into(),
                "/run/user/1000/holon".into(),
            ],
        }
    }

    fn at(p: &str) -> RootMove {
        classify(Path::new(p), Path::new(p), Path::new(p), &cx())
    }

    fn outside(p: &str) -> RootMove {
        RootMove::Outside {
            root: p.into(),
            anchor: p.into(),
        }
    }

    #[test]
    fn attached_roots_inside_and_the_home_are_known() {
        assert_eq!(at("/home/op/src/app"), RootMove::Known);
        assert_eq!(
            classify(
                Path::new("/home/op/src/app/crates/x"),
                Path::new("/home/op/src/app"),
                Path::new("/home/op/src/app"),
                &cx()
            ),
            RootMove::Known
        );
        // A nested repository inside the root.
        assert_eq!(at("/home/op/src/app/vendor/lib"), RootMove::Known);
        assert_eq!(
            at("/home/op/.local/share/holon/agents/main/notes"),
            RootMove::Known
        );
    }

    #[test]
    fn another_directory_asks_the_operator() {
        assert_eq!(at("/home/op/src/other"), outside("/home/op/src/other"));
        assert_eq!(at("/tmp/x"), outside("/tmp/x"));
        // A project under `/var/home` (the users' homes on some systems).
        assert_eq!(at("/var/home/op2/src"), outside("/var/home/op2/src"));
    }

    #[test]
    fn the_home_its_ancestors_holons_and_the_systems_are_refused() {
        for p in [
            "/",
            "/home",
            "/home/op",
            "/home/op/.local",
            "/home/op/.local/share/holon",
            "/home/op/.local/share/holon/agents/other",
            "/home/op/.config/holon",
            "/run/user/1000",
            "/etc",
            "/etc/cron.d",
            "/usr/local",
            "/proc/sys/kernel",
            "/var/tmp",
            "/var",
            "/var/lib/docker",
        ] {
            assert!(matches!(at(p), RootMove::Refused(_)), "{p}: {:?}", at(p));
        }
        // Unless the operator attached it.
        let mut attached = cx();
        attached.attached.push("/home/op".into());
        assert_eq!(
            classify(
                Path::new("/home/op"),
                Path::new("/home/op"),
                Path::new("/home/op"),
                &attached
            ),
            RootMove::Known
        );
    }

    #[test]
    fn a_directory_inside_a_refused_one_through_its_anchor_is_refused() {
        // A plain directory whose git top-level is the user's home.
        let home = Path::new("/home/op");
        let m = classify(Path::new("/home/op/notes"), home, home, &cx());
        assert!(matches!(m, RootMove::Refused(_)), "{m:?}");
    }

    #[test]
    fn a_checkout_or_anchor_git_names_elsewhere_is_weighed_too() {
        // A repository made inside the root whose config says its work
        // tree is the user's home (`core.worktree`).
        let nested = Path::new("/home/op/src/app/evil");
        let m = classify(nested, nested, Path::new("/home/op"), &cx());
        assert!(matches!(m, RootMove::Refused(_)), "{m:?}");
        // One in the agent's home whose `.git` file names another
        // repository: that repository is not attached by it.
        let home_dir = Path::new("/home/op/.local/share/holon/agents/main/x");
        let m = classify(home_dir, Path::new("/home/op/src/other"), home_dir, &cx());
        assert_eq!(
            m,
            RootMove::Outside {
                root: home_dir.into(),
                anchor: "/home/op/src/other".into()
            }
        );
    }
}
