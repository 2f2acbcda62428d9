//! What clients read from the store alone, the same whether a runtime
//! runs or not: the pages of an agent's history (its events,
//! `events.page`, and its transcript, `agent.transcript`), read-only and
//! bounded, and the answers built on them that the runtime and the
//! offline client share (`answer_reads`): listings, where an agent works,
//! its skills, and the default and workspace policies.

use std::path::PathBuf;

use crate::model::agent::AgentRecord;
use crate::model::approval::DefaultPolicy;
use crate::protocol::{AgentSummary, ApiError, Request, Response};
use crate::store::{Keyed, ReadCtx, Store, StoreError};

/// Who answers the requests read from the store alone: the running
/// runtime, or a one-shot command when none runs (`OfflineClient`). They
/// differ in how an agent is summarised (a runtime knows its providers).
pub(crate) trait StoreReader {
    fn store(&self) -> &Store;
    fn summarize(&self, rx: &ReadCtx, agent: &AgentRecord) -> Result<AgentSummary, ApiError>;
    fn agent_home(&self, agent_id: &str) -> PathBuf;
    /// The policy of every workspace without its own, and where it comes
    /// from (`holon policy`, else `[policy]`).
    fn default_policy(&self) -> DefaultPolicy;
    /// The user's home, for user-scope skills.
    fn user_home(&self) -> Option<PathBuf>;
}

/// A missing agent, said the same by every client.
fn no_agent(agent_id: &str) -> ApiError {
    crate::runtime::RuntimeError::UnknownAgent {
        agent_id: agent_id.to_owned(),
    }
    .into()
}

/// The requests whose `Domain` reads the store only (`agents.list`,
/// `agent.status`, `agent.transcript`, `events.page`, `approvals.list`,
/// `workspace.list`, `skills.list`, and a `runtime.policy` or
/// `workspace.policy` that changes nothing), answered from one read of
/// the store. Any other request was routed here by mistake
/// (`Request::misrouted`).
pub(crate) fn answer_reads(
    reader: &impl StoreReader,
    request: Request,
) -> Result<Response, ApiError> {
    let rx = reader.store().read()?;
    let agent = |id: &str| -> Result<AgentRecord, ApiError> {
        rx.agent::<AgentRecord>(id)?.ok_or_else(|| no_agent(id))
    };
    match request {
        Request::AgentsList {
            limit,
            cursor,
            query,
        } => crate::runtime::inspect::agents_page(
            &rx,
            limit,
            cursor.as_deref(),
            query.as_deref(),
            |a| reader.summarize(&rx, a),
        )
        .map(Response::AgentsList),
        Request::AgentStatus { agent_id } => {
            let mut s = reader.summarize(&rx, &agent(&agent_id)?)?;
            let home = reader.agent_home(&agent_id);
            crate::runtime::guidance::name_guidance(&mut s, &home);
            Ok(Response::AgentStatus(s))
        }
        Request::AgentTranscript { agent_id, limit } => {
            agent(&agent_id)?;
            Ok(Response::AgentTranscript(transcript_page(
                &rx, &agent_id, limit,
            )?))
        }
        Request::EventsPage {
            agent_id,
            from_seq,
            limit,
            kind,
        } => events_page(&rx, &agent_id, from_seq, limit, kind.as_deref())?
            .map(Response::EventsPage)
            .ok_or_else(|| no_agent(&agent_id)),
        Request::ApprovalsList {
            agent_id,
            include_answered,
        } => {
            // One agent's approvals: an agent that is not there is said.
            if let Some(id) = &agent_id {
                agent(id)?;
            }
            Ok(Response::ApprovalsList(
                crate::runtime::approvals::request::approvals_in(
                    &rx,
                    agent_id.as_deref(),
                    include_answered,
                )?,
            ))
        }
        Request::WorkspaceList { agent_id } => {
            let agent = agent(&agent_id)?;
            let home = reader.agent_home(&agent_id);
            let policy = reader.default_policy().policy;
            Ok(Response::WorkspaceList(
                crate::runtime::workspace::view::workspace_list(&rx, &agent, &home, &policy)?,
            ))
        }
        Request::SkillsList { agent_id } => {
            use crate::runtime::agents::skills;
            let agent = agent(&agent_id)?;
            let home = reader.agent_home(&agent_id);
            let policy = reader.default_policy().policy;
            let execution = crate::runtime::workspace::snapshot(&agent.workspaces, &home, &policy);
            let roots = skills::SkillRoots::of(
                &agent,
                home,
                &execution.workspace_anchor,
                reader.user_home(),
            );
            Ok(Response::SkillsList(skills::views(
                &skills::discover(&roots),
                &agent.skills,
            )))
        }
        Request::RuntimePolicy { change } if change.is_empty() => {
            Ok(Response::RuntimePolicy(reader.default_policy()))
        }
        Request::WorkspacePolicy {
            agent_id,
            workspace_id,
            change,
        } if change.is_empty() => {
            let agent = agent(&agent_id)?;
            let default = reader.default_policy().policy;
            Ok(Response::WorkspacePolicy(
                crate::runtime::approvals::policies::workspace_policy_of(
                    &agent,
                    &workspace_id,
                    &default,
                )?,
            ))
        }
        other => Err(other.misrouted()),
    }
}

