//! `holon policy proposal | adopt`: a repository's proposed reviewer
//! policy (`.holon/policy.md`), shown as written and approved by the
//! operator for its exact text. Both need the running runtime (it reads
//! the file as a review would, and records the approval).

use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use crate::model::review::{PolicyProposal, ProposalApproval};
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

async fn proposal(ctx: &Context, dir: Option<PathBuf>) -> anyhow::Result<PolicyProposal> {
    let workspace = super::mcp_cmd::project_dir(dir)?.display().to_string();
    let client = client(ctx).await?;
    Ok(crate::protocol::call_typed(&client, Request::PolicyProposal { workspace }).await?)
}

/// The proposal as the operator reads it: where, its state, its text
/// (anything that could act on the terminal escaped).
pub fn shown(p: &PolicyProposal) -> String {
    let state = match (&p.digest, &p.refused, p.in_force()) {
        (_, Some(why), _) => format!("refused: {}", escape_hidden(why)),
        (None, None, _) => "nothing proposed".to_owned(),
        (Some(_), _, true) => "approved: the reviewer reads it".to_owned(),
        (Some(_), _, false) if p.approved_digest.is_some() => {
            "changed since you approved it: the reviewer does not read it (holon policy adopt)"
                .to_owned()
        }
        (Some(_), _, false) => {
            "not approved: the reviewer does not read it (holon policy adopt)".to_owned()
        }
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

pub async fn show(ctx: &Context, dir: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let p = proposal(ctx, dir).await?;
    match json {
        true => say!("{}", serde_json::to_string_pretty(&p)?),
        false => say!("{}", shown(&p)),
    }
    Ok(ExitCode::SUCCESS)
}

/// The digest the operator approves: `--expect`, else the one shown,
/// confirmed on a terminal.
fn confirmed(p: &PolicyProposal, expect: Option<String>) -> anyhow::Result<String> {
    use std::io::{BufRead, IsTerminal, Write};
    let Some(digest) = &p.digest else {
        anyhow::bail!("{}", shown(p));
    };
    if let Some(e) = expect {
        return Ok(e);
    }
    let stdin = std::io::stdin();
    anyhow::ensure!(
        stdin.is_terminal(),
        "{}\napproving needs your confirmation: run this on a terminal, or pass --expect with \
         that sha256",
        shown(p)
    );
    eprint!("{}\nlet the reviewer follow this text? [y/N] ", shown(p));
    std::io::stderr().flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    anyhow::ensure!(matches!(answer.trim(), "y" | "Y" | "yes"), "not approved");
    Ok(digest.clone())
}

pub async fn adopt(
    ctx: &Context,
    dir: Option<PathBuf>,
    expect: Option<String>,
    revoke: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let p = proposal(ctx, dir).await?;
    let digest = match revoke {
        true => p.approved_digest.clone().ok_or_else(|| {
            anyhow::anyhow!("no proposal of {} is approved", escape_hidden(&p.workspace))
        })?,
        false => confirmed(&p, expect)?,
    };
    let request = Request::PolicyAdopt {
        workspace: p.workspace.clone(),
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
                true => "approved: the reviewer reads it while its text stays this",
                false => "no longer approved",
            },
            a.digest
        ),
    }
    Ok(ExitCode::SUCCESS)
}
