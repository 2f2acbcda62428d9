//! Which shell a model's command may name (pure): a POSIX shell of the
//! sh family (`sh`, `dash`, `bash`, `rbash`) that `/etc/shells` lists, by
//! path or by name (`bash` is the first listed `…/bash` that exists). The
//! approval gate judges a command by sh's syntax (what joins commands,
//! redirects or substitutes), so only shells that share it may run one:
//! zsh's glob qualifiers or fish's `(cmd)` would run code inside what sh
//! reads as a plain `ls`, and `tmux` is no shell at all.

use std::path::{Path, PathBuf};

use crate::runtime::command_tasks::DEFAULT_SHELL;

/// Where the system lists its shells.
pub const SHELLS_FILE: &str = "/etc/shells";

/// The shells whose syntax the gate reads commands in.
const SH_FAMILY: &[&str] = &["sh", "dash", "bash", "rbash"];

/// The shell `requested` names (none: the default), among the absolute
/// paths `listed` (the lines of `/etc/shells`) that `exists` finds.
pub fn resolve_shell(
    requested: Option<&str>,
    listed: &str,
    exists: impl Fn(&Path) -> bool,
) -> Result<PathBuf, String> {
    let Some(want) = requested.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(PathBuf::from(DEFAULT_SHELL));
    };
    let mut shells: Vec<&Path> = listed
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('/'))
        .map(Path::new)
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| SH_FAMILY.contains(&n))
        })
        .filter(|p| exists(p))
        .collect();
    if !shells.iter().any(|p| *p == Path::new(DEFAULT_SHELL)) && exists(Path::new(DEFAULT_SHELL)) {
        shells.insert(0, Path::new(DEFAULT_SHELL));
    }
    let found = match want.contains('/') {
        true => shells.iter().find(|p| **p == Path::new(want)),
        false => shells
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == want)),
    };
    match found {
        Some(p) => Ok(p.to_path_buf()),
        None => {
            let mut names: Vec<String> = shells.iter().map(|p| p.display().to_string()).collect();
            names.dedup();
            Err(format!(
                "`{want}` is not a shell commands may run in: one of this system's sh-family \
                 shells ({SHELLS_FILE}): {}",
                names.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTED: &str = "# valid login shells\n/bin/sh\n/bin/bash\n/usr/bin/bash\n/usr/bin/zsh\n\
                          /usr/bin/fish\n/usr/bin/tmux\n/bin/rbash\n/usr/local/bin/dash\n";

    fn on_disk(p: &Path) -> bool {
        p != Path::new("/usr/local/bin/dash")
    }

    #[test]
    fn a_shell_is_one_the_system_lists_and_has() {
        let r = |w: Option<&str>| resolve_shell(w, LISTED, on_disk);
        assert_eq!(r(None), Ok(PathBuf::from("/bin/sh")));
        assert_eq!(r(Some(" ")), Ok(PathBuf::from("/bin/sh")));
        assert_eq!(r(Some("bash")), Ok(PathBuf::from("/bin/bash")));
        assert_eq!(r(Some("/usr/bin/bash")), Ok(PathBuf::from("/usr/bin/bash")));
        assert_eq!(r(Some("rbash")), Ok(PathBuf::from("/bin/rbash")));
        let missing = r(Some("dash")).unwrap_err();
        assert!(
            missing.contains("not a shell commands may run in"),
            "{missing}"
        );
        assert!(
            missing.ends_with("/bin/sh, /bin/bash, /usr/bin/bash, /bin/rbash"),
            "{missing}"
        );
        for other in ["zsh", "/usr/bin/zsh", "fish", "tmux", "/usr/bin/tmux"] {
            assert!(r(Some(other)).is_err(), "{other} reads commands unlike sh");
        }
        assert!(r(Some("/tmp/evil")).is_err());
        assert!(r(Some("python3")).is_err());
        assert!(
            r(Some("/bin/../tmp/bash")).is_err(),
            "a path is taken whole"
        );
    }

    #[test]
    fn without_a_list_only_the_default_shell_is_known() {
        assert_eq!(
            resolve_shell(Some("sh"), "", |_| true),
            Ok(PathBuf::from("/bin/sh"))
        );
        assert!(resolve_shell(Some("bash"), "", |_| true).is_err());
    }
}
