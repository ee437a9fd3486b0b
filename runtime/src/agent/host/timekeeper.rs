//! The timekeeper: a runtime's timers, kept in the store and fired on time.
//!
//! A `Schedule` or `Cron` directive's timer is written to the store in the commit of the step
//! that set it (as is a `CancelSchedule`'s removal: `ThreadStore::commit_step`), so a crash
//! never keeps the step and loses its timer; once committed, the change is handed to the
//! timekeeper, one task per runtime. It holds in memory only the timers due within [`HORIZON`]
//! (and every timer of a store that keeps none); the rest live in the store alone, and a read
//! every [`POLL`] brings them in as their time comes — so a thread with a pending timer may
//! idle, a pending timer costs no memory here, and a timer of an agent nobody has talked to
//! since the process started fires all the same. A read asks only for the timers due after
//! what the last one covered (a timer this process sets is handed over at its commit); an
//! agent registered since has its own timers read next, whenever due; the first read and every
//! [`FULL_READ_EVERY`]th ask for every due timer, so one the store kept behind (its settling
//! failed) is not forgotten.
//!
//! A firing is delivered to its thread as a durable delivery (`ThreadMsg::Delivered`) that
//! carries the write settling the timer (removed, or moved on to a cron timer's next
//! occurrence: `TimerWrite::Fired`); the step that handles the signal commits that write with
//! its own, so a firing costs the store one write, and its effect and its settling are kept or
//! lost together. Only the last of the occurrences a cron timer owes at once carries it: a
//! crash among them fires the earlier ones again with the same signal ids, and a thread that
//! committed a signal before answers at once without handling it twice (the timekeeper then
//! settles the timer itself, `ThreadStore::timer_fired`, as it does for a signal no step
//! committed now): at-least-once delivery, once-per-occurrence effect.
//!
//! Either way only the timer that fired is settled (its due time and signal id are checked): a
//! timer set again or cancelled meanwhile is left as its thread's commit made it. A read of the
//! store that started before a change this process made is older than it, and does not undo
//! it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::mem;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use jiff::Timestamp;
use motet_directives::cron;
use motet_signals::Signal;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::agent::errors::RuntimeError;
use crate::agent::host::deliveries::Applied;
use crate::store::{StoredTimer, ThreadKey, ThreadStore, TimerOwners, TimerWrite};
use futures::future::BoxFuture;

/// How far ahead the timekeeper holds stored timers in memory.
pub(crate) const HORIZON: Duration = Duration::from_secs(10);
/// How often it reads the store for the timers coming within [`HORIZON`].
pub(crate) const POLL: Duration = Duration::from_secs(5);
/// The most timers one read of the store brings in.
const POLL_LIMIT: usize = 10_000;
/// One read in this many asks for every due timer, not only those after the last read.
const FULL_READ_EVERY: u32 = 12;
/// How late a cron occurrence may fire and still be on time; older ones misfired.
pub(crate) const GRACE: Duration = Duration::from_secs(1);
/// How long a firing that could not be delivered waits before it is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long a firing waits for its thread to commit it before it is tried again.
const PATIENCE: Duration = Duration::from_secs(30);

/// A timer's identity: its thread's store id and its schedule id.
type TimerId = (String, String);

fn id_of(timer: &StoredTimer) -> TimerId {
    (timer.key.store_id(), timer.id.clone())
}

/// The milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    u64::try_from(Timestamp::now().as_millisecond()).unwrap_or(0)
}

/// What the timekeeper needs of the runtime it keeps time for (the runtime's core implements
/// it): so this file names no other part of the host, and the core can hold the timekeeper.
pub(crate) trait TimerHost: Send + Sync + 'static {
    /// Where timers are kept.
    fn timer_store(&self) -> Arc<dyn ThreadStore>;
    /// The names of the agents registered now.
    fn agent_names(&self) -> Vec<String>;
    /// Whether an agent of this name is registered, or is a virtual agent of a registered
    /// kind (which a delivery activates).
    fn has_agent(&self, name: &str) -> bool;
    /// The registered virtual agent kinds: their agents' timers fire whether active or not.
    fn virtual_kinds(&self) -> Vec<String>;
    /// Hands `signal` to thread `key` as a durable delivery, with the write that settles its
    /// timer for the step that handles it to commit; the receiver answers once that step
    /// committed.
    fn deliver(
        self: Arc<Self>,
        key: ThreadKey,
        signal: Signal,
        settles: Option<Box<TimerWrite>>,
    ) -> BoxFuture<'static, Result<Answer, RuntimeError>>;
}

