//! Which thread store the CLI works on, and how each command opens it.
//!
//! The store is `--db`, else `MOTET_DATABASE_URL`, else motet.toml's `db`, else the file
//! `<data dir>/motet/motet.db`. Each of them is a SQLite path or a URL
//! ([`StoreUrl::parse`]): `postgres://user@host:port/db` (a PostgreSQL server),
//! `sqlite://PATH`, `memory:` (gone when the command ends). Wherever a store is shown (errors,
//! `threads list`) its password is replaced by `***`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use motet::runtime::store::{
    DATABASE_URL_VAR, SqliteStore, StoreError, StoreUrl, StoreUrlError, ThreadStore,
};

use crate::error::CliError;
use crate::lock::ThreadLock;

/// Where a store setting came from, for the message when it is not a store URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbSource<'a> {
    /// The `--db` flag.
    Flag,
    /// `MOTET_DATABASE_URL`.
    Env,
    /// The `db` key of this configuration file.
    File(&'a Path),
}

/// The thread store a command works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Db {
    url: StoreUrl,
    /// The folder the default store lives in, made by the first command that writes: a
    /// command that only reads creates nothing, so with no store (or a home where nothing can
    /// be made) it says there are no threads.
    folder_to_make: Option<PathBuf>,
}

impl Db {
    /// The store `input` names: a path, or a URL when it is text with a scheme.
    ///
    /// # Errors
    /// [`CliError::BadFlag`] (`--db`), [`CliError::Environment`] (`MOTET_DATABASE_URL`) or
    /// [`CliError::ConfigFile`] (motet.toml) when `input` names no store.
    pub fn parse(input: &Path, source: DbSource<'_>) -> Result<Self, CliError> {
        // A path that is not UTF-8 is no URL: a file's name.
        let Some(text) = input.to_str() else {
            return Ok(Self::file(input));
        };
        let url = StoreUrl::parse(text).map_err(|e| bad_url(e, source))?;
        Ok(Self {
            url,
            folder_to_make: None,
        })
    }

    /// The SQLite file at `path`.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self {
            url: StoreUrl::Sqlite(path.into()),
            folder_to_make: None,
        }
    }

    /// The default store, the SQLite file at `path`, whose folder is made when a command
    /// first writes to it ([`open`](Self::open), [`lock`](Self::lock)), not before.
    pub fn default_file(path: PathBuf) -> Self {
        let folder_to_make = path.parent().map(Path::to_path_buf);
        Self {
            url: StoreUrl::Sqlite(path),
            folder_to_make,
        }
    }

    /// Makes the default store's folder, for a command about to write.
    fn make_folder(&self) -> Result<(), CliError> {
        match &self.folder_to_make {
            Some(folder) => std::fs::create_dir_all(folder).map_err(|source| CliError::DataDir {
                path: folder.clone(),
                source,
            }),
            None => Ok(()),
        }
    }

    /// Which store it is.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// Opens the store, creating a SQLite file (or a server database's tables) if there is
    /// none.
    ///
    /// # Errors
    /// [`CliError::DataDir`] when the default store's folder cannot be made;
    /// [`CliError::OpenStore`] when it cannot be opened.
    pub async fn open(&self) -> Result<Arc<dyn ThreadStore>, CliError> {
        self.make_folder()?;
        Ok(self.url.open().await?)
    }

    /// Opens the store as [`open`](Self::open) does, for a command whose requests have
    /// `timeout` (`--timeout`): a server's store gives up on any one operation (a load, a
    /// claim, a commit) within that time too, so a lock held elsewhere is a store error, never
    /// a hang.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub async fn open_within(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Arc<dyn ThreadStore>, CliError> {
        self.make_folder()?;
        Ok(self.url.open_within(Some(timeout)).await?)
    }

    /// Opens the store for reading (`threads list`, `show`, `export`, `pending`): a SQLite
    /// file is opened read-only, so a file this user may only read can still be read and
    /// nothing is created; `None` when there is no file yet. A server's store is opened as
    /// [`open`](Self::open) does (it has no read-only mode).
    ///
    /// # Errors
    /// [`CliError::Store`], [`CliError::OpenStore`] when it cannot be opened.
    pub async fn read(&self) -> Result<Option<Arc<dyn ThreadStore>>, CliError> {
        match &self.url {
            // No file, nor a folder it could be in (a path below a file): nothing stored yet.
            StoreUrl::Sqlite(path)
                if std::fs::metadata(path).is_err_and(|e| {
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    )
                }) =>
            {
                Ok(None)
            }
            StoreUrl::Sqlite(path) => match SqliteStore::open_read_only(path).await {
                Ok(store) => Ok(Some(Arc::new(store))),
                Err(StoreError::Missing { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            },
            _ => self.open().await.map(Some),
        }
    }

    /// Opens the store for a change to what it holds (`threads delete`): `None` when there is
    /// no SQLite file, so none is created just to say the thread is not there.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub async fn open_existing(&self) -> Result<Option<Arc<dyn ThreadStore>>, CliError> {
        match &self.url {
            StoreUrl::Sqlite(path) if !path.exists() => Ok(None),
            _ => self.open().await.map(Some),
        }
    }

    /// Takes the lock on `thread` of this store ([`ThreadLock`]), without waiting: for a
    /// SQLite file a lock file beside it, for a server under this user's cache folder, keyed
    /// by the server's URL (without its password). An in-memory store is this process's
    /// alone: no lock.
    ///
    /// # Errors
    /// [`CliError::DataDir`] when the default store's folder cannot be made; as
    /// [`ThreadLock::acquire`].
    pub fn lock(&self, thread: &str) -> Result<Option<ThreadLock>, CliError> {
        self.make_folder()?;
        let folder = match &self.url {
            StoreUrl::Memory => return Ok(None),
            StoreUrl::Sqlite(path) => {
                let mut folder = path.as_os_str().to_owned();
                folder.push(".locks");
                PathBuf::from(folder)
            }
            StoreUrl::Postgres(_) => server_lock_folder(&self.url.redacted()),
        };
        ThreadLock::acquire(&folder, thread).map(Some)
    }
}

