//! Applying a sandbox plan on Linux. Everything that allocates or opens a
//! path happens in Holon's process (`Prepared::new`): the Landlock ruleset
//! (an fd), the seccomp program, the C strings of the mount targets. The
//! child, between fork and exec, only makes raw system calls
//! (`Prepared::apply`), in this order:
//!
//! 1. a new session (no controlling terminal to type into), then a private
//!    mount namespace in a new user namespace, where each read-only
//!    carve-out is bound read-only over itself and each reopened root bound
//!    writable again: nothing propagates back to the host's mounts;
//! 2. `no_new_privs`, then the Landlock ruleset: read and execute
//!    everywhere, write only beneath the plan's roots (never a device
//!    node) and to a few devices (`/dev/null`, ...); signals and abstract
//!    unix sockets reach only inside the sandbox (ABI 6+); inherited by
//!    every process the command starts;
//! 3. with the network off, a seccomp filter: `socket` fails with `EACCES`
//!    for every family but `AF_UNIX`, and `io_uring_setup` fails (it could
//!    open sockets past the filter).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};

use super::{Plan, Support, MIN_LANDLOCK_ABI};

/// The Landlock ABI the kernel offers (0 when none).
fn landlock_abi() -> i32 {
    // SAFETY: the version query takes no ruleset (null, 0).
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// What this kernel can do: the Landlock ABI, and whether a child can
/// install a seccomp filter and make a private mount namespace (tried in
/// a short-lived child, so Holon itself is never changed).
pub fn probe() -> Support {
    let abi = landlock_abi();
    let try_in_child = |f: &dyn Fn() -> bool| -> bool {
        // SAFETY: the child only makes raw system calls and exits.
        match unsafe { libc::fork() } {
            0 => {
                let ok = f();
                // SAFETY: leave the child without running Holon's atexit.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) }
            }
            pid if pid > 0 => {
                let mut status = -1;
                loop {
                    // SAFETY: waiting for our own child.
                    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
                    let interrupted =
                        io::Error::last_os_error().kind() == io::ErrorKind::Interrupted;
                    match (r, interrupted) {
                        (-1, true) => continue,
                        (-1, false) => return false,
                        _ => break,
                    }
                }
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
            }
            _ => false,
        }
    };
    let seccomp = try_in_child(&|| {
        // SAFETY: raw prctl calls in a throwaway child.
        unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                && libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0
                && libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    std::ptr::null::<u8>(),
                ) == -1
                && io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT)
        }
    });
    let maps = Maps::current();
    let mount_namespace = try_in_child(&|| {
        // SAFETY: raw calls in a throwaway child.
        unsafe { enter_mount_namespace(&maps).is_ok() }
    });
    let missing = match abi {
        0 => Some("Landlock is not available (kernel 5.13+ with landlock in the LSM list)".into()),
        a if a < MIN_LANDLOCK_ABI => Some(format!(
            "Landlock ABI {a} is older than {MIN_LANDLOCK_ABI} (Linux 6.2), which controls \
             truncation"
        )),
        _ if !seccomp => Some("seccomp filters are not available".into()),
        _ => None,
    };
    Support {
        landlock_abi: abi,
        seccomp,
        mount_namespace,
        missing,
    }
}

