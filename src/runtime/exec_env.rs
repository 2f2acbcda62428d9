//! The environment a command task runs with. Holon's own process holds the
//! operator's provider credentials (`OPENAI_API_KEY`, ...); a model that
//! runs `env` must not be able to read them into its task log, the store or
//! the provider.
//!
//! A sandboxed command gets an allow-list: a small base (`PATH`, `HOME`,
//! `USER`, `LOGNAME`, `SHELL`, `LANG`, `LC_*`, `TERM`, `TZ`, `PWD`; its
//! own `TMPDIR` is set apart) plus what the operator lists in `[policy]
//! env` (and `[exec] env_passthrough`). A secret whose name looks harmless
//! (`DATABASE_URL` with a password, `MYSQL_PWD`, `GH_PAT`) and an agent's
//! socket (`SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`) stay out unless
//! listed. An unconfined command (the sandbox off, the operator's own)
//! gets Holon's environment minus every variable whose name contains
//! `KEY`, `SECRET`, `TOKEN` or `PASSWORD` (any case) and minus the
//! credential variables named in `[providers.*] api_key_env`, except those
//! listed in `[exec] env_passthrough`. Pure: the caller passes the
//! variables in.

use std::collections::BTreeSet;

/// The umask the operator started Holon with. Holon itself runs with 077
/// (its store, logs and socket are private whatever the umask); command
/// tasks get the operator's own back, so files they create in a workspace
/// look as the operator expects.
static OPERATOR_UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Make Holon's own files private from here on; remembers the previous
/// umask for command tasks. Called once, at process start.
pub fn make_files_private() {
    // SAFETY: umask only swaps the process's file-creation mask.
    let previous = unsafe { libc::umask(0o077) };
    let _ = OPERATOR_UMASK.set(previous);
}

/// Make this process not dumpable (`PR_SET_DUMPABLE 0`): its memory,
/// environment and file descriptors are then out of reach of the
/// operator's other processes, the commands Holon runs among them.
pub fn not_dumpable() {
    // SAFETY: a prctl that only changes this process's own flag.
    let r = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if r != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "PR_SET_DUMPABLE failed");
    }
}

/// The umask command tasks run with (`None`: Holon never changed it).
pub fn operator_umask() -> Option<u32> {
    OPERATOR_UMASK.get().copied()
}

/// Name fragments that mark a variable as a secret.
pub const SECRET_MARKERS: [&str; 4] = ["KEY", "SECRET", "TOKEN", "PASSWORD"];

/// What every sandboxed command gets, when Holon has it.
pub const SANDBOX_BASE: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TZ", "PWD", "LANGUAGE",
];

/// Which variables a command task may see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecEnvPolicy {
    /// Kept even though they look secret (`[exec] env_passthrough`); a
    /// sandboxed command gets them too.
    pub passthrough: BTreeSet<String>,
    /// What a sandboxed command gets beyond `SANDBOX_BASE` (`[policy]
    /// env`).
    pub sandboxed: BTreeSet<String>,
    /// Removed even though their names look harmless (credential variables
    /// named by `[providers.*] api_key_env`).
    pub credentials: BTreeSet<String>,
}

impl ExecEnvPolicy {
    /// Whether a task may see the variable `name`.
    pub fn allows(&self, name: &str) -> bool {
        if self.passthrough.contains(name) {
            return true;
        }
        if self.credentials.contains(name) {
            return false;
        }
        let upper = name.to_ascii_uppercase();
        !SECRET_MARKERS.iter().any(|m| upper.contains(m))
    }

    /// Whether a sandboxed command may see the variable `name`.
    pub fn allows_sandboxed(&self, name: &str) -> bool {
        SANDBOX_BASE.contains(&name)
            || name.starts_with("LC_")
            || self.sandboxed.contains(name)
            || self.passthrough.contains(name)
    }

    /// The variables a sandboxed command gets, from the process's own.
    pub fn filter_sandboxed(
        &self,
        vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        vars.into_iter()
            .filter(|(k, _)| k.to_str().is_some_and(|k| self.allows_sandboxed(k)))
            .collect()
    }

    /// The variables a task gets, from the process's own.
    pub fn filter(
        &self,
        vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        vars.into_iter()
            .filter(|(k, _)| k.to_str().is_some_and(|k| self.allows(k)))
            .collect()
    }
}

/// The soft open-file limit the process started with, when the runtime
/// raised its own (for the HTTP listener): command tasks get it back.
static ORIGINAL_FD_LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Remember the soft open-file limit before raising it (first call wins).
pub fn remember_fd_limit(soft: u64) {
    let _ = ORIGINAL_FD_LIMIT.set(soft);
}

/// The soft open-file limit a command task should run with, if the
/// runtime changed its own.
pub fn original_fd_limit() -> Option<u64> {
    ORIGINAL_FD_LIMIT.get().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandboxed_command_gets_the_base_and_what_is_listed() {
        let policy = ExecEnvPolicy {
            passthrough: BTreeSet::from(["GITHUB_TOKEN".to_owned()]),
            sandboxed: BTreeSet::from(["CARGO_HOME".to_owned()]),
            credentials: BTreeSet::new(),
        };
        for kept in [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "TERM",
            "CARGO_HOME",
            "GITHUB_TOKEN",
        ] {
            assert!(policy.allows_sandboxed(kept), "{kept}");
        }
        for gone in [
            "DATABASE_URL",
            "MYSQL_PWD",
            "GH_PAT",
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "OPENAI_API_KEY",
            "HOLON_HOME",
            "XDG_RUNTIME_DIR",
        ] {
            assert!(!policy.allows_sandboxed(gone), "{gone}");
        }
        let vars = [("PATH", "/bin"), ("GH_PAT", "g"), ("LC_CTYPE", "C")]
            .map(|(k, v)| (k.into(), v.into()));
        let kept: Vec<String> = policy
            .filter_sandboxed(vars)
            .into_iter()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect();
        assert_eq!(kept, ["PATH", "LC_CTYPE"]);
    }

    #[test]
    fn secrets_are_removed_unless_passed_through() {
        let policy = ExecEnvPolicy {
            passthrough: BTreeSet::from(["GITHUB_TOKEN".to_owned()]),
            sandboxed: BTreeSet::new(),
            credentials: BTreeSet::from(["MY_CRED".to_owned()]),
        };
        for secret in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "aws_secret_access_key",
            "NPM_TOKEN",
            "DB_PASSWORD",
            "MY_CRED",
        ] {
            assert!(!policy.allows(secret), "{secret}");
        }
        for kept in ["PATH", "HOME", "LANG", "GITHUB_TOKEN", "TERM"] {
            assert!(policy.allows(kept), "{kept}");
        }
        let vars = [
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("GITHUB_TOKEN", "g"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let kept: Vec<String> = policy
            .filter(vars)
            .into_iter()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect();
        assert_eq!(kept, ["PATH", "GITHUB_TOKEN"]);
    }
}
