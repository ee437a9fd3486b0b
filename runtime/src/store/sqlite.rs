//! The embedded default [`ThreadStore`]: one SQLite file in WAL mode.
//!
//! rusqlite is blocking, so every call runs on `spawn_blocking` with a connection taken from a
//! `std::sync::Mutex`: one writer connection (appends are `BEGIN IMMEDIATE` transactions that
//! check the rev, insert the entries and update the thread row) and one reader connection (WAL
//! lets it read a consistent snapshot while a write is in progress). No lock is held across an
//! await. Several stores, in one process or several, may open the same file: `BEGIN IMMEDIATE`
//! plus a busy timeout serialize their appends and the rev check turns a lost race into
//! [`StoreError::Conflict`].
//!
//! [`SqliteStore::open_read_only`] opens an existing store without writing anything (no
//! schema, no WAL switch, `query_only` connections), so a store this user may only read can
//! still be listed and loaded; its writes fail with [`StoreError::ReadOnly`].
//!
//! An append has returned only once its transaction committed at the configured
//! [`Durability`]; see docs/persistence.md for what each setting survives and what it costs.
//!
//! # Layout
//! This file holds the store, its settings, the engine's errors as [`StoreError`]s and the
//! [`ThreadStore`] face, which encodes on the caller's task and hands the work to the
//! connection pair (`Inner`) on the blocking pool. The connection pair's work is in `sqlite/`:
//! `open` (connecting, read-only mode, refusing other files, migrating), `migrations` (the
//! schema), `read` (a thread, its entries, summaries, meta, state and epoch), `write`
//! (creating, appending, claiming, deleting, the meta) and `ledger` (the usage ledger).

mod ledger;
mod migrations;
mod open;
mod read;
mod timers;
mod write;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use motet_agents::{Entry, Thread};
use rusqlite::{Connection, ErrorCode};

pub use migrations::SCHEMA_VERSION;

use super::codec::{Append, encode_entries, encode_json};
use super::rows::NewThreadRow;
use super::timers::{TimerOwners, TimerRow, TimerRowWrite};
use super::{
    AgentQuery, AgentRecord, ClaimedThread, StepCommit, StoreError, StoredTimer, ThreadHeader,
    ThreadKey, ThreadListing, ThreadMeta, ThreadStore, ThreadSummary, UsageFilter, UsageRecord,
};

/// How hard a commit works to reach the disk (`PRAGMA synchronous`, in WAL mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=FULL`: the WAL is synced at every commit. A commit that returned survives a
    /// process crash, an OS crash and a power loss. The default: it makes the commit point real.
    #[default]
    Full,
    /// `synchronous=NORMAL`: the WAL is synced only at checkpoints. A commit that returned
    /// survives a process crash, but an OS crash or power loss may roll back the latest commits
    /// (the file stays consistent).
    Normal,
}

impl Durability {
    pub(super) fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// How to open a [`SqliteStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteConfig {
    /// The commit durability.
    pub durability: Durability,
    /// How long a writer waits for another connection's write transaction to finish.
    pub busy_timeout: Duration,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        Self {
            durability: Durability::Full,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

impl SqliteConfig {
    /// Sets the durability.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets the busy timeout.
    pub fn with_busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
}

/// Threads in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

pub(super) fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // rusqlite rolls back an open transaction when it is dropped during a panic, so a poisoned
    // connection is still in a clean state.
    conn.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| match source.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) => read_only(path, &source),
        Some(ErrorCode::NotADatabase) => StoreError::NotAStore {
            path: path.to_owned(),
            reason: source.to_string(),
        },
        Some(ErrorCode::DatabaseCorrupt) => StoreError::CorruptFile {
            path: path.to_owned(),
            source: source.into(),
        },
        _ => StoreError::Database {
            path: path.to_owned(),
            source: source.into(),
        },
    }
}

pub(super) fn thread_err<'a>(
    path: &'a Path,
    thread_id: &'a str,
) -> impl Fn(rusqlite::Error) -> StoreError + 'a {
    move |source| match source.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) => read_only(path, &source),
        _ => StoreError::Thread {
            thread_id: thread_id.to_owned(),
            path: path.to_owned(),
            source: source.into(),
        },
    }
}

