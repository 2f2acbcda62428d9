//! A held command's pseudo-terminal (`tty`): the holder opens a pair, the
//! command gets the terminal side as its stdin, stdout, stderr and
//! controlling terminal (in the session it starts), and the holder copies
//! what the command writes there to the task's output file, and the task's
//! input (its named pipe, the holder's stdin) to it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread::JoinHandle;

/// The size the terminal says it has.
const COLUMNS: u16 = 120;
const ROWS: u16 = 40;

/// An open pseudo-terminal pair (also the attach benchmark's console's).
pub(crate) struct Pty {
    pub(crate) controller: OwnedFd,
    /// The command's side, until the command has it.
    pub(crate) terminal: Option<OwnedFd>,
}

impl Pty {
    pub(crate) fn open() -> std::io::Result<Pty> {
        let (mut controller, mut terminal) = (-1, -1);
        let size = libc::winsize {
            ws_row: ROWS,
            ws_col: COLUMNS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills the two descriptors it is given; the size
        // is read only.
        let r = unsafe {
            libc::openpty(
                &mut controller,
                &mut terminal,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: openpty just opened both; they are ours alone.
        let (controller, terminal) = unsafe {
            (
                OwnedFd::from_raw_fd(controller),
                OwnedFd::from_raw_fd(terminal),
            )
        };
        for fd in [&controller, &terminal] {
            // SAFETY: setting close-on-exec on our own descriptor.
            unsafe {
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        Ok(Pty {
            controller,
            terminal: Some(terminal),
        })
    }

    /// The terminal side for one of the command's standard streams.
    pub(super) fn stdio(&self) -> std::io::Result<std::process::Stdio> {
        let terminal = self
            .terminal
            .as_ref()
            .ok_or_else(|| std::io::Error::other("the terminal was handed over"))?;
        Ok(std::process::Stdio::from(terminal.try_clone()?))
    }

    /// Copy the terminal's output to the holder's stdout (the output file)
    /// until the command's side is closed everywhere.
    pub(super) fn copy_out(&self) -> std::io::Result<JoinHandle<()>> {
        let mut from = File::from(self.controller.try_clone()?);
        // SAFETY: dup of the holder's own stdout.
        let out = unsafe { libc::dup(1) };
        if out < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the descriptor dup just made.
        let mut to = unsafe { File::from_raw_fd(out) };
        Ok(std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            // EIO once no process holds the terminal side any more.
            while let Ok(n @ 1..) = from.read(&mut buf) {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }))
    }

    /// The terminal side's path (`/dev/pts/N`), which a sandboxed command
    /// must be let open again (as `/dev/tty` too).
    pub(super) fn path(&self) -> std::io::Result<std::path::PathBuf> {
        let mut buf = [0 as libc::c_char; 128];
        // SAFETY: ptsname_r writes at most `buf.len()` bytes, NUL included.
        let r =
            unsafe { libc::ptsname_r(self.controller.as_raw_fd(), buf.as_mut_ptr(), buf.len()) };
        if r != 0 {
            return Err(std::io::Error::from_raw_os_error(r));
        }
        // SAFETY: ptsname_r wrote a NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        Ok(std::path::PathBuf::from(
            name.to_string_lossy().into_owned(),
        ))
    }

    /// A command given no input reads the end of it at once (^D at the
    /// start of a line), as it would from `/dev/null`.
    pub(super) fn end_input(&self) {
        let eof = [4u8];
        // SAFETY: writing to our own descriptor.
        unsafe {
            libc::write(self.controller.as_raw_fd(), eof.as_ptr().cast(), 1);
        }
    }

    /// Copy the holder's stdin (the task's input pipe) to the terminal, for
    /// as long as the holder lives.
    pub(super) fn copy_in(&self) -> std::io::Result<()> {
        let mut to = File::from(self.controller.try_clone()?);
        std::thread::spawn(move || {
            let mut from = std::io::stdin().lock();
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = from.read(&mut buf) {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
        Ok(())
    }
}

/// In the command's child, after it has a session of its own: make the
/// terminal on its stdin its controlling terminal. Only a raw system call.
///
/// # Safety
/// Call only in a freshly forked child (`pre_exec`).
pub(super) unsafe fn take_terminal() -> std::io::Result<()> {
    if libc::ioctl(0, libc::TIOCSCTTY as _, 0) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
