//! Files written whole or not at all: a private temporary file beside the
//! target, synced, renamed over it, its directory synced. A reader (or a
//! process that starts after a crash) sees the old content or the new,
//! never a torn one. And files read where a command may have written
//! (`open_regular`): only regular files, opened without blocking.

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path` so that a reader sees all of it or nothing:
/// a private temporary file, synced, renamed into place, the directory
/// synced.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // A name of its own: two writers (two processes) never share one.
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        crate::new_id("w")
    ));
    let tmp = path.with_file_name(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = f
        .write_all(bytes)
        .and_then(|()| f.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Open `path` for reading only when it is a regular file (`Ok(None)`
/// otherwise), without blocking: in a directory a command can write, a
/// FIFO or a device in a file's place would hang or flood whoever reads
/// it. Links are followed; the file reached is what is checked.
pub fn open_regular(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    Ok(file.metadata()?.is_file().then_some(file))
}
