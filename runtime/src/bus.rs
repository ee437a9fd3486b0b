//! Durable signal buses: signals that outlive a process, delivered at least once and
//! acknowledged only after the receiving agent committed what it made of them.
//!
//! The runtime's own in-process [`motet_signals::Bus`] stays what it is: fire-and-forget fan-out
//! inside one process (deltas, replies, runtime events). A [`SignalBus`] is the other kind — a
//! broker whose named consumers keep their place while their agent is down. Two implement it:
//! [`LocalBus`], the embedded default (the in-process bus behind the same trait: acknowledgements
//! and redelivery work, but nothing survives the process), and `motet_jetstream::JetStreamBus`
//! (NATS JetStream; docs/bus.md).
//!
//! What a consumer does with each delivery — acknowledge it, deliver it again after a pause, or
//! give up and send it to the dead letters — is decided by the pure [`settle`] from the outcome
//! and the attempt number; the bus only carries the decision out.
//!
//! # Layout
//! - [`SignalBus`], [`Inbox`], [`Delivered`] (+ [`Acker`]): the trait a broker implements.
//! - [`ConsumerSpec`], [`StartAt`]: a named consumer's pattern, start and redelivery limits.
//! - [`settle`] / [`Settle`]: the redelivery decision.
//! - `bus/local.rs`: [`LocalBus`].

mod local;

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use motet_signals::{Pattern, Signal};

pub use local::{DeadLetter, LocalBus};

/// Why a bus operation failed. Nothing is lost on any of these: a publish that fails was not
/// confirmed (the caller still holds the signal), a delivery that cannot be decoded goes to the
/// dead letters with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BusError {
    /// The broker could not be reached, or the connection dropped.
    #[error("the bus is unavailable: {reason}")]
    Unavailable {
        /// What the client reported.
        reason: String,
    },
    /// The broker did not confirm that it holds the signal (no acknowledgement in time, or
    /// refused: a stream limit, a missing stream).
    #[error("the bus did not confirm signal {id}: {reason}")]
    NotConfirmed {
        /// The signal's id.
        id: String,
        /// Why.
        reason: String,
    },
    /// The signal cannot be put on the wire (an attribute the wire format cannot carry).
    #[error("signal {id} cannot be sent on the bus: {reason}")]
    Encode {
        /// The signal's id.
        id: String,
        /// Why.
        reason: String,
    },
    /// The signal is larger on the wire than the broker takes in one message (NATS's
    /// `max_payload`, 1 MiB by default): refused before sending, and publishing it again
    /// cannot succeed.
    #[error("signal {id} is {size} bytes on the wire, over the bus's limit of {limit} bytes")]
    TooLarge {
        /// The signal's id.
        id: String,
        /// Its size on the wire (payload and headers), in bytes.
        size: usize,
        /// The most the broker takes, in bytes.
        limit: usize,
    },
    /// A consumer could not be created or resumed with this specification.
    #[error("consumer {name}: {reason}")]
    Consumer {
        /// The consumer's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// Acknowledging, redelivering or dead-lettering a delivery failed; the broker will deliver
    /// it again once its acknowledgement wait runs out.
    #[error("settling delivery {sequence} failed: {reason}")]
    Settle {
        /// The delivery's sequence number.
        sequence: u64,
        /// Why.
        reason: String,
    },
    /// The bus was closed.
    #[error("the bus is closed")]
    Closed,
}

impl BusError {
    /// Whether publishing the same signal again would fail the same way ([`BusError::Encode`],
    /// [`BusError::TooLarge`]): a publisher gives it up at once rather than retrying it.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Encode { .. } | Self::TooLarge { .. })
    }
}

/// What the broker said about a published signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Published {
    /// Where the broker stored it (`None` on a bus that keeps nothing).
    pub sequence: Option<u64>,
    /// The broker already held a signal with this `source` and `id` and did not store it again.
    pub duplicate: bool,
}

/// Where a consumer seen for the first time starts. A consumer that already exists resumes
/// after the last signal it acknowledged, whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartAt {
    /// Only signals published from now on.
    #[default]
    New,
    /// Every signal the bus still holds.
    All,
    /// From this bus sequence number on (replay).
    Sequence(u64),
    /// From the first signal the bus stored at or after this time (replay).
    Time(SystemTime),
}

