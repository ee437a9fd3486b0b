//! [`Bus`]: in-process publish/subscribe over signal types, with bounded, counted delivery.
//!
//! # Delivery policy
//! - [`Bus::publish`] hands the signal to every subscription whose pattern matches its type, in
//!   router order: higher priority first, then subscription order.
//! - Delivery never blocks. Each target's [`SubscriberTarget::deliver`] must return at once
//!   (channels use `try_send`). A target that is full is skipped for this signal; the publisher
//!   and the other subscribers carry on.
//! - Nothing is dropped silently. Every signal a subscription could not take is counted in its
//!   [`SubscriptionStats`] (`dropped_full`, `dropped_closed`) and in the bus's [`BusStats`], and
//!   logged with `tracing::warn!` on the first drop and then at every power of two, so a stuck
//!   subscriber is visible without flooding the log.
//! - A target that reports [`Delivery::Closed`] is removed from the bus.
//! - Dropping a [`Subscription`] (or calling [`Subscription::unsubscribe`]) ends it. Signals
//!   published after that are not delivered to it; a publish already in progress may still
//!   deliver one.
//!
//! The route table sits behind a `std::sync::RwLock`. `publish` takes the read lock only to
//! collect the matching subscriptions, then delivers outside it, so subscribing or unsubscribing
//! during a publish, even from inside a callback, cannot deadlock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use crate::{Pattern, RouteId, Router, Signal};

/// What happened when a target was offered a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The target took the signal.
    Delivered,
    /// The target had no room; the signal was not delivered to it.
    Full,
    /// The target is gone and will never take a signal again; the bus removes it.
    Closed,
}

/// Something a [`Bus`] can deliver signals to.
///
/// `deliver` must not block: a bounded queue that is full answers [`Delivery::Full`].
/// Implemented for callbacks `Fn(&Signal) -> Delivery`, for `std::sync::mpsc::SyncSender<Signal>`
/// and, with the `tokio` feature, for `tokio::sync::mpsc::Sender<Signal>`.
pub trait SubscriberTarget: Send + Sync + 'static {
    /// Offers `signal` to the target.
    fn deliver(&self, signal: &Signal) -> Delivery;
}

impl<F> SubscriberTarget for F
where
    F: Fn(&Signal) -> Delivery + Send + Sync + 'static,
{
    fn deliver(&self, signal: &Signal) -> Delivery {
        self(signal)
    }
}

impl SubscriberTarget for std::sync::mpsc::SyncSender<Signal> {
    fn deliver(&self, signal: &Signal) -> Delivery {
        match self.try_send(signal.clone()) {
            Ok(()) => Delivery::Delivered,
            Err(std::sync::mpsc::TrySendError::Full(_)) => Delivery::Full,
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => Delivery::Closed,
        }
    }
}

#[cfg(feature = "tokio")]
impl SubscriberTarget for tokio::sync::mpsc::Sender<Signal> {
    fn deliver(&self, signal: &Signal) -> Delivery {
        match self.try_send(signal.clone()) {
            Ok(()) => Delivery::Delivered,
            Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => Delivery::Full,
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => Delivery::Closed,
        }
    }
}

/// What one subscription has received and missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubscriptionStats {
    /// Signals the target took.
    pub delivered: u64,
    /// Signals skipped because the target was full.
    pub dropped_full: u64,
    /// Signals the target could not take because it was closed.
    pub dropped_closed: u64,
}

/// Totals over a bus's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BusStats {
    /// Calls to [`Bus::publish`].
    pub published: u64,
    /// Deliveries that succeeded, over all subscriptions.
    pub delivered: u64,
    /// Deliveries skipped because a target was full.
    pub dropped_full: u64,
    /// Deliveries that failed because a target was closed.
    pub dropped_closed: u64,
    /// Subscriptions currently on the bus.
    pub subscribers: usize,
}

/// What one [`Bus::publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PublishOutcome {
    /// Subscriptions whose pattern matched.
    pub matched: usize,
    /// Of those, how many took the signal.
    pub delivered: usize,
    /// How many were full.
    pub dropped_full: usize,
    /// How many were closed (and have been removed).
    pub dropped_closed: usize,
}

