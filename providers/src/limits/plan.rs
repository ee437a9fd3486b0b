//! The governor of one provider account, as pure state: token buckets that refill continuously,
//! a concurrency count, one shared backoff, and the waiting claims in fair order. Time comes in
//! as an argument; nothing here sleeps, locks or reads a clock.
//!
//! Order of service: every `High` claim before any `Normal`, every `Normal` before any `Low`
//! (strict priority). Within a priority, weighted fair queuing by virtual finish times, first
//! between tenants, then between the agents of the tenant chosen: each flow that has a claim
//! waiting carries the virtual time it would finish at (`max(virtual now, its last finish) +
//! 1 / weight`), and the smallest goes first. An agent that queued a hundred claims therefore
//! gets one turn for every turn of each other waiting agent, whatever the order they came in.
//! The head claim is served only when it fits (no skipping ahead to smaller claims, which would
//! starve large ones); a claim larger than a bucket is charged the whole bucket, not refused.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::headers::Learned;
use super::kind::Kind;
use crate::scope::{CallScope, Priority};

/// The longest default backoff after repeated 429s without a `retry-after`.
const MAX_DEFAULT_BACKOFF: Duration = Duration::from_secs(60);
/// The first default backoff after a 429 without a `retry-after`.
const FIRST_DEFAULT_BACKOFF: Duration = Duration::from_secs(1);
/// Fair-queuing flows that have gone idle are forgotten every this many grants.
const SWEEP_EVERY: u64 = 1024;
/// How far below a charge a bucket's level may be and still pay it (rounding).
const FIT_SLACK: f64 = 1e-6;

/// The limits of one provider account (or one model of it): how much per window (a minute by
/// default) and how many streams at once. `None` means no limit of that kind is configured
/// (one may still be learned from the provider's headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    /// Requests per window.
    pub requests_per_minute: Option<u64>,
    /// Input (prompt) tokens per window.
    pub input_tokens_per_minute: Option<u64>,
    /// Output (completion) tokens per window.
    pub output_tokens_per_minute: Option<u64>,
    /// Input and output tokens together per window (OpenAI's `tokens`, Anthropic's `tokens`).
    pub tokens_per_minute: Option<u64>,
    /// Streams open at once.
    pub concurrent: Option<u32>,
    /// The window the `*_per_minute` figures are counted over: a minute, except in tests and
    /// benchmarks that scale time down. Learned limits are read as per this window too.
    pub window: Duration,
}

impl Default for Rates {
    fn default() -> Self {
        Self::unlimited()
    }
}

impl Rates {
    /// No limit of any kind, a one-minute window.
    pub const fn unlimited() -> Self {
        Self {
            requests_per_minute: None,
            input_tokens_per_minute: None,
            output_tokens_per_minute: None,
            tokens_per_minute: None,
            concurrent: None,
            window: Duration::from_secs(60),
        }
    }

    /// At most `n` requests per window.
    pub fn with_requests_per_minute(mut self, n: u64) -> Self {
        self.requests_per_minute = Some(n);
        self
    }

    /// At most `n` input tokens per window.
    pub fn with_input_tokens_per_minute(mut self, n: u64) -> Self {
        self.input_tokens_per_minute = Some(n);
        self
    }

    /// At most `n` output tokens per window.
    pub fn with_output_tokens_per_minute(mut self, n: u64) -> Self {
        self.output_tokens_per_minute = Some(n);
        self
    }

    /// At most `n` input and output tokens together per window.
    pub fn with_tokens_per_minute(mut self, n: u64) -> Self {
        self.tokens_per_minute = Some(n);
        self
    }

    /// At most `n` streams at once (at least 1).
    pub fn with_concurrent(mut self, n: u32) -> Self {
        self.concurrent = Some(n.max(1));
        self
    }

    /// Counts the per-minute figures over `window` instead (at least a millisecond): a scaled
    /// clock for tests and benchmarks.
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window.max(Duration::from_millis(1));
        self
    }

    fn per_window(&self, kind: Kind) -> Option<u64> {
        match kind {
            Kind::Requests => self.requests_per_minute,
            Kind::InputTokens => self.input_tokens_per_minute,
            Kind::OutputTokens => self.output_tokens_per_minute,
            Kind::Tokens => self.tokens_per_minute,
        }
    }
}

