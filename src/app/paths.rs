//! Where Holon keeps things. By default the platform's directories (via
//! `directories`); with `HOLON_HOME` (or `--home`) everything — config,
//! data, logs, the control socket — lives under that one root, which is
//! what tests and side-by-side installs use.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The `HOLON_HOME` root when one is set.
    pub home: Option<PathBuf>,
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
    pub log_dir: PathBuf,
    /// Holds the control socket and the daemon's pid file (mode 0700).
    pub run_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot find a home directory for Holon's files; set HOLON_HOME to a directory")]
    NoHome,
    #[error("cannot create {path}: {source}")]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} exists but cannot be made private (mode 0700): {source}")]
    Tighten {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is {problem}; Holon keeps your prompts, its store and its control socket there, \
         so it refuses to use it. Fix: {fix}"
    )]
    Insecure {
        path: PathBuf,
        problem: String,
        fix: String,
    },
}

/// Why a directory is not private enough, and how to fix it.
fn insecurity(path: &Path, meta: &std::fs::Metadata, me: u32) -> Option<PathsError> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    if meta.uid() != me {
        return Some(PathsError::Insecure {
            path: path.to_path_buf(),
            problem: format!(
                "owned by another user (uid {}, you are uid {me})",
                meta.uid()
            ),
            fix: "use a directory you own (set HOLON_HOME)".into(),
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Some(PathsError::Insecure {
            path: path.to_path_buf(),
            problem: format!("writable by other users (mode {mode:o})"),
            fix: format!("chmod 700 {shown}"),
        });
    }
    None
}

/// Refuse a directory that another user owns or can write to. Missing is
/// fine (it is created private).
fn check_private(path: &Path) -> Result<(), PathsError> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    use std::os::unix::fs::MetadataExt;
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    // A symlink is followed only when both it and its target are ours.
    if link.file_type().is_symlink() && link.uid() != me {
        return Err(PathsError::Insecure {
            path: path.to_path_buf(),
            problem: format!("a symlink owned by another user (uid {})", link.uid()),
            fix: format!("remove {} (Holon recreates the directory)", path.display()),
        });
    }
    match std::fs::metadata(path) {
        Ok(target) => insecurity(path, &target, me).map_or(Ok(()), Err),
        Err(_) => Ok(()),
    }
}

/// Make an existing file ours-only (files from before Holon set its umask).
fn tighten_file(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
    }
}

impl Paths {
    /// Everything under one root.
    pub fn under(home: &Path) -> Paths {
        Paths {
            home: Some(home.to_path_buf()),
            config_dir: home.join("config"),
            data_dir: home.join("data"),
            log_dir: home.join("logs"),
            run_dir: home.join("run"),
        }
    }

    /// `home` (from `--home`/`HOLON_HOME`) when given, else the platform's
    /// directories: config in `~/.config/holon`, data in
    /// `~/.local/share/holon`, logs in `~/.local/state/holon/logs`, the
    /// socket in `$XDG_RUNTIME_DIR/holon` (else under the data dir).
    pub fn resolve(home: Option<&Path>) -> Result<Paths, PathsError> {
        if let Some(home) = home {
            let home = if home.is_absolute() {
                home.to_path_buf()
            } else {
                std::env::current_dir()
                    .map(|cwd| cwd.join(home))
                    .unwrap_or_else(|_| home.to_path_buf())
            };
            return Ok(Paths::under(&home));
        }
        let dirs = directories::ProjectDirs::from("", "", "holon").ok_or(PathsError::NoHome)?;
        let data_dir = dirs.data_dir().to_path_buf();
        let log_dir = dirs
            .state_dir()
            .map(|s| s.join("logs"))
            .unwrap_or_else(|| data_dir.join("logs"));
        let run_dir = dirs
            .runtime_dir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| data_dir.join("run"));
        Ok(Paths {
            home: None,
            config_dir: dirs.config_dir().to_path_buf(),
            data_dir,
            log_dir,
            run_dir,
        })
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    pub fn store_file(&self) -> PathBuf {
        self.data_dir.join("holon.redb")
    }

    pub fn socket_path(&self) -> PathBuf {
        self.run_dir.join("control.sock")
    }

    pub fn agent_home(&self, agent_id: &str) -> PathBuf {
        crate::runtime::agent::home_dir(&self.data_dir, agent_id)
    }

    /// Refuse a home, config or run directory that another user owns or
    /// can write to (as ssh does for its files), then create every
    /// directory private (0700) and make the store and logs 0600.
    pub fn ensure(&self) -> Result<(), PathsError> {
        let mut checked: Vec<&Path> = vec![&self.config_dir, &self.run_dir];
        if let Some(home) = &self.home {
            checked.insert(0, home);
        }
        for dir in checked {
            check_private(dir)?;
        }
        if let Some(home) = &self.home {
            create_private_dir(home)?;
        }
        for dir in [
            &self.config_dir,
            &self.data_dir,
            &self.log_dir,
            &self.run_dir,
        ] {
            create_private_dir(dir)?;
        }
        tighten_file(&self.store_file());
        if let Ok(logs) = std::fs::read_dir(&self.log_dir) {
            for entry in logs.flatten() {
                tighten_file(&entry.path());
            }
        }
        Ok(())
    }
}

fn create_private_dir(dir: &Path) -> Result<(), PathsError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let err = |source| PathsError::Create {
        path: dir.to_path_buf(),
        source,
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(err)?;
    }
    // Only when needed: a private directory on a read-only mount is fine.
    let private = std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o777 == 0o700);
    if private {
        return Ok(());
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|source| {
        PathsError::Tighten {
            path: dir.to_path_buf(),
            source,
        }
    })
}

impl PathsError {
    /// The file system refuses writes here (a read-only mount, no
    /// permission): a reader may still look.
    pub fn is_read_only(&self) -> bool {
        match self {
            PathsError::Create { source, .. } | PathsError::Tighten { source, .. } => {
                crate::store::read_only_io(source)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holon_home_moves_everything_under_one_root() {
        let p = Paths::resolve(Some(Path::new("/tmp/hh"))).unwrap();
        for dir in [&p.config_dir, &p.data_dir, &p.log_dir, &p.run_dir] {
            assert!(dir.starts_with("/tmp/hh"), "{dir:?}");
        }
        assert_eq!(p.config_file(), Path::new("/tmp/hh/config/config.toml"));
        assert_eq!(p.socket_path(), Path::new("/tmp/hh/run/control.sock"));
    }
}
