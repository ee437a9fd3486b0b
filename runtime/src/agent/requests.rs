//! Request tracking (seed 002 §6.5): every request an agent thread receives, with its status,
//! timestamps and result, readable while it runs and after it ends.

use std::collections::VecDeque;
use std::sync::Mutex;

use motet_signals::Signal;

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestStatus {
    /// Waiting for the request before it on the same thread.
    Queued,
    /// The strategy is working on it.
    Running,
    /// It ended with the agent's success reply.
    Completed,
    /// It ended with the agent's failure reply, or the strategy rejected it.
    Failed,
}

/// One request, as the runtime saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// The request id.
    pub id: String,
    /// The agent.
    pub agent: String,
    /// The thread it runs on.
    pub thread: String,
    /// Where it is.
    pub status: RequestStatus,
    /// When it arrived (Unix ms).
    pub submitted_at: u64,
    /// When the strategy started on it.
    pub started_at: Option<u64>,
    /// When it ended.
    pub finished_at: Option<u64>,
    /// The reply signal, once there is one.
    pub result: Option<Signal>,
}

/// How many finished requests are remembered (the oldest are forgotten first).
pub const FINISHED_REQUESTS_KEPT: usize = 10_000;

/// The runtime's request records.
#[derive(Default)]
pub(crate) struct Requests {
    records: dashmap::DashMap<String, RequestRecord, foldhash::fast::RandomState>,
    finished: Mutex<VecDeque<String>>,
}

impl Requests {
    pub(crate) fn get(&self, id: &str) -> Option<RequestRecord> {
        self.records.get(id).map(|r| r.value().clone())
    }

    pub(crate) fn of_agent(&self, agent: &str) -> Vec<RequestRecord> {
        let mut all: Vec<RequestRecord> = self
            .records
            .iter()
            .filter(|r| r.value().agent == agent)
            .map(|r| r.value().clone())
            .collect();
        all.sort_by_key(|r| (r.submitted_at, r.started_at.unwrap_or(u64::MAX)));
        all
    }

    /// A request arrived (queued or running).
    pub(crate) fn arrived(&self, id: &str, agent: &str, thread: &str, queued: bool, now: u64) {
        let status = if queued {
            RequestStatus::Queued
        } else {
            RequestStatus::Running
        };
        self.records
            .entry(id.to_owned())
            .and_modify(|r| {
                r.status = status;
                if !queued {
                    r.started_at.get_or_insert(now);
                }
            })
            .or_insert_with(|| RequestRecord {
                id: id.to_owned(),
                agent: agent.to_owned(),
                thread: thread.to_owned(),
                status,
                submitted_at: now,
                started_at: (!queued).then_some(now),
                finished_at: None,
                result: None,
            });
    }

    /// A request ended.
    pub(crate) fn finished(
        &self,
        id: &str,
        status: RequestStatus,
        result: Option<Signal>,
        now: u64,
    ) {
        let Some(mut record) = self.records.get_mut(id) else {
            return;
        };
        if record.finished_at.is_some() {
            return;
        }
        record.status = status;
        record.finished_at = Some(now);
        record.result = result;
        drop(record);
        if let Ok(mut finished) = self.finished.lock() {
            finished.push_back(id.to_owned());
            while finished.len() > FINISHED_REQUESTS_KEPT {
                if let Some(old) = finished.pop_front() {
                    self.records.remove(&old);
                }
            }
        }
    }
}
