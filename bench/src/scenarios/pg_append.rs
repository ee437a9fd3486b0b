//! `pg_append`: durable appends to the PostgreSQL store beside the SQLite store, and loading a
//! 100-entry thread from each.
//!
//! Needs a server: `bash scripts/postgres.sh start` prints the URL to put in
//! MOTET_DATABASE_URL. The scenario makes a database of its own there and drops it afterwards.
//! Entries are the `append` scenario's realistic conversation (0.5-2 KB of JSON each).
//!
//! - `pg_single` / `sqlite_single`: one entry per `ThreadStore::append`, each a durable commit
//!   (PostgreSQL at its default `synchronous_commit=on`; SQLite at `synchronous=FULL`),
//!   interleaved with the floor in rounds of 20 commits so that a drifting disk weighs on all
//!   three alike.
//! - `pg_batch_100`: 100 entries per append.
//! - `pg_floor_insert_commit`: the floor on the same server, one bare
//!   `INSERT INTO floor VALUES ($1, $2)` of an entry's JSON per commit (autocommit, prepared,
//!   one connection): what one durable round trip costs before the store's row lock, rev check
//!   and totals. `vs_floor` is each single-append variant's time over it.
//! - `pg_load_100` / `sqlite_load_100`: `load` of a 100-entry thread, mean of `LOADS` loads
//!   after a warm-up.

use std::time::{Duration, Instant};

use motet_runtime::store::{PostgresStore, SqliteStore, ThreadHeader, ThreadStore};
use tokio_postgres::NoTls;

use super::append::{append_all, append_report, conversation};
use crate::report::{Report, round2};

const SINGLE: usize = 400;
const ROUND: usize = 20;
const BATCH: usize = 100;
const BATCHES: usize = 20;
const LOAD_ENTRIES: usize = 100;
const LOADS: usize = 200;

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| eprintln!("pg_append: cannot start a tokio runtime: {e}"))
        .ok()
}

/// Connects with the plain driver (database administration and the floor).
pub(super) async fn connect(url: &str) -> Result<tokio_postgres::Client, String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// `url` with its database replaced by `name`.
pub(super) fn with_database(url: &str, name: &str) -> Result<String, String> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let (server, _) = base
        .rsplit_once('/')
        .ok_or_else(|| format!("{url} names no database"))?;
    Ok(format!("{server}/{name}{query}"))
}

/// The mean time of `LOADS` loads of a stored 100-entry thread, after one warm-up load.
async fn load_report(store: &dyn ThreadStore, variant: &str) -> Result<Report, String> {
    let thread = conversation(&format!("{variant}_thread"), LOAD_ENTRIES);
    append_all(store, &thread, LOAD_ENTRIES).await?;
    let mut elapsed = Duration::ZERO;
    for run in 0..=LOADS {
        let start = Instant::now();
        let loaded = store
            .load(thread.id())
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the thread vanished")?;
        if run > 0 {
            elapsed += start.elapsed();
        }
        if loaded.entry_count() != LOAD_ENTRIES {
            return Err(format!("loaded {} entries", loaded.entry_count()));
        }
    }
    Ok(Report::new("pg_append", variant, LOADS as u64, elapsed).with("entries", LOAD_ENTRIES))
}

