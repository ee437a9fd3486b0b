//! Choosing a thread store by URL: `postgres://...` opens a [`PostgresStore`](super::PostgresStore)
//! (with the `postgres` feature), `sqlite://PATH` or a plain path a [`SqliteStore`], `memory:`
//! a [`MemoryStore`]; [`store_from_env`] reads the URL from `MOTET_DATABASE_URL`.
//!
//! Deciding which store a URL names ([`StoreUrl::parse`]) is a pure function, kept apart from
//! opening it ([`StoreUrl::open`]), so the rules are tested without a file or a server.
//!
//! A URL may carry a password (`postgres://user:secret@host/db`, `?password=secret`,
//! `password=secret` in the `key=value` form). The password is never shown: [`StoreUrl`]'s
//! `Display` and `Debug`, [`redact`], and every error of this module print `***` in its place.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use super::{MemoryStore, SqliteStore, StoreError, ThreadStore};

/// The environment variable [`store_from_env`] reads.
pub const DATABASE_URL_VAR: &str = "MOTET_DATABASE_URL";

/// The forms a store URL may take, for error messages.
pub const ACCEPTED_URLS: &str = "postgres://... or postgresql://... (PostgreSQL), sqlite://PATH \
                                 or a plain path (SQLite), memory: (in memory, gone with the \
                                 process)";

/// Which store a URL names.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `memory:` (or `memory://`): a [`MemoryStore`], gone with the process.
    Memory,
    /// `sqlite://PATH`, `sqlite:PATH` or a plain path: a [`SqliteStore`] file. The path is
    /// taken literally (no percent-decoding, no query).
    Sqlite(PathBuf),
    /// `postgres://...`, `postgresql://...`, or a libpq `key=value` string (`host=... dbname=...`):
    /// a `PostgresStore`. Holds the URL as given, password included; it is shown redacted.
    Postgres(String),
}

