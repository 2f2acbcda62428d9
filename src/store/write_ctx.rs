//! What a write job sees (`WriteCtx`): every table opened in the batch's
//! transaction, typed access to them, the per-agent event sequencer and the
//! records encoded on their way in (`codec`). The writer thread that runs
//! the jobs and commits is in `writer.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use redb::{ReadableTable, Table, WriteTransaction};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::codec;
use super::kind_index;
use super::prune;
use super::schema::{self, Index, Keyed};
use super::seal;
use super::tables;
use super::StoreError;
use crate::model::event::{EventRecord, NewEvent};

/// What a write job sees: every table opened in the batch's transaction,
/// plus the event sequencer.
pub struct WriteCtx<'t> {
    meta: Table<'t, &'static str, &'static [u8]>,
    agents: Table<'t, &'static str, &'static [u8]>,
    events: Table<'t, (&'static str, u64), &'static [u8]>,
    event_blocks: Table<'t, (&'static str, u64), &'static [u8]>,
    event_kinds: kind_index::KindTable<'t>,
    queue_pending: Table<'t, (&'static str, u8, u64), &'static str>,
    counters: Table<'t, (&'static str, &'static str), u64>,
    keyed: Vec<Table<'t, (&'static str, &'static str), &'static [u8]>>,
    indexes: Vec<Table<'t, (&'static str, &'static str), ()>>,
    committed_seqs: &'t HashMap<String, u64>,
    pub(super) batch_seqs: HashMap<String, u64>,
    pub(super) appended: Vec<Arc<EventRecord>>,
    now_ms: i64,
    now_ts: String,
}

/// A record's stored bytes: its JSON, compressed when that is smaller
/// (`codec`).
fn encode(table: &'static str, value: &impl Serialize) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value)
        .map(codec::pack)
        .map_err(|e| StoreError::Encode {
            table,
            detail: e.to_string(),
        })
}

impl<'t> WriteCtx<'t> {
    pub(super) fn open(
        txn: &'t WriteTransaction,
        committed_seqs: &'t HashMap<String, u64>,
    ) -> Result<Self, StoreError> {
        let now_ms = crate::now_ms();
        let mut keyed = Vec::with_capacity(Keyed::ALL.len());
        for k in Keyed::ALL {
            keyed.push(txn.open_table(k.definition())?);
        }
        let mut indexes = Vec::with_capacity(Index::ALL.len());
        for i in Index::ALL {
            indexes.push(txn.open_table(i.definition())?);
        }
        Ok(WriteCtx {
            meta: txn.open_table(schema::META)?,
            agents: txn.open_table(schema::AGENTS)?,
            events: txn.open_table(schema::EVENTS)?,
            event_blocks: txn.open_table(schema::EVENT_BLOCKS)?,
            event_kinds: txn.open_table(schema::EVENT_KINDS)?,
            queue_pending: txn.open_table(schema::QUEUE_PENDING)?,
            counters: txn.open_table(schema::COUNTERS)?,
            keyed,
            indexes,
            committed_seqs,
            batch_seqs: HashMap::new(),
            appended: Vec::new(),
            now_ms,
            now_ts: crate::format_ts(now_ms),
        })
    }

    /// Wall-clock time of this batch (epoch ms), shared by its jobs.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// `now_ms` as an RFC 3339 timestamp (formatted once per batch).
    pub fn now_ts(&self) -> String {
        self.now_ts.clone()
    }

    // ---- events -------------------------------------------------------

    /// The last `event_seq` assigned to an agent, including this batch.
    pub fn last_seq(&self, agent_id: &str) -> Result<u64, StoreError> {
        if let Some(s) = self.batch_seqs.get(agent_id) {
            return Ok(*s);
        }
        if let Some(s) = self.committed_seqs.get(agent_id) {
            return Ok(*s);
        }
        tables::last_seq(&self.events, &self.event_blocks, agent_id)
    }