/// The single-entry variants, interleaved in rounds of `ROUND` commits (floor, PostgreSQL,
/// SQLite, again and again) so that a disk whose speed drifts (other work on the machine) weighs
/// on the three alike: each variant's total time over its `SINGLE` commits.
async fn singles(
    url: &str,
    pg: &PostgresStore,
    sqlite: &SqliteStore,
) -> Result<(Duration, Duration, Duration), String> {
    let client = connect(url).await?;
    client
        .batch_execute("CREATE TABLE floor (k bigint PRIMARY KEY, body text NOT NULL)")
        .await
        .map_err(|e| e.to_string())?;
    let insert = client
        .prepare("INSERT INTO floor (k, body) VALUES ($1, $2)")
        .await
        .map_err(|e| e.to_string())?;
    let pg_thread = conversation("pg_single", SINGLE);
    let sqlite_thread = conversation("sqlite_single", SINGLE);
    let bodies: Vec<String> = pg_thread
        .to_list()
        .iter()
        .map(|e| serde_json::to_string(e).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    for (store, thread) in [
        (pg as &dyn ThreadStore, &pg_thread),
        (sqlite as &dyn ThreadStore, &sqlite_thread),
    ] {
        store
            .create(&ThreadHeader::of(thread))
            .await
            .map_err(|e| e.to_string())?;
    }
    let (mut floor, mut on_pg, mut on_sqlite) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let (pg_entries, sqlite_entries) = (pg_thread.to_list(), sqlite_thread.to_list());
    for round in (0..SINGLE).step_by(ROUND) {
        let seqs = round..(round + ROUND).min(SINGLE);
        let start = Instant::now();
        for k in seqs.clone() {
            let key = i64::try_from(k).map_err(|e| e.to_string())?;
            let body = bodies.get(k).ok_or("no body")?;
            client
                .execute(&insert, &[&key, body])
                .await
                .map_err(|e| e.to_string())?;
        }
        floor += start.elapsed();
        for (store, thread, entries, total) in [
            (pg as &dyn ThreadStore, &pg_thread, pg_entries, &mut on_pg),
            (
                sqlite as &dyn ThreadStore,
                &sqlite_thread,
                sqlite_entries,
                &mut on_sqlite,
            ),
        ] {
            let start = Instant::now();
            for k in seqs.clone() {
                let entry = entries.get(k..=k).ok_or("no entry")?;
                store
                    .append(thread.id(), entry, k as u64)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            *total += start.elapsed();
        }
    }
    Ok((floor, on_pg, on_sqlite))
}

async fn all(url: &str, dir: &std::path::Path) -> Result<Vec<Report>, String> {
    let store = PostgresStore::open(url).await.map_err(|e| e.to_string())?;
    let sqlite = SqliteStore::open(dir.join("threads.db"))
        .await
        .map_err(|e| e.to_string())?;
    let (floor, pg_single, sqlite_single) = singles(url, &store, &sqlite).await?;
    let floor = Report::new("pg_append", "pg_floor_insert_commit", SINGLE as u64, floor);
    let pg_single = append_report("pg_append", "pg_single", SINGLE, 1, pg_single);
    let sqlite_single = append_report("pg_append", "sqlite_single", SINGLE, 1, sqlite_single);
    let batch = conversation("pg_batch_100", BATCH * BATCHES);
    let pg_batch = append_report(
        "pg_append",
        "pg_batch_100",
        BATCH * BATCHES,
        BATCH,
        append_all(&store, &batch, BATCH).await?,
    );
    let pg_load = load_report(&store, "pg_load_100").await?;
    let sqlite_load = load_report(&sqlite, "sqlite_load_100").await?;

    let vs_floor = |r: Report| {
        let ratio = if floor.ns_per_op() > 0.0 {
            r.ns_per_op() / floor.ns_per_op()
        } else {
            0.0
        };
        r.with("vs_floor", round2(ratio))
    };
    Ok(vec![
        vs_floor(pg_single),
        vs_floor(sqlite_single),
        pg_batch,
        pg_load,
        sqlite_load,
        floor,
    ])
}

/// Every variant; without a server, or on a setup failure, says why and yields no reports.
pub(crate) fn run() -> Vec<Report> {
    let Ok(admin_url) = std::env::var("MOTET_DATABASE_URL") else {
        eprintln!(
            "pg_append: MOTET_DATABASE_URL is not set (`bash scripts/postgres.sh start` prints it)"
        );
        return Vec::new();
    };
    let Some(rt) = runtime() else {
        return Vec::new();
    };
    let name = format!("motet_bench_{}", std::process::id());
    let dir = std::env::temp_dir().join(&name);
    let outcome = rt.block_on(async {
        let admin = connect(&admin_url).await?;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let reports = match with_database(&admin_url, &name) {
            Ok(url) => all(&url, &dir).await,
            Err(e) => Err(e),
        };
        if let Err(e) = admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await
        {
            eprintln!("pg_append: cannot drop database {name}: {e}");
        }
        reports
    });
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("pg_append: cannot remove {}: {e}", dir.display());
    }
    outcome.unwrap_or_else(|e| {
        eprintln!("pg_append: {e}");
        Vec::new()
    })
}
