//! A [`ThreadStore`] on a PostgreSQL server, for threads shared by several processes or hosts.
//!
//! # Driver
//! tokio-postgres with a deadpool-postgres pool: an async driver (no blocking pool, unlike
//! rusqlite), maintained, and light to build (no macros, no compile-time database checks as
//! sqlx has, which would need a server or a cached query file at build time). The pool keeps up
//! to [`PostgresConfig::pool_size`] connections, each with its prepared statements cached;
//! a connection the server dropped is noticed when it is handed back and replaced. There is no
//! TLS in this build: use a server on loopback or a private network.
//!
//! # Transactions
//! Every append is one transaction at READ COMMITTED: `SELECT ... FOR UPDATE` locks the
//! thread's row, the rev (and, for a fenced append, the epoch) is checked against it, the
//! entries go in with one `INSERT ... SELECT FROM unnest(...)`, and one `UPDATE` moves the rev,
//! the totals, the window marks and the state. Two writers on one thread queue on the row lock;
//! the second sees the first's rev once it commits and gets [`StoreError::Conflict`], so
//! nothing interleaves, across pools and processes alike. A load reads the thread row and its
//! entries in one REPEATABLE READ snapshot.
//!
//! Entries are stored as the exact text `serde_json` wrote (`text`, not `jsonb`). An append
//! has returned once the server committed it, at the server's `synchronous_commit` setting
//! (on by default: flushed to its write-ahead log).
//!
//! # Fencing
//! Besides its rev, each thread has an epoch. A process that takes a thread over (after the
//! previous owner was presumed dead) calls [`ThreadStore::claim`], which bumps the epoch and
//! returns the new one, then writes with [`ThreadStore::append_fenced`] and that epoch. A
//! fenced append checks the epoch in the same transaction as the rev and fails with
//! [`StoreError::Fenced`] once another claim moved it on: an old owner that wakes up cannot
//! commit even if it wins a race on the rev. The plain [`ThreadStore`] appends do not look at
//! the epoch; a thread under claims is written only through fenced appends.
//!
//! # Failing closed
//! As in the SQLite store: a row whose integers or JSON cannot be read is
//! [`StoreError::CorruptThread`] or [`StoreError::CorruptEntry`] naming the thread; a server
//! that refuses, drops or times out is [`StoreError::ServerThread`] (or
//! [`StoreError::Server`] for operations on no one thread).
//!
//! # Layout
//! This file holds the store, its settings, the bound on every operation and the
//! [`ThreadStore`] face; in `postgres/`: `migrations` (the schema, and migrating under an
//! advisory lock), `columns` (a row's values read, the thread's damage when they do not),
//! `read` (a thread in one snapshot, entries after a rev, summaries, a row's columns), `write`
//! (creating, appending under the row lock, deleting, the meta) and `ledger` (the usage ledger).

mod cluster;
mod columns;
mod ledger;
mod migrations;
mod read;
mod timers;
mod write;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, Object, Pool, Runtime};
use motet_agents::{Entry, Thread};
use tokio_postgres::NoTls;

pub use migrations::SCHEMA_VERSION;

use super::codec::{Append, decode_meta, encode_json};
use super::timers::{TimerOwners, TimerRow};
use super::{
    AgentQuery, AgentRecord, ClaimedThread, StepCommit, StoreError, StoredTimer, ThreadHeader,
    ThreadKey, ThreadListing, ThreadMeta, ThreadStore, ThreadSummary, UsageFilter, UsageRecord,
};

