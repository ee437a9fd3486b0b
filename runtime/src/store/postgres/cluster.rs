//! A cluster's members and leases in a PostgreSQL store, and the lease check a commit makes in
//! its own transaction. Every expiry is decided by the server's `clock_timestamp()`.

use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{PostgresStore, bounded, server_err, thread_err};
use crate::cluster::plan::{LeaseMove, LeaseRow, lease_move};
use crate::store::{ClusterStore, Heartbeat, LeaseFence, LeaseGrant, MemberRecord, StoreError};

/// A membership counts as live (it may host agents and commit) in these states, until it
/// expires.
const LIVE: &str = "state IN ('live', 'draining') AND expires_at > clock_timestamp()";

/// The columns of a [`MemberRecord`], with how long it has left in milliseconds.
const MEMBER: &str = "generation, node, address, state = 'draining' AS draining, \
     GREATEST(0, EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000)::float8 AS left_ms";

/// A duration as the milliseconds the statements multiply an interval by.
fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

/// A generation as the server stores it.
fn db_generation(generation: u64) -> Result<i64, StoreError> {
    i64::try_from(generation).map_err(|_| StoreError::Server {
        source: format!("generation {generation} is above the largest storable integer").into(),
    })
}

/// A stored generation or epoch (never negative in a store this build wrote).
fn stored(row: &Row, column: &str) -> Result<u64, StoreError> {
    let value: i64 = row.try_get(column).map_err(server_err)?;
    u64::try_from(value).map_err(|_| StoreError::Server {
        source: format!("motet cluster row: {column} is negative ({value})").into(),
    })
}

fn member(row: &Row) -> Result<MemberRecord, StoreError> {
    let left_ms: f64 = row.try_get("left_ms").map_err(server_err)?;
    Ok(MemberRecord {
        generation: stored(row, "generation")?,
        node: row.try_get("node").map_err(server_err)?,
        address: row.try_get("address").map_err(server_err)?,
        draining: row.try_get("draining").map_err(server_err)?,
        expires_in: Duration::try_from_secs_f64(left_ms / 1000.0).unwrap_or_default(),
    })
}

/// Checks, in the commit's transaction `tx`, that the member in `lease` still holds it at its
/// epoch and is live; the lease row is share-locked until the commit ends, so a takeover waits
/// for the commit and the new holder reads what it wrote.
pub(super) async fn check_lease(
    tx: &impl GenericClient,
    thread_id: &str,
    lease: LeaseFence<'_>,
) -> Result<(), StoreError> {
    let err = thread_err(thread_id);
    let stmt = tx
        .prepare_cached(
            "SELECT 1 FROM motet_leases l JOIN motet_members m ON m.generation = l.generation \
             WHERE l.agent = $1 AND l.generation = $2 AND l.epoch = $3 \
             AND m.state IN ('live', 'draining') AND m.expires_at > clock_timestamp() \
             FOR SHARE OF l",
        )
        .await
        .map_err(&err)?;
    let generation = db_generation(lease.generation)?;
    let epoch = i64::try_from(lease.epoch).unwrap_or(i64::MAX);
    let found = tx
        .query_opt(&stmt, &[&lease.agent, &generation, &epoch])
        .await
        .map_err(&err)?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::LeaseLost {
            agent: lease.agent.to_owned(),
            epoch: lease.epoch,
        }),
    }
}

impl PostgresStore {
    /// A pooled connection for a cluster operation.
    async fn cluster_client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(server_err)
    }

    /// The one text column of the rows `sql` reads.
    async fn texts(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<String>, StoreError> {
        let client = self.cluster_client().await?;
        let rows = client.query(sql, params).await.map_err(server_err)?;
        rows.iter()
            .map(|row| row.try_get::<_, String>(0).map_err(server_err))
            .collect()
    }

    /// Runs `sql` on `generation` and says whether the membership is (still) live.
    async fn membership_update(
        &self,
        sql: &str,
        generation: u64,
        ttl: Option<Duration>,
    ) -> Result<Heartbeat, StoreError> {
        bounded(self.limit, None, async {
            let client = self.cluster_client().await?;
            let generation = db_generation(generation)?;
            let updated = match ttl {
                Some(ttl) => client.execute(sql, &[&generation, &millis(ttl)]).await,
                None => client.execute(sql, &[&generation]).await,
            }
            .map_err(server_err)?;
            if updated > 0 {
                return Ok(Heartbeat::Alive);
            }
            // Expired, or gone already: it never comes back.
            client
                .execute(
                    "UPDATE motet_members SET state = 'dead' \
                     WHERE generation = $1 AND state IN ('live', 'draining')",
                    &[&generation],
                )
                .await
                .map_err(server_err)?;
            Ok(Heartbeat::Gone)
        })
        .await
    }
}

