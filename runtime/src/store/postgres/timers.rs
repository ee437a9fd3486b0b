//! Timers in a PostgreSQL store: kept, settled after a firing, and read back by due time.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{PostgresStore, bounded, server_err, thread_err};
use crate::store::timers::{COLUMNS, FiredRow, SettledRows, TimerRow, TimerRowWrite, millis_to_db};
use crate::store::{AgentQuery, AgentRecord, StoreError, StoredTimer, ThreadKey, TimerOwners};

/// Keeps a timer's row, replacing the one of the same thread and id.
const UPSERT: &str =
    "INSERT INTO timers (thread_id, agent, thread, id, due_ms, signal_id, signal, cron)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (thread_id, id) DO UPDATE SET
         due_ms = excluded.due_ms, signal_id = excluded.signal_id,
         signal = excluded.signal, cron = excluded.cron";

/// Removes a timer's row.
const DELETE: &str = "DELETE FROM timers WHERE thread_id = $1 AND id = $2";

/// Keeps `row` through `client` (in its transaction, if it is one).
async fn upsert(client: &impl GenericClient, row: &TimerRow) -> Result<(), tokio_postgres::Error> {
    let upsert = client.prepare_cached(UPSERT).await?;
    client
        .execute(
            &upsert,
            &[
                &row.thread_id,
                &row.agent,
                &row.thread,
                &row.id,
                &row.due_ms,
                &row.signal_id,
                &row.signal,
                &row.cron,
            ],
        )
        .await?;
    Ok(())
}

/// Removes the row of `thread_id` and `id` through `client`; returns whether there was one.
async fn delete(
    client: &impl GenericClient,
    thread_id: &str,
    id: &str,
) -> Result<bool, tokio_postgres::Error> {
    let delete = client.prepare_cached(DELETE).await?;
    Ok(client.execute(&delete, &[&thread_id, &id]).await? > 0)
}

/// Keeps many rows in one statement (each timer once: see [`TimerRowWrite::settled`]).
const UPSERT_ALL: &str =
    "INSERT INTO timers (thread_id, agent, thread, id, due_ms, signal_id, signal, cron)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                          $6::text[], $7::text[], $8::text[])
     ON CONFLICT (thread_id, id) DO UPDATE SET
         due_ms = excluded.due_ms, signal_id = excluded.signal_id,
         signal = excluded.signal, cron = excluded.cron";

/// Removes many rows in one statement.
const DELETE_ALL: &str =
    "DELETE FROM timers t USING unnest($1::text[], $2::text[]) AS g(thread_id, id)
     WHERE t.thread_id = g.thread_id AND t.id = g.id";

/// Settles a firing through `client` (in its transaction, if it is one): its row removed, or
/// moved on to its next occurrence, if it is still the one that fired; returns whether it was.
/// Prepared once per connection: one round trip.
async fn settle(
    client: &impl GenericClient,
    fired: &FiredRow,
) -> Result<bool, tokio_postgres::Error> {
    let FiredRow {
        thread_id,
        id,
        fired_ms,
        signal_id,
        next_ms,
    } = fired;
    let changed = match next_ms {
        Some(next) => {
            let update = client
                .prepare_cached(
                    "UPDATE timers SET due_ms = $5
                     WHERE thread_id = $1 AND id = $2 AND due_ms = $3 AND signal_id = $4",
                )
                .await?;
            client
                .execute(&update, &[thread_id, id, fired_ms, signal_id, next])
                .await?
        }
        None => {
            let delete = client
                .prepare_cached(
                    "DELETE FROM timers
                     WHERE thread_id = $1 AND id = $2 AND due_ms = $3 AND signal_id = $4",
                )
                .await?;
            client
                .execute(&delete, &[thread_id, id, fired_ms, signal_id])
                .await?
        }
    };
    Ok(changed > 0)
}

/// Makes `writes` inside `tx`, a step's commit on the thread `thread_id`: at most two
/// statements (the rows kept, the rows removed) whatever the number of timers, and one per
/// firing settled, sent together, so a step's timers cost its commit about one round trip.
pub(super) async fn write_in(
    tx: &deadpool_postgres::Transaction<'_>,
    thread_id: &str,
    writes: Vec<TimerRowWrite>,
) -> Result<(), StoreError> {
    let SettledRows {
        keep,
        remove,
        fired,
    } = TimerRowWrite::settled(writes);
    let err = thread_err(thread_id);
    let kept = async {
        if keep.is_empty() {
            return Ok(());
        }
        let column = |f: fn(&TimerRow) -> &str| keep.iter().map(f).collect::<Vec<_>>();
        let due: Vec<i64> = keep.iter().map(|r| r.due_ms).collect();
        let cron: Vec<Option<&str>> = keep.iter().map(|r| r.cron.as_deref()).collect();
        let upsert = tx.prepare_cached(UPSERT_ALL).await?;
        tx.execute(
            &upsert,
            &[
                &column(|r| r.thread_id.as_str()),
                &column(|r| r.agent.as_str()),
                &column(|r| r.thread.as_str()),
                &column(|r| r.id.as_str()),
                &due,
                &column(|r| r.signal_id.as_str()),
                &column(|r| r.signal.as_str()),
                &cron,
            ],
        )
        .await
        .map(|_| ())
    };
    let removed = async {
        if remove.is_empty() {
            return Ok(());
        }
        let threads: Vec<&str> = remove.iter().map(|(t, _)| t.as_str()).collect();
        let ids: Vec<&str> = remove.iter().map(|(_, id)| id.as_str()).collect();
        let delete = tx.prepare_cached(DELETE_ALL).await?;
        tx.execute(&delete, &[&threads, &ids]).await.map(|_| ())
    };
    // A step settles at most the one firing it handled.
    let settled = futures::future::try_join_all(fired.iter().map(|f| settle(tx, f)));
    futures::try_join!(kept, removed, settled).map_err(err)?;
    Ok(())
}

