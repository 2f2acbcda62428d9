//! The sandbox on a real kernel: real children, real files, a real
//! loopback listener; and ApplyPatch held in agreement with the kernel.

use super::*;
use std::os::unix::process::CommandExt;

fn here() -> bool {
    super::super::tests_can_sandbox()
}

/// Run `script` under `plan` in a real child; (exit code, output).
fn run(plan: &Plan, script: &str) -> (i32, String) {
    let support = super::super::Support::probe();
    let prepared = Prepared::new(plan, support).unwrap();
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(script);
    // SAFETY: apply makes only raw system calls.
    unsafe {
        cmd.pre_exec(move || prepared.apply());
    }
    let out = cmd.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn plan_for(root: &Path, network: bool) -> Plan {
    Plan {
        writable: vec![root.canonicalize().unwrap()],
        network,
        ..Plan::default()
    }
}

#[test]
fn writes_stay_inside_the_roots_for_children_of_children_too() {
    if !here() {
        return;
    }
    let inside = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let plan = plan_for(inside.path(), true);
    let i = inside.path().display();
    let o = outside.path().display();
    let (code, out) = run(&plan, &format!("echo hi > {i}/a && cat {i}/a"));
    assert_eq!((code, out.trim()), (0, "hi"));
    let (code, out) = run(&plan, &format!("echo hi > {o}/b"));
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    let (code, _) = run(&plan, &format!("sh -c 'sh -c \"touch {o}/c\"'"));
    assert_ne!(code, 0);
    assert!(!outside.path().join("b").exists() && !outside.path().join("c").exists());
    // Symlinks and /proc/self/root lead nowhere new: the kernel checks
    // the file reached.
    let (code, _) = run(
        &plan,
        &format!("ln -s {o} {i}/out && touch {i}/out/d; touch /proc/self/root{o}/e"),
    );
    assert_ne!(code, 0);
    assert!(!outside.path().join("d").exists() && !outside.path().join("e").exists());
    // A hard link to an outside file cannot be made; a command that
    // daemonizes stays inside.
    std::fs::write(outside.path().join("victim"), "x").unwrap();
    let (code, _) = run(&plan, &format!("ln {o}/victim {i}/hard"));
    assert_ne!(code, 0);
    assert!(!inside.path().join("hard").exists());
    let (code, _) = run(
        &plan,
        &format!("setsid sh -c 'sleep 0.2; touch {o}/daemon; touch {i}/daemon' >/dev/null 2>&1 &"),
    );
    assert_eq!(code, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !inside.path().join("daemon").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(inside.path().join("daemon").exists(), "the daemon ran");
    assert!(!outside.path().join("daemon").exists(), "and stayed inside");
    // No device nodes, even inside a root (and even for root).
    let (code, _) = run(&plan, &format!("mknod {i}/mem c 1 1"));
    assert_ne!(code, 0);
    assert!(!inside.path().join("mem").exists());
    // Reading is not confined; /dev/null is writable.
    let (code, _) = run(&plan, "cat /etc/hostname >/dev/null; echo x > /dev/null");
    assert_eq!(code, 0);
}

#[test]
fn the_network_is_off_unless_the_plan_allows_it() {
    if !here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))' \
         && echo connected"
    );
    let (code, out) = run(&plan_for(dir.path(), false), &probe);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    let (code, out) = run(&plan_for(dir.path(), true), &probe);
    assert_eq!((code, out.trim()), (0, "connected"));
    // Unix sockets stay usable.
    let (code, out) = run(
        &plan_for(dir.path(), false),
        "python3 -c 'import socket; a, b = socket.socketpair(); print(\"pair\")'",
    );
    assert_eq!((code, out.trim()), (0, "pair"));
}

