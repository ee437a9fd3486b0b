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

    /// Claims the thread and reads it in two statements: the claim returns the row (its rev,
    /// state and totals as the claim left them), then the entries below that rev, which no
    /// later commit changes.
    pub(super) async fn claim_thread(
        &self,
        thread_id: &str,
    ) -> Result<Option<ClaimedThread>, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let claim = client
                .prepare_cached(&format!(
                    "UPDATE threads SET epoch = epoch + 1 WHERE id = $1 \
                     RETURNING epoch, state, {SUMMARY_COLUMNS}"
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
            let body = client
                .prepare_cached(
                    "SELECT seq, body FROM entries WHERE thread_id = $1 AND seq < $2 ORDER BY seq",
                )
                .await
                .map_err(&err)?;
            let rev = to_db(thread_id, "rev", summary.rev)?;
            let rows = client
                .query(&body, &[&thread_id, &rev])
                .await
                .map_err(&err)?;
            drop(client);
            let entries = entry_rows(thread_id, &rows)?;
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
