//! A repository's proposed hooks: `.holon/hooks.toml` at a workspace's
//! root, `[[hooks.EVENT]]` tables as in config.toml. They run for agents
//! working in that workspace, after the operator's, and only while the
//! file's text is exactly what the operator approved (`holon hooks
//! adopt`). A repository's hook is never more than a model command
//! there: always sandboxed, never on the network, given none of Holon's
//! environment; a table that asks for more is refused whole.

use std::path::Path;

use serde::Deserialize;

use crate::model::proposal::{ProposalApproval, ProposalKind};
use crate::runtime::settings::hooks::{check, Hooks, HooksSection};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    hooks: HooksSection,
}

/// A short, stable tag naming the repository at `anchor` in its hooks'
/// names (so they never share a name, or a state directory, with the
/// operator's or another repository's).
fn tag(anchor: &str) -> String {
    let d = crate::runtime::proposal::digest(anchor);
    format!(
        "{}{}",
        crate::runtime::settings::hooks::REPOSITORY_PREFIX,
        &d[..16]
    )
}

/// The longest a repository's hook may run: one that hangs must not hold
/// up the hooks of other events, the operator's among them, for long.
pub const MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The hooks `text` proposes, named under `anchor`'s tag, or why they
/// cannot be used.
pub fn parse(text: &str, anchor: &str) -> Result<Hooks, String> {
    let file: File = toml::from_str(text).map_err(|e| format!("not a hooks file: {e}"))?;
    let mut hooks = check(file.hooks).map_err(|(key, m)| format!("hooks.{key}: {m}"))?;
    let tag = tag(anchor);
    for h in &mut hooks.hooks {
        let at = format!("hooks.{} `{}`", h.event, h.name);
        if !h.sandboxed {
            return Err(format!(
                "{at}: a repository's hook is always sandboxed (only config.toml may say \
                 sandbox = \"off\")"
            ));
        }
        if h.network == Some(true) {
            return Err(format!(
                "{at}: a repository's hook has no network (only config.toml may give one)"
            ));
        }
        if !h.env.is_empty() {
            return Err(format!(
                "{at}: a repository's hook gets none of Holon's environment (env)"
            ));
        }
        if h.timeout > MAX_TIMEOUT {
            return Err(format!(
                "{at}: a repository's hook runs for at most {} s (timeout_secs)",
                MAX_TIMEOUT.as_secs()
            ));
        }
        h.network = Some(false);
        h.from_repository = true;
        h.name = format!("{tag}.{}", h.name);
    }
    Ok(hooks)
}

/// The hooks in force at `anchor`: its proposal, when approved as it is
/// now and usable.
pub fn in_force(anchor: &Path, approved: &[ProposalApproval]) -> Option<Hooks> {
    let key = anchor.display().to_string();
    let approved = approved
        .iter()
        .find(|a| a.workspace == key && a.kind == ProposalKind::Hooks)?;
    let (text, digest) = crate::runtime::proposal::read(anchor, ProposalKind::Hooks)?.ok()?;
    if digest != approved.digest {
        return None;
    }
    parse(&text, &key).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUARD: &str = "[[hooks.pre_tool]]\nname = \"guard\"\ncommand = \"exit 0\"\n";

    #[test]
    fn a_repositorys_hooks_are_no_more_than_a_model_command() {
        let ok = parse(GUARD, "/repo").unwrap_or_default();
        assert_eq!(ok.hooks.len(), 1);
        let h = &ok.hooks[0];
        assert!(
            h.name.starts_with("repo-") && h.name.ends_with(".guard"),
            "{}",
            h.name
        );
        assert!(h.sandboxed && h.from_repository);
        assert_eq!(h.network, Some(false));
        for (extra, why) in [
            ("sandbox = \"off\"\n", "always sandboxed"),
            ("network = true\n", "no network"),
            ("env = [\"GITHUB_TOKEN\"]\n", "environment"),
            ("timeout_secs = 600\n", "at most 30 s"),
        ] {
            let text = format!("{GUARD}{extra}");
            let err = parse(&text, "/repo").err().unwrap_or_default();
            assert!(err.contains(why), "{extra}: {err}");
        }
        let unknown = parse(
            "[[hooks.pre_tool]]\ncommand = \"x\"\nrun_as = \"root\"\n",
            "/r",
        );
        assert!(unknown.is_err());
        assert!(parse("[other]\n", "/r").is_err());
        // Two repositories' hooks of one name are two hooks.
        let other = parse(GUARD, "/elsewhere").unwrap_or_default();
        assert_ne!(other.hooks[0].name, h.name);
    }
}
