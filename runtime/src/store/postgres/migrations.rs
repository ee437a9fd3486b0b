//! The PostgreSQL schema as an ordered list of migrations, versioned by the one row of
//! `motet_schema`.
//!
//! Migration `i` (0-based) takes the schema from version `i` to `i + 1`. Migrations are only
//! ever added at the end; a released one is never edited. A store whose version is above
//! [`SCHEMA_VERSION`] was written by a newer build and is refused rather than guessed at.
//! Tables are created in the first schema of the connection's `search_path` (`public` unless
//! the URL says otherwise), so one database can hold several stores, one per schema.

use deadpool_postgres::Object;

use super::server_err;
use crate::store::StoreError;

/// The key of the transaction-scoped advisory lock that serializes stores migrating the same
/// database at once ("mtet").
const MIGRATION_LOCK: i64 = 0x6d74_6574;

/// The table holding the schema version; created (with version 0) before the first migration.
const VERSION_TABLE: &str = "
CREATE TABLE motet_schema (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  integer NOT NULL
);
INSERT INTO motet_schema (version) VALUES (0);
";

/// Version 1: threads and their entries, as in the SQLite store's version 2, plus the fencing
/// epoch.
///
/// - `threads.rev` is the number of entries (the next seq); `epoch` is bumped by every claim
///   and checked by fenced appends; `usage` is the session's totals as `Usage` JSON;
///   `latest_summary_seq` / `latest_boundary_seq` say where a projection window starts; `ord`
///   keeps the insertion order for listings of threads created in the same millisecond.
/// - `entries.body` is the whole `Entry` exactly as `serde_json` wrote it, as `text` (not
///   `jsonb`, which would reorder keys and drop duplicate ones): provider meta survives byte
///   for byte. `kind` and `at` are copies for queries. The primary key `(thread_id, seq)`
///   makes one thread's entries, or those after a seq, one index range scan.
/// - Integers are `bigint`: u64 values above `i64::MAX` are refused on write.
const V1: &str = "
CREATE TABLE threads (
    id                  text   NOT NULL PRIMARY KEY,
    ord                 bigint GENERATED ALWAYS AS IDENTITY,
    created_at          bigint NOT NULL,
    updated_at          bigint NOT NULL,
    rev                 bigint NOT NULL,
    epoch               bigint NOT NULL DEFAULT 0,
    usage               text   NOT NULL,
    estimated_tokens    bigint NOT NULL,
    metadata            text   NOT NULL,
    parent              text,
    latest_summary_seq  bigint,
    latest_boundary_seq bigint,
    meta                text,
    state               text
);
CREATE INDEX threads_listing ON threads (created_at, ord);
CREATE TABLE entries (
    thread_id text   NOT NULL,
    seq       bigint NOT NULL,
    kind      text   NOT NULL,
    at        bigint NOT NULL,
    body      text   NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
";

/// Version 2: the usage ledger, as in the SQLite store's version 4: one row per LLM call, the
/// price in pico-dollars (NULL when the model had no price).
const V2: &str = "
CREATE TABLE usage_ledger (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                 bigint NOT NULL,
    agent              text   NOT NULL,
    thread             text   NOT NULL,
    request            text,
    tenant             text,
    model              text   NOT NULL,
    kind               text   NOT NULL,
    input_tokens       bigint NOT NULL,
    output_tokens      bigint NOT NULL,
    cache_read_tokens  bigint NOT NULL,
    cache_write_tokens bigint NOT NULL,
    reasoning_tokens   bigint NOT NULL,
    cost               bigint
);
CREATE INDEX usage_ledger_request ON usage_ledger (request) WHERE request IS NOT NULL;
CREATE INDEX usage_ledger_agent ON usage_ledger (agent, thread, at);
CREATE INDEX usage_ledger_tenant ON usage_ledger (tenant, at) WHERE tenant IS NOT NULL;
CREATE INDEX usage_ledger_at ON usage_ledger (at);
";

/// Version 3: timers kept until they fire, as in the SQLite store's version 5.
const V3: &str = "
CREATE TABLE timers (
    thread_id text   NOT NULL,
    id        text   NOT NULL,
    agent     text   NOT NULL,
    thread    text   NOT NULL,
    due_ms    bigint NOT NULL,
    signal_id text   NOT NULL,
    signal    text   NOT NULL,
    cron      text,
    PRIMARY KEY (thread_id, id)
);
CREATE INDEX timers_due ON timers (due_ms);
";

/// Version 4: a cluster's members and leases (docs/cluster.md).
///
/// - `motet_members`: one row per start of a node; `generation` is that start's identity.
///   `state` is `live`, `draining`, `dead` or `left`; a membership counts as live only while
///   `expires_at` is ahead of the server's clock, which heartbeats move on.
/// - `motet_leases`: which member (`generation`, NULL once released) hosts an agent, and the
///   lease's `epoch`, bumped at each change of hands and never reset, which commits carry.
const V4: &str = "
CREATE TABLE motet_members (
    generation bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    node       text        NOT NULL,
    address    text        NOT NULL,
    state      text        NOT NULL CHECK (state IN ('live', 'draining', 'dead', 'left')),
    joined_at  timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX motet_members_node ON motet_members (node) WHERE state IN ('live', 'draining');
CREATE TABLE motet_leases (
    agent      text   NOT NULL PRIMARY KEY,
    generation bigint,
    epoch      bigint NOT NULL
);
CREATE INDEX motet_leases_holder ON motet_leases (generation) WHERE generation IS NOT NULL;
";

/// Every migration, in order.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the schema to [`SCHEMA_VERSION`], refusing databases that are not ours or are newer.
pub(super) async fn migrate(client: &mut Object) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(server_err)?;
    // Stores opening the same database at once migrate one after the other.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
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
        tx.batch_execute(VERSION_TABLE).await.map_err(server_err)?;
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
    for migration in &MIGRATIONS[start..] {
        tx.batch_execute(migration).await.map_err(server_err)?;
    }
    // SCHEMA_VERSION is the length of a short constant list.
    let new_version = i32::try_from(SCHEMA_VERSION).unwrap_or(i32::MAX);
    tx.execute("UPDATE motet_schema SET version = $1", &[&new_version])
        .await
        .map_err(server_err)?;
    tx.commit().await.map_err(server_err)
}