#[derive(Default)]
struct Counters {
    delivered: AtomicU64,
    dropped_full: AtomicU64,
    dropped_closed: AtomicU64,
}

struct Subscriber {
    route: RouteId,
    pattern: Pattern,
    target: Box<dyn SubscriberTarget>,
    counters: Counters,
    active: AtomicBool,
}

#[derive(Default)]
struct Inner {
    routes: RwLock<Router<Arc<Subscriber>>>,
    published: AtomicU64,
    delivered: AtomicU64,
    dropped_full: AtomicU64,
    dropped_closed: AtomicU64,
}

impl Inner {
    /// Takes `route` off the bus. The handler is returned so the caller drops it after the
    /// lock is released (a target's `Drop` may itself use the bus).
    fn remove(&self, route: RouteId) -> Option<Arc<Subscriber>> {
        self.routes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(route)
    }
}

/// In-process publish/subscribe: signals go to every subscription whose pattern matches.
///
/// Cheap to clone; clones share the same subscriptions.
///
/// Delivery policy: `publish` never blocks; a full target is skipped for that signal and the
/// others still receive it; every signal a subscription could not take is counted
/// ([`Subscription::stats`], [`Bus::stats`]) and logged with `tracing::warn!` on the first drop
/// and then every power of two; a closed target is removed. Delivery happens outside the route
/// table's lock, so (un)subscribing from inside a callback cannot deadlock.
#[derive(Clone, Default)]
pub struct Bus {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus").field("stats", &self.stats()).finish()
    }
}

impl Bus {
    /// An empty bus.
    pub fn new() -> Self {
        Self::default()
    }

    /// Delivers signals matching `pattern` to `target` until the returned [`Subscription`] is
    /// dropped or unsubscribed. Priority 0.
    pub fn subscribe(&self, pattern: Pattern, target: impl SubscriberTarget) -> Subscription {
        self.subscribe_with_priority(pattern, 0, target)
    }

    /// As [`Bus::subscribe`], delivered before subscriptions of lower `priority`.
    pub fn subscribe_with_priority(
        &self,
        pattern: Pattern,
        priority: i32,
        target: impl SubscriberTarget,
    ) -> Subscription {
        self.subscribe_route(pattern, priority, None, target)
    }

    /// As [`Bus::subscribe_with_priority`], for the signals matching `pattern` that `when`
    /// accepts too (a condition on the data, source or extensions; called once per signal of a
    /// matching type, on the publisher's thread, so it should be quick).
    pub fn subscribe_when(
        &self,
        pattern: Pattern,
        priority: i32,
        when: crate::Predicate,
        target: impl SubscriberTarget,
    ) -> Subscription {
        self.subscribe_route(pattern, priority, Some(when), target)
    }

    fn subscribe_route(
        &self,
        pattern: Pattern,
        priority: i32,
        when: Option<crate::Predicate>,
        target: impl SubscriberTarget,
    ) -> Subscription {
        let mut routes = self
            .inner
            .routes
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // The subscriber records its own route id (to remove itself once closed); under the
        // write lock the id `add` will hand out is known in advance.
        let subscriber = Arc::new(Subscriber {
            route: routes.next_route_id(),
            pattern: pattern.clone(),
            target: Box::new(target),
            counters: Counters::default(),
            active: AtomicBool::new(true),
        });
        let route = match when {
            Some(when) => routes.add_when(&pattern, priority, when, Arc::clone(&subscriber)),
            None => routes.add(&pattern, priority, Arc::clone(&subscriber)),
        };
        drop(routes);
        Subscription {
            bus: Arc::downgrade(&self.inner),
            route,
            subscriber,
        }
    }