/// How to open a [`PostgresStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresConfig {
    /// The most connections the pool holds.
    pub pool_size: usize,
    /// How long connecting to the server may take (unless the URL sets `connect_timeout`).
    pub connect_timeout: Duration,
    /// How long an operation waits for a free pooled connection.
    pub wait_timeout: Duration,
    /// How long one store operation may take in all, waiting for locks included: the
    /// server's `statement_timeout` and `lock_timeout` for each of its statements (unless the
    /// URL's `options` set them), and a bound on the whole operation here, so that a lock held
    /// elsewhere (by a process the network cut off, which keeps it until TCP notices) or a
    /// server that stopped answering is a [`StoreError`] in bounded time, never a hang.
    pub operation_timeout: Duration,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        Self {
            pool_size: 8,
            connect_timeout: Duration::from_secs(5),
            wait_timeout: Duration::from_secs(30),
            operation_timeout: Duration::from_secs(30),
        }
    }
}

impl PostgresConfig {
    /// Sets the pool size (at least 1).
    pub fn with_pool_size(mut self, pool_size: usize) -> Self {
        self.pool_size = pool_size.max(1);
        self
    }

    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how long an operation waits for a pooled connection.
    pub fn with_wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = timeout;
        self
    }

    /// Sets how long one operation may take ([`operation_timeout`](Self::operation_timeout));
    /// at least a millisecond.
    pub fn with_operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout.max(Duration::from_millis(1));
        self
    }
}

/// `op`, or [`StoreError::Timeout`] once `limit` has passed (the operation is dropped: its
/// transaction, if any, is rolled back when the server sees the connection again or ends it).
pub(super) async fn bounded<T>(
    limit: Duration,
    thread_id: Option<&str>,
    op: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(limit, op).await.unwrap_or_else(|_| {
        Err(StoreError::Timeout {
            thread_id: thread_id.map(str::to_owned),
            after: limit,
        })
    })
}

/// What this side adds to [`PostgresConfig::operation_timeout`] before it gives up on an
/// operation itself, so that the server's own statement or lock timeout, which says more,
/// usually comes first.
const CLIENT_GRACE: Duration = Duration::from_secs(1);

/// Threads in a PostgreSQL database (in the first schema of the connection's `search_path`).
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// The bound on one operation, this side's grace included.
    limit: Duration,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("PostgresStore")
            .field("pool_size", &status.max_size)
            .field("connections", &status.size)
            .finish()
    }
}

pub(super) fn server_err<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    source: E,
) -> StoreError {
    StoreError::Server {
        source: source.into(),
    }
}

