//! The usage ledger in a PostgreSQL store: one row recorded per call, rows read back filtered.

use super::{PostgresStore, bounded, server_err};
use crate::store::ledger::{self, Bind, RawRow};
use crate::store::{StoreError, UsageFilter, UsageRecord};

impl PostgresStore {
    pub(super) async fn record(&self, record: &UsageRecord) -> Result<(), StoreError> {
        let (ints, cost) = ledger::integers(record)?;
        bounded(self.limit, None, async {
            let client = self.pool.get().await.map_err(server_err)?;
            let insert = client
                .prepare_cached(&ledger::insert('$'))
                .await
                .map_err(server_err)?;
            client
                .execute(
                    &insert,
                    &[
                        &ints[0],
                        &record.agent,
                        &record.thread,
                        &record.request,
                        &record.tenant,
                        &record.model,
                        &record.kind.as_str(),
                        &ints[1],
                        &ints[2],
                        &ints[3],
                        &ints[4],
                        &ints[5],
                        &cost,
                    ],
                )
                .await
                .map_err(server_err)?;
            Ok(())
        })
        .await
    }

    pub(super) async fn records(
        &self,
        filter: &UsageFilter,
    ) -> Result<Vec<UsageRecord>, StoreError> {
        let conditions = ledger::conditions(filter)?;
        bounded(self.limit, None, async {
            let sql = ledger::select(&conditions, '$');
            let binds: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = conditions
                .iter()
                .map(|(_, bind)| match bind {
                    Bind::Int(value) => value as &(dyn tokio_postgres::types::ToSql + Sync),
                    Bind::Text(value) => value as &(dyn tokio_postgres::types::ToSql + Sync),
                })
                .collect();
            let client = self.pool.get().await.map_err(server_err)?;
            let rows = client
                .query(sql.as_str(), binds.as_slice())
                .await
                .map_err(server_err)?;
            drop(client);
            rows.iter()
                .map(|row| {
                    let raw = RawRow {
                        id: row.try_get(0).map_err(server_err)?,
                        at: row.try_get(1).map_err(server_err)?,
                        agent: row.try_get(2).map_err(server_err)?,
                        thread: row.try_get(3).map_err(server_err)?,
                        request: row.try_get(4).map_err(server_err)?,
                        tenant: row.try_get(5).map_err(server_err)?,
                        model: row.try_get(6).map_err(server_err)?,
                        kind: row.try_get(7).map_err(server_err)?,
                        counts: [
                            row.try_get(8).map_err(server_err)?,
                            row.try_get(9).map_err(server_err)?,
                            row.try_get(10).map_err(server_err)?,
                            row.try_get(11).map_err(server_err)?,
                            row.try_get(12).map_err(server_err)?,
                        ],
                        cost: row.try_get(13).map_err(server_err)?,
                    };
                    raw.decode()
                })
                .collect()
        })
        .await
    }
}
