//! Writing store copies safely, shared by migration, backup, salvage and
//! verify: a new file is created private (0600, never through a symlink),
//! written under a staging name, and linked to its final name, which never
//! replaces a file, then the directory is synced.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::StoreError;

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> StoreError {
    let path = path.to_path_buf();
    move |source| StoreError::Io { path, source }
}

/// A new file at `path`, mode 0600; refused if anything (a symlink
/// included) is there.
fn create_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// A new, empty store database at `path`, private from its first byte.
pub(crate) fn create_private_db(path: &Path) -> Result<redb::Database, StoreError> {
    let file = create_private(path).map_err(io_at(path))?;
    let backend = redb::backends::FileBackend::new(file).map_err(StoreError::storage)?;
    redb::Builder::new()
        .create_with_backend(backend)
        .map_err(StoreError::storage)
}

/// Sync the directory holding `path`, so a name just made there survives
/// a crash.
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => File::open(dir).and_then(|d| d.sync_all()),
        None => Ok(()),
    }
}

/// Give the finished file at `staging` its name `dest`, which must not
/// exist (a link never replaces: a file that appeared there meanwhile
/// stays, and this one is dropped with an error); `staging` goes either
/// way.
pub(crate) fn link_new(staging: &Path, dest: &Path) -> Result<(), StoreError> {
    let linked = std::fs::hard_link(staging, dest).map_err(io_at(dest));
    let _ = std::fs::remove_file(staging);
    linked?;
    sync_dir(dest).map_err(io_at(dest))
}

/// Copy `from` to a new private file `to` (not synced: the caller syncs
/// what must survive a crash).
pub(crate) fn copy_private(from: &Path, to: &Path) -> io::Result<File> {
    let mut src = File::open(from)?;
    let mut dst = create_private(to)?;
    io::copy(&mut src, &mut dst)?;
    Ok(dst)
}

/// Put the file `from` at `to` too, replacing nothing: a link on the same
/// file system, else a private copy through `<to>.partial`, then linked.
pub fn place_new(from: &Path, to: &Path) -> Result<(), StoreError> {
    match std::fs::hard_link(from, to) {
        Ok(()) => sync_dir(to).map_err(io_at(to)),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            let partial = PathBuf::from(format!("{}.partial", to.display()));
            let _ = std::fs::remove_file(&partial);
            if let Err(e) = copy_private(from, &partial).and_then(|f| f.sync_all()) {
                let _ = std::fs::remove_file(&partial);
                return Err(io_at(to)(e));
            }
            link_new(&partial, to)
        }
        Err(e) => Err(io_at(to)(e)),
    }
}
