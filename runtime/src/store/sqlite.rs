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
//! Why one file of ~970 lines: opening (pragmas, migrations, read-only mode), the write
//! transactions and the row codecs all work on the private connection pair and its error
//! mapping; split by concern, those would have to be visible to the whole crate.

mod migrations;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use motet_agents::{Entry, Thread};
use motet_directives::Usage;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

pub use migrations::SCHEMA_VERSION;

use super::ledger::{self, Bind, RawRow};
use super::rows::{NewThreadRow, SummaryRow, UNREADABLE_ID, corrupt, encode_json};
use super::{
    StoreError, StoredHead, ThreadHeader, ThreadListing, ThreadMeta, ThreadStore, ThreadSummary,
    assemble_thread, decode_entries, encode_entries,
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
    fn pragma(self) -> &'static str {
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

fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // rusqlite rolls back an open transaction when it is dropped during a panic, so a poisoned
    // connection is still in a clean state.
    conn.lock().unwrap_or_else(PoisonError::into_inner)
}

fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
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

fn thread_err<'a>(
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
fn extended_code(error: &rusqlite::Error) -> Option<std::ffi::c_int> {
    match error {
        rusqlite::Error::SqliteFailure(e, _) => Some(e.extended_code),
        _ => None,
    }
}

/// Refuses a folder at `path` by name (SQLite only says it is "unable to open database file").
fn refuse_directory(path: &Path) -> Result<(), StoreError> {
    if path.is_dir() {
        return Err(StoreError::NotAStore {
            path: path.to_owned(),
            reason: "a directory (the store is a file)".to_owned(),
        });
    }
    Ok(())
}

/// Opens one connection with the store's settings.
fn connect(path: &Path, config: &SqliteConfig) -> Result<Connection, StoreError> {
    let err = db_err(path);
    // Not SQLite's default flags: those read a path starting with `file:` as a URI.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(&err)?;
    conn.busy_timeout(config.busy_timeout).map_err(&err)?;
    // The first statements read the file: one that is not a database fails here, and another
    // program's database is refused before anything (the journal mode below) changes it.
    let found = patiently(config.busy_timeout, || identity(&conn)).map_err(&err)?;
    refuse_foreign(path, &found)?;
    // SQLite opens a file it may not write read-only without a word; say so now rather than
    // at the first append.
    if conn.is_readonly(rusqlite::MAIN_DB).map_err(&err)? {
        return Err(StoreError::ReadOnly {
            path: path.to_owned(),
            reason: "this user may not write the file (or it is on a read-only file system)"
                .to_owned(),
        });
    }
    let mode: String = patiently(config.busy_timeout, || {
        conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
    })
    .map_err(&err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::NotAStore {
            path: path.to_owned(),
            reason: format!("cannot switch to WAL mode (journal_mode is {mode})"),
        });
    }
    conn.pragma_update(None, "synchronous", config.durability.pragma())
        .map_err(&err)?;
    Ok(conn)
}

/// Opens one connection that only reads (`query_only`): nothing is created, migrated or
/// switched to WAL mode. The file is opened for writing when this user may write it (SQLite
/// falls back to reading when not), only so that the last connection to close checkpoints the
/// WAL and removes the `-wal` and `-shm` files, as a writer's does: a read-only handle leaves
/// them behind.
fn connect_read_only(path: &Path, config: &SqliteConfig) -> Result<Connection, StoreError> {
    let err = db_err(path);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(&err)?;
    conn.busy_timeout(config.busy_timeout).map_err(&err)?;
    let (conn, found) = match patiently(config.busy_timeout, || identity(&conn)) {
        Ok(found) => (conn, found),
        // A store in WAL mode is read through its `-shm` index, which SQLite creates beside the
        // file when no writer has it open. In a folder this user cannot write it cannot, and
        // then the only way in is to promise SQLite that nobody changes the file while it is
        // read (`immutable`): no writer has the store open (its index would exist), and one
        // that opens it meanwhile can at worst make a read fail as damaged.
        Err(e) if extended_code(&e) == Some(rusqlite::ffi::SQLITE_READONLY_DIRECTORY) => {
            drop(conn);
            let conn = Connection::open_with_flags(
                immutable_uri(path),
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(&err)?;
            let found = identity(&conn).map_err(&err)?;
            (conn, found)
        }
        Err(e) => return Err(err(e)),
    };
    refuse_foreign(path, &found)?;
    if found.version > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: path.to_owned(),
            found: found.version,
            supported: SCHEMA_VERSION,
        });
    }
    if found.version == 0 {
        // An empty database (refuse_foreign let it through): no store was created in it yet.
        return Err(StoreError::Missing {
            path: path.to_owned(),
        });
    }
    if found.version < SCHEMA_VERSION {
        return Err(StoreError::ReadOnly {
            path: path.to_owned(),
            reason: format!(
                "its schema version {} must first be upgraded to {SCHEMA_VERSION}, which writes",
                found.version
            ),
        });
    }
    conn.pragma_update(None, "query_only", true).map_err(&err)?;
    Ok(conn)
}