    /// Append an event with the agent's next `event_seq`. It is published
    /// to subscribers only after the batch commits.
    pub fn append_event(&mut self, event: NewEvent) -> Result<u64, StoreError> {
        let seq = self.last_seq(&event.agent_id)? + 1;
        let record = EventRecord {
            event_seq: seq,
            id: crate::new_id("evt"),
            ts: self.now_ts(),
            kind: event.kind.to_owned(),
            agent_id: event.agent_id,
            provenance: event.provenance,
            payload: event.payload,
        };
        // As JSON: a row lasts until about a block's worth follows it,
        // then it is sealed, compressed with its neighbours (`seal`).
        let bytes = serde_json::to_vec(&record).map_err(|e| StoreError::Encode {
            table: "events",
            detail: e.to_string(),
        })?;
        self.events
            .insert((record.agent_id.as_str(), seq), bytes.as_slice())?;
        kind_index::insert(
            &mut self.event_kinds,
            record.agent_id.as_str(),
            record.kind.as_str(),
            seq,
        )?;
        match self.batch_seqs.get_mut(record.agent_id.as_str()) {
            Some(s) => *s = seq,
            None => {
                self.batch_seqs.insert(record.agent_id.clone(), seq);
            }
        }
        self.appended.push(Arc::new(record));
        Ok(seq)
    }

    /// The event at `event_seq` (this transaction's own appends included).
    pub fn event_at(&self, agent_id: &str, seq: u64) -> Result<Option<EventRecord>, StoreError> {
        let mut found = tables::events_at(&self.events, &self.event_blocks, agent_id, &[seq])?;
        Ok(found.pop().flatten())
    }

    /// Keep the latest time an id of this process carries (`id_time`).
    pub(super) fn keep_id_time(&mut self) -> Result<(), StoreError> {
        super::id_time::keep(&mut self.meta)
    }

    /// Seal each agent's unsealed events into blocks where they fill one
    /// (`ledger`): the writer's last step before it commits a batch.
    pub(super) fn seal_ledgers(&mut self) -> Result<(), StoreError> {
        let mut agents: Vec<&str> = self.batch_seqs.keys().map(String::as_str).collect();
        agents.sort_unstable();
        for agent_id in agents {
            let sealed = seal::sealed_through(&self.counters, agent_id)?;
            let plan = match seal::plan_seal(&self.events, sealed, agent_id) {
                Ok(plan) => plan,
                Err(e) => {
                    // Planning only reads: the rows stay rows, readable
                    // as they are, and the batch commits.
                    tracing::warn!(agent_id, error = %e, "events not sealed into blocks");
                    continue;
                }
            };
            if !plan.is_empty() {
                plan.apply(
                    &mut self.events,
                    &mut self.event_blocks,
                    &mut self.counters,
                    agent_id,
                )?;
            }
        }
        Ok(())
    }

    // ---- runtime settings ---------------------------------------------

    /// A runtime-wide setting the operator chose (`meta` row
    /// `setting.NAME`), or `None` when unset.
    pub fn setting<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StoreError> {
        let key = setting_key(name);
        match self.meta.get(key.as_str())? {
            Some(v) => tables::decode("meta", || key.clone(), v.value()).map(Some),
            None => Ok(None),
        }
    }

    /// Set a runtime-wide setting (`None` removes it). The caller records
    /// the event that explains it.
    pub fn put_setting(
        &mut self,
        name: &str,
        value: Option<&impl Serialize>,
    ) -> Result<(), StoreError> {
        let key = setting_key(name);
        match value {
            Some(v) => {
                let bytes = encode("meta", v)?;
                self.meta.insert(key.as_str(), bytes.as_slice())?;
            }
            None => {
                self.meta.remove(key.as_str())?;
            }
        }
        Ok(())
    }

    // ---- agents -------------------------------------------------------

    pub fn get_agent<T: DeserializeOwned>(&self, agent_id: &str) -> Result<Option<T>, StoreError> {
        match self.agents.get(agent_id)? {
            Some(v) => tables::decode("agents", || agent_id.to_owned(), v.value()).map(Some),
            None => Ok(None),
        }
    }

