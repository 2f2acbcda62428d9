//! Skills (spec "Skill Discovery And Activation Contract"): catalogs of
//! directories holding a `SKILL.md`, found in three scopes, listed in the
//! prompt by metadata only, and activated when a successful command reads
//! a skill's `SKILL.md` or runs one of its `scripts/*`.
//!
//! Scopes and their roots, first existing root only within a scope:
//! - user: `~/.agents/skills`, `~/.codex/skills`, `~/.claude/skills`
//!   (the default agent only);
//! - agent: `<home>/skills`, `<home>/.agents/skills`, `<home>/.codex/skills`,
//!   `<home>/.claude/skills`;
//! - workspace: `<anchor>/.agents/skills`, `<anchor>/.codex/skills`,
//!   `<anchor>/.claude/skills`.
//!
//! Two skills with one name: the more specific scope wins (workspace over
//! agent over user); the other is left out of the catalog.
//!
//! Everything here is pure or reads files; recording activations is the
//! host's.

use crate::model::agent::{AgentKind, AgentRecord};
use crate::model::skill::{ActiveSkill, LoadReason, SkillScope, SkillState, SkillView};

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Skills listed per root, at most.
pub const MAX_PER_ROOT: usize = 64;
/// Bytes of a `SKILL.md` read for its metadata.
const META_BYTES: u64 = 16 * 1024;
/// Characters of a description the catalog carries.
const MAX_DESCRIPTION: usize = 240;

/// One discovered skill: metadata, never its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillEntry {
    pub name: String,
    pub description: String,
    pub scope: SkillScope,
    /// The skill's directory.
    pub root: PathBuf,
    /// Its `SKILL.md`.
    pub entrypoint_path: PathBuf,
}

/// The catalog joined with the agent's active set.
pub fn views(catalog: &[SkillEntry], active: &[ActiveSkill]) -> Vec<SkillView> {
    catalog
        .iter()
        .map(|s| SkillView {
            name: s.name.clone(),
            description: s.description.clone(),
            scope: s.scope,
            entrypoint_path: s.entrypoint_path.display().to_string(),
            state: active.iter().find(|a| a.name == s.name).map(|a| a.state),
        })
        .collect()
}

/// Where one agent looks.
#[derive(Debug, Clone)]
pub struct SkillRoots {
    /// The user's home (`HOLON_USER_DIR`, else `$HOME`); searched only
    /// when `include_user`.
    pub user_home: Option<PathBuf>,
    pub include_user: bool,
    pub agent_home: PathBuf,
    /// The active workspace's anchor (none in the agent home).
    pub workspace_anchor: Option<PathBuf>,
}

impl SkillRoots {
    /// Where `agent` looks while working in `anchor` (its active
    /// workspace's): the user scope for the default agent only.
    pub fn of(
        agent: &AgentRecord,
        agent_home: PathBuf,
        anchor: &str,
        user_home: Option<PathBuf>,
    ) -> SkillRoots {
        let anchor = PathBuf::from(anchor);
        SkillRoots {
            user_home,
            include_user: agent.kind == AgentKind::Default,
            workspace_anchor: (anchor != agent_home).then_some(anchor),
            agent_home,
        }
    }
}

/// The candidate roots of one scope, in order.
pub fn scope_roots(scope: SkillScope, base: &Path) -> Vec<PathBuf> {
    let rels: &[&str] = match scope {
        SkillScope::User => &[".agents/skills", ".codex/skills", ".claude/skills"],
        SkillScope::Agent => &[
            "skills",
            ".agents/skills",
            ".codex/skills",
            ".claude/skills",
        ],
        SkillScope::Workspace => &[".agents/skills", ".codex/skills", ".claude/skills"],
    };
    rels.iter().map(|r| base.join(r)).collect()
}

/// The first existing root of a scope.
fn first_root(scope: SkillScope, base: &Path) -> Option<PathBuf> {
    scope_roots(scope, base).into_iter().find(|r| r.is_dir())
}

/// Name and description from a `SKILL.md`: YAML-style front matter
/// (`name:`, `description:`) when present, else the directory name and
/// the first line of prose.
pub fn parse_metadata(text: &str, dir_name: &str) -> (String, String) {
    let mut name = None;
    let mut description = None;
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---\n") {
        if let Some(end) = rest.find("\n---") {
            for line in rest[..end].lines() {
                if let Some((k, v)) = line.split_once(':') {
                    let v = v.trim().trim_matches('"').trim_matches('\'').trim();
                    match k.trim() {
                        "name" if !v.is_empty() => name = Some(v.to_owned()),
                        "description" if !v.is_empty() => description = Some(v.to_owned()),
                        _ => {}
                    }
                }
            }
            body = rest[end + 4..].trim_start_matches('-');
        }
    }
    let description = description.unwrap_or_else(|| {
        body.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or("")
            .to_owned()
    });
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(MAX_DESCRIPTION)
            .collect()
    };
    (
        clean(&name.unwrap_or_else(|| dir_name.to_owned())),
        clean(&description),
    )
}