#[test]
fn a_read_only_carve_out_holds_inside_a_writable_root() {
    if !here() {
        return;
    }
    if !super::super::Support::probe().mount_namespace {
        // Said by the snapshot (`git_metadata: not_enforced`).
        eprintln!("no private mount namespace here: carve-outs not tested");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let hooks = root.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    let plan = Plan {
        writable: vec![root.clone()],
        read_only: vec![hooks.clone(), root.join(".git/config")],
        ..Plan::default()
    };
    let r = root.display();
    let (code, out) = run(
        &plan,
        &format!("touch {r}/.git/hooks/pre-commit || echo hooks-refused; echo x >> {r}/.git/config || echo config-refused; touch {r}/ok"),
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("hooks-refused") && out.contains("config-refused"),
        "{out}"
    );
    assert!(!hooks.join("pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(root.join("ok").exists());
    // The host's mounts are untouched.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&hooks.display().to_string()));
}

/// ApplyPatch (which writes from Holon's own process) and the kernel
/// (which confines commands) agree on every path: inside the root,
/// git's metadata, Holon's directory inside the root, the
/// agent's home, outside.
#[test]
fn apply_patch_agrees_with_the_kernel() {
    if !here() {
        return;
    }
    use crate::runtime::tools::patch::apply_in_roots;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (root, home, tmp) = (base.join("repo"), base.join("home"), base.join("tmp"));
    for d in [&root, &home, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(git.success());
    let holon = root.join(".holon-data");
    std::fs::create_dir_all(&holon).unwrap();
    let request = super::super::Request {
        mode: crate::model::sandbox::SandboxMode::WorkspaceWrite,
        network: crate::model::sandbox::NetworkAccess::Off,
        execution_root: &root,
        agent_home: &home,
        tmp: Some(&tmp),
        output: None,
        holon_dirs: std::slice::from_ref(&holon),
        unix_sockets: &[],
        root_pin: None,
        extra_writable: &[],
    };
    let plan = super::super::plan(&request).unwrap().unwrap();
    for (rel, allowed) in [
        ("src/new.rs", true),
        ("README.md", true),
        (".git/hooks/pre-commit", false),
        (".git/config", false),
        (".git/commondir", false),
        (".git/info/exclude-more", false),
        (".holon-data/store.redb", false),
    ] {
        let patch = format!("--- /dev/null\n+++ b/{rel}\n@@ -0,0 +1 @@\n+x\n");
        let by_patch = match std::fs::metadata(root.join(rel)) {
            // An existing file (git's config) is modified, not created.
            Ok(_) => {
                let old = std::fs::read_to_string(root.join(rel)).unwrap();
                let first = old.lines().next().unwrap_or_default().to_owned();
                let patch = format!("--- a/{rel}\n+++ b/{rel}\n@@ -1 +1 @@\n-{first}\n+x\n");
                apply_in_roots(&root, Some(&home), Some(&plan), &patch).is_ok()
            }
            Err(_) => apply_in_roots(&root, Some(&home), Some(&plan), &patch).is_ok(),
        };
        let path = root.join(rel);
        let script = format!(
            "mkdir -p '{}' && printf x >> '{}'",
            path.parent().unwrap().display(),
            path.display()
        );
        let (code, out) = run(&plan, &script);
        assert_eq!(by_patch, allowed, "ApplyPatch on {rel}");
        assert_eq!(code == 0, allowed, "the kernel on {rel}: {out}");
    }
    // `.git` itself cannot be renamed away and replaced.
    let (code, _) = run(
        &plan,
        &format!("mv '{0}/.git' '{0}/.git-moved'", root.display()),
    );
    assert_ne!(code, 0);
    assert!(root.join(".git/config").is_file() && !root.join(".git-moved").exists());
    let patch = "--- /dev/null\n+++ b/@home/notes.md\n@@ -0,0 +1 @@\n+x\n";
    assert!(apply_in_roots(&root, Some(&home), Some(&plan), patch).is_ok());
    assert_eq!(run(&plan, &format!("touch '{}/more'", home.display())).0, 0);
}

/// A unix listener at a path outside every root, answering "hello".
fn unix_listener(dir: &Path) -> (std::path::PathBuf, std::os::unix::net::UnixListener) {
    let path = dir.join("outside.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    (path, listener)
}

fn python_unix(path: &Path) -> String {
    format!(
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\"); \
         print(\"reached\")'",
        path.display()
    )
}

#[test]
fn path_unix_sockets_are_out_of_reach_unless_listed() {
    if !here() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let (path, listener) = unix_listener(outside.path());
    let probe = python_unix(&path);
    // Network on or off, no path socket is reachable by default.
    for network in [false, true] {
        let (code, out) = run(&plan_for(root.path(), network), &probe);
        assert_ne!(code, 0, "network {network}: {out}");
        assert!(!out.contains("reached"), "{out}");
        assert!(listener.accept().is_err(), "something connected");
    }
    // socketpair still works: it reaches nothing outside.
    let (code, out) = run(
        &plan_for(root.path(), false),
        "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(b.recv(1))'",
    );
    assert_eq!((code, out.trim()), (0, "b'x'"), "{out}");
    // One the operator lists is.
    let listed = Plan {
        unix_sockets: vec![path.canonicalize().unwrap()],
        ..plan_for(root.path(), false)
    };
    let (code, out) = run(&listed, &probe);
    assert_eq!((code, out.trim()), (0, "reached"), "{out}");
}

#[test]
fn holons_own_paths_are_hidden_and_shm_is_private() {
    if !here() || !super::super::Support::probe().mount_namespace {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let holon = tempfile::tempdir().unwrap();
    let run_dir = holon.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("token"), "secret-token").unwrap();
    let store = holon.path().join("holon.redb");
    std::fs::write(&store, "secret-store").unwrap();
    let shm = root.path().canonicalize().unwrap().join(".shm");
    std::fs::create_dir_all(&shm).unwrap();
    let plan = Plan {
        hidden: vec![run_dir.clone(), store.clone()],
        shm: Some(shm.clone()),
        ..plan_for(root.path(), false)
    };
    let (code, out) = run(
        &plan,
        &format!(
            "cat {r}/token; cat {s}; ls -A {r}; echo listed",
            r = run_dir.display(),
            s = store.display()
        ),
    );
    assert!(!out.contains("secret"), "{code} {out}");
    assert!(out.contains("listed"), "{out}");
    // A private /dev/shm: writable, empty, and gone with the command.
    let marker = format!("holon-shm-test-{}", std::process::id());
    let (code, out) = run(
        &plan,
        &format!("ls -A /dev/shm | wc -l; echo x > /dev/shm/{marker} && echo wrote"),
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["0", "wrote"], "{out}");
    assert!(!Path::new("/dev/shm").join(&marker).exists());
    assert!(shm.join(&marker).exists(), "it is the command's own");
}

#[test]
fn a_command_is_in_its_own_user_namespace_without_capabilities() {
    if !here() || !super::super::Support::probe().mount_namespace {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let ours = std::fs::read_link("/proc/self/ns/user").unwrap();
    let me = std::process::id();
    let (code, out) = run(
        &plan_for(root.path(), true),
        &format!(
            "readlink /proc/self/ns/user; grep CapEff /proc/self/status; \
             cat /proc/{me}/environ >/dev/null 2>&1 && echo read-environ; true"
        ),
    );
    assert_eq!(code, 0, "{out}");
    let mut lines = out.lines();
    assert_ne!(lines.next().map(Path::new), Some(ours.as_path()), "{out}");
    assert!(
        lines
            .next()
            .is_some_and(|l| l.ends_with("0000000000000000")),
        "{out}"
    );
    assert!(!out.contains("read-environ"), "{out}");
}

/// Holon's processes are not dumpable, and a child inherits that until it
/// execs: a user other than root must still be able to write its own id
/// maps when it enters the command's namespace. Run as root, the child
/// becomes `nobody` first, as an ordinary operator's would be.
#[test]
fn a_non_dumpable_parent_of_another_user_still_gives_its_child_a_namespace() {
    if !here() || !super::super::Support::probe().mount_namespace {
        return;
    }
    // SAFETY: plain getters.
    let root = unsafe { libc::geteuid() } == 0;
    let (uid, gid) = match root {
        true => (65534u32, 65534u32),
        // SAFETY: plain getters.
        false => unsafe { (libc::getuid(), libc::getgid()) },
    };
    let maps = Maps {
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
    };
    // SAFETY: the child makes only raw system calls and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: raw calls in the child, then _exit.
        unsafe {
            if root
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0)
            {
                libc::_exit(2);
            }
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            let ok = enter_mount_namespace(&maps).is_ok();
            libc::_exit(if ok { 0 } else { 1 });
        }
    }
    assert!(pid > 0);
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "{status}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "the namespace was refused");
}
