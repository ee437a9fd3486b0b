//! [`LocalBus`]: the in-process bus behind the [`SignalBus`] trait — the embedded default.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use motet_signals::{Bus, Delivery, Signal, Subscription};
use tokio::sync::mpsc;

#[cfg(doc)]
use super::StartAt;
use super::{Acker, BusError, ConsumerSpec, Delivered, Inbox, Published, SignalBus};

/// A dead letter: the signal and why it was given up.
pub type DeadLetter = (Signal, String);

/// The in-process [`Bus`] as a [`SignalBus`]: consumers get acknowledgements, redelivery with
/// backoff and dead letters, but nothing outlives the process, a consumer receives only what is
/// published while it runs (any [`StartAt`] is taken as [`StartAt::New`]), and a consumer whose
/// `max_in_flight` deliveries are all unsettled misses what is published meanwhile (the
/// in-process bus never blocks a publisher; each miss is counted in [`Bus::stats`]). Dead
/// letters are kept in memory, per consumer, and logged.
#[derive(Clone, Default)]
pub struct LocalBus {
    bus: Bus,
    dead: Arc<Mutex<Vec<(String, DeadLetter)>>>,
}

impl std::fmt::Debug for LocalBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBus").field("bus", &self.bus).finish()
    }
}

impl LocalBus {
    /// A consumer-capable view of `bus` (clones share its subscriptions).
    pub fn new(bus: Bus) -> Self {
        Self {
            bus,
            dead: Arc::default(),
        }
    }

    /// The in-process bus underneath.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// The signals consumer `name` gave up on, oldest first, with the reasons.
    pub fn dead_letters(&self, name: &str) -> Vec<DeadLetter> {
        self.dead
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(consumer, _)| consumer == name)
            .map(|(_, letter)| letter.clone())
            .collect()
    }
}

impl SignalBus for LocalBus {
    fn publish<'a>(&'a self, signal: &'a Signal) -> BoxFuture<'a, Result<Published, BusError>> {
        self.bus.publish(signal);
        futures::future::ready(Ok(Published::default())).boxed()
    }

    fn consume<'a>(
        &'a self,
        spec: &'a ConsumerSpec,
    ) -> BoxFuture<'a, Result<Box<dyn Inbox>, BusError>> {
        let (tx, rx) = mpsc::channel::<(Signal, u32)>(spec.max_in_flight.max(1));
        let first = tx.clone();
        let subscription = self
            .bus
            .subscribe(spec.pattern.clone(), move |signal: &Signal| {
                match first.try_send((signal.clone(), 1)) {
                    Ok(()) => Delivery::Delivered,
                    Err(mpsc::error::TrySendError::Full(_)) => Delivery::Full,
                    Err(mpsc::error::TrySendError::Closed(_)) => Delivery::Closed,
                }
            });
        let inbox = LocalInbox {
            rx,
            again: tx,
            name: spec.name.clone(),
            dead: Arc::clone(&self.dead),
            _subscription: subscription,
        };
        futures::future::ready(Ok(Box::new(inbox) as Box<dyn Inbox>)).boxed()
    }

    fn kind(&self) -> &'static str {
        "local"
    }
}

struct LocalInbox {
    rx: mpsc::Receiver<(Signal, u32)>,
    again: mpsc::Sender<(Signal, u32)>,
    name: String,
    dead: Arc<Mutex<Vec<(String, DeadLetter)>>>,
    _subscription: Subscription,
}

impl Inbox for LocalInbox {
    fn next(&mut self) -> BoxFuture<'_, Option<Result<Delivered, BusError>>> {
        async move {
            let (signal, attempt) = self.rx.recv().await?;
            let acker = LocalAcker {
                signal: signal.clone(),
                attempt,
                again: self.again.clone(),
                name: self.name.clone(),
                dead: Arc::clone(&self.dead),
            };
            Some(Ok(Delivered::new(signal, 0, attempt, Box::new(acker))))
        }
        .boxed()
    }
}

struct LocalAcker {
    signal: Signal,
    attempt: u32,
    again: mpsc::Sender<(Signal, u32)>,
    name: String,
    dead: Arc<Mutex<Vec<(String, DeadLetter)>>>,
}

impl Acker for LocalAcker {
    fn ack(self: Box<Self>) -> BoxFuture<'static, Result<(), BusError>> {
        futures::future::ready(Ok(())).boxed()
    }

    fn retry(self: Box<Self>, pause: Duration) -> BoxFuture<'static, Result<(), BusError>> {
        // The redelivery waits on a task of its own, so the consumer goes on meanwhile.
        tokio::spawn(async move {
            tokio::time::sleep(pause).await;
            if self
                .again
                .send((self.signal.clone(), self.attempt.saturating_add(1)))
                .await
                .is_err()
            {
                tracing::warn!(consumer = %self.name, id = %self.signal.id().as_str(),
                    "a redelivery was dropped: its consumer ended");
            }
        });
        futures::future::ready(Ok(())).boxed()
    }

    fn dead_letter(self: Box<Self>, reason: String) -> BoxFuture<'static, Result<(), BusError>> {
        tracing::warn!(consumer = %self.name, id = %self.signal.id().as_str(), %reason,
            "signal dead-lettered");
        self.dead
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((self.name.clone(), (self.signal.clone(), reason)));
        futures::future::ready(Ok(())).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::{Settle, settle};
    use motet_signals::Pattern;

    fn signal(n: u32) -> Signal {
        Signal::builder("work.item", "test")
            .with_id(format!("s{n}"))
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn a_failed_delivery_comes_again_then_goes_to_the_dead_letters() {
        let bus = LocalBus::default();
        let pattern = Pattern::new("work.*").unwrap_or_else(|e| panic!("{e}"));
        let spec = ConsumerSpec::new("w", pattern)
            .with_max_deliver(2)
            .with_backoff(vec![Duration::from_millis(5)]);
        let mut inbox = bus.consume(&spec).await.unwrap_or_else(|e| panic!("{e}"));
        bus.publish(&signal(1))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for expected in 1..=2 {
            let delivered = inbox
                .next()
                .await
                .unwrap_or_else(|| panic!("ended"))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(delivered.attempt, expected);
            let decision = settle(Err("nope"), delivered.attempt, &spec);
            assert_eq!(
                matches!(decision, Settle::DeadLetter(_)),
                expected == 2,
                "{decision:?}"
            );
            delivered
                .settle(decision)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let dead = bus.dead_letters("w");
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].0.id().as_str(), "s1");
        assert!(dead[0].1.contains("nope"), "{}", dead[0].1);
        assert!(bus.dead_letters("other").is_empty());
    }
}
