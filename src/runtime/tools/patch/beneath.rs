//! File I/O that cannot be raced out of a root. ApplyPatch writes from
//! Holon's own, unconfined process, into directories a sandboxed command
//! can change at the same moment: a check of a path followed by a write
//! to that path could be turned (a directory swapped for a link in
//! between) into a write anywhere the operator can write. So every
//! operation here goes through a directory descriptor:
//!
//! - a directory is opened with `openat2(RESOLVE_BENEATH |
//!   RESOLVE_NO_MAGICLINKS)` from the root's descriptor: the kernel
//!   refuses any step, link or `..` that would leave the root, atomically;
//! - what is checked (the sandbox's carve-outs) is the directory the
//!   descriptor holds, as the kernel names it (`/proc/self/fd`), not a
//!   path that could change;
//! - a file is read with `O_NOFOLLOW`, staged with `O_CREAT | O_EXCL |
//!   O_NOFOLLOW`, and renamed, unlinked or made with the `*at` calls in
//!   that same directory: nothing follows a link planted in it.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// An open directory, and where it really is.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    real: PathBuf,
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    match r {
        -1 => Err(io::Error::last_os_error()),
        fd => Ok(fd),
    }
}

/// Where the descriptor's directory is, as the kernel names it now.
fn real_path(fd: &OwnedFd) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

impl Dir {
    /// The root itself (given canonical: the operator's or Holon's own).
    pub fn root(path: &Path) -> io::Result<Dir> {
        let c = c_name(path.as_os_str())?;
        // SAFETY: a plain open of a NUL-terminated path.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned here alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let real = real_path(&fd)?;
        Ok(Dir { fd, real })
    }

    /// Where this directory really is.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// Which directory this is on its file system: (device, inode).
    pub fn identity(&self) -> io::Result<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::File::from(self.fd.try_clone()?).metadata()?;
        Ok((meta.dev(), meta.ino()))
    }

    /// The directory `rel` (relative, normal components) beneath this one,
    /// never leaving it: `EXDEV` when a step would.
    pub fn open_dir(&self, rel: &Path) -> io::Result<Dir> {
        if rel.as_os_str().is_empty() {
            let fd = self.fd.try_clone()?;
            return Ok(Dir {
                fd,
                real: self.real.clone(),
            });
        }
        let fd = self.beneath(rel, libc::O_DIRECTORY)?;
        let real = real_path(&fd)?;
        Ok(Dir { fd, real })
    }

    /// Where `rel` (links followed, never out of this directory) really
    /// is: `EXDEV` when it would leave, `ENOENT` when it names nothing.
    pub fn resolve(&self, rel: &Path) -> io::Result<PathBuf> {
        real_path(&self.beneath(rel, 0)?)
    }

    /// `rel` opened as a path (`O_PATH`) beneath this directory.
    fn beneath(&self, rel: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
        let c = c_name(rel.as_os_str())?;
        // SAFETY: `open_how` is plain data; all zero is "no flags".
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_PATH | libc::O_CLOEXEC | flags) as u64;
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: openat2 reads the path and the `open_how` it is given.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        let fd = check(i32::try_from(fd).unwrap_or(-1))?;
        // SAFETY: `fd` was just opened and is owned here alone.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// What `name` is here, without following a link: `None` when there
    /// is nothing.
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<Kind>> {
        let c = c_name(name)?;
        // SAFETY: fstatat fills the struct it is given.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::NotFound => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File {
                mode: st.st_mode & 0o7777,
            },
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        }))
    }

    /// The regular file `name`, opened for reading (never through a link;
    /// never blocking on a fifo), with its metadata.
    fn open_regular(&self, name: &OsStr) -> io::Result<(std::fs::File, std::fs::Metadata)> {
        let c = c_name(name)?;
        // SAFETY: openat of a NUL-terminated name in our directory.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned here alone.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other("is not a regular file"));
        }
        Ok((file, meta))
    }

    /// The contents of the regular file `name` (never through a link).
    pub fn read(&self, name: &OsStr) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let (mut file, _) = self.open_regular(name)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The contents of the regular file `name` (never through a link), if
    /// it holds at most `max` bytes: `FileTooLarge` when it holds more.
    pub fn read_at_most(&self, name: &OsStr, max: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let (file, meta) = self.open_regular(name)?;
        if meta.len() > max {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        // A file that grows while it is read is refused, not cut.
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        Ok(bytes)
    }

    /// Write a new file `name` (it must not exist) with `bytes`, and
    /// `mode` when given.
    pub fn create_new(&self, name: &OsStr, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        use std::io::Write;
        let c = c_name(name)?;
        // SAFETY: openat of a NUL-terminated name in our directory.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned here alone.
        let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        Ok(())
    }

    /// Make the directory `name` here.
    pub fn mkdir(&self, name: &OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: mkdirat of a NUL-terminated name in our directory.
        check(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) }).map(|_| ())
    }

    /// Rename `from` to `to`, both in this directory (replacing `to`).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: renameat of NUL-terminated names in our directory.
        check(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) }).map(|_| ())
    }

    /// Remove the file (or, with `dir`, the empty directory) `name` here.
    pub fn remove(&self, name: &OsStr, dir: bool) -> io::Result<()> {
        let c = c_name(name)?;
        let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: unlinkat of a NUL-terminated name in our directory.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), flags) }).map(|_| ())
    }
}

/// What a name in a directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File { mode: u32 },
    Dir,
    Link,
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_leaves_the_root_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("sub/up")).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("sub/link")).unwrap();
        let r = Dir::root(&root.canonicalize().unwrap()).unwrap();
        for escape in ["out", "sub/up", "../outside", "/tmp"] {
            let e = r.open_dir(Path::new(escape)).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{escape}: {e}");
        }
        let sub = r.open_dir(Path::new("sub")).unwrap();
        assert_eq!(sub.real(), root.canonicalize().unwrap().join("sub"));
        // A link is never read or written through.
        assert_eq!(sub.kind(OsStr::new("link")).unwrap(), Some(Kind::Link));
        assert!(sub.read(OsStr::new("link")).is_err());
        assert!(sub.create_new(OsStr::new("link"), b"x", None).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("secret")).unwrap(),
            "s"
        );
        sub.create_new(OsStr::new("new"), b"hi", Some(0o640))
            .unwrap();
        assert_eq!(sub.read(OsStr::new("new")).unwrap(), b"hi");
        assert_eq!(
            sub.kind(OsStr::new("new")).unwrap(),
            Some(Kind::File { mode: 0o640 })
        );
    }
}
