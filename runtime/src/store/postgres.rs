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

mod migrations;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, Object, Pool, Runtime, Transaction};
use motet_agents::{Entry, Thread};
use motet_directives::Usage;
use tokio_postgres::{IsolationLevel, NoTls, Row};

pub use migrations::SCHEMA_VERSION;

use super::ledger::{self, Bind, RawRow};
use super::rows::{NewThreadRow, SummaryRow, corrupt, encode_json};
use super::{
    AppendTotals, EncodedEntry, StoreError, StoredHead, ThreadHeader, ThreadListing, ThreadMeta,
    ThreadStore, ThreadSummary, assemble_thread, decode_entries, encode_entries,
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
async fn bounded<T>(
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

fn server_err<E: Into<Box<dyn std::error::Error + Send + Sync>>>(source: E) -> StoreError {
    StoreError::Server {
        source: source.into(),
    }
}

fn thread_err<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    thread_id: &str,
) -> impl Fn(E) -> StoreError + '_ {
    move |source| StoreError::ServerThread {
        thread_id: thread_id.to_owned(),
        source: source.into(),
    }
}

/// A u64 as the `bigint` it is stored as; larger values are refused.
fn to_db(thread_id: &str, what: &str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Encode {
        thread_id: thread_id.to_owned(),
        reason: format!("{what} {value} is above the largest storable integer"),
    })
}

/// Reads a `bigint` column as a u64; a negative or mistyped value is a corrupt thread.
fn get_u64(thread_id: &str, row: &Row, column: &str) -> Result<u64, StoreError> {
    let value: i64 = row
        .try_get(column)
        .map_err(|e| corrupt(thread_id, column, e))?;
    u64::try_from(value).map_err(|_| corrupt(thread_id, column, format!("negative ({value})")))
}

/// Reads a nullable `bigint` column as an optional u64.
fn get_opt_u64(thread_id: &str, row: &Row, column: &str) -> Result<Option<u64>, StoreError> {
    let value: Option<i64> = row
        .try_get(column)
        .map_err(|e| corrupt(thread_id, column, e))?;
    value
        .map(|v| {
            u64::try_from(v).map_err(|_| corrupt(thread_id, column, format!("negative ({v})")))
        })
        .transpose()
}

/// Reads a `text` column.
fn get_text<'a, T: tokio_postgres::types::FromSql<'a>>(
    thread_id: &str,
    row: &'a Row,
    column: &str,
) -> Result<T, StoreError> {
    row.try_get(column)
        .map_err(|e| corrupt(thread_id, column, e))
}

const SUMMARY_COLUMNS: &str = "id, created_at, updated_at, rev, usage, estimated_tokens, metadata, \
                               parent, latest_summary_seq, latest_boundary_seq";

/// Decodes a `threads` row selected with [`SUMMARY_COLUMNS`].
fn decode_summary(row: &Row) -> Result<ThreadSummary, StoreError> {
    let id: String = row.try_get("id").map_err(|e| StoreError::CorruptThread {
        thread_id: super::rows::UNREADABLE_ID.to_owned(),
        reason: format!("id: {e}"),
    })?;
    SummaryRow {
        created_at: get_u64(&id, row, "created_at")?,
        updated_at: get_u64(&id, row, "updated_at")?,
        rev: get_u64(&id, row, "rev")?,
        usage: get_text(&id, row, "usage")?,
        estimated_tokens: get_u64(&id, row, "estimated_tokens")?,
        metadata: get_text(&id, row, "metadata")?,
        parent: get_text(&id, row, "parent")?,
        latest_summary_seq: get_opt_u64(&id, row, "latest_summary_seq")?,
        latest_boundary_seq: get_opt_u64(&id, row, "latest_boundary_seq")?,
        id,
    }
    .decode()
}

/// The `(seq, body)` pairs of entry rows.
fn entry_rows(thread_id: &str, rows: &[Row]) -> Result<Vec<(u64, String)>, StoreError> {
    rows.iter()
        .map(|row| {
            Ok((
                get_u64(thread_id, row, "seq")?,
                get_text(thread_id, row, "body")?,
            ))
        })
        .collect()
}

