//! Held tasks after a restart. A task whose holder still runs (its
//! recorded identity matches) is supervised again: `task_reattached` is
//! recorded, its input pipe and stop work as before, and when the holder
//! ends its exit record settles the task. A task whose holder is gone is
//! settled from the exit record it left; one that left none failed, and
//! its command's group, if it still runs under its own recorded identity,
//! is ended so nothing runs untracked. An agent's command whose turn died
//! with the old runtime re-enters when it ends: no turn is left to answer
//! it inline.

use super::*;
use crate::runtime::process_identity::Liveness;
use ending::{recorded, Ending};

/// How often a reattached holder is looked at (it is not our child: its
/// end cannot be awaited).
const HOLDER_POLL: Duration = Duration::from_millis(100);

/// What recovery did with one held task.
pub(super) enum Recovered {
    /// Its holder runs: supervised again.
    Reattached,
    /// It had ended (or was lost): settled.
    Settled,
}

impl CommandTasks {
    pub(super) async fn recover_held(
        &self,
        task: &TaskRecord,
        identity: Option<ProcessIdentity>,
        output: PathBuf,
        grace: Duration,
    ) -> Result<Recovered, RuntimeError> {
        let detail = task.detail.clone().unwrap_or_default();
        let accepts_input = detail["accepts_input"].as_bool().unwrap_or(false);
        let paths = HeldPaths::beside(&output, accepts_input);
        let agent_id = task.agent_id.as_str();
        if let Some(identity) = identity.filter(|i| i.liveness() == Liveness::Running) {
            self.reattach(task, identity, paths, output).await?;
            return Ok(Recovered::Reattached);
        }
        // The holder wrote its record before it ended, so a holder seen
        // gone has left whatever record it will.
        let ending = match holder::read_exit(&paths.exit) {
            Some(record) => recorded(record),
            None => Ending::Unknown(lost(&paths, grace).await),
        };
        self.settle(agent_id, &task.id, &output, ending, Some(&paths))
            .await;
        Ok(Recovered::Settled)
    }

    /// Supervise a running holder again.
    async fn reattach(
        &self,
        task: &TaskRecord,
        identity: ProcessIdentity,
        paths: HeldPaths,
        output: PathBuf,
    ) -> Result<(), RuntimeError> {
        let (agent_id, task_id) = (task.agent_id.clone(), task.id.clone());
        let closing = self.register(
            &task_id,
            LiveTask {
                agent_id: agent_id.clone(),
                pid: identity.pid,
                identity: Some(identity.clone()),
                stdin: None,
                stop_requested: None,
                input: paths.input.clone(),
                held: true,
            },
        );
        let (a, t, pid) = (agent_id.clone(), task_id.clone(), identity.pid);
        self.store
            .write(move |tx| reattached_in(tx, &a, &t, pid))
            .await?;
        if closing {
            // Shut down while recovering: leave it to the next runtime.
            self.live().remove(&task_id);
            return Ok(());
        }
        let this = self.clone();
        self.supervise(async move {
            while identity.liveness() == Liveness::Running {
                tokio::time::sleep(HOLDER_POLL).await;
            }
            let ending = match holder::read_exit(&paths.exit) {
                Some(record) => recorded(record),
                None => Ending::Unknown(
                    "its holder ended without recording how the command ended".to_owned(),
                ),
            };
            this.settle(&agent_id, &task_id, &output, ending, Some(&paths))
                .await;
        });
        Ok(())
    }
}

/// Record that a task is supervised again; an agent's command whose turn
/// is gone re-enters when it ends.
fn reattached_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    task_id: &str,
    pid: i32,
) -> Result<(), StoreError> {
    let Some(mut task) = tx.get::<TaskRecord>(Keyed::Tasks, agent_id, task_id)? else {
        return Ok(());
    };
    let mut detail = task.detail.clone().unwrap_or_else(|| json!({}));
    let from_agent = detail["origin"].as_str() == Some("agent");
    if from_agent && detail["terminal_reentry"].as_bool() != Some(true) {
        detail["terminal_reentry"] = json!(true);
        task.detail = Some(detail.clone());
        tx.put(Keyed::Tasks, agent_id, task_id, &task)?;
    }
    let reattached = ev::TaskReattached {
        task_id: task_id.to_owned(),
        pid,
        result_reenters: detail["terminal_reentry"].as_bool().unwrap_or(false),
    };
    let provenance = Provenance {
        task_id: Some(task_id.to_owned()),
        work_item_id: task.work_item_id.clone(),
        ..Provenance::default()
    };
    tx.append_event(new_event(
        agent_id,
        provenance,
        Event::TaskReattached(reattached),
    ))?;
    Ok(())
}

/// Why a held task whose holder is gone left no exit record, after ending
/// its command's group if that still runs as the holder recorded it.
async fn lost(paths: &HeldPaths, grace: Duration) -> String {
    let command: Option<ProcessIdentity> = std::fs::read(&paths.command)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let Some(command) = command else {
        return "its holder is gone and recorded neither the command nor how it ended (it was \
                killed, or the machine restarted)"
            .to_owned();
    };
    let ended = terminate_recovered(&command, grace).await;
    format!(
        "its holder is gone without recording how the command ended (it was killed, or the \
         machine restarted); {}",
        ended.trim_start_matches("interrupted: ")
    )
}