/// Where a thread answers a firing: how it was committed, else why not.
pub(crate) type Answer = oneshot::Receiver<Result<Applied, String>>;

/// The handle every part of the runtime reaches the timekeeper through; the task starts with
/// the first timer set or the first agent registered.
#[derive(Default)]
pub(crate) struct Timekeeper {
    commands: OnceLock<mpsc::UnboundedSender<Command>>,
}

/// What the timekeeper's task is told.
enum Command {
    /// A step committed these changes to its timers: a timer set is fired when due, one
    /// removed is forgotten.
    Committed(Vec<TimerWrite>),
    /// An agent was registered (`None`: the runtime's virtual kinds, at its start): the store
    /// may hold timers of its from an earlier run.
    AgentAdded(Option<String>),
    /// The runtime shuts down: timers stay in the store, nothing fires here any more.
    Stop,
    /// A firing ended.
    Fired(TimerId, Fired),
    /// A read of the store ended.
    Polled(Read),
}

/// What a read of the store found.
struct Read {
    /// The timers due within what it asked for, soonest first.
    due: Vec<StoredTimer>,
    /// Up to when the store's timers have been read now; `None` if the read failed.
    covered_ms: Option<u64>,
    /// Whether it asked for every due timer.
    full: bool,
    /// Whether it asked only for the timers of agents registered since the last read: it
    /// covers no window.
    catch_up: bool,
}

/// How a firing ended.
enum Fired {
    /// Committed and settled; a cron timer's next occurrence, if it has one (boxed, as in
    /// `Retry`: a command is as large as its largest kind, and most are small).
    Done(Option<Box<StoredTimer>>),
    /// Not delivered: try again later.
    Retry(Box<StoredTimer>),
    /// Its agent is not registered: it stays in the store until the agent is.
    Parked,
}

impl Timekeeper {
    fn commands(&self, host: &Arc<dyn TimerHost>) -> &mpsc::UnboundedSender<Command> {
        self.commands.get_or_init(|| start(host))
    }

    /// A step committed `writes` to the store: the timers it set fire when due (held here
    /// while they are near), those it removed do not.
    pub(crate) fn committed(&self, host: &Arc<dyn TimerHost>, writes: Vec<TimerWrite>) {
        if !writes.is_empty() {
            let _ = self.commands(host).send(Command::Committed(writes));
        }
    }

    /// Agent `name` was registered (`None`: the virtual kinds, as the runtime starts): timers
    /// the store holds for it from an earlier run are due now or later.
    pub(crate) fn agent_added(&self, host: &Arc<dyn TimerHost>, name: Option<String>) {
        let _ = self.commands(host).send(Command::AgentAdded(name));
    }

    /// Stops the task, if it started: the timers stay in the store for the next start.
    pub(crate) fn stop(&self) {
        if let Some(commands) = self.commands.get() {
            let _ = commands.send(Command::Stop);
        }
    }
}

/// Starts the timekeeper's task for `core`.
fn start(host: &Arc<dyn TimerHost>) -> mpsc::UnboundedSender<Command> {
    let (tx, rx) = mpsc::unbounded_channel();
    let store = host.timer_store();
    let keeper = Keeper {
        host: Arc::downgrade(host),
        keeps: store.keeps_timers(),
        store,
        held: HashMap::new(),
        queue: BinaryHeap::new(),
        firing: HashMap::new(),
        changed: HashSet::new(),
        polls: true,
        polling: false,
        next_poll: Instant::now(),
        covered_ms: 0,
        read_all: true,
        added: Vec::new(),
        reads_since_full: 0,
        tx: tx.downgrade(),
    };
    tokio::spawn(keeper.run(rx));
    tx
}

