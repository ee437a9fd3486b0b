//! Thread persistence: the [`ThreadStore`] trait, an in-memory store for tests and SQLite as the
//! embedded default.
//!
//! A store holds each thread's entries exactly as `serde_json` wrote them (provider meta such as
//! thinking signatures and encrypted reasoning survives byte for byte), the thread's header
//! (times, metadata, fork origin), its running totals (usage, token estimates) and the
//! [`ThreadMeta`] an agent needs to come back.
//!
//! # Revisions
//! A stored thread's `rev` is the number of entries committed, which is also the seq the next
//! entry must have. [`ThreadStore::append`] takes the rev the caller last saw and fails with
//! [`StoreError::Conflict`] when another writer got there first, so two writers never
//! interleave. A loaded [`Thread`] carries the stored rev; since an in-memory thread counts a
//! batch of entries as one revision, the stored rev is never below the rev the thread had in
//! memory, and revisions never go backwards across a reload.
//!
//! # Fencing
//! Beside the rev, each thread has a fencing epoch. A writer taking a thread over
//! ([`ThreadStore::claim`]) bumps it; a commit made with [`ThreadStore::append_fenced`] carries
//! the epoch its writer claimed and fails with [`StoreError::Fenced`] once another claim moved
//! it on, checked in the commit's own transaction. The runtime's thread actors claim the
//! threads they load and commit fenced; the plain appends do not look at the epoch.
//!
//! # Failing closed
//! `load` returns `None` only for a thread that does not exist. A thread whose stored data
//! cannot be read is an error naming the thread (and the entry), never an empty thread.
//!
//! # Layout
//! - `error` — [`StoreError`].
//! - `meta` — [`ThreadMeta`] and [`ThreadKey`]: whose thread a stored thread is.
//! - `codec` — what every store checks, encodes and decodes alike: entries continuing a thread,
//!   their totals, a thread rebuilt from its entries' JSON, a stale rev or epoch.
//! - `memory` — [`MemoryStore`].
//! - `sqlite` — [`SqliteStore`], [`SqliteConfig`], [`Durability`]; in `sqlite/`: `open`
//!   (connections, read-only mode, migrating), `migrations`, `threads` (reads and writes of
//!   threads), `ledger` (the usage ledger's rows).
//! - `postgres` (feature `postgres`) — `PostgresStore`, `PostgresConfig`; in `postgres/`:
//!   `migrations` (and migrating), `columns` (reading a row's values), `threads`, `ledger`.
//! - `rows` — what the SQL stores share: the rows they insert and read.
//! - `ledger` — the usage ledger's rows ([`UsageRecord`]), filters and sums: every LLM call's
//!   usage and price, which budgets and `motet usage` read.

mod cluster;
mod codec;
mod directory;
mod error;
mod ledger;
mod memory;
mod meta;
mod open;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
mod sqlite;
mod timers;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use motet_agents::{Entry, ForkOrigin, Thread};
use motet_directives::Usage;
use serde::{Deserialize, Serialize};

pub use cluster::{ClusterStore, Heartbeat, LeaseFence, LeaseGrant, MemberRecord};
pub use directory::{AgentQuery, AgentRecord, directory};
pub use error::StoreError;
pub use ledger::{
    UsageFilter, UsageGroup, UsageRecord, UsageTotals, cached_share, group_totals, utc_day,
};
pub use memory::MemoryStore;
pub use meta::{ThreadKey, ThreadMeta};
pub use open::{
    ACCEPTED_URLS, DATABASE_URL_VAR, OpenStoreError, StoreUrl, StoreUrlError, database_url_from,
    open_store, redact, store_from_env,
};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresConfig, PostgresStore, SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION};
pub use sqlite::{Durability, SCHEMA_VERSION, SqliteConfig, SqliteStore};
pub use timers::{CronTimer, StoredTimer, TimerOwners, TimerWrite};

