//! Reading from a SQLite store: a thread (its row and entries in one snapshot), the entries
//! after a rev, summaries and listings, and the meta, state and epoch kept in a thread's row.

use std::sync::Arc;

use motet_agents::{Entry, Thread};
use rusqlite::{Connection, OptionalExtension, params};

use super::{Inner, db_err, lock, thread_err};
use crate::store::codec::{
    StoredHead, assemble_thread, corrupt, decode_entries, decode_meta, not_found,
};
use crate::store::rows::{SUMMARY_COLUMNS, SummaryRow, UNREADABLE_ID};
use crate::store::{AgentQuery, AgentRecord, StoreError, ThreadListing, ThreadMeta, ThreadSummary};

impl Inner {
    pub(super) fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
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
        assemble_thread(&StoredHead::of(&summary), &entries).map(Some)
    }

    pub(super) fn load_after(
        &self,
        thread_id: &str,
        rev: u64,
    ) -> Result<Vec<Arc<Entry>>, StoreError> {
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
            return Err(not_found(thread_id));
        }
        let rows = read_entries(&tx, thread_id, rev).map_err(&err)?;
        drop(tx);
        drop(conn);
        decode_entries(thread_id, &rows)
    }

    pub(super) fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        let row = lock(&self.reader)
            .query_row(
                &format!("SELECT {SUMMARY_COLUMNS} FROM threads WHERE id = ?1"),
                [thread_id],
                |row| Ok(summary_row(row)),
            )
            .optional()
            .map_err(thread_err(&self.path, thread_id))?;
        row.map(|row| row.and_then(SummaryRow::decode)).transpose()
    }

    pub(super) fn list_readable(&self) -> Result<ThreadListing, StoreError> {
        let err = db_err(&self.path);
        let rows = {
            let conn = lock(&self.reader);
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
    }

    pub(super) fn thread_ids(&self, after: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let err = db_err(&self.path);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let conn = lock(&self.reader);
        let mut stmt = conn
            .prepare_cached("SELECT id FROM threads WHERE id > ?1 ORDER BY id LIMIT ?2")
            .map_err(&err)?;
        stmt.query_map(params![after, limit], |row| row.get(0))
            .map_err(&err)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(&err)
    }

    /// The directory of agents, grouped in SQL: a kind's agents by their threads' ids (a range
    /// of the primary key), every agent by the key in each thread's meta.
    pub(super) fn agents(&self, query: &AgentQuery) -> Result<Vec<AgentRecord>, StoreError> {
        let err = db_err(&self.path);
        let conn = lock(&self.reader);
        let after = query.after.clone().unwrap_or_default();
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let record = |row: &rusqlite::Row<'_>| {
            Ok(AgentRecord {
                name: row.get(0)?,
                threads: row.get(1)?,
                created_at: row.get(2)?,
                last_active: row.get(3)?,
            })
        };
        let records = match &query.kind {
            Some(kind) => {
                // `;` follows `:`: every id that starts `<kind>:` lies between the two.
                let (low, high) = (format!("{kind}:"), format!("{kind};"));
                let mut stmt = conn
                    .prepare_cached(
                        "SELECT substr(id, 1, instr(id, '/') - 1) AS agent, count(*),
                                min(created_at), max(updated_at)
                         FROM threads WHERE id >= ?1 AND id < ?2 AND instr(id, '/') > 0
                         GROUP BY agent HAVING agent > ?3 AND length(agent) > length(?1)
                         ORDER BY agent LIMIT ?4",
                    )
                    .map_err(&err)?;
                stmt.query_map(params![low, high, after, limit], record)
                    .map_err(&err)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            }
            None => {
                let mut stmt = conn
                    .prepare_cached(
                        "SELECT coalesce(json_extract(meta, '$.agent'),
                                         json_extract(meta, '$.strategy_config_id')) AS agent,
                                count(*), min(created_at), max(updated_at)
                         FROM threads WHERE meta IS NOT NULL AND json_valid(meta)
                         GROUP BY agent HAVING agent IS NOT NULL AND agent > ?1
                         ORDER BY agent LIMIT ?2",
                    )
                    .map_err(&err)?;
                stmt.query_map(params![after, limit], record)
                    .map_err(&err)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            }
        };
        records.map_err(&err)
    }

    pub(super) fn epoch(&self, thread_id: String) -> Result<u64, StoreError> {
        self.column(thread_id, "epoch")
    }

    pub(super) fn load_state(&self, thread_id: String) -> Result<Option<String>, StoreError> {
        self.column(thread_id, "state")
    }

    pub(super) fn get_meta(&self, thread_id: String) -> Result<Option<ThreadMeta>, StoreError> {
        let json: Option<String> = self.column(thread_id.clone(), "meta")?;
        json.map(|json| decode_meta(&thread_id, &json)).transpose()
    }

    /// The value of `column` in the thread's row; [`StoreError::NotFound`] when there is no
    /// such thread.
    fn column<T: rusqlite::types::FromSql>(
        &self,
        thread_id: String,
        column: &'static str,
    ) -> Result<T, StoreError> {
        lock(&self.reader)
            .query_row(
                &format!("SELECT {column} FROM threads WHERE id = ?1"),
                [&thread_id],
                |row| row.get::<_, T>(0),
            )
            .optional()
            .map_err(thread_err(&self.path, &thread_id))?
            .ok_or(StoreError::NotFound { thread_id })
    }
}

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
