//! Sleep: the model ends its turn and rests, optionally until a timer it
//! sets here wakes it. The timer is the same durable timer the operator's
//! and the runtime's wake hints use, bound to the turn's work item.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::{runtime_error, ToolEnv};
use crate::runtime::tool_outcome::ToolOutcome;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SleepArgs {
    /// Wake after this many milliseconds; omit to rest until something
    /// wakes the agent.
    #[serde(default)]
    duration_ms: Option<u64>,
}

pub(super) struct Sleep;

impl Tool for Sleep {
    const NAME: &'static str = "Sleep";
    const DESCRIPTION: &'static str =
        "End this turn and rest; with duration_ms, wake after that delay.";
    type Args = SleepArgs;

    fn gate(&self, _: &SleepArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: SleepArgs) -> ToolOutcome {
        let mut content = json!({ "ok": true, "sleeping": true });
        if let Some(d) = args.duration_ms.filter(|d| *d > 0) {
            let host = env.host;
            let work_item = env.turn_work_item_id.clone();
            match host
                .create_timer(env.agent_id, d, "sleep ended", work_item)
                .await
            {
                Ok(t) => {
                    content = json!({ "ok": true, "sleeping": true, "timer_id": t.id, "wake_after_ms": d })
                }
                Err(e) => return runtime_error(e),
            }
        }
        ToolOutcome {
            ends_turn: true,
            ..ToolOutcome::ok(content)
        }
    }
}
