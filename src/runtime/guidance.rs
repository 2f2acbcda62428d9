//! Local guidance: what the prompt frame loads (`load_guidance`, spec
//! "AGENTS.md Loading Contract"), read from the files alone.
//!
//! Agent-scoped `<agent_home>/AGENTS.md`, then workspace-scoped
//! `<workspace_anchor>/AGENTS.md`, or `<workspace_anchor>/CLAUDE.md` only
//! when that `AGENTS.md` is absent. The workspace anchor is the active
//! workspace's (the agent home itself for AgentHome, where the two scopes
//! name the same file: a file is included once, by its canonical path).
//! Guidance never follows a managed worktree: it stays anchored. Each file
//! is bounded to `MAX_GUIDANCE_BYTES`. `host/watch.rs` notices when these
//! files change.

use std::path::Path;

use crate::protocol::payloads::{GuidanceScope, GuidanceSource};

/// At most this much of each guidance file enters the prompt.
pub const MAX_GUIDANCE_BYTES: usize = 32 * 1024;

pub(crate) const AGENTS_MD: &str = "AGENTS.md";
pub(crate) const CLAUDE_MD: &str = "CLAUDE.md";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Guidance {
    pub source: GuidanceSource,
    /// At most `MAX_GUIDANCE_BYTES`, cut on a character boundary.
    pub text: String,
}

impl Guidance {
    /// The prompt block text.
    pub fn render(&self) -> String {
        let what = match self.source.scope {
            GuidanceScope::Agent => "Agent guidance",
            GuidanceScope::Workspace => "Workspace guidance",
        };
        let mut s = format!(
            "{what} ({} at {}):\n{}",
            self.source.file_name,
            self.source.path.display(),
            self.text
        );
        if self.source.truncated {
            s.push_str(&format!(
                "\n[truncated: the first {} of {} bytes are shown]",
                self.text.len(),
                self.source.bytes
            ));
        }
        s
    }
}

fn read_bounded(path: &Path) -> Option<(String, usize, bool)> {
    use std::io::Read;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    // Only what can enter the prompt is read (and a character's worth
    // more), however large the file.
    // Opened without blocking and checked again: a FIFO swapped in after
    // the look above must not hang the turn.
    let file = crate::durable::open_regular(path).ok()??;
    let mut bytes = Vec::new();
    file.take(MAX_GUIDANCE_BYTES as u64 + 4)
        .read_to_end(&mut bytes)
        .ok()?;
    let total = (meta.len() as usize).max(bytes.len());
    let text = String::from_utf8_lossy(&bytes);
    if total <= MAX_GUIDANCE_BYTES {
        return Some((text.into_owned(), total, false));
    }
    let mut cut = MAX_GUIDANCE_BYTES.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Some((text[..cut].to_owned(), total, true))
}

fn load_one(scope: GuidanceScope, dir: &Path, file_name: &'static str) -> Option<Guidance> {
    let path = dir.join(file_name);
    let (text, bytes, truncated) = read_bounded(&path)?;
    Some(Guidance {
        source: GuidanceSource {
            scope,
            path,
            file_name: file_name.into(),
            bytes,
            truncated,
        },
        text,
    })
}

/// Name in `summary` where its agent's next turn takes guidance from
/// (`loaded_agents_md`: its agent home's and its workspace's files, never
/// their text), for `agent.status` and `agent.state`.
pub fn name_guidance(summary: &mut crate::protocol::AgentSummary, agent_home: &Path) {
    let anchor = Path::new(&summary.execution.workspace_anchor);
    summary.loaded_agents_md = load_guidance(agent_home, anchor)
        .into_iter()
        .map(|g| g.source)
        .collect();
}

/// The guidance blocks of the prompt frame, in contract order (agent, then
/// workspace); a file both scopes resolve to is included once.
pub fn load_guidance(agent_home: &Path, workspace_anchor: &Path) -> Vec<Guidance> {
    let mut out = Vec::new();
    if let Some(agent) = load_one(GuidanceScope::Agent, agent_home, AGENTS_MD) {
        out.push(agent);
    }
    let workspace = load_one(GuidanceScope::Workspace, workspace_anchor, AGENTS_MD).or_else(|| {
        let agents_md_present = workspace_anchor.join(AGENTS_MD).exists();
        (!agents_md_present)
            .then(|| load_one(GuidanceScope::Workspace, workspace_anchor, CLAUDE_MD))
            .flatten()
    });
    if let Some(ws) = workspace {
        let same =
            |g: &Guidance| match (g.source.path.canonicalize(), ws.source.path.canonicalize()) {
                (Ok(a), Ok(b)) => a == b,
                _ => g.source.path == ws.source.path,
            };
        if !out.iter().any(same) {
            out.push(ws);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    fn scopes(g: &[Guidance]) -> Vec<(GuidanceScope, &str)> {
        g.iter()
            .map(|g| (g.source.scope, g.source.file_name.as_ref()))
            .collect()
    }

    #[test]
    fn the_same_file_for_both_scopes_is_loaded_once() {
        let d = dir();
        write(&d.path().join("AGENTS.md"), "be brief");
        let g = load_guidance(d.path(), d.path());
        assert_eq!(scopes(&g), vec![(GuidanceScope::Agent, "AGENTS.md")]);
        assert!(g[0].render().starts_with("Agent guidance (AGENTS.md at "));
        assert!(g[0].render().ends_with("be brief"));
    }

    #[test]
    fn claude_md_is_the_workspace_fallback_only_without_agents_md() {
        let (home, ws) = (dir(), dir());
        write(&ws.path().join("CLAUDE.md"), "claude rules");
        assert_eq!(
            scopes(&load_guidance(home.path(), ws.path())),
            vec![(GuidanceScope::Workspace, "CLAUDE.md")]
        );
        write(&ws.path().join("AGENTS.md"), "workspace rules");
        write(&home.path().join("AGENTS.md"), "agent rules");
        let g = load_guidance(home.path(), ws.path());
        assert_eq!(
            scopes(&g),
            vec![
                (GuidanceScope::Agent, "AGENTS.md"),
                (GuidanceScope::Workspace, "AGENTS.md")
            ]
        );
        assert_eq!(g[1].text, "workspace rules");
        // The same directory: agent AGENTS.md absent, CLAUDE.md present.
        let one = dir();
        write(&one.path().join("CLAUDE.md"), "only claude");
        assert_eq!(
            scopes(&load_guidance(one.path(), one.path())),
            vec![(GuidanceScope::Workspace, "CLAUDE.md")]
        );
    }

    #[test]
    fn large_files_are_bounded_on_a_char_boundary() {
        let d = dir();
        let big = "é".repeat(MAX_GUIDANCE_BYTES); // two bytes each
        write(&d.path().join("AGENTS.md"), &big);
        let g = load_guidance(d.path(), d.path());
        assert!(g[0].source.truncated);
        assert_eq!(g[0].source.bytes, big.len());
        assert_eq!(g[0].text.len(), MAX_GUIDANCE_BYTES);
        assert!(g[0].render().contains(&format!(
            "[truncated: the first {MAX_GUIDANCE_BYTES} of {} bytes are shown]",
            big.len()
        )));
    }

    #[test]
    fn nothing_to_load_is_empty() {
        let d = dir();
        std::fs::create_dir_all(d.path().join("AGENTS.md")).unwrap();
        assert!(load_guidance(d.path(), d.path()).is_empty());
    }
}
