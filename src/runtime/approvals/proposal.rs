//! A repository's proposed reviewer policy: `.holon/policy.md` at a
//! workspace's root. The repository may be hostile, so the file is read
//! as one (no link followed, no FIFO or device waited on, at most
//! `written::MAX_PART` bytes), and it is part of the reviewer's policy
//! only while its text is exactly what the operator approved
//! (`holon policy adopt`, `policy.adopt`): the approval is of a SHA-256,
//! kept as a store setting and recorded as `policy_proposal_approved` in
//! every agent's ledger, like a `.mcp.json` server's.

use std::io::Read;
use std::path::Path;

use super::written::{Part, MAX_PART};
use crate::model::review::{PolicyProposal, ProposalApproval};
use crate::protocol::events::Event;
use crate::runtime::host::RuntimeHost;
use crate::runtime::RuntimeError;
use crate::store::Store;

/// The store setting holding the operator's approvals.
pub const APPROVED: &str = "policy_proposals";
/// Where a repository proposes, under its root.
pub const DIR: &str = ".holon";
pub const FILE: &str = "policy.md";

/// The SHA-256 of `text`, hex.
fn digest(text: &str) -> String {
    super::review::digest(Some(text))
}

/// What `anchor` proposes: `None` when it proposes nothing (no file, or
/// a blank one); its text and digest, or why it cannot be used.
pub fn read(anchor: &Path) -> Option<Result<(String, String), String>> {
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
    let path = dir.join(FILE);
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
        Ok(m) if m.len() > MAX_PART => return refused(format!("is over {} KiB", MAX_PART / 1024)),
        Ok(_) => {}
        Err(e) => return refused(format!("cannot be read: {e}")),
    }
    let mut bytes = Vec::new();
    if let Err(e) = file.take(MAX_PART + 1).read_to_end(&mut bytes) {
        return refused(format!("cannot be read: {e}"));
    }
    if bytes.len() as u64 > MAX_PART {
        return refused(format!("is over {} KiB", MAX_PART / 1024));
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

/// `anchor`'s proposal as the operator sees it.
pub fn view(anchor: &Path, approved: &[ProposalApproval]) -> PolicyProposal {
    let workspace = anchor.display().to_string();
    let (text, digest, refused) = match read(anchor) {
        None => (None, None, None),
        Some(Ok((t, d))) => (Some(t), Some(d), None),
        Some(Err(why)) => (None, None, Some(why)),
    };
    let approved_digest = approved
        .iter()
        .find(|a| a.workspace == workspace)
        .map(|a| a.digest.clone());
    PolicyProposal {
        file: anchor.join(DIR).join(FILE).display().to_string(),
        workspace,
        text,
        digest,
        refused,
        approved_digest,
    }
}

/// The part `anchor`'s proposal adds to the reviewer's policy: only its
/// approved text.
pub fn part(anchor: &Path, approved: &[ProposalApproval]) -> Option<Part> {
    let v = view(anchor, approved);
    if !v.in_force() {
        return None;
    }
    Some(Part {
        from: format!(
            "{} (proposed by the repository, approved as sha256 {})",
            v.file,
            v.digest.as_deref().unwrap_or_default()
        ),
        heading: Some(format!(
            "Proposed by the repository at {} and approved by the operator as written \
             (where it differs from the operator's policy above, the operator's wins):",
            v.workspace
        )),
        text: v.text.unwrap_or_default(),
    })
}

impl RuntimeHost {
    /// `workspace`'s proposed policy, and whether it is in force
    /// (`policy.proposal`).
    pub fn policy_proposal(&self, workspace: &Path) -> Result<PolicyProposal, RuntimeError> {
        Ok(view(workspace, &approved_in(&self.inner.store)?))
    }

    /// Approve `workspace`'s proposal for the text whose digest is
    /// `digest`, refused unless the file says exactly that now; or, with
    /// `approve` false, withdraw the approval (`policy.adopt`).
    pub async fn adopt_policy(
        &self,
        workspace: &Path,
        digest: &str,
        approve: bool,
    ) -> Result<ProposalApproval, RuntimeError> {
        let key = workspace.display().to_string();
        let digest = digest.trim().to_ascii_lowercase();
        if approve {
            let now = match read(workspace) {
                None => {
                    return Err(RuntimeError::Invalid(format!(
                        "{key} proposes no policy ({DIR}/{FILE})"
                    )))
                }
                Some(Err(why)) => return Err(RuntimeError::Invalid(why)),
                Some(Ok((_, d))) => d,
            };
            if now != digest {
                return Err(RuntimeError::Invalid(format!(
                    "{key}/{DIR}/{FILE} now has sha256 {now}, not {digest} as approved: look \
                     again (holon policy proposal)"
                )));
            }
        }
        let approval = ProposalApproval {
            workspace: key,
            digest,
            approved: approve,
        };
        let a = approval.clone();
        let change = move |all: &mut Vec<ProposalApproval>| {
            all.retain(|x| x.workspace != a.workspace);
            if a.approved {
                all.push(a.clone());
            }
        };
        let event = Event::PolicyProposalApproved(approval.clone());
        crate::runtime::host::mcp::record_in_list(&self.inner.store, APPROVED, change, event)
            .await?;
        Ok(approval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_proposal_is_read_as_one() -> std::io::Result<()> {
        let repo = tempfile::tempdir()?;
        let anchor = repo.path();
        assert!(read(anchor).is_none());
        std::fs::create_dir(anchor.join(DIR))?;
        let file = anchor.join(DIR).join(FILE);
        // A link is never followed, to a file or to the folder.
        std::os::unix::fs::symlink("/etc/passwd", &file)?;
        assert!(matches!(read(anchor), Some(Err(w)) if w.contains("is a link")));
        std::fs::remove_file(&file)?;
        // A FIFO is not waited on.
        let c = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap_or_default();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read(anchor), Some(Err(w)) if w.contains("not a regular file")));
        std::fs::remove_file(&file)?;
        std::fs::write(&file, "x".repeat(MAX_PART as usize + 1))?;
        assert!(matches!(read(anchor), Some(Err(w)) if w.contains("KiB")));
        std::fs::write(&file, "  \n")?;
        assert!(read(anchor).is_none());
        std::fs::write(&file, "Run the tests freely.\n")?;
        let (text, d) = read(anchor).and_then(Result::ok).unwrap_or_default();
        assert_eq!(text, "Run the tests freely.\n");
        // Only the approved text is in force.
        let mut ok = vec![ProposalApproval {
            workspace: anchor.display().to_string(),
            digest: d.clone(),
            approved: true,
        }];
        let p = part(anchor, &ok).map(|p| p.text);
        assert_eq!(p.as_deref(), Some("Run the tests freely.\n"));
        std::fs::write(&file, "Run anything freely.\n")?;
        assert_eq!(part(anchor, &ok), None);
        ok[0].workspace = "/elsewhere".into();
        assert_eq!(view(anchor, &ok).approved_digest, None);
        // The folder as a link is refused too.
        std::fs::remove_dir_all(anchor.join(DIR))?;
        std::os::unix::fs::symlink("/etc", anchor.join(DIR))?;
        assert!(matches!(read(anchor), Some(Err(w)) if w.contains("is a link")));
        Ok(())
    }
}
