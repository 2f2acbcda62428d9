//! A console's quit, as the operator confirmed it: every agent's running
//! turn is stopped for good (recorded as the operator's abort, never run
//! again at the next start), not only the viewed agent's.

use std::sync::Arc;
use std::time::Duration;

use holon::runtime::envelope::Priority;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};

use super::runtime_restart::{crash, runtime, start};

#[test]
fn a_consoles_quit_stops_every_agents_turn_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::Delay(
        Duration::from_secs(30),
        Box::new(Scripted::text("never")),
    )]));
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::clone(&provider));
    let message_id = rt.block_on(async {
        // Another agent than the one a console would view.
        host.create_agent("other").await.unwrap();
        let req = holon::runtime::envelope::AdmissionRequest::operator_prompt(
            "other",
            "think long",
            Priority::Normal,
            holon::runtime::envelope::DeliverySurface::CliPrompt,
        );
        let admitted = host.submit(req).await.unwrap();
        super::approvals::wait_requests(&provider, 1).await;
        host.quit().await;
        admitted.message_id
    });
    crash(rt, host, dir.path());
    let rt = runtime();
    let host = start(&rt, dir.path(), Arc::new(ScriptedProvider::new(vec![])));
    rt.block_on(async {
        let evs = host
            .store()
            .read()
            .unwrap()
            .events("other", 1, 10_000)
            .unwrap();
        let aborted = evs
            .iter()
            .find(|e| e.kind == "turn_terminal")
            .expect("the turn ended");
        assert_eq!(
            aborted.payload["cancel_reason"], "operator_abort",
            "{}",
            aborted.payload
        );
        let started = evs
            .iter()
            .rev()
            .find(|e| e.kind == "runtime_started")
            .expect("a start");
        assert!(
            !started.payload["replay_message_ids"]
                .to_string()
                .contains(&message_id),
            "not run again: {}",
            started.payload
        );
        host.shutdown().await;
    });
}
