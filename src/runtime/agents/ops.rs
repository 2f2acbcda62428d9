//! Agent identity operations: creating a named agent from a template (all
//! or nothing), archiving, the default agent's home at start, and the
//! skill catalog an agent sees (spec "Agent Identity And Visibility",
//! "Agent Initialization" and "Skill Discovery" contracts).

use std::path::PathBuf;

use crate::model::agent::AgentKind;
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::agent::AgentVisibility;
use crate::model::agent::ProfilePreset;
use crate::model::event::Provenance;
use crate::model::ids::validate_agent_id;
use crate::model::workspace::AgentWorkspaces;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::runtime::agent::agent_in;
use crate::runtime::agents::skills::{self, SkillEntry, SkillRoots};
use crate::runtime::agents::templates;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::RuntimeError;
use crate::store::{StoreError, WriteCtx};

/// What a new named agent is made from.
#[derive(Debug, Clone, Default)]
pub struct NewAgent {
    pub agent_id: String,
    /// A template id, an absolute directory or a GitHub URL; `holon-default`
    /// when absent.
    pub template: Option<String>,
    /// The creating agent (SpawnAgent `public_named`): lineage only.
    pub lineage_parent_agent_id: Option<String>,
    /// Attached workspaces to start with (the caller's set, never its
    /// active entry).
    pub workspaces: Option<AgentWorkspaces>,
}

/// Archive inside a write job: stopped, marked archived, `agent_archived`.
/// Archiving twice is a no-op.
pub(crate) fn archive_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    reason: &str,
) -> Result<AgentRecord, StoreError> {
    let mut agent = agent_in(tx, agent_id)?;
    if agent.archived_at.is_some() {
        return Ok(agent);
    }
    let before = agent.status;
    agent.status = AgentStatus::Stopped;
    agent.archived_at = Some(tx.now_ts());
    tx.put_agent(agent_id, &agent)?;
    let archived = ev::AgentArchived {
        status_before: before,
        reason: reason.to_owned(),
        supervision_task_id: agent.supervision_task_id.clone(),
    };
    tx.append_event(new_event(
        agent_id,
        Provenance::default(),
        Event::AgentArchived(archived),
    ))?;
    Ok(agent)
}

impl RuntimeHost {
    /// Where template ids are looked up: the seeded builtins under the
    /// data directory, then the user's `~/.agents/templates` (read only).
    pub fn template_search(&self) -> Vec<PathBuf> {
        let mut v = vec![self.inner.config.data_dir.join("templates")];
        if let Some(h) = &self.inner.config.user_home {
            v.push(h.join(".agents").join("templates"));
        }
        v
    }

    /// Seed the builtin templates and give the default agent the layout
    /// and `AGENTS.md` of `holon-default` where they are missing. A failure
    /// is logged: the runtime still starts.
    pub(crate) async fn prepare_default_agent(&self) {
        let dir = self.inner.config.data_dir.join("templates");
        let home = self.inner.agent_home(&self.inner.config.default_agent);
        let search = self.template_search();
        let done = tokio::task::spawn_blocking(move || {
            templates::seed_builtin(&dir)?;
            let t = templates::resolve(templates::DEFAULT_TEMPLATE, &search)?;
            templates::fill_missing(&home, &t)
        })
        .await;
        match done {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot prepare the default agent's home"),
            Err(e) => {
                tracing::warn!(error = %e, "preparing the default agent's home did not finish")
            }
        }
    }

    /// Create a public, self-owned named agent from a template, all or
    /// nothing: a taken id, an unknown or broken template, or a failed
    /// write leaves no record and no home behind.
    pub async fn create_named_agent(&self, req: NewAgent) -> Result<AgentRecord, RuntimeError> {
        validate_agent_id(&req.agent_id).map_err(RuntimeError::InvalidAgentId)?;
        let id = req.agent_id.clone();
        if self
            .inner
            .store
            .read()?
            .agent::<AgentRecord>(&id)?
            .is_some()
        {
            return Err(crate::runtime::admission::agent_exists(&id));
        }
        let selector = req
            .template
            .clone()
            .unwrap_or_else(|| templates::DEFAULT_TEMPLATE.to_owned());
        let search = self.template_search();
        let home = self.inner.agent_home(&id);
        let now = crate::format_ts(crate::now_ms());
        let h = home.clone();
        let provenance = tokio::task::spawn_blocking(move || {
            let t = templates::resolve(&selector, &search)?;
            templates::create_home(&h, &t, &now)
        })
        .await
        .map_err(|e| RuntimeError::Invalid(format!("agent creation did not finish: {e}")))?
        .map_err(|e| RuntimeError::Invalid(e.to_string()))?;
        let mut record = AgentRecord::new(&id, crate::format_ts(crate::now_ms()));
        record.kind = if id == self.inner.config.default_agent {
            AgentKind::Default
        } else {
            AgentKind::Named
        };
        record.profile_preset = Some(ProfilePreset::PublicNamed);
        record.lineage_parent_agent_id = req.lineage_parent_agent_id.clone();
        if let Some(w) = req.workspaces {
            record.workspaces = w;
        }
        let r = record.clone();
        let written = self
            .inner
            .store
            .write(move |tx| {
                crate::runtime::admission::create_agent_in(tx, &r, Some(provenance.clone()))
            })
            .await;
        if let Err(e) = written {
            // Nothing acknowledged: take the new home back out.
            let _ = std::fs::remove_dir_all(&home);
            return Err(e.into());
        }
        self.spawn_actor(&id);
        Ok(record)
    }

