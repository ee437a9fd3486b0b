//! `motet threads`: list, show, export, fork and delete stored threads.

use super::out;
use motet::agents::{Entry, Env as _, Thread};
use motet::runtime::agent::{RuntimeError, SystemEnv, fork_stored};
use motet::runtime::store::{ThreadKey, ThreadListing, ThreadMeta};

use crate::agent::{display_id, runtime_failure, store_id};
use crate::db::Db;
use crate::error::CliError;
use crate::escape::{self, Mode};
use crate::render;

/// Prints every thread in the store that can be read; each thread whose stored row cannot be
/// read is named on standard error with what is wrong, and the command then fails.
///
/// # Errors
/// [`CliError::Store`] when the store cannot be opened or read;
/// [`CliError::Unreadable`] after the listing when some threads could not be read.
pub async fn list(db: &Db) -> Result<(), CliError> {
    let listing = match db.read().await? {
        Some(store) => store.list_readable().await?,
        None => ThreadListing::default(),
    };
    if !listing.threads.is_empty() {
        out(&render::thread_table(&listing.threads))?;
    } else if listing.unreadable.is_empty() {
        out(&format!("no threads in {db}\n"))?;
    }
    crate::error::unreadable(&listing.unreadable, db)
}

/// Prints thread `id`'s entries, one per line, as `mode` says.
///
/// # Errors
/// [`CliError::UnknownThread`], [`CliError::Store`].
pub async fn show(db: &Db, id: &str, mode: Mode) -> Result<(), CliError> {
    let thread = load(db, id).await?;
    let usage = thread.usage();
    out(&format!(
        "thread {} · {} entries · tokens {} · updated {} UTC\n",
        escape::label(thread.id()),
        thread.entry_count(),
        render::tokens(&usage),
        render::time(thread.updated_at())
    ))?;
    for entry in thread.to_list() {
        out(&format!("{}\n", mode.text(&render::entry(entry))))?;
    }
    Ok(())
}

/// Prints thread `id`'s entries as JSON lines (`jsonl`) or one array, with the characters a
/// terminal would obey written as JSON escapes (the same document). Each entry is the stored one
/// with `at_utc` first: its `at` (Unix milliseconds, kept as stored) as an RFC 3339 UTC time,
/// as `threads list` and `threads show` write times.
///
/// # Errors
/// [`CliError::UnknownThread`], [`CliError::Store`].
pub async fn export(db: &Db, id: &str, jsonl: bool) -> Result<(), CliError> {
    let thread = load(db, id).await?;
    let encode_failed = |e: serde_json::Error| CliError::Io {
        what: "cannot encode an entry as JSON".to_owned(),
        source: e.into(),
    };
    let exported: Vec<Exported<'_>> = thread.to_list().iter().map(|e| Exported::of(e)).collect();
    if jsonl {
        let mut out = String::new();
        for entry in &exported {
            out.push_str(&escape::json(
                &serde_json::to_string(entry).map_err(encode_failed)?,
            ));
            out.push('\n');
        }
        self::out(&out)?;
    } else {
        let array = serde_json::to_string_pretty(&exported).map_err(encode_failed)?;
        self::out(&format!("{}\n", escape::json(&array)))?;
    }
    Ok(())
}

/// An entry as `threads export` writes it.
#[derive(serde::Serialize)]
struct Exported<'a> {
    /// The entry's time, RFC 3339 in UTC to the millisecond.
    at_utc: String,
    #[serde(flatten)]
    entry: &'a Entry,
}

impl<'a> Exported<'a> {
    fn of(entry: &'a Entry) -> Self {
        Self {
            at_utc: render::rfc3339(entry.at),
            entry,
        }
    }
}

/// Forks thread `id`: its entries up to seq `at` (all of them for `None`) become a new thread
/// of the same agent under a fresh id, which is printed alone on a line (as `threads list`
/// shows ids), so a script can take it. The thread is not changed, and nothing else is.
///
/// # Errors
/// [`CliError::UnknownThread`]; [`CliError::BadFlag`] for an `--at` past the thread's end;
/// [`CliError::ThreadStore`] when the store fails.
pub async fn fork(db: &Db, id: &str, at: Option<u64>) -> Result<(), CliError> {
    let from = store_id(id);
    let unknown = || CliError::UnknownThread {
        thread: from.clone(),
        store: db.to_string(),
    };
    // No store there: nothing to fork, and none is created to say so.
    let store = db.open_existing().await?.ok_or_else(unknown)?;
    // The same agent as the source: the one its meta names (an agent's name may hold a `/`),
    // else what its id names before the first `/`, as `threads list` reads ids.
    let agent = match store.get_meta(&from).await {
        Ok(Some(ThreadMeta { key: Some(key), .. })) => key.agent().to_owned(),
        _ => from
            .split_once('/')
            .map_or(from.as_str(), |(agent, _)| agent)
            .to_owned(),
    };
    let new = ThreadKey::new(agent, SystemEnv.fresh_id("thread"));
    match fork_stored(store.as_ref(), &from, &new, at).await {
        Ok(()) => out(&format!("{}\n", escape::label(display_id(&new.store_id())))),
        Err(RuntimeError::UnknownThread { .. }) => Err(unknown()),
        Err(RuntimeError::Thread { source, .. }) => Err(CliError::BadFlag {
            flag: "--at".to_owned(),
            message: source.to_string(),
        }),
        Err(other) => Err(runtime_failure(other)),
    }
}

/// Deletes thread `id`.
///
/// # Errors
/// [`CliError::UnknownThread`], [`CliError::Store`].
pub async fn delete(db: &Db, id: &str) -> Result<(), CliError> {
    let full = store_id(id);
    // No store there: nothing to delete, and none is created to say so.
    let deleted = match db.open_existing().await? {
        Some(store) => store.delete(&full).await?,
        None => false,
    };
    if !deleted {
        return Err(CliError::UnknownThread {
            thread: full,
            store: db.to_string(),
        });
    }
    println!("deleted thread {}", escape::label(&full));
    Ok(())
}

/// Thread `id` from the store `db`, opened for reading only.
async fn load(db: &Db, id: &str) -> Result<Thread, CliError> {
    let full = store_id(id);
    let thread = match db.read().await? {
        Some(store) => store.load(&full).await?,
        None => None,
    };
    thread.ok_or_else(|| CliError::UnknownThread {
        thread: full,
        store: db.to_string(),
    })
}