/// `file:<path>?immutable=1`, the path percent-encoded as SQLite's URI filenames want.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// What a file says about itself, read before anything is written to it.
struct Identity {
    /// `PRAGMA application_id`: [`migrations::APPLICATION_ID`] for a motet store.
    app_id: i32,
    /// How many schema objects it holds.
    tables: i64,
    /// `PRAGMA user_version`: the schema version.
    version: i64,
}

/// The file's [`Identity`], read in one statement: read apart, another process's schema
/// transaction could commit in between and show a file with tables but no application id yet.
fn identity(conn: &Connection) -> rusqlite::Result<Identity> {
    conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id), \
                (SELECT count(*) FROM sqlite_master), \
                (SELECT user_version FROM pragma_user_version)",
        [],
        |row| {
            Ok(Identity {
                app_id: row.get(0)?,
                tables: row.get(1)?,
                version: row.get(2)?,
            })
        },
    )
}

/// Runs `step` again while the file is busy, for up to `patience`. The busy timeout covers
/// most waits, but SQLite skips it where waiting could deadlock: two connections that both read
/// a fresh file and then want it in WAL mode (two processes opening it at once) each hold the
/// read lock the other must see go, and one of them gets "database is locked" at once.
fn patiently<T>(
    patience: Duration,
    mut step: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let deadline = Instant::now() + patience;
    let mut pause = Duration::from_millis(1);
    loop {
        match step() {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            outcome => return outcome,
        }
    }
}

/// Refuses a database that is neither empty nor marked as a motet store.
fn refuse_foreign(path: &Path, found: &Identity) -> Result<(), StoreError> {
    if found.app_id == migrations::APPLICATION_ID {
        return Ok(());
    }
    let reason = if found.app_id != 0 {
        format!(
            "a SQLite database with application_id {:#x}, not a motet store",
            found.app_id
        )
    } else if found.version != 0 {
        format!(
            "a SQLite database at user_version {}, not a motet store",
            found.version
        )
    } else if found.tables != 0 {
        "a SQLite database without motet's application_id".to_owned()
    } else {
        return Ok(()); // empty: a store is created in it
    };
    Err(StoreError::NotAStore {
        path: path.to_owned(),
        reason,
    })
}

/// Brings the schema to [`SCHEMA_VERSION`], refusing files that are not ours or are newer.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let err = db_err(path);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(&err)?;
    // Again inside the write transaction: another process may have created the file since.
    let found = identity(&tx).map_err(&err)?;
    refuse_foreign(path, &found)?;
    let version = found.version;
    if version > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: path.to_owned(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    let start = usize::try_from(version).map_err(|_| StoreError::NotAStore {
        path: path.to_owned(),
        reason: format!("negative schema version {version}"),
    })?;
    for migration in &migrations::MIGRATIONS[start..] {
        tx.execute_batch(migration).map_err(&err)?;
    }
    tx.pragma_update(None, "application_id", migrations::APPLICATION_ID)
        .map_err(&err)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(&err)?;
    tx.commit().map_err(&err)
}

const SUMMARY_COLUMNS: &str = "id, created_at, updated_at, rev, usage, estimated_tokens, metadata, \
                               parent, latest_summary_seq, latest_boundary_seq";

