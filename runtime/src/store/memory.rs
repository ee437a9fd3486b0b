//! An in-memory [`ThreadStore`] for tests and throwaway sessions: the same semantics as SQLite,
//! nothing survives the process.
//!
//! It keeps the entries it is given, not their JSON: an agent's thread and the store share one
//! copy of each entry (`Arc`), and a thread loaded back holds those same entries. Nothing is
//! encoded or decoded; the SQLite store's tests cover what survives encoding.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use motet_agents::{Entry, Lineage, Thread, ThreadHead};

use super::codec::{
    Append, check_contiguous, check_epoch, check_rev, decode_meta, encode_json, not_found,
    totals_of,
};
use super::{
    ClaimedThread, StepCommit, StoreError, StoredTimer, ThreadHeader, ThreadKey, ThreadMeta,
    ThreadStore, ThreadSummary, TimerOwners, TimerWrite, UsageFilter, UsageRecord,
};

/// One stored thread: its meta, state and entries (shared with the threads that hold them). Its
/// id is the map's key. Its summary's counts (rev, usage, tokens, latest summary and boundary,
/// last update) are the entries', summed when a summary is asked for (listing threads, rarely)
/// rather than kept beside them in every thread's record.
#[derive(Debug)]
struct Stored {
    created_at: u64,
    /// Metadata and fork origin, which few threads have: one word for the rest.
    lineage: Option<Box<Lineage>>,
    /// The meta as JSON: read back on recovery only, and a fraction of the map's memory.
    meta: Option<Box<str>>,
    /// The agent state stored with the last commit.
    state: Option<Box<str>>,
    entries: Vec<Arc<Entry>>,
    /// Creation order, for `list`.
    order: u64,
    /// The fencing epoch.
    epoch: u64,
}

impl Stored {
    /// Entries appended so far.
    fn rev(&self) -> u64 {
        self.entries.len() as u64
    }

    /// When it last changed: its newest entry's time, or its creation's.
    fn updated_at(&self) -> u64 {
        let newest = self.entries.iter().map(|e| e.at).max();
        self.created_at.max(newest.unwrap_or(0))
    }

    /// The thread `id`, its entries shared with the store.
    fn thread(&self, id: &str) -> Thread {
        let lineage = self.lineage.as_deref();
        let head = ThreadHead {
            id: id.to_owned(),
            rev: self.rev(),
            created_at: self.created_at,
            updated_at: self.updated_at(),
            metadata: Lineage::metadata_of(lineage).clone(),
            parent: Lineage::parent_of(lineage).cloned(),
        };
        Thread::from_entries(head, self.entries.iter().cloned())
    }

