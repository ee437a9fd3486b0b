//! Request tracking (seed 002 §6.5): every request an agent thread receives, with its status,
//! timestamps and result, readable while it runs and after it ends.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use motet_signals::Signal;

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestStatus {
    /// Waiting for the request before it on the same thread.
    Queued,
    /// The strategy is working on it.
    Running,
    /// It waits for a person to approve a tool call (its other calls may still run).
    AwaitingApproval,
    /// It waits for a person to answer a tool's question.
    AwaitingAnswer,
    /// It ended with the agent's success reply.
    Completed,
    /// It ended with the agent's failure reply, or the strategy rejected it.
    Failed,
}

impl RequestStatus {
    /// True while the strategy works on it or waits for a person on its behalf: it takes
    /// steers, responses and cancels.
    pub fn is_running(self) -> bool {
        matches!(
            self,
            Self::Running | Self::AwaitingApproval | Self::AwaitingAnswer
        )
    }
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

/// How many finished requests a runtime remembers by default (the oldest are forgotten first;
/// [`RuntimeBuilder::keep_finished_requests`](super::RuntimeBuilder::keep_finished_requests)).
/// A finished record keeps its reply as compact JSON (a few hundred bytes, where the signal's
/// JSON tree takes a few KB): the log is bounded by count, whatever the number of agents.
pub const FINISHED_REQUESTS_KEPT: usize = 1_000;

/// One request as kept: the agent's and thread's names shared with the other requests of the
/// same thread, the id shared with the log of finished requests.
#[derive(Debug)]
struct Kept {
    agent: Arc<str>,
    thread: Arc<str>,
    status: RequestStatus,
    submitted_at: u64,
    started_at: Option<u64>,
    finished_at: Option<u64>,
    result: Option<Reply>,
}

/// A finished request's reply as kept: its JSON text, read back into a signal when asked for
/// (rarely, next to holding every reply's tree of maps for as long as the log remembers it); the
/// signal itself when it cannot be written as JSON.
#[derive(Debug)]
enum Reply {
    Json(Box<str>),
    Signal(Signal),
}

impl Reply {
    fn keep(signal: Signal) -> Self {
        match signal.to_json() {
            Ok(json) => Self::Json(json.into_boxed_str()),
            Err(_) => Self::Signal(signal),
        }
    }

