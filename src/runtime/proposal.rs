//! What a repository proposes under `.holon/` at a workspace's root (a
//! reviewer policy, hooks), read as hostile: no link followed (the file
//! or the `.holon` folder), no FIFO or device waited on, at most
//! `MAX_FILE` bytes of UTF-8. A proposal is in force only while its text
//! is exactly what the operator approved (its SHA-256, kept in the store
//! setting `APPROVED`; `approvals/proposals.rs` records approvals).

use std::io::Read;
use std::path::Path;

use crate::model::proposal::{Proposal, ProposalApproval, ProposalKind};
use crate::runtime::RuntimeError;
use crate::store::Store;

/// The store setting holding the operator's approvals.
pub const APPROVED: &str = "proposals";
/// Where a repository proposes, under its root.
pub const DIR: &str = ".holon";
/// The largest proposal read.
pub const MAX_FILE: u64 = 64 * 1024;

/// The SHA-256 of `text`, hex.
pub fn digest(text: &str) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// What `anchor` proposes of `kind`: `None` when nothing (no file, or a
/// blank one); its text and digest, or why it cannot be used.
pub fn read(anchor: &Path, kind: ProposalKind) -> Option<Result<(String, String), String>> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = anchor.join(DIR);
    match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(format!("{} cannot be read: {e}", dir.display()))),
        Ok(m) if m.file_type().is_symlink() => {
            return Some(Err(format!("{} is a link, not a folder", dir.display())))
        }
        Ok(m) if !m.is_dir() => return None,
        Ok(_) => {}
    }
    let path = dir.join(kind.file());
    // No link followed, and no wait on a FIFO that never opens.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Some(Err(format!("{} is a link, not a file", path.display())))
        }
        Err(e) => return Some(Err(format!("{} cannot be read: {e}", path.display()))),
    };
    let refused = |why: String| Some(Err(format!("{} {why}", path.display())));
    match file.metadata() {
        Ok(m) if !m.is_file() => return refused("is not a regular file".into()),
        Ok(m) if m.len() > MAX_FILE => return refused(format!("is over {} KiB", MAX_FILE / 1024)),
        Ok(_) => {}
        Err(e) => return refused(format!("cannot be read: {e}")),
    }
    let mut bytes = Vec::new();
    if let Err(e) = file.take(MAX_FILE + 1).read_to_end(&mut bytes) {
        return refused(format!("cannot be read: {e}"));
    }
    if bytes.len() as u64 > MAX_FILE {
        return refused(format!("is over {} KiB", MAX_FILE / 1024));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return refused("is not UTF-8 text".into());
    };
    if text.trim().is_empty() {
        return None;
    }
    let d = digest(&text);
    Some(Ok((text, d)))
}

/// The approvals recorded in `store`.
pub fn approved_in(store: &Store) -> Result<Vec<ProposalApproval>, RuntimeError> {
    Ok(store.read()?.setting(APPROVED)?.unwrap_or_default())
}

/// `anchor`'s proposal of `kind` as the operator sees it. `check` says
/// why a text that reads cannot be used (a hook table a repository may
/// not set).
pub fn view(
    anchor: &Path,
    kind: ProposalKind,
    approved: &[ProposalApproval],
    check: impl Fn(&str) -> Result<(), String>,
) -> Proposal {
    let workspace = anchor.display().to_string();
    let (text, digest, refused) = match read(anchor, kind) {
        None => (None, None, None),
        Some(Ok((t, d))) => {
            let refused = check(&t).err();
            (Some(t), Some(d), refused)
        }
        Some(Err(why)) => (None, None, Some(why)),
    };
    let approved_digest = approved
        .iter()
        .find(|a| a.workspace == workspace && a.kind == kind)
        .map(|a| a.digest.clone());
    Proposal {
        kind,
        file: anchor.join(DIR).join(kind.file()).display().to_string(),
        workspace,
        text,
        digest,
        refused,
        approved_digest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_policy(anchor: &Path) -> Option<Result<(String, String), String>> {
        read(anchor, ProposalKind::Policy)
    }

    #[test]
    fn a_hostile_proposal_is_read_as_one() -> std::io::Result<()> {
        let repo = tempfile::tempdir()?;
        let anchor = repo.path();
        assert!(read_policy(anchor).is_none());
        std::fs::create_dir(anchor.join(DIR))?;
        let file = anchor.join(DIR).join("policy.md");
        // A link is never followed, to a file or to the folder.
        std::os::unix::fs::symlink("/etc/passwd", &file)?;
        assert!(matches!(read_policy(anchor), Some(Err(w)) if w.contains("is a link")));
        std::fs::remove_file(&file)?;
        // A FIFO is not waited on.
        let c = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap_or_default();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let fifo = read_policy(anchor);
        assert!(matches!(fifo, Some(Err(w)) if w.contains("not a regular file")));
        std::fs::remove_file(&file)?;
        std::fs::write(&file, "x".repeat(MAX_FILE as usize + 1))?;
        assert!(matches!(read_policy(anchor), Some(Err(w)) if w.contains("KiB")));
        std::fs::write(&file, [0xff, 0xfe, b'x'])?;
        assert!(matches!(read_policy(anchor), Some(Err(w)) if w.contains("UTF-8")));
        std::fs::write(&file, "  \n")?;
        assert!(read_policy(anchor).is_none());
        std::fs::write(&file, "Run the tests freely.\n")?;
        let (text, d) = read_policy(anchor).and_then(Result::ok).unwrap_or_default();
        assert_eq!(text, "Run the tests freely.\n");
        // Only the approved text, of that kind, there, is in force.
        let mut ok = vec![ProposalApproval {
            kind: ProposalKind::Policy,
            workspace: anchor.display().to_string(),
            digest: d,
            approved: true,
        }];
        let fine = |_: &str| Ok(());
        assert!(view(anchor, ProposalKind::Policy, &ok, fine).in_force());
        let refuse = |_: &str| Err("no".to_owned());
        assert!(!view(anchor, ProposalKind::Policy, &ok, refuse).in_force());
        std::fs::write(&file, "Run anything freely.\n")?;
        assert!(!view(anchor, ProposalKind::Policy, &ok, fine).in_force());
        ok[0].workspace = "/elsewhere".into();
        assert_eq!(
            view(anchor, ProposalKind::Policy, &ok, fine).approved_digest,
            None
        );
        // The folder as a link is refused too.
        std::fs::remove_dir_all(anchor.join(DIR))?;
        std::os::unix::fs::symlink("/etc", anchor.join(DIR))?;
        assert!(matches!(read_policy(anchor), Some(Err(w)) if w.contains("is a link")));
        Ok(())
    }
}
