//! The prompt frame's workspace-dependent context: the guidance loaded
//! from the agent home and the workspace anchor, and the execution block
//! (where the agent is, with one `git status`). Loaded at turn start and
//! reloaded after a round that moved the agent, so the model always sees
//! the root its tools now act in.

use std::path::PathBuf;
use std::sync::Arc;

use crate::model::trigger::IngressState;
use crate::model::trigger::IngressStatus;
use crate::model::workspace::ExecutionSnapshot;
use crate::model::workspace::WorkspaceMode;
use crate::model::workspace::AGENT_HOME_ID;
use crate::protocol::payloads::GuidanceSource;
use crate::runtime::context::memory::{self, MemoryFile};
use crate::runtime::guidance::{load_guidance, Guidance};
use crate::runtime::handle::HostInner;
use crate::runtime::RuntimeError;

pub(super) struct FrameContext {
    pub execution: ExecutionSnapshot,
    pub guidance: Vec<Guidance>,
    /// The working memory files (created when missing).
    pub memory: Vec<MemoryFile>,
    /// The skill catalog (metadata only).
    pub skills: Vec<crate::runtime::agents::skills::SkillEntry>,
    pub block: String,
}

impl FrameContext {
    pub(super) async fn load(
        inner: &Arc<HostInner>,
        agent_id: &str,
    ) -> Result<FrameContext, RuntimeError> {
        let execution = inner.execution_of(agent_id)?;
        let home = inner.agent_home(agent_id);
        let x = execution.clone();
        let host = crate::runtime::handle::RuntimeHost::from_inner(inner);
        let agent = inner.agent_record(agent_id)?;
        let catalog_host = host.clone();
        let (guidance, memory, block, skills) = tokio::task::spawn_blocking(move || {
            let anchor = PathBuf::from(&x.workspace_anchor);
            if let Err(e) = memory::ensure(&home) {
                tracing::warn!(home = %home.display(), error = %e, "cannot create the memory files");
            }
            (
                load_guidance(&home, &anchor),
                memory::load(&home),
                execution_block(&x),
                catalog_host.skill_catalog(&agent).unwrap_or_default(),
            )
        })
        .await
        .map_err(|e| RuntimeError::Invalid(format!("prompt frame assembly did not finish: {e}")))?;
        let url = host.trigger_url_for_prompt(agent_id).await?;
        let block = block + &trigger_block(&inner.ingress(), url.as_deref());
        Ok(FrameContext {
            execution,
            guidance,
            memory,
            skills,
            block,
        })
    }

    /// Reload when the agent now works somewhere else (one store read
    /// when it does not).
    pub(super) async fn refresh(
        &mut self,
        inner: &Arc<HostInner>,
        agent_id: &str,
    ) -> Result<(), RuntimeError> {
        let now = inner.execution_of(agent_id)?;
        if now != self.execution {
            *self = FrameContext::load(inner, agent_id).await?;
        }
        Ok(())
    }

    /// What `turn_started` records: the loaded sources, never the content.
    pub(super) fn guidance_sources(&self) -> Vec<GuidanceSource> {
        self.guidance.iter().map(|g| g.source.clone()).collect()
    }
}

/// The agent's wake URL, marked as the capability secret it is (spec
/// "Default External Ingress Flow"); empty when this process serves no
/// HTTP.
pub fn trigger_block(ingress: &IngressStatus, url: Option<&str>) -> String {
    match (ingress.state, url) {
        (IngressState::Off, _) => String::new(),
        (IngressState::Down, _) => format!(
            "\nExternal trigger: unavailable ({}).\n",
            ingress.describe()
        ),
        (IngressState::Listening, None) => {
            "\nExternal trigger: revoked by the operator; nothing outside can wake you.\n"
                .to_owned()
        }
        (IngressState::Listening, Some(url)) => format!(
            "\nExternal trigger URL (capability secret): {url}\n\
             An HTTP POST to it wakes you (optional JSON body fields `source`, `resource`, \
             `summary` are kept as provenance; the body never reaches you as a message). Do not \
             repeat, store or forward this URL unless the current task is configuring an external \
             system (CI, a webhook) to wake you. Before you wait for such a system, call \
             RecordExternalWait with the `source` and `external_ref` the delivery will name.\n"
        ),
    }
}