/// Inserts an empty thread (with its meta, when given); [`StoreError::AlreadyExists`] when the
/// id is taken.
async fn insert_thread(
    client: &impl deadpool_postgres::GenericClient,
    row: &NewThreadRow,
    meta: Option<&str>,
) -> Result<(), StoreError> {
    let err = thread_err(&row.id);
    let stmt = client
        .prepare_cached(
            "INSERT INTO threads (id, created_at, updated_at, rev, usage, estimated_tokens, \
             metadata, parent, meta) VALUES ($1, $2, $2, 0, $3, 0, $4, $5, $6) \
             ON CONFLICT (id) DO NOTHING",
        )
        .await
        .map_err(&err)?;
    let inserted = client
        .execute(
            &stmt,
            &[
                &row.id,
                &to_db(&row.id, "created_at", row.created_at)?,
                &row.usage,
                &row.metadata,
                &row.parent,
                &meta,
            ],
        )
        .await
        .map_err(&err)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists {
            thread_id: row.id.clone(),
        });
    }
    Ok(())
}

/// Appends encoded entries inside the caller's transaction if the thread is at `expected_rev`
/// (and, when `epoch` is given, still at that epoch), and replaces its state when one is given;
/// returns the new rev. The caller commits.
async fn append_in(
    tx: &Transaction<'_>,
    thread_id: &str,
    encoded: &[EncodedEntry],
    totals: &AppendTotals,
    expected_rev: u64,
    state: Option<&str>,
    epoch: Option<u64>,
) -> Result<u64, StoreError> {
    let err = thread_err(thread_id);
    let lock = tx
        .prepare_cached("SELECT rev, usage, epoch FROM threads WHERE id = $1 FOR UPDATE")
        .await
        .map_err(&err)?;
    let Some(row) = tx.query_opt(&lock, &[&thread_id]).await.map_err(&err)? else {
        return Err(StoreError::NotFound {
            thread_id: thread_id.to_owned(),
        });
    };
    let rev = get_u64(thread_id, &row, "rev")?;
    if let Some(epoch) = epoch {
        let current = get_u64(thread_id, &row, "epoch")?;
        if current != epoch {
            return Err(StoreError::Fenced {
                thread_id: thread_id.to_owned(),
                epoch,
                current,
            });
        }
    }
    if rev != expected_rev {
        return Err(StoreError::Conflict {
            thread_id: thread_id.to_owned(),
            expected: expected_rev,
            current: rev,
        });
    }
    if encoded.is_empty() {
        if let Some(state) = state {
            let stmt = tx
                .prepare_cached("UPDATE threads SET state = $2 WHERE id = $1")
                .await
                .map_err(&err)?;
            tx.execute(&stmt, &[&thread_id, &state])
                .await
                .map_err(&err)?;
        }
        return Ok(rev);
    }
    let usage: String = get_text(thread_id, &row, "usage")?;
    let mut usage: Usage =
        serde_json::from_str(&usage).map_err(|e| corrupt(thread_id, "usage", e))?;
    usage += totals.usage;

    let mut seqs = Vec::with_capacity(encoded.len());
    let mut kinds = Vec::with_capacity(encoded.len());
    let mut ats = Vec::with_capacity(encoded.len());
    let mut bodies = Vec::with_capacity(encoded.len());
    for entry in encoded {
        seqs.push(to_db(thread_id, "seq", entry.seq)?);
        kinds.push(entry.kind);
        ats.push(to_db(thread_id, "at", entry.at)?);
        bodies.push(entry.json.as_str());
    }
    let insert = tx
        .prepare_cached(
            "INSERT INTO entries (thread_id, seq, kind, at, body) \
             SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[])",
        )
        .await
        .map_err(&err)?;
    tx.execute(&insert, &[&thread_id, &seqs, &kinds, &ats, &bodies])
        .await
        .map_err(&err)?;

    let new_rev = rev + encoded.len() as u64;
    let update = tx
        .prepare_cached(
            "UPDATE threads SET rev = $2, updated_at = greatest(updated_at, $3), usage = $4, \
             estimated_tokens = estimated_tokens + $5, \
             latest_summary_seq = coalesce($6, latest_summary_seq), \
             latest_boundary_seq = coalesce($7, latest_boundary_seq), \
             state = coalesce($8, state) WHERE id = $1",
        )
        .await
        .map_err(&err)?;
    let summary_seq = totals
        .latest_summary_seq
        .map(|s| to_db(thread_id, "seq", s))
        .transpose()?;
    let boundary_seq = totals
        .latest_boundary_seq
        .map(|s| to_db(thread_id, "seq", s))
        .transpose()?;
    tx.execute(
        &update,
        &[
            &thread_id,
            &to_db(thread_id, "rev", new_rev)?,
            &to_db(thread_id, "at", totals.max_at)?,
            &encode_json(thread_id, &usage)?,
            &to_db(thread_id, "estimated_tokens", totals.estimated_tokens)?,
            &summary_seq,
            &boundary_seq,
            &state,
        ],
    )
    .await
    .map_err(&err)?;
    Ok(new_rev)
}

