//! The operator's approval policies on `RuntimeHost`: a workspace's own
//! (`workspace.policy`: set, forget a rule, return to the runtime's) and
//! the runtime's default for every workspace without one
//! (`runtime.policy`, kept in the store over config `[policy]`). Each
//! change is one store transaction with its event; a read changes
//! nothing.

use crate::model::agent::AgentRecord;
use crate::model::approval::PolicyChange;
use crate::model::event::Provenance;
use crate::model::workspace::AGENT_HOME_ID;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::agent::agent_in;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::RuntimeError;
use crate::runtime::WorkspaceError;
use crate::store::StoreError;

impl RuntimeHost {
    /// Set a workspace's approval policy (or return it to the runtime's);
    /// answers what applies now.
    pub async fn set_workspace_policy(
        &self,
        agent_id: &str,
        workspace_id: &str,
        change: PolicyChange,
    ) -> Result<ev::WorkspacePolicyChanged, RuntimeError> {
        let (id, wid) = (agent_id.to_owned(), workspace_id.to_owned());
        let runtime = self.inner.default_policy();
        let changed = self
            .inner
            .store
            .write(move |tx| {
                let mut agent: AgentRecord = agent_in(tx, &id)?;
                known(&agent, &wid).map_err(StoreError::rejected)?;
                // No change asked for: a read, which must not turn the
                // inherited policy into a copy of its own.
                if change.is_empty() {
                    return Ok(in_force(&agent, &wid, &runtime));
                }
                // A rule to forget is the workspace's "always" rule, else
                // an entry of its own policy; one from the runtime's
                // default is forgotten there (or this workspace would
                // stop following the default).
                let mut change = change.clone();
                let always = agent.workspaces.always.entry(wid.clone()).or_default();
                change.forget.retain(|rule| !always.forget(rule.trim()));
                if always.is_empty() {
                    agent.workspaces.always.remove(&wid);
                }
                let own = agent.workspaces.policies.get(&wid);
                if let Some(rule) = change.forget.first().filter(|_| own.is_none()) {
                    let rule = rule.trim();
                    let shown = crate::model::text::escape_hidden(rule);
                    let why = match runtime.clone().forget(rule) {
                        true => format!(
                            "`{shown}` is in the runtime's default policy, which {wid} follows: \
                             holon policy --forget={}",
                            crate::model::text::shell_word(rule)
                        ),
                        false => format!("no rule `{shown}` in {wid}"),
                    };
                    return Err(StoreError::rejected(RuntimeError::Invalid(why)));
                }
                let next = match change.is_empty() {
                    // Only "always" rules were forgotten: the policy stays.
                    true => own.cloned(),
                    false => change
                        .apply(own, &runtime)
                        .map_err(|m| StoreError::rejected(RuntimeError::Invalid(m)))?,
                };
                // A reset forgets what "always" allowed here too.
                if change.reset {
                    agent.workspaces.always.remove(&wid);
                }
                match next {
                    Some(p) => {
                        agent.workspaces.policies.insert(wid.clone(), p);
                    }
                    None => {
                        agent.workspaces.policies.remove(&wid);
                    }
                }
                tx.put_agent(&id, &agent)?;
                let changed = in_force(&agent, &wid, &runtime);
                tx.append_event(new_event(
                    &id,
                    Provenance::default(),
                    Event::WorkspacePolicyChanged(changed.clone()),
                ))?;
                Ok(changed)
            })
            .await?;
        Ok(changed)
    }

    /// The runtime's default policy (every workspace without its own), or
    /// a change to it: kept in the store over config `[policy]` until
    /// `reset`. Every agent's ledger records `default_policy_changed`; it
    /// applies from each agent's next tool call.
    pub async fn default_policy(
        &self,
        change: PolicyChange,
    ) -> Result<crate::model::approval::DefaultPolicy, RuntimeError> {
        use crate::model::approval::{DefaultPolicy, DefaultPolicySource};
        use crate::runtime::approvals::DEFAULT_POLICY;
        let inner = &self.inner;
        let _one = inner.default_policy_change.lock().await;
        if change.is_empty() {
            return Ok(inner
                .default_policy
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone());
        }
        let config = inner.config.policy.clone();
        let before = inner
            .default_policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let host = std::sync::Arc::clone(inner);
        let written = inner
            .store
            .write(move |tx| {
                let current: Option<crate::model::approval::ApprovalPolicy> =
                    tx.setting(DEFAULT_POLICY)?;
                let next = change
                    .apply(current.as_ref(), &config)
                    .map_err(|m| StoreError::rejected(RuntimeError::Invalid(m)))?;
                tx.put_setting(DEFAULT_POLICY, next.as_ref())?;
                let now = match next {
                    Some(policy) => DefaultPolicy {
                        policy,
                        source: DefaultPolicySource::Operator,
                    },
                    None => DefaultPolicy {
                        policy: config.clone(),
                        source: DefaultPolicySource::Config,
                    },
                };
                let provenance = Provenance {
                    source: Some("operator".into()),
                    ..Provenance::default()
                };
                for agent_id in tx.agent_ids()? {
                    tx.append_event(new_event(
                        &agent_id,
                        provenance.clone(),
                        Event::DefaultPolicyChanged(now.clone()),
                    ))?;
                }
                // In force before the commit tells anyone: a client that
                // refreshes on the event reads the new policy.
                *host
                    .default_policy
                    .write()
                    .unwrap_or_else(|p| p.into_inner()) = now.clone();
                Ok(now)
            })
            .await;
        if written.is_err() {
            // Not committed: what was in force still is.
            *inner
                .default_policy
                .write()
                .unwrap_or_else(|p| p.into_inner()) = before;
        }
        Ok(written?)
    }
}

/// The `workspace_policy_changed` that says what is in force in `wid`
/// now: its own policy or the runtime's `default`, with "always" rules.
pub(super) fn in_force(
    agent: &AgentRecord,
    wid: &str,
    default: &crate::model::approval::ApprovalPolicy,
) -> ev::WorkspacePolicyChanged {
    let (policy, source) = agent.workspaces.policy_in_force(wid, default);
    ev::WorkspacePolicyChanged {
        workspace_id: wid.to_owned(),
        policy,
        source,
        always: agent
            .workspaces
            .always
            .get(wid)
            .cloned()
            .unwrap_or_default(),
    }
}

/// Refused unless `wid` is the agent's home or one of its workspaces.
fn known(agent: &AgentRecord, wid: &str) -> Result<(), RuntimeError> {
    match wid == AGENT_HOME_ID || agent.workspaces.binding(wid).is_some() {
        true => Ok(()),
        false => Err(RuntimeError::Workspace(WorkspaceError::Unknown {
            workspace_id: wid.to_owned(),
        })),
    }
}

/// `workspace.policy` with no change: what is in force in `wid` now, read
/// from the agent's record as `set_workspace_policy` answers it.
pub(crate) fn workspace_policy_of(
    agent: &AgentRecord,
    wid: &str,
    default: &crate::model::approval::ApprovalPolicy,
) -> Result<ev::WorkspacePolicyChanged, RuntimeError> {
    known(agent, wid)?;
    Ok(in_force(agent, wid, default))
}