impl StoreUrl {
    /// Which store `url` names. Scheme names are case-insensitive. A string without a scheme
    /// is a SQLite file's path; so is one whose "scheme" is a single letter (`C:\motet.db`).
    /// A string starting `word=` is the libpq `key=value` form of a PostgreSQL connection.
    /// A file whose name looks like a URL (`a:b.db`, `x=y`) is written `./a:b.db` or
    /// `sqlite://a:b.db`.
    ///
    /// # Errors
    /// [`StoreUrlError::Empty`] for an empty (or blank) string; [`StoreUrlError::UnknownScheme`]
    /// for a scheme none of the stores takes; [`StoreUrlError::Malformed`] for `sqlite://`
    /// without a path or `memory:` followed by something.
    pub fn parse(url: &str) -> Result<Self, StoreUrlError> {
        if url.trim().is_empty() {
            return Err(StoreUrlError::Empty);
        }
        if is_conninfo(url) {
            return Ok(Self::Postgres(url.to_owned()));
        }
        let Some((scheme, rest)) = scheme_of(url) else {
            return Ok(Self::Sqlite(PathBuf::from(url)));
        };
        let malformed = |reason: &str| StoreUrlError::Malformed {
            url: redact(url),
            reason: reason.to_owned(),
        };
        match scheme.to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => Ok(Self::Postgres(url.to_owned())),
            "sqlite" => {
                let path = rest.strip_prefix("//").unwrap_or(rest);
                if path.is_empty() {
                    return Err(malformed("no file path after `sqlite://`"));
                }
                Ok(Self::Sqlite(PathBuf::from(path)))
            }
            "memory" => match rest {
                "" | "//" => Ok(Self::Memory),
                _ => Err(malformed("nothing may follow `memory:`")),
            },
            _ => Err(StoreUrlError::UnknownScheme {
                url: redact(url),
                scheme: scheme.to_owned(),
            }),
        }
    }

    /// The URL as it may be shown: the password replaced by `***`.
    pub fn redacted(&self) -> String {
        match self {
            Self::Memory => "memory:".to_owned(),
            Self::Sqlite(path) => path.display().to_string(),
            Self::Postgres(url) => redact(url),
        }
    }

    /// Opens the store the URL names (for SQLite, creating the file if there is none).
    ///
    /// # Errors
    /// [`OpenStoreError::Unsupported`] for a PostgreSQL URL in a build without the `postgres`
    /// feature; [`OpenStoreError::Open`] with the store's own error when it cannot be opened
    /// (a file that is not a motet store, a server that cannot be reached).
    pub async fn open(&self) -> Result<Arc<dyn ThreadStore>, OpenStoreError> {
        self.open_within(None).await
    }

    /// Opens the store as [`open`](Self::open) does, with every operation of a PostgreSQL
    /// store (opening it too) bounded by `limit` when given, rather than the default
    /// [`PostgresConfig::operation_timeout`](super::PostgresConfig::operation_timeout) — for a
    /// caller whose own deadline is shorter. A SQLite store waits for a lock its busy timeout
    /// long (5 s) either way.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub async fn open_within(
        &self,
        limit: Option<std::time::Duration>,
    ) -> Result<Arc<dyn ThreadStore>, OpenStoreError> {
        let failed = |source: StoreError| OpenStoreError::Open {
            store: self.redacted(),
            source,
        };
        match self {
            Self::Memory => Ok(Arc::new(MemoryStore::new())),
            Self::Sqlite(path) => Ok(Arc::new(SqliteStore::open(path).await.map_err(failed)?)),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => {
                let mut config = super::PostgresConfig::default();
                if let Some(limit) = limit {
                    config.operation_timeout = limit.min(config.operation_timeout);
                    config.connect_timeout = limit.min(config.connect_timeout);
                    config.wait_timeout = limit.min(config.wait_timeout);
                }
                Ok(Arc::new(
                    super::PostgresStore::open_with(url, config)
                        .await
                        .map_err(failed)?,
                ))
            }
            #[cfg(not(feature = "postgres"))]
            Self::Postgres(url) => {
                let _ = limit;
                Err(OpenStoreError::Unsupported {
                    url: redact(url),
                    feature: "postgres",
                })
            }
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

// Hand-written so that `{:?}` never prints a password either.
impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory => f.write_str("Memory"),
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Self::Postgres(_) => f.debug_tuple("Postgres").field(&self.redacted()).finish(),
        }
    }
}

/// A store URL that names no store this build can open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreUrlError {
    /// The URL is empty.
    #[error("the store URL is empty: give {ACCEPTED_URLS}")]
    Empty,
    /// A scheme that names no store.
    #[error("store URL `{url}`: unknown scheme `{scheme}`; accepted are {ACCEPTED_URLS}")]
    UnknownScheme {
        /// The URL, its password replaced by `***`.
        url: String,
        /// The scheme as written.
        scheme: String,
    },
    /// A known scheme written wrongly.
    #[error("store URL `{url}`: {reason}")]
    Malformed {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What is wrong.
        reason: String,
    },
}

/// Why [`open_store`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenStoreError {
    /// The URL names no store.
    #[error(transparent)]
    Url(#[from] StoreUrlError),
    /// The URL names a store this build leaves out (a cargo feature of motet-runtime).
    #[error(
        "store URL `{url}` needs motet-runtime's cargo feature `{feature}`, which this build \
         was compiled without"
    )]
    Unsupported {
        /// The URL, its password replaced by `***`.
        url: String,
        /// The feature to enable.
        feature: &'static str,
    },
    /// The store could not be opened.
    #[error("cannot open the thread store {store}: {source}")]
    Open {
        /// The store's URL or path, its password replaced by `***`.
        store: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}