/// A summary row as rusqlite reads it (the columns of `SUMMARY_COLUMNS`, in order). A value
/// that does not read as its column's type (a negative count, text where a number belongs) is
/// this thread's damage, named with it, not a failure of the whole query: a listing goes on
/// past it.
fn summary_row(row: &rusqlite::Row<'_>) -> Result<SummaryRow, StoreError> {
    let id: String = row.get(0).map_err(|e| corrupt(UNREADABLE_ID, "id", e))?;
    fn column<T: rusqlite::types::FromSql>(
        row: &rusqlite::Row<'_>,
        id: &str,
        index: usize,
        name: &str,
    ) -> Result<T, StoreError> {
        row.get(index).map_err(|e| corrupt(id, name, e))
    }
    Ok(SummaryRow {
        created_at: column(row, &id, 1, "created_at")?,
        updated_at: column(row, &id, 2, "updated_at")?,
        rev: column(row, &id, 3, "rev")?,
        usage: column(row, &id, 4, "usage")?,
        estimated_tokens: column(row, &id, 5, "estimated_tokens")?,
        metadata: column(row, &id, 6, "metadata")?,
        parent: column(row, &id, 7, "parent")?,
        latest_summary_seq: column(row, &id, 8, "latest_summary_seq")?,
        latest_boundary_seq: column(row, &id, 9, "latest_boundary_seq")?,
        id,
    })
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
        tokio::task::spawn_blocking(move || Self::open_blocking(path, &config))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))?
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
        tokio::task::spawn_blocking(move || Self::open_read_only_blocking(path))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))?
    }

    fn open_blocking(path: PathBuf, config: &SqliteConfig) -> Result<Self, StoreError> {
        refuse_directory(&path)?;
        let mut writer = connect(&path, config)?;
        migrate(&mut writer, &path)?;
        let reader = connect(&path, config)?;
        reader
            .pragma_update(None, "query_only", true)
            .map_err(db_err(&path))?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(writer),
                reader: Mutex::new(reader),
            }),
        })
    }

    fn open_read_only_blocking(path: PathBuf) -> Result<Self, StoreError> {
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing { path });
            }
            _ => refuse_directory(&path)?,
        }
        let config = SqliteConfig::default();
        let writer = connect_read_only(&path, &config)?;
        let reader = connect_read_only(&path, &config)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(writer),
                reader: Mutex::new(reader),
            }),
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
}

impl Inner {
    fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        let err = thread_err(&self.path, thread_id);
        let mut conn = lock(&self.reader);
        // One read transaction: the thread row and its entries are the same snapshot.
        let tx = conn.transaction().map_err(&err)?;
        let Some(row) = tx
            .query_row(
                &format!("SELECT {SUMMARY_COLUMNS} FROM threads WHERE id = ?1"),
                [thread_id],
                |row| Ok(summary_row(row)),
            )
            .optional()
            .map_err(&err)?
        else {
            return Ok(None);
        };
        let entries = read_entries(&tx, thread_id, 0).map_err(&err)?;
        drop(tx);
        drop(conn);
        let summary = row.and_then(SummaryRow::decode)?;
        let head = StoredHead {
            id: &summary.id,
            rev: summary.rev,
            created_at: summary.created_at,
            updated_at: summary.updated_at,
            metadata: &summary.metadata,
            parent: summary.parent.as_ref(),
        };
        assemble_thread(&head, &entries).map(Some)
    }

    fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        let err = thread_err(&self.path, thread_id);
        let mut conn = lock(&self.reader);
        let tx = conn.transaction().map_err(&err)?;
        let exists = tx
            .query_row("SELECT 1 FROM threads WHERE id = ?1", [thread_id], |_| {
                Ok(())
            })
            .optional()
            .map_err(&err)?;
        if exists.is_none() {
            return Err(StoreError::NotFound {
                thread_id: thread_id.to_owned(),
            });
        }
        let rows = read_entries(&tx, thread_id, rev).map_err(&err)?;
        drop(tx);
        drop(conn);
        decode_entries(thread_id, &rows)
    }

    /// Appends the entries at `expected_rev` and, when given, replaces the thread's state, in
    /// one transaction.
    fn append(
        &self,
        thread_id: &str,
        encoded: &[super::EncodedEntry],
        totals: &super::AppendTotals,
        expected_rev: u64,
        state: Option<&str>,
        epoch: Option<u64>,
    ) -> Result<u64, StoreError> {
        let err = thread_err(&self.path, thread_id);
        let mut conn = lock(&self.writer);
        // IMMEDIATE takes the write lock now, so the rev and epoch read below cannot go stale
        // before the commit, even with other connections on the file.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        if let Some(epoch) = epoch {
            let current = tx
                .query_row(
                    "SELECT epoch FROM threads WHERE id = ?1",
                    [thread_id],
                    |row| row.get::<_, u64>(0),
                )
                .optional()
                .map_err(&err)?
                .ok_or_else(|| StoreError::NotFound {
                    thread_id: thread_id.to_owned(),
                })?;
            if current != epoch {
                return Err(StoreError::Fenced {
                    thread_id: thread_id.to_owned(),
                    epoch,
                    current,
                });
            }
        }
        let rev = append_in(&tx, thread_id, encoded, totals, expected_rev, &err)?;
        if let Some(state) = state {
            tx.execute(
                "UPDATE threads SET state = ?2 WHERE id = ?1",
                params![thread_id, state],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(rev)
    }

    /// Creates the thread, stores its meta and appends its first entries in one transaction:
    /// a crash leaves either all of it or none.
    fn create_with(
        &self,
        row: NewThreadRow,
        meta: Option<String>,
        encoded: &[super::EncodedEntry],
        totals: &super::AppendTotals,
    ) -> Result<u64, StoreError> {
        let err = thread_err(&self.path, &row.id);
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        insert_thread(&tx, &row, &err)?;
        if let Some(meta) = meta {
            tx.execute(
                "UPDATE threads SET meta = ?2 WHERE id = ?1",
                params![row.id, meta],
            )
            .map_err(&err)?;
        }
        let rev = append_in(&tx, &row.id, encoded, totals, 0, &err)?;
        tx.commit().map_err(&err)?;
        Ok(rev)
    }
}