    /// The summary of the thread `id`.
    fn summary(&self, id: &str) -> ThreadSummary {
        let totals = totals_of(&self.entries);
        ThreadSummary {
            id: id.to_owned(),
            created_at: self.created_at,
            updated_at: self.created_at.max(totals.max_at),
            rev: self.rev(),
            entry_count: self.rev(),
            usage: totals.usage,
            estimated_tokens: totals.estimated_tokens,
            metadata: Lineage::metadata_of(self.lineage.as_deref()).clone(),
            parent: Lineage::parent_of(self.lineage.as_deref()).cloned(),
            latest_summary_seq: totals.latest_summary_seq,
            latest_boundary_seq: totals.latest_boundary_seq,
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// By id, hashed: a lookup (every commit, every actor start) costs the same however many
    /// threads the store holds, where an ordered map compares ids down its depth (ids of one
    /// agent's threads share long prefixes). Boxed: a map's room beyond its threads holds a
    /// word each, not a record.
    threads: HashMap<Box<str>, Box<Stored>, foldhash::fast::RandomState>,
    created: u64,
}

/// The in-memory usage ledger: one compact row per call, its names shared between rows (an
/// agent's calls name the same agent, thread, tenant and model; a request's, the same request),
/// so a store kept for a long session holds about a hundred bytes a call.
#[derive(Debug, Default)]
struct Ledger {
    rows: Vec<Row>,
    names: std::collections::HashSet<Arc<str>, foldhash::fast::RandomState>,
}

impl Ledger {
    /// The shared copy of `name`.
    fn name(&mut self, name: &str) -> Arc<str> {
        if let Some(known) = self.names.get(name) {
            return Arc::clone(known);
        }
        let new: Arc<str> = Arc::from(name);
        self.names.insert(Arc::clone(&new));
        new
    }

    fn push(&mut self, record: &UsageRecord) {
        let row = Row {
            at: record.at,
            agent: self.name(&record.agent),
            thread: self.name(&record.thread),
            request: record.request.as_deref().map(|r| self.name(r)),
            tenant: record.tenant.as_deref().map(|t| self.name(t)),
            model: self.name(&record.model),
            kind: record.kind,
            usage: record.usage,
            cost: record.cost,
        };
        self.rows.push(row);
    }
}

/// One call in the in-memory ledger.
#[derive(Debug)]
struct Row {
    at: u64,
    agent: Arc<str>,
    thread: Arc<str>,
    request: Option<Arc<str>>,
    tenant: Option<Arc<str>>,
    model: Arc<str>,
    kind: motet_providers::CallKind,
    usage: motet_directives::Usage,
    cost: Option<motet_providers::Cost>,
}

impl Row {
    /// Whether the row passes `filter` (as [`UsageFilter::matches`] on its record).
    fn passes(&self, filter: &UsageFilter) -> bool {
        let same = |want: &Option<String>, have: Option<&str>| {
            want.as_deref().is_none_or(|want| Some(want) == have)
        };
        filter.since.is_none_or(|since| self.at >= since)
            && filter.before.is_none_or(|before| self.at < before)
            && same(&filter.agent, Some(&self.agent))
            && same(&filter.thread, Some(&self.thread))
            && same(&filter.request, self.request.as_deref())
            && same(&filter.tenant, self.tenant.as_deref())
    }

    fn record(&self) -> UsageRecord {
        UsageRecord {
            at: self.at,
            agent: self.agent.to_string(),
            thread: self.thread.to_string(),
            request: self.request.as_deref().map(str::to_owned),
            tenant: self.tenant.as_deref().map(str::to_owned),
            model: self.model.to_string(),
            kind: self.kind,
            usage: self.usage,
            cost: self.cost,
        }
    }
}

/// Threads in a map behind a mutex.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// The usage ledger, apart from the threads: recording a call never waits for a commit.
    ledger: Mutex<Ledger>,
    /// Timers by thread store id and schedule id.
    timers: Mutex<BTreeMap<(String, String), StoredTimer>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn timers(&self) -> MutexGuard<'_, BTreeMap<(String, String), StoredTimer>> {
        self.timers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-applied append: every change is
        // computed first and then written with infallible operations.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends as `append` says, under one lock and after every check.
    fn append_checked(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        append: Append<'_>,
    ) -> Result<u64, StoreError> {
        check_contiguous(thread_id, entries, append.expected_rev)?;
        let mut inner = self.lock();
        if let Some(epoch) = append.epoch {
            let stored = inner.threads.get(thread_id);
            let current = stored
                .map(|s| s.epoch)
                .ok_or_else(|| not_found(thread_id))?;
            check_epoch(thread_id, epoch, current)?;
        }
        let rev = inner.append(thread_id, entries, append.expected_rev)?;
        if let (Some(state), Some(stored)) = (append.state, inner.threads.get_mut(thread_id)) {
            stored.state = Some(state.into());
        }
        Ok(rev)
    }
}

impl Inner {
    fn create(&mut self, header: &ThreadHeader) -> Result<(), StoreError> {
        if self.threads.contains_key(header.id.as_str()) {
            return Err(StoreError::AlreadyExists {
                thread_id: header.id.clone(),
            });
        }
        self.created += 1;
        let order = self.created;
        self.threads.insert(
            header.id.as_str().into(),
            Box::new(Stored {
                created_at: header.created_at,
                lineage: Lineage::of(header.metadata.clone(), header.parent.clone()),
                meta: None,
                state: None,
                entries: Vec::new(),
                order,
                epoch: 0,
            }),
        );
        Ok(())
    }