#[async_trait]
impl ClusterStore for PostgresStore {
    async fn join(&self, node: &str, address: &str, ttl: Duration) -> Result<u64, StoreError> {
        bounded(self.limit, None, async {
            let mut client = self.cluster_client().await?;
            let tx = client.transaction().await.map_err(server_err)?;
            tx.execute(
                "UPDATE motet_members SET state = 'dead' \
                 WHERE node = $1 AND state IN ('live', 'draining')",
                &[&node],
            )
            .await
            .map_err(server_err)?;
            let row = tx
                .query_one(
                    "INSERT INTO motet_members (node, address, state, joined_at, expires_at) \
                     VALUES ($1, $2, 'live', clock_timestamp(), \
                             clock_timestamp() + $3::bigint * interval '1 millisecond') \
                     RETURNING generation",
                    &[&node, &address, &millis(ttl)],
                )
                .await
                .map_err(server_err)?;
            let generation = stored(&row, "generation")?;
            tx.commit().await.map_err(server_err)?;
            Ok(generation)
        })
        .await
    }

    async fn heartbeat(&self, generation: u64, ttl: Duration) -> Result<Heartbeat, StoreError> {
        self.membership_update(
            "UPDATE motet_members \
             SET expires_at = clock_timestamp() + $2::bigint * interval '1 millisecond' \
             WHERE generation = $1 AND state IN ('live', 'draining') \
             AND expires_at > clock_timestamp()",
            generation,
            Some(ttl),
        )
        .await
    }

    async fn drain(&self, generation: u64) -> Result<Heartbeat, StoreError> {
        self.membership_update(
            "UPDATE motet_members SET state = 'draining' \
             WHERE generation = $1 AND state IN ('live', 'draining') \
             AND expires_at > clock_timestamp()",
            generation,
            None,
        )
        .await
    }

    async fn leave(&self, generation: u64) -> Result<(), StoreError> {
        bounded(self.limit, None, async {
            let client = self.cluster_client().await?;
            let generation = db_generation(generation)?;
            client
                .execute(
                    "UPDATE motet_members SET state = 'left' \
                     WHERE generation = $1 AND state IN ('live', 'draining')",
                    &[&generation],
                )
                .await
                .map_err(server_err)?;
            Ok(())
        })
        .await
    }

    async fn members(&self) -> Result<Vec<MemberRecord>, StoreError> {
        bounded(self.limit, None, async {
            let client = self.cluster_client().await?;
            let rows = client
                .query(
                    &format!("SELECT {MEMBER} FROM motet_members WHERE {LIVE} ORDER BY generation"),
                    &[],
                )
                .await
                .map_err(server_err)?;
            rows.iter().map(member).collect()
        })
        .await
    }

    async fn declare_dead(&self) -> Result<Vec<u64>, StoreError> {
        bounded(self.limit, None, async {
            let client = self.cluster_client().await?;
            let rows = client
                .query(
                    "UPDATE motet_members SET state = 'dead' \
                     WHERE state IN ('live', 'draining') AND expires_at <= clock_timestamp() \
                     RETURNING generation",
                    &[],
                )
                .await
                .map_err(server_err)?;
            rows.iter().map(|row| stored(row, "generation")).collect()
        })
        .await
    }