fn read_head(path: &Path) -> Option<String> {
    use std::io::Read;
    // A skill directory may be a command's to write: a FIFO or a device
    // named SKILL.md must not hang or flood the catalog.
    let f = crate::durable::open_regular(path).ok()??;
    let mut buf = Vec::new();
    f.take(META_BYTES).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The skills of one root: each subdirectory with a `SKILL.md`, sorted by
/// directory name, at most `MAX_PER_ROOT`.
pub fn skills_in(root: &Path, scope: SkillScope) -> Vec<SkillEntry> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = dir
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("SKILL.md").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .take(MAX_PER_ROOT)
        .filter_map(|dir| {
            let entry = dir.join("SKILL.md");
            let text = read_head(&entry)?;
            let dir_name = dir.file_name()?.to_string_lossy().into_owned();
            let (name, description) = parse_metadata(&text, &dir_name);
            Some(SkillEntry {
                name,
                description,
                scope,
                root: dir,
                entrypoint_path: entry,
            })
        })
        .collect()
}

/// The catalog for one agent: user (if included), agent, then workspace
/// scope; a name found again in a more specific scope replaces the
/// earlier entry.
pub fn discover(roots: &SkillRoots) -> Vec<SkillEntry> {
    let mut scopes: Vec<(SkillScope, &Path)> = Vec::new();
    if roots.include_user {
        if let Some(h) = &roots.user_home {
            scopes.push((SkillScope::User, h));
        }
    }
    scopes.push((SkillScope::Agent, &roots.agent_home));
    if let Some(a) = &roots.workspace_anchor {
        if a != &roots.agent_home {
            scopes.push((SkillScope::Workspace, a));
        }
    }
    let mut out: Vec<SkillEntry> = Vec::new();
    for (scope, base) in scopes {
        let Some(root) = first_root(scope, base) else {
            continue;
        };
        for s in skills_in(&root, scope) {
            out.retain(|o| o.name != s.name);
            out.push(s);
        }
    }
    out
}

/// Lexically normalise (no filesystem access): `a/./b/../c` -> `a/c`.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path-like words of a shell command (quotes stripped, redirections
/// and separators split off).
fn words(cmd: &str) -> impl Iterator<Item = &str> {
    cmd.split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')'))
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'' || c == '`'))
        .filter(|w| !w.is_empty())
}

/// What a successful command activated: for each catalog skill whose
/// `SKILL.md` the command names (`read_skill_md`) or one of whose
/// `scripts/*` it names (`run_skill_script`), the skill, the reason and
/// the triggering path. Relative words resolve against `workdir`.
pub fn activations<'a>(
    catalog: &'a [SkillEntry],
    cmd: &str,
    workdir: &Path,
) -> Vec<(&'a SkillEntry, LoadReason, PathBuf)> {
    let mut out: Vec<(&SkillEntry, LoadReason, PathBuf)> = Vec::new();
    for w in words(cmd) {
        let p = Path::new(w);
        let abs = normalise(&if p.is_absolute() {
            p.to_path_buf()
        } else {
            workdir.join(p)
        });
        for s in catalog {
            if out.iter().any(|(o, _, _)| o.name == s.name) {
                continue;
            }
            if abs == normalise(&s.entrypoint_path) {
                out.push((s, LoadReason::ReadSkillMd, abs.clone()));
            } else if abs.starts_with(normalise(&s.root.join("scripts")))
                && abs != s.root.join("scripts")
            {
                out.push((s, LoadReason::RunSkillScript, abs.clone()));
            }
        }
    }
    out
}

/// The catalog as the prompt carries it: metadata and active state, never
/// bodies. `None` when there is nothing to list.
pub fn prompt_block(catalog: &[SkillEntry], active: &[ActiveSkill]) -> Option<String> {
    // Active skills show beside their catalog entry; one that left the
    // catalog has nothing to open.
    if catalog.is_empty() {
        return None;
    }
    let mut out = String::from(
        "Skills: when a listed skill matches the task, open its SKILL.md (e.g. `sed -n 1,200p PATH`) \
         before following its workflow; its scripts/ may be run as it says.\n",
    );
    for v in views(catalog, active) {
        out.push_str(&format!("- {} — {}\n", v.line(), v.entrypoint_path));
    }
    Some(out)
}

/// Record an activation in the agent's active set; returns whether it is
/// new for this turn (already turn-active: nothing to record).
pub fn activate(active: &mut Vec<ActiveSkill>, s: &SkillEntry) -> bool {
    let path = s.entrypoint_path.display().to_string();
    match active.iter_mut().find(|a| a.name == s.name) {
        Some(a) if a.state == SkillState::TurnActive && a.entrypoint_path == path => false,
        Some(a) => {
            a.state = SkillState::TurnActive;
            a.scope = s.scope;
            a.entrypoint_path = path;
            true
        }
        None => {
            active.push(ActiveSkill {
                name: s.name.clone(),
                scope: s.scope,
                entrypoint_path: path,
                state: SkillState::TurnActive,
            });
            true
        }
    }
}

/// A completed turn: turn-active skills become session-active.
pub fn promote(active: &mut [ActiveSkill]) -> bool {
    let mut changed = false;
    for a in active
        .iter_mut()
        .filter(|a| a.state == SkillState::TurnActive)
    {
        a.state = SkillState::SessionActive;
        changed = true;
    }
    changed
}

/// A restart: session-active skills come back as `restored`; turn-active
/// ones of the interrupted turn are dropped (their turn never completed).
pub fn restore(active: &mut Vec<ActiveSkill>) -> bool {
    let before = active.clone();
    active.retain(|a| a.state != SkillState::TurnActive);
    for a in active.iter_mut() {
        a.state = SkillState::Restored;
    }
    *active != before
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
