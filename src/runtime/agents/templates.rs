//! Agent templates (spec "Agent Initialization Contract"). A template is a
//! directory with an `AGENTS.md` and an optional `skills.json`
//! (`{"skill_refs": [...]}`); applying one materialises a new agent home:
//! `AGENTS.md` (the template's, then Holon's agent-home guidance),
//! `memory/self.md`, `memory/operator.md`, `notes/`, `work/`, `skills/`
//! (with the referenced skills copied in) and `.holon/state/template.json`
//! (provenance). Everything is built in a staging directory and renamed
//! into place, so a failure leaves no half-made agent.
//!
//! Builtin templates (`holon-default`, `holon-developer`) are seeded into
//! `<data>/templates/` at start. A seeded copy is refreshed when a newer
//! builtin ships only while it still matches what Holon last wrote (its
//! `.holon-managed` hash); a locally edited copy is left alone.
//!
//! Departure from the spec (which seeds `~/.agents/templates/`): Holon
//! writes only under its own home, so builtins are seeded under the data
//! directory; a template id is looked up there first, then read (never
//! written) from `~/.agents/templates/<id>/`.

use crate::model::agent::TemplateProvenance;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Builtin templates: id and files (relative path, content).
const BUILTIN_TEMPLATES: &[(&str, &[(&str, &str)])] = &[
    (
        "holon-default",
        &[(
            "AGENTS.md",
            include_str!("../../../assets/templates/holon-default/AGENTS.md"),
        )],
    ),
    (
        "holon-developer",
        &[
            (
                "AGENTS.md",
                include_str!("../../../assets/templates/holon-developer/AGENTS.md"),
            ),
            (
                "skills.json",
                include_str!("../../../assets/templates/holon-developer/skills.json"),
            ),
        ],
    ),
];

/// Builtin skills (`builtin:<name>` in `skill_refs`): name and files.
const BUILTIN_SKILLS: &[(&str, &[(&str, &str)])] = &[(
    "holon-verify",
    &[(
        "SKILL.md",
        include_str!("../../../assets/skills/holon-verify/SKILL.md"),
    )],
)];

/// Appended to every materialised `AGENTS.md`.
pub const AGENT_HOME_GUIDANCE: &str = "\n\n## Your agent home\n\n\
This directory is yours: `memory/self.md` and `memory/operator.md` are your working memory (in \
every prompt; keep them short), `notes/` is for longer notes, `work/` for scratch files, and \
`skills/` holds your skills (each a directory with a SKILL.md). `.holon/` belongs to the runtime: \
do not edit it.\n";

pub const DEFAULT_TEMPLATE: &str = "holon-default";
const MANAGED_MARKER: &str = ".holon-managed";
/// Bytes of an `AGENTS.md` or `skills.json` a template may have.
const MAX_TEMPLATE_FILE: u64 = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("template `{0}` is not a template id, an absolute directory or a GitHub URL")]
    BadSelector(String),
    #[error("no template `{id}` (looked in {looked})")]
    UnknownId { id: String, looked: String },
    #[error("GitHub templates and skills ({0}) need the network, which this runtime does not reach; download it and pass its absolute directory instead")]
    Remote(String),
    #[error("template {dir} has no AGENTS.md (a template directory must contain one)")]
    NoAgentsMd { dir: String },
    #[error("template {dir}: {message}")]
    Unreadable { dir: String, message: String },
    #[error("template {dir}: skills.json is not valid: {message}")]
    BadSkillsJson { dir: String, message: String },
    #[error("template {dir}: skill ref `{skill}` {problem}")]
    BadSkillRef {
        dir: String,
        skill: String,
        problem: String,
    },
    #[error("{path} already exists and is not empty; remove it or choose another agent id")]
    HomeExists { path: String },
    #[error("cannot create the agent home {path}: {message}")]
    Io { path: String, message: String },
}

/// How a template was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSelector {
    Id(String),
    Path(PathBuf),
    GitHub(String),
}

impl TemplateSelector {
    pub fn parse(s: &str) -> Result<TemplateSelector, TemplateError> {
        let s = s.trim();
        if s.starts_with("https://github.com/") {
            return Ok(TemplateSelector::GitHub(s.to_owned()));
        }
        if s.starts_with('/') {
            return Ok(TemplateSelector::Path(PathBuf::from(s)));
        }
        let id_ok = !s.is_empty()
            && s.len() <= 64
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        match id_ok {
            true => Ok(TemplateSelector::Id(s.to_owned())),
            false => Err(TemplateError::BadSelector(s.to_owned())),
        }
    }
}

/// A skill a template brings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillSource {
    Builtin(&'static str, &'static [(&'static str, &'static str)]),
    Dir(PathBuf),
}