/// The directory of agents from a store's listing: every thread's summary, and for a query of
/// every agent each thread's key (one read per thread). What [`ThreadStore::agents`] does for
/// a store with no quicker way.
///
/// # Errors
/// The store's.
pub async fn agents_from_listing<S: ThreadStore + ?Sized>(
    store: &S,
    query: &AgentQuery,
) -> Result<Vec<AgentRecord>, StoreError> {
    let mut threads = Vec::new();
    for summary in store.list().await? {
        // A virtual agent's name holds no `/`: its kind's threads are found by their ids.
        let agent = match &query.kind {
            Some(_) => summary.id.split_once('/').map(|(a, _)| a.to_owned()),
            None => store
                .get_meta(&summary.id)
                .await?
                .and_then(|meta| meta.key)
                .map(|key| key.agent().to_owned()),
        };
        if let Some(agent) = agent {
            threads.push((agent, summary.created_at, summary.updated_at));
        }
    }
    Ok(directory(threads, query))
}

/// What a thread is created with: everything but its entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadHeader {
    /// The thread's id.
    pub id: String,
    /// When it was created (Unix milliseconds).
    pub created_at: u64,
    /// Application metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// The thread it was forked from.
    #[serde(default)]
    pub parent: Option<ForkOrigin>,
}

impl ThreadHeader {
    /// A header with no metadata and no parent.
    pub fn new(id: impl Into<String>, created_at: u64) -> Self {
        Self {
            id: id.into(),
            created_at,
            metadata: BTreeMap::new(),
            parent: None,
        }
    }

    /// The header of an existing in-memory thread (its entries are appended separately).
    pub fn of(thread: &Thread) -> Self {
        Self {
            id: thread.id().to_owned(),
            created_at: thread.created_at(),
            metadata: thread.metadata().clone(),
            parent: thread.parent().cloned(),
        }
    }
}

/// What one step of a thread actor writes, as one write ([`ThreadStore::commit_step`]): the
/// entries its strategy added and the state it left (checked against the rev and fencing
/// epoch the writer holds), and the changes it made to the thread's timers. For the thread's
/// first write the thread itself is created in the same write, with its header and meta.
#[derive(Debug, Clone, Copy)]
pub struct StepCommit<'a> {
    /// The thread's id.
    pub thread_id: &'a str,
    /// For the thread's first write: its header and meta. The thread is then created (its
    /// `expected_rev` and `epoch` are 0), and [`StoreError::AlreadyExists`] when it exists.
    pub create: Option<(&'a ThreadHeader, &'a ThreadMeta)>,
    /// The entries to append, seqs from `expected_rev` on.
    pub entries: &'a [Arc<Entry>],
    /// The rev the writer saw.
    pub expected_rev: u64,
    /// The agent state to store, replacing the one before; `None` keeps it.
    pub state: Option<&'a str>,
    /// The fencing epoch the writer holds.
    pub epoch: u64,
    /// The step's changes to its timers, made in order.
    pub timers: &'a [TimerWrite],
    /// In a cluster, the lease of the thread's agent the step is committed under: checked in
    /// the same transaction, so a node that lost the agent cannot write. `None` outside a
    /// cluster (and for agents not leased).
    pub lease: Option<LeaseFence<'a>>,
}

/// A thread taken over and read as a thread actor starts ([`ThreadStore::claim_and_load`]).
#[derive(Debug)]
pub struct ClaimedThread {
    /// The fencing epoch the claim moved the thread to.
    pub epoch: u64,
    /// The thread.
    pub thread: Thread,
    /// The agent state stored with it, if any.
    pub state: Option<String>,
}

/// One thread in a listing: its header and running totals, without its entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// The thread's id.
    pub id: String,
    /// When it was created (Unix milliseconds).
    pub created_at: u64,
    /// When its last entry was committed (Unix milliseconds).
    pub updated_at: u64,
    /// The stored revision: the number of entries, the seq the next entry must have.
    pub rev: u64,
    /// Number of entries (equal to `rev`).
    pub entry_count: u64,
    /// Usage summed over every assistant turn and summary: the session's totals.
    pub usage: Usage,
    /// Sum of the entries' token estimates.
    pub estimated_tokens: u64,
    /// Application metadata.
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// The thread it was forked from.
    pub parent: Option<ForkOrigin>,
    /// The seq of the latest summary entry: a projection's window starts after it.
    pub latest_summary_seq: Option<u64>,
    /// The seq of the latest boundary entry.
    pub latest_boundary_seq: Option<u64>,
}

