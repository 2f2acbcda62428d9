//! Applying a sandbox plan on Linux. Everything that allocates or opens a
//! path happens in Holon's process (`Prepared::new`): the Landlock ruleset
//! (an fd), the seccomp program, the C strings of the mount targets. The
//! child, between fork and exec, only makes raw system calls
//! (`Prepared::apply`), in this order:
//!
//! 1. a new session (no controlling terminal to type into), then, always
//!    where the kernel allows it, a private mount namespace in a new user
//!    namespace: the bounding set and ambient capabilities are dropped (a
//!    command run as root holds no capability, even in its own
//!    namespace); Holon's own paths that hold no writable root (its
//!    control socket's directory, config, logs, the store) are covered by
//!    empty read-only mounts; each read-only carve-out is bound read-only
//!    over itself and each reopened root bound writable again; `/dev/shm`
//!    is the command's own empty directory (in its `TMPDIR`). Nothing propagates back to the host's
//!    mounts, and Landlock forbids the command to unmount any of it;
//! 2. `no_new_privs`, then the Landlock ruleset: read and execute
//!    everywhere, write only beneath the plan's roots (never a device
//!    node) and to a few devices (`/dev/null`, ...); signals and abstract
//!    unix sockets reach only inside the sandbox (ABI 6+); path unix
//!    sockets only beneath the writable roots and those the operator
//!    lists (ABI 9+); inherited by every process the command starts;
//! 3. a seccomp filter: `io_uring_setup` fails (it could open sockets past
//!    the filter), x32 system calls fail; with the network off, `socket`
//!    fails with `EACCES` for every family but `AF_UNIX`; where Landlock
//!    cannot scope path unix sockets (before ABI 9) and the operator
//!    listed none, `socket(AF_UNIX)` fails too (`socketpair` still works),
//!    so no path socket (Holon's control socket, tmux, an ssh agent,
//!    D-Bus, Docker) is reachable.

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
    // Holon's own process is not dumpable, and a child inherits that until
    // it execs: its `/proc/self` files would then belong to root, and a
    // user other than root could not write its own id maps. The child is
    // about to become the command, whose exec decides anew.
    if libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) != 0 {
        return Err(io::Error::last_os_error());
    }
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

/// Give up every capability the programs this process runs could gain:
/// the bounding set (so root's programs start with none) and the ambient
/// set. Needs `CAP_SETPCAP`, which the creator of a user namespace holds
/// in it; numbers past the kernel's last capability fail with `EINVAL`.
unsafe fn drop_capabilities() -> io::Result<()> {
    for cap in 0..64 {
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
            && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
        {
            return Err(io::Error::last_os_error());
        }
    }
    // Ambient capabilities are optional (Linux 4.3+): EINVAL when absent.
    if libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    ) != 0
        && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One mount made in the child.
enum Mount {
    /// `path` bound over itself, then remounted read-only or writable,
    /// keeping the flags the kernel locks (nosuid, nodev, noexec, atime)
    /// as they are.
    Bind { path: CString, flags: libc::c_ulong },
    /// A directory hidden under an empty read-only tmpfs.
    HideDir { path: CString },
    /// A file hidden under `/dev/null`, bound read-only (`flags`: those
    /// of the remount).
    HideFile { path: CString, flags: libc::c_ulong },
    /// `source` bound at `target`, as it is (the command's own `/dev/shm`).
    BindTo { source: CString, target: CString },
}

fn c_path(path: &Path) -> io::Result<CString> {
    Ok(CString::new(path.as_os_str().as_bytes())?)
}

/// The flags that remount a bind of `path` read-only or writable, keeping
/// those the kernel locks in a user namespace (nosuid, nodev, noexec,
/// atime) as they are.
fn remount_flags(path: &CString, read_only: bool) -> io::Result<libc::c_ulong> {
    // SAFETY: statvfs fills the struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
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
    Ok(flags)
}

impl Mount {
    fn bind(path: &Path, read_only: bool) -> io::Result<Mount> {
        let path = c_path(path)?;
        let flags = remount_flags(&path, read_only)?;
        Ok(Mount::Bind { path, flags })
    }

    fn hide(path: &Path) -> io::Result<Mount> {
        let meta = std::fs::symlink_metadata(path)?;
        let path = c_path(path)?;
        Ok(match meta.is_dir() {
            true => Mount::HideDir { path },
            false => Mount::HideFile {
                path,
                flags: remount_flags(&c_path(Path::new("/dev/null"))?, true)?,
            },
        })
    }

