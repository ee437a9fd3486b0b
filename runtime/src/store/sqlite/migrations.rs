//! The SQLite schema as an ordered list of migrations, versioned by `PRAGMA user_version`.
//!
//! Migration `i` (0-based) takes the schema from version `i` to `i + 1`. Migrations are only
//! ever added at the end; a released one is never edited. A file whose version is above
//! [`SCHEMA_VERSION`] was written by a newer build and is refused rather than guessed at.

/// The `PRAGMA application_id` of a motet store ("mtet"), so another program's SQLite file is
/// refused instead of being migrated.
pub(super) const APPLICATION_ID: i32 = 0x6d74_6574;

/// Version 1: threads and their entries.
///
/// - `threads.rev` is the number of entries (the next seq); `usage` is the session's totals as
///   `Usage` JSON; `latest_summary_seq` / `latest_boundary_seq` say where a projection window
///   starts without scanning the entries.
/// - `entries.body` is the whole `Entry` exactly as `serde_json` wrote it (provider meta
///   intact); `kind` and `at` are copies for queries. The table is clustered on
///   `(thread_id, seq)`, so one thread's entries, or those after a seq, are one range scan.
const V1: &str = "
CREATE TABLE threads (
    id                  TEXT    NOT NULL PRIMARY KEY,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    rev                 INTEGER NOT NULL,
    usage               TEXT    NOT NULL,
    estimated_tokens    INTEGER NOT NULL,
    metadata            TEXT    NOT NULL,
    parent              TEXT,
    latest_summary_seq  INTEGER,
    latest_boundary_seq INTEGER,
    meta                TEXT
);
CREATE TABLE entries (
    thread_id TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    at        INTEGER NOT NULL,
    body      TEXT    NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;
";

/// Version 2: the agent state stored with each commit (`threads.state`, JSON the runtime writes;
/// NULL for threads written before it or by another program).
const V2: &str = "ALTER TABLE threads ADD COLUMN state TEXT;";

/// Version 3: the fencing epoch (`threads.epoch`, 0 until a writer claims the thread).
const V3: &str = "ALTER TABLE threads ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;";

/// Version 4: the usage ledger, one row per LLM call (turns and summaries): when, for whom
/// (agent, thread, request, tenant), the model, the token counts and the price in pico-dollars
/// (NULL when the model had no price). Indexed for the sums a budget reads (per request, thread,
/// agent, tenant) and for `motet usage --since`.
const V4: &str = "
CREATE TABLE usage_ledger (
    id                 INTEGER PRIMARY KEY,
    at                 INTEGER NOT NULL,
    agent              TEXT    NOT NULL,
    thread             TEXT    NOT NULL,
    request            TEXT,
    tenant             TEXT,
    model              TEXT    NOT NULL,
    kind               TEXT    NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    reasoning_tokens   INTEGER NOT NULL,
    cost               INTEGER
);
CREATE INDEX usage_ledger_request ON usage_ledger (request) WHERE request IS NOT NULL;
CREATE INDEX usage_ledger_agent ON usage_ledger (agent, thread, at);
CREATE INDEX usage_ledger_tenant ON usage_ledger (tenant, at) WHERE tenant IS NOT NULL;
CREATE INDEX usage_ledger_at ON usage_ledger (at);
";

/// Version 5: timers kept until they fire (`Schedule` and `Cron` directives), keyed by the
/// thread's store id and the schedule id; `due_ms` indexed for the timekeeper's "what is due
/// next" and `signal_id` kept apart so a firing is settled only on the timer that fired.
const V5: &str = "
CREATE TABLE timers (
    thread_id TEXT    NOT NULL,
    id        TEXT    NOT NULL,
    agent     TEXT    NOT NULL,
    thread    TEXT    NOT NULL,
    due_ms    INTEGER NOT NULL,
    signal_id TEXT    NOT NULL,
    signal    TEXT    NOT NULL,
    cron      TEXT,
    PRIMARY KEY (thread_id, id)
) WITHOUT ROWID;
CREATE INDEX timers_due ON timers (due_ms);
";

/// Every migration, in order.
pub(super) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;
