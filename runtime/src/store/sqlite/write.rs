//! Writing to a SQLite store: creating a thread (with its meta and first entries in one
//! transaction), appending (the rev, and for a fenced append the epoch, checked under the write
//! lock), claiming, deleting, and the meta.

use motet_directives::Usage;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{Inner, lock, thread_err};
use crate::store::StoreError;
use crate::store::codec::{
    Append, AppendTotals, EncodedEntry, check_epoch, check_rev, corrupt, encode_json, not_found,
};
use crate::store::rows::NewThreadRow;
use crate::store::timers::TimerRowWrite;

/// A step's commit, encoded for the SQLite store: the thread's row to create with its meta
/// (for a first write), its entries and their totals, the rev, state and epoch checked and
/// written, and the timer changes.
pub(in crate::store) struct EncodedStep {
    pub(in crate::store) thread_id: String,
    pub(in crate::store) create: Option<(NewThreadRow, String)>,
    pub(in crate::store) encoded: Vec<EncodedEntry>,
    pub(in crate::store) totals: AppendTotals,
    pub(in crate::store) expected_rev: u64,
    pub(in crate::store) state: Option<String>,
    pub(in crate::store) epoch: u64,
    pub(in crate::store) timers: Vec<TimerRowWrite>,
}

impl Inner {
    /// Appends the entries at `expected_rev` and, when given, replaces the thread's state, in
    /// one transaction.
    pub(super) fn append(
        &self,
        thread_id: &str,
        encoded: &[EncodedEntry],
        totals: &AppendTotals,
        append: Append<'_>,
    ) -> Result<u64, StoreError> {
        let err = thread_err(&self.path, thread_id);
        let mut conn = lock(&self.writer);
        // IMMEDIATE takes the write lock now, so the rev and epoch read below cannot go stale
        // before the commit, even with other connections on the file.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        if let Some(epoch) = append.epoch {
            let current = tx
                .query_row(
                    "SELECT epoch FROM threads WHERE id = ?1",
                    [thread_id],
                    |row| row.get::<_, u64>(0),
                )
                .optional()
                .map_err(&err)?
                .ok_or_else(|| not_found(thread_id))?;
            check_epoch(thread_id, epoch, current)?;
        }
        let rev = append_in(&tx, thread_id, encoded, totals, append.expected_rev, &err)?;
        if let Some(state) = append.state {
            tx.execute(
                "UPDATE threads SET state = ?2 WHERE id = ?1",
                params![thread_id, state],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(rev)
    }

    /// Writes a step in one transaction: the thread created (a first write) or its epoch
    /// checked, the entries appended at the rev, the state stored and the timers changed.
    pub(super) fn commit_step(&self, step: &EncodedStep) -> Result<u64, StoreError> {
        let thread_id = step.thread_id.as_str();
        let err = thread_err(&self.path, thread_id);
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        match &step.create {
            Some((row, meta)) => {
                insert_thread(&tx, row, &err)?;
                tx.execute(
                    "UPDATE threads SET meta = ?2 WHERE id = ?1",
                    params![row.id, meta],
                )
                .map_err(&err)?;
            }
            None => {
                let current = tx
                    .query_row(
                        "SELECT epoch FROM threads WHERE id = ?1",
                        [thread_id],
                        |row| row.get::<_, u64>(0),
                    )
                    .optional()
                    .map_err(&err)?
                    .ok_or_else(|| not_found(thread_id))?;
                check_epoch(thread_id, step.epoch, current)?;
            }
        }
        let rev = append_in(
            &tx,
            thread_id,
            &step.encoded,
            &step.totals,
            step.expected_rev,
            &err,
        )?;
        if let Some(state) = &step.state {
            tx.execute(
                "UPDATE threads SET state = ?2 WHERE id = ?1",
                params![thread_id, state],
            )
            .map_err(&err)?;
        }
        super::timers::write_in(&tx, &step.timers).map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(rev)
    }

    /// Creates the thread, stores its meta and appends its first entries in one transaction:
    /// a crash leaves either all of it or none.
    pub(super) fn create_with(
        &self,
        row: NewThreadRow,
        meta: Option<String>,
        encoded: &[EncodedEntry],
        totals: &AppendTotals,
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

    pub(super) fn create(&self, row: &NewThreadRow) -> Result<(), StoreError> {
        let conn = lock(&self.writer);
        insert_thread(&conn, row, &thread_err(&self.path, &row.id))
    }

    /// Bumps the thread's epoch and returns the new one.
    pub(super) fn claim(&self, thread_id: String) -> Result<u64, StoreError> {
        lock(&self.writer)
            .query_row(
                "UPDATE threads SET epoch = epoch + 1 WHERE id = ?1 RETURNING epoch",
                [&thread_id],
                |row| row.get::<_, u64>(0),
            )
            .optional()
            .map_err(thread_err(&self.path, &thread_id))?
            .ok_or(StoreError::NotFound { thread_id })
    }

    pub(super) fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        let err = thread_err(&self.path, thread_id);
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        tx.execute("DELETE FROM entries WHERE thread_id = ?1", [thread_id])
            .map_err(&err)?;
        tx.execute("DELETE FROM timers WHERE thread_id = ?1", [thread_id])
            .map_err(&err)?;
        let deleted = tx
            .execute("DELETE FROM threads WHERE id = ?1", [thread_id])
            .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(deleted > 0)
    }

    pub(super) fn put_meta(&self, thread_id: String, json: &str) -> Result<(), StoreError> {
        let updated = lock(&self.writer)
            .execute(
                "UPDATE threads SET meta = ?2 WHERE id = ?1",
                params![thread_id, json],
            )
            .map_err(thread_err(&self.path, &thread_id))?;
        if updated == 0 {
            return Err(StoreError::NotFound { thread_id });
        }
        Ok(())
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
    encoded: &[EncodedEntry],
    totals: &AppendTotals,
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
        return Err(not_found(thread_id));
    };
    check_rev(thread_id, expected_rev, rev)?;
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