/// Where the agent is: workspace, roots, cwd, branch and whether the
/// checkout has changes (one `git status` per turn), and what is not
/// enforced, so the model neither guesses its location nor assumes a
/// sandbox.
pub fn execution_block(s: &ExecutionSnapshot) -> String {
    let mut out = String::from("Execution environment:\n");
    if s.workspace_id == AGENT_HOME_ID {
        out.push_str(&format!(
            "- workspace: agent_home (your own directory {}; no project attached — \
             UseWorkspace with a path to work on a repository)\n",
            s.execution_root
        ));
    } else {
        out.push_str(&format!(
            "- workspace: {} (project {})\n",
            s.workspace_id, s.workspace_anchor
        ));
        out.push_str(&format!("- execution root: {}\n", s.execution_root));
    }
    out.push_str(&format!("- current directory: {}\n", s.cwd));
    match (&s.worktree, s.mode) {
        (Some(w), _) => out.push_str(&format!(
            "- mode: isolated (managed worktree on branch {}, made from {})\n",
            w.worktree_branch,
            if w.original_branch.is_empty() {
                "a detached HEAD"
            } else {
                &w.original_branch
            }
        )),
        (None, WorkspaceMode::Isolated | WorkspaceMode::Direct) => {
            if s.workspace_id != AGENT_HOME_ID {
                out.push_str("- mode: direct (changes land in the project checkout itself)\n");
            }
        }
    }
    let git = (s.workspace_id != AGENT_HOME_ID)
        .then(|| {
            crate::runtime::workspace::git::short_status(std::path::Path::new(&s.execution_root))
        })
        .flatten();
    if let Some(st) = git {
        let dirty = match st.changed {
            0 => "clean".to_owned(),
            n => format!("{n} changed or untracked file(s)"),
        };
        out.push_str(&format!("- git: branch {}, {dirty}\n", st.branch));
    }
    out.push_str(
        "- paths: ApplyPatch paths and ExecCommand workdir are relative to the execution root \
         and may not leave it\n",
    );
    out.push_str(&format!("- commands: {}", s.policy.confinement_line()));
    out.push_str(&approval_line(&s.policy.approval));
    out
}

/// The approval gate in one line for the model: what waits for the
/// operator, and what never does.
fn approval_line(p: &crate::model::approval::ApprovalPolicy) -> String {
    use crate::model::approval::Approval;
    let what = match p.approval {
        Approval::Never => {
            return "\n- approvals (never): your tool calls run at once; nothing can run outside \
                    the sandbox"
                .to_owned()
        }
        Approval::OnRequest => {
            return "\n- approvals (on_request): your tool calls run at once; only a command you \
                    ask to run outside the sandbox (ExecCommand `escalate`) waits for the \
                    operator's approval"
                .to_owned()
        }
        Approval::OnWrite => "ApplyPatch and any ExecCommand that may write (all but plain read-only commands such as ls, cat, rg, git status/diff/log)",
        Approval::Always => "every ExecCommand and ApplyPatch",
    };
    let mut line = format!(
        "\n- approvals ({}): {what} waits for the operator's approval; the call returns          `awaiting_approval` and your turn ends — the answer comes back as a message",
        p.approval.as_str()
    );
    if !p.allow_commands.is_empty() {
        line.push_str(&format!(
            "; never asks for: {}",
            p.allow_commands.join(", ")
        ));
    }
    if !p.allow_paths.is_empty() {
        line.push_str(&format!(
            "; patches may write without asking under: {}",
            p.allow_paths.join(", ")
        ));
    }
    line
}