/// Inserts an empty thread; [`StoreError::AlreadyExists`] when the id is taken.
fn insert_thread(
    conn: &Connection,
    row: &NewThreadRow,
    err: &impl Fn(rusqlite::Error) -> StoreError,
) -> Result<(), StoreError> {
    let inserted = conn
        .execute(
            "INSERT INTO threads (id, created_at, updated_at, rev, usage, estimated_tokens, \
             metadata, parent) VALUES (?1, ?2, ?2, 0, ?3, 0, ?4, ?5) \
             ON CONFLICT (id) DO NOTHING",
            params![row.id, row.created_at, row.usage, row.metadata, row.parent],
        )
        .map_err(err)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists {
            thread_id: row.id.clone(),
        });
    }
    Ok(())
}

/// Appends encoded entries inside the caller's transaction if the thread is at
/// `expected_rev`; returns the new rev. The caller commits.
fn append_in(
    tx: &rusqlite::Transaction<'_>,
    thread_id: &str,
    encoded: &[super::EncodedEntry],
    totals: &super::AppendTotals,
    expected_rev: u64,
    err: &impl Fn(rusqlite::Error) -> StoreError,
) -> Result<u64, StoreError> {
    let Some((rev, usage)) = tx
        .query_row(
            "SELECT rev, usage FROM threads WHERE id = ?1",
            [thread_id],
            |row| Ok((row.get::<_, u64>(0)?, row.get::<_, String>(1)?)),
        )
        .optional()
        .map_err(err)?
    else {
        return Err(StoreError::NotFound {
            thread_id: thread_id.to_owned(),
        });
    };
    if rev != expected_rev {
        return Err(StoreError::Conflict {
            thread_id: thread_id.to_owned(),
            expected: expected_rev,
            current: rev,
        });
    }
    if encoded.is_empty() {
        return Ok(rev);
    }
    let mut usage: Usage =
        serde_json::from_str(&usage).map_err(|e| corrupt(thread_id, "usage", e))?;
    usage += totals.usage;
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO entries (thread_id, seq, kind, at, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(err)?;
        for entry in encoded {
            insert
                .execute(params![
                    thread_id, entry.seq, entry.kind, entry.at, entry.json
                ])
                .map_err(err)?;
        }
    }
    let new_rev = rev + encoded.len() as u64;
    tx.execute(
        "UPDATE threads SET rev = ?2, updated_at = max(updated_at, ?3), usage = ?4, \
         estimated_tokens = estimated_tokens + ?5, \
         latest_summary_seq = coalesce(?6, latest_summary_seq), \
         latest_boundary_seq = coalesce(?7, latest_boundary_seq) WHERE id = ?1",
        params![
            thread_id,
            new_rev,
            totals.max_at,
            encode_json(thread_id, &usage)?,
            totals.estimated_tokens,
            totals.latest_summary_seq,
            totals.latest_boundary_seq,
        ],
    )
    .map_err(err)?;
    Ok(new_rev)
}

