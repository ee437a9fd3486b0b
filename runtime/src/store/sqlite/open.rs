//! Opening a SQLite store: the connections and their settings, read-only mode, what a file
//! says about itself (so another program's database is refused before anything changes it)
//! and bringing the schema up to date.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use super::migrations::{self, SCHEMA_VERSION};
use super::{Inner, SqliteConfig, db_err, extended_code};
use crate::store::StoreError;

impl Inner {
    /// Opens (creating if needed) the store at `path`: the writer migrates, the reader only
    /// reads.
    pub(super) fn open(path: PathBuf, config: &SqliteConfig) -> Result<Self, StoreError> {
        refuse_directory(&path)?;
        let mut writer = connect(&path, config)?;
        migrate(&mut writer, &path)?;
        let reader = connect(&path, config)?;
        reader
            .pragma_update(None, "query_only", true)
            .map_err(db_err(&path))?;
        Ok(Self {
            path,
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
        })
    }

    /// Opens the existing store at `path` with two connections that only read.
    pub(super) fn open_read_only(path: PathBuf) -> Result<Self, StoreError> {
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
            path,
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
        })
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