impl PostgresStore {
    pub(super) async fn keep_timer(&self, row: &TimerRow) -> Result<(), StoreError> {
        bounded(self.limit, Some(&row.thread_id), async {
            let client = self.pool.get().await.map_err(server_err)?;
            upsert(&client, row).await.map_err(server_err)
        })
        .await
    }

    pub(super) async fn drop_timer(&self, key: &ThreadKey, id: &str) -> Result<bool, StoreError> {
        let thread_id = key.store_id();
        bounded(self.limit, Some(&thread_id), async {
            let client = self.pool.get().await.map_err(server_err)?;
            delete(&client, &thread_id, id).await.map_err(server_err)
        })
        .await
    }

    pub(super) async fn settle_timer(
        &self,
        key: &ThreadKey,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        let fired = FiredRow {
            thread_id: key.store_id(),
            id: id.to_owned(),
            fired_ms: millis_to_db(fired_ms),
            signal_id: signal_id.to_owned(),
            next_ms: next_ms.map(millis_to_db),
        };
        bounded(self.limit, Some(&fired.thread_id), async {
            let client = self.pool.get().await.map_err(server_err)?;
            settle(&client, &fired).await.map_err(server_err)
        })
        .await
    }

    pub(super) async fn timers_due(
        &self,
        due: std::ops::Range<u64>,
        owners: &TimerOwners,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        let (agents, kinds) = (&owners.agents, &owners.kinds);
        let (from, before) = (millis_to_db(due.start), millis_to_db(due.end));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        bounded(self.limit, None, async {
            let client = self.pool.get().await.map_err(server_err)?;
            // The owners as subqueries, not `= ANY($2)`: a prepared statement's generic plan
            // searches an array parameter from its start for every row, where a subquery is
            // hashed once (10,000 agents' names, 2,500 due rows: 30 ms against 5).
            let select = client
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM timers
                     WHERE due_ms >= $5 AND due_ms < $1
                        AND (agent IN (SELECT unnest($2::text[]))
                        OR (strpos(agent, ':') > 1
                            AND split_part(agent, ':', 1) IN (SELECT unnest($3::text[]))))
                     ORDER BY due_ms LIMIT $4"
                ))
                .await
                .map_err(server_err)?;
            let rows = client
                .query(&select, &[&before, agents, kinds, &limit, &from])
                .await
                .map_err(server_err)?;
            rows.iter().map(|row| timer_row(row)?.decode()).collect()
        })
        .await
    }

    /// The directory's page of the virtual agents of `kind`, grouped in SQL from their
    /// threads' ids (a range of the primary key: `<kind>:` up to `<kind>;`).
    pub(super) async fn agents_of_kind(
        &self,
        kind: &str,
        query: &AgentQuery,
    ) -> Result<Vec<AgentRecord>, StoreError> {
        let (low, high) = (format!("{kind}:"), format!("{kind};"));
        let after = query.after.clone().unwrap_or_default();
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        bounded(self.limit, None, async {
            let client = self.pool.get().await.map_err(server_err)?;
            let rows = client
                .query(
                    "SELECT split_part(id, '/', 1) AS agent, count(*), min(created_at),
                            max(updated_at)
                     FROM threads WHERE id >= $1 AND id < $2 AND strpos(id, '/') > 0
                        AND split_part(id, '/', 1) > $3
                        AND length(split_part(id, '/', 1)) > length($1)
                     GROUP BY agent ORDER BY agent LIMIT $4",
                    &[&low, &high, &after, &limit],
                )
                .await
                .map_err(server_err)?;
            rows.iter()
                .map(|row| {
                    let count = |i: usize| {
                        row.try_get::<_, i64>(i)
                            .map_err(server_err)
                            .map(|n| u64::try_from(n).unwrap_or(0))
                    };
                    Ok(AgentRecord {
                        name: row.try_get(0).map_err(server_err)?,
                        threads: count(1)?,
                        created_at: count(2)?,
                        last_active: count(3)?,
                    })
                })
                .collect()
        })
        .await
    }

    pub(super) async fn thread_timers(
        &self,
        key: &ThreadKey,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        let thread_id = key.store_id();
        bounded(self.limit, Some(&thread_id), async {
            let client = self.pool.get().await.map_err(server_err)?;
            let rows = client
                .query(
                    &format!("SELECT {COLUMNS} FROM timers WHERE thread_id = $1 ORDER BY due_ms"),
                    &[&thread_id],
                )
                .await
                .map_err(server_err)?;
            rows.iter().map(|row| timer_row(row)?.decode()).collect()
        })
        .await
    }
}

fn timer_row(row: &Row) -> Result<TimerRow, StoreError> {
    let get = |i: usize| row.try_get::<_, String>(i).map_err(server_err);
    Ok(TimerRow {
        thread_id: get(0)?,
        agent: get(1)?,
        thread: get(2)?,
        id: get(3)?,
        due_ms: row.try_get(4).map_err(server_err)?,
        signal_id: get(5)?,
        signal: get(6)?,
        cron: row.try_get(7).map_err(server_err)?,
    })
}
