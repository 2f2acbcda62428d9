//! What an agent's long life leaves behind in a running runtime: an
//! archived agent's actor ends, as a restart would give it none.

use std::time::{Duration, Instant};

use super::runtime_core::rig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_agents_actor_ends_and_the_others_go_on() {
    let r = rig(Vec::new()).await;
    r.host.create_agent("dev").await.unwrap();
    assert!(r.host.has_actor("dev"));
    r.host.archive_agent("dev", "operator").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.host.has_actor("dev") {
        assert!(
            Instant::now() < deadline,
            "the archived agent kept its actor"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The others go on: the default agent still runs.
    assert!(r.host.has_actor("main"));
    r.host.until_idle().await;
    // Asked for again (a create of an existing agent), it gets none.
    r.host.create_agent("dev").await.unwrap();
    assert!(!r.host.has_actor("dev"));
}