impl SkillSource {
    fn name(&self) -> String {
        match self {
            SkillSource::Builtin(n, _) => (*n).to_owned(),
            SkillSource::Dir(d) => d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }
}

/// A template found and checked, ready to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// What was asked for (`holon-developer`, `/abs/dir`).
    pub selector: String,
    pub dir: PathBuf,
    pub agents_md: String,
    pub skills: Vec<SkillSource>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn read_limited(path: &Path, dir: &Path) -> Result<Option<String>, TemplateError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(TemplateError::Unreadable {
                dir: dir.display().to_string(),
                message: format!("{}: {e}", path.display()),
            })
        }
    };
    if !meta.is_file() || meta.len() > MAX_TEMPLATE_FILE {
        return Err(TemplateError::Unreadable {
            dir: dir.display().to_string(),
            message: format!(
                "{} is not a regular file of at most {MAX_TEMPLATE_FILE} bytes",
                path.display()
            ),
        });
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| TemplateError::Unreadable {
            dir: dir.display().to_string(),
            message: format!("{}: {e}", path.display()),
        })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillsJson {
    #[serde(default)]
    skill_refs: Vec<String>,
}

fn skill_source(dir: &Path, r: &str) -> Result<SkillSource, TemplateError> {
    let bad = |problem: &str| TemplateError::BadSkillRef {
        dir: dir.display().to_string(),
        skill: r.to_owned(),
        problem: problem.to_owned(),
    };
    if let Some(name) = r.strip_prefix("builtin:") {
        return BUILTIN_SKILLS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, files)| SkillSource::Builtin(n, files))
            .ok_or_else(|| bad("names no builtin skill"));
    }
    if r.starts_with("https://github.com/") {
        return Err(TemplateError::Remote(r.to_owned()));
    }
    let p = PathBuf::from(r);
    if !p.is_absolute() {
        return Err(bad(
            "must be `builtin:<name>`, an absolute directory or a GitHub URL",
        ));
    }
    if !p.join("SKILL.md").is_file() {
        return Err(bad("is not a directory with a SKILL.md"));
    }
    Ok(SkillSource::Dir(p))
}

