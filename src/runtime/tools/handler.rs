//! Tools as handlers. Every tool the model can call is one type that
//! implements [`Tool`]: its name, description and typed arguments (whose
//! JSON Schema is generated), what the approval gate sees of a call, how
//! far its effects reach, and the call itself. One table, [`TOOLS`], lists
//! them in the order the model sees them; the catalog, the gate and the
//! dispatch all read that table, so there is no second list to forget.
//!
//! `gate` and `reach` have no default: a new tool does not compile until
//! its author has decided whether its calls wait for the operator and
//! what the sandbox must confine. Tools whose names are only known at run
//! time (servers the operator configures) implement [`DynTool`] directly,
//! which has the same two required decisions.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::host::ToolHost;
use super::{parse_args, spec, ToolEnv};
use crate::model::approval::Action;
use crate::model::usage::ToolCall;
use crate::model::BoxFuture;
use crate::runtime::provider::ToolSpec;
use crate::runtime::tool_outcome::ToolOutcome;

/// What the approval gate sees of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gated {
    /// Runs under every policy: a read, or Holon's own bookkeeping.
    No,
    /// May change the world outside Holon: the workspace's approval
    /// policy decides whether it waits for the operator.
    By(Action),
}

/// How far a tool's effects reach, which decides what the sandbox must
/// confine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Only through Holon's own operations: the store, tasks and agents it
    /// already supervises. Nothing for the sandbox to confine; never gated.
    Runtime,
    /// Writes files from Holon's own process (ApplyPatch): held to the
    /// sandbox's write roots in process.
    Files,
    /// Starts a process for the model (ExecCommand): the kernel confines
    /// it and everything it starts.
    Process,
    /// Moves the roots the sandbox lets commands write (UseWorkspace): a
    /// directory no one attached is leaving the sandbox, and asks.
    Roots,
}

/// A built-in tool: one handler per tool name.
pub(crate) trait Tool: Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    type Args: DeserializeOwned + JsonSchema + Send;

    /// What the approval gate sees of a call with these arguments. No
    /// default: a tool that writes must say so.
    fn gate(&self, args: &Self::Args) -> Gated;

    /// What the gate sees of a call for this agent, when that depends on
    /// the agent's state (where it works now, what is attached); else
    /// `gate`.
    fn gate_in(&self, _host: &dyn ToolHost, _agent_id: &str, args: &Self::Args) -> Gated {
        self.gate(args)
    }

    /// How far the tool's effects reach. No default, for the same reason.
    fn reach(&self) -> Reach;

    /// The catalog entry; ApplyPatch overrides it to be freeform.
    fn spec(&self) -> ToolSpec {
        spec::<Self::Args>(Self::NAME, Self::DESCRIPTION)
    }

    /// Run one call whose arguments parsed.
    fn call(&self, env: &ToolEnv<'_>, args: Self::Args)
        -> impl Future<Output = ToolOutcome> + Send;
}

/// A tool as the registry holds it: arguments still JSON.
pub(crate) trait DynTool: Send + Sync {
    fn name(&self) -> &str;
    fn spec(&self) -> ToolSpec;
    fn reach(&self) -> Reach;
    /// What the gate sees of this call; an error when its arguments do not
    /// parse (nothing then runs, and nothing needs approving).
    fn gate(&self, call: &ToolCall) -> Result<Gated, ToolOutcome>;
    /// As `gate`, for this agent as it stands.
    fn gate_in(
        &self,
        host: &dyn ToolHost,
        agent_id: &str,
        call: &ToolCall,
    ) -> Result<Gated, ToolOutcome> {
        let _ = (host, agent_id);
        self.gate(call)
    }
    fn run<'a>(&'a self, env: &'a ToolEnv<'a>, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome>;
}

impl<T: Tool> DynTool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn spec(&self) -> ToolSpec {
        Tool::spec(self)
    }

    fn reach(&self) -> Reach {
        Tool::reach(self)
    }

    fn gate(&self, call: &ToolCall) -> Result<Gated, ToolOutcome> {
        Ok(Tool::gate(self, &parse_args::<T::Args>(call)?))
    }

    fn gate_in(
        &self,
        host: &dyn ToolHost,
        agent_id: &str,
        call: &ToolCall,
    ) -> Result<Gated, ToolOutcome> {
        Ok(Tool::gate_in(
            self,
            host,
            agent_id,
            &parse_args::<T::Args>(call)?,
        ))
    }

    fn run<'a>(&'a self, env: &'a ToolEnv<'a>, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match parse_args::<T::Args>(call) {
                Ok(args) => self.call(env, args).await,
                Err(refused) => refused,
            }
        })
    }
}

