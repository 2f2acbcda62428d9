//! The execution-root layer: resolving paths without leaving the root,
//! reading current contents, computing every result in memory, then
//! staging and renaming (all or nothing).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::apply::{apply_hunks, line_count, HunkOffset};
use super::parse::{parse_patch, FileOp};
use super::PatchError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    Modified,
    Created,
    Deleted,
}

impl FileAction {
    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Modified => "modified",
            FileAction::Created => "created",
            FileAction::Deleted => "deleted",
        }
    }
}

/// One file section of an applied patch (the result envelope's rows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    pub path: String,
    pub action: FileAction,
    pub added: usize,
    pub removed: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub offsets: Vec<HunkOffset>,
}

/// Per real path: (content on disk, content after the patch, the path as
/// the patch wrote it); `None` = no file.
type FileStates = BTreeMap<PathBuf, (Option<String>, Option<String>, String)>;

/// A relative path with only normal components.
fn relative(path: &str) -> Result<PathBuf, PatchError> {
    let invalid = |reason: &str| PatchError::InvalidPath {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if path.is_empty() || path.contains('\0') {
        return Err(invalid("empty or contains NUL"));
    }
    let mut out = PathBuf::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(invalid("`..` is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(invalid(
                    "absolute paths are not allowed; paths are relative to the execution root",
                ))
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(invalid("names no file"));
    }
    Ok(out)
}

/// Where a relative path really lives, checked to stay inside `root`
/// (canonical): the deepest existing ancestor is canonicalised, and so is
/// the target when it exists (a symlink pointing out is refused).
fn resolve(root: &Path, shown: &str, rel: &Path) -> Result<PathBuf, PatchError> {
    let outside = || PatchError::OutsideRoot {
        path: shown.to_owned(),
    };
    let io = |e: std::io::Error| PatchError::Io {
        path: shown.to_owned(),
        message: e.to_string(),
    };
    let joined = root.join(rel);
    if std::fs::symlink_metadata(&joined).is_ok() {
        return match joined.canonicalize() {
            Ok(real) if real.starts_with(root) => Ok(real),
            Ok(_) => Err(outside()),
            // A dangling symlink: refuse rather than write through it.
            Err(_) => Err(outside()),
        };
    }
    let mut existing = joined.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut missing = vec![joined.file_name().map(PathBuf::from).unwrap_or_default()];
    while std::fs::symlink_metadata(&existing).is_err() {
        let Some(name) = existing.file_name() else {
            return Err(outside());
        };
        missing.push(PathBuf::from(name));
        if !existing.pop() {
            return Err(outside());
        }
    }
    let mut real = existing.canonicalize().map_err(io)?;
    if !real.starts_with(root) {
        return Err(outside());
    }
    for part in missing.iter().rev() {
        real.push(part);
    }
    Ok(real)
}

fn read_current(real: &Path, shown: &str) -> Result<Option<String>, PatchError> {
    match std::fs::metadata(real) {
        // A missing file, or a path through a regular file (which then
        // fails when its directory is created, before anything is renamed).
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None)
        }
        Err(e) => {
            return Err(PatchError::Io {
                path: shown.to_owned(),
                message: e.to_string(),
            })
        }
        Ok(m) if !m.is_file() => {
            return Err(PatchError::NotAFile {
                path: shown.to_owned(),
            })
        }
        Ok(_) => {}
    }
    let bytes = std::fs::read(real).map_err(|e| PatchError::Io {
        path: shown.to_owned(),
        message: e.to_string(),
    })?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| PatchError::NotText {
            path: shown.to_owned(),
        })
}

/// Parse and apply `patch` under `root`, all or nothing: every result is
/// computed in memory, then staged as temporary files next to their
/// targets, then renamed into place (deletions last). A failure before the
/// renames removes what was staged.
#[cfg(test)]
pub fn apply_in_root(root: &Path, patch: &str) -> Result<Vec<FileChange>, PatchError> {
    apply_in_roots(root, None, None, patch)
}

/// The prefix that points a patch path at the agent's own home (its
/// working memory and notes) rather than the execution root.
pub const HOME_PREFIX: &str = "@home/";