/// The timekeeper's task and what it holds.
struct Keeper {
    host: Weak<dyn TimerHost>,
    store: Arc<dyn ThreadStore>,
    /// Whether the store keeps timers; if not, every timer is held here.
    keeps: bool,
    /// The timers held in memory, by id.
    held: HashMap<TimerId, StoredTimer>,
    /// When each held timer is due: an entry whose timer has since changed or gone is skipped.
    queue: BinaryHeap<Reverse<(u64, TimerId)>>,
    /// The timers being fired now, and whether a commit changed each since its firing began
    /// (what the firing would hold next is then stale).
    firing: HashMap<TimerId, bool>,
    /// The timers a commit changed since the read of the store under way began: what that
    /// read found of them is stale.
    changed: HashSet<TimerId>,
    /// Whether the store may hold timers this process has not seen: it is read every
    /// [`POLL`] while it may.
    polls: bool,
    /// Whether a read of the store is under way: its timers come back as `Polled`, and the
    /// held timers fire meanwhile however slow the store is.
    polling: bool,
    next_poll: Instant,
    /// The store's timers due before this (ms since the Unix epoch) have been read: those this
    /// process did not hold already came in then.
    covered_ms: u64,
    /// Whether the next read asks for every due timer: the first, and the first after the
    /// virtual kinds are registered (their agents' timers may be anywhere in the store).
    read_all: bool,
    /// The agents registered since the last read began: a read of their timers alone, due at
    /// any time before the horizon, comes next, so a spawn costs a read of one agent's timers,
    /// not of every agent's.
    added: Vec<String>,
    /// The reads since the last that asked for every due timer.
    reads_since_full: u32,
    /// Where firings and reads of the store report back; weak, so the task ends with the
    /// runtime.
    tx: mpsc::WeakUnboundedSender<Command>,
}

