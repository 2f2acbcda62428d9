//! The execution-root layer: resolving paths without leaving the root,
//! reading current contents, computing every result in memory, then
//! staging and renaming (all or nothing). Every read and write goes
//! through a directory opened beneath the root (`beneath`): a command
//! that swaps a directory for a link meanwhile cannot steer a write out.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::apply::{apply_hunks, line_count, HunkOffset};
use super::beneath::{Dir, Kind};
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

/// Where a file of the patch lives: which root (`0` the execution root,
/// `1` the agent home), its directory relative to that root, its name.
#[derive(Debug, Clone)]
struct Place {
    base: usize,
    dir: PathBuf,
    name: OsString,
}

/// One file the patch touches: content on disk, content after the patch
/// (`None` = no file), the path as the patch wrote it, where it lives.
#[derive(Debug, Clone)]
struct FileState {
    original: Option<String>,
    next: Option<String>,
    shown: String,
    place: Place,
}

/// Per real path.
type FileStates = BTreeMap<PathBuf, FileState>;

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

/// Where a relative path really lives, checked to stay inside `root`:
/// its directory opened beneath the root (the deepest that exists, the
/// kernel refusing any step out of it), the rest appended. A link as the
/// file itself is refused: nothing is read or written through one.
fn resolve(root: &Dir, shown: &str, rel: &Path) -> Result<(PathBuf, Place), PatchError> {
    let outside = || PatchError::OutsideRoot {
        path: shown.to_owned(),
    };
    let io = |e: std::io::Error| PatchError::Io {
        path: shown.to_owned(),
        message: e.to_string(),
    };
    let name = rel.file_name().map(OsString::from).ok_or_else(outside)?;
    let dir_rel = rel.parent().map(Path::to_path_buf).unwrap_or_default();
    let parts: Vec<&OsStr> = dir_rel.iter().collect();
    for depth in (0..=parts.len()).rev() {
        let prefix: PathBuf = parts[..depth].iter().collect();
        match root.open_dir(&prefix) {
            Ok(dir) => {
                let mut real = dir.real().to_path_buf();
                real.extend(&parts[depth..]);
                real.push(&name);
                if depth == parts.len() {
                    match dir.kind(&name).map_err(io)? {
                        // A link to a file inside the root: the file it
                        // names is patched, the link kept. An absolute
                        // link is read by path; what it names is then
                        // opened beneath the root like any other path.
                        Some(Kind::Link) => {
                            let target = root
                                .resolve(rel)
                                .or_else(|_| root.real().join(rel).canonicalize())
                                .map_err(|_| outside())?;
                            let inner = target
                                .strip_prefix(root.real())
                                .map_err(|_| outside())?
                                .to_path_buf();
                            return resolve(root, shown, &inner);
                        }
                        Some(Kind::Dir | Kind::Other) => {
                            return Err(PatchError::NotAFile {
                                path: shown.to_owned(),
                            })
                        }
                        Some(Kind::File { .. }) | None => {}
                    }
                }
                let place = Place {
                    base: 0,
                    dir: dir_rel,
                    name,
                };
                return Ok((real, place));
            }
            // Missing, or a file on the way (which fails when its
            // directory is made, before anything is renamed).
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                continue
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EXDEV | libc::ELOOP)) => {
                return Err(outside())
            }
            Err(e) => return Err(io(e)),
        }
    }
    Err(outside())
}