/// Brings the schema to [`SCHEMA_VERSION`], refusing databases that are not ours or are newer.
async fn migrate(client: &mut Object) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(server_err)?;
    // Stores opening the same database at once migrate one after the other.
    tx.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&migrations::MIGRATION_LOCK],
    )
    .await
    .map_err(server_err)?;
    let found = tx
        .query_one(
            "SELECT to_regclass('motet_schema') IS NOT NULL, \
                    to_regclass('threads') IS NOT NULL OR to_regclass('entries') IS NOT NULL",
            &[],
        )
        .await
        .map_err(server_err)?;
    let has_version: bool = found.try_get(0).map_err(server_err)?;
    let has_tables: bool = found.try_get(1).map_err(server_err)?;
    let version: i64 = if has_version {
        let row = tx
            .query_one("SELECT version FROM motet_schema", &[])
            .await
            .map_err(server_err)?;
        i64::from(row.try_get::<_, i32>(0).map_err(server_err)?)
    } else if has_tables {
        return Err(StoreError::ServerNotAStore {
            reason: "it has tables named threads or entries but no motet_schema table".to_owned(),
        });
    } else {
        tx.batch_execute(migrations::VERSION_TABLE)
            .await
            .map_err(server_err)?;
        0
    };
    if version > SCHEMA_VERSION {
        return Err(StoreError::ServerSchemaTooNew {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version == SCHEMA_VERSION {
        return tx.commit().await.map_err(server_err);
    }
    let start = usize::try_from(version).map_err(|_| StoreError::ServerNotAStore {
        reason: format!("negative schema version {version}"),
    })?;
    for migration in &migrations::MIGRATIONS[start..] {
        tx.batch_execute(migration).await.map_err(server_err)?;
    }
    // SCHEMA_VERSION is the length of a short constant list.
    let new_version = i32::try_from(SCHEMA_VERSION).unwrap_or(i32::MAX);
    tx.execute("UPDATE motet_schema SET version = $1", &[&new_version])
        .await
        .map_err(server_err)?;
    tx.commit().await.map_err(server_err)
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
            migrate(&mut client).await
        };
        bounded(limit, None, open).await?;
        Ok(Self { pool, limit })
    }

    /// A pooled connection, for an operation on one thread.
    async fn client(&self, thread_id: &str) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(thread_err(thread_id))
    }

    async fn append_checked(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: Option<&str>,
        epoch: Option<u64>,
    ) -> Result<u64, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let (encoded, totals) = encode_entries(thread_id, entries, expected_rev)?;
            let err = thread_err(thread_id);
            let mut client = self.client(thread_id).await?;
            let tx = client.transaction().await.map_err(&err)?;
            let rev = append_in(
                &tx,
                thread_id,
                &encoded,
                &totals,
                expected_rev,
                state,
                epoch,
            )
            .await?;
            tx.commit().await.map_err(&err)?;
            Ok(rev)
        })
        .await
    }

    /// Reads the optional text `column` of one thread row; [`StoreError::NotFound`] when there
    /// is no such thread.
    async fn thread_column(
        &self,
        thread_id: &str,
        column: &'static str,
    ) -> Result<Option<String>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client
                .prepare_cached(&format!("SELECT {column} FROM threads WHERE id = $1"))
                .await
                .map_err(&err)?;
            match client.query_opt(&stmt, &[&thread_id]).await.map_err(&err)? {
                Some(row) => get_text(thread_id, &row, column),
                None => Err(StoreError::NotFound {
                    thread_id: thread_id.to_owned(),
                }),
            }
        })
        .await
    }
}

