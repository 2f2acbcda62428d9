//! Which shell a model's command may name (pure): one of the system's own
//! shells, as `/etc/shells` lists them, by path or by name (`bash` is the
//! first listed `…/bash` that exists). Nothing else runs as a shell, so a
//! command the allow-list admits (`cargo test`) cannot be handed to a
//! program of the model's choosing instead.

use std::path::{Path, PathBuf};

use crate::runtime::command_tasks::DEFAULT_SHELL;

/// Where the system lists its shells.
pub const SHELLS_FILE: &str = "/etc/shells";

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
                "`{want}` is not one of this system's shells ({SHELLS_FILE}): {}",
                names.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTED: &str = "# valid login shells\n/bin/sh\n/bin/bash\n/usr/bin/bash\n/usr/bin/zsh\n";

    fn on_disk(p: &Path) -> bool {
        p != Path::new("/usr/bin/zsh")
    }

    #[test]
    fn a_shell_is_one_the_system_lists_and_has() {
        let r = |w: Option<&str>| resolve_shell(w, LISTED, on_disk);
        assert_eq!(r(None), Ok(PathBuf::from("/bin/sh")));
        assert_eq!(r(Some(" ")), Ok(PathBuf::from("/bin/sh")));
        assert_eq!(r(Some("bash")), Ok(PathBuf::from("/bin/bash")));
        assert_eq!(r(Some("/usr/bin/bash")), Ok(PathBuf::from("/usr/bin/bash")));
        let missing = r(Some("zsh")).unwrap_err();
        assert!(
            missing.contains("not one of this system's shells"),
            "{missing}"
        );
        assert!(
            missing.contains("/bin/bash") && !missing.contains("zsh,"),
            "{missing}"
        );
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