/// A thread whose stored row a listing could not read, and why.
#[derive(Debug)]
pub struct UnreadableThread {
    /// The thread's id (`<unreadable id>` when the id itself cannot be read).
    pub thread_id: String,
    /// What is wrong with it, naming the thread.
    pub error: StoreError,
}

/// A listing that went on past damaged threads: those it could read, oldest first, and those
/// it could not.
#[derive(Debug, Default)]
pub struct ThreadListing {
    /// Every thread whose row could be read, oldest first.
    pub threads: Vec<ThreadSummary>,
    /// The threads whose row could not be read, in the store's order.
    pub unreadable: Vec<UnreadableThread>,
}

impl ThreadListing {
    /// Sorts rows read one by one into the readable and the unreadable, keeping their order.
    pub(crate) fn of(rows: impl IntoIterator<Item = Result<ThreadSummary, StoreError>>) -> Self {
        let mut listing = Self::default();
        for row in rows {
            match row {
                Ok(summary) => listing.threads.push(summary),
                Err(error) => listing.unreadable.push(UnreadableThread {
                    thread_id: match &error {
                        StoreError::CorruptThread { thread_id, .. }
                        | StoreError::CorruptEntry { thread_id, .. } => thread_id.clone(),
                        _ => rows::UNREADABLE_ID.to_owned(),
                    },
                    error,
                }),
            }
        }
        listing
    }

    /// The readable threads, or the first unreadable one's error: a listing that fails
    /// closed, as [`ThreadStore::list`] does.
    ///
    /// # Errors
    /// The first unreadable thread's error.
    pub fn into_whole(self) -> Result<Vec<ThreadSummary>, StoreError> {
        match self.unreadable.into_iter().next() {
            Some(unreadable) => Err(unreadable.error),
            None => Ok(self.threads),
        }
    }
}

/// Durable storage of threads.
///
/// Every method that changes a thread has finished writing when it returns `Ok` (for SQLite:
/// committed at the configured [`Durability`]); a directive that depends on an append runs
/// after the append returns. That is the commit point of seed 001 §2.3.
#[async_trait]
pub trait ThreadStore: Send + Sync {
    /// Creates an empty thread.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`] when the id is taken; storage failures.
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError>;

