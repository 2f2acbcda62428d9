//! Held tasks after a restart. A task whose holder still runs (its
//! recorded identity matches) is supervised again: `task_reattached` is
//! recorded, its input pipe and stop work as before (a stop asked for
//! before the restart goes on), and when the holder ends its exit record
//! settles the task. A one-shot runtime leaves running holders alone. A
//! task whose holder is gone is settled from the exit record it left; one
//! that left none failed, and its command's group, if it still runs under
//! its own recorded identity, is ended so nothing runs untracked. An
//! agent's command whose turn died with the old runtime re-enters when it
//! ends: no turn is left to answer it inline.

use super::*;
use crate::runtime::process_identity::Liveness;

/// How often a reattached holder is looked at (it is not our child: its
/// end cannot be awaited).
const HOLDER_POLL: Duration = Duration::from_millis(100);

impl CommandTasks {
    pub(super) async fn recover_held(
        &self,
        task: &TaskRecord,
        identity: Option<ProcessIdentity>,
        output: PathBuf,
        grace: Duration,
        reattach: bool,
    ) -> Result<(), RuntimeError> {
        let accepts_input = task.detail.accepts_input.unwrap_or(false);
        let paths = HeldPaths::beside(&output, accepts_input);
        let agent_id = task.agent_id.as_str();
        // Its turn died with the runtime that started it: an agent's
        // command re-enters when it ends, however it ends.
        let (a, t) = (agent_id.to_owned(), task.id.clone());
        self.store.write(move |tx| reenter_in(tx, &a, &t)).await?;
        // A stop asked for before the restart still stands.
        let stopping = (task.status == TaskStatus::Cancelling).then_some("stopped by request");
        if let Some(identity) = identity.filter(|i| i.liveness() == Liveness::Running) {
            if !reattach {
                return Ok(());
            }
            self.reattach(task, identity, paths, output, stopping, grace)
                .await?;
            return Ok(());
        }
        // The holder wrote its record before it ended, so a holder seen
        // gone has left whatever record it will.
        let ending = ending::held_end(&paths, None, grace).await;
        self.settle(agent_id, &task.id, &output, ending, Some(&paths), stopping)
            .await;
        Ok(())
    }

    /// Supervise a running holder again (and go on stopping it, when a
    /// stop was asked for before the restart).
    async fn reattach(
        &self,
        task: &TaskRecord,
        identity: ProcessIdentity,
        paths: HeldPaths,
        output: PathBuf,
        stopping: Option<&'static str>,
        grace: Duration,
    ) -> Result<(), RuntimeError> {
        let (agent_id, task_id) = (task.agent_id.clone(), task.id.clone());
        let closing = self.register(
            &task_id,
            LiveTask {
                agent_id: agent_id.clone(),
                pid: identity.pid,
                identity: Some(identity.clone()),
                stdin: None,
                stop_requested: stopping,
                input: paths.input.clone(),
                held: true,
                tty: task.detail.tty.unwrap_or(false),
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
        if stopping.is_some() {
            self.signal_stop(
                &task_id,
                identity.pid,
                Some(identity.clone()),
                libc::SIGUSR1,
                grace,
            );
        }
        let this = self.clone();
        self.supervise(async move {
            while identity.liveness() == Liveness::Running {
                tokio::time::sleep(HOLDER_POLL).await;
            }
            let ending = ending::held_end(&paths, None, grace).await;
            this.settle(&agent_id, &task_id, &output, ending, Some(&paths), None)
                .await;
        });
        Ok(())
    }
}

/// An agent's command re-enters the agent when it ends (its turn, which
/// would have answered it inline, is gone).
fn reenter_in(tx: &mut WriteCtx<'_>, agent_id: &str, task_id: &str) -> Result<(), StoreError> {
    let Some(mut task) = tx.get::<TaskRecord>(Keyed::Tasks, agent_id, task_id)? else {
        return Ok(());
    };
    let d = &mut task.detail;
    if d.origin == Some(CommandOrigin::Agent) && d.terminal_reentry != Some(true) {
        d.terminal_reentry = Some(true);
        tx.put(Keyed::Tasks, agent_id, task_id, &task)?;
    }
    Ok(())
}

/// Record that a task is supervised again; an agent's command whose turn
/// is gone re-enters when it ends.
fn reattached_in(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    task_id: &str,
    pid: i32,
) -> Result<(), StoreError> {
    let Some(task) = tx.get::<TaskRecord>(Keyed::Tasks, agent_id, task_id)? else {
        return Ok(());
    };
    let reattached = ev::TaskReattached {
        task_id: task_id.to_owned(),
        pid,
        result_reenters: task.detail.terminal_reentry.unwrap_or(false),
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