pub(super) fn thread_err<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    thread_id: &str,
) -> impl Fn(E) -> StoreError + '_ {
    move |source| StoreError::ServerThread {
        thread_id: thread_id.to_owned(),
        source: source.into(),
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host:port/db`, or the
    /// `key=value` form) with the default settings and brings its schema up to date.
    ///
    /// # Errors
    /// [`StoreError::Server`] when the URL is malformed or the server cannot be reached;
    /// [`StoreError::ServerNotAStore`]; [`StoreError::ServerSchemaTooNew`].
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, PostgresConfig::default()).await
    }

    /// Connects to the database at `url` with `config` and brings its schema up to date.
    ///
    /// # Errors
    /// As for [`open`](Self::open).
    pub async fn open_with(url: &str, config: PostgresConfig) -> Result<Self, StoreError> {
        let mut pg: tokio_postgres::Config = url.parse().map_err(server_err)?;
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(config.connect_timeout);
        }
        if pg.get_application_name().is_none() {
            pg.application_name("motet");
        }
        // Each statement's (and each lock wait's) bound is the server's to enforce too; the
        // URL's own `options` come after these, so a setting there wins.
        let ms = config.operation_timeout.as_millis().max(1);
        let options = format!(
            "-c statement_timeout={ms} -c lock_timeout={ms} {}",
            pg.get_options().unwrap_or_default()
        );
        pg.options(options.trim_end());
        let pool = Pool::builder(Manager::new(pg, NoTls))
            .max_size(config.pool_size.max(1))
            .wait_timeout(Some(config.wait_timeout))
            .create_timeout(Some(config.connect_timeout))
            .recycle_timeout(Some(config.connect_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(server_err)?;
        let limit = config.operation_timeout.saturating_add(CLIENT_GRACE);
        let open = async {
            let mut client = pool.get().await.map_err(server_err)?;
            migrations::migrate(&mut client).await
        };
        bounded(limit, None, open).await?;
        Ok(Self { pool, limit })
    }

    /// A pooled connection, for an operation on one thread.
    async fn client(&self, thread_id: &str) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(thread_err(thread_id))
    }
}

#[async_trait]
impl ThreadStore for PostgresStore {
    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.epoch_by(
            thread_id,
            "UPDATE threads SET epoch = epoch + 1 WHERE id = $1 RETURNING epoch",
        )
        .await
    }

    async fn claim_and_load(&self, thread_id: &str) -> Result<Option<ClaimedThread>, StoreError> {
        self.claim_thread(thread_id).await
    }

    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.epoch_by(thread_id, "SELECT epoch FROM threads WHERE id = $1")
            .await
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
        self.append_checked(thread_id, entries, append).await
    }

    async fn commit_step(&self, step: &StepCommit<'_>) -> Result<u64, StoreError> {
        self.write_step(step).await
    }

    fn cluster(self: Arc<Self>) -> Option<Arc<dyn super::ClusterStore>> {
        Some(self)
    }

    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        self.create_thread(header, None, None).await.map(|_| ())
    }

    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        let meta = meta.map(|m| encode_json(&header.id, m)).transpose()?;
        self.create_thread(header, meta, Some(entries)).await
    }

    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        self.load_thread(thread_id).await
    }

    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        self.entries_after(thread_id, rev).await
    }

    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        self.append_checked(thread_id, entries, Append::plain(expected_rev))
            .await
    }

    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        let append = Append::with_state(expected_rev, state);
        self.append_checked(thread_id, entries, append).await
    }

    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.thread_column(thread_id, "state").await
    }

    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        self.thread_summary(thread_id).await
    }

    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.list_readable().await?.into_whole()
    }

    async fn list_readable(&self) -> Result<ThreadListing, StoreError> {
        self.listing().await
    }

    async fn thread_ids(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        // Every id sorts after the empty one.
        self.ids_after(after.unwrap_or_default(), limit).await
    }

    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.delete_thread(thread_id).await
    }

    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        let json = encode_json(thread_id, meta)?;
        self.store_meta(thread_id, &json).await
    }

    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        let json = self.thread_column(thread_id, "meta").await?;
        json.map(|json| decode_meta(thread_id, &json)).transpose()
    }

    async fn record_usage(&self, record: &UsageRecord) -> Result<(), StoreError> {
        self.record(record).await
    }

    async fn usage_records(&self, filter: &UsageFilter) -> Result<Vec<UsageRecord>, StoreError> {
        self.records(filter).await
    }

    fn keeps_timers(&self) -> bool {
        true
    }

    async fn put_timer(&self, timer: &StoredTimer) -> Result<(), StoreError> {
        self.keep_timer(&TimerRow::of(timer)?).await
    }

    async fn remove_timer(&self, key: &ThreadKey, id: &str) -> Result<bool, StoreError> {
        self.drop_timer(key, id).await
    }

    async fn timer_fired(
        &self,
        key: &ThreadKey,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        self.settle_timer(key, id, fired_ms, signal_id, next_ms)
            .await
    }

    async fn agents(&self, query: &AgentQuery) -> Result<Vec<AgentRecord>, StoreError> {
        match &query.kind {
            Some(kind) => self.agents_of_kind(kind, query).await,
            None => super::agents_from_listing(self, query).await,
        }
    }

    async fn due_timers(
        &self,
        due: std::ops::Range<u64>,
        owners: &TimerOwners,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        self.timers_due(due, owners, limit).await
    }

    async fn timers_of(&self, key: &ThreadKey) -> Result<Vec<StoredTimer>, StoreError> {
        self.thread_timers(key).await
    }
}