    fn signal(&self) -> Option<Signal> {
        match self {
            // Written by `Signal::to_json` above, so it reads back; `None` only if it did not.
            Self::Json(json) => Signal::from_json(json).ok(),
            Self::Signal(signal) => Some(signal.clone()),
        }
    }
}

impl Kept {
    fn record(&self, id: &str) -> RequestRecord {
        RequestRecord {
            id: id.to_owned(),
            agent: self.agent.as_ref().to_owned(),
            thread: self.thread.as_ref().to_owned(),
            status: self.status,
            submitted_at: self.submitted_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            result: self.result.as_ref().and_then(Reply::signal),
        }
    }
}

/// The runtime's request records.
pub(crate) struct Requests {
    records: dashmap::DashMap<Arc<str>, Kept, foldhash::fast::RandomState>,
    finished: Mutex<Finished>,
    keep: usize,
}

/// The finished requests, oldest first, and how many were forgotten since the map's room was
/// last looked at.
#[derive(Default)]
struct Finished {
    ids: VecDeque<Arc<str>>,
    forgotten: usize,
}

/// How many forgotten requests between two looks at the map's room (a look locks every shard).
const FORGOTTEN_PER_LOOK: usize = 64;

/// Whether a map holding `len` records in room for `capacity` should give room back: the map
/// grows with the requests running at once (every agent asked together) and never shrinks by
/// itself, so after a burst it would keep room for the burst for good. At half full or less
/// (shrinking leaves it between full and half full); it is looked at once every
/// [`FORGOTTEN_PER_LOOK`] forgotten requests, so a map that hovers at a size where it would grow
/// and shrink by turns is rehashed at most that often. Small maps are left alone.
pub(crate) fn worth_shrinking(len: usize, capacity: usize) -> bool {
    capacity > 256 && len.saturating_mul(2) <= capacity
}

impl Requests {
    /// Records that remember the last `keep` finished requests.
    pub(crate) fn keeping(keep: usize) -> Self {
        Self {
            records: dashmap::DashMap::default(),
            finished: Mutex::new(Finished::default()),
            keep,
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<RequestRecord> {
        self.records.get(id).map(|r| r.value().record(id))
    }

    pub(crate) fn of_agent(&self, agent: &str) -> Vec<RequestRecord> {
        let mut all: Vec<RequestRecord> = self
            .records
            .iter()
            .filter(|r| r.value().agent.as_ref() == agent)
            .map(|r| r.value().record(r.key()))
            .collect();
        all.sort_by_key(|r| (r.submitted_at, r.started_at.unwrap_or(u64::MAX)));
        all
    }

    /// A request arrived (queued or running) on `thread` of `agent`.
    pub(crate) fn arrived(
        &self,
        id: &str,
        agent: &Arc<str>,
        thread: &Arc<str>,
        queued: bool,
        now: u64,
    ) {
        let status = if queued {
            RequestStatus::Queued
        } else {
            RequestStatus::Running
        };
        if let Some(mut kept) = self.records.get_mut(id) {
            kept.status = status;
            if !queued {
                kept.started_at.get_or_insert(now);
            }
            return;
        }
        self.records.insert(
            Arc::from(id),
            Kept {
                agent: agent.clone(),
                thread: thread.clone(),
                status,
                submitted_at: now,
                started_at: (!queued).then_some(now),
                finished_at: None,
                result: None,
            },
        );
    }

    /// A running request started or stopped waiting for a person: `status` is `Running` or
    /// one of the awaiting ones. A request not running is left as it is.
    pub(crate) fn waits(&self, id: &str, status: RequestStatus) {
        if let Some(mut kept) = self.records.get_mut(id)
            && kept.status.is_running()
        {
            kept.status = status;
        }
    }

    /// A request ended.
    pub(crate) fn finished(
        &self,
        id: &str,
        status: RequestStatus,
        result: Option<Signal>,
        now: u64,
    ) {
        let Some(mut kept) = self.records.get_mut(id) else {
            return;
        };
        if kept.finished_at.is_some() {
            return;
        }
        kept.status = status;
        kept.finished_at = Some(now);
        kept.result = result.map(Reply::keep);
        let key = kept.key().clone();
        drop(kept);
        if let Ok(mut finished) = self.finished.lock() {
            finished.ids.push_back(key);
            while finished.ids.len() > self.keep {
                if let Some(old) = finished.ids.pop_front() {
                    self.records.remove(&old);
                    finished.forgotten += 1;
                }
            }
            if finished.forgotten >= FORGOTTEN_PER_LOOK {
                finished.forgotten = 0;
                if worth_shrinking(self.records.len(), self.records.capacity()) {
                    self.records.shrink_to_fit();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_request_reads_back_its_reply_as_it_was() {
        let requests = Requests::keeping(2);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        let reply = Signal::builder("agent.completed", "motet.react")
            .with_request_id("r1")
            .with_thread_id("t")
            .with_data(serde_json::json!({"answer": "5", "usage": {"input_tokens": 3}}))
            .with_extension("tenant", serde_json::json!("acme"))
            .build()
            .expect("a valid signal");
        requests.arrived("r1", &agent, &thread, false, 1);
        requests.finished("r1", RequestStatus::Completed, Some(reply.clone()), 2);
        let record = requests.get("r1").expect("kept");
        assert_eq!(record.status, RequestStatus::Completed);
        assert_eq!(record.finished_at, Some(2));
        assert_eq!(record.result, Some(reply));
    }

    #[test]
    fn a_map_gives_room_back_at_half_full() {
        assert!(worth_shrinking(1_000, 2_978));
        assert!(worth_shrinking(1_792, 3_584));
        assert!(worth_shrinking(0, 1_024));
        assert!(!worth_shrinking(1_793, 3_584));
        // Just shrunk: as full as its room allows, down to just over half.
        assert!(!worth_shrinking(1_792, 1_792));
        assert!(!worth_shrinking(897, 1_792));
        // Small maps are left as they are.
        assert!(!worth_shrinking(0, 256));
    }

    #[test]
    fn after_a_burst_the_log_gives_back_the_room_it_grew() {
        let requests = Requests::keeping(100);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        let ids: Vec<String> = (0..5_000).map(|n| format!("r{n}")).collect();
        for id in &ids {
            requests.arrived(id, &agent, &thread, false, 1);
        }
        let burst = requests.records.capacity();
        assert!(burst >= 5_000);
        for id in &ids {
            requests.finished(id, RequestStatus::Completed, None, 2);
        }
        assert_eq!(requests.records.len(), 100);
        assert!(
            requests.records.capacity() <= 1_000,
            "{} of room kept for 100 records after a burst of {burst}",
            requests.records.capacity()
        );
        assert!(requests.get("r4999").is_some() && requests.get("r4899").is_none());
    }

    #[test]
    fn rounds_of_bursts_end_each_with_room_for_what_is_kept() {
        let requests = Requests::keeping(1_000);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        for round in 0..5 {
            let ids: Vec<String> = (0..2_000).map(|n| format!("r{round}_{n}")).collect();
            for id in &ids {
                requests.arrived(id, &agent, &thread, false, 1);
            }
            for id in &ids {
                requests.finished(id, RequestStatus::Completed, None, 2);
            }
            assert_eq!(requests.records.len(), 1_000);
            let room = requests.records.capacity();
            assert!(room < 2_000, "round {round}: room for {room}");
        }
    }

    #[test]
    fn the_oldest_finished_requests_are_forgotten_first() {
        let requests = Requests::keeping(2);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        for (n, id) in ["r1", "r2", "r3"].into_iter().enumerate() {
            requests.arrived(id, &agent, &thread, false, n as u64);
            requests.finished(id, RequestStatus::Failed, None, n as u64);
        }
        assert!(requests.get("r1").is_none());
        assert!(requests.get("r2").is_some() && requests.get("r3").is_some());
    }
}
