//! Where the model may move its writable root. `UseWorkspace` chooses the
//! directory a sandboxed command may write; moving it is leaving the
//! sandbox unless the operator chose that directory. So a target is one
//! of three things (pure: `classify`):
//!
//! - `Known`: an attached workspace (the operator attached it, or
//!   approved it once), the agent's home, or a directory inside the
//!   current execution root: no approval.
//! - `Outside`: anything else: a durable approval, like an escape.
//! - `Refused`: `/`, the user's home and every ancestor of it or of
//!   Holon's own directories, anything inside Holon's directories but the
//!   agent's home, and the system's directories (`/etc`, `/usr`, `/proc`,
//!   `/sys`, `/dev`, `/boot`, `/var`, `/run`, the binaries' and
//!   libraries'): never, whoever asks.
//!   An operator may still attach one (`holon workspace add`), and then
//!   it is theirs.

use std::path::{Path, PathBuf};

/// System directories no model moves its writable root into.
const SYSTEM: &[&str] = &[
    "/etc", "/usr", "/proc", "/sys", "/dev", "/boot", "/var", "/bin", "/sbin", "/lib", "/lib32",
    "/lib64", "/libx32", "/run",
];

/// What a target directory is to the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootMove {
    Known,
    /// A directory the operator has not attached: they are asked.
    Outside {
        anchor: PathBuf,
    },
    /// Never: the reason.
    Refused(String),
}

/// What `classify` weighs, all canonical.
#[derive(Debug, Clone, Default)]
pub struct MoveContext {
    /// The anchors of the agent's attached workspaces.
    pub attached: Vec<PathBuf>,
    pub execution_root: PathBuf,
    pub agent_home: PathBuf,
    /// The operator's home directory, when known.
    pub user_home: Option<PathBuf>,
    /// Holon's own directories (data, config, run, logs).
    pub holon_dirs: Vec<PathBuf>,
}

/// Classify a move to `target` (the directory asked for) whose workspace
/// anchor is `anchor` (its git top-level, else itself); both canonical.
pub fn classify(target: &Path, anchor: &Path, cx: &MoveContext) -> RootMove {
    let inside = |p: &Path, dir: &Path| p.starts_with(dir);
    // The agent's own home, and what the operator attached, are known
    // before anything is refused: an operator may attach their home.
    if inside(target, &cx.agent_home) || cx.attached.iter().any(|a| a == anchor) {
        return RootMove::Known;
    }
    for p in [target, anchor] {
        if let Some(why) = refused(p, cx) {
            return RootMove::Refused(why);
        }
    }
    if inside(anchor, &cx.execution_root) {
        return RootMove::Known;
    }
    RootMove::Outside {
        anchor: anchor.to_path_buf(),
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
        if p.starts_with(dir) {
            return Some(format!(
                "{shown} is inside Holon's own directory {}",
                dir.display()
            ));
        }
    }
    SYSTEM
        .iter()
        .map(Path::new)
        .find(|sys| p.starts_with(sys))
        .map(|sys| format!("{shown} is a system directory ({})", sys.display()))
}

impl crate::runtime::host::HostInner {
    /// What a `UseWorkspace` call would do to the agent's writable root.
    /// A target that cannot be found is `Known`: the call itself then
    /// fails, saying why, and moves nothing.
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
        let Ok(found) = super::session::discover(&path) else {
            return Ok(RootMove::Known);
        };
        let agent = self.agent_record(agent_id)?;
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let cx = MoveContext {
            attached: agent
                .workspaces
                .attached
                .iter()
                .map(|b| canon(Path::new(&b.anchor)))
                .collect(),
            execution_root: canon(Path::new(&snap.execution_root)),
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
        Ok(classify(&canon(&found.cwd), &canon(&found.anchor), &cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> MoveContext {
        MoveContext {
            attached: vec!["/home/op/src/app".into()],
            execution_root: "/home/op/src/app".into(),
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
        classify(Path::new(p), Path::new(p), &cx())
    }

    #[test]
    fn attached_roots_inside_and_the_home_are_known() {
        assert_eq!(at("/home/op/src/app"), RootMove::Known);
        assert_eq!(
            classify(
                Path::new("/home/op/src/app/crates/x"),
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
        assert_eq!(
            at("/home/op/src/other"),
            RootMove::Outside {
                anchor: "/home/op/src/other".into()
            }
        );
        assert!(matches!(at("/tmp/x"), RootMove::Outside { .. }));
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
        ] {
            assert!(matches!(at(p), RootMove::Refused(_)), "{p}: {:?}", at(p));
        }
        // Unless the operator attached it.
        let mut attached = cx();
        attached.attached.push("/home/op".into());
        assert_eq!(
            classify(Path::new("/home/op"), Path::new("/home/op"), &attached),
            RootMove::Known
        );
    }

    #[test]
    fn a_directory_inside_a_refused_one_through_its_anchor_is_refused() {
        // A plain directory whose git top-level is the user's home.
        let m = classify(Path::new("/home/op/notes"), Path::new("/home/op"), &cx());
        assert!(matches!(m, RootMove::Refused(_)), "{m:?}");
    }
}