/// `events.page`: up to `limit` (at most `MAX_PAGE`) of `agent_id`'s
/// events from `from_seq`, of one kind when given. `None` when there is no
/// such agent.
pub fn events_page(
    rx: &ReadCtx,
    agent_id: &str,
    from_seq: u64,
    limit: usize,
    kind: Option<&str>,
) -> Result<Option<crate::protocol::EventsPage>, crate::store::StoreError> {
    let Some(agent) = rx.agent::<AgentRecord>(agent_id)? else {
        return Ok(None);
    };
    let start = rx.ledger_start(agent_id)?;
    let (from, limit) = (from_seq.max(1), limit.clamp(1, crate::protocol::MAX_PAGE));
    let events = match kind {
        Some(k) => rx.events_of_kind(agent_id, k, from, limit)?,
        None => rx.events(agent_id, from, limit)?,
    };
    let next_seq = events.last().map_or(from, |e| e.event_seq + 1);
    let last_event_seq = rx.last_seq(agent_id)?;
    // The recorded losses this page spans (to the ledger's end when it
    // is the last page).
    let span_end = match events.len() < limit {
        true => last_event_seq,
        false => next_seq.saturating_sub(1),
    };
    let lost = agent
        .lost_events
        .iter()
        .filter(|r| r.to_seq >= from && r.from_seq <= span_end)
        .copied()
        .collect();
    Ok(Some(crate::protocol::EventsPage {
        events,
        next_seq,
        last_event_seq,
        pruned_before: crate::protocol::EventsPage::pruned_marker(from, start),
        lost,
    }))
}

/// `agent.transcript`: the newest `limit` entries (default 50, at most
/// 1,000), oldest first, each image named by its type with its data left
/// out.
pub fn transcript_page(
    rx: &ReadCtx,
    agent_id: &str,
    limit: Option<usize>,
) -> Result<crate::protocol::TranscriptPage, StoreError> {
    use crate::model::transcript::{TranscriptBody, TranscriptEntry};
    let limit = limit.unwrap_or(50).clamp(1, 1000);
    let mut entries: Vec<TranscriptEntry> =
        rx.list_recent(Keyed::Transcript, agent_id, limit + 1)?;
    let more = entries.len() > limit;
    if more {
        entries.remove(0);
    }
    for e in &mut entries {
        if let TranscriptBody::ToolResult { images, .. } = &mut e.body {
            images.iter_mut().for_each(|i| i.data.clear());
        }
    }
    Ok(crate::protocol::TranscriptPage {
        agent_id: agent_id.to_owned(),
        entries,
        more,
    })
}
