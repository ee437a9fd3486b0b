//! What can go wrong when storing or loading a thread.

use std::path::PathBuf;

/// A thread store failure. Read failures name the thread (and the entry's seq when one entry is
/// at fault) so that a thread that cannot be read fails closed instead of starting over.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another writer appended first: reload (or catch up with `load_after`) and decide again.
    #[error(
        "thread {thread_id} changed concurrently: expected rev {expected}, found rev {current}"
    )]
    Conflict {
        /// The thread.
        thread_id: String,
        /// The rev the caller based its append on.
        expected: u64,
        /// The rev in the store.
        current: u64,
    },
    /// The thread does not exist.
    #[error("thread {thread_id} does not exist")]
    NotFound {
        /// The thread.
        thread_id: String,
    },
    /// `create` for an id that is already taken.
    #[error("thread {thread_id} already exists")]
    AlreadyExists {
        /// The thread.
        thread_id: String,
    },
    /// The appended entries do not continue the thread without a gap or a duplicate.
    #[error(
        "entries appended to thread {thread_id} must continue at seq {expected}, got seq {found}"
    )]
    NonContiguous {
        /// The thread.
        thread_id: String,
        /// The seq the next entry must have.
        expected: u64,
        /// The seq it had.
        found: u64,
    },
    /// One stored entry cannot be decoded.
    #[error("thread {thread_id}: stored entry seq {seq} cannot be decoded: {reason}")]
    CorruptEntry {
        /// The thread.
        thread_id: String,
        /// The entry.
        seq: u64,
        /// Why.
        reason: String,
    },
    /// The thread's stored record is inconsistent or cannot be decoded.
    #[error("thread {thread_id}: stored data cannot be read: {reason}")]
    CorruptThread {
        /// The thread.
        thread_id: String,
        /// Why.
        reason: String,
    },
    /// The database engine failed while reading or writing one thread (a malformed or truncated
    /// file shows up here, on the first thread whose pages are damaged).
    #[error("thread {thread_id}: storage failure in {}: {source}", path.display())]
    Thread {
        /// The thread.
        thread_id: String,
        /// The database file.
        path: PathBuf,
        /// What the engine said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database engine failed on an operation that is not about one thread (open, list).
    #[error("storage failure in {}: {source}", path.display())]
    Database {
        /// The database file.
        path: PathBuf,
        /// What the engine said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The file is not a SQLite database, or a SQLite database that is not a motet store.
    #[error("{} is not a motet thread store: {reason}", path.display())]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// There is no store at the path (no file, or an empty one), and the store was opened
    /// read-only ([`SqliteStore::open_read_only`](super::SqliteStore::open_read_only)), which
    /// creates nothing.
    #[error("there is no thread store at {}", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// The store can be read but not written: it was opened read-only, or the file (or its
    /// folder, where SQLite keeps the write-ahead log) cannot be written by this user or is on
    /// a read-only file system.
    #[error("{} is read-only: {reason}", path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// What needed writing, or why the file cannot be written.
        reason: String,
    },
    /// The file is a damaged database (truncated, overwritten pages): SQLite reports it
    /// malformed.
    #[error("{} is damaged: {source}", path.display())]
    CorruptFile {
        /// The file.
        path: PathBuf,
        /// What the engine said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The file was written by a newer motet with a schema this build does not know.
    #[error("{} has schema version {found}, newer than the {supported} this build supports", path.display())]
    SchemaTooNew {
        /// The file.
        path: PathBuf,
        /// The file's schema version.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// An entry or metadata could not be encoded as JSON.
    #[error("thread {thread_id}: cannot encode for storage: {reason}")]
    Encode {
        /// The thread.
        thread_id: String,
        /// Why.
        reason: String,
    },
    /// A fenced append ([`ThreadStore::append_fenced`](crate::store::ThreadStore::append_fenced)) by a writer whose claim on the thread was taken over: another writer has claimed the
    /// thread since (its epoch moved on), so this one may not commit, even at the right rev.
    /// Nothing is written.
    #[error(
        "thread {thread_id} was claimed by another writer: this writer holds epoch {epoch}, \
         the thread is at epoch {current}"
    )]
    Fenced {
        /// The thread.
        thread_id: String,
        /// The epoch the writer holds (what its claim returned).
        epoch: u64,
        /// The thread's epoch in the store.
        current: u64,
    },
    /// In a cluster, the node no longer holds the lease of the thread's agent at the epoch the
    /// commit carried (another node took the agent over, or this node's membership expired):
    /// nothing was written, and the agent's threads here must stop.
    #[error(
        "agent {agent}: this node no longer holds its lease (epoch {epoch}); another node may \
         host it now, and nothing was written"
    )]
    LeaseLost {
        /// The agent.
        agent: String,
        /// The lease's epoch the commit carried.
        epoch: u64,
    },
    /// A commit carried a lease but the store keeps no leases: a cluster needs the PostgreSQL
    /// store (docs/cluster.md).
    #[error(
        "agent {agent}: the commit is under a cluster lease but this store keeps no leases; a \
         cluster needs a PostgreSQL store"
    )]
    NoLeases {
        /// The agent.
        agent: String,
    },
    /// The database server failed on one thread's operation: it refused or dropped the
    /// connection, no pooled connection came in time, or it answered an SQL error.
    #[error("thread {thread_id}: database server failure: {}", causes(source.as_ref()))]
    ServerThread {
        /// The thread.
        thread_id: String,
        /// What the driver or the pool said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database server failed on an operation that is not about one thread (open, list).
    #[error("database server failure: {}", causes(source.as_ref()))]
    Server {
        /// What the driver or the pool said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server's database (or schema) holds tables that are not a motet store.
    #[error("the database is not a motet thread store: {reason}")]
    ServerNotAStore {
        /// Why.
        reason: String,
    },
    /// The server's store was written by a newer motet with a schema this build does not know.
    #[error(
        "the database has motet schema version {found}, newer than the {supported} this build \
         supports"
    )]
    ServerSchemaTooNew {
        /// The store's schema version.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The store did not finish an operation in its time (a lock held elsewhere, a server
    /// that stopped answering); nothing was committed by it.
    #[error("{}the store did not answer within {} s", on_thread(thread_id.as_deref()), after.as_secs_f64())]
    Timeout {
        /// The thread, when the operation was on one.
        thread_id: Option<String>,
        /// The time it had.
        after: std::time::Duration,
    },
    /// A usage ledger row holds a value that cannot be read back (a negative count, an unknown
    /// cost), or a record has a value the store cannot hold (a count above `i64::MAX`).
    #[error("usage ledger row {row}: {reason}")]
    Ledger {
        /// The row's id in the ledger (0 for a record not yet written).
        row: i64,
        /// What is wrong with it.
        reason: String,
    },
    /// A stored timer's row cannot be read back (its signal or cron settings do not decode).
    #[error("thread {thread_id}: timer {id}: {reason}")]
    Timer {
        /// The thread's store id.
        thread_id: String,
        /// The timer's schedule id.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The blocking task running a database call was cancelled or panicked.
    #[error("store task failed: {0}")]
    Task(String),
}

impl StoreError {
    /// Whether another writer moved the thread on or took it over first: the write lost a
    /// race ([`StoreError::Conflict`], [`StoreError::AlreadyExists`], [`StoreError::Fenced`]),
    /// and what the writer held of the thread is no longer the thread.
    pub fn lost_race(&self) -> bool {
        matches!(
            self,
            Self::Conflict { .. } | Self::AlreadyExists { .. } | Self::Fenced { .. }
        )
    }
}

/// `thread ID: ` before a message about one thread.
fn on_thread(thread_id: Option<&str>) -> String {
    thread_id.map_or_else(String::new, |id| format!("thread {id}: "))
}

/// An error and its sources, each level once: the driver's "db error" says nothing without the
/// server's own message beneath it ("password authentication failed for user ...", "database
/// ... does not exist", "the database system is in recovery mode").
pub(crate) fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}
