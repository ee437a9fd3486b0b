//! Reading from a PostgreSQL store: a thread (its row and entries in one REPEATABLE READ
//! snapshot), the entries after a rev, summaries and listings, and the columns of a thread's
//! row (meta, state, epoch).

use std::sync::Arc;

use motet_agents::{Entry, Thread};
use tokio_postgres::IsolationLevel;

use super::columns::{decode_summary, entry_rows, get_text, get_u64, to_db};
use super::{PostgresStore, bounded, server_err, thread_err};
use crate::store::codec::{StoredHead, assemble_thread, corrupt, decode_entries, not_found};
use crate::store::rows::SUMMARY_COLUMNS;
use crate::store::{ClaimedThread, StoreError, ThreadListing, ThreadSummary};

impl PostgresStore {
    pub(super) async fn load_thread(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let mut client = self.client(thread_id).await?;
            // One snapshot: the thread row and its entries agree.
            let tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(&err)?;
            let head = tx
                .prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM threads WHERE id = $1"
                ))
                .await
                .map_err(&err)?;
            let Some(row) = tx.query_opt(&head, &[&thread_id]).await.map_err(&err)? else {
                return Ok(None);
            };
            let body = tx
                .prepare_cached("SELECT seq, body FROM entries WHERE thread_id = $1 ORDER BY seq")
                .await
                .map_err(&err)?;
            let rows = tx.query(&body, &[&thread_id]).await.map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            drop(client);
            let summary = decode_summary(&row)?;
            let entries = entry_rows(thread_id, &rows)?;
            assemble_thread(&StoredHead::of(&summary), &entries).map(Some)
        })
        .await
    }

    /// Claims the thread and reads it in one statement: the claim returns the row (its rev,
    /// state and totals as the claim left them) and, beside it, the entries below that rev.
    ///
    /// The entries are read in the statement's snapshot, taken before the claim; a commit the
    /// claim waited for (the row locked by an earlier holder's last step) is in the row the
    /// claim returns but not in that snapshot. Then fewer entries than the rev come back, and
    /// a second statement, in a snapshot of its own, reads the rest.
    pub(super) async fn claim_thread(
        &self,
        thread_id: &str,
    ) -> Result<Option<ClaimedThread>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let claim = client
                .prepare_cached(&format!(
                    "WITH claimed AS (UPDATE threads SET epoch = epoch + 1 WHERE id = $1 \
                     RETURNING epoch, state, {SUMMARY_COLUMNS}) \
                     SELECT claimed.*, \
                     ARRAY(SELECT e.seq FROM entries e \
                           WHERE e.thread_id = $1 AND e.seq < claimed.rev ORDER BY e.seq) AS seqs, \
                     ARRAY(SELECT e.body FROM entries e \
                           WHERE e.thread_id = $1 AND e.seq < claimed.rev ORDER BY e.seq) AS bodies \
                     FROM claimed"
                ))
                .await
                .map_err(&err)?;
            let Some(row) = client
                .query_opt(&claim, &[&thread_id])
                .await
                .map_err(&err)?
            else {
                return Ok(None);
            };
            let summary = decode_summary(&row)?;
            let epoch = get_u64(thread_id, &row, "epoch")?;
            let state: Option<String> = row
                .try_get("state")
                .map_err(|e| corrupt(thread_id, "state", e))?;
            let seqs: Vec<i64> = row
                .try_get("seqs")
                .map_err(|e| corrupt(thread_id, "seq", e))?;
            let bodies: Vec<String> = row
                .try_get("bodies")
                .map_err(|e| corrupt(thread_id, "body", e))?;
            let mut entries = seqs
                .into_iter()
                .zip(bodies)
                .map(|(seq, body)| {
                    u64::try_from(seq)
                        .map(|seq| (seq, body))
                        .map_err(|_| corrupt(thread_id, "seq", format!("negative ({seq})")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let read = entries.len() as u64;
            if read < summary.rev {
                let rest = client
                    .prepare_cached(
                        "SELECT seq, body FROM entries \
                         WHERE thread_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq",
                    )
                    .await
                    .map_err(&err)?;
                let (from, to) = (
                    to_db(thread_id, "rev", read)?,
                    to_db(thread_id, "rev", summary.rev)?,
                );
                let rows = client
                    .query(&rest, &[&thread_id, &from, &to])
                    .await
                    .map_err(&err)?;
                entries.extend(entry_rows(thread_id, &rows)?);
            }
            drop(client);
            let thread = assemble_thread(&StoredHead::of(&summary), &entries)?;
            Ok(Some(ClaimedThread {
                epoch,
                thread,
                state,
            }))
        })
        .await
    }

    pub(super) async fn entries_after(
        &self,
        thread_id: &str,
        rev: u64,
    ) -> Result<Vec<Arc<Entry>>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let from = to_db(thread_id, "rev", rev)?;
            let client = self.client(thread_id).await?;
            // One statement, so one snapshot: the thread's existence and its committed entries.
            let stmt = client
                .prepare_cached(
                    "SELECT e.seq, e.body FROM threads t \
                     LEFT JOIN entries e ON e.thread_id = t.id AND e.seq >= $2 AND e.seq < t.rev \
                     WHERE t.id = $1 ORDER BY e.seq",
                )
                .await
                .map_err(&err)?;
            let rows = client
                .query(&stmt, &[&thread_id, &from])
                .await
                .map_err(&err)?;
            drop(client);
            if rows.is_empty() {
                return Err(not_found(thread_id));
            }
            let mut pairs = Vec::with_capacity(rows.len());
            for row in &rows {
                let seq: Option<i64> = row
                    .try_get("seq")
                    .map_err(|e| corrupt(thread_id, "seq", e))?;
                if seq.is_some() {
                    pairs.push((
                        get_u64(thread_id, row, "seq")?,
                        get_text(thread_id, row, "body")?,
                    ));
                }
            }
            decode_entries(thread_id, &pairs)
        })
        .await
    }

    pub(super) async fn thread_summary(
        &self,
        thread_id: &str,
    ) -> Result<Option<ThreadSummary>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM threads WHERE id = $1"
                ))
                .await
                .map_err(&err)?;
            let row = client.query_opt(&stmt, &[&thread_id]).await.map_err(&err)?;
            row.as_ref().map(decode_summary).transpose()
        })
        .await
    }

    pub(super) async fn listing(&self) -> Result<ThreadListing, StoreError> {
        bounded(self.limit, None, async {
            let client = self.pool.get().await.map_err(server_err)?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT {SUMMARY_COLUMNS} FROM threads ORDER BY created_at, ord"
                ))
                .await
                .map_err(server_err)?;
            let rows = client.query(&stmt, &[]).await.map_err(server_err)?;
            drop(client);
            Ok(ThreadListing::of(rows.iter().map(decode_summary)))
        })
        .await
    }

    pub(super) async fn ids_after(
        &self,
        after: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        bounded(self.limit, None, async {
            let client = self.pool.get().await.map_err(server_err)?;
            let stmt = client
                .prepare_cached("SELECT id FROM threads WHERE id > $1 ORDER BY id LIMIT $2")
                .await
                .map_err(server_err)?;
            let rows = client
                .query(&stmt, &[&after, &limit])
                .await
                .map_err(server_err)?;
            rows.iter()
                .map(|row| row.try_get(0).map_err(server_err))
                .collect()
        })
        .await
    }

    /// Reads the optional text `column` of one thread row; [`StoreError::NotFound`] when there
    /// is no such thread.
    pub(super) async fn thread_column(
        &self,
        thread_id: &str,
        column: &'static str,
    ) -> Result<Option<String>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client
                .prepare_cached(&format!("SELECT {column} FROM threads WHERE id = $1"))
                .await
                .map_err(&err)?;
            match client.query_opt(&stmt, &[&thread_id]).await.map_err(&err)? {
                Some(row) => get_text(thread_id, &row, column),
                None => Err(not_found(thread_id)),
            }
        })
        .await
    }

    /// The `epoch` column `sql` returns for the thread (reading or bumping it).
    pub(super) async fn epoch_by(&self, thread_id: &str, sql: &str) -> Result<u64, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client.prepare_cached(sql).await.map_err(&err)?;
            match client.query_opt(&stmt, &[&thread_id]).await.map_err(&err)? {
                Some(row) => get_u64(thread_id, &row, "epoch"),
                None => Err(not_found(thread_id)),
            }
        })
        .await
    }
}
