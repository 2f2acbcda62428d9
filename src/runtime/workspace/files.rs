//! The files of an execution root as git would list them (`.gitignore`d,
//! hidden and `.git` files left out), relative to it, bounded: what the
//! console's `@` picker offers. A console beside the runtime walks them
//! itself; one attached from another machine asks (`workspace.files`).

use std::path::Path;

use crate::protocol::views::FileList;

/// Files `workspace.files` answers at most (a remote console's picker).
pub const MAX_LISTED: usize = 20_000;
/// Bytes of paths a walk keeps at most (deep paths would make an answer
/// too large for one message).
const MAX_PATH_BYTES: usize = 1 << 20;

/// At most `max` files under `root`, relative to it.
pub fn walk(root: &Path, max: usize) -> FileList {
    let mut files = Vec::new();
    let mut bytes = 0;
    let mut truncated = false;
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if files.len() == max || bytes > MAX_PATH_BYTES {
            truncated = true;
            break;
        }
        if let Ok(rel) = entry.path().strip_prefix(root) {
            let rel = rel.to_string_lossy().into_owned();
            bytes += rel.len();
            files.push(rel);
        }
    }
    FileList {
        root: root.display().to_string(),
        files,
        truncated,
    }
}