/// A write refused because the store is read-only (SQLite's "attempt to write a readonly
/// database").
fn read_only(path: &Path, source: &rusqlite::Error) -> StoreError {
    let reason = if extended_code(source) == Some(rusqlite::ffi::SQLITE_READONLY_DIRECTORY) {
        "this user may not write its folder, where SQLite keeps the store's write-ahead log"
            .to_owned()
    } else {
        source.to_string()
    };
    StoreError::ReadOnly {
        path: path.to_owned(),
        reason,
    }
}

/// SQLite's extended result code, which says why more precisely than the primary one.
pub(super) fn extended_code(error: &rusqlite::Error) -> Option<std::ffi::c_int> {
    match error {
        rusqlite::Error::SqliteFailure(e, _) => Some(e.extended_code),
        _ => None,
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` with the default settings
    /// (`synchronous=FULL`).
    ///
    /// # Errors
    /// [`StoreError::NotAStore`] for a file that is not a motet store;
    /// [`StoreError::SchemaTooNew`]; storage failures.
    pub async fn open(path: impl Into<PathBuf>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteConfig::default()).await
    }

    /// Opens (creating if needed) the store at `path`.
    ///
    /// # Errors
    /// As for [`open`](Self::open).
    pub async fn open_with(
        path: impl Into<PathBuf>,
        config: SqliteConfig,
    ) -> Result<Self, StoreError> {
        let path = path.into();
        Self::opened(move || Inner::open(path, &config)).await
    }

    /// Opens the existing store at `path` for reading only: nothing is created, migrated or
    /// switched to WAL mode, so a store this user may only read (a file or folder without
    /// write permission, a read-only file system) can still be listed and loaded. Every write
    /// fails with [`StoreError::ReadOnly`].
    ///
    /// # Errors
    /// [`StoreError::Missing`] when there is no file at `path`, or an empty one;
    /// [`StoreError::ReadOnly`] for a store whose schema needs an upgrade;
    /// [`StoreError::NotAStore`], [`StoreError::SchemaTooNew`]; storage failures.
    pub async fn open_read_only(path: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let path = path.into();
        Self::opened(move || Inner::open_read_only(path)).await
    }

    /// The store `open` opens on the blocking pool.
    async fn opened(
        open: impl FnOnce() -> Result<Inner, StoreError> + Send + 'static,
    ) -> Result<Self, StoreError> {
        let inner = tokio::task::spawn_blocking(open)
            .await
            .map_err(|e| StoreError::Task(e.to_string()))??;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `work` on the blocking pool.
    async fn run<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))?
    }

    /// Appends as `append` says, the entries encoded on the caller's task: only the transaction
    /// runs on the blocking pool.
    async fn append_checked(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        append: Append<'_>,
    ) -> Result<u64, StoreError> {
        let (encoded, totals) = encode_entries(thread_id, entries, append.expected_rev)?;
        let id = thread_id.to_owned();
        let (expected_rev, epoch) = (append.expected_rev, append.epoch);
        let state = append.state.map(str::to_owned);
        self.run(move |inner| {
            let append = Append {
                expected_rev,
                state: state.as_deref(),
                epoch,
            };
            inner.append(&id, &encoded, &totals, append)
        })
        .await
    }

    /// Runs `work` on the blocking pool with an owned copy of `thread_id`.
    async fn on_thread<T, F>(&self, thread_id: &str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner, String) -> Result<T, StoreError> + Send + 'static,
    {
        let id = thread_id.to_owned();
        self.run(move |inner| work(inner, id)).await
    }
}

#[async_trait]
impl ThreadStore for SqliteStore {
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        let row = NewThreadRow::of(header)?;
        self.run(move |inner| inner.create(&row)).await
    }

    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        let row = NewThreadRow::of(header)?;
        let meta = meta.map(|m| encode_json(&row.id, m)).transpose()?;
        let (encoded, totals) = encode_entries(&row.id, entries, 0)?;
        self.run(move |inner| inner.create_with(row, meta, &encoded, &totals))
            .await
    }

    async fn commit_step(&self, step: &StepCommit<'_>) -> Result<u64, StoreError> {
        super::refuse_lease(step)?;
        let create = step
            .create
            .map(|(header, meta)| {
                let row = NewThreadRow::of(header)?;
                let meta = encode_json(&row.id, meta)?;
                Ok::<_, StoreError>((row, meta))
            })
            .transpose()?;
        let (encoded, totals) = encode_entries(step.thread_id, step.entries, step.expected_rev)?;
        let step = write::EncodedStep {
            thread_id: step.thread_id.to_owned(),
            create,
            encoded,
            totals,
            expected_rev: step.expected_rev,
            state: step.state.map(str::to_owned),
            epoch: step.epoch,
            timers: TimerRowWrite::of(step.timers)?,
        };
        self.run(move |inner| inner.commit_step(&step)).await
    }

    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        self.on_thread(thread_id, |inner, id| inner.load(&id)).await
    }

    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        self.on_thread(thread_id, move |inner, id| inner.load_after(&id, rev))
            .await
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

    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.on_thread(thread_id, |inner, id| inner.epoch(id)).await
    }

    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.on_thread(thread_id, |inner, id| inner.claim(id)).await
    }

    async fn claim_and_load(&self, thread_id: &str) -> Result<Option<ClaimedThread>, StoreError> {
        // One trip to the blocking pool for the three.
        self.on_thread(thread_id, |inner, id| {
            let epoch = match inner.claim(id.clone()) {
                Ok(epoch) => epoch,
                Err(StoreError::NotFound { .. }) => return Ok(None),
                Err(error) => return Err(error),
            };
            let Some(thread) = inner.load(&id)? else {
                return Ok(None);
            };
            let state = inner.load_state(id)?;
            Ok(Some(ClaimedThread {
                epoch,
                thread,
                state,
            }))
        })
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

    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.on_thread(thread_id, |inner, id| inner.load_state(id))
            .await
    }

    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        self.on_thread(thread_id, |inner, id| inner.summary(&id))
            .await
    }

    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.list_readable().await?.into_whole()
    }

    async fn agents(&self, query: &AgentQuery) -> Result<Vec<AgentRecord>, StoreError> {
        let query = query.clone();
        self.run(move |inner| inner.agents(&query)).await
    }

    async fn list_readable(&self) -> Result<ThreadListing, StoreError> {
        self.run(Inner::list_readable).await
    }

    async fn thread_ids(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        // Every id sorts after the empty one.
        let after = after.unwrap_or_default().to_owned();
        self.run(move |inner| inner.thread_ids(&after, limit)).await
    }

    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.on_thread(thread_id, |inner, id| inner.delete(&id))
            .await
    }

    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        let json = encode_json(thread_id, meta)?;
        self.on_thread(thread_id, move |inner, id| inner.put_meta(id, &json))
            .await
    }

    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        self.on_thread(thread_id, |inner, id| inner.get_meta(id))
            .await
    }

    async fn record_usage(&self, record: &UsageRecord) -> Result<(), StoreError> {
        let record = record.clone();
        self.run(move |inner| inner.record_usage(&record)).await
    }

    async fn usage_records(&self, filter: &UsageFilter) -> Result<Vec<UsageRecord>, StoreError> {
        let filter = filter.clone();
        self.run(move |inner| inner.usage_records(&filter)).await
    }

    fn keeps_timers(&self) -> bool {
        true
    }

    async fn put_timer(&self, timer: &StoredTimer) -> Result<(), StoreError> {
        let row = TimerRow::of(timer)?;
        self.run(move |inner| inner.put_timer(&row)).await
    }

    async fn remove_timer(&self, key: &ThreadKey, id: &str) -> Result<bool, StoreError> {
        let (thread_id, id) = (key.store_id(), id.to_owned());
        self.run(move |inner| inner.remove_timer(&thread_id, &id))
            .await
    }

    async fn timer_fired(
        &self,
        key: &ThreadKey,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        let (thread_id, id, signal_id) = (key.store_id(), id.to_owned(), signal_id.to_owned());
        self.run(move |inner| inner.timer_fired(&thread_id, &id, fired_ms, &signal_id, next_ms))
            .await
    }

    async fn due_timers(
        &self,
        due: std::ops::Range<u64>,
        owners: &TimerOwners,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        let encode = |names: &[String]| {
            serde_json::to_string(names).map_err(|e| StoreError::Encode {
                thread_id: String::new(),
                reason: format!("agent names: {e}"),
            })
        };
        let (agents, kinds) = (encode(&owners.agents)?, encode(&owners.kinds)?);
        self.run(move |inner| inner.due_timers(&due, &agents, &kinds, limit))
            .await
    }

    async fn timers_of(&self, key: &ThreadKey) -> Result<Vec<StoredTimer>, StoreError> {
        let key = key.clone();
        self.run(move |inner| inner.timers_of(&key)).await
    }
}
