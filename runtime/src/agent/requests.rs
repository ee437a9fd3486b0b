//! Request tracking (seed 002 §6.5): every request an agent thread receives, with its status,
//! timestamps and result, readable while it runs and after it ends.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use motet_signals::Signal;

/// What [`Requests::resuming`] made of a resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resuming {
    /// Recorded as running: the caller carries it on.
    Recorded,
    /// It runs here already.
    Running,
    /// It ended here already.
    Ended,
}

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
/// same thread.
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
#[derive(Debug, Clone)]
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
    /// A request that arrived at `now` with `status` (started then, unless queued).
    fn new(agent: &Arc<str>, thread: &Arc<str>, status: RequestStatus, now: u64) -> Self {
        Self {
            agent: agent.clone(),
            thread: thread.clone(),
            status,
            submitted_at: now,
            started_at: (status != RequestStatus::Queued).then_some(now),
            finished_at: None,
            result: None,
        }
    }

    fn record(&self, id: &str) -> RequestRecord {
        let (record, reply) = self.unread(id);
        record.with_reply(reply.as_ref())
    }

    /// The record without its reply, and the reply as kept: cheap copies, so a caller holding a
    /// lock reads the reply's JSON back after letting go of it.
    fn unread(&self, id: &str) -> (RequestRecord, Option<Reply>) {
        let record = RequestRecord {
            id: id.to_owned(),
            agent: self.agent.as_ref().to_owned(),
            thread: self.thread.as_ref().to_owned(),
            status: self.status,
            submitted_at: self.submitted_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            result: None,
        };
        (record, self.result.clone())
    }
}

impl RequestRecord {
    /// This record with `reply` read back into its result.
    fn with_reply(mut self, reply: Option<&Reply>) -> Self {
        self.result = reply.and_then(Reply::signal);
        self
    }
}

/// The runtime's request records: the open ones (queued, running, waiting for a person) by id,
/// the last `keep` finished ones in the order they ended.
pub(crate) struct RequestRecords {
    open: dashmap::DashMap<Arc<str>, Kept, foldhash::fast::RandomState>,
    finished: Mutex<Finished>,
    keep: usize,
}

/// The finished requests, oldest first, and how many ended since the open map's room was last
/// looked at. Held densely, not hashed: a map's table runs half empty at this size, and a
/// finished record is read rarely (a status asked for after the ask), by a look through at most
/// `keep` of them.
#[derive(Default)]
struct Finished {
    records: VecDeque<(Arc<str>, Kept)>,
    since_look: usize,
}

/// How many ended requests between two looks at the open map's room (a look locks every shard).
const ENDED_PER_LOOK: usize = 64;

/// Whether a map holding `len` records in room for `capacity` should give room back: the map
/// grows with the requests running at once (every agent asked together) and never shrinks by
/// itself, so after a burst it would keep room for the burst for good. At half full or less
/// (shrinking leaves it between full and half full); it is looked at once every
/// [`ENDED_PER_LOOK`] ended requests, so a map that hovers at a size where it would grow and
/// shrink by turns is rehashed at most that often. Small maps are left alone.
pub(crate) fn worth_shrinking(len: usize, capacity: usize) -> bool {
    capacity > 256 && len.saturating_mul(2) <= capacity
}

impl RequestRecords {
    /// Records that remember the last `keep` finished requests.
    pub(crate) fn keeping(keep: usize) -> Self {
        Self {
            open: dashmap::DashMap::default(),
            finished: Mutex::new(Finished::default()),
            keep,
        }
    }

    /// The finished requests, locked. Nothing panics while holding the lock (queue operations
    /// only), so a poisoned lock still holds a consistent queue.
    fn ended(&self) -> std::sync::MutexGuard<'_, Finished> {
        self.finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether request `id` ended (answered or failed) and was not opened again; `false` for a
    /// request this log never saw or no longer keeps. Cheap for an open request (one lookup).
    pub(crate) fn has_ended(&self, id: &str) -> bool {
        !self.open.contains_key(id)
            && self
                .ended()
                .records
                .iter()
                .any(|(kept_id, _)| kept_id.as_ref() == id)
    }