/// The file's current text, read through its directory (`None`: no file).
fn read_current(root: &Dir, place: &Place, shown: &str) -> Result<Option<String>, PatchError> {
    let io = |e: std::io::Error| PatchError::Io {
        path: shown.to_owned(),
        message: e.to_string(),
    };
    let dir = match root.open_dir(&place.dir) {
        Ok(dir) => dir,
        // Its directory is still to be made (or cannot be: a file on the
        // way fails when it is made).
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(io(e)),
    };
    match dir.kind(&place.name).map_err(io)? {
        None => return Ok(None),
        Some(Kind::File { .. }) => {}
        Some(_) => {
            return Err(PatchError::NotAFile {
                path: shown.to_owned(),
            })
        }
    }
    let bytes = dir.read(&place.name).map_err(io)?;
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
    let open = |dir: PathBuf| {
        Dir::root(&dir).map_err(|e| PatchError::Io {
            path: dir.display().to_string(),
            message: e.to_string(),
        })
    };
    let mut bases = vec![open(canonical(root)?)?];
    // The root must still be the directory that was chosen: a link a
    // command put in its place is refused, as the kernel's rule is.
    if let Some(pin) = sandbox.and_then(|p| p.pinned_root.as_ref()) {
        let have = bases[0].identity().map_err(|e| PatchError::Io {
            path: root.display().to_string(),
            message: e.to_string(),
        })?;
        if have != (pin.dev, pin.ino) || bases[0].real() != Path::new(&pin.path) {
            return Err(PatchError::Io {
                path: root.display().to_string(),
                message: "the execution root is no longer the directory that was chosen (it \
                          was replaced, perhaps by a link); nothing was written"
                    .into(),
            });
        }
    }
    if let Some(h) = home {
        bases.push(open(canonical(h)?)?);
    }
    let mut state = FileStates::new();
    let mut changes = Vec::with_capacity(files.len());
    for fp in &files {
        let (base, inner) = match fp.path.strip_prefix(HOME_PREFIX) {
            Some(rest) if bases.len() > 1 => (1, rest),
            _ => (0, fp.path.as_str()),
        };
        let rel = relative(inner)?;
        let (real, mut place) = resolve(&bases[base], &fp.path, &rel)?;
        place.base = base;
        if sandbox.is_some_and(|plan| !plan.allows_write(&real)) {
            return Err(PatchError::Sandboxed {
                path: fp.path.clone(),
            });
        }
        let current = match state.get(&real) {
            Some(f) => f.next.clone(),
            None => {
                let original = read_current(&bases[base], &place, &fp.path)?;
                state.insert(
                    real.clone(),
                    FileState {
                        original: original.clone(),
                        next: original.clone(),
                        shown: fp.path.clone(),
                        place,
                    },
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
            entry.next = next;
        }
        changes.push(FileChange {
            path: fp.path.clone(),
            action,
            added: applied.added,
            removed: applied.removed,
            offsets: applied.offsets,
        });
    }
    commit(&bases, &state)?;
    Ok(changes)
}

/// The directory a file goes in, opened again beneath its root (made
/// where missing, each one remembered), and checked to be the one the
/// patch was judged on: a directory swapped since fails the patch.
fn open_for_write(
    bases: &[Dir],
    real: &Path,
    f: &FileState,
    made: &mut Vec<(Dir, OsString)>,
) -> Result<Dir, PatchError> {
    let io = |e: std::io::Error| PatchError::Io {
        path: f.shown.clone(),
        message: e.to_string(),
    };
    let mut dir = bases[f.place.base].open_dir(Path::new("")).map_err(io)?;
    for part in f.place.dir.iter() {
        let next = match dir.open_dir(Path::new(part)) {
            Ok(next) => next,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                dir.mkdir(part).map_err(io)?;
                let next = dir.open_dir(Path::new(part)).map_err(io)?;
                made.push((dir, part.to_owned()));
                next
            }
            Err(e) => return Err(io(e)),
        };
        dir = next;
    }
    if Some(dir.real()) != real.parent() {
        return Err(PatchError::Io {
            path: f.shown.clone(),
            message: "its directory changed while the patch was applied; nothing was written"
                .into(),
        });
    }
    Ok(dir)
}

fn commit(bases: &[Dir], state: &FileStates) -> Result<(), PatchError> {
    let mut staged: Vec<(Dir, OsString, OsString)> = Vec::new();
    let mut made: Vec<(Dir, OsString)> = Vec::new();
    let mut deletes: Vec<(&Path, &FileState)> = Vec::new();
    let result = (|| {
        for (real, f) in state {
            if f.original == f.next {
                continue;
            }
            let Some(content) = &f.next else {
                deletes.push((real, f));
                continue;
            };
            let io = |e: std::io::Error| PatchError::Io {
                path: f.shown.clone(),
                message: e.to_string(),
            };
            let dir = open_for_write(bases, real, f, &mut made)?;
            let tmp = OsString::from(format!(
                ".{}.holon-patch-{}",
                f.place.name.to_string_lossy(),
                uuid::Uuid::new_v4().simple()
            ));
            let mode = match dir.kind(&f.place.name).map_err(io)? {
                Some(Kind::File { mode }) => Some(mode),
                _ => None,
            };
            dir.create_new(&tmp, content.as_bytes(), mode).map_err(io)?;
            staged.push((dir, tmp, f.place.name.clone()));
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (dir, tmp, _) in &staged {
            let _ = dir.remove(tmp, false);
        }
        for (parent, name) in made.iter().rev() {
            let _ = parent.remove(name, true);
        }
        return Err(e);
    }
    for (dir, tmp, name) in &staged {
        dir.rename(tmp, name).map_err(|e| PatchError::Io {
            path: dir.real().join(name).display().to_string(),
            message: format!("moving the new content into place: {e}"),
        })?;
    }
    for (real, f) in deletes {
        let mut none = Vec::new();
        let dir = open_for_write(bases, real, f, &mut none)?;
        dir.remove(&f.place.name, false)
            .map_err(|e| PatchError::Io {
                path: real.display().to_string(),
                message: format!("deleting: {e}"),
            })?;
    }
    Ok(())
}