/// One call asking for a share of the account.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The tenant it is for (`None`: the tenant of agents without one).
    pub tenant: Option<Arc<str>>,
    /// The agent it is for.
    pub agent: Arc<str>,
    /// How soon it should be served.
    pub priority: Priority,
    /// The input tokens it will send, estimated.
    pub input_tokens: u64,
    /// The most output tokens it may generate (its `max_tokens`).
    pub max_output_tokens: u64,
    /// When it gives up waiting; `None`: it waits as long as it takes.
    pub deadline: Option<Instant>,
    /// Its agent's share relative to the tenant's other agents (default 1).
    pub weight: f64,
}

impl Claim {
    /// A claim for the call `scope` describes, with its token estimate and no deadline.
    pub fn for_scope(scope: &CallScope, input_tokens: u64, max_output_tokens: u64) -> Self {
        Self {
            tenant: scope.tenant.clone(),
            agent: scope.agent.clone(),
            priority: scope.priority,
            input_tokens,
            max_output_tokens,
            deadline: None,
            weight: 1.0,
        }
    }

    /// A claim of `agent` (no tenant, normal priority) for one request of these tokens.
    pub fn new(agent: impl Into<Arc<str>>, input_tokens: u64, max_output_tokens: u64) -> Self {
        Self {
            tenant: None,
            agent: agent.into(),
            priority: Priority::Normal,
            input_tokens,
            max_output_tokens,
            deadline: None,
            weight: 1.0,
        }
    }

