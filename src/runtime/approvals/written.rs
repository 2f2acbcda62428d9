//! The written policy a review is given, from up to three parts: the
//! operator's (`[policy] reviewer_policy`, else `policy.md` beside
//! config.toml), the workspace's own (`workspaces/<id>/policy.md` beside
//! config.toml, also the operator's), and what the repository proposes
//! (`.holon/policy.md`) once the operator approved its exact text. A
//! review records which parts it was given and the digest of the whole.

use std::path::{Path, PathBuf};

use crate::runtime::settings::reviewer::ReviewerConfig;

/// The most of one part read; a larger file is refused (a person
/// decides).
pub const MAX_PART: u64 = 64 * 1024;

/// One part of the policy: where it came from, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub from: String,
    pub heading: Option<String>,
    pub text: String,
}

/// The policy a review is given, and the parts it was made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub text: String,
    pub from: Vec<String>,
}

/// A workspace id usable as one folder name (ids are made by Holon; one
/// that is not is never read as a path).
fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Where `workspace_id`'s own policy is (`None` when there is no such
/// place).
pub fn workspace_file(config: &ReviewerConfig, workspace_id: &str) -> Option<PathBuf> {
    let dir = config.workspaces_dir.as_ref()?;
    plain_id(workspace_id).then(|| dir.join(workspace_id).join("policy.md"))
}

/// The text of an operator's file: `None` when it is absent or blank,
/// an error when it cannot be read whole.
fn operator_file(file: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("the policy {} cannot be read: {e}", file.display())),
    };
    if !meta.is_file() {
        return Err(format!("the policy {} is not a file", file.display()));
    }
    if meta.len() > MAX_PART {
        return Err(format!(
            "the policy {} is over {} KiB",
            file.display(),
            MAX_PART / 1024
        ));
    }
    match std::fs::read_to_string(file) {
        Ok(t) if t.trim().is_empty() => Ok(None),
        Ok(t) => Ok(Some(t)),
        Err(e) => Err(format!("the policy {} cannot be read: {e}", file.display())),
    }
}

/// The operator's parts for a request in `workspace_id`.
pub fn operator_parts(config: &ReviewerConfig, workspace_id: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    if let Some(file) = &config.policy_file {
        if let Some(text) = operator_file(file)? {
            let from = file.display().to_string();
            parts.push(Part {
                from,
                heading: None,
                text,
            });
        }
    }
    if let Some(file) = workspace_file(config, workspace_id) {
        if let Some(text) = operator_file(&file)? {
            parts.push(Part {
                from: file.display().to_string(),
                heading: Some(format!(
                    "For the workspace {workspace_id} (from the operator):"
                )),
                text,
            });
        }
    }
    Ok(parts)
}

/// Where the operator could write a policy, for the reason a review
/// with none gives.
pub fn where_to_write(config: &ReviewerConfig, workspace_id: &str) -> String {
    let places: Vec<String> = [
        config.policy_file.clone(),
        workspace_file(config, workspace_id),
    ]
    .into_iter()
    .flatten()
    .map(|p| p.display().to_string())
    .collect();
    match places.is_empty() {
        true => "there is no written policy".into(),
        false => format!(
            "there is no written policy: write the operator's at {}",
            places.join(" or ")
        ),
    }
}

/// The parts as one text (a single part is its text as written).
pub fn compose(parts: Vec<Part>) -> Option<Written> {
    if parts.is_empty() {
        return None;
    }
    let mut text = String::new();
    let mut from = Vec::new();
    for p in parts {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        if let Some(h) = &p.heading {
            text.push_str(h);
            text.push('\n');
        }
        text.push_str(p.text.trim_end());
        from.push(p.from);
    }
    Some(Written { text, from })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> ReviewerConfig {
        ReviewerConfig {
            model: Some("p/m".into()),
            policy_file: Some(dir.join("policy.md")),
            workspaces_dir: Some(dir.join("workspaces")),
            ..ReviewerConfig::default()
        }
    }

    #[test]
    fn the_operators_and_the_workspaces_parts_make_one_policy() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let c = config(dir.path());
        assert_eq!(operator_parts(&c, "ws_a_1"), Ok(Vec::new()));
        assert!(where_to_write(&c, "ws_a_1").contains("workspaces/ws_a_1/policy.md"));
        std::fs::write(dir.path().join("policy.md"), "Never push.\n")?;
        let one = compose(operator_parts(&c, "ws_a_1").unwrap_or_default());
        assert_eq!(one.map(|w| w.text), Some("Never push.".to_owned()));
        std::fs::create_dir_all(dir.path().join("workspaces/ws_a_1"))?;
        std::fs::write(
            dir.path().join("workspaces/ws_a_1/policy.md"),
            "cargo is fine.",
        )?;
        let both = compose(operator_parts(&c, "ws_a_1").unwrap_or_default());
        let both = both.unwrap_or_else(|| panic!("no policy"));
        assert_eq!(both.from.len(), 2);
        assert!(both
            .text
            .starts_with("Never push.\n\nFor the workspace ws_a_1"));
        assert!(both.text.ends_with("cargo is fine."));
        // Another workspace gets only the operator's.
        let other = compose(operator_parts(&c, "ws_b_2").unwrap_or_default());
        assert_eq!(other.map(|w| w.from.len()), Some(1));
        Ok(())
    }

    #[test]
    fn an_id_that_is_no_plain_name_is_never_a_path() {
        let c = config(Path::new("/cfg"));
        for id in ["", "..", "../x", "a/b", ".hidden", "a\nb"] {
            assert_eq!(workspace_file(&c, id), None, "{id:?}");
        }
        assert_eq!(
            workspace_file(&c, "agent_home"),
            Some(PathBuf::from("/cfg/workspaces/agent_home/policy.md"))
        );
    }

    #[test]
    fn what_cannot_be_read_whole_is_refused() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let c = config(dir.path());
        std::fs::create_dir(dir.path().join("policy.md"))?;
        assert!(operator_parts(&c, "ws").is_err());
        std::fs::remove_dir(dir.path().join("policy.md"))?;
        let big = "x".repeat(MAX_PART as usize + 1);
        std::fs::write(dir.path().join("policy.md"), big)?;
        assert!(operator_parts(&c, "ws").is_err());
        Ok(())
    }
}
