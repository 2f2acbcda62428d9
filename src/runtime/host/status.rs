//! `runtime.status`: what the process is, how busy it is, and the agents
//! it shows (at most 50 summaries, the rest counted: `inspect::status_of`).
//! While the store fails it still answers, with what it knows without it.

use crate::model::agent::AgentRecord;
use crate::protocol::{ApiError, RuntimeStatus};
use crate::runtime::handle::RuntimeHost;

impl RuntimeHost {
    /// The model an agent's next turn uses (override, else this runtime's
    /// default); `None` when none is configured.
    fn effective_model(&self, agent: &AgentRecord) -> Option<String> {
        Some((self.inner.config.provider)(agent).model_ref()).filter(|m| !m.is_empty())
    }

    /// The runtime's status. While the store fails it still answers, with
    /// what it knows without the store and the failure named (a client
    /// must never mistake a failing runtime for no runtime).
    pub fn runtime_status(&self) -> Result<RuntimeStatus, ApiError> {
        match (self.full_status(), self.store().health()) {
            (Ok(s), _) => Ok(s),
            (Err(e), Some(cause)) => Ok(self.status_without_store(Some(format!(
                "{cause} (and reading it failed too: {})",
                e.message
            )))),
            (Err(e), None) => Err(e),
        }
    }

    /// What the status says without reading the store: the process, its
    /// endpoints, and `store_failure`.
    fn status_without_store(&self, store_failure: Option<String>) -> RuntimeStatus {
        let info = &self.inner.config.info;
        RuntimeStatus {
            holon: "holon".into(),
            protocol: crate::protocol::REVISION,
            version: env!("CARGO_PKG_VERSION").into(),
            pid: std::process::id(),
            mode: info.mode.clone(),
            home: info.home.clone(),
            store: self.store().path().display().to_string(),
            socket_path: info.socket_path.clone(),
            started_at: crate::format_ts(self.inner.started_at_ms),
            uptime_ms: u64::try_from(crate::now_ms().saturating_sub(self.inner.started_at_ms))
                .unwrap_or(0),
            default_model: self.effective_model(&AgentRecord::new("", String::new())),
            // Unknown without the store: said as idle, with no counts.
            activity: crate::protocol::Activity::default(),
            agents: Vec::new(),
            agent_count: 0,
            last_failure: None,
            store_failure,
            http: self.ingress(),
            pending_approvals: 0,
            config_fingerprint: info.config_fingerprint.clone(),
        }
    }

    fn full_status(&self) -> Result<RuntimeStatus, ApiError> {
        use crate::runtime::inspect::{last_failure_of, status_of, AgentHead};
        let rx = self.store().read()?;
        // Every agent's head is read; only those shown are summarized.
        let heads: Vec<AgentHead> = rx.agents()?;
        let (mut activity, shown, agent_count) =
            status_of(&rx, &heads, &self.inner.config.default_agent)?;
        activity.settled = self.settled();
        let agents = crate::runtime::inspect::summaries_of(&rx, shown, |a| self.summarize(&rx, a))?;
        Ok(RuntimeStatus {
            activity,
            agents,
            agent_count,
            last_failure: last_failure_of(&heads),
            store_failure: self.store().health(),
            pending_approvals: self.approvals(None, false)?.len() as u64,
            ..self.status_without_store(None)
        })
    }
}