    /// Archive an agent: it stops (a running turn is cancelled), leaves the
    /// listings and runs nothing more; records and ledger stay. Its live
    /// children's supervising tasks are stopped first. The default agent
    /// cannot be archived.
    pub async fn archive_agent(
        &self,
        agent_id: &str,
        reason: &str,
    ) -> Result<AgentRecord, RuntimeError> {
        if agent_id == self.inner.config.default_agent {
            return Err(RuntimeError::Invalid(format!(
                "`{agent_id}` is the default agent and cannot be archived"
            )));
        }
        let agent = self.inner.agent_record(agent_id)?;
        // A supervised child is archived through its parent's task, so the
        // parent learns it ended.
        if let Some(task) = self.live_supervision(&agent) {
            let parent = agent.lineage_parent_agent_id.clone().unwrap_or_default();
            self.stop_child(&parent, &task, "stopped: archived by the operator")
                .await?;
            return self.inner.agent_record(agent_id);
        }
        for (child, task) in self.live_children(agent_id)? {
            if let Err(e) = self
                .stop_child(agent_id, &task, "stopped: its parent was archived")
                .await
            {
                tracing::warn!(%child, error = %e, "cannot stop a child of an archived agent");
            }
        }
        // Nothing of it keeps running: its command tasks stop too.
        self.stop_command_tasks(agent_id).await;
        let (id, why) = (agent_id.to_owned(), reason.to_owned());
        let agent = self
            .inner
            .store
            .write(move |tx| archive_in(tx, &id, &why))
            .await?;
        if let Some(a) = self.inner.actors().get(agent_id) {
            a.cancel
                .request(crate::protocol::payloads::CancelReason::AgentStopped);
        }
        self.wake(agent_id);
        Ok(agent)
    }

    /// Stop every running command task of an agent that is ending
    /// (archived, or a child stopped through its task).
    pub(super) async fn stop_command_tasks(&self, agent_id: &str) {
        for t in self.inner.tasks().live_ids(agent_id) {
            let grace = self.inner.config.stop_grace;
            if let Err(e) = self.inner.tasks().stop(agent_id, &t, grace).await {
                tracing::warn!(agent_id, task = %t, error = %e, "cannot stop an ending agent's task");
            }
        }
    }

    /// The skill catalog the agent's next turn lists (user scope for the
    /// default agent only).
    pub fn skill_catalog(&self, agent: &AgentRecord) -> Result<Vec<SkillEntry>, RuntimeError> {
        let execution = self.inner.execution_of(&agent.id)?;
        Ok(skills::discover(&SkillRoots::of(
            agent,
            self.inner.agent_home(&agent.id),
            &execution.workspace_anchor,
            self.inner.config.user_home.clone(),
        )))
    }
}

/// Who may be listed: public, unarchived agents (private children appear
/// only under their parents).
pub fn listed(agents: Vec<AgentRecord>) -> Vec<AgentRecord> {
    agents
        .into_iter()
        .filter(|a| a.visibility == AgentVisibility::Public && a.archived_at.is_none())
        .collect()
}

impl RuntimeHost {
    /// After a successful command: the catalog skills it read (`SKILL.md`)
    /// or ran (`scripts/*`) become turn-active, each recorded once per
    /// turn with `skill_activated`.
    pub(crate) async fn note_skill_use(
        &self,
        agent_id: &str,
        cmd: &str,
        workdir: &std::path::Path,
    ) -> Result<(), RuntimeError> {
        if !cmd.contains("SKILL.md") && !cmd.contains("scripts/") {
            return Ok(());
        }
        let agent = self.inner.agent_record(agent_id)?;
        let catalog = self.skill_catalog(&agent)?;
        let found: Vec<(SkillEntry, crate::model::skill::LoadReason, String)> =
            skills::activations(&catalog, cmd, workdir)
                .into_iter()
                .map(|(s, r, p)| (s.clone(), r, p.display().to_string()))
                .collect();
        if found.is_empty() {
            return Ok(());
        }
        let id = agent_id.to_owned();
        self.inner
            .store
            .write(move |tx| {
                let mut agent = agent_in(tx, &id)?;
                let run_id = agent.current_run_id.clone().unwrap_or_default();
                let mut events = Vec::new();
                for (s, reason, path) in &found {
                    if skills::activate(&mut agent.skills, s) {
                        events.push(ev::SkillActivated {
                            name: s.name.clone(),
                            scope: s.scope,
                            load_reason: *reason,
                            path: path.clone(),
                            entrypoint_path: s.entrypoint_path.display().to_string(),
                            run_id: run_id.clone(),
                        });
                    }
                }
                if events.is_empty() {
                    return Ok(());
                }
                tx.put_agent(&id, &agent)?;
                for e in events {
                    tx.append_event(new_event(
                        &id,
                        Provenance::default(),
                        Event::SkillActivated(e),
                    ))?;
                }
                Ok(())
            })
            .await?;
        Ok(())
    }
}