impl Keeper {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Command>) {
        loop {
            let wake = self.next_wake();
            let command = match wake {
                Some(at) => tokio::select! {
                    command = rx.recv() => Some(command),
                    () = tokio::time::sleep_until(at) => None,
                },
                None => Some(rx.recv().await),
            };
            match command {
                // Every handle is gone: the runtime is.
                Some(None) | Some(Some(Command::Stop)) => return,
                Some(Some(command)) => self.obey(command),
                None => {}
            }
            // Everything already queued, then the store and the clock.
            while let Ok(command) = rx.try_recv() {
                if matches!(command, Command::Stop) {
                    return;
                }
                self.obey(command);
            }
            if self.polls
                && !self.polling
                && (Instant::now() >= self.next_poll || !self.added.is_empty())
            {
                self.poll();
            }
            self.fire_due();
        }
    }

    /// When the task must wake without a command: the soonest timer, or the next read.
    fn next_wake(&self) -> Option<Instant> {
        let soonest = self.queue.peek().map(|Reverse((due, _))| instant_of(*due));
        let poll = (self.polls && !self.polling).then_some(self.next_poll);
        match (soonest, poll) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn obey(&mut self, command: Command) {
        match command {
            Command::Committed(writes) => {
                for write in writes {
                    // A firing's settling is reported by the firing itself (`Fired`).
                    if matches!(write, TimerWrite::Fired { .. }) {
                        continue;
                    }
                    let (key, schedule) = write.target();
                    let id = (key.store_id(), schedule.to_owned());
                    if self.polling {
                        self.changed.insert(id.clone());
                    }
                    if let Some(changed) = self.firing.get_mut(&id) {
                        *changed = true;
                    }
                    match write {
                        TimerWrite::Put(timer) => {
                            self.polls = true;
                            self.hold(timer);
                        }
                        TimerWrite::Remove { .. } => {
                            self.held.remove(&id);
                        }
                        TimerWrite::Fired { .. } => {}
                    }
                }
            }
            Command::Stop => {}
            Command::Polled(read) => self.polled(read),
            Command::AgentAdded(Some(name)) => {
                self.polls = true;
                self.added.push(name);
            }
            Command::AgentAdded(None) => {
                self.polls = true;
                self.read_all = true;
                self.next_poll = Instant::now();
            }
            Command::Fired(id, fired) => {
                let changed = self.firing.remove(&id).unwrap_or(false);
                if self.polling {
                    self.changed.insert(id.clone());
                }
                if changed {
                    // Set again or cancelled while it fired: what its commit left is what
                    // counts, not what the firing would have held next.
                    if let Some(timer) = self.held.get(&id) {
                        self.queue.push(Reverse((timer.due_ms, id)));
                    }
                    return;
                }
                match fired {
                    Fired::Done(Some(next)) => self.hold(*next),
                    Fired::Done(None) | Fired::Parked => {}
                    Fired::Retry(mut timer) => {
                        timer.due_ms = timer.due_ms.max(now_ms() + millis(RETRY));
                        self.queue.push(Reverse((timer.due_ms, id.clone())));
                        self.held.insert(id, *timer);
                    }
                }
            }
        }
    }

    /// Holds `timer` here if it is near (or the store keeps no timers); a timer of the same
    /// id held before is replaced either way.
    fn hold(&mut self, timer: StoredTimer) {
        let id = id_of(&timer);
        if self.keeps && timer.due_ms > now_ms() + millis(HORIZON) {
            self.held.remove(&id);
            return;
        }
        self.queue.push(Reverse((timer.due_ms, id.clone())));
        self.held.insert(id, timer);
    }

    /// Starts a read of the store, whose timers come back as `Polled`: when it is time, for
    /// the registered agents' timers due within [`HORIZON`] (after what the last read covered,
    /// unless it is a full read); else for those of the agents registered since the last read,
    /// due at any time before the horizon.
    fn poll(&mut self) {
        let regular = Instant::now() >= self.next_poll;
        let owners = if regular {
            self.next_poll = Instant::now() + POLL;
            let Some(host) = self.host.upgrade() else {
                return;
            };
            TimerOwners {
                agents: host.agent_names(),
                kinds: host.virtual_kinds(),
            }
        } else {
            TimerOwners {
                agents: mem::take(&mut self.added),
                kinds: Vec::new(),
            }
        };
        if owners.is_empty() || !self.keeps {
            self.polls = self.keeps;
            return;
        }
        let Some(tx) = self.tx.upgrade() else {
            return;
        };
        self.polling = true;
        self.changed.clear();
        self.trim();
        let catch_up = !regular;
        let full = regular
            && (mem::take(&mut self.read_all) || self.reads_since_full + 1 >= FULL_READ_EVERY);
        if full {
            // Every agent's timers, those registered since the last read too.
            self.added.clear();
        }
        let from = if full || catch_up { 0 } else { self.covered_ms };
        // Taken now, not when the read runs: a timer a commit hands over meanwhile that is not
        // held (due after its commit's horizon) is then due after this read's end too.
        let before = now_ms() + millis(HORIZON);
        let store = Arc::clone(&self.store);
        tokio::spawn(async move {
            let read = match store.due_timers(from..before, &owners, POLL_LIMIT).await {
                Ok(due) => Read {
                    // Cut short at the limit: covered only up to the last timer read.
                    covered_ms: Some(match due.last() {
                        Some(last) if due.len() >= POLL_LIMIT => last.due_ms,
                        _ => before,
                    }),
                    due,
                    full,
                    catch_up,
                },
                Err(error) => {
                    tracing::warn!(%error, "the store's timers could not be read; trying again");
                    Read {
                        due: Vec::new(),
                        covered_ms: None,
                        full,
                        catch_up,
                    }
                }
            };
            let _ = tx.send(Command::Polled(read));
        });
    }

    /// Holds the timers a read of the store found due within [`HORIZON`], but those this
    /// process holds or fires, or changed or fired since the read began: what it has of them
    /// is newer than the read.
    fn polled(&mut self, read: Read) {
        self.polling = false;
        match read.covered_ms {
            // A catch-up read covers its agents' timers (before the horizon), no window.
            Some(_) if read.catch_up => {}
            Some(covered) => {
                self.covered_ms = covered;
                self.reads_since_full = if read.full {
                    0
                } else {
                    self.reads_since_full + 1
                };
            }
            // Failed: the next read asks again for what this one asked (a full read for an
            // agent's catch-up: its name is not kept).
            None => self.read_all |= read.full || read.catch_up,
        }
        let changed = mem::take(&mut self.changed);
        for timer in read.due {
            let id = id_of(&timer);
            if self.held.contains_key(&id) || self.firing.contains_key(&id) || changed.contains(&id)
            {
                continue;
            }
            self.hold(timer);
        }
    }

    /// Gives back the room a burst of held timers left behind: the timers fired, the maps
    /// kept their size.
    fn trim(&mut self) {
        if self.held.capacity() > 64 && self.held.len() < self.held.capacity() / 4 {
            self.held.shrink_to(self.held.len() * 2);
        }
        if self.queue.capacity() > 64 && self.queue.len() < self.queue.capacity() / 4 {
            self.queue.shrink_to(self.queue.len() * 2);
        }
        if self.firing.capacity() > 64 && self.firing.len() < self.firing.capacity() / 4 {
            self.firing.shrink_to(self.firing.len() * 2);
        }
    }

    /// Starts the firing of every held timer that is due.
    fn fire_due(&mut self) {
        let now = now_ms();
        while let Some(Reverse((due, _))) = self.queue.peek() {
            if *due > now {
                break;
            }
            let Some(Reverse((due, id))) = self.queue.pop() else {
                break;
            };
            // A timer set again while it fires is queued again once that firing ends.
            if self.held.get(&id).is_none_or(|t| t.due_ms != due) || self.firing.contains_key(&id) {
                continue;
            }
            let Some(timer) = self.held.remove(&id) else {
                continue;
            };
            self.firing.insert(id.clone(), false);
            let host = self.host.clone();
            let store = Arc::clone(&self.store);
            let keeps = self.keeps;
            let Some(tx) = self.tx.upgrade() else {
                return;
            };
            tokio::spawn(async move {
                let fired = fire(host, store, keeps, timer).await;
                let _ = tx.send(Command::Fired(id, fired));
            });
        }
    }
}

