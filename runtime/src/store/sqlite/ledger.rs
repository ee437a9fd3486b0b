//! The usage ledger in a SQLite store: one row recorded per call, rows read back filtered.

use rusqlite::params;

use super::{Inner, db_err, lock};
use crate::store::ledger::{self, Bind, RawRow};
use crate::store::{StoreError, UsageFilter, UsageRecord};

impl Inner {
    pub(super) fn record_usage(&self, record: &UsageRecord) -> Result<(), StoreError> {
        let (ints, cost) = ledger::integers(record)?;
        let conn = lock(&self.writer);
        conn.prepare_cached(&ledger::insert('?'))
            .and_then(|mut insert| {
                insert.execute(params![
                    ints[0],
                    record.agent,
                    record.thread,
                    record.request,
                    record.tenant,
                    record.model,
                    record.kind.as_str(),
                    ints[1],
                    ints[2],
                    ints[3],
                    ints[4],
                    ints[5],
                    cost
                ])
            })
            .map_err(db_err(&self.path))?;
        Ok(())
    }

    pub(super) fn usage_records(
        &self,
        filter: &UsageFilter,
    ) -> Result<Vec<UsageRecord>, StoreError> {
        let conditions = ledger::conditions(filter)?;
        let err = db_err(&self.path);
        let binds: Vec<&dyn rusqlite::ToSql> = conditions
            .iter()
            .map(|(_, bind)| match bind {
                Bind::Int(value) => value as &dyn rusqlite::ToSql,
                Bind::Text(value) => value as &dyn rusqlite::ToSql,
            })
            .collect();
        let conn = lock(&self.reader);
        let mut select = conn
            .prepare(&ledger::select(&conditions, '?'))
            .map_err(&err)?;
        let rows = select
            .query_map(binds.as_slice(), |row| {
                Ok(RawRow {
                    id: row.get(0)?,
                    at: row.get(1)?,
                    agent: row.get(2)?,
                    thread: row.get(3)?,
                    request: row.get(4)?,
                    tenant: row.get(5)?,
                    model: row.get(6)?,
                    kind: row.get(7)?,
                    counts: [
                        row.get(8)?,
                        row.get(9)?,
                        row.get(10)?,
                        row.get(11)?,
                        row.get(12)?,
                    ],
                    cost: row.get(13)?,
                })
            })
            .map_err(&err)?;
        rows.map(|row| row.map_err(&err)?.decode()).collect()
    }
}