/// As [`apply_in_root`]; paths starting with [`HOME_PREFIX`] resolve in
/// `home` (the agent home) under the same rules, and with a sandbox plan
/// every file must be one the sandbox lets a command write (the same
/// roots and read-only carve-outs the kernel enforces on commands).
pub fn apply_in_roots(
    root: &Path,
    home: Option<&Path>,
    sandbox: Option<&crate::runtime::sandbox::Plan>,
    patch: &str,
) -> Result<Vec<FileChange>, PatchError> {
    let files = parse_patch(patch)?;
    let canonical = |dir: &Path| {
        dir.canonicalize().map_err(|e| PatchError::Io {
            path: dir.display().to_string(),
            message: e.to_string(),
        })
    };
    let root = canonical(root)?;
    let home = home.map(canonical).transpose()?;
    let mut state = FileStates::new();
    let mut changes = Vec::with_capacity(files.len());
    for fp in &files {
        let (base, inner) = match (fp.path.strip_prefix(HOME_PREFIX), &home) {
            (Some(rest), Some(h)) => (h, rest),
            _ => (&root, fp.path.as_str()),
        };
        let rel = relative(inner)?;
        let real = resolve(base, &fp.path, &rel)?;
        if sandbox.is_some_and(|plan| !plan.allows_write(&real)) {
            return Err(PatchError::Sandboxed {
                path: fp.path.clone(),
            });
        }
        let current = match state.get(&real) {
            Some((_, now, _)) => now.clone(),
            None => {
                let original = read_current(&real, &fp.path)?;
                state.insert(
                    real.clone(),
                    (original.clone(), original.clone(), fp.path.clone()),
                );
                original
            }
        };
        let (next, action, applied) = match (fp.op, current) {
            (FileOp::Create, Some(_)) => {
                return Err(PatchError::AlreadyExists {
                    path: fp.path.clone(),
                })
            }
            (FileOp::Modify | FileOp::Delete, None) => {
                return Err(PatchError::NotFound {
                    path: fp.path.clone(),
                })
            }
            (FileOp::Create, None) => {
                let a = apply_hunks("", &fp.hunks, &fp.path)?;
                (Some(a.text.clone()), FileAction::Created, a)
            }
            (FileOp::Modify, Some(text)) => {
                let a = apply_hunks(&text, &fp.hunks, &fp.path)?;
                (Some(a.text.clone()), FileAction::Modified, a)
            }
            (FileOp::Delete, Some(text)) => {
                let a = apply_hunks(&text, &fp.hunks, &fp.path)?;
                if !a.text.is_empty() {
                    return Err(PatchError::DeleteIncomplete {
                        path: fp.path.clone(),
                        remaining: line_count(&a.text),
                    });
                }
                (None, FileAction::Deleted, a)
            }
        };
        if let Some(entry) = state.get_mut(&real) {
            entry.1 = next;
        }
        changes.push(FileChange {
            path: fp.path.clone(),
            action,
            added: applied.added,
            removed: applied.removed,
            offsets: applied.offsets,
        });
    }
    commit(&state)?;
    Ok(changes)
}

fn commit(state: &FileStates) -> Result<(), PatchError> {
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut made_dirs: Vec<PathBuf> = Vec::new();
    let mut deletes: Vec<&Path> = Vec::new();
    let result = (|| {
        for (real, (original, next, shown)) in state {
            if original == next {
                continue;
            }
            let io = |e: std::io::Error| PatchError::Io {
                path: shown.clone(),
                message: e.to_string(),
            };
            let Some(content) = next else {
                deletes.push(real);
                continue;
            };
            let dir = real.parent().ok_or_else(|| PatchError::InvalidPath {
                path: shown.clone(),
                reason: "has no parent directory".into(),
            })?;
            make_dirs(dir, &mut made_dirs).map_err(io)?;
            let name = real
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let tmp = dir.join(format!(
                ".{name}.holon-patch-{}",
                uuid::Uuid::new_v4().simple()
            ));
            std::fs::write(&tmp, content.as_bytes()).map_err(io)?;
            staged.push((tmp.clone(), real.clone()));
            if let Ok(meta) = std::fs::metadata(real) {
                std::fs::set_permissions(&tmp, meta.permissions()).map_err(io)?;
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (tmp, _) in &staged {
            let _ = std::fs::remove_file(tmp);
        }
        for dir in made_dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
        return Err(e);
    }
    for (tmp, real) in &staged {
        std::fs::rename(tmp, real).map_err(|e| PatchError::Io {
            path: real.display().to_string(),
            message: format!("moving the new content into place: {e}"),
        })?;
    }
    for real in deletes {
        std::fs::remove_file(real).map_err(|e| PatchError::Io {
            path: real.display().to_string(),
            message: format!("deleting: {e}"),
        })?;
    }
    Ok(())
}

/// `create_dir_all` that remembers which directories it created.
fn make_dirs(dir: &Path, made: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        make_dirs(parent, made)?;
    }
    std::fs::create_dir(dir)?;
    made.push(dir.to_path_buf());
    Ok(())
}
