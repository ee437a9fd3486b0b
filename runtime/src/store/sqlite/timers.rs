//! Timers in a SQLite store: kept, settled after a firing, and read back by due time.

use rusqlite::{Connection, Row, params};

use super::{Inner, db_err, lock};
use crate::store::timers::{COLUMNS, FiredRow, TimerRow, TimerRowWrite, millis_to_db};
use crate::store::{StoreError, StoredTimer, ThreadKey};

/// Keeps a timer's row, replacing the one of the same thread and id.
const UPSERT: &str =
    "INSERT INTO timers (thread_id, agent, thread, id, due_ms, signal_id, signal, cron)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
     ON CONFLICT (thread_id, id) DO UPDATE SET
         due_ms = excluded.due_ms, signal_id = excluded.signal_id,
         signal = excluded.signal, cron = excluded.cron";

/// Removes a timer's row.
const DELETE: &str = "DELETE FROM timers WHERE thread_id = ?1 AND id = ?2";

/// Keeps `row` on `conn` (in the caller's transaction, if any).
fn upsert(conn: &Connection, row: &TimerRow) -> rusqlite::Result<()> {
    conn.prepare_cached(UPSERT)?.execute(params![
        row.thread_id,
        row.agent,
        row.thread,
        row.id,
        row.due_ms,
        row.signal_id,
        row.signal,
        row.cron
    ])?;
    Ok(())
}

/// Removes the row of `thread_id` and `id` on `conn`; returns whether there was one.
fn delete(conn: &Connection, thread_id: &str, id: &str) -> rusqlite::Result<bool> {
    let removed = conn
        .prepare_cached(DELETE)?
        .execute(params![thread_id, id])?;
    Ok(removed > 0)
}

/// Makes `writes` in order, inside the caller's transaction.
pub(super) fn write_in(conn: &Connection, writes: &[TimerRowWrite]) -> rusqlite::Result<()> {
    for write in writes {
        match write {
            TimerRowWrite::Put(row) => upsert(conn, row)?,
            TimerRowWrite::Remove { thread_id, id } => {
                delete(conn, thread_id, id)?;
            }
            TimerRowWrite::Fired(fired) => {
                settle(conn, fired)?;
            }
        }
    }
    Ok(())
}

/// Settles a firing on `conn`: its row removed, or moved on to its next occurrence, if it is
/// still the one that fired; returns whether it was.
fn settle(conn: &Connection, fired: &FiredRow) -> rusqlite::Result<bool> {
    let changed = match fired.next_ms {
        Some(next) => conn
            .prepare_cached(
                "UPDATE timers SET due_ms = ?5
                 WHERE thread_id = ?1 AND id = ?2 AND due_ms = ?3 AND signal_id = ?4",
            )?
            .execute(params![
                fired.thread_id,
                fired.id,
                fired.fired_ms,
                fired.signal_id,
                next
            ])?,
        None => conn
            .prepare_cached(
                "DELETE FROM timers
                 WHERE thread_id = ?1 AND id = ?2 AND due_ms = ?3 AND signal_id = ?4",
            )?
            .execute(params![
                fired.thread_id,
                fired.id,
                fired.fired_ms,
                fired.signal_id
            ])?,
    };
    Ok(changed > 0)
}

impl Inner {
    pub(super) fn put_timer(&self, row: &TimerRow) -> Result<(), StoreError> {
        upsert(&lock(&self.writer), row).map_err(db_err(&self.path))
    }

    pub(super) fn remove_timer(&self, thread_id: &str, id: &str) -> Result<bool, StoreError> {
        delete(&lock(&self.writer), thread_id, id).map_err(db_err(&self.path))
    }

    pub(super) fn timer_fired(
        &self,
        thread_id: &str,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        let fired = FiredRow {
            thread_id: thread_id.to_owned(),
            id: id.to_owned(),
            fired_ms: millis_to_db(fired_ms),
            signal_id: signal_id.to_owned(),
            next_ms: next_ms.map(millis_to_db),
        };
        settle(&lock(&self.writer), &fired).map_err(db_err(&self.path))
    }

    pub(super) fn due_timers(
        &self,
        due: &std::ops::Range<u64>,
        agents: &str,
        kinds: &str,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        let err = db_err(&self.path);
        let conn = lock(&self.reader);
        // A virtual agent's name is `<kind>:<key>`: its kind is what precedes the first `:`.
        let mut select = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM timers
                 WHERE due_ms >= ?5 AND due_ms < ?1
                    AND (agent IN (SELECT value FROM json_each(?2))
                    OR (instr(agent, ':') > 1
                        AND substr(agent, 1, instr(agent, ':') - 1)
                            IN (SELECT value FROM json_each(?3))))
                 ORDER BY due_ms LIMIT ?4"
            ))
            .map_err(&err)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = select
            .query_map(
                params![
                    millis_to_db(due.end),
                    agents,
                    kinds,
                    limit,
                    millis_to_db(due.start)
                ],
                timer_row,
            )
            .map_err(&err)?;
        rows.map(|row| row.map_err(&err)?.decode()).collect()
    }

    pub(super) fn timers_of(&self, key: &ThreadKey) -> Result<Vec<StoredTimer>, StoreError> {
        let err = db_err(&self.path);
        let conn = lock(&self.reader);
        let mut select = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM timers WHERE thread_id = ?1 ORDER BY due_ms"
            ))
            .map_err(&err)?;
        let rows = select
            .query_map([key.store_id()], timer_row)
            .map_err(&err)?;
        rows.map(|row| row.map_err(&err)?.decode()).collect()
    }
}

fn timer_row(row: &Row<'_>) -> rusqlite::Result<TimerRow> {
    Ok(TimerRow {
        thread_id: row.get(0)?,
        agent: row.get(1)?,
        thread: row.get(2)?,
        id: row.get(3)?,
        due_ms: row.get(4)?,
        signal_id: row.get(5)?,
        signal: row.get(6)?,
        cron: row.get(7)?,
    })
}
