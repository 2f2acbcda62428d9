//! What happens to a server, told to the runtime to record: it started,
//! failed or was stopped, with the agents in whose ledgers that belongs.
//! The hub knows no store; the runtime drains these into events. A hub
//! nobody listens to (the offline `holon mcp list`) tells no one.

use std::sync::Mutex;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::model::mcp::{McpServerFailed, McpServerStarted, McpServerStopped};

/// One change of a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Lifecycle {
    Started(McpServerStarted),
    Failed(McpServerFailed),
    Stopped(McpServerStopped),
}

/// A change, and the agents whose ledgers record it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub agents: Vec<String>,
    pub change: Lifecycle,
}

/// Where servers tell their changes. Unbounded, yet small: a server
/// changes at most once a second or so (its backoff), and the runtime
/// drains them as they come.
#[derive(Default)]
pub struct Reporter {
    tx: Mutex<Option<UnboundedSender<Report>>>,
}

impl Reporter {
    /// Tell `change` to whoever listens, for `agents` (none: nothing to
    /// record).
    pub fn tell(&self, agents: Vec<String>, change: Lifecycle) {
        if agents.is_empty() {
            return;
        }
        if let Ok(tx) = self.tx.lock() {
            if let Some(tx) = tx.as_ref() {
                let _ = tx.send(Report { agents, change });
            }
        }
    }

    /// Listen from now on (a second listener replaces the first).
    pub fn listen(&self) -> UnboundedReceiver<Report> {
        let (tx, rx) = unbounded_channel();
        if let Ok(mut slot) = self.tx.lock() {
            *slot = Some(tx);
        }
        rx
    }

    /// Stop telling: the listener's stream ends after what was told.
    pub fn close(&self) {
        if let Ok(mut slot) = self.tx.lock() {
            slot.take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mcp::McpStopReason;

    fn stopped() -> Lifecycle {
        Lifecycle::Stopped(McpServerStopped {
            name: "gh".into(),
            workspace: None,
            reason: McpStopReason::Shutdown,
        })
    }

    #[test]
    fn reports_reach_the_listener_until_closed() {
        let r = Reporter::default();
        r.tell(vec!["main".into()], stopped()); // nobody listens yet
        let mut rx = r.listen();
        r.tell(Vec::new(), stopped()); // for no agent: nothing
        r.tell(vec!["main".into()], stopped());
        r.close();
        r.tell(vec!["main".into()], stopped());
        let got = rx.try_recv().unwrap();
        assert_eq!(got.agents, ["main"]);
        assert!(rx.try_recv().is_err());
        assert!(rx.is_closed() || rx.try_recv().is_err());
    }
}