    pub fn put_agent(&mut self, agent_id: &str, record: &impl Serialize) -> Result<(), StoreError> {
        let bytes = encode("agents", record)?;
        self.agents.insert(agent_id, bytes.as_slice())?;
        Ok(())
    }

    pub fn agent_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for row in self.agents.iter()? {
            out.push(row?.0.value().to_owned());
        }
        Ok(out)
    }

    // ---- keyed records ------------------------------------------------

    pub fn get<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
        id: &str,
    ) -> Result<Option<T>, StoreError> {
        tables::get_keyed(&self.keyed[which.index()], which, agent_id, id)
    }

    pub fn put(
        &mut self,
        which: Keyed,
        agent_id: &str,
        id: &str,
        record: &impl Serialize,
    ) -> Result<(), StoreError> {
        let bytes = encode(which.name(), record)?;
        self.keyed[which.index()].insert((agent_id, id), bytes.as_slice())?;
        Ok(())
    }

    pub fn list<T: DeserializeOwned>(
        &self,
        which: Keyed,
        agent_id: &str,
    ) -> Result<Vec<T>, StoreError> {
        tables::list_keyed(&self.keyed[which.index()], which, agent_id)
    }

    pub fn remove(&mut self, which: Keyed, agent_id: &str, id: &str) -> Result<bool, StoreError> {
        Ok(self.keyed[which.index()].remove((agent_id, id))?.is_some())
    }

    // ---- membership indexes -------------------------------------------

    pub fn index_insert(
        &mut self,
        index: Index,
        agent_id: &str,
        id: &str,
    ) -> Result<(), StoreError> {
        self.indexes[index.index()].insert((agent_id, id), ())?;
        Ok(())
    }

    pub fn index_remove(
        &mut self,
        index: Index,
        agent_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self.indexes[index.index()]
            .remove((agent_id, id))?
            .is_some())
    }

    /// Remove `agent_id`'s entries of `index` whose id starts with
    /// `prefix`; how many went.
    pub fn index_remove_prefix(
        &mut self,
        index: Index,
        agent_id: &str,
        prefix: &str,
    ) -> Result<usize, StoreError> {
        let mut ids = Vec::new();
        for row in self.indexes[index.index()].range((agent_id, prefix)..)? {
            let (k, _) = row?;
            let (agent, id) = k.value();
            if agent != agent_id || !id.starts_with(prefix) {
                break;
            }
            ids.push(id.to_owned());
        }
        for id in &ids {
            self.indexes[index.index()].remove((agent_id, id.as_str()))?;
        }
        Ok(ids.len())
    }

    pub fn index_contains(
        &self,
        index: Index,
        agent_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self.indexes[index.index()].get((agent_id, id))?.is_some())
    }

    pub fn index_list(&self, index: Index, agent_id: &str) -> Result<Vec<String>, StoreError> {
        tables::index_list(&self.indexes[index.index()], agent_id)
    }

    /// The newest `limit` events of one kind, oldest first (this
    /// transaction's own appends included).
    pub fn events_of_kind_latest(
        &self,
        agent_id: &str,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<EventRecord>, StoreError> {
        tables::events_by_kind_latest(
            &self.event_kinds,
            &self.events,
            &self.event_blocks,
            agent_id,
            kind,
            limit,
        )
    }

    // ---- retention ----------------------------------------------------

    /// The first `event_seq` the agent's ledger still holds (1 when
    /// nothing was pruned).
    pub fn ledger_start(&self, agent_id: &str) -> Result<u64, StoreError> {
        prune::pruned_before(&self.counters, agent_id)
    }

    /// Cut the oldest sealed units of the agent's ledger (at most
    /// `max_units`) whose events lie below `below_seq` and were written
    /// before `before_ts` (`prune`); with `apply` false, only say what
    /// would go. The caller records the event that explains it.
    pub fn cut_ledger(
        &mut self,
        agent_id: &str,
        below_seq: u64,
        before_ts: &str,
        max_units: usize,
        apply: bool,
    ) -> Result<prune::LedgerCut, StoreError> {
        let (units, stop) = prune::plan_cut(
            &self.events,
            &self.event_blocks,
            &self.counters,
            agent_id,
            below_seq,
            before_ts,
            max_units,
        )?;
        let mut cut = match apply {
            false => prune::summarize(&units),
            true => prune::apply_cut(
                &mut self.events,
                &mut self.event_blocks,
                &mut self.event_kinds,
                &mut self.counters,
                agent_id,
                &units,
            )?,
        };
        cut.stop = Some(stop);
        Ok(cut)
    }

    /// Up to `limit` of the agent's record ids below `before_id`, oldest
    /// first, each with its stored size.
    pub fn ids_before(
        &self,
        which: Keyed,
        agent_id: &str,
        before_id: &str,
        limit: usize,
    ) -> Result<Vec<(String, u64)>, StoreError> {
        self.ids_between(which, agent_id, "", before_id, limit)
    }

    /// `ids_before`, from `from_id` (inclusive) on: a walk in windows.
    pub fn ids_between(
        &self,
        which: Keyed,
        agent_id: &str,
        from_id: &str,
        before_id: &str,
        limit: usize,
    ) -> Result<Vec<(String, u64)>, StoreError> {
        let mut out = Vec::new();
        if from_id >= before_id {
            return Ok(out);
        }
        for row in self.keyed[which.index()]
            .range((agent_id, from_id)..(agent_id, before_id))?
            .take(limit)
        {
            let (k, v) = row?;
            out.push((k.value().1.to_owned(), v.value().len() as u64));
        }
        Ok(out)
    }

    // ---- queue index and counters -------------------------------------

    /// The first `Queued` message of each priority band: (band, seq, id).
    pub fn queue_heads(&self, agent_id: &str) -> Result<Vec<(u8, u64, String)>, StoreError> {
        let mut out = Vec::new();
        let mut band = 0u8;
        loop {
            let mut range = self
                .queue_pending
                .range((agent_id, band, 0u64)..=(agent_id, u8::MAX, u64::MAX))?;
            let Some(row) = range.next() else { break };
            let (k, v) = row?;
            let (_, found, seq) = k.value();
            out.push((found, seq, v.value().to_owned()));
            match found.checked_add(1) {
                Some(next) => band = next,
                None => break,
            }
        }
        Ok(out)
    }

    /// Add a `Queued` message to the agent's dequeue order.
    pub fn queue_push(
        &mut self,
        agent_id: &str,
        band: u8,
        seq: u64,
        message_id: &str,
    ) -> Result<(), StoreError> {
        self.queue_pending
            .insert((agent_id, band, seq), message_id)?;
        Ok(())
    }

    /// Remove a message from the dequeue order (it left `Queued`).
    pub fn queue_remove(&mut self, agent_id: &str, band: u8, seq: u64) -> Result<bool, StoreError> {
        Ok(self.queue_pending.remove((agent_id, band, seq))?.is_some())
    }

    /// The agent's `Queued` messages in dequeue order: (band, seq, id).
    pub fn queue_pending(&self, agent_id: &str) -> Result<Vec<(u8, u64, String)>, StoreError> {
        tables::queue_pending(&self.queue_pending, agent_id)
    }

    /// Increment and return a per-agent counter (first value is 1).
    pub fn next_counter(&mut self, agent_id: &str, name: &str) -> Result<u64, StoreError> {
        let current = self
            .counters
            .get((agent_id, name))?
            .map(|v| v.value())
            .unwrap_or(0);
        let next = current + 1;
        self.counters.insert((agent_id, name), next)?;
        Ok(next)
    }
}

/// The `meta` key of a runtime setting: kept apart from the store's own
/// rows (`schema_version`, `created_at`, ...).
pub(crate) fn setting_key(name: &str) -> String {
    format!("setting.{name}")
}