    /// Creates a thread with its meta and first entries (seqs from 0) as one write: after a
    /// crash the store holds all of it or none of it. Returns the new rev.
    ///
    /// The default runs [`create`](Self::create), [`put_meta`](Self::put_meta) and
    /// [`append`](Self::append) one after another; a durable store overrides it with one
    /// transaction.
    ///
    /// # Errors
    /// As for [`create`](Self::create) and [`append`](Self::append).
    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        self.create(header).await?;
        if let Some(meta) = meta {
            self.put_meta(&header.id, meta).await?;
        }
        self.append(&header.id, entries, 0).await
    }

    /// The whole thread, or `None` when no thread has this id.
    ///
    /// # Errors
    /// Any stored data that cannot be read is an error naming the thread; never `None`.
    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError>;

    /// The entries committed after revision `rev` (those with `seq >= rev`), for a reader that
    /// already holds the first `rev` entries.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; read failures as for [`load`](Self::load).
    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError>;

    /// Appends `entries` atomically if the thread is still at `expected_rev`; returns the new
    /// rev. The entries must continue the thread: seqs `expected_rev`, `expected_rev + 1`, ...
    /// An empty slice only checks the rev.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] with the current rev when another append came first (nothing
    /// is written); [`StoreError::NonContiguous`]; [`StoreError::NotFound`]; storage failures.
    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError>;

    /// The thread's header and totals, or `None` when it does not exist.
    ///
    /// # Errors
    /// Storage failures, naming the thread.
    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError>;

    /// Every thread's header and totals, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError>;

    /// Every thread's header and totals, oldest first, as [`list`](Self::list) gives them,
    /// except that a thread whose stored row cannot be read is set aside with its error
    /// instead of failing the whole listing: one damaged row does not hide every other
    /// thread. Loading such a thread still fails ([`load`](Self::load) fails closed).
    ///
    /// The default, for a store that cannot tell one bad row from a failed read, is
    /// [`list`](Self::list) with nothing set aside.
    ///
    /// # Errors
    /// Storage failures that are not one thread's: the store cannot be read at all.
    async fn list_readable(&self) -> Result<ThreadListing, StoreError> {
        Ok(ThreadListing {
            threads: self.list().await?,
            unreadable: Vec::new(),
        })
    }

    /// The ids of at most `limit` stored threads, those that sort after `after` (from the
    /// first for `None`), in the store's order of ids: every thread read a page at a time, so
    /// a walk over a large store (a runtime's recovery at boot) holds one page, not a summary
    /// of every thread.
    ///
    /// The default reads every thread's summary ([`list`](Self::list)) for each page; the
    /// built-in stores read the page alone.
    ///
    /// # Errors
    /// Storage failures.
    async fn thread_ids(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = self
            .list()
            .await?
            .into_iter()
            .map(|summary| summary.id)
            .filter(|id| after.is_none_or(|after| id.as_str() > after))
            .collect();
        ids.sort_unstable();
        ids.truncate(limit);
        Ok(ids)
    }

    /// Deletes the thread, its entries and its meta; returns whether it existed.
    ///
    /// # Errors
    /// Storage failures.
    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError>;

    /// Stores the agent's meta for the thread, replacing any earlier one.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; storage failures.
    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError>;

    /// The agent's meta for the thread, or `None` when none was stored.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; undecodable meta is an error naming the thread.
    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError>;

    /// Appends `entries` if the thread is still at `expected_rev` and, in the same write,
    /// replaces the agent state stored with it (opaque text to the store; the runtime writes
    /// JSON). Returns the new rev. With no entries it only checks the rev and stores the state.
    ///
    /// # Errors
    /// As for [`append`](Self::append): nothing is written on a conflict.
    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError>;

    /// The agent state last stored with the thread, or `None` when none was (a thread written
    /// before states were stored, or by another program).
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; storage failures.
    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError>;

    /// The thread's fencing epoch: 0 until a writer [claims](Self::claim) it.
    ///
    /// The default, for a store without fencing, is always 0.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; storage failures.
    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.summary(thread_id)
            .await?
            .map(|_| 0)
            .ok_or_else(|| StoreError::NotFound {
                thread_id: thread_id.to_owned(),
            })
    }

    /// Takes the thread over: bumps its fencing epoch and returns the new one. From then on a
    /// [fenced append](Self::append_fenced) with an older epoch fails with
    /// [`StoreError::Fenced`], whatever its rev — a writer that lost the thread cannot commit
    /// even if it wins a race on the rev.
    ///
    /// The built-in stores fence. The default, for a store without fencing, claims nothing and
    /// returns 0: such a store is safe with one writer per thread only.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; storage failures.
    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.epoch(thread_id).await
    }

    /// [Claims](Self::claim) the thread and reads it and its state
    /// ([`load`](Self::load), [`load_state`](Self::load_state)): what a thread actor does as it
    /// starts, in as few round trips as the store can. `None` for a thread that does not
    /// exist. The thread and the state are read after the claim, but need not be
    /// one snapshot: a caller checks that they agree.
    ///
    /// The default runs the three one after another; the built-in stores do it in one call
    /// (the memory store under one lock, SQLite in one trip to its blocking pool, PostgreSQL in
    /// two statements).
    ///
    /// # Errors
    /// As for [`claim`](Self::claim) and [`load`](Self::load).
    async fn claim_and_load(&self, thread_id: &str) -> Result<Option<ClaimedThread>, StoreError> {
        // A thread the claim did not find is read all the same (at epoch 0, unclaimed): one
        // created meanwhile is taken as it is, and one that cannot be read is an error.
        let epoch = match self.claim(thread_id).await {
            Ok(epoch) => epoch,
            Err(StoreError::NotFound { .. }) => 0,
            Err(error) => return Err(error),
        };
        let Some(thread) = self.load(thread_id).await? else {
            return Ok(None);
        };
        let state = self.load_state(thread_id).await?;
        Ok(Some(ClaimedThread {
            epoch,
            thread,
            state,
        }))
    }

    /// As [`append_with_state`](Self::append_with_state) (with `state`; as
    /// [`append`](Self::append) without), only while the thread's epoch is `epoch`, checked in
    /// the same write.
    ///
    /// The default, for a store without fencing, does not check the epoch.
    ///
    /// # Errors
    /// [`StoreError::Fenced`] when another writer claimed the thread since (nothing is
    /// written); as for [`append`](Self::append) otherwise.
    async fn append_fenced(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: Option<&str>,
        epoch: u64,
    ) -> Result<u64, StoreError> {
        let _ = epoch;
        match state {
            Some(state) => {
                self.append_with_state(thread_id, entries, expected_rev, state)
                    .await
            }
            None => self.append(thread_id, entries, expected_rev).await,
        }
    }

    /// Records one LLM call's usage and price in the usage ledger; it has been written (at the
    /// store's durability) when this returns `Ok`.
    ///
    /// The built-in stores keep a ledger. The default, for a store without one, keeps nothing:
    /// budgets then count only what this process spent since it started.
    ///
    /// # Errors
    /// Storage failures; [`StoreError::Ledger`] for a count the store cannot hold.
    async fn record_usage(&self, record: &UsageRecord) -> Result<(), StoreError> {
        let _ = record;
        Ok(())
    }

    /// The usage ledger's rows that pass `filter`, oldest first. The default, for a store
    /// without a ledger, has none.
    ///
    /// # Errors
    /// Storage failures; [`StoreError::Ledger`] for a row that cannot be read.
    async fn usage_records(&self, filter: &UsageFilter) -> Result<Vec<UsageRecord>, StoreError> {
        let _ = filter;
        Ok(Vec::new())
    }

    /// The usage and cost of the ledger's rows that pass `filter`, summed.
    ///
    /// # Errors
    /// As for [`usage_records`](Self::usage_records).
    async fn usage_totals(&self, filter: &UsageFilter) -> Result<UsageTotals, StoreError> {
        Ok(UsageTotals::of(&self.usage_records(filter).await?))
    }

    /// The store's members and leases, for a cluster of nodes sharing it: the PostgreSQL
    /// store keeps them; the default, for every other store, is `None` (a cluster needs one
    /// store all its nodes share, which checks each commit's lease in the commit's own
    /// transaction).
    fn cluster(self: Arc<Self>) -> Option<Arc<dyn ClusterStore>> {
        None
    }

    /// Whether this store keeps timers ([`put_timer`](Self::put_timer) and the rest). The
    /// built-in stores do. The default, for a store that does not, is `false`: the runtime then
    /// holds every timer in memory, and a restart loses them.
    fn keeps_timers(&self) -> bool {
        false
    }

    /// Keeps `timer` until it has fired for the last time or is removed, replacing one with the
    /// same thread and id. The default keeps nothing (see [`keeps_timers`](Self::keeps_timers)).
    ///
    /// # Errors
    /// Storage failures; [`StoreError::Encode`] for a signal that cannot be written.
    async fn put_timer(&self, timer: &StoredTimer) -> Result<(), StoreError> {
        let _ = timer;
        Ok(())
    }

    /// Removes timer `id` of the thread `key`; returns whether there was one.
    ///
    /// # Errors
    /// Storage failures.
    async fn remove_timer(&self, key: &ThreadKey, id: &str) -> Result<bool, StoreError> {
        let _ = (key, id);
        Ok(false)
    }

    /// Once a firing of timer `id` of `key` has been committed: moves the timer on to `next_ms`,
    /// or removes it when `None` — but only while it is still the timer that fired (due at
    /// `fired_ms`, delivering the signal `signal_id`): one set again since is left as it is.
    /// Returns whether the timer changed.
    ///
    /// # Errors
    /// Storage failures.
    async fn timer_fired(
        &self,
        key: &ThreadKey,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        let _ = (key, id, fired_ms, signal_id, next_ms);
        Ok(false)
    }

    /// The agents the store holds threads of, as `query` asks ([`directory`]).
    ///
    /// The default reads every thread's summary and key; the SQL stores answer with one query.
    ///
    /// # Errors
    /// Storage failures.
    async fn agents(&self, query: &AgentQuery) -> Result<Vec<AgentRecord>, StoreError> {
        agents_from_listing(self, query).await
    }

    /// The timers of the agents `owners` names (by name, or by virtual kind) due within `due`
    /// (milliseconds since the Unix epoch, from its start up to, not including, its end),
    /// soonest first, at most `limit` of them.
    ///
    /// # Errors
    /// Storage failures; [`StoreError::Timer`] for a row that cannot be read.
    async fn due_timers(
        &self,
        due: std::ops::Range<u64>,
        owners: &TimerOwners,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        let _ = (due, owners, limit);
        Ok(Vec::new())
    }

    /// Every timer of the thread `key`, soonest first.
    ///
    /// # Errors
    /// As for [`due_timers`](Self::due_timers).
    async fn timers_of(&self, key: &ThreadKey) -> Result<Vec<StoredTimer>, StoreError> {
        let _ = key;
        Ok(Vec::new())
    }

    /// Writes one step of a thread actor as one write: creates the thread when
    /// [`create`](StepCommit::create) says so, appends the entries and stores the state as
    /// [`append_fenced`](Self::append_fenced) does, and makes the step's timer changes — so a
    /// crash leaves the store with all of the step or none of it, and a timer a step scheduled
    /// is never lost after its step committed. Returns the new rev.
    ///
    /// The default, for a store that cannot write them together, runs
    /// [`create_with`](Self::create_with) (for a first write), [`append_fenced`](Self::append_fenced)
    /// and then each timer change one after another: a crash between them loses the timers. The
    /// built-in stores override it with one transaction (the memory store: under one lock).
    ///
    /// # Errors
    /// As for [`append_fenced`](Self::append_fenced) (and [`create_with`](Self::create_with)
    /// for a first write); nothing is written on a conflict or a stale epoch.
    async fn commit_step(&self, step: &StepCommit<'_>) -> Result<u64, StoreError> {
        refuse_lease(step)?;
        let rev = match step.create {
            Some((header, meta)) => {
                let created = self.create_with(header, Some(meta), step.entries).await?;
                self.append_fenced(step.thread_id, &[], created, step.state, 0)
                    .await?
            }
            None => {
                self.append_fenced(
                    step.thread_id,
                    step.entries,
                    step.expected_rev,
                    step.state,
                    step.epoch,
                )
                .await?
            }
        };
        for write in step.timers {
            match write {
                TimerWrite::Put(timer) => self.put_timer(timer).await?,
                TimerWrite::Remove { key, id } => {
                    self.remove_timer(key, id).await?;
                }
                TimerWrite::Fired {
                    key,
                    id,
                    fired_ms,
                    signal_id,
                    next_ms,
                } => {
                    self.timer_fired(key, id, *fired_ms, signal_id, *next_ms)
                        .await?;
                }
            }
        }
        Ok(rev)
    }

    /// Appends the entries of `thread` that the store does not hold yet, given the rev the
    /// store had when the caller last saw it; returns the new rev.
    ///
    /// # Errors
    /// As for [`append`](Self::append).
    async fn commit(&self, thread: &Thread, stored_rev: u64) -> Result<u64, StoreError> {
        let start = usize::try_from(stored_rev)
            .unwrap_or(usize::MAX)
            .min(thread.entry_count());
        self.append(thread.id(), &thread.to_list()[start..], stored_rev)
            .await
    }
}

/// [`StoreError::NoLeases`] for a step carrying a lease, in a store that cannot check one.
pub(crate) fn refuse_lease(step: &StepCommit<'_>) -> Result<(), StoreError> {
    match step.lease {
        Some(lease) => Err(StoreError::NoLeases {
            agent: lease.agent.to_owned(),
        }),
        None => Ok(()),
    }
}