    /// The record of request `id`: open, or among the last finished (the latest if the id ran
    /// twice).
    pub(crate) fn get(&self, id: &str) -> Option<RequestRecord> {
        if let Some(open) = self.open.get(id) {
            return Some(open.value().record(id));
        }
        let found = self
            .ended()
            .records
            .iter()
            .rev()
            .find(|(kept_id, _)| kept_id.as_ref() == id)
            .map(|(kept_id, kept)| kept.unread(kept_id));
        found.map(|(record, reply)| record.with_reply(reply.as_ref()))
    }

    pub(crate) fn of_agent(&self, agent: &str) -> Vec<RequestRecord> {
        let found: Vec<(RequestRecord, Option<Reply>)> = self
            .ended()
            .records
            .iter()
            .filter(|(_, kept)| kept.agent.as_ref() == agent)
            .map(|(id, kept)| kept.unread(id))
            .collect();
        let mut all: Vec<RequestRecord> = found
            .into_iter()
            .map(|(record, reply)| record.with_reply(reply.as_ref()))
            .collect();
        all.extend(
            self.open
                .iter()
                .filter(|r| r.value().agent.as_ref() == agent)
                .map(|r| r.value().record(r.key())),
        );
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
        if let Some(mut kept) = self.open.get_mut(id) {
            kept.status = status;
            if !queued {
                kept.started_at.get_or_insert(now);
            }
            return;
        }
        self.open
            .insert(Arc::from(id), Kept::new(agent, thread, status, now));
    }

    /// Records request `id` as running on `thread` of `agent` again, for a resume, unless this
    /// runtime runs it already or saw it end (another caller carried it on): then nothing is
    /// recorded, and [`Resuming`] says which. Decided at once, so of two callers carrying on
    /// the same request (a process start's recovery and a person's answer), one does.
    pub(crate) fn resuming(
        &self,
        id: &str,
        agent: &Arc<str>,
        thread: &Arc<str>,
        now: u64,
    ) -> Resuming {
        match self.open.entry(Arc::from(id)) {
            dashmap::Entry::Occupied(_) => Resuming::Running,
            dashmap::Entry::Vacant(vacant) => {
                if self
                    .ended()
                    .records
                    .iter()
                    .any(|(kept, _)| kept.as_ref() == id)
                {
                    return Resuming::Ended;
                }
                vacant.insert(Kept::new(agent, thread, RequestStatus::Running, now));
                Resuming::Recorded
            }
        }
    }

    /// A running request started or stopped waiting for a person: `status` is `Running` or
    /// one of the awaiting ones. A request not running is left as it is.
    pub(crate) fn waits(&self, id: &str, status: RequestStatus) {
        if let Some(mut kept) = self.open.get_mut(id)
            && kept.status.is_running()
        {
            kept.status = status;
        }
    }