/// Delivers what `timer` owes now and settles it.
async fn fire(
    host: Weak<dyn TimerHost>,
    store: Arc<dyn ThreadStore>,
    keeps: bool,
    timer: StoredTimer,
) -> Fired {
    let (signals, next) = match owed(&timer, now_ms()) {
        Ok(owed) => owed,
        Err(reason) => {
            tracing::error!(timer = %timer.id, thread = %timer.key, %reason, "a cron timer cannot go on: removed");
            let _ = store.remove_timer(&timer.key, &timer.id).await;
            return Fired::Done(None);
        }
    };
    let next_ms = next.map(|at| u64::try_from(at.as_millisecond()).unwrap_or(u64::MAX));
    let last = signals.len().saturating_sub(1);
    let mut settled = false;
    for (n, signal) in signals.into_iter().enumerate() {
        let Some(host) = host.upgrade() else {
            return Fired::Parked;
        };
        let agent = timer.key.agent().to_owned();
        // The last occurrence's step settles the timer; one that fails leaves it as it was,
        // and the retry delivers every occurrence again (those committed are not handled twice).
        let settles = (keeps && n == last).then(|| {
            Box::new(TimerWrite::Fired {
                key: timer.key.clone(),
                id: timer.id.clone(),
                fired_ms: timer.due_ms,
                signal_id: timer.signal.id().as_str().to_owned(),
                next_ms,
            })
        });
        let delivered = Arc::clone(&host)
            .deliver(timer.key.clone(), signal, settles)
            .await;
        let answer = match delivered {
            Ok(answer) => answer,
            Err(RuntimeError::NotRunning { .. }) if keeps && !host.has_agent(&agent) => {
                tracing::debug!(timer = %timer.id, thread = %timer.key, "the timer's agent is not registered: it waits in the store");
                return Fired::Parked;
            }
            Err(error) => {
                tracing::warn!(%error, timer = %timer.id, thread = %timer.key, "a timer could not be delivered; trying again");
                return Fired::Retry(Box::new(timer));
            }
        };
        drop(host);
        match tokio::time::timeout(PATIENCE, answer).await {
            Ok(Ok(Ok(applied))) => settled = applied == Applied::WithTimer,
            outcome => {
                let why = match outcome {
                    Ok(Ok(Err(reason))) => reason,
                    Ok(Err(_)) => "the thread stopped before it committed".to_owned(),
                    _ => format!("not committed within {PATIENCE:?}"),
                };
                tracing::warn!(timer = %timer.id, thread = %timer.key, %why, "a timer's signal was not committed; trying again");
                return Fired::Retry(Box::new(timer));
            }
        }
    }
    if keeps
        && !settled
        && let Err(error) = store
            .timer_fired(
                &timer.key,
                &timer.id,
                timer.due_ms,
                timer.signal.id().as_str(),
                next_ms,
            )
            .await
    {
        // The row stays as it was: the next read fires it again, and the thread, which has
        // committed it, answers at once without handling it twice.
        tracing::warn!(%error, timer = %timer.id, thread = %timer.key, "a fired timer could not be settled in the store");
    }
    Fired::Done(next_ms.map(|due_ms| Box::new(StoredTimer { due_ms, ..timer })))
}

