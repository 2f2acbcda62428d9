//! The sandbox plan's pure rules and what the snapshot says, tested
//! without a kernel (`linux_tests.rs` has the real-kernel ones).

use super::*;

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

#[test]
fn protected_paths_matter_only_beneath_a_writable_root() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (repo, data) = (base.join("w/repo"), base.join("h/data"));
    let (home, tmp) = (data.join("agents/a"), data.join("tmp/t1"));
    for d in [repo.join(".git"), home.clone(), tmp.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    let plan = shape(
        vec![repo.clone(), home.clone(), tmp.clone()],
        vec![],
        vec![repo.join(".git"), repo.join("absent")],
        vec![data.clone(), base.join("nowhere")],
        NetworkAccess::Off,
    );
    // The checkout's .git lies beneath a writable root; Holon's data
    // directory only holds writable roots, so nothing of it is bound;
    // what does not exist is never bound.
    assert_eq!(plan.read_only, vec![repo.join(".git")]);
    assert!(plan.holon_read_only.is_empty() && plan.reopen.is_empty());
    assert!(!plan.network);
    assert!(!plan.allows_write(&repo.join(".git/commondir")));
    assert!(plan.allows_write(&repo.join("src/lib.rs")));
}

#[test]
fn only_the_outermost_of_nested_hidden_paths_is_covered() {
    let kept = outermost(vec![
        p("/h/home/config"),
        p("/h/home"),
        p("/run/holon"),
        p("/h/home/data/holon.redb"),
        p("/h/homely"),
    ]);
    // Shallowest first; "/h/homely" is not beneath "/h/home".
    assert_eq!(kept, vec![p("/h/home"), p("/run/holon"), p("/h/homely")]);
}

#[test]
fn a_writable_root_inside_a_protected_one_is_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let data = root.join("holon/data");
    let home = data.join("agents/a");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    let plan = shape(
        vec![root.clone(), home.clone()],
        vec![],
        vec![root.join(".git")],
        vec![data.clone()],
        NetworkAccess::On,
    );
    assert_eq!(plan.read_only, vec![root.join(".git"), data.clone()]);
    assert_eq!(plan.holon_read_only, vec![data.clone()]);
    assert_eq!(plan.reopen, vec![home.clone()]);
    assert!(plan.network);
    assert!(plan.allows_write(&root.join("src/main.rs")));
    assert!(!plan.allows_write(&root.join(".git/hooks/pre-commit")));
    assert!(!plan.allows_write(&data.join("store.redb")));
    assert!(plan.allows_write(&home.join("notes.md")));
    assert!(!plan.allows_write(Path::new("/etc/passwd")));
}

#[test]
fn the_snapshot_says_what_the_kernel_enforces() {
    let full = Support {
        landlock_abi: 7,
        seccomp: true,
        mount_namespace: true,
        missing: None,
    };
    let base = ExecutionPolicySnapshot::host_local;
    let s = confinement(
        SandboxMode::WorkspaceWrite,
        NetworkAccess::Off,
        &full,
        base(),
    );
    assert_eq!(s.backend, ExecutionProfile::Sandboxed);
    assert!(s.write.is_enforced() && s.network.is_enforced());
    assert_eq!(s.git_metadata, Some(Enforcement::Enforced));
    assert_eq!(s.secrets, Enforcement::NotEnforced);
    let s = confinement(
        SandboxMode::WorkspaceWrite,
        NetworkAccess::On,
        &full,
        base(),
    );
    assert!(s.write.is_enforced() && !s.network.is_enforced());
    let s = confinement(SandboxMode::Off, NetworkAccess::Off, &full, base());
    assert_eq!(s.backend, ExecutionProfile::HostLocal);
    assert!(!s.write.is_enforced() && !s.network.is_enforced());
    let none = Support::none("no Landlock");
    let s = confinement(SandboxMode::ReadOnly, NetworkAccess::Off, &none, base());
    assert_eq!(s.backend, ExecutionProfile::HostLocal);
    assert!(!s.write.is_enforced());
    assert!(s.sandbox_note.unwrap().contains("no Landlock"));
}

#[test]
fn a_denial_is_explained_with_the_way_out() {
    let c = Confine {
        mode: SandboxMode::WorkspaceWrite,
        network: NetworkAccess::Off,
        execution_root: p("/w/repo"),
        agent_home: p("/h/agents/a"),
        unix_sockets: vec![],
        root_pin: None,
        extra_writable: vec![],
    };
    let hint = denial_hint(&c, "touch: cannot touch '/etc/x': Permission denied").unwrap();
    assert!(
        hint.contains("/w/repo") && hint.contains("escalate"),
        "{hint}"
    );
    assert!(denial_hint(&c, "error: test failed").is_none());
    let net = denial_hint(&c, "curl: (7) Failed to connect to 127.0.0.1").unwrap();
    assert!(net.contains("network is off"), "{net}");
    let on = Confine {
        network: NetworkAccess::On,
        ..c
    };
    assert!(denial_hint(&on, "curl: (7) Failed to connect").is_none());
}