    fn append(
        &mut self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        let stored = self
            .threads
            .get_mut(thread_id)
            .ok_or_else(|| not_found(thread_id))?;
        let s = &mut **stored;
        check_rev(thread_id, expected_rev, s.rev())?;
        if entries.is_empty() {
            return Ok(s.rev());
        }
        if s.entries.capacity() - s.entries.len() < entries.len() {
            s.entries
                .reserve_exact(room_to_add(s.entries.len(), entries.len()));
        }
        s.entries.extend_from_slice(entries);
        Ok(s.rev())
    }
}

/// How much room a thread's list of `len` entries takes on to append `adding` more. Kept for
/// the thread's life (the store holds every thread it was given), so the list grows by what it
/// needs while it is short — copying up to [`EXACT_BELOW`] pointers on a commit costs less
/// than the room a quiet thread would hold — and by half, rather than doubled, after that.
fn room_to_add(len: usize, adding: usize) -> usize {
    if len < EXACT_BELOW {
        adding
    } else {
        adding.max(len / 2)
    }
}

/// Below this many entries a thread's list grows by exactly what each commit adds.
const EXACT_BELOW: usize = 32;

#[async_trait]
impl ThreadStore for MemoryStore {
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        self.lock().create(header)
    }

    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        check_contiguous(&header.id, entries, 0)?;
        let meta = meta.map(|m| encode_meta(&header.id, m)).transpose()?;
        // Under one lock, after every check: all of it or none of it.
        let mut inner = self.lock();
        inner.create(header)?;
        let rev = inner.append(&header.id, entries, 0)?;
        if let Some(stored) = inner.threads.get_mut(header.id.as_str()) {
            stored.meta = meta;
        }
        Ok(rev)
    }

    async fn commit_step(&self, step: &StepCommit<'_>) -> Result<u64, StoreError> {
        super::refuse_lease(step)?;
        let thread_id = step.thread_id;
        check_contiguous(thread_id, step.entries, step.expected_rev)?;
        let meta = step
            .create
            .map(|(header, meta)| encode_meta(&header.id, meta))
            .transpose()?;
        // Under the threads' lock, with the timers' taken inside it (the only place holding
        // both, so always in this order), after every check: all of the step or none of it.
        let mut inner = self.lock();
        match step.create {
            Some((header, _)) => {
                if inner.threads.contains_key(header.id.as_str()) {
                    return Err(StoreError::AlreadyExists {
                        thread_id: header.id.clone(),
                    });
                }
            }
            None => {
                let stored = inner.threads.get(thread_id);
                let stored = stored.ok_or_else(|| not_found(thread_id))?;
                check_epoch(thread_id, step.epoch, stored.epoch)?;
                check_rev(thread_id, step.expected_rev, stored.rev())?;
            }
        }
        let mut timers = self.timers();
        if let Some((header, _)) = step.create {
            inner.create(header)?;
        }
        let rev = inner.append(thread_id, step.entries, step.expected_rev)?;
        if let Some(stored) = inner.threads.get_mut(thread_id) {
            if meta.is_some() {
                stored.meta = meta;
            }
            if let Some(state) = step.state {
                stored.state = Some(state.into());
            }
        }
        for write in step.timers {
            match write {
                TimerWrite::Put(timer) => {
                    timers.insert((timer.key.store_id(), timer.id.clone()), timer.clone());
                }
                TimerWrite::Remove { key, id } => {
                    timers.remove(&(key.store_id(), id.clone()));
                }
                TimerWrite::Fired {
                    key,
                    id,
                    fired_ms,
                    signal_id,
                    next_ms,
                } => {
                    let key = (key.store_id(), id.clone());
                    settle(&mut timers, &key, *fired_ms, signal_id, *next_ms);
                }
            }
        }
        Ok(rev)
    }

    async fn claim_and_load(&self, thread_id: &str) -> Result<Option<ClaimedThread>, StoreError> {
        let mut inner = self.lock();
        let Some(stored) = inner.threads.get_mut(thread_id) else {
            return Ok(None);
        };
        stored.epoch += 1;
        Ok(Some(ClaimedThread {
            epoch: stored.epoch,
            thread: stored.thread(thread_id),
            state: stored.state.as_deref().map(str::to_owned),
        }))
    }

    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        let inner = self.lock();
        Ok(inner.threads.get(thread_id).map(|s| s.thread(thread_id)))
    }

    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        let inner = self.lock();
        let stored = inner
            .threads
            .get(thread_id)
            .ok_or_else(|| not_found(thread_id))?;
        let start = usize::try_from(rev)
            .unwrap_or(usize::MAX)
            .min(stored.entries.len());
        Ok(stored.entries[start..].to_vec())
    }

    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        let append = Append::with_state(expected_rev, state);
        self.append_checked(thread_id, entries, append)
    }

    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.lock()
            .threads
            .get(thread_id)
            .map(|stored| stored.epoch)
            .ok_or_else(|| not_found(thread_id))
    }

    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let stored = inner
            .threads
            .get_mut(thread_id)
            .ok_or_else(|| not_found(thread_id))?;
        stored.epoch += 1;
        Ok(stored.epoch)
    }

    async fn append_fenced(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: Option<&str>,
        epoch: u64,
    ) -> Result<u64, StoreError> {
        let append = Append::fenced(expected_rev, state, epoch);
        self.append_checked(thread_id, entries, append)
    }

    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.lock()
            .threads
            .get(thread_id)
            .map(|stored| stored.state.as_deref().map(str::to_owned))
            .ok_or_else(|| not_found(thread_id))
    }

    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        self.append_checked(thread_id, entries, Append::plain(expected_rev))
    }

    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        Ok(self
            .lock()
            .threads
            .get(thread_id)
            .map(|s| s.summary(thread_id)))
    }

    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        let inner = self.lock();
        let mut stored: Vec<(&Box<str>, &Stored)> =
            inner.threads.iter().map(|(id, s)| (id, &**s)).collect();
        stored.sort_by_key(|(_, s)| (s.created_at, s.order));
        Ok(stored.into_iter().map(|(id, s)| s.summary(id)).collect())
    }

    async fn thread_ids(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let inner = self.lock();
        let mut ids: Vec<&str> = inner
            .threads
            .keys()
            .map(|id| &**id)
            .filter(|id| after.is_none_or(|after| *id > after))
            .collect();
        ids.sort_unstable();
        Ok(ids.into_iter().take(limit).map(str::to_owned).collect())
    }

    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.timers().retain(|(thread, _), _| thread != thread_id);
        Ok(self.lock().threads.remove(thread_id).is_some())
    }

    fn keeps_timers(&self) -> bool {
        true
    }

    async fn put_timer(&self, timer: &StoredTimer) -> Result<(), StoreError> {
        let key = (timer.key.store_id(), timer.id.clone());
        self.timers().insert(key, timer.clone());
        Ok(())
    }

    async fn remove_timer(&self, key: &ThreadKey, id: &str) -> Result<bool, StoreError> {
        let key = (key.store_id(), id.to_owned());
        Ok(self.timers().remove(&key).is_some())
    }

    async fn timer_fired(
        &self,
        key: &ThreadKey,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        let key = (key.store_id(), id.to_owned());
        Ok(settle(
            &mut self.timers(),
            &key,
            fired_ms,
            signal_id,
            next_ms,
        ))
    }

    async fn due_timers(
        &self,
        due: std::ops::Range<u64>,
        owners: &TimerOwners,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        let mut found: Vec<StoredTimer> = self
            .timers()
            .values()
            .filter(|t| due.contains(&t.due_ms) && owners.owns(t.key.agent()))
            .cloned()
            .collect();
        found.sort_by_key(|t| t.due_ms);
        found.truncate(limit);
        Ok(found)
    }

    async fn timers_of(&self, key: &ThreadKey) -> Result<Vec<StoredTimer>, StoreError> {
        let thread = key.store_id();
        let mut timers: Vec<StoredTimer> = self
            .timers()
            .iter()
            .filter(|((t, _), _)| *t == thread)
            .map(|(_, timer)| timer.clone())
            .collect();
        timers.sort_by_key(|t| t.due_ms);
        Ok(timers)
    }

    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        let meta = encode_meta(thread_id, meta)?;
        let mut inner = self.lock();
        let stored = inner
            .threads
            .get_mut(thread_id)
            .ok_or_else(|| not_found(thread_id))?;
        stored.meta = Some(meta);
        Ok(())
    }

    async fn record_usage(&self, record: &UsageRecord) -> Result<(), StoreError> {
        self.ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(record);
        Ok(())
    }

    async fn usage_records(&self, filter: &UsageFilter) -> Result<Vec<UsageRecord>, StoreError> {
        let ledger = self
            .ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut rows: Vec<UsageRecord> = ledger
            .rows
            .iter()
            .filter(|r| r.passes(filter))
            .map(Row::record)
            .collect();
        drop(ledger);
        rows.sort_by_key(|r| r.at);
        Ok(rows)
    }

    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        let inner = self.lock();
        let stored = inner
            .threads
            .get(thread_id)
            .ok_or_else(|| not_found(thread_id))?;
        let meta = stored.meta.as_deref();
        meta.map(|meta| decode_meta(thread_id, meta)).transpose()
    }
}

