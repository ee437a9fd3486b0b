//! Reading a PostgreSQL row's values: `bigint`s as the u64s they stand for, `text` columns, a
//! thread's summary and its entries' `(seq, body)`; a value that does not read is the
//! thread's damage, named with it.

use tokio_postgres::Row;

use crate::store::codec::corrupt;
use crate::store::rows::{SummaryRow, UNREADABLE_ID};
use crate::store::{StoreError, ThreadSummary};

/// A u64 as the `bigint` it is stored as; larger values are refused.
pub(super) fn to_db(thread_id: &str, what: &str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Encode {
        thread_id: thread_id.to_owned(),
        reason: format!("{what} {value} is above the largest storable integer"),
    })
}

/// Reads a `bigint` column as a u64; a negative or mistyped value is a corrupt thread.
pub(super) fn get_u64(thread_id: &str, row: &Row, column: &str) -> Result<u64, StoreError> {
    let value: i64 = row
        .try_get(column)
        .map_err(|e| corrupt(thread_id, column, e))?;
    u64::try_from(value).map_err(|_| corrupt(thread_id, column, format!("negative ({value})")))
}

/// Reads a nullable `bigint` column as an optional u64.
fn get_opt_u64(thread_id: &str, row: &Row, column: &str) -> Result<Option<u64>, StoreError> {
    let value: Option<i64> = row
        .try_get(column)
        .map_err(|e| corrupt(thread_id, column, e))?;
    value
        .map(|v| {
            u64::try_from(v).map_err(|_| corrupt(thread_id, column, format!("negative ({v})")))
        })
        .transpose()
}

/// Reads a `text` column.
pub(super) fn get_text<'a, T: tokio_postgres::types::FromSql<'a>>(
    thread_id: &str,
    row: &'a Row,
    column: &str,
) -> Result<T, StoreError> {
    row.try_get(column)
        .map_err(|e| corrupt(thread_id, column, e))
}

/// Decodes a `threads` row selected with `SUMMARY_COLUMNS`.
pub(super) fn decode_summary(row: &Row) -> Result<ThreadSummary, StoreError> {
    let id: String = row.try_get("id").map_err(|e| StoreError::CorruptThread {
        thread_id: UNREADABLE_ID.to_owned(),
        reason: format!("id: {e}"),
    })?;
    SummaryRow {
        created_at: get_u64(&id, row, "created_at")?,
        updated_at: get_u64(&id, row, "updated_at")?,
        rev: get_u64(&id, row, "rev")?,
        usage: get_text(&id, row, "usage")?,
        estimated_tokens: get_u64(&id, row, "estimated_tokens")?,
        metadata: get_text(&id, row, "metadata")?,
        parent: get_text(&id, row, "parent")?,
        latest_summary_seq: get_opt_u64(&id, row, "latest_summary_seq")?,
        latest_boundary_seq: get_opt_u64(&id, row, "latest_boundary_seq")?,
        id,
    }
    .decode()
}

/// The `(seq, body)` pairs of entry rows.
pub(super) fn entry_rows(thread_id: &str, rows: &[Row]) -> Result<Vec<(u64, String)>, StoreError> {
    rows.iter()
        .map(|row| {
            Ok((
                get_u64(thread_id, row, "seq")?,
                get_text(thread_id, row, "body")?,
            ))
        })
        .collect()
}
