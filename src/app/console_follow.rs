//! Following the agent a console shows: its state (the bootstrap), then
//! its events, streamed answer text, tool progress and provider retries
//! from just after the bootstrap (or from a reconnect's cursor), as
//! messages for the console's loop.

use std::ops::ControlFlow;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::protocol::{follow, AgentState, Request, RuntimeClient, SubscriptionItem};
use crate::ui::tui::msg::{Connection, Msg};

/// Follow `agent_id`: bootstrap, then its events from just after the
/// bootstrap (or from `resume`) onwards, into `tx`. Ends when the stream
/// ends; returns the next sequence to resume from.
pub(super) async fn follow_agent(
    client: Arc<dyn RuntimeClient>,
    agent_id: String,
    resume: Option<u64>,
    tx: mpsc::Sender<Msg>,
) -> Option<u64> {
    let state: AgentState = match crate::protocol::call_typed(
        &*client,
        Request::AgentState {
            agent_id: agent_id.clone(),
        },
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            let _ = tx
                .send(Msg::Connection(Connection::Disconnected {
                    reason: e.to_string(),
                }))
                .await;
            return resume;
        }
    };
    // The core pages its own history on bootstrap; follow from just after it.
    let from = resume.unwrap_or(state.last_event_seq + 1);
    let _ = tx
        .send(Msg::Bootstrap {
            agent_id: agent_id.clone(),
            state: Box::new(state),
        })
        .await;
    let followed = follow(&*client, &agent_id, from, |item| {
        let msg = match item {
            SubscriptionItem::Event(e) => Some(Msg::Event(Box::new(e))),
            // Streamed answer text, embedded and attached alike.
            SubscriptionItem::Delta {
                run_id,
                attempt,
                text,
            } => Some(Msg::AssistantDelta {
                agent_id: agent_id.clone(),
                run_id,
                attempt,
                text,
            }),
            SubscriptionItem::Progress {
                run_id,
                call_id,
                progress,
            } => Some(Msg::ToolProgress {
                agent_id: agent_id.clone(),
                run_id,
                call_id,
                progress,
            }),
            SubscriptionItem::Retry {
                run_id,
                attempt,
                notice,
            } => Some(Msg::ProviderRetry {
                agent_id: agent_id.clone(),
                run_id,
                attempt,
                notice,
                heard_ms: crate::now_ms(),
            }),
            // `follow` resumes a lagged subscription itself.
            SubscriptionItem::Lagged { .. } => None,
        };
        let tx = tx.clone();
        async move {
            let Some(msg) = msg else {
                return ControlFlow::Continue(());
            };
            match tx.send(msg).await {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()),
            }
        }
    })
    .await;
    Some(followed.unwrap_or(from))
}