use super::{
    agents, attach, exec, exec_batch, memory, patch, sleep, tasks, waits, work, workspace,
};

/// Every built-in tool, in the order the model's catalog lists them.
pub(crate) static TOOLS: &[&dyn DynTool] = &[
    &exec::ExecCommand,
    &exec_batch::ExecCommandBatch,
    &tasks::TaskStatus,
    &tasks::TaskOutput,
    &tasks::TaskInput,
    &tasks::TaskStop,
    &patch::ApplyPatch,
    &attach::AttachToBrief,
    &work::CreateWorkItem,
    &work::PickWorkItem,
    &work::UpdateWorkItem,
    &work::CompleteWorkItem,
    &work::GetWorkItem,
    &work::ListWorkItems,
    &sleep::Sleep,
    &waits::RecordExternalWait,
    &waits::CancelExternalWait,
    &workspace::UseWorkspace,
    &memory::MemorySearch,
    &memory::MemoryGet,
    &agents::SpawnAgent,
    &agents::AgentGet,
];

/// The tool of that name.
pub(crate) fn find(name: &str) -> Option<&'static dyn DynTool> {
    TOOLS.iter().copied().find(|t| t.name() == name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
            malformed_arguments: None,
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        for t in TOOLS {
            let found = find(t.name()).map(|f| f.name());
            assert_eq!(found, Some(t.name()));
            assert_eq!(t.spec().name, t.name());
        }
        assert!(find("NoSuchTool").is_none());
    }

    #[test]
    fn only_tools_that_reach_past_the_runtime_are_gated() {
        let reaching: Vec<&str> = TOOLS
            .iter()
            .filter(|t| t.reach() != Reach::Runtime)
            .map(|t| t.name())
            .collect();
        assert_eq!(
            reaching,
            [
                "ExecCommand",
                "ExecCommandBatch",
                "ApplyPatch",
                "UseWorkspace"
            ]
        );
    }

    #[test]
    fn commands_and_patches_are_gated_by_what_they_do() {
        let exec = find("ExecCommand").map(|t| t.gate(&call("ExecCommand", json!({"cmd": "ls"}))));
        assert_eq!(exec, Some(Ok(Gated::By(Action::Command("ls".into())))));
        // In a terminal a pager can be driven once it runs: never read-only.
        let tty = find("ExecCommand")
            .map(|t| t.gate(&call("ExecCommand", json!({"cmd": "git log", "tty": true}))));
        assert_eq!(
            tty,
            Some(Ok(Gated::By(Action::Command(
                "git log (in a terminal)".into()
            ))))
        );
        let policy = crate::model::approval::ApprovalPolicy {
            approval: crate::model::approval::Approval::OnWrite,
            ..Default::default()
        };
        assert!(matches!(
            crate::runtime::approvals::policy::gate(
                &policy,
                &Action::Command("git log (in a terminal)".into())
            ),
            crate::runtime::approvals::policy::Gate::Ask(_)
        ));
        let patch = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n";
        let apply =
            find("ApplyPatch").map(|t| t.gate(&call("ApplyPatch", json!({"patch": patch}))));
        assert_eq!(
            apply,
            Some(Ok(Gated::By(Action::Write(vec!["new.txt".into()]))))
        );
        // A patch that does not parse is refused by the tool itself.
        let bad = find("ApplyPatch").map(|t| t.gate(&call("ApplyPatch", json!({"patch": "x"}))));
        assert_eq!(bad, Some(Ok(Gated::No)));
        let read = find("ListWorkItems").map(|t| t.gate(&call("ListWorkItems", json!(null))));
        assert_eq!(read, Some(Ok(Gated::No)));
    }

    #[test]
    fn arguments_that_do_not_parse_gate_nothing_and_say_why() {
        let refused = find("ExecCommand")
            .map(|t| t.gate(&call("ExecCommand", json!({"command": "ls"}))))
            .and_then(Result::err);
        let content = refused.map(|o| o.content["kind"].clone());
        assert_eq!(content, Some(json!("invalid_arguments")));
    }
}
