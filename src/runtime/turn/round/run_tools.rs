//! Phase 4 of a round: its tool calls, each recorded before and after
//! (`calls.rs`); then what joins the turn at its safe point, or, when only
//! calls waiting for approval would end the turn, the wait for their
//! answers (`join.rs`).

use super::*;

impl Round<'_> {
    /// Phase 4: run the round's tool calls, each recorded before and
    /// after; then trusted `interject` prompts and answers to this turn's
    /// approvals join at the safe point. A call that ends the turn (Sleep,
    /// a call waiting for approval) ends it after the whole round ran; when
    /// only approvals would end it, the turn first waits a while for their
    /// answers and goes on with them.
    pub(super) async fn run_tools(
        &mut self,
        round: u32,
        answer: ProviderRound,
    ) -> Result<Step<()>, RuntimeError> {
        let t = &self.t;
        let mut ends_turn = false;
        // Approvals this round waits for, and whether anything else ends it.
        let mut awaited = Vec::new();
        let mut ends_otherwise = false;
        let mut progressed = false;
        // What the request that asked for these calls carried: a tool
        // loaded during the round is still unseen by the model.
        let carried: Vec<String> = t.tools.iter().map(|s| s.name.clone()).collect();
        for call in &answer.tool_calls {
            // A cancelled turn starts no further tool; calls left without a
            // result are shown to the model as not executed.
            if let Some(reason) = t.cancel.reason() {
                return Ok(Step::End(Ending::Aborted {
                    reason,
                    rounds: round,
                    timeline: None,
                    partial: None,
                }));
            }
            let env = ToolEnv {
                host: t.inner,
                agent_id: t.agent_id,
                message_id: &self.message.id,
                turn_work_item_id: self.turn_work_item_id.clone(),
                round_text: &answer.text,
                granted: false,
                approved: None,
            };
            // ToolSearch, and a call of an MCP tool the request did not
            // carry, are answered from the catalog (nothing runs); what
            // they name is loaded for the next request.
            let answered = match call.name == TOOL_SEARCH {
                true => Some(self.offer.search(call)),
                false => self.offer.unloaded(call, &carried),
            };
            let route = answered.map_or(Route::Gate, Route::Answered);
            let ran = run_call(t.inner, &env, t.run_id, call, t.cancel, route).await?;
            let outcome = ran.outcome;
            self.history.push(ConversationItem::ToolResult {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: outcome.text(),
                is_error: outcome.is_error,
                images: outcome.images.clone(),
            });
            ends_turn |= outcome.ends_turn;
            match ran.awaits_approval {
                Some(id) => awaited.push(id),
                None => ends_otherwise |= outcome.ends_turn,
            }
            progressed |= !outcome.is_error && PROGRESS_TOOLS.contains(&call.name.as_str());
            if outcome.completed_work_item.is_some() {
                self.completed_work_item = outcome.completed_work_item.clone();
            }
        }
        self.stale.after_round(progressed);
        self.t.tools = self.offer.sent().into();
        let t = &self.t;
        // On the turn's last round nothing joins: no request would follow
        // to take it, so it stays queued and starts a turn of its own.
        let last = round >= t.inner.config.max_rounds;
        let joined = match (ends_turn, ends_otherwise) {
            _ if last => Vec::new(),
            (false, _) => join::at_safe_point(t.inner, t.agent_id, t.run_id).await?,
            (true, false) => {
                let waiting = join::Waiting {
                    inner: t.inner,
                    agent_id: t.agent_id,
                    run_id: t.run_id,
                    message_id: &self.message.id,
                    cancel: t.cancel,
                };
                join::wait_for_answers(&waiting, &awaited).await?
            }
            (true, true) => Vec::new(),
        };
        // Ended as it would have without the wait (an abort or a stop
        // while it waited ends the wait, not the turn's work).
        if ends_turn && joined.is_empty() {
            return Ok(Step::End(Ending::Completed {
                text: answer.text,
                rounds: round,
                completed_work_item: self.completed_work_item.take(),
                truncated: None,
            }));
        }
        for text in joined {
            self.history.push(ConversationItem::UserText { text });
        }
        Ok(Step::Go(()))
    }
}