/// The `(seq, body)` of a thread's entries with `seq >= from`, in order.
fn read_entries(
    conn: &Connection,
    thread_id: &str,
    from: u64,
) -> rusqlite::Result<Vec<(u64, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, body FROM entries WHERE thread_id = ?1 AND seq >= ?2 ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![thread_id, from], |row| {
        Ok((row.get::<_, u64>(0)?, row.get::<_, String>(1)?))
    })?;
    rows.collect()
}

#[async_trait]
impl ThreadStore for SqliteStore {
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        let row = NewThreadRow::of(header)?;
        self.run(move |inner| {
            let conn = lock(&inner.writer);
            insert_thread(&conn, &row, &thread_err(&inner.path, &row.id))
        })
        .await
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

    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| inner.load(&id)).await
    }

    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| inner.load_after(&id, rev)).await
    }

    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        // Encode on the caller's thread; only the transaction runs on the blocking pool.
        let (encoded, totals) = encode_entries(thread_id, entries, expected_rev)?;
        let id = thread_id.to_owned();
        self.run(move |inner| inner.append(&id, &encoded, &totals, expected_rev, None, None))
            .await
    }

    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        let (encoded, totals) = encode_entries(thread_id, entries, expected_rev)?;
        let id = thread_id.to_owned();
        let state = state.to_owned();
        self.run(move |inner| {
            inner.append(&id, &encoded, &totals, expected_rev, Some(&state), None)
        })
        .await
    }

    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| {
            lock(&inner.reader)
                .query_row("SELECT epoch FROM threads WHERE id = ?1", [&id], |row| {
                    row.get::<_, u64>(0)
                })
                .optional()
                .map_err(thread_err(&inner.path, &id))?
                .ok_or(StoreError::NotFound { thread_id: id })
        })
        .await
    }

    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| {
            lock(&inner.writer)
                .query_row(
                    "UPDATE threads SET epoch = epoch + 1 WHERE id = ?1 RETURNING epoch",
                    [&id],
                    |row| row.get::<_, u64>(0),
                )
                .optional()
                .map_err(thread_err(&inner.path, &id))?
                .ok_or(StoreError::NotFound { thread_id: id })
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
        let (encoded, totals) = encode_entries(thread_id, entries, expected_rev)?;
        let id = thread_id.to_owned();
        let state = state.map(str::to_owned);
        self.run(move |inner| {
            inner.append(
                &id,
                &encoded,
                &totals,
                expected_rev,
                state.as_deref(),
                Some(epoch),
            )
        })
        .await
    }

    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| {
            let row: Option<Option<String>> = lock(&inner.reader)
                .query_row("SELECT state FROM threads WHERE id = ?1", [&id], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(thread_err(&inner.path, &id))?;
            row.ok_or(StoreError::NotFound { thread_id: id })
        })
        .await
    }

    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| {
            let row = lock(&inner.reader)
                .query_row(
                    &format!("SELECT {SUMMARY_COLUMNS} FROM threads WHERE id = ?1"),
                    [&id],
                    |row| Ok(summary_row(row)),
                )
                .optional()
                .map_err(thread_err(&inner.path, &id))?;
            row.map(|row| row.and_then(SummaryRow::decode)).transpose()
        })
        .await
    }

    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.list_readable().await?.into_whole()
    }

    async fn list_readable(&self) -> Result<ThreadListing, StoreError> {
        self.run(|inner| {
            let err = db_err(&inner.path);
            let rows = {
                let conn = lock(&inner.reader);
                let mut stmt = conn
                    .prepare_cached(&format!(
                        "SELECT {SUMMARY_COLUMNS} FROM threads ORDER BY created_at, rowid"
                    ))
                    .map_err(&err)?;
                let rows = stmt
                    .query_map([], |row| Ok(summary_row(row)))
                    .map_err(&err)?;
                rows.collect::<rusqlite::Result<Vec<_>>>().map_err(&err)?
            };
            Ok(ThreadListing::of(
                rows.into_iter().map(|row| row.and_then(SummaryRow::decode)),
            ))
        })
        .await
    }

    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| {
            let err = thread_err(&inner.path, &id);
            let mut conn = lock(&inner.writer);
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&err)?;
            tx.execute("DELETE FROM entries WHERE thread_id = ?1", [&id])
                .map_err(&err)?;
            let deleted = tx
                .execute("DELETE FROM threads WHERE id = ?1", [&id])
                .map_err(&err)?;
            tx.commit().map_err(&err)?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        let id = thread_id.to_owned();
        let json = encode_json(&id, meta)?;
        self.run(move |inner| {
            let updated = lock(&inner.writer)
                .execute(
                    "UPDATE threads SET meta = ?2 WHERE id = ?1",
                    params![id, json],
                )
                .map_err(thread_err(&inner.path, &id))?;
            if updated == 0 {
                return Err(StoreError::NotFound { thread_id: id });
            }
            Ok(())
        })
        .await
    }

    async fn record_usage(&self, record: &super::UsageRecord) -> Result<(), StoreError> {
        let (ints, cost) = ledger::integers(record)?;
        let record = record.clone();
        self.run(move |inner| {
            let conn = lock(&inner.writer);
            conn.prepare_cached(
                "INSERT INTO usage_ledger (at, agent, thread, request, tenant, model, kind, \
                 input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, \
                 reasoning_tokens, cost) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .and_then(|mut insert| {
                insert.execute(params![
                    ints[0],
                    record.agent,
                    record.thread,
                    record.request,
                    record.tenant,
                    record.model,
                    record.kind.as_str(),
                    ints[1],
                    ints[2],
                    ints[3],
                    ints[4],
                    ints[5],
                    cost
                ])
            })
            .map_err(db_err(&inner.path))?;
            Ok(())
        })
        .await
    }

    async fn usage_records(
        &self,
        filter: &super::UsageFilter,
    ) -> Result<Vec<super::UsageRecord>, StoreError> {
        let conditions = ledger::conditions(filter)?;
        self.run(move |inner| {
            let err = db_err(&inner.path);
            let mut sql = format!("SELECT {} FROM usage_ledger", ledger::COLUMNS);
            for (position, (condition, _)) in conditions.iter().enumerate() {
                let joint = if position == 0 { " WHERE " } else { " AND " };
                sql.push_str(&format!("{joint}{condition} ?{}", position + 1));
            }
            sql.push_str(" ORDER BY at, id");
            let binds: Vec<&dyn rusqlite::ToSql> = conditions
                .iter()
                .map(|(_, bind)| match bind {
                    Bind::Int(value) => value as &dyn rusqlite::ToSql,
                    Bind::Text(value) => value as &dyn rusqlite::ToSql,
                })
                .collect();
            let conn = lock(&inner.reader);
            let mut select = conn.prepare(&sql).map_err(&err)?;
            let rows = select
                .query_map(binds.as_slice(), |row| {
                    Ok(RawRow {
                        id: row.get(0)?,
                        at: row.get(1)?,
                        agent: row.get(2)?,
                        thread: row.get(3)?,
                        request: row.get(4)?,
                        tenant: row.get(5)?,
                        model: row.get(6)?,
                        kind: row.get(7)?,
                        counts: [
                            row.get(8)?,
                            row.get(9)?,
                            row.get(10)?,
                            row.get(11)?,
                            row.get(12)?,
                        ],
                        cost: row.get(13)?,
                    })
                })
                .map_err(&err)?;
            rows.map(|row| row.map_err(&err)?.decode()).collect()
        })
        .await
    }

    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        let id = thread_id.to_owned();
        self.run(move |inner| {
            let row: Option<Option<String>> = lock(&inner.reader)
                .query_row("SELECT meta FROM threads WHERE id = ?1", [&id], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(thread_err(&inner.path, &id))?;
            match row {
                None => Err(StoreError::NotFound { thread_id: id }),
                Some(None) => Ok(None),
                Some(Some(json)) => serde_json::from_str(&json)
                    .map(Some)
                    .map_err(|e| corrupt(&id, "meta", e)),
            }
        })
        .await
    }
}
