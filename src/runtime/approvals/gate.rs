//! Where a tool call meets the approval gate: the one place that asks
//! whether a call waits for the operator. The tool decides what the gate
//! sees of it (`Tool::gate`: nothing, a command, the files a patch
//! writes); the workspace's policy decides whether that asks
//! (`policy::gate`, pure).

use crate::model::usage::ToolCall;
use crate::runtime::tools::{self, ToolEnv};
use crate::runtime::RuntimeError;

/// Whether the workspace's policy holds this call for the operator: the
/// reason and where it would run.
pub(crate) fn approval_needed(
    env: &ToolEnv<'_>,
    call: &ToolCall,
) -> Result<Option<(String, crate::model::workspace::ExecutionSnapshot)>, RuntimeError> {
    use crate::model::approval::Action;
    use crate::runtime::approvals::policy::{gate, Gate};
    if call.malformed_arguments.is_some() {
        return Ok(None);
    }
    let tools::Gated::By(action) = tools::gate_of(env.host, env.agent_id, call) else {
        return Ok(None);
    };
    let snapshot = env.host.execution_of(env.agent_id)?;
    // Where nothing is sandboxed there is nothing to leave: an escape is
    // gated as the command it is.
    let sandboxed = snapshot.policy.backend == crate::model::workspace::ExecutionProfile::Sandboxed;
    let action = match action {
        Action::Escape { cmd, .. } if !sandboxed => Action::Command(cmd),
        // Unconfined, a command reaches that directory already.
        Action::Workspace { .. } if !sandboxed => return Ok(None),
        // Refused by the tool before anyone is asked.
        Action::Escape { justification, .. } if justification.trim().is_empty() => return Ok(None),
        other => other,
    };
    Ok(match gate(&snapshot.policy.approval, &action) {
        Gate::Run => None,
        Gate::Ask(why) => Some((why, snapshot)),
    })
}
