//! The agent record: identity, control posture (`AgentStatus`) and the small
//! cached state the scheduler projection reads (current work item focus,
//! pending wake hint, turn flag, token totals). `status` is a cached
//! projection written only through scheduler helpers and control actions;
//! the derived `AgentSchedulingPosture` is computed, never stored.

use crate::model::agent::AgentRecord;

/// An agent's own directory: `<data>/agents/<id>` (its AgentHome).
pub fn home_dir(data_dir: &std::path::Path, agent_id: &str) -> std::path::PathBuf {
    data_dir.join("agents").join(agent_id)
}

/// The agent record inside a write job, or the job's `UnknownAgent`
/// rejection (nothing of the job is written).
pub(crate) fn agent_in(
    tx: &crate::store::WriteCtx<'_>,
    agent_id: &str,
) -> Result<AgentRecord, crate::store::StoreError> {
    tx.get_agent(agent_id)?.ok_or_else(|| {
        crate::store::StoreError::rejected(super::RuntimeError::UnknownAgent {
            agent_id: agent_id.to_owned(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::agent::{AgentStatus, DisplayMode};
    use crate::model::ids::validate_agent_id;

    #[test]
    fn agent_ids_are_validated() {
        assert!(validate_agent_id("main").is_ok());
        assert!(validate_agent_id("worker-2.b_x").is_ok());
        assert!(validate_agent_id("").is_err());
        assert!(validate_agent_id("../etc").is_err());
        assert!(validate_agent_id(".hidden").is_err());
        assert!(validate_agent_id("a b").is_err());
        assert!(validate_agent_id(&"x".repeat(65)).is_err());
    }

    #[test]
    fn old_records_missing_fields_still_decode() {
        let rec: AgentRecord = serde_json::from_str(r#"{"id":"main","created_at":"t"}"#).unwrap();
        assert_eq!(rec.status, AgentStatus::AwakeIdle);
        assert_eq!(rec.display_mode, DisplayMode::Info);
    }
}