/// Opens the store `url` names: see [`StoreUrl::parse`] for the forms it takes.
///
/// ```no_run
/// # async fn demo() -> Result<(), motet_runtime::store::OpenStoreError> {
/// use motet_runtime::store::open_store;
/// let store = open_store("postgres://motet@127.0.0.1:5432/motet").await?;
/// let local = open_store("threads.db").await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`StoreUrl::parse`] and [`StoreUrl::open`].
pub async fn open_store(url: &str) -> Result<Arc<dyn ThreadStore>, OpenStoreError> {
    StoreUrl::parse(url)?.open().await
}

/// The store named by `MOTET_DATABASE_URL`, opened; `None` when the variable is unset or empty.
///
/// # Errors
/// As [`open_store`].
pub async fn store_from_env() -> Result<Option<Arc<dyn ThreadStore>>, OpenStoreError> {
    match database_url_from(&|name| std::env::var(name).ok()) {
        Some(url) => Ok(Some(open_store(&url).await?)),
        None => Ok(None),
    }
}

/// `MOTET_DATABASE_URL` as `env` gives it, unless unset or blank.
pub fn database_url_from(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env(DATABASE_URL_VAR).filter(|url| !url.trim().is_empty())
}

/// `url` with its password replaced by `***`: the user-info password of a URL
/// (`postgres://user:***@host/db`), a `password=` query parameter, and `password=` in the libpq
/// `key=value` form. Anything else is kept, so the result still says which server and
/// database is meant.
pub fn redact(url: &str) -> String {
    if is_conninfo(url) {
        return redact_conninfo(url);
    }
    let Some((scheme, rest)) = scheme_of(url) else {
        return url.to_owned();
    };
    let Some(authority_and_more) = rest.strip_prefix("//") else {
        return url.to_owned();
    };
    // The user info ends at the last `@`: a password with an unencoded `@` or `/` is still
    // hidden whole. (An `@` further on, in the query, can only hide more than needed.)
    let (userinfo, after) = match authority_and_more.rfind('@') {
        Some(at) => (
            Some(&authority_and_more[..at]),
            &authority_and_more[at + 1..],
        ),
        None => (None, authority_and_more),
    };
    let mut out = format!("{scheme}://");
    if let Some(userinfo) = userinfo {
        match userinfo.split_once(':') {
            Some((user, _password)) => {
                out.push_str(user);
                out.push_str(":***");
            }
            None => out.push_str(userinfo),
        }
        out.push('@');
    }
    match after.split_once('?') {
        Some((base, query)) => {
            out.push_str(base);
            out.push('?');
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                    _ => param.to_owned(),
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(after),
    }
    out
}

/// The scheme of `url` and what follows its `:`, when it has one of two characters or more
/// (a single letter is a Windows drive: `C:\motet.db` is a path).
fn scheme_of(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && scheme.len() >= 2;
    valid.then_some((scheme, rest))
}

/// Whether `url` is libpq's `key=value` form: it starts with a keyword and `=`.
fn is_conninfo(url: &str) -> bool {
    let start = url.trim_start();
    let key_len = start
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(start.len());
    key_len > 0
        && start[..key_len]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && start[key_len..].trim_start().starts_with('=')
}

/// The `key=value` form with `password`'s value (quoted or not) replaced by `***`.
fn redact_conninfo(conninfo: &str) -> String {
    let mut out = String::with_capacity(conninfo.len());
    let mut rest = conninfo;
    loop {
        // Copy the whitespace before a key.
        let key_start = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..key_start]);
        rest = &rest[key_start..];
        if rest.is_empty() {
            return out;
        }
        let Some(eq) = rest.find('=') else {
            out.push_str(rest);
            return out;
        };
        let key = rest[..eq].trim();
        let value_start = eq + 1 + (rest[eq + 1..].len() - rest[eq + 1..].trim_start().len());
        out.push_str(&rest[..value_start]);
        rest = &rest[value_start..];
        // The value: quoted (with \' and \\ escapes) or up to the next whitespace.
        let value_len = if let Some(quoted) = rest.strip_prefix('\'') {
            let mut escaped = false;
            let mut end = quoted.len();
            for (i, c) in quoted.char_indices() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '\'' => {
                        end = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            1 + end
        } else {
            // Up to the next whitespace that no backslash escapes: libpq reads
            // `password=abc\ def` as one value.
            let mut escaped = false;
            rest.char_indices()
                .find(|&(_, c)| {
                    let ends = !escaped && c.is_whitespace();
                    escaped = !escaped && c == '\\';
                    ends
                })
                .map_or(rest.len(), |(i, _)| i)
        };
        if key.eq_ignore_ascii_case("password") {
            out.push_str("***");
        } else {
            out.push_str(&rest[..value_len]);
        }
        rest = &rest[value_len..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn postgres(url: &str) -> StoreUrl {
        StoreUrl::Postgres(url.to_owned())
    }

    #[test]
    fn each_scheme_names_its_store() {
        let cases = [
            (
                "postgres://motet@127.0.0.1:5432/motet",
                postgres("postgres://motet@127.0.0.1:5432/motet"),
            ),
            ("postgresql://h/db", postgres("postgresql://h/db")),
            ("POSTGRES://h/db", postgres("POSTGRES://h/db")),
            (
                "host=localhost dbname=motet",
                postgres("host=localhost dbname=motet"),
            ),
            (
                "sqlite:///var/lib/motet.db",
                StoreUrl::Sqlite("/var/lib/motet.db".into()),
            ),
            (
                "sqlite://data/motet.db",
                StoreUrl::Sqlite("data/motet.db".into()),
            ),
            ("sqlite:motet.db", StoreUrl::Sqlite("motet.db".into())),
            ("SQLite://x.db", StoreUrl::Sqlite("x.db".into())),
            ("/tmp/motet.db", StoreUrl::Sqlite("/tmp/motet.db".into())),
            ("motet.db", StoreUrl::Sqlite("motet.db".into())),
            ("./a:b.db", StoreUrl::Sqlite("./a:b.db".into())),
            (
                "C:\\data\\motet.db",
                StoreUrl::Sqlite("C:\\data\\motet.db".into()),
            ),
            ("sqlite://a:b.db", StoreUrl::Sqlite("a:b.db".into())),
            ("memory:", StoreUrl::Memory),
            ("memory://", StoreUrl::Memory),
            ("Memory:", StoreUrl::Memory),
        ];
        for (url, expected) in cases {
            assert_eq!(StoreUrl::parse(url), Ok(expected), "{url}");
        }
    }

    #[test]
    fn unknown_and_malformed_urls_are_typed_errors() {
        assert_eq!(StoreUrl::parse(""), Err(StoreUrlError::Empty));
        assert_eq!(StoreUrl::parse("  "), Err(StoreUrlError::Empty));
        assert_eq!(
            StoreUrl::parse("mysql://root:hunter2@db/motet"),
            Err(StoreUrlError::UnknownScheme {
                url: "mysql://root:***@db/motet".to_owned(),
                scheme: "mysql".to_owned(),
            })
        );
        let Err(error) = StoreUrl::parse("redis://h") else {
            panic!("redis:// was accepted");
        };
        let message = error.to_string();
        for accepted in ["postgres://", "sqlite://", "memory:"] {
            assert!(message.contains(accepted), "{message}");
        }
        assert!(matches!(
            StoreUrl::parse("sqlite://"),
            Err(StoreUrlError::Malformed { .. })
        ));
        assert!(matches!(
            StoreUrl::parse("memory:x"),
            Err(StoreUrlError::Malformed { .. })
        ));
    }

    #[test]
    fn passwords_are_never_shown() {
        let cases = [
            (
                "postgres://motet:s3cret@127.0.0.1:5432/motet",
                "postgres://motet:***@127.0.0.1:5432/motet",
            ),
            (
                "postgres://motet@127.0.0.1/motet",
                "postgres://motet@127.0.0.1/motet",
            ),
            ("postgres://127.0.0.1/motet", "postgres://127.0.0.1/motet"),
            ("postgres://u:p@ss/w@rd@h/db", "postgres://u:***@h/db"),
            (
                "postgres://u:a/b@h/db?sslmode=disable",
                "postgres://u:***@h/db?sslmode=disable",
            ),
            (
                "postgres://u@h/db?password=s3cret&application_name=x",
                "postgres://u@h/db?password=***&application_name=x",
            ),
            (
                "postgres://u@h/db?PASSWORD=s3cret",
                "postgres://u@h/db?PASSWORD=***",
            ),
            (
                "host=h password=s3cret dbname=motet",
                "host=h password=*** dbname=motet",
            ),
            (
                "host=h password = 's3 cr\\'et' dbname=motet",
                "host=h password = *** dbname=motet",
            ),
            ("host=h password='unterminated", "host=h password=***"),
            (
                "host=h password=abc\\ def123 dbname=motet",
                "host=h password=*** dbname=motet",
            ),
            (
                "password=a\\\\ b dbname=motet",
                "password=*** b dbname=motet",
            ),
            ("motet.db", "motet.db"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact(url), shown, "{url}");
            assert!(!redact(url).contains("s3"), "{url}");
        }
        let url = StoreUrl::parse("postgres://motet:s3cret@h/db").unwrap_or(StoreUrl::Memory);
        assert_eq!(url.to_string(), "postgres://motet:***@h/db");
        assert!(!format!("{url:?}").contains("s3cret"));
        let Err(error) = StoreUrl::parse("pg://motet:s3cret@h/db") else {
            panic!("pg:// was accepted");
        };
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }

    #[test]
    fn the_environment_names_a_store_only_when_set_and_not_blank() {
        assert_eq!(database_url_from(&|_| None), None);
        assert_eq!(database_url_from(&|_| Some(" ".to_owned())), None);
        assert_eq!(
            database_url_from(&|name| (name == DATABASE_URL_VAR).then(|| "memory:".to_owned())),
            Some("memory:".to_owned())
        );
    }

    #[tokio::test]
    async fn memory_and_sqlite_urls_open_their_stores() {
        let Ok(store) = open_store("memory:").await else {
            panic!("memory: did not open");
        };
        assert!(matches!(store.list().await, Ok(list) if list.is_empty()));
        let Ok(dir) = tempfile::tempdir() else {
            panic!("no temp dir");
        };
        let path = dir.path().join("t.db");
        let url = format!("sqlite://{}", path.display());
        assert!(open_store(&url).await.is_ok(), "{url}");
        assert!(path.exists());
        // A directory is no store: the error names it.
        let Err(error) = open_store(&dir.path().display().to_string()).await else {
            panic!("a directory opened as a store");
        };
        assert!(matches!(error, OpenStoreError::Open { .. }), "{error}");
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn an_unreachable_server_is_named_without_its_password() {
        // Port 1 on loopback: refused at once.
        let url = "postgres://motet:s3cret@127.0.0.1:1/motet?connect_timeout=2";
        let Err(error) = open_store(url).await else {
            panic!("a server on port 1 answered");
        };
        let message = error.to_string();
        assert!(matches!(error, OpenStoreError::Open { .. }), "{message}");
        assert!(message.contains("127.0.0.1:1"), "{message}");
        assert!(!message.contains("s3cret"), "{message}");
    }

    #[cfg(not(feature = "postgres"))]
    #[tokio::test]
    async fn without_the_feature_a_postgres_url_names_it() {
        let Err(error) = open_store("postgres://u:s3cret@h/db").await else {
            panic!("opened without the feature");
        };
        assert!(
            matches!(
                &error,
                OpenStoreError::Unsupported {
                    feature: "postgres",
                    ..
                }
            ),
            "{error}"
        );
        assert!(!error.to_string().contains("s3cret"));
    }
}