    /// Delivers `signal` to every matching subscription, in priority then subscription order.
    pub fn publish(&self, signal: &Signal) -> PublishOutcome {
        let targets: Vec<Arc<Subscriber>> = {
            let routes = self
                .inner
                .routes
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            routes.route_signal(signal).cloned().collect()
        };
        let mut outcome = PublishOutcome {
            matched: targets.len(),
            ..PublishOutcome::default()
        };
        let mut closed = Vec::new();
        for (index, subscriber) in targets.iter().enumerate() {
            if !subscriber.active.load(Ordering::Acquire) {
                continue;
            }
            match subscriber.target.deliver(signal) {
                Delivery::Delivered => {
                    subscriber
                        .counters
                        .delivered
                        .fetch_add(1, Ordering::Relaxed);
                    outcome.delivered += 1;
                }
                Delivery::Full => {
                    let dropped = subscriber
                        .counters
                        .dropped_full
                        .fetch_add(1, Ordering::Relaxed)
                        + 1;
                    outcome.dropped_full += 1;
                    if dropped.is_power_of_two() {
                        tracing::warn!(
                            pattern = subscriber.pattern.as_str(),
                            signal_type = signal.signal_type().as_str(),
                            dropped_full = dropped,
                            "bus subscriber is full; signal skipped"
                        );
                    }
                }
                Delivery::Closed => {
                    subscriber
                        .counters
                        .dropped_closed
                        .fetch_add(1, Ordering::Relaxed);
                    outcome.dropped_closed += 1;
                    if subscriber.active.swap(false, Ordering::AcqRel) {
                        tracing::warn!(
                            pattern = subscriber.pattern.as_str(),
                            signal_type = signal.signal_type().as_str(),
                            "bus subscriber is closed; signal dropped and subscription removed"
                        );
                        closed.push(index);
                    }
                }
            }
        }
        let inner = &self.inner;
        inner.published.fetch_add(1, Ordering::Relaxed);
        inner
            .delivered
            .fetch_add(outcome.delivered as u64, Ordering::Relaxed);
        inner
            .dropped_full
            .fetch_add(outcome.dropped_full as u64, Ordering::Relaxed);
        inner
            .dropped_closed
            .fetch_add(outcome.dropped_closed as u64, Ordering::Relaxed);
        for index in closed {
            if let Some(subscriber) = targets.get(index) {
                let removed = inner.remove(subscriber.route);
                drop(removed);
            }
        }
        outcome
    }

    /// Whether any subscription would receive a signal of type `signal_type` (false for a
    /// type that is not valid). Lets a publisher skip building signals nobody listens to.
    pub fn has_subscribers_for(&self, signal_type: &str) -> bool {
        signal_type
            .parse::<crate::SignalType>()
            .is_ok_and(|ty| self.has_subscribers(&ty))
    }

    /// Whether any subscription would receive a signal of this type.
    pub fn has_subscribers(&self, signal_type: &crate::SignalType) -> bool {
        let routes = self
            .inner
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        routes.route(signal_type).next().is_some()
    }

    /// Lifetime totals and the current number of subscriptions.
    pub fn stats(&self) -> BusStats {
        let inner = &self.inner;
        BusStats {
            published: inner.published.load(Ordering::Relaxed),
            delivered: inner.delivered.load(Ordering::Relaxed),
            dropped_full: inner.dropped_full.load(Ordering::Relaxed),
            dropped_closed: inner.dropped_closed.load(Ordering::Relaxed),
            subscribers: inner
                .routes
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .len(),
        }
    }
}

/// A live subscription; dropping it (or [`Subscription::unsubscribe`]) ends it.
#[must_use = "dropping a Subscription unsubscribes at once"]
pub struct Subscription {
    bus: Weak<Inner>,
    route: RouteId,
    subscriber: Arc<Subscriber>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("pattern", &self.subscriber.pattern)
            .field("active", &self.is_active())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Subscription {
    /// The pattern this subscription matches.
    pub fn pattern(&self) -> &Pattern {
        &self.subscriber.pattern
    }

    /// What this subscription has received and missed so far.
    pub fn stats(&self) -> SubscriptionStats {
        let counters = &self.subscriber.counters;
        SubscriptionStats {
            delivered: counters.delivered.load(Ordering::Relaxed),
            dropped_full: counters.dropped_full.load(Ordering::Relaxed),
            dropped_closed: counters.dropped_closed.load(Ordering::Relaxed),
        }
    }

    /// Whether the subscription is still on the bus (false once its target reported closed).
    pub fn is_active(&self) -> bool {
        self.subscriber.active.load(Ordering::Acquire)
    }

    /// Ends the subscription and returns its final stats.
    pub fn unsubscribe(self) -> SubscriptionStats {
        self.stats()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.subscriber.active.store(false, Ordering::Release);
        if let Some(bus) = self.bus.upgrade() {
            let removed = bus.remove(self.route);
            drop(removed);
        }
    }
}
