//! Phase 3 of a round: what the provider answered written down in one
//! transaction: the turn's context (with its first round), the provider
//! telemetry and its cache identity, the assistant round in events and
//! transcript, and the agent's token totals and last prompt.

use super::*;

impl Round<'_> {
    /// Phase 3: record the round (provider telemetry, the assistant round,
    /// token totals) in one write. A failed round, or an answer that calls
    /// no tool, ends the turn.
    pub(super) async fn record_round(
        &mut self,
        round: u32,
        called: Called,
    ) -> Result<Step<ProviderRound>, RuntimeError> {
        let timeline = called.outcome.timeline;
        let answer = match called.outcome.result {
            Err(failure) => {
                return Ok(Step::End(Ending::Failed {
                    failure: Box::new(failure),
                    timeline: Box::new(timeline),
                    rounds: round,
                }));
            }
            Ok(answer) => answer,
        };
        let t = &self.t;
        let (id, rid, mid, r, tl) = (
            t.agent_id.to_owned(),
            t.run_id.to_owned(),
            self.message.id.clone(),
            answer.clone(),
            timeline,
        );
        let built = called.built;
        let (budget, prompt_estimate) = (self.budget, built.prompt_estimate);
        let (provider_round_ms, attempt) = (called.provider_round_ms, called.attempt);
        // Unknown without a price or without reported usage.
        let cost = r
            .token_usage
            .and_then(|u| t.inner.config.pricing.cost_micro_usd(&r.model_ref, &u));
        t.inner
            .store
            .write(move |tx| {
                let usage = r.token_usage.unwrap_or_default();
                let provenance = Provenance {
                    message_id: Some(mid.clone()),
                    ..Provenance::default()
                };
                let cache = built.cache.clone().unwrap_or_else(|| PromptCache {
                    agent_id: id.clone(),
                    prompt_cache_key: String::new(),
                    context_fingerprint: String::new(),
                    working_memory_revision: 0,
                    compression_epoch: 0,
                });
                let facts = Facts {
                    run_id: &rid,
                    round,
                    answer: &r,
                    timeline: &tl,
                    built: &built,
                    cache: &cache,
                    budget,
                };
                // The turn's context, recorded with its first round.
                if round == 1 {
                    let context = Event::TurnContextBuilt(facts.context_built());
                    tx.append_event(new_event(&id, provenance.clone(), context))?;
                }
                let started_at = crate::format_ts(tx.now_ms() - provider_round_ms as i64);
                let completed = facts.completed(cost, provider_round_ms, started_at, tx.now_ts());
                let completed = Event::ProviderRoundCompleted(completed);
                tx.append_event(new_event(&id, provenance.clone(), completed))?;
                let recorded = Event::AssistantRoundRecorded(facts.recorded(attempt));
                tx.append_event(new_event(&id, provenance, recorded))?;
                transcript_in(tx, &id, &rid, Some(&mid), facts.transcript())?;
                if let Some(mut agent) = tx.get_agent::<AgentRecord>(&id)? {
                    let day = crate::runtime::budget::budget_day(&agent, tx.now_ms());
                    crate::runtime::budget::add_round(&mut agent, &day, &usage, cost);
                    agent.context.last_prompt = Some(PromptUse {
                        estimated_tokens: prompt_estimate,
                        reported_input_tokens: r
                            .token_usage
                            .map(|u| u.input_tokens)
                            .filter(|n| *n > 0),
                        window: budget.window,
                        prompt_budget: budget.prompt_budget,
                    });
                    tx.put_agent(&id, &agent)?;
                }
                Ok(())
            })
            .await?;
        self.history.push(ConversationItem::AssistantRound {
            reasoning: answer.reasoning.clone(),
            text: answer.text.clone(),
            tool_calls: answer.tool_calls.clone(),
        });
        if answer.tool_calls.is_empty() {
            return Ok(Step::End(Ending::Completed {
                truncated: output_limit_reason(answer.stop_reason.as_deref()),
                text: answer.text,
                rounds: round,
                completed_work_item: self.completed_work_item.take(),
            }));
        }
        Ok(Step::Go(answer))
    }
}