    async fn acquire(&self, agent: &str, generation: u64) -> Result<LeaseGrant, StoreError> {
        bounded(self.limit, None, async {
            let mut client = self.cluster_client().await?;
            let me = db_generation(generation)?;
            // Twice at most: a row created by a racing member between the read and the insert
            // is read again, locked.
            for _ in 0..2 {
                let tx = client.transaction().await.map_err(server_err)?;
                let found = tx
                    .query_opt(
                        "SELECT l.generation, l.epoch, \
                                COALESCE(m.state IN ('live', 'draining') \
                                         AND m.expires_at > clock_timestamp(), false) \
                                    AS holder_live, \
                                (SELECT state = 'live' AND expires_at > clock_timestamp() \
                                 FROM motet_members WHERE generation = $2) AS me_takes \
                         FROM motet_leases l LEFT JOIN motet_members m \
                           ON m.generation = l.generation \
                         WHERE l.agent = $1 FOR UPDATE OF l",
                        &[&agent, &me],
                    )
                    .await
                    .map_err(server_err)?;
                let (row, me_takes) = match &found {
                    Some(found) => {
                        let holder: Option<i64> = found.try_get(0).map_err(server_err)?;
                        let row = LeaseRow {
                            holder: holder.and_then(|h| u64::try_from(h).ok()),
                            epoch: stored(found, "epoch")?,
                            holder_live: found.try_get("holder_live").map_err(server_err)?,
                        };
                        let me_takes: Option<bool> = found.try_get("me_takes").map_err(server_err)?;
                        (Some(row), me_takes.unwrap_or(false))
                    }
                    None => {
                        let me_row = tx
                            .query_opt(
                                "SELECT state = 'live' AND expires_at > clock_timestamp() \
                                 FROM motet_members WHERE generation = $1",
                                &[&me],
                            )
                            .await
                            .map_err(server_err)?;
                        let me_takes = match me_row {
                            Some(row) => row.try_get::<_, bool>(0).map_err(server_err)?,
                            None => false,
                        };
                        (None, me_takes)
                    }
                };
                match lease_move(row, generation, me_takes) {
                    LeaseMove::Keep { epoch } => {
                        tx.commit().await.map_err(server_err)?;
                        return Ok(LeaseGrant::Held { epoch, taken: false });
                    }
                    LeaseMove::Refuse => {
                        tx.commit().await.map_err(server_err)?;
                        return Ok(LeaseGrant::NotMember);
                    }
                    LeaseMove::Elsewhere { holder } => {
                        let holder_row = tx
                            .query_opt(
                                &format!("SELECT {MEMBER} FROM motet_members WHERE generation = $1"),
                                &[&db_generation(holder)?],
                            )
                            .await
                            .map_err(server_err)?;
                        tx.commit().await.map_err(server_err)?;
                        return match holder_row {
                            Some(row) => Ok(LeaseGrant::Elsewhere(member(&row)?)),
                            None => Err(StoreError::Server {
                                source: format!("lease of {agent}: holder {holder} has no member row").into(),
                            }),
                        };
                    }
                    LeaseMove::Take { epoch } => {
                        let epoch_db = i64::try_from(epoch).unwrap_or(i64::MAX);
                        let written = if row.is_some() {
                            tx.execute(
                                "UPDATE motet_leases SET generation = $2, epoch = $3 WHERE agent = $1",
                                &[&agent, &me, &epoch_db],
                            )
                            .await
                        } else {
                            tx.execute(
                                "INSERT INTO motet_leases (agent, generation, epoch) \
                                 VALUES ($1, $2, $3) ON CONFLICT (agent) DO NOTHING",
                                &[&agent, &me, &epoch_db],
                            )
                            .await
                        }
                        .map_err(server_err)?;
                        if written == 0 {
                            // Created meanwhile by another member: read it again, locked.
                            tx.rollback().await.map_err(server_err)?;
                            continue;
                        }
                        tx.commit().await.map_err(server_err)?;
                        return Ok(LeaseGrant::Held { epoch, taken: true });
                    }
                }
            }
            Err(StoreError::Server {
                source: format!("lease of {agent}: its row kept changing under the read").into(),
            })
        })
        .await
    }

    async fn release(&self, agent: &str, generation: u64, epoch: u64) -> Result<bool, StoreError> {
        bounded(self.limit, None, async {
            let client = self.cluster_client().await?;
            let epoch = i64::try_from(epoch).unwrap_or(i64::MAX);
            let released = client
                .execute(
                    "UPDATE motet_leases SET generation = NULL \
                     WHERE agent = $1 AND generation = $2 AND epoch = $3",
                    &[&agent, &db_generation(generation)?, &epoch],
                )
                .await
                .map_err(server_err)?;
            Ok(released > 0)
        })
        .await
    }

    async fn orphans(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        bounded(self.limit, None, async {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            self.texts(
                "SELECT l.agent FROM motet_leases l \
                 LEFT JOIN motet_members m ON m.generation = l.generation \
                 WHERE l.generation IS NOT NULL \
                 AND NOT COALESCE(m.state IN ('live', 'draining') \
                                  AND m.expires_at > clock_timestamp(), false) \
                 ORDER BY l.agent LIMIT $1",
                &[&limit],
            )
            .await
        })
        .await
    }

    async fn threads_of(&self, agent: &str) -> Result<Vec<String>, StoreError> {
        bounded(self.limit, None, async {
            self.texts(
                "SELECT id FROM threads WHERE starts_with(id, $1 || '/') ORDER BY id",
                &[&agent],
            )
            .await
        })
        .await
    }

    async fn holder(&self, agent: &str) -> Result<Option<MemberRecord>, StoreError> {
        bounded(self.limit, None, async {
            let client = self.cluster_client().await?;
            let found = client
                .query_opt(
                    &format!(
                        "SELECT {MEMBER} FROM motet_members WHERE {LIVE} AND generation = \
                         (SELECT generation FROM motet_leases WHERE agent = $1)"
                    ),
                    &[&agent],
                )
                .await
                .map_err(server_err)?;
            found.as_ref().map(member).transpose()
        })
        .await
    }
}
