//! The operator's side of what repositories propose (`proposal.show`,
//! `proposal.adopt`): a proposal shown as written, approved for its exact
//! text (kept as a store setting and recorded as `proposal_approved` in
//! every agent's ledger, like a `.mcp.json` server's approval); and the
//! part an approved `.holon/policy.md` adds to the reviewer's policy.

use std::path::Path;

use super::written::Part;
use crate::model::proposal::{Proposal, ProposalApproval, ProposalKind};
use crate::protocol::events::Event;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::proposal::{approved_in, read, view, APPROVED, DIR};
use crate::runtime::RuntimeError;

/// Why a text of `kind` cannot be used, beyond reading.
fn usable(kind: ProposalKind) -> fn(&str) -> Result<(), String> {
    match kind {
        ProposalKind::Policy => |_| Ok(()),
        ProposalKind::Hooks => |text| crate::runtime::hooks::project::parse(text, "-").map(|_| ()),
    }
}

/// `anchor`'s proposal of `kind`, read now, against `approved`.
pub fn proposal_in(anchor: &Path, kind: ProposalKind, approved: &[ProposalApproval]) -> Proposal {
    view(anchor, kind, approved, usable(kind))
}

/// The part `anchor`'s proposed policy adds to the reviewer's: only its
/// approved text.
pub fn policy_part(anchor: &Path, approved: &[ProposalApproval]) -> Option<Part> {
    let v = proposal_in(anchor, ProposalKind::Policy, approved);
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
    /// `workspace`'s proposal of `kind`, and whether it is in force
    /// (`proposal.show`).
    pub fn proposal(&self, workspace: &Path, kind: ProposalKind) -> Result<Proposal, RuntimeError> {
        Ok(proposal_in(
            workspace,
            kind,
            &approved_in(&self.inner.store)?,
        ))
    }

    /// Approve `workspace`'s proposal of `kind` for the text whose digest
    /// is `digest`, refused unless the file has exactly that text now and
    /// it can be used; or, with `approve` false, withdraw the approval
    /// (`proposal.adopt`).
    pub async fn adopt_proposal(
        &self,
        workspace: &Path,
        kind: ProposalKind,
        digest: &str,
        approve: bool,
    ) -> Result<ProposalApproval, RuntimeError> {
        let key = workspace.display().to_string();
        let digest = digest.trim().to_ascii_lowercase();
        if approve {
            let file = kind.file();
            let now = match read(workspace, kind) {
                None => {
                    return Err(RuntimeError::Invalid(format!(
                        "{key} proposes no {} ({DIR}/{file})",
                        kind.as_str()
                    )))
                }
                Some(Err(why)) => return Err(RuntimeError::Invalid(why)),
                Some(Ok((text, d))) => {
                    usable(kind)(&text).map_err(RuntimeError::Invalid)?;
                    d
                }
            };
            if now != digest {
                return Err(RuntimeError::Invalid(format!(
                    "{key}/{DIR}/{file} now has sha256 {now}, not {digest} as approved: look \
                     again (holon {} proposal)",
                    kind.as_str()
                )));
            }
        }
        let approval = ProposalApproval {
            kind,
            workspace: key,
            digest,
            approved: approve,
        };
        let a = approval.clone();
        let change = move |all: &mut Vec<ProposalApproval>| {
            all.retain(|x| !(x.workspace == a.workspace && x.kind == a.kind));
            if a.approved {
                all.push(a.clone());
            }
        };
        let event = Event::ProposalApproved(approval.clone());
        crate::runtime::mcp::ops::record_in_list(&self.inner.store, APPROVED, change, event)
            .await?;
        Ok(approval)
    }
}