    /// For this tenant.
    pub fn with_tenant(mut self, tenant: impl Into<Arc<str>>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// At this priority.
    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Giving up at `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The charge of each kind at grant time.
    fn charges(&self) -> [f64; 4] {
        let input = self.input_tokens as f64;
        let output = self.max_output_tokens as f64;
        [1.0, input, output, input + output]
    }
}

/// A claim's id within its governor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimId(u64);

/// What a finished call used, to settle its charge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Input tokens the provider counted.
    pub input_tokens: u64,
    /// Output tokens it generated.
    pub output_tokens: u64,
}

/// A refilling bucket: `capacity` per `window`, refilled continuously.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bucket {
    capacity: f64,
    /// Units per second.
    rate: f64,
    /// May go below zero when a settled call used more than it was charged.
    level: f64,
}

impl Bucket {
    fn new(capacity: u64, window: Duration) -> Self {
        let capacity = capacity as f64;
        Self {
            capacity,
            rate: capacity / window.as_secs_f64().max(1e-3),
            level: capacity,
        }
    }

    fn refill(&mut self, elapsed: Duration) {
        self.level = (self.level + self.rate * elapsed.as_secs_f64()).min(self.capacity);
    }

    /// What a claim is charged: its estimate, or the whole bucket when it is larger.
    fn charge_of(&self, want: f64) -> f64 {
        want.min(self.capacity)
    }

    /// Whether `want` fits now. The slack absorbs the rounding of a wake-up time computed
    /// from the refill rate, so a claim woken when it should fit does.
    fn fits(&self, want: f64) -> bool {
        self.level + FIT_SLACK >= self.charge_of(want)
    }

    /// How long until `want` fits.
    fn wait_for(&self, want: f64) -> Duration {
        let deficit = self.charge_of(want) - self.level;
        if deficit <= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(deficit / self.rate).unwrap_or(Duration::MAX)
    }

    /// Resizes to a new capacity, keeping the level at most the new capacity.
    fn resize(&mut self, capacity: u64, window: Duration) {
        let resized = Self::new(capacity, window);
        self.capacity = resized.capacity;
        self.rate = resized.rate;
        self.level = self.level.min(self.capacity);
    }
}

/// A claim's state.
#[derive(Debug, Clone)]
enum State {
    Waiting,
    /// Granted, with what each bucket was charged.
    Granted([f64; 4]),
}

#[derive(Debug, Clone)]
struct Entry {
    claim: Claim,
    state: State,
}

/// A flow of the fair queue: a tenant, or an agent within a tenant.
#[derive(Debug, Clone, Default)]
struct Flow {
    /// The virtual finish time of its last served claim.
    last_finish: f64,
    /// The virtual finish time of its next claim, while it has one waiting.
    head_finish: Option<f64>,
}

impl Flow {
    /// Becomes backlogged at virtual time `now`.
    fn wake(&mut self, now: f64, weight: f64) {
        if self.head_finish.is_none() {
            self.head_finish = Some(self.last_finish.max(now) + 1.0 / weight.max(1e-6));
        }
    }

    /// Served its head; returns the head's virtual start.
    fn serve(&mut self, weight: f64, more: bool) -> f64 {
        let step = 1.0 / weight.max(1e-6);
        let finish = self.head_finish.unwrap_or(self.last_finish + step);
        self.last_finish = finish;
        self.head_finish = more.then_some(finish + step);
        finish - step
    }
}

#[derive(Debug, Clone, Default)]
struct Tenant {
    flow: Flow,
    /// Virtual time among its agents.
    vtime: f64,
    agents: BTreeMap<Arc<str>, Agent>,
    waiting: usize,
}

#[derive(Debug, Clone, Default)]
struct Agent {
    flow: Flow,
    weight: f64,
    queue: VecDeque<ClaimId>,
}

/// The fair queue of one priority.
#[derive(Debug, Clone, Default)]
struct FairQueue {
    vtime: f64,
    /// By tenant; `None` sorts first and is the tenant of agents without one.
    tenants: BTreeMap<Option<Arc<str>>, Tenant>,
    waiting: usize,
}

impl FairQueue {
    fn push(&mut self, id: ClaimId, claim: &Claim) {
        let vtime = self.vtime;
        let tenant = self.tenants.entry(claim.tenant.clone()).or_default();
        tenant.flow.wake(vtime, 1.0);
        let inner = tenant.vtime;
        let agent = tenant.agents.entry(claim.agent.clone()).or_default();
        agent.weight = claim.weight;
        agent.flow.wake(inner, claim.weight);
        agent.queue.push_back(id);
        tenant.waiting += 1;
        self.waiting += 1;
    }

    /// The claim served next: the tenant, then its agent, with the smallest finish time.
    fn head(&self) -> Option<ClaimId> {
        let (_, tenant) = smallest(self.tenants.iter(), |t| t.flow.head_finish)?;
        let (_, agent) = smallest(tenant.agents.iter(), |a| a.flow.head_finish)?;
        agent.queue.front().copied()
    }

    /// Takes the head off, advancing the virtual times.
    fn pop(&mut self) -> Option<ClaimId> {
        let tenant_key = smallest(self.tenants.iter(), |t| t.flow.head_finish)?
            .0
            .clone();
        let tenant = self.tenants.get_mut(&tenant_key)?;
        let agent_key = smallest(tenant.agents.iter(), |a| a.flow.head_finish)?
            .0
            .clone();
        let agent = tenant.agents.get_mut(&agent_key)?;
        let id = agent.queue.pop_front()?;
        let weight = agent.weight;
        let more = !agent.queue.is_empty();
        tenant.vtime = agent.flow.serve(weight, more);
        tenant.waiting = tenant.waiting.saturating_sub(1);
        let more = tenant.waiting > 0;
        self.vtime = tenant.flow.serve(1.0, more);
        self.waiting = self.waiting.saturating_sub(1);
        Some(id)
    }

    /// Takes a claim out from anywhere in the queue (cancelled or expired).
    fn remove(&mut self, id: ClaimId, claim: &Claim) -> bool {
        let Some(tenant) = self.tenants.get_mut(&claim.tenant) else {
            return false;
        };
        let Some(agent) = tenant.agents.get_mut(&claim.agent) else {
            return false;
        };
        let Some(at) = agent.queue.iter().position(|c| *c == id) else {
            return false;
        };
        agent.queue.remove(at);
        if agent.queue.is_empty() {
            agent.flow.head_finish = None;
        }
        tenant.waiting = tenant.waiting.saturating_sub(1);
        if tenant.waiting == 0 {
            tenant.flow.head_finish = None;
        }
        self.waiting = self.waiting.saturating_sub(1);
        true
    }

    /// Forgets flows with nothing waiting, so a million agents that each called once do not
    /// stay in memory. One that comes back starts at the virtual time: it gains at most the
    /// one turn it was ahead by.
    fn sweep(&mut self) {
        self.tenants.retain(|_, tenant| {
            tenant.agents.retain(|_, a| !a.queue.is_empty());
            tenant.waiting > 0
        });
    }
}

/// The entry with the smallest key among those that have one (ties: the first in order).
fn smallest<'a, K, V>(
    items: impl Iterator<Item = (&'a K, &'a V)>,
    key: impl Fn(&V) -> Option<f64>,
) -> Option<(&'a K, &'a V)>
where
    K: 'a,
    V: 'a,
{
    let mut best: Option<(f64, (&K, &V))> = None;
    for (k, v) in items {
        if let Some(tag) = key(v)
            && best.as_ref().is_none_or(|(b, _)| tag < *b)
        {
            best = Some((tag, (k, v)));
        }
    }
    best.map(|(_, item)| item)
}

/// The governor of one account.
#[derive(Debug, Clone)]
pub struct Governor {
    configured: Rates,
    /// Limits learned from the provider's headers, per kind (never above the configured).
    learned: [Option<u64>; 4],
    buckets: [Option<Bucket>; 4],
    /// When the buckets were last refilled.
    refilled: Instant,
    active: u32,
    /// The shared backoff: nothing is granted before it.
    backoff_until: Option<Instant>,
    /// 429s in a row, for the default backoff.
    throttled_in_a_row: u32,
    /// Indexed by priority: Low, Normal, High.
    queues: [FairQueue; 3],
    entries: HashMap<ClaimId, Entry>,
    next_id: u64,
    grants: u64,
}

fn class(priority: Priority) -> usize {
    match priority {
        Priority::Low => 0,
        Priority::Normal => 1,
        Priority::High => 2,
    }
}

impl Governor {
    /// A governor with these limits, its buckets full at `now`.
    pub fn new(rates: Rates, now: Instant) -> Self {
        let mut buckets = [None; 4];
        for kind in Kind::ALL {
            buckets[kind.index()] = rates
                .per_window(kind)
                .filter(|n| *n > 0)
                .map(|n| Bucket::new(n, rates.window));
        }
        Self {
            configured: rates,
            learned: [None; 4],
            buckets,
            refilled: now,
            active: 0,
            backoff_until: None,
            throttled_in_a_row: 0,
            queues: Default::default(),
            entries: HashMap::new(),
            next_id: 0,
            grants: 0,
        }
    }

    /// The limit of `kind` in force: the configured one, lowered by a learned one; or the
    /// learned one when none is configured.
    pub fn limit(&self, kind: Kind) -> Option<u64> {
        let configured = self.configured.per_window(kind);
        match (configured, self.learned[kind.index()]) {
            (Some(c), Some(l)) => Some(c.min(l)),
            (c, l) => c.or(l),
        }
    }

    /// What is left of `kind` now (whole units, after refilling to `now`).
    pub fn available(&mut self, kind: Kind, now: Instant) -> Option<f64> {
        self.refill(now);
        self.buckets[kind.index()].map(|b| b.level)
    }

    /// The concurrency limit.
    pub fn concurrent(&self) -> Option<u32> {
        self.configured.concurrent
    }

    /// Streams granted and not yet settled.
    pub fn active(&self) -> u32 {
        self.active
    }

    /// Claims waiting.
    pub fn waiting(&self) -> usize {
        self.queues.iter().map(|q| q.waiting).sum()
    }

    /// The shared backoff, if one is in force at `now`.
    pub fn backoff_until(&self, now: Instant) -> Option<Instant> {
        self.backoff_until.filter(|until| *until > now)
    }

    /// Whether the claim `id` has been granted (and not settled).
    pub fn is_granted(&self, id: ClaimId) -> bool {
        matches!(
            self.entries.get(&id).map(|e| &e.state),
            Some(State::Granted(_))
        )
    }

    /// Whether the claim `id` is waiting.
    pub fn is_waiting(&self, id: ClaimId) -> bool {
        matches!(
            self.entries.get(&id).map(|e| &e.state),
            Some(State::Waiting)
        )
    }

    /// Puts a claim in the queue; [`grant`](Self::grant) decides when it goes.
    pub fn enqueue(&mut self, claim: Claim, now: Instant) -> ClaimId {
        self.refill(now);
        let id = ClaimId(self.next_id);
        self.next_id += 1;
        self.queues[class(claim.priority)].push(id, &claim);
        self.entries.insert(
            id,
            Entry {
                claim,
                state: State::Waiting,
            },
        );
        id
    }

    /// Grants as many waiting claims as the limits allow at `now`, in fair order; returns them.
    pub fn grant(&mut self, now: Instant) -> Vec<ClaimId> {
        self.refill(now);
        let mut granted = Vec::new();
        if self.backoff_until(now).is_some() {
            return granted;
        }
        while let Some((queue, id)) = self.next_head() {
            if self
                .configured
                .concurrent
                .is_some_and(|max| self.active >= max)
            {
                break;
            }
            let Some(entry) = self.entries.get(&id) else {
                // Not reachable: every queued id has an entry. Dropped rather than stuck.
                self.queues[queue].pop();
                continue;
            };
            let want = entry.claim.charges();
            let fits = self
                .buckets
                .iter()
                .zip(want)
                .all(|(bucket, w)| bucket.is_none_or(|b| b.fits(w)));
            if !fits {
                break;
            }
            let mut charged = [0.0; 4];
            for (i, bucket) in self.buckets.iter_mut().enumerate() {
                if let Some(b) = bucket {
                    charged[i] = b.charge_of(want[i]);
                    b.level -= charged[i];
                }
            }
            self.queues[queue].pop();
            if let Some(entry) = self.entries.get_mut(&id) {
                entry.state = State::Granted(charged);
            }
            self.active += 1;
            self.grants += 1;
            if self.grants.is_multiple_of(SWEEP_EVERY) {
                self.queues.iter_mut().for_each(FairQueue::sweep);
            }
            granted.push(id);
        }
        granted
    }

    /// The head of the highest priority with a claim waiting, and that priority's index.
    fn next_head(&self) -> Option<(usize, ClaimId)> {
        (0..3)
            .rev()
            .find_map(|q| self.queues[q].head().map(|id| (q, id)))
    }

    /// When [`grant`](Self::grant) or [`expire`](Self::expire) should run next: when the head
    /// claim will fit, the backoff ends, or the earliest deadline passes. `None` when nothing
    /// waits, or only a settle can make room (every stream in use).
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        let deadline = self
            .entries
            .values()
            .filter(|e| matches!(e.state, State::Waiting))
            .filter_map(|e| e.claim.deadline)
            .min();
        let (_, head) = self.next_head()?;
        let fits_at = if let Some(until) = self.backoff_until(now) {
            Some(until)
        } else if self
            .configured
            .concurrent
            .is_some_and(|max| self.active >= max)
        {
            None
        } else {
            let want = self.entries.get(&head).map(|e| e.claim.charges())?;
            let elapsed = now.saturating_duration_since(self.refilled);
            let wait = self
                .buckets
                .iter()
                .zip(want)
                .filter_map(|(bucket, w)| {
                    let mut b = (*bucket)?;
                    b.refill(elapsed);
                    Some(b.wait_for(w))
                })
                .max()
                .unwrap_or(Duration::ZERO);
            now.checked_add(wait)
        };
        match (fits_at, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes out the waiting claims whose deadline is past at `now`; returns them.
    pub fn expire(&mut self, now: Instant) -> Vec<ClaimId> {
        let mut late: Vec<ClaimId> = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.state, State::Waiting))
            .filter(|(_, e)| e.claim.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        late.sort();
        for id in &late {
            self.cancel(*id);
        }
        late
    }

    /// Withdraws a claim: a waiting one leaves the queue; a granted one is released keeping
    /// its charges (nothing is known of what it used). Returns whether it was known.
    pub fn cancel(&mut self, id: ClaimId) -> bool {
        match self.entries.get(&id).map(|e| e.state.clone()) {
            Some(State::Waiting) => {
                if let Some(entry) = self.entries.remove(&id) {
                    self.queues[class(entry.claim.priority)].remove(id, &entry.claim);
                }
                true
            }
            Some(State::Granted(_)) => {
                self.entries.remove(&id);
                self.active = self.active.saturating_sub(1);
                true
            }
            None => false,
        }
    }

    /// Settles a granted claim with what the call used: what it was charged beyond that is
    /// given back, what it used beyond the charge is taken (a bucket may go below zero and
    /// then makes the next claims wait longer). Its stream is free again.
    pub fn settle(&mut self, id: ClaimId, spent: Spent, now: Instant) {
        self.refill(now);
        let Some(Entry {
            state: State::Granted(charged),
            ..
        }) = self.entries.get(&id)
        else {
            return;
        };
        let charged = *charged;
        self.entries.remove(&id);
        self.active = self.active.saturating_sub(1);
        let input = spent.input_tokens as f64;
        let output = spent.output_tokens as f64;
        let used = [charged[0], input, output, input + output];
        for (i, bucket) in self.buckets.iter_mut().enumerate() {
            if let Some(b) = bucket {
                b.level = (b.level + charged[i] - used[i]).min(b.capacity);
            }
        }
    }

    /// Takes in what a response's headers said of the account at `now`: a learned limit
    /// lowers the configured one (never raises it) or fills one not configured; what remains
    /// lowers the bucket's level; a window at zero with nothing else known holds every claim
    /// until its reset. A successful answer also ends the run of 429s.
    pub fn learn(&mut self, learned: &Learned, now: Instant) {
        self.refill(now);
        for kind in Kind::ALL {
            let window = learned.window(kind);
            if let Some(limit) = window.limit.filter(|n| *n > 0) {
                let i = kind.index();
                self.learned[i] = Some(limit);
                let effective = self.limit(kind).unwrap_or(limit);
                match &mut self.buckets[i] {
                    Some(b) if b.capacity as u64 != effective => {
                        b.resize(effective, self.configured.window);
                    }
                    Some(_) => {}
                    None => {
                        self.buckets[i] = Some(Bucket::new(effective, self.configured.window));
                    }
                }
            }
            if let Some(remaining) = window.remaining {
                match &mut self.buckets[kind.index()] {
                    Some(b) => b.level = b.level.min(remaining as f64),
                    None if remaining == 0 => {
                        if let Some(until) = window.reset.and_then(|r| now.checked_add(r)) {
                            self.hold(until);
                        }
                    }
                    None => {}
                }
            }
        }
    }

    /// A 2xx answer: the run of 429s is over.
    pub fn succeeded(&mut self) {
        self.throttled_in_a_row = 0;
    }

    /// The provider said 429: every claim waits until `retry_after` (or a default that doubles
    /// with each 429 in a row, from 1 s up to 60 s), and the buckets restart from empty so the
    /// waiters do not all go at once when it ends.
    pub fn throttle(&mut self, retry_after: Option<Duration>, now: Instant) {
        self.refill(now);
        let wait = retry_after.unwrap_or_else(|| {
            FIRST_DEFAULT_BACKOFF
                .saturating_mul(2u32.saturating_pow(self.throttled_in_a_row.min(16)))
                .min(MAX_DEFAULT_BACKOFF)
        });
        self.throttled_in_a_row = self.throttled_in_a_row.saturating_add(1);
        for bucket in self.buckets.iter_mut().flatten() {
            bucket.level = bucket.level.min(0.0);
        }
        if let Some(until) = now.checked_add(wait) {
            self.hold(until);
        }
    }

    fn hold(&mut self, until: Instant) {
        self.backoff_until = Some(self.backoff_until.map_or(until, |b| b.max(until)));
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled);
        if elapsed.is_zero() {
            return;
        }
        for bucket in self.buckets.iter_mut().flatten() {
            bucket.refill(elapsed);
        }
        self.refilled = now;
    }
}

#[cfg(test)]
mod tests;