impl fmt::Display for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.url, f)
    }
}

/// The store `--db`, `MOTET_DATABASE_URL` (through `env`) or the configuration file's `db`
/// names, in that order; `None` when none does (the default file is then used).
///
/// # Errors
/// As [`Db::parse`].
pub fn chosen(
    flag: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<(&Path, &Path)>,
) -> Result<Option<Db>, CliError> {
    if let Some(flag) = flag {
        return Db::parse(flag, DbSource::Flag).map(Some);
    }
    if let Some(url) = motet::runtime::store::database_url_from(env) {
        return Db::parse(Path::new(&url), DbSource::Env).map(Some);
    }
    match file {
        Some((db, config)) => Db::parse(db, DbSource::File(config)).map(Some),
        None => Ok(None),
    }
}

fn bad_url(error: StoreUrlError, source: DbSource<'_>) -> CliError {
    let message = error.to_string();
    match source {
        DbSource::Flag => CliError::BadFlag {
            flag: "--db".to_owned(),
            message,
        },
        DbSource::Env => CliError::Environment {
            message: format!("{DATABASE_URL_VAR}: {message}"),
        },
        DbSource::File(path) => CliError::ConfigFile {
            path: path.to_path_buf(),
            message: format!("key `db`: {message}"),
        },
    }
}

/// The folder of a server store's thread locks: `<cache dir>/motet/locks/<hash of the URL>`.
/// The URL is hashed without its password, so a changed password keeps the same locks (and
/// no file name is derived from it).
fn server_lock_folder(redacted_url: &str) -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("motet")
        .join("locks")
        .join(format!(
            "{:016x}",
            crate::lock::fnv1a(redacted_url.as_bytes())
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(value: Option<&str>) -> impl Fn(&str) -> Option<String> {
        let value = value.map(str::to_owned);
        move |name: &str| (name == DATABASE_URL_VAR).then(|| value.clone()).flatten()
    }

    #[test]
    fn the_flag_wins_over_the_environment_over_the_file() {
        let config = Path::new("motet.toml");
        let file = Some((Path::new("from-file.db"), config));
        let pg = "postgres://motet:s3cret@127.0.0.1:5432/motet";
        let chosen_db = |flag: Option<&str>, env: Option<&str>, file| {
            chosen(flag.map(Path::new), &env_of(env), file)
                .unwrap_or_else(|e| panic!("{e}"))
                .map(|db| db.to_string())
        };
        assert_eq!(
            chosen_db(Some("flag.db"), Some(pg), file),
            Some("flag.db".to_owned())
        );
        assert_eq!(
            chosen_db(None, Some(pg), file),
            Some("postgres://motet:***@127.0.0.1:5432/motet".to_owned())
        );
        // A blank variable is no setting.
        assert_eq!(
            chosen_db(None, Some(" "), file),
            Some("from-file.db".to_owned())
        );
        assert_eq!(chosen_db(None, None, file), Some("from-file.db".to_owned()));
        assert_eq!(chosen_db(None, None, None), None);
    }

    #[test]
    fn a_bad_url_is_blamed_on_where_it_came_from() {
        let bad = Path::new("mysql://root:s3cret@db/motet");
        let flag = Db::parse(bad, DbSource::Flag);
        assert!(matches!(&flag, Err(CliError::BadFlag { flag, .. }) if flag == "--db"));
        let env = Db::parse(bad, DbSource::Env);
        assert!(
            matches!(&env, Err(CliError::Environment { message }) if message.contains(DATABASE_URL_VAR))
        );
        let file = Db::parse(bad, DbSource::File(Path::new("motet.toml")));
        assert!(matches!(&file, Err(CliError::ConfigFile { .. })));
        for error in [flag, env, file].into_iter().filter_map(Result::err) {
            let message = error.to_string();
            assert!(!message.contains("s3cret"), "{message}");
            assert!(message.contains("postgres://"), "{message}");
        }
    }

    #[test]
    fn server_locks_are_keyed_by_the_url_without_its_password() {
        let lock_folder = |url: &str| {
            let db = Db::parse(Path::new(url), DbSource::Flag).unwrap_or_else(|e| panic!("{e}"));
            server_lock_folder(&db.url().redacted())
        };
        assert_eq!(
            lock_folder("postgres://motet:old@h:5432/motet"),
            lock_folder("postgres://motet:new@h:5432/motet")
        );
        assert_ne!(
            lock_folder("postgres://motet@h:5432/motet"),
            lock_folder("postgres://motet@h:5432/other")
        );
        let db = Db::file("/data/motet.db");
        assert_eq!(db.to_string(), "/data/motet.db");
        assert_eq!(
            Db::parse(Path::new("memory:"), DbSource::Flag)
                .ok()
                .and_then(|db| db.lock("cli/t").ok())
                .map(|lock| lock.is_none()),
            Some(true)
        );
    }
}
