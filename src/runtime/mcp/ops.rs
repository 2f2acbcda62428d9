//! The operator's side of MCP servers: the list (`mcp.list`) and the
//! approval of a workspace's `.mcp.json` server (`mcp.approve`) and the
//! switching off and on of a server (`mcp.disable`), each kept in
//! the store as a setting and recorded as `mcp_server_approved` in every
//! agent's ledger, like the runtime's default policy. Offline, `holon mcp
//! approve` writes the same through `record_approval`. And what happens to
//! the servers (started, failed, stopped), recorded as the hub tells it.

use std::path::Path;

use crate::model::event::Provenance;
use crate::model::mcp::{McpApproval, McpServerInfo, McpSwitch};
use crate::model::review::McpServerReview;
use crate::protocol::events::{new_event, Event};
use crate::protocol::{ApiError, Request, Response};
use crate::runtime::handle::RuntimeHost;
use crate::runtime::RuntimeError;
use crate::store::{Store, StoreError};

/// Record what happens to the MCP servers as the hub tells it, until it
/// stops telling: each change in the ledgers of the agents it names (one
/// archived or gone since is skipped). A write that fails loses that
/// event only, and says so in the log.
pub(crate) async fn record_reports(
    store: Store,
    mut reports: tokio::sync::mpsc::UnboundedReceiver<crate::runtime::mcp::report::Report>,
) {
    use crate::model::agent::AgentRecord;
    use crate::runtime::mcp::report::Lifecycle;
    while let Some(report) = reports.recv().await {
        let event = match report.change {
            Lifecycle::Started(p) => Event::McpServerStarted(p),
            Lifecycle::Failed(p) => Event::McpServerFailed(p),
            Lifecycle::Stopped(p) => Event::McpServerStopped(p),
        };
        let agents = report.agents;
        let written = store
            .write(move |tx| {
                let provenance = Provenance {
                    source: Some("runtime".into()),
                    ..Provenance::default()
                };
                for agent_id in &agents {
                    let live = tx
                        .get_agent::<AgentRecord>(agent_id)?
                        .is_some_and(|a| a.archived_at.is_none());
                    if live {
                        let e = new_event(agent_id, provenance.clone(), event.clone());
                        tx.append_event(e)?;
                    }
                }
                Ok::<_, StoreError>(())
            })
            .await;
        if let Err(e) = written {
            tracing::warn!(error = %e, "an MCP server's change was not recorded");
        }
    }
}

/// The store setting holding every approval.
pub const MCP_APPROVALS: &str = "mcp_approvals";
/// The store setting holding the servers the operator disabled.
pub const MCP_DISABLED: &str = "mcp_disabled";

/// Change the list kept in setting `key` with `change`, and record
/// `event` in every agent's ledger, in one write. Returns the list now.
pub(crate) async fn record_in_list<T>(
    store: &Store,
    key: &'static str,
    change: impl Fn(&mut Vec<T>) + Send + 'static,
    event: Event,
) -> Result<Vec<T>, RuntimeError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
{
    record_in_list_by(store, key, change, event, "operator").await
}

/// `record_in_list`, said to come from `source` (`operator`, `reviewer`).
pub(crate) async fn record_in_list_by<T>(
    store: &Store,
    key: &'static str,
    change: impl Fn(&mut Vec<T>) + Send + 'static,
    event: Event,
    source: &'static str,
) -> Result<Vec<T>, RuntimeError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
{
    let all = store
        .write(move |tx| {
            let mut all: Vec<T> = tx.setting(key)?.unwrap_or_default();
            change(&mut all);
            tx.put_setting(key, Some(&all))?;
            let provenance = Provenance {
                source: Some(source.into()),
                ..Provenance::default()
            };
            for agent_id in tx.agent_ids()? {
                tx.append_event(new_event(&agent_id, provenance.clone(), event.clone()))?;
            }
            Ok::<_, StoreError>(all)
        })
        .await?;
    Ok(all)
}

/// Record `approval` (replacing an earlier one for the same server of the
/// same workspace). Returns every approval now recorded.
pub async fn record_approval(
    store: &Store,
    approval: McpApproval,
) -> Result<Vec<McpApproval>, RuntimeError> {
    record_approval_by(store, approval, "operator").await
}

/// `record_approval`, by `source` (`operator`, `reviewer`).
pub(crate) async fn record_approval_by(
    store: &Store,
    approval: McpApproval,
    source: &'static str,
) -> Result<Vec<McpApproval>, RuntimeError> {
    let event = Event::McpServerApproved(approval.clone());
    let change = move |all: &mut Vec<McpApproval>| {
        all.retain(|a| !(a.workspace == approval.workspace && a.name == approval.name));
        all.push(approval.clone());
    };
    record_in_list_by(store, MCP_APPROVALS, change, event, source).await
}

/// Record that the operator disabled (or enabled) a server. Returns every
/// server now disabled.
pub async fn record_switch(
    store: &Store,
    switch: McpSwitch,
) -> Result<Vec<McpSwitch>, RuntimeError> {
    let event = Event::McpServerSwitched(switch.clone());
    let change = move |all: &mut Vec<McpSwitch>| {
        all.retain(|a| !(a.workspace == switch.workspace && a.name == switch.name));
        if switch.disabled {
            all.push(switch.clone());
        }
    };
    record_in_list(store, MCP_DISABLED, change, event).await
}

/// The servers disabled in `store`.
pub fn disabled_in(store: &Store) -> Result<Vec<McpSwitch>, RuntimeError> {
    Ok(store.read()?.setting(MCP_DISABLED)?.unwrap_or_default())
}