    unsafe fn apply(&self) -> io::Result<()> {
        let none = std::ptr::null::<libc::c_char>();
        let tmpfs = c"tmpfs".as_ptr();
        let sealed = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        let check = |r: libc::c_int| match r {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        };
        match self {
            Mount::Bind { path, flags } => {
                let p = path.as_ptr();
                check(libc::mount(
                    p,
                    p,
                    none,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                check(libc::mount(none, p, none, *flags, std::ptr::null()))
            }
            Mount::HideDir { path } => {
                let opts = b"size=4k,mode=0555\0";
                check(libc::mount(
                    tmpfs,
                    path.as_ptr(),
                    tmpfs,
                    sealed | libc::MS_RDONLY,
                    opts.as_ptr().cast(),
                ))
            }
            Mount::HideFile { path, flags } => {
                let null = c"/dev/null".as_ptr();
                let p = path.as_ptr();
                check(libc::mount(null, p, none, libc::MS_BIND, std::ptr::null()))?;
                check(libc::mount(none, p, none, *flags, std::ptr::null()))
            }
            Mount::BindTo { source, target } => check(libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                none,
                libc::MS_BIND,
                std::ptr::null(),
            )),
        }
    }
}

/// A plan made ready for a child: nothing left to allocate.
pub struct Prepared {
    maps: Maps,
    /// Entered again once the mounts are made (see `enter`).
    workdir: Option<CString>,
    /// `None`: this kernel gives no private mount namespace.
    mounts: Option<Vec<Mount>>,
    ruleset: OwnedFd,
    seccomp: seccompiler::BpfProgram,
}

/// Devices every command may write: the null sink and the like. No
/// terminal: a command could type into the operator's (`TIOCSTI`). No
/// shared memory but a private `/dev/shm` (see `Prepared::new`).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The first Landlock ABI that scopes path unix sockets
/// (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`).
pub const UNIX_SOCKET_ABI: i32 = 9;

impl Prepared {
    pub fn new(plan: &Plan, support: &Support) -> io::Result<Prepared> {
        let err = |e: landlock::RulesetError| io::Error::other(e.to_string());
        let abi = ABI::from(support.landlock_abi);
        // Path unix sockets: refused by Landlock where it can (ABI 9+),
        // else by seccomp (below).
        let landlock_unix = support.landlock_abi >= UNIX_SOCKET_ABI;
        let handled = match landlock_unix {
            true => AccessFs::from_all(abi),
            false => AccessFs::from_all(abi) & !AccessFs::ResolveUnix,
        };
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
        if let Some(pin) = &plan.pinned_root {
            if !plan.writable.iter().any(|w| w == Path::new(&pin.path)) {
                return Err(io::Error::other(format!(
                    "the execution root {} is not among the plan's roots",
                    pin.path
                )));
            }
        }
        for root in &plan.writable {
            let fd = PathFd::new(root).map_err(|e| io::Error::other(e.to_string()))?;
            if let Some(pin) = plan
                .pinned_root
                .as_ref()
                .filter(|p| Path::new(&p.path) == root)
            {
                check_identity(&fd, root, pin)?;
            }
            created = created
                .add_rule(PathBeneath::new(fd, root_access))
                .map_err(err)?;
        }
        // Its own output (`> /dev/stdout` reopens it, truncating).
        for file in &plan.writable_files {
            let access =
                file_access & (AccessFs::WriteFile | AccessFs::ReadFile | AccessFs::Truncate);
            created = created.add_rule(rule(file, access)?).map_err(err)?;
        }
        if landlock_unix {
            for socket in plan.unix_sockets.iter().filter(|p| p.exists()) {
                created = created
                    .add_rule(rule(socket, AccessFs::ResolveUnix.into())?)
                    .map_err(err)?;
            }
        }
        let device = file_access & (AccessFs::ReadFile | AccessFs::WriteFile);
        let shm = Path::new("/dev/shm");
        // A private /dev/shm: the command's own directory for it, bound
        // over the host's in its mount namespace. Landlock checks the
        // directory a bind mount starts at by its own rule (the walk up
        // from it goes to the mount point, not to its real parent), so it
        // gets one. Without a namespace, the host's stays read-only.
        let private_shm = match (&plan.shm, support.mount_namespace && shm.is_dir()) {
            (Some(own), true) if own.is_dir() => Some(own),
            _ => None,
        };
        if let Some(own) = private_shm {
            created = created.add_rule(rule(own, root_access)?).map_err(err)?;
        }
        for dev in DEVICES.iter().map(Path::new).filter(|d| d.exists()) {
            let access = match dev.is_dir() {
                true => root_access,
                false => device,
            };
            created = created.add_rule(rule(dev, access)?).map_err(err)?;
        }
        let ruleset: Option<OwnedFd> = created.into();
        let ruleset = ruleset.ok_or_else(|| io::Error::other("Landlock made no ruleset"))?;
        let mounts = match support.mount_namespace {
            true => {
                let mut mounts = Vec::new();
                for p in &plan.hidden {
                    mounts.push(Mount::hide(p)?);
                }
                for p in &plan.read_only {
                    mounts.push(Mount::bind(p, true)?);
                }
                for p in &plan.reopen {
                    mounts.push(Mount::bind(p, false)?);
                }
                if let Some(own) = private_shm {
                    mounts.push(Mount::BindTo {
                        source: c_path(own)?,
                        target: c_path(shm)?,
                    });
                }
                Some(mounts)
            }
            false => {
                // Holon's own files beneath a writable root cannot be
                // left writable: refuse. Git metadata is left as it is,
                // and the snapshot says so (`git_metadata: not_enforced`).
                let under_root =
                    |p: &&std::path::PathBuf| plan.writable.iter().any(|w| p.starts_with(w));
                let own = plan
                    .holon_read_only
                    .iter()
                    .chain(plan.hidden.iter().filter(under_root));
                if let Some(dir) = own.into_iter().next() {
                    return Err(io::Error::other(format!(
                        "Holon's own directory {} lies inside a writable root, and this kernel \
                         gives no private mount namespace to keep it read-only; work in another \
                         directory, or set the workspace's sandbox to read_only or off",
                        dir.display()
                    )));
                }
                None
            }
        };
        let unix = match (landlock_unix, plan.unix_sockets.is_empty()) {
            (true, _) | (false, false) => UnixSockets::Allowed,
            (false, true) => UnixSockets::Refused,
        };
        Ok(Prepared {
            maps: Maps::current(),
            workdir: None,
            mounts,
            ruleset,
            seccomp: socket_filter(plan.network, unix)?,
        })
    }