/// A named consumer: which signals, from where, and how hard to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerSpec {
    /// The durable name. Two processes consuming under one name share its signals (each goes to
    /// one of them); a process that comes back under the name gets what it missed.
    pub name: String,
    /// The signal types it receives (`*` one segment, `**` any number).
    pub pattern: Pattern,
    /// Where it starts the first time.
    pub start: StartAt,
    /// Deliveries of one signal before it goes to the dead letters (at least 1).
    pub max_deliver: u32,
    /// The pause before the n-th redelivery (`backoff[n - 1]`; the last repeats). Empty: at once.
    pub backoff: Vec<Duration>,
    /// How long a delivery may stay unacknowledged before the broker delivers it again (a
    /// consumer that died holding it).
    pub ack_wait: Duration,
    /// Deliveries handed out and not yet settled, at most: the backpressure bound. A consumer
    /// slower than its publishers holds this many, the broker keeps the rest.
    pub max_in_flight: usize,
    /// For a consumer of one run (a name no later run uses again): how long it may go without
    /// anyone consuming before the broker removes it, place and all. `None` (the default): it
    /// stays until removed by hand, for a name that comes back.
    pub inactive_threshold: Option<Duration>,
}

impl ConsumerSpec {
    /// A consumer named `name` of the signals matching `pattern`: new signals only, 5
    /// deliveries (pauses of 1 s, 5 s, 30 s, 60 s between them), 30 s acknowledgement wait, 64 in
    /// flight, kept by the broker until removed by hand.
    pub fn new(name: impl Into<String>, pattern: Pattern) -> Self {
        Self {
            name: name.into(),
            pattern,
            start: StartAt::New,
            max_deliver: 5,
            backoff: vec![
                Duration::from_secs(1),
                Duration::from_secs(5),
                Duration::from_secs(30),
                Duration::from_secs(60),
            ],
            ack_wait: Duration::from_secs(30),
            max_in_flight: 64,
            inactive_threshold: None,
        }
    }

    /// A consumer of one run: removed by the broker once no one has consumed it for `idle`
    /// (a broker that keeps nothing ignores it).
    pub fn with_inactive_threshold(mut self, idle: Duration) -> Self {
        self.inactive_threshold = Some(idle);
        self
    }

    /// Starts a new consumer at `start`.
    pub fn starting_at(mut self, start: StartAt) -> Self {
        self.start = start;
        self
    }

    /// At most `n` deliveries of one signal (0 counts as 1).
    pub fn with_max_deliver(mut self, n: u32) -> Self {
        self.max_deliver = n.max(1);
        self
    }

    /// The pauses before redeliveries.
    pub fn with_backoff(mut self, backoff: Vec<Duration>) -> Self {
        self.backoff = backoff;
        self
    }

    /// The acknowledgement wait.
    pub fn with_ack_wait(mut self, wait: Duration) -> Self {
        self.ack_wait = wait;
        self
    }

    /// At most `n` unsettled deliveries (0 counts as 1).
    pub fn with_max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The pause before redelivering a signal delivered `attempt` times (1-based).
    pub fn pause_after(&self, attempt: u32) -> Duration {
        let index = usize::try_from(attempt.saturating_sub(1)).unwrap_or(usize::MAX);
        self.backoff
            .get(index)
            .or(self.backoff.last())
            .copied()
            .unwrap_or(Duration::ZERO)
    }
}

/// What to do with a delivery once its handling ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// It was committed: the broker may forget it for this consumer.
    Ack,
    /// Deliver it again after this pause.
    Retry(Duration),
    /// Give up: store it in the dead letters with this reason, then acknowledge it.
    DeadLetter(String),
}

/// The redelivery decision: a delivery handled (`Ok`) is acknowledged; one that failed is
/// redelivered after [`ConsumerSpec::pause_after`] until it has been delivered
/// [`ConsumerSpec::max_deliver`] times, then dead-lettered with the last failure.
pub fn settle(handled: Result<(), &str>, attempt: u32, spec: &ConsumerSpec) -> Settle {
    match handled {
        Ok(()) => Settle::Ack,
        Err(reason) if attempt >= spec.max_deliver => Settle::DeadLetter(format!(
            "failed {attempt} of {} deliveries: {reason}",
            spec.max_deliver
        )),
        Err(_) => Settle::Retry(spec.pause_after(attempt)),
    }
}

