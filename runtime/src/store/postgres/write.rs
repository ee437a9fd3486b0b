//! Writing to a PostgreSQL store: creating a thread (with its meta and first entries in one
//! transaction), appending under the thread row's lock (the epoch of a fenced append, then the
//! rev, checked there), claiming, deleting, and the meta.

use std::sync::Arc;

use deadpool_postgres::Transaction;
use motet_agents::Entry;
use motet_directives::Usage;

use super::columns::{get_text, get_u64, to_db};
use super::{PostgresStore, bounded, thread_err};
use crate::store::codec::{
    Append, AppendTotals, EncodedEntry, check_epoch, check_rev, corrupt, encode_entries,
    encode_json, not_found,
};
use crate::store::rows::NewThreadRow;
use crate::store::timers::TimerRowWrite;
use crate::store::{StepCommit, StoreError, ThreadHeader};

impl PostgresStore {
    pub(super) async fn create_thread(
        &self,
        header: &ThreadHeader,
        meta: Option<String>,
        entries: Option<&[Arc<Entry>]>,
    ) -> Result<u64, StoreError> {
        bounded(self.limit, Some(header.id.as_str()), async {
            let row = NewThreadRow::of(header)?;
            let Some(entries) = entries else {
                let client = self.client(&row.id).await?;
                return insert_thread(&client, &row, meta.as_deref())
                    .await
                    .map(|()| 0);
            };
            let (encoded, totals) = encode_entries(&row.id, entries, 0)?;
            let err = thread_err(&row.id);
            let mut client = self.client(&row.id).await?;
            let tx = client.transaction().await.map_err(&err)?;
            insert_thread(&tx, &row, meta.as_deref()).await?;
            let rev = append_in(&tx, &row.id, &encoded, &totals, Append::plain(0)).await?;
            tx.commit().await.map_err(&err)?;
            Ok(rev)
        })
        .await
    }

    /// Writes a step in one transaction: the thread created (a first write) or its epoch
    /// checked under its row lock, the entries appended at the rev, the state stored and the
    /// timers changed.
    pub(super) async fn write_step(&self, step: &StepCommit<'_>) -> Result<u64, StoreError> {
        let thread_id = step.thread_id;
        bounded(self.limit, Some(thread_id), async {
            let create = step
                .create
                .map(|(header, meta)| {
                    Ok::<_, StoreError>((NewThreadRow::of(header)?, encode_json(thread_id, meta)?))
                })
                .transpose()?;
            let (encoded, totals) = encode_entries(thread_id, step.entries, step.expected_rev)?;
            let timers = TimerRowWrite::of(step.timers)?;
            let err = thread_err(thread_id);
            let mut client = self.client(thread_id).await?;
            let tx = client.transaction().await.map_err(&err)?;
            let append = match &create {
                Some((row, meta)) => {
                    insert_thread(&tx, row, Some(meta)).await?;
                    Append {
                        expected_rev: 0,
                        state: step.state,
                        epoch: None,
                    }
                }
                None => Append::fenced(step.expected_rev, step.state, step.epoch),
            };
            // In a cluster the lease is checked (and share-locked) first, in the same
            // transaction. Sent together: the timers need nothing the append reads, and a
            // failed check or append rolls everything back with it.
            let lease = async {
                match step.lease {
                    Some(lease) => super::cluster::check_lease(&tx, thread_id, lease).await,
                    None => Ok(()),
                }
            };
            let ((), rev, ()) = futures::try_join!(
                lease,
                append_in(&tx, thread_id, &encoded, &totals, append),
                super::timers::write_in(&tx, thread_id, timers),
            )?;
            tx.commit().await.map_err(&err)?;
            Ok(rev)
        })
        .await
    }

    /// Appends as `append` says, in one transaction.
    pub(super) async fn append_checked(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        append: Append<'_>,
    ) -> Result<u64, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let (encoded, totals) = encode_entries(thread_id, entries, append.expected_rev)?;
            let err = thread_err(thread_id);
            let mut client = self.client(thread_id).await?;
            let tx = client.transaction().await.map_err(&err)?;
            let rev = append_in(&tx, thread_id, &encoded, &totals, append).await?;
            tx.commit().await.map_err(&err)?;
            Ok(rev)
        })
        .await
    }

    pub(super) async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let mut client = self.client(thread_id).await?;
            let tx = client.transaction().await.map_err(&err)?;
            // The thread row first: that waits for an append holding its lock, so the entries
            // deleted next include everything that append committed.
            let deleted = tx
                .execute("DELETE FROM threads WHERE id = $1", &[&thread_id])
                .await
                .map_err(&err)?;
            tx.execute("DELETE FROM entries WHERE thread_id = $1", &[&thread_id])
                .await
                .map_err(&err)?;
            tx.execute("DELETE FROM timers WHERE thread_id = $1", &[&thread_id])
                .await
                .map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            Ok(deleted > 0)
        })
        .await
    }

    pub(super) async fn store_meta(&self, thread_id: &str, json: &str) -> Result<(), StoreError> {
        bounded(self.limit, Some(thread_id), async {
            let err = thread_err(thread_id);
            let client = self.client(thread_id).await?;
            let stmt = client
                .prepare_cached("UPDATE threads SET meta = $2 WHERE id = $1")
                .await
                .map_err(&err)?;
            let updated = client
                .execute(&stmt, &[&thread_id, &json])
                .await
                .map_err(&err)?;
            if updated == 0 {
                return Err(not_found(thread_id));
            }
            Ok(())
        })
        .await
    }
}