    /// The directory the command starts in, entered again in the child
    /// once its mounts are made: the process's own `current_dir` is set
    /// before they are, and a directory entered then would keep reaching
    /// what a mount covers (a `.git` bound read-only, a hidden path).
    pub fn enter(&mut self, dir: &Path) -> io::Result<()> {
        self.workdir = Some(c_path(dir)?);
        Ok(())
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
        if let Some(mounts) = &self.mounts {
            enter_mount_namespace(&self.maps)?;
            drop_capabilities()?;
            for m in mounts {
                m.apply()?;
            }
        }
        if let Some(dir) = &self.workdir {
            if libc::chdir(dir.as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
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
        // Errors carry only an errno: nothing may allocate here.
        seccompiler::apply_filter(&self.seccomp).map_err(|e| match e {
            seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
            _ => io::Error::from_raw_os_error(libc::EINVAL),
        })?;
        Ok(())
    }
}

/// The directory `fd` holds must be the one `want` names: the root the
/// operator or the model chose, not a link a command put in its place.
fn check_identity(
    fd: &PathFd,
    path: &Path,
    want: &crate::model::workspace::DirPin,
) -> io::Result<()> {
    use std::os::fd::AsFd;
    let file = std::fs::File::from(fd.as_fd().try_clone_to_owned()?);
    let meta = file.metadata()?;
    use std::os::unix::fs::MetadataExt;
    match (meta.dev(), meta.ino()) == (want.dev, want.ino) {
        true => Ok(()),
        false => Err(io::Error::other(format!(
            "the execution root {} is no longer the directory that was chosen (it was replaced, \
             perhaps by a link): nothing runs there; choose it again with UseWorkspace",
            path.display()
        ))),
    }
}

/// Whether `socket(AF_UNIX)` is allowed (Landlock scopes path sockets, or
/// the operator listed some) or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnixSockets {
    Allowed,
    Refused,
}

/// The seccomp program every sandboxed command gets: `io_uring_setup`
/// fails with `EACCES`; with the network off, so does `socket` for any
/// family but `AF_UNIX` (and `socketpair` for those); with unix sockets
/// refused, so does `socket(AF_UNIX)`. On x86_64 the x32 system call
/// numbers (which would slip past the numbers checked) fail too.
/// Everything else is allowed.
fn socket_filter(network: bool, unix: UnixSockets) -> io::Result<seccompiler::BpfProgram> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let err = |e: seccompiler::BackendError| io::Error::other(e.to_string());
    let family = |op: SeccompCmpOp| -> io::Result<Vec<SeccompRule>> {
        let cond = SeccompCondition::new(0, SeccompCmpArgLen::Dword, op, libc::AF_UNIX as u64)
            .map_err(err)?;
        Ok(vec![SeccompRule::new(vec![cond]).map_err(err)?])
    };
    // An empty rule list matches every call.
    let mut rules: Vec<(i64, Vec<SeccompRule>)> = vec![(libc::SYS_io_uring_setup, vec![])];
    match (network, unix) {
        (true, UnixSockets::Allowed) => {}
        (true, UnixSockets::Refused) => rules.push((libc::SYS_socket, family(SeccompCmpOp::Eq)?)),
        (false, UnixSockets::Allowed) => rules.push((libc::SYS_socket, family(SeccompCmpOp::Ne)?)),
        (false, UnixSockets::Refused) => rules.push((libc::SYS_socket, vec![])),
    }
    if !network {
        rules.push((libc::SYS_socketpair, family(SeccompCmpOp::Ne)?));
    }
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