/// What a recorded round's events and transcript entry are made of.
struct Facts<'a> {
    run_id: &'a str,
    round: u32,
    answer: &'a ProviderRound,
    timeline: &'a crate::model::usage::ProviderAttemptTimeline,
    built: &'a Built,
    cache: &'a PromptCache,
    budget: ContextBudget,
}

impl Facts<'_> {
    /// The turn's context as its first round sent it.
    fn context_built(&self) -> ev::TurnContextBuilt {
        let (built, cache) = (self.built, self.cache);
        ev::TurnContextBuilt {
            run_id: self.run_id.to_owned(),
            context_build_ms: built.context_build_ms,
            prompt_tokens_estimate: built.prompt_estimate,
            cacheable_tokens_estimate: built.cacheable_tokens,
            sections: built.sections.clone(),
            prompt_cache_key: cache.prompt_cache_key.clone(),
            context_fingerprint: cache.context_fingerprint.clone(),
            working_memory_revision: cache.working_memory_revision,
            compression_epoch: cache.compression_epoch,
            context_window: self.budget.window,
            window_source: Some(self.budget.source),
        }
    }

    /// The provider's telemetry: the round's usage, cost, time, attempts
    /// and cache identity, and the tools it was sent.
    fn completed(
        &self,
        cost: Option<u64>,
        provider_round_ms: u64,
        provider_started_at: String,
        provider_completed_at: String,
    ) -> ev::ProviderRoundCompleted {
        let (built, cache, r) = (self.built, self.cache, self.answer);
        ev::ProviderRoundCompleted {
            run_id: self.run_id.to_owned(),
            round: self.round,
            model_ref: r.model_ref.clone(),
            token_usage: r.token_usage.unwrap_or_default(),
            provider_attempt_timeline: self.timeline.clone(),
            context_build_ms: built.context_build_ms,
            provider_round_ms,
            stop_reason: r.stop_reason.clone(),
            prompt_tokens_estimate: built.prompt_estimate,
            context_window: self.budget.window,
            prompt_budget: self.budget.prompt_budget,
            cost_usd: cost.map(usd),
            provider_started_at,
            provider_completed_at,
            prompt_cache_key: cache.prompt_cache_key.clone(),
            context_fingerprint: cache.context_fingerprint.clone(),
            cacheable_tokens_estimate: built.cacheable_tokens,
            work_item_reminder: built.reminded,
            tools_sent: built.tools.tools,
            tool_tokens: built.tools.tokens,
            tools_deferred: built.tools.deferred,
            deferred_tool_tokens: built.tools.deferred_tokens,
        }
    }

    /// The assistant's round as consoles show it (`attempt`: the run's
    /// provider attempt that answered).
    fn recorded(&self, attempt: u32) -> ev::AssistantRoundRecorded {
        let r = self.answer;
        ev::AssistantRoundRecorded {
            run_id: self.run_id.to_owned(),
            round: self.round,
            text_preview: r.text.chars().take(400).collect(),
            tool_names: r.tool_calls.iter().map(|c| c.name.clone()).collect(),
            text_chars: r.text.chars().count(),
            attempt,
            reasoning_summary: crate::model::usage::ReasoningItem::summaries(&r.reasoning),
        }
    }

    /// The round in the transcript, whole.
    fn transcript(&self) -> TranscriptBody {
        let r = self.answer;
        TranscriptBody::AssistantRound {
            round: self.round,
            reasoning: r.reasoning.clone(),
            text: r.text.clone(),
            tool_calls: r.tool_calls.clone(),
            input_tokens: r.token_usage.map(|u| u.input_tokens),
            output_tokens: r.token_usage.map(|u| u.output_tokens),
            token_usage: r.token_usage,
            timeline: Some(self.timeline.clone()),
        }
    }
}