/// Find and check a template: its `AGENTS.md` must exist and its
/// `skills.json`, if any, must parse and name skills that exist.
/// `search` is where ids are looked up, in order.
pub fn resolve(selector: &str, search: &[PathBuf]) -> Result<Resolved, TemplateError> {
    let dir = match TemplateSelector::parse(selector)? {
        TemplateSelector::GitHub(url) => return Err(TemplateError::Remote(url)),
        TemplateSelector::Path(p) => p,
        TemplateSelector::Id(id) => search
            .iter()
            .map(|d| d.join(&id))
            .find(|d| d.is_dir())
            .ok_or_else(|| TemplateError::UnknownId {
                id: id.clone(),
                looked: search
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?,
    };
    let agents_md =
        read_limited(&dir.join("AGENTS.md"), &dir)?.ok_or_else(|| TemplateError::NoAgentsMd {
            dir: dir.display().to_string(),
        })?;
    let skills = match read_limited(&dir.join("skills.json"), &dir)? {
        None => Vec::new(),
        Some(text) => {
            let parsed: SkillsJson =
                serde_json::from_str(&text).map_err(|e| TemplateError::BadSkillsJson {
                    dir: dir.display().to_string(),
                    message: e.to_string(),
                })?;
            parsed
                .skill_refs
                .iter()
                .map(|r| skill_source(&dir, r))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(Resolved {
        selector: selector.trim().to_owned(),
        dir,
        agents_md,
        skills,
    })
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TemplateError + '_ {
    move |e| TemplateError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn copy_dir(from: &Path, to: &Path, depth: u32) -> Result<(), TemplateError> {
    if depth > 8 {
        return Err(TemplateError::Io {
            path: from.display().to_string(),
            message: "skill directory nests too deep".into(),
        });
    }
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let ty = entry.file_type().map_err(io(from))?;
        let target = to.join(entry.file_name());
        if ty.is_dir() {
            copy_dir(&entry.path(), &target, depth + 1)?;
        } else if ty.is_file() {
            std::fs::copy(entry.path(), &target).map_err(io(&target))?;
        }
        // Symlinks and special files are not copied: a skill is files.
    }
    Ok(())
}

/// Write the agent-home layout into `dir` (which exists and is empty).
fn write_home(
    dir: &Path,
    t: &Resolved,
    provenance: &TemplateProvenance,
) -> Result<(), TemplateError> {
    let write = |rel: &str, text: &str| -> Result<(), TemplateError> {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&p, text).map_err(io(&p))
    };
    write(
        "AGENTS.md",
        &format!("{}{AGENT_HOME_GUIDANCE}", t.agents_md.trim_end()),
    )?;
    for (rel, initial) in crate::runtime::context::memory::FILES {
        write(rel, initial)?;
    }
    for sub in ["notes", "work", "skills", ".holon/state"] {
        let p = dir.join(sub);
        std::fs::create_dir_all(&p).map_err(io(&p))?;
    }
    for s in &t.skills {
        let target = dir.join("skills").join(s.name());
        match s {
            SkillSource::Builtin(_, files) => {
                for (rel, text) in *files {
                    write(&format!("skills/{}/{rel}", s.name()), text)?;
                }
            }
            SkillSource::Dir(from) => copy_dir(from, &target, 0)?,
        }
    }
    let json = serde_json::to_string_pretty(provenance).unwrap_or_default();
    write(".holon/state/template.json", &json)
}

/// Materialise a new agent home at `home` from `t`, all or nothing: built
/// in a staging directory beside it, then renamed into place. Refused when
/// `home` exists and is not empty.
pub fn create_home(
    home: &Path,
    t: &Resolved,
    now: &str,
) -> Result<TemplateProvenance, TemplateError> {
    let occupied = std::fs::read_dir(home).is_ok_and(|mut d| d.next().is_some());
    if occupied {
        return Err(TemplateError::HomeExists {
            path: home.display().to_string(),
        });
    }
    let parent = home.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let staging = parent.join(format!(
        ".creating-{}-{}",
        home.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ));
    let provenance = TemplateProvenance {
        selector: t.selector.clone(),
        source_dir: t.dir.display().to_string(),
        agents_md_sha256: sha(&t.agents_md),
        skills: t.skills.iter().map(SkillSource::name).collect(),
        applied_at: now.to_owned(),
    };
    let built = std::fs::create_dir(&staging)
        .map_err(io(&staging))
        .and_then(|()| write_home(&staging, t, &provenance))
        .and_then(|()| {
            // An empty leftover directory may stand where the home goes.
            let _ = std::fs::remove_dir(home);
            std::fs::rename(&staging, home).map_err(io(home))
        });
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    Ok(provenance)
}

/// The default agent's missing `AGENTS.md` (and the rest of the layout)
/// from `t`, never overwriting what exists. Returns whether `AGENTS.md`
/// was written.
pub fn fill_missing(home: &Path, t: &Resolved) -> Result<bool, TemplateError> {
    for sub in ["notes", "work", "skills", ".holon/state"] {
        let p = home.join(sub);
        std::fs::create_dir_all(&p).map_err(io(&p))?;
    }
    crate::runtime::context::memory::ensure(home).map_err(io(home))?;
    let path = home.join("AGENTS.md");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut f) => {
            let text = format!("{}{AGENT_HOME_GUIDANCE}", t.agents_md.trim_end());
            std::io::Write::write_all(&mut f, text.as_bytes()).map_err(io(&path))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io(&path)(e)),
    }
}

fn files_hash(files: &[(&str, String)]) -> String {
    let mut h = Sha256::new();
    for (rel, text) in files {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.update([0]);
    }
    hex(&h.finalize())
}

/// What seeding did to one builtin template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seeded {
    Created,
    Refreshed,
    Current,
    /// Edited locally since Holon wrote it: left as it is.
    KeptLocalEdits,
}

/// Seed (or refresh) the builtin templates under `dir`.
pub fn seed_builtin(dir: &Path) -> Result<Vec<(&'static str, Seeded)>, TemplateError> {
    let mut out = Vec::new();
    for (id, files) in BUILTIN_TEMPLATES {
        let tdir = dir.join(id);
        let shipped: Vec<(&str, String)> =
            files.iter().map(|(r, t)| (*r, (*t).to_owned())).collect();
        let shipped_hash = files_hash(&shipped);
        let state = if !tdir.exists() {
            Seeded::Created
        } else {
            let on_disk: Vec<(&str, String)> = files
                .iter()
                .map(|(r, _)| {
                    (
                        *r,
                        std::fs::read_to_string(tdir.join(r)).unwrap_or_default(),
                    )
                })
                .collect();
            let disk_hash = files_hash(&on_disk);
            let managed = std::fs::read_to_string(tdir.join(MANAGED_MARKER)).unwrap_or_default();
            match (disk_hash == shipped_hash, disk_hash == managed.trim()) {
                (true, _) => Seeded::Current,
                (false, true) => Seeded::Refreshed,
                (false, false) => Seeded::KeptLocalEdits,
            }
        };
        if matches!(state, Seeded::Created | Seeded::Refreshed) {
            std::fs::create_dir_all(&tdir).map_err(io(&tdir))?;
            for (rel, text) in &shipped {
                let p = tdir.join(rel);
                std::fs::write(&p, text).map_err(io(&p))?;
            }
            let m = tdir.join(MANAGED_MARKER);
            std::fs::write(&m, &shipped_hash).map_err(io(&m))?;
        }
        out.push((*id, state));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "templates_tests.rs"]
mod tests;