impl PostgresStore {
    /// The `epoch` column `sql` returns for the thread (reading or bumping it).
    async fn epoch_by(&self, thread_id: &str, sql: &str) -> Result<u64, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client.prepare_cached(sql).await.map_err(&err)?;
            match client.query_opt(&stmt, &[&thread_id]).await.map_err(&err)? {
                Some(row) => get_u64(thread_id, &row, "epoch"),
                None => Err(StoreError::NotFound {
                    thread_id: thread_id.to_owned(),
                }),
            }
        })
        .await
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
        self.append_checked(thread_id, entries, expected_rev, state, Some(epoch))
            .await
    }

    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        bounded(self.limit, Some(header.id.as_str()), async {
            let row = NewThreadRow::of(header)?;
            let client = self.client(&row.id).await?;
            insert_thread(&client, &row, None).await
        })
        .await
    }

    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        bounded(self.limit, Some(header.id.as_str()), async {
            let row = NewThreadRow::of(header)?;
            let meta = meta.map(|m| encode_json(&row.id, m)).transpose()?;
            let (encoded, totals) = encode_entries(&row.id, entries, 0)?;
            let err = thread_err(&row.id);
            let mut client = self.client(&row.id).await?;
            let tx = client.transaction().await.map_err(&err)?;
            insert_thread(&tx, &row, meta.as_deref()).await?;
            let rev = append_in(&tx, &row.id, &encoded, &totals, 0, None, None).await?;
            tx.commit().await.map_err(&err)?;
            Ok(rev)
        })
        .await
    }

    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let mut client = self.client(thread_id).await?;
            // One snapshot: the thread row and its entries agree.
            let tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(&err)?;
            let head = tx
                .prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM threads WHERE id = $1"
                ))
                .await
                .map_err(&err)?;
            let Some(row) = tx.query_opt(&head, &[&thread_id]).await.map_err(&err)? else {
                return Ok(None);
            };
            let body = tx
                .prepare_cached("SELECT seq, body FROM entries WHERE thread_id = $1 ORDER BY seq")
                .await
                .map_err(&err)?;
            let rows = tx.query(&body, &[&thread_id]).await.map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            drop(client);
            let summary = decode_summary(&row)?;
            let entries = entry_rows(thread_id, &rows)?;
            let head = StoredHead {
                id: &summary.id,
                rev: summary.rev,
                created_at: summary.created_at,
                updated_at: summary.updated_at,
                metadata: &summary.metadata,
                parent: summary.parent.as_ref(),
            };
            assemble_thread(&head, &entries).map(Some)
        })
        .await
    }

    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let from = to_db(thread_id, "rev", rev)?;
            let client = self.client(thread_id).await?;
            // One statement, so one snapshot: the thread's existence and its committed entries.
            let stmt = client
                .prepare_cached(
                    "SELECT e.seq, e.body FROM threads t \
                     LEFT JOIN entries e ON e.thread_id = t.id AND e.seq >= $2 AND e.seq < t.rev \
                     WHERE t.id = $1 ORDER BY e.seq",
                )
                .await
                .map_err(&err)?;
            let rows = client
                .query(&stmt, &[&thread_id, &from])
                .await
                .map_err(&err)?;
            drop(client);
            if rows.is_empty() {
                return Err(StoreError::NotFound {
                    thread_id: thread_id.to_owned(),
                });
            }
            let mut pairs = Vec::with_capacity(rows.len());
            for row in &rows {
                let seq: Option<i64> = row
                    .try_get("seq")
                    .map_err(|e| corrupt(thread_id, "seq", e))?;
                if seq.is_some() {
                    pairs.push((
                        get_u64(thread_id, row, "seq")?,
                        get_text(thread_id, row, "body")?,
                    ));
                }
            }
            decode_entries(thread_id, &pairs)
        })
        .await
    }

    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        self.append_checked(thread_id, entries, expected_rev, None, None)
            .await
    }

    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        self.append_checked(thread_id, entries, expected_rev, Some(state), None)
            .await
    }

    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.thread_column(thread_id, "state").await
    }

    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM threads WHERE id = $1"
                ))
                .await
                .map_err(&err)?;
            let row = client.query_opt(&stmt, &[&thread_id]).await.map_err(&err)?;
            row.as_ref().map(decode_summary).transpose()
        })
        .await
    }

    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.list_readable().await?.into_whole()
    }

    async fn list_readable(&self) -> Result<ThreadListing, StoreError> {
        bounded(self.limit, None, async {
            let client = self.pool.get().await.map_err(server_err)?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM threads ORDER BY created_at, ord"
                ))
                .await
                .map_err(server_err)?;
            let rows = client.query(&stmt, &[]).await.map_err(server_err)?;
            drop(client);
            Ok(ThreadListing::of(rows.iter().map(decode_summary)))
        })
        .await
    }

    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let mut client = self.client(thread_id).await?;
            let tx = client.transaction().await.map_err(&err)?;
            // The thread row first: that waits for an append holding its lock, so the entries
            // deleted next include everything that append committed.
            let deleted = tx
                .execute("DELETE FROM threads WHERE id = $1", &[&thread_id])
                .await
                .map_err(&err)?;
            tx.execute("DELETE FROM entries WHERE thread_id = $1", &[&thread_id])
                .await
                .map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let json = encode_json(thread_id, meta)?;
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client
                .prepare_cached("UPDATE threads SET meta = $2 WHERE id = $1")
                .await
                .map_err(&err)?;
            let updated = client
                .execute(&stmt, &[&thread_id, &json])
                .await
                .map_err(&err)?;
            if updated == 0 {
                return Err(StoreError::NotFound {
                    thread_id: thread_id.to_owned(),
                });
            }
            Ok(())
        })
        .await
    }

    async fn record_usage(&self, record: &super::UsageRecord) -> Result<(), StoreError> {
        let (ints, cost) = ledger::integers(record)?;
        bounded(self.limit, None, async {
            let client = self.pool.get().await.map_err(server_err)?;
            let insert = client
                .prepare_cached(
                    "INSERT INTO usage_ledger (at, agent, thread, request, tenant, model, kind, \
                     input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, \
                     reasoning_tokens, cost) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                )
                .await
                .map_err(server_err)?;
            client
                .execute(
                    &insert,
                    &[
                        &ints[0],
                        &record.agent,
                        &record.thread,
                        &record.request,
                        &record.tenant,
                        &record.model,
                        &record.kind.as_str(),
                        &ints[1],
                        &ints[2],
                        &ints[3],
                        &ints[4],
                        &ints[5],
                        &cost,
                    ],
                )
                .await
                .map_err(server_err)?;
            Ok(())
        })
        .await
    }

    async fn usage_records(
        &self,
        filter: &super::UsageFilter,
    ) -> Result<Vec<super::UsageRecord>, StoreError> {
        let conditions = ledger::conditions(filter)?;
        bounded(self.limit, None, async {
            let mut sql = format!("SELECT {} FROM usage_ledger", ledger::COLUMNS);
            for (position, (condition, _)) in conditions.iter().enumerate() {
                let joint = if position == 0 { " WHERE " } else { " AND " };
                sql.push_str(&format!("{joint}{condition} ${}", position + 1));
            }
            sql.push_str(" ORDER BY at, id");
            let binds: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = conditions
                .iter()
                .map(|(_, bind)| match bind {
                    Bind::Int(value) => value as &(dyn tokio_postgres::types::ToSql + Sync),
                    Bind::Text(value) => value as &(dyn tokio_postgres::types::ToSql + Sync),
                })
                .collect();
            let client = self.pool.get().await.map_err(server_err)?;
            let rows = client
                .query(sql.as_str(), binds.as_slice())
                .await
                .map_err(server_err)?;
            drop(client);
            rows.iter()
                .map(|row| {
                    let raw = RawRow {
                        id: row.try_get(0).map_err(server_err)?,
                        at: row.try_get(1).map_err(server_err)?,
                        agent: row.try_get(2).map_err(server_err)?,
                        thread: row.try_get(3).map_err(server_err)?,
                        request: row.try_get(4).map_err(server_err)?,
                        tenant: row.try_get(5).map_err(server_err)?,
                        model: row.try_get(6).map_err(server_err)?,
                        kind: row.try_get(7).map_err(server_err)?,
                        counts: [
                            row.try_get(8).map_err(server_err)?,
                            row.try_get(9).map_err(server_err)?,
                            row.try_get(10).map_err(server_err)?,
                            row.try_get(11).map_err(server_err)?,
                            row.try_get(12).map_err(server_err)?,
                        ],
                        cost: row.try_get(13).map_err(server_err)?,
                    };
                    raw.decode()
                })
                .collect()
        })
        .await
    }

    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        let json = self.thread_column(thread_id, "meta").await?;
        json.map(|json| serde_json::from_str(&json).map_err(|e| corrupt(thread_id, "meta", e)))
            .transpose()
    }
}