/// `approval`, unless the operator was shown another command line.
pub fn same_line(approval: McpApproval, expected: Option<&str>) -> Result<McpApproval, String> {
    match expected {
        Some(e) if e != approval.command_line => Err(format!(
            "`{}` of .mcp.json now runs `{}`, not `{e}` as approved: look again (holon mcp list)",
            approval.name, approval.command_line
        )),
        _ => Ok(approval),
    }
}

/// The approvals recorded in `store`.
pub fn approvals_in(store: &Store) -> Result<Vec<McpApproval>, RuntimeError> {
    Ok(store.read()?.setting(MCP_APPROVALS)?.unwrap_or_default())
}

/// The store setting holding the reviewer's verdicts on project servers
/// (`approvals/reviewer_mcp.rs` records them).
pub const MCP_REVIEWS: &str = "mcp_reviews";

/// The reviewer's verdicts recorded in `store`.
pub fn reviews_in(store: &Store) -> Result<Vec<McpServerReview>, RuntimeError> {
    Ok(store.read()?.setting(MCP_REVIEWS)?.unwrap_or_default())
}

/// Mark the reviewer's verdicts on `switch`'s server acted on (the
/// operator's disable, recorded as `mcp_server_switched`, answered them).
async fn void_reviews(store: &Store, switch: &McpSwitch) -> Result<(), RuntimeError> {
    let s = switch.clone();
    store
        .write(move |tx| {
            let mut all: Vec<McpServerReview> = tx.setting(MCP_REVIEWS)?.unwrap_or_default();
            let mut changed = false;
            for r in &mut all {
                if Some(&r.workspace) == s.workspace.as_ref() && r.name == s.name && !r.acted {
                    r.acted = true;
                    changed = true;
                }
            }
            match changed {
                true => tx.put_setting(MCP_REVIEWS, Some(&all)),
                false => Ok(()),
            }
        })
        .await?;
    Ok(())
}

impl RuntimeHost {
    /// `mcp.list`, `mcp.approve` and `mcp.disable`.
    pub(crate) async fn answer_mcp(&self, request: Request) -> Result<Response, ApiError> {
        match request {
            Request::McpList { workspace } => Ok(Response::McpList(
                self.mcp_servers(workspace.as_deref().map(Path::new)),
            )),
            Request::McpApprove {
                name,
                workspace,
                command_line,
            } => Ok(Response::McpApprove(
                self.mcp_approve(Path::new(&workspace), &name, command_line.as_deref())
                    .await?,
            )),
            Request::McpDisable {
                name,
                workspace,
                disabled,
            } => Ok(Response::McpDisable(
                self.mcp_disable(workspace.as_deref().map(Path::new), &name, disabled)
                    .await?,
            )),
            other => Err(other.misrouted()),
        }
    }

    /// The MCP servers (reading `workspace`'s `.mcp.json` first, when
    /// given), their state and tools, and what the reviewer said of a
    /// project server's command line (`mcp.list`).
    pub fn mcp_servers(&self, workspace: Option<&Path>) -> Vec<McpServerInfo> {
        let mut views = self.inner.mcp().views(workspace);
        let reviews = reviews_in(&self.inner.store).unwrap_or_default();
        for v in &mut views {
            v.review = reviews
                .iter()
                .find(|r| {
                    Some(&r.workspace) == v.workspace.as_ref()
                        && r.name == v.name
                        && Some(&r.command_line) == v.command_line.as_ref()
                })
                .map(|r| {
                    let mut review = r.review.clone();
                    // Acted on (or voided): no hold is pending any more.
                    if r.acted {
                        review.runs_at = None;
                    }
                    review
                });
        }
        views
    }

    /// Approve server `name` of `workspace`'s `.mcp.json` to start, with
    /// the command line the file gives it now; with `expected`, only if
    /// that is still what it says (`mcp.approve`).
    pub async fn mcp_approve(
        &self,
        workspace: &Path,
        name: &str,
        expected: Option<&str>,
    ) -> Result<McpApproval, RuntimeError> {
        let approval = self
            .inner
            .mcp()
            .approval_for(workspace, name)
            .and_then(|a| same_line(a, expected))
            .map_err(RuntimeError::Invalid)?;
        let all = record_approval(&self.inner.store, approval.clone()).await?;
        self.inner.mcp().set_approvals(&all);
        Ok(approval)
    }

    /// Disable server `name` (of `workspace`'s `.mcp.json`, or the config
    /// file's), stopping it, or enable it again (`mcp.disable`).
    pub async fn mcp_disable(
        &self,
        workspace: Option<&Path>,
        name: &str,
        disabled: bool,
    ) -> Result<McpSwitch, RuntimeError> {
        let (switch, server) = self
            .inner
            .mcp()
            .switch_for(workspace, name, disabled)
            .map_err(RuntimeError::Invalid)?;
        let all = record_switch(&self.inner.store, switch.clone()).await?;
        self.inner.mcp().set_disabled(&all);
        if disabled {
            // A reviewer's allow not yet acted on is void: re-enabling the
            // server does not approve it.
            void_reviews(&self.inner.store, &switch).await?;
        }
        if let (true, Some(server)) = (disabled, server) {
            // Held first: a call waiting for the server cannot start it
            // again once it is stopped.
            server.hold(Some(crate::runtime::mcp::server::Phase::Disabled));
            server
                .stop(crate::model::mcp::McpStopReason::Disabled)
                .await;
        }
        Ok(switch)
    }
}
