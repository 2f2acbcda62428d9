//! `holon policy proposal | adopt` and `holon hooks proposal | adopt`:
//! what a repository proposes under `.holon/` (a reviewer policy, hooks),
//! shown as written and approved by the operator for its exact text. Both
//! need the running runtime (it reads the file as it would use it, and
//! records the approval).

use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use crate::model::proposal::{Proposal, ProposalApproval, ProposalKind};
use crate::model::text::escape_hidden;
use crate::protocol::Request;

async fn client(ctx: &Context) -> anyhow::Result<crate::ui::client::SocketClient> {
    super::daemon::connect(ctx).await.ok_or_else(|| {
        anyhow::anyhow!(
            "no runtime is running: it reads the proposal as the reviewer would and records \
             your approval; start it with `holon --detach`"
        )
    })
}

async fn proposal(
    ctx: &Context,
    kind: ProposalKind,
    dir: Option<PathBuf>,
) -> anyhow::Result<Proposal> {
    let workspace = super::mcp_cmd::project_dir(dir)?.display().to_string();
    let client = client(ctx).await?;
    let request = Request::ProposalShow { workspace, kind };
    Ok(crate::protocol::call_typed(&client, request).await?)
}

/// The proposal as the operator reads it: where, its state, its text
/// (anything that could act on the terminal escaped).
pub fn shown(p: &Proposal) -> String {
    let (used, adopt) = match p.kind {
        ProposalKind::Policy => ("the reviewer reads it", "holon policy adopt"),
        ProposalKind::Hooks => ("its hooks run, sandboxed", "holon hooks adopt"),
    };
    let unused = used
        .replace("reads it", "does not read it")
        .replace("run,", "do not run,");
    let state = match (&p.digest, &p.refused, p.in_force()) {
        (_, Some(why), _) => format!("refused: {}", escape_hidden(why)),
        (None, None, _) => "nothing proposed".to_owned(),
        (Some(_), _, true) => format!("approved: {used}"),
        (Some(_), _, false) if p.approved_digest.is_some() => {
            format!("changed since you approved it: {unused} ({adopt})")
        }
        (Some(_), _, false) => format!("not approved: {unused} ({adopt})"),
    };
    let mut out = format!("{}\n{state}", escape_hidden(&p.file));
    if let (Some(d), Some(text)) = (&p.digest, &p.text) {
        out.push_str(&format!("\nsha256 {d}\n\n"));
        for line in text.lines() {
            out.push_str(&format!("  | {}\n", escape_hidden(line)));
        }
    }
    out.trim_end().to_owned()
}

pub async fn show(
    ctx: &Context,
    kind: ProposalKind,
    args: &super::cli::ProposalArgs,
) -> anyhow::Result<ExitCode> {
    let p = proposal(ctx, kind, args.dir.clone()).await?;
    match args.json {
        true => say!("{}", serde_json::to_string_pretty(&p)?),
        false => say!("{}", shown(&p)),
    }
    Ok(ExitCode::SUCCESS)
}

/// The digest the operator approves: `--expect`, else the one shown,
/// confirmed on a terminal.
fn confirmed(p: &Proposal, expect: Option<String>) -> anyhow::Result<String> {
    let (Some(digest), None) = (&p.digest, &p.refused) else {
        anyhow::bail!("{}", shown(p));
    };
    if let Some(e) = expect {
        return Ok(e);
    }
    let ask = match p.kind {
        ProposalKind::Policy => "let the reviewer follow this text?",
        ProposalKind::Hooks => "let these hooks run (sandboxed, no network)?",
    };
    super::mcp_cmd::yes_on_terminal(&shown(p), ask, "that sha256")?;
    Ok(digest.clone())
}

pub async fn adopt(
    ctx: &Context,
    kind: ProposalKind,
    args: &super::cli::AdoptArgs,
) -> anyhow::Result<ExitCode> {
    let (revoke, json) = (args.revoke, args.json);
    let p = proposal(ctx, kind, args.dir.clone()).await?;
    let digest = match revoke {
        true => p.approved_digest.clone().ok_or_else(|| {
            anyhow::anyhow!("no proposal of {} is approved", escape_hidden(&p.workspace))
        })?,
        false => confirmed(&p, args.expect.clone())?,
    };
    let request = Request::ProposalAdopt {
        workspace: p.workspace.clone(),
        kind,
        digest,
        approved: !revoke,
    };
    let client = client(ctx).await?;
    let a: ProposalApproval = crate::protocol::call_typed(&client, request).await?;
    match json {
        true => say!("{}", serde_json::to_string_pretty(&a)?),
        false => say!(
            "{} {} (sha256 {})",
            escape_hidden(&p.file),
            match a.approved {
                true => "approved, while its text stays this",
                false => "no longer approved",
            },
            a.digest
        ),
    }
    Ok(ExitCode::SUCCESS)
}