/// The uid/gid maps a new user namespace gets: the same ids inside as
/// outside, so files keep their owner and git trusts the checkout.
struct Maps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Maps {
    fn current() -> Maps {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Maps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// Write `data` to the NUL-terminated `path` (raw calls only).
unsafe fn write_file(path: &[u8], data: &[u8]) -> io::Result<()> {
    let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    libc::close(fd);
    match n == data.len() as isize {
        true => Ok(()),
        false => Err(io::Error::last_os_error()),
    }
}

/// Enter a private mount namespace inside a new user namespace (also when
/// Holon runs as root: the command's capabilities then reach only its own
/// namespaces, so it can neither make device nodes nor join the host's
/// mount namespace), and stop mount events from propagating back to the
/// host.
unsafe fn enter_mount_namespace(maps: &Maps) -> io::Result<()> {
    if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWUSER) != 0 {
        return Err(io::Error::last_os_error());
    }
    write_file(b"/proc/self/setgroups\0", b"deny")?;
    write_file(b"/proc/self/uid_map\0", &maps.uid_map)?;
    write_file(b"/proc/self/gid_map\0", &maps.gid_map)?;
    let none = std::ptr::null::<libc::c_char>();
    let root = b"/\0";
    let private = libc::MS_REC | libc::MS_PRIVATE;
    if libc::mount(none, root.as_ptr().cast(), none, private, std::ptr::null()) != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One bind mount made in the child: `path` over itself, then remounted
/// read-only or writable, keeping the flags the kernel locks (nosuid,
/// nodev, noexec, atime) as they are.
struct Bind {
    path: CString,
    flags: libc::c_ulong,
}

impl Bind {
    fn new(path: &Path, read_only: bool) -> io::Result<Bind> {
        let c = CString::new(path.as_os_str().as_bytes())?;
        // SAFETY: statvfs fills the struct it is given.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut flags = libc::MS_BIND | libc::MS_REMOUNT;
        for (st_flag, ms_flag) in [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
            (libc::ST_NOATIME, libc::MS_NOATIME),
            (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            (libc::ST_RELATIME, libc::MS_RELATIME),
        ] {
            if st.f_flag & st_flag != 0 {
                flags |= ms_flag;
            }
        }
        if read_only {
            flags |= libc::MS_RDONLY;
        }
        Ok(Bind { path: c, flags })
    }

    unsafe fn apply(&self) -> io::Result<()> {
        let none = std::ptr::null::<libc::c_char>();
        let p = self.path.as_ptr();
        let bind = libc::MS_BIND | libc::MS_REC;
        if libc::mount(p, p, none, bind, std::ptr::null()) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::mount(none, p, none, self.flags, std::ptr::null()) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// A plan made ready for a child: nothing left to allocate.
pub struct Prepared {
    maps: Maps,
    binds: Vec<Bind>,
    ruleset: OwnedFd,
    seccomp: Option<seccompiler::BpfProgram>,
}

/// Devices every command may write: the null sink and the like. No
/// terminal: a command could type into the operator's (`TIOCSTI`).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/shm",
];

impl Prepared {
    pub fn new(plan: &Plan, support: &Support) -> io::Result<Prepared> {
        let err = |e: landlock::RulesetError| io::Error::other(e.to_string());
        let abi = ABI::from(support.landlock_abi);
        // Unix sockets stay reachable by path (a newer ABI would let
        // Landlock refuse them).
        let handled = AccessFs::from_all(abi) & !AccessFs::ResolveUnix;
        // What a writable root grants: everything but making device nodes.
        let root_access = handled & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(handled)
            .map_err(err)?;
        if support.landlock_abi >= 6 {
            // Signals and abstract unix sockets (an X server, a session
            // bus) only reach inside the sandbox.
            ruleset = ruleset.scope(Scope::Signal).map_err(err)?;
            ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(err)?;
        }
        let mut created = ruleset.create().map_err(err)?;
        let rule = |path: &Path, access| -> io::Result<_> {
            let fd = PathFd::new(path).map_err(|e| io::Error::other(e.to_string()))?;
            Ok(PathBeneath::new(fd, access))
        };
        let file_access = handled & AccessFs::from_file(abi);
        created = created
            .add_rule(rule(Path::new("/"), AccessFs::from_read(abi))?)
            .map_err(err)?;
        for root in &plan.writable {
            created = created.add_rule(rule(root, root_access)?).map_err(err)?;
        }
        // Its own output (`> /dev/stdout` reopens it, truncating).
        for file in &plan.writable_files {
            let access =
                file_access & (AccessFs::WriteFile | AccessFs::ReadFile | AccessFs::Truncate);
            created = created.add_rule(rule(file, access)?).map_err(err)?;
        }
        let device = file_access & (AccessFs::ReadFile | AccessFs::WriteFile);
        for dev in DEVICES.iter().map(Path::new).filter(|d| d.exists()) {
            let access = match dev.is_dir() {
                true => root_access,
                false => device,
            };
            created = created.add_rule(rule(dev, access)?).map_err(err)?;
        }
        let ruleset: Option<OwnedFd> = created.into();
        let ruleset = ruleset.ok_or_else(|| io::Error::other("Landlock made no ruleset"))?;
        let mut binds = Vec::new();
        for p in &plan.read_only {
            binds.push(Bind::new(p, true)?);
        }
        for p in &plan.reopen {
            binds.push(Bind::new(p, false)?);
        }
        if !binds.is_empty() && !support.mount_namespace {
            // Holon's own files beneath a writable root cannot be left
            // writable: refuse. Git metadata is left as it is, and the
            // snapshot says so (`git_metadata: not_enforced`).
            if let Some(dir) = plan.holon_read_only.first() {
                return Err(io::Error::other(format!(
                    "Holon's own directory {} lies inside a writable root, and this kernel \
                     gives no private mount namespace to keep it read-only; work in another \
                     directory, or set the workspace's sandbox to read_only or off",
                    dir.display()
                )));
            }
            binds.clear();
        }
        let seccomp = match plan.network {
            true => None,
            false => Some(network_filter()?),
        };
        Ok(Prepared {
            maps: Maps::current(),
            binds,
            ruleset,
            seccomp,
        })
    }

    /// Confine the calling process. Only raw system calls: safe between
    /// fork and exec.
    ///
    /// # Safety
    /// Call only in a freshly forked child (`pre_exec`).
    pub unsafe fn apply(&self) -> io::Result<()> {
        // A session of its own: no controlling terminal, its own group.
        if libc::setsid() < 0 {
            return Err(io::Error::last_os_error());
        }
        if !self.binds.is_empty() {
            enter_mount_namespace(&self.maps)?;
            for b in &self.binds {
                b.apply()?;
            }
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // The ruleset's fd is close-on-exec: the command never holds it.
        let fd = self.ruleset.as_raw_fd();
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(program) = &self.seccomp {
            // Errors carry only an errno: nothing may allocate here.
            seccompiler::apply_filter(program).map_err(|e| match e {
                seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
                _ => io::Error::from_raw_os_error(libc::EINVAL),
            })?;
        }
        Ok(())
    }
}

/// The seccomp program for "network off": `socket` for any family but
/// `AF_UNIX` and `io_uring_setup` fail with `EACCES`; on x86_64 the x32
/// system call numbers (which would slip past the numbers checked) fail
/// too. Everything else is allowed.
fn network_filter() -> io::Result<seccompiler::BpfProgram> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let err = |e: seccompiler::BackendError| io::Error::other(e.to_string());
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(err)?;
    let rules = [
        (
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix.clone()]).map_err(err)?],
        ),
        (
            libc::SYS_socketpair,
            vec![SeccompRule::new(vec![not_unix]).map_err(err)?],
        ),
        (libc::SYS_io_uring_setup, vec![]),
    ];
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| io::Error::other(e.to_string()))?;
    let filter = SeccompFilter::new(
        rules.into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(err)?;
    let mut program: seccompiler::BpfProgram = filter.try_into().map_err(err)?;
    if cfg!(target_arch = "x86_64") {
        // After the arch check (3 instructions): load the number, and
        // refuse any x32 call (bit 30 set).
        use seccompiler::sock_filter;
        const X32: u32 = 0x4000_0000;
        let errno = 0x0005_0000 | libc::EACCES as u32; // SECCOMP_RET_ERRNO
        let x32 = [
            sock_filter {
                code: 0x20,
                jt: 0,
                jf: 0,
                k: 0,
            }, // ld [nr]
            sock_filter {
                code: 0x35,
                jt: 0,
                jf: 1,
                k: X32,
            }, // jge X32
            sock_filter {
                code: 0x06,
                jt: 0,
                jf: 0,
                k: errno,
            }, // ret errno
        ];
        program.splice(3..3, x32);
    }
    Ok(program)
}

#[cfg(test)]
#[path = "linux_tests.rs"]
mod tests;
