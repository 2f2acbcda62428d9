//! Approvals, by concern: the record (`ApprovalRecord`, from the
//! vocabulary), the policy and its pure gate (`policy`), where a tool
//! call meets the gate (`gate`), asking (`request`: the record written
//! before anything runs), the operations that answer and run a call
//! (`ops`), the operator's policies of a workspace and of the runtime
//! (`policies`), and the reviewer model that may answer first (`review`,
//! `reviewer`, under the policy `written`). A gated call waits for the
//! operator as a durable record, not a prompt in one terminal: it
//! survives detach, attach and restart, and the first answer wins.

pub mod gate;
pub mod ops;
pub mod policies;
pub mod policy;
pub mod proposals;
pub mod read_only;
pub mod request;
pub mod review;
pub mod reviewer;
pub mod reviewer_mcp;
pub mod reviewer_state;
pub mod written;

/// The store setting that keeps the operator's default policy
/// (`holon policy`); absent: config `[policy]`.
pub const DEFAULT_POLICY: &str = "default_policy";