/// The signals `timer` delivers at `now_ms`, and when it is next due (a cron timer's next
/// occurrence; `None` once a one-shot timer fired).
fn owed(timer: &StoredTimer, now_ms: u64) -> Result<(Vec<Signal>, Option<Timestamp>), String> {
    let Some(repeat) = &timer.cron else {
        return Ok((vec![timer.signal.clone()], None));
    };
    let zone = jiff::tz::TimeZone::get(&repeat.zone)
        .map_err(|e| format!("time zone {:?}: {e}", repeat.zone))?;
    let pending = timestamp(timer.due_ms)?;
    let now = timestamp(now_ms)?;
    let due = cron::due(&repeat.expr, &zone, pending, now, repeat.misfire, GRACE);
    if due.dropped > 0 {
        tracing::info!(timer = %timer.id, thread = %timer.key, dropped = due.dropped, policy = ?repeat.misfire, "cron occurrences missed while nothing ran were dropped");
    }
    let signals = due
        .fire
        .iter()
        .map(|at| occurrence(&timer.signal, *at))
        .collect();
    Ok((signals, due.next))
}

/// The copy of a cron timer's `signal` for its occurrence at `at`: its id names the
/// occurrence, so a second delivery of the same occurrence is recognised.
pub(crate) fn occurrence(signal: &Signal, at: Timestamp) -> Signal {
    let id = format!("{}@{}", signal.id().as_str(), at.as_millisecond());
    signal.occurrence(id, at)
}

fn timestamp(ms: u64) -> Result<Timestamp, String> {
    let ms = i64::try_from(ms).map_err(|_| format!("{ms} ms is past the end of time"))?;
    Timestamp::from_millisecond(ms).map_err(|e| e.to_string())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The instant of the wall-clock time `due_ms`.
fn instant_of(due_ms: u64) -> Instant {
    let now = now_ms();
    Instant::now() + Duration::from_millis(due_ms.saturating_sub(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use motet_directives::cron::{CronExpr, Misfire};

    fn timer(cron: Option<crate::store::CronTimer>, due_ms: u64) -> StoredTimer {
        StoredTimer {
            key: ThreadKey::new("a", "t"),
            id: "tick".to_owned(),
            due_ms,
            signal: Signal::builder("tick", "test")
                .build()
                .unwrap_or_else(|e| unreachable!("{e}")),
            cron,
        }
    }

    #[test]
    fn a_one_shot_timer_delivers_its_own_signal_once() {
        let t = timer(None, 1_000);
        let (signals, next) = owed(&t, 5_000).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(signals, std::slice::from_ref(&t.signal));
        assert_eq!(next, None);
    }

    #[test]
    fn a_cron_timer_names_each_occurrence_and_moves_on() {
        let repeat = crate::store::CronTimer {
            expr: CronExpr::parse("* * * * *").unwrap_or_else(|e| unreachable!("{e}")),
            zone: "UTC".to_owned(),
            misfire: Misfire::CatchUp(2),
        };
        // Due at 00:01 (60,000 ms); looked at 00:03:00.5: 00:01 and 00:02 missed, 00:03 on time.
        let t = timer(Some(repeat), 60_000);
        let (signals, next) = owed(&t, 180_500).unwrap_or_else(|e| unreachable!("{e}"));
        let ids: Vec<&str> = signals.iter().map(|s| s.id().as_str()).collect();
        let base = t.signal.id().as_str();
        assert_eq!(
            ids,
            [
                format!("{base}@60000"),
                format!("{base}@120000"),
                format!("{base}@180000")
            ]
        );
        assert_eq!(
            signals[2].time(),
            Some(Timestamp::from_millisecond(180_000).unwrap_or_else(|e| unreachable!("{e}")))
        );
        assert_eq!(next.map(|n| n.as_millisecond()), Some(240_000));
        // The same occurrence owed again (a redelivery) has the same id.
        let (again, _) = owed(&t, 180_500).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(again, signals);
    }

    #[test]
    fn an_unknown_time_zone_is_a_reason_not_a_panic() {
        let repeat = crate::store::CronTimer {
            expr: CronExpr::parse("@hourly").unwrap_or_else(|e| unreachable!("{e}")),
            zone: "Mars/Olympus_Mons".to_owned(),
            misfire: Misfire::Skip,
        };
        let error = owed(&timer(Some(repeat), 0), 1).err().unwrap_or_default();
        assert!(error.contains("Mars/Olympus_Mons"), "{error}");
    }
}