/// A thread's meta as the store keeps it.
fn encode_meta(thread_id: &str, meta: &ThreadMeta) -> Result<Box<str>, StoreError> {
    encode_json(thread_id, meta).map(String::into_boxed_str)
}

/// Settles the firing of timer `key` due at `fired_ms` with `signal_id`: removed, or moved on
/// to `next_ms`; returns whether it was still that firing (else it is left as it is).
fn settle(
    timers: &mut BTreeMap<(String, String), StoredTimer>,
    key: &(String, String),
    fired_ms: u64,
    signal_id: &str,
    next_ms: Option<u64>,
) -> bool {
    let Some(timer) = timers
        .get_mut(key)
        .filter(|t| t.due_ms == fired_ms && t.signal.id().as_str() == signal_id)
    else {
        return false;
    };
    match next_ms {
        Some(next) => timer.due_ms = next,
        None => {
            timers.remove(key);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_list_grows_by_what_a_commit_adds_a_long_one_by_half() {
        assert_eq!(room_to_add(0, 1), 1);
        assert_eq!(room_to_add(20, 3), 3);
        assert_eq!(room_to_add(31, 40), 40);
        assert_eq!(room_to_add(32, 1), 16);
        assert_eq!(room_to_add(1_000, 1), 500);
        assert_eq!(room_to_add(1_000, 600), 600);
    }
}