/// Inserts an empty thread (with its meta, when given); [`StoreError::AlreadyExists`] when the
/// id is taken.
async fn insert_thread(
    client: &impl deadpool_postgres::GenericClient,
    row: &NewThreadRow,
    meta: Option<&str>,
) -> Result<(), StoreError> {
    let err = thread_err(&row.id);
    let stmt = client
        .prepare_cached(
            "INSERT INTO threads (id, created_at, updated_at, rev, usage, estimated_tokens, \
             metadata, parent, meta) VALUES ($1, $2, $2, 0, $3, 0, $4, $5, $6) \
             ON CONFLICT (id) DO NOTHING",
        )
        .await
        .map_err(&err)?;
    let inserted = client
        .execute(
            &stmt,
            &[
                &row.id,
                &to_db(&row.id, "created_at", row.created_at)?,
                &row.usage,
                &row.metadata,
                &row.parent,
                &meta,
            ],
        )
        .await
        .map_err(&err)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists {
            thread_id: row.id.clone(),
        });
    }
    Ok(())
}

/// Appends encoded entries inside the caller's transaction if the thread is at the rev (and,
/// for a fenced append, still at the epoch) `append` says, and replaces its state when one is
/// given; returns the new rev. The caller commits.
async fn append_in(
    tx: &Transaction<'_>,
    thread_id: &str,
    encoded: &[EncodedEntry],
    totals: &AppendTotals,
    append: Append<'_>,
) -> Result<u64, StoreError> {
    let err = thread_err(thread_id);
    let lock = tx
        .prepare_cached("SELECT rev, usage, epoch FROM threads WHERE id = $1 FOR UPDATE")
        .await
        .map_err(&err)?;
    let Some(row) = tx.query_opt(&lock, &[&thread_id]).await.map_err(&err)? else {
        return Err(not_found(thread_id));
    };
    let rev = get_u64(thread_id, &row, "rev")?;
    if let Some(epoch) = append.epoch {
        check_epoch(thread_id, epoch, get_u64(thread_id, &row, "epoch")?)?;
    }
    check_rev(thread_id, append.expected_rev, rev)?;
    if encoded.is_empty() {
        if let Some(state) = append.state {
            let stmt = tx
                .prepare_cached("UPDATE threads SET state = $2 WHERE id = $1")
                .await
                .map_err(&err)?;
            tx.execute(&stmt, &[&thread_id, &state])
                .await
                .map_err(&err)?;
        }
        return Ok(rev);
    }
    let usage: String = get_text(thread_id, &row, "usage")?;
    let mut usage: Usage =
        serde_json::from_str(&usage).map_err(|e| corrupt(thread_id, "usage", e))?;
    usage += totals.usage;
    let new_rev = rev + encoded.len() as u64;
    let moved = Moved {
        rev: new_rev,
        usage: &usage,
        totals,
        state: append.state,
    };
    // Sent together: one round trip for both, the row locked above.
    futures::try_join!(
        insert_entries(tx, thread_id, encoded),
        move_row(tx, thread_id, &moved)
    )?;
    Ok(new_rev)
}

/// Inserts the entries in one statement.
async fn insert_entries(
    tx: &Transaction<'_>,
    thread_id: &str,
    encoded: &[EncodedEntry],
) -> Result<(), StoreError> {
    let mut seqs = Vec::with_capacity(encoded.len());
    let mut kinds = Vec::with_capacity(encoded.len());
    let mut ats = Vec::with_capacity(encoded.len());
    let mut bodies = Vec::with_capacity(encoded.len());
    for entry in encoded {
        seqs.push(to_db(thread_id, "seq", entry.seq)?);
        kinds.push(entry.kind);
        ats.push(to_db(thread_id, "at", entry.at)?);
        bodies.push(entry.json.as_str());
    }
    let err = thread_err(thread_id);
    let insert = tx
        .prepare_cached(
            "INSERT INTO entries (thread_id, seq, kind, at, body) \
             SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[])",
        )
        .await
        .map_err(&err)?;
    tx.execute(&insert, &[&thread_id, &seqs, &kinds, &ats, &bodies])
        .await
        .map_err(&err)?;
    Ok(())
}

/// Where an append moves the thread's row: its new rev, totals, window marks and state.
struct Moved<'a> {
    rev: u64,
    usage: &'a Usage,
    totals: &'a AppendTotals,
    state: Option<&'a str>,
}

/// Moves the thread's row as `moved` says.
async fn move_row(
    tx: &Transaction<'_>,
    thread_id: &str,
    moved: &Moved<'_>,
) -> Result<(), StoreError> {
    let err = thread_err(thread_id);
    let update = tx
        .prepare_cached(
            "UPDATE threads SET rev = $2, updated_at = greatest(updated_at, $3), usage = $4, \
             estimated_tokens = estimated_tokens + $5, \
             latest_summary_seq = coalesce($6, latest_summary_seq), \
             latest_boundary_seq = coalesce($7, latest_boundary_seq), \
             state = coalesce($8, state) WHERE id = $1",
        )
        .await
        .map_err(&err)?;
    let totals = moved.totals;
    let seq = |s: Option<u64>| s.map(|s| to_db(thread_id, "seq", s)).transpose();
    tx.execute(
        &update,
        &[
            &thread_id,
            &to_db(thread_id, "rev", moved.rev)?,
            &to_db(thread_id, "at", totals.max_at)?,
            &encode_json(thread_id, moved.usage)?,
            &to_db(thread_id, "estimated_tokens", totals.estimated_tokens)?,
            &seq(totals.latest_summary_seq)?,
            &seq(totals.latest_boundary_seq)?,
            &moved.state,
        ],
    )
    .await
    .map_err(&err)?;
    Ok(())
}