    /// A request ended: its record moves from the open ones to the finished ones, and the
    /// oldest finished one beyond `keep` is forgotten. A request not open (ended already) is
    /// left as it is.
    pub(crate) fn finished(
        &self,
        id: &str,
        status: RequestStatus,
        result: Option<Signal>,
        now: u64,
    ) {
        let Some((key, mut kept)) = self.open.remove(id) else {
            return;
        };
        kept.status = status;
        kept.finished_at = Some(now);
        kept.result = result.map(Reply::keep);
        let look = {
            let mut finished = self.ended();
            finished.records.push_back((key, kept));
            while finished.records.len() > self.keep {
                finished.records.pop_front();
            }
            finished.since_look += 1;
            let look = finished.since_look >= ENDED_PER_LOOK;
            if look {
                finished.since_look = 0;
            }
            look
        };
        // Looked at outside the finished lock: shrinking write-locks every shard of the map.
        if look && worth_shrinking(self.open.len(), self.open.capacity()) {
            self.open.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_request_reads_back_its_reply_as_it_was() {
        let requests = RequestRecords::keeping(2);
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
    fn a_request_is_resumed_once_and_never_after_it_ended_here() {
        let requests = RequestRecords::keeping(10);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        assert_eq!(
            requests.resuming("r1", &agent, &thread, 1),
            Resuming::Recorded
        );
        assert!(requests.get("r1").is_some_and(|r| r.status.is_running()));
        // A second caller carrying it on (a recovery beside a person's answer) does not.
        assert_eq!(
            requests.resuming("r1", &agent, &thread, 2),
            Resuming::Running
        );
        requests.finished("r1", RequestStatus::Completed, None, 3);
        // A recovery that read the store before the request ended leaves it ended.
        assert_eq!(requests.resuming("r1", &agent, &thread, 4), Resuming::Ended);
        assert_eq!(
            requests.get("r1").map(|r| r.status),
            Some(RequestStatus::Completed)
        );
    }

    #[test]
    fn open_and_finished_requests_are_listed_together_and_an_ending_counts_once() {
        let requests = RequestRecords::keeping(10);
        let (agent, other, thread): (Arc<str>, Arc<str>, Arc<str>) =
            (Arc::from("a"), Arc::from("b"), Arc::from("t"));
        requests.arrived("r1", &agent, &thread, false, 1);
        requests.arrived("r2", &agent, &thread, true, 2);
        requests.arrived("r3", &other, &thread, false, 3);
        requests.finished("r1", RequestStatus::Completed, None, 4);
        // A second ending of the same request changes nothing.
        requests.finished("r1", RequestStatus::Failed, None, 5);
        let listed: Vec<(String, RequestStatus)> = requests
            .of_agent("a")
            .into_iter()
            .map(|r| (r.id, r.status))
            .collect();
        assert_eq!(
            listed,
            vec![
                ("r1".to_owned(), RequestStatus::Completed),
                ("r2".to_owned(), RequestStatus::Queued),
            ]
        );
        assert_eq!(requests.get("r1").and_then(|r| r.finished_at), Some(4));
        assert_eq!(
            requests.get("r3").map(|r| r.status),
            Some(RequestStatus::Running)
        );
        // An id that runs again after it ended reads as its latest run.
        requests.arrived("r1", &agent, &thread, false, 6);
        assert_eq!(
            requests.get("r1").map(|r| r.status),
            Some(RequestStatus::Running)
        );
        requests.finished("r1", RequestStatus::Failed, None, 7);
        assert_eq!(requests.get("r1").and_then(|r| r.finished_at), Some(7));
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
        let requests = RequestRecords::keeping(100);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        let ids: Vec<String> = (0..5_000).map(|n| format!("r{n}")).collect();
        for id in &ids {
            requests.arrived(id, &agent, &thread, false, 1);
        }
        let burst = requests.open.capacity();
        assert!(burst >= 5_000);
        for id in &ids {
            requests.finished(id, RequestStatus::Completed, None, 2);
        }
        assert_eq!(requests.open.len(), 0);
        assert_eq!(requests.ended().records.len(), 100);
        assert!(
            requests.open.capacity() <= 1_000,
            "{} of room kept after a burst of {burst} ended",
            requests.open.capacity()
        );
        assert!(requests.get("r4999").is_some() && requests.get("r4899").is_none());
    }

    #[test]
    fn rounds_of_bursts_end_each_with_room_for_what_is_kept() {
        let requests = RequestRecords::keeping(1_000);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        for round in 0..5 {
            let ids: Vec<String> = (0..2_000).map(|n| format!("r{round}_{n}")).collect();
            for id in &ids {
                requests.arrived(id, &agent, &thread, false, 1);
            }
            for id in &ids {
                requests.finished(id, RequestStatus::Completed, None, 2);
            }
            assert_eq!(requests.open.len(), 0);
            assert_eq!(requests.ended().records.len(), 1_000);
            let room = requests.open.capacity();
            assert!(room < 2_000, "round {round}: room for {room}");
        }
    }

    #[test]
    fn the_oldest_finished_requests_are_forgotten_first() {
        let requests = RequestRecords::keeping(2);
        let (agent, thread): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("t"));
        for (n, id) in ["r1", "r2", "r3"].into_iter().enumerate() {
            requests.arrived(id, &agent, &thread, false, n as u64);
            requests.finished(id, RequestStatus::Failed, None, n as u64);
        }
        assert!(requests.get("r1").is_none());
        assert!(requests.get("r2").is_some() && requests.get("r3").is_some());
    }
}
