//! Files written whole or not at all: a private temporary file beside the
//! target, synced, renamed over it, its directory synced. A reader (or a
//! process that starts after a crash) sees the old content or the new,
//! never a torn one.

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path` so that a reader sees all of it or nothing:
/// a private temporary file, synced, renamed into place, the directory
/// synced.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