/// Settles one delivery at its broker. Implemented by each bus.
pub trait Acker: Send + 'static {
    /// The receiver committed it.
    fn ack(self: Box<Self>) -> BoxFuture<'static, Result<(), BusError>>;
    /// Deliver it again after `pause`.
    fn retry(self: Box<Self>, pause: Duration) -> BoxFuture<'static, Result<(), BusError>>;
    /// Store it in the consumer's dead letters with `reason`, then acknowledge it (only once the
    /// dead letter is confirmed: a failure leaves it to be delivered again).
    fn dead_letter(self: Box<Self>, reason: String) -> BoxFuture<'static, Result<(), BusError>>;
}

/// One signal handed to a consumer, to be settled exactly once.
pub struct Delivered {
    /// The signal.
    pub signal: Signal,
    /// Its sequence number on the bus (0 on a bus that numbers nothing).
    pub sequence: u64,
    /// How many times it has been delivered to this consumer, this one included (1-based).
    pub attempt: u32,
    acker: Box<dyn Acker>,
}

impl std::fmt::Debug for Delivered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivered")
            .field("signal", &self.signal.id())
            .field("sequence", &self.sequence)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

impl Delivered {
    /// A delivery settled through `acker`.
    pub fn new(signal: Signal, sequence: u64, attempt: u32, acker: Box<dyn Acker>) -> Self {
        Self {
            signal,
            sequence,
            attempt,
            acker,
        }
    }

    /// Carries out `decision`.
    pub async fn settle(self, decision: Settle) -> Result<(), BusError> {
        match decision {
            Settle::Ack => self.acker.ack().await,
            Settle::Retry(pause) => self.acker.retry(pause).await,
            Settle::DeadLetter(reason) => self.acker.dead_letter(reason).await,
        }
    }
}

/// A consumer's stream of deliveries.
pub trait Inbox: Send + 'static {
    /// The next delivery; waits while there is none. `None` once the consumer ended (the bus
    /// closed or its consumer was deleted). An `Err` is a failure the consumer may outlive (it
    /// goes on reconnecting); a message that is not a signal never comes out here: the bus
    /// dead-letters it itself.
    fn next(&mut self) -> BoxFuture<'_, Option<Result<Delivered, BusError>>>;
}

/// A broker the runtime publishes signals to and consumes them from.
pub trait SignalBus: Send + Sync + 'static {
    /// Publishes `signal`; resolves once the broker confirmed it holds it.
    fn publish<'a>(&'a self, signal: &'a Signal) -> BoxFuture<'a, Result<Published, BusError>>;

    /// Starts, or resumes, the consumer `spec.name`.
    fn consume<'a>(
        &'a self,
        spec: &'a ConsumerSpec,
    ) -> BoxFuture<'a, Result<Box<dyn Inbox>, BusError>>;

    /// A short name for logs and spans (`"local"`, `"jetstream"`).
    fn kind(&self) -> &'static str;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ConsumerSpec {
        ConsumerSpec::new("c", Pattern::new("a.*").unwrap_or_else(|e| panic!("{e}")))
            .with_max_deliver(3)
            .with_backoff(vec![Duration::from_millis(10), Duration::from_millis(50)])
    }

    #[test]
    fn a_handled_delivery_is_acknowledged_whatever_its_attempt() {
        assert_eq!(settle(Ok(()), 1, &spec()), Settle::Ack);
        assert_eq!(settle(Ok(()), 9, &spec()), Settle::Ack);
    }

    #[test]
    fn a_failed_delivery_is_retried_after_its_pause_then_dead_lettered() {
        let spec = spec();
        assert_eq!(
            settle(Err("boom"), 1, &spec),
            Settle::Retry(Duration::from_millis(10))
        );
        assert_eq!(
            settle(Err("boom"), 2, &spec),
            Settle::Retry(Duration::from_millis(50))
        );
        assert_eq!(
            settle(Err("boom"), 3, &spec),
            Settle::DeadLetter("failed 3 of 3 deliveries: boom".into())
        );
    }

    #[test]
    fn the_last_pause_repeats_and_no_pauses_means_at_once() {
        let spec = spec().with_max_deliver(10);
        assert_eq!(spec.pause_after(7), Duration::from_millis(50));
        assert_eq!(spec.pause_after(0), Duration::from_millis(10));
        let eager = spec.with_backoff(Vec::new());
        assert_eq!(settle(Err("x"), 4, &eager), Settle::Retry(Duration::ZERO));
    }

    #[test]
    fn one_delivery_at_least() {
        let spec = spec().with_max_deliver(0);
        assert_eq!(spec.max_deliver, 1);
        assert!(matches!(settle(Err("x"), 1, &spec), Settle::DeadLetter(_)));
    }
}
