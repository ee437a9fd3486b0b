//! The Bus: delivery, order, unsubscribing (also from inside a callback), full and closed
//! subscribers.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use motet_signals::{
    Bus, BusStats, Delivery, Pattern, PublishOutcome, Signal, Subscription, SubscriptionStats,
};

fn signal(ty: &str) -> Signal {
    Signal::builder(ty, "test").build().unwrap()
}

fn pattern(p: &str) -> Pattern {
    Pattern::new(p).unwrap()
}

/// A callback that appends `name` to a shared log.
fn recorder(log: &Arc<Mutex<Vec<String>>>, name: &str) -> impl Fn(&Signal) -> Delivery + use<> {
    let log = Arc::clone(log);
    let name = name.to_owned();
    move |s: &Signal| {
        log.lock()
            .unwrap()
            .push(format!("{name}:{}", s.signal_type()));
        Delivery::Delivered
    }
}

#[test]
fn delivers_to_matching_subscribers_only() {
    let bus = Bus::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let _coordinator = bus.subscribe(pattern("task.**"), recorder(&log, "coord"));
    let _worker = bus.subscribe(pattern("task.*.assigned"), recorder(&log, "worker"));
    let _llm = bus.subscribe(pattern("llm.result"), recorder(&log, "llm"));

    let outcome = bus.publish(&signal("task.7.assigned"));
    assert_eq!(
        outcome,
        PublishOutcome {
            matched: 2,
            delivered: 2,
            ..Default::default()
        }
    );
    bus.publish(&signal("task.7.done"));
    bus.publish(&signal("agent.request"));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "coord:task.7.assigned",
            "worker:task.7.assigned",
            "coord:task.7.done"
        ]
    );
    let stats = bus.stats();
    assert_eq!(stats.published, 3);
    assert_eq!(stats.delivered, 3);
    assert_eq!(stats.subscribers, 3);
}

#[test]
fn priority_order_then_subscription_order() {
    let bus = Bus::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let _a = bus.subscribe(pattern("**"), recorder(&log, "a"));
    let _b = bus.subscribe_with_priority(pattern("x.*"), 10, recorder(&log, "b"));
    let _c = bus.subscribe(pattern("x.y"), recorder(&log, "c"));
    let _d = bus.subscribe_with_priority(pattern("x.**"), 10, recorder(&log, "d"));
    let _e = bus.subscribe_with_priority(pattern("x.y"), -1, recorder(&log, "e"));
    bus.publish(&signal("x.y"));
    assert_eq!(
        *log.lock().unwrap(),
        ["b:x.y", "d:x.y", "a:x.y", "c:x.y", "e:x.y"]
    );
}

#[test]
fn sync_channel_receives_clones_in_order() {
    let bus = Bus::new();
    let (tx, rx) = mpsc::sync_channel(4);
    let sub = bus.subscribe(pattern("llm.*"), tx);
    let first = signal("llm.result");
    bus.publish(&first);
    bus.publish(&signal("llm.failed"));
    assert_eq!(rx.try_recv().unwrap(), first);
    assert_eq!(rx.try_recv().unwrap().signal_type().as_str(), "llm.failed");
    assert_eq!(
        sub.stats(),
        SubscriptionStats {
            delivered: 2,
            ..Default::default()
        }
    );
}

#[test]
fn dropping_or_unsubscribing_ends_delivery() {
    let bus = Bus::new();
    let count = Arc::new(AtomicUsize::new(0));
    let counter = |count: &Arc<AtomicUsize>| {
        let count = Arc::clone(count);
        move |_: &Signal| {
            count.fetch_add(1, Ordering::Relaxed);
            Delivery::Delivered
        }
    };
    let kept = bus.subscribe(pattern("a"), counter(&count));
    let dropped = bus.subscribe(pattern("a"), counter(&count));
    bus.publish(&signal("a"));
    assert_eq!(count.load(Ordering::Relaxed), 2);
    drop(dropped);
    bus.publish(&signal("a"));
    assert_eq!(count.load(Ordering::Relaxed), 3);
    let final_stats = kept.unsubscribe();
    assert_eq!(final_stats.delivered, 2);
    bus.publish(&signal("a"));
    assert_eq!(count.load(Ordering::Relaxed), 3);
    assert_eq!(bus.stats().subscribers, 0);
}

#[test]
fn unsubscribe_and_subscribe_from_inside_a_callback_do_not_deadlock() {
    let bus = Bus::new();
    let slot: Arc<Mutex<Option<Subscription>>> = Arc::new(Mutex::new(None));
    let late: Arc<Mutex<Vec<Subscription>>> = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let sub = {
        let (slot, late, calls, bus2) = (slot.clone(), late.clone(), calls.clone(), bus.clone());
        bus.subscribe(pattern("once.**"), move |_: &Signal| {
            calls.fetch_add(1, Ordering::Relaxed);
            // Ends its own subscription and adds a new one while the bus is publishing.
            drop(slot.lock().unwrap().take());
            late.lock()
                .unwrap()
                .push(bus2.subscribe(pattern("once.*"), |_: &Signal| Delivery::Delivered));
            Delivery::Delivered
        })
    };
    *slot.lock().unwrap() = Some(sub);
    let log = Arc::new(Mutex::new(Vec::new()));
    let _after = bus.subscribe(pattern("once.x"), recorder(&log, "after"));

    bus.publish(&signal("once.x"));
    bus.publish(&signal("once.x"));
    assert_eq!(
        calls.load(Ordering::Relaxed),
        1,
        "the self-unsubscribed callback ran once"
    );
    assert_eq!(*log.lock().unwrap(), ["after:once.x", "after:once.x"]);
    assert_eq!(late.lock().unwrap().len(), 1);
    assert_eq!(late.lock().unwrap()[0].stats().delivered, 1);
}

#[test]
fn a_full_subscriber_is_skipped_and_counted_while_others_receive() {
    let bus = Bus::new();
    let (tx, rx) = mpsc::sync_channel(2);
    let full = bus.subscribe(pattern("tick"), tx);
    let received = Arc::new(AtomicUsize::new(0));
    let other = {
        let received = Arc::clone(&received);
        bus.subscribe(pattern("**"), move |_: &Signal| {
            received.fetch_add(1, Ordering::Relaxed);
            Delivery::Delivered
        })
    };
    for _ in 0..5 {
        bus.publish(&signal("tick"));
    }
    assert_eq!(received.load(Ordering::Relaxed), 5);
    assert_eq!(other.stats().delivered, 5);
    assert_eq!(
        full.stats(),
        SubscriptionStats {
            delivered: 2,
            dropped_full: 3,
            dropped_closed: 0
        }
    );
    assert!(full.is_active(), "a full subscriber stays subscribed");
    assert_eq!(rx.try_iter().count(), 2);
    // Drained, it receives again.
    bus.publish(&signal("tick"));
    assert_eq!(full.stats().delivered, 3);
    assert_eq!(
        bus.stats(),
        BusStats {
            published: 6,
            delivered: 9,
            dropped_full: 3,
            dropped_closed: 0,
            subscribers: 2
        }
    );
}

#[test]
fn a_closed_subscriber_is_counted_and_removed() {
    let bus = Bus::new();
    let (tx, rx) = mpsc::sync_channel(8);
    let closed = bus.subscribe(pattern("a.*"), tx);
    let log = Arc::new(Mutex::new(Vec::new()));
    let _open = bus.subscribe(pattern("a.*"), recorder(&log, "open"));
    bus.publish(&signal("a.1"));
    drop(rx);
    let outcome = bus.publish(&signal("a.2"));
    assert_eq!(
        outcome,
        PublishOutcome {
            matched: 2,
            delivered: 1,
            dropped_full: 0,
            dropped_closed: 1
        }
    );
    assert!(!closed.is_active());
    assert_eq!(
        closed.stats(),
        SubscriptionStats {
            delivered: 1,
            dropped_full: 0,
            dropped_closed: 1
        }
    );
    assert_eq!(bus.stats().subscribers, 1);
    // No longer offered anything.
    assert_eq!(bus.publish(&signal("a.3")).matched, 1);
    assert_eq!(closed.stats().dropped_closed, 1);
    assert_eq!(*log.lock().unwrap(), ["open:a.1", "open:a.2", "open:a.3"]);
}

#[test]
fn publishing_from_several_threads_counts_every_delivery() {
    let bus = Bus::new();
    let count = Arc::new(AtomicUsize::new(0));
    let _sub = {
        let count = Arc::clone(&count);
        bus.subscribe(pattern("t.**"), move |_: &Signal| {
            count.fetch_add(1, Ordering::Relaxed);
            Delivery::Delivered
        })
    };
    std::thread::scope(|scope| {
        for i in 0..4 {
            let bus = bus.clone();
            scope.spawn(move || {
                let s = signal(&format!("t.{i}"));
                for _ in 0..1000 {
                    bus.publish(&s);
                }
            });
        }
    });
    assert_eq!(count.load(Ordering::Relaxed), 4000);
    assert_eq!(bus.stats().delivered, 4000);
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_sender_is_a_bounded_target() {
    let bus = Bus::new();
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let sub = bus.subscribe(pattern("a"), tx);
    bus.publish(&signal("a"));
    bus.publish(&signal("a"));
    assert_eq!(
        sub.stats(),
        SubscriptionStats {
            delivered: 1,
            dropped_full: 1,
            dropped_closed: 0
        }
    );
    assert!(rx.try_recv().is_ok());
    rx.close();
    bus.publish(&signal("a"));
    assert!(!sub.is_active());
}

/// Counts `WARN` events; just enough of a `tracing` subscriber to see what the bus logs.
struct WarnCounter(Arc<AtomicUsize>);

impl tracing::Subscriber for WarnCounter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn drops_are_logged_on_the_first_and_then_every_power_of_two() {
    let warnings = Arc::new(AtomicUsize::new(0));
    tracing::subscriber::with_default(WarnCounter(Arc::clone(&warnings)), || {
        let bus = Bus::new();
        let full = bus.subscribe(pattern("x"), |_: &Signal| Delivery::Full);
        for _ in 0..9 {
            bus.publish(&signal("x"));
        }
        assert_eq!(full.stats().dropped_full, 9);
        // Drops 1, 2, 4 and 8.
        assert_eq!(warnings.load(Ordering::Relaxed), 4);

        let (tx, rx) = mpsc::sync_channel(1);
        let _closed = bus.subscribe(pattern("y"), tx);
        drop(rx);
        bus.publish(&signal("y"));
        assert_eq!(
            warnings.load(Ordering::Relaxed),
            5,
            "a closed subscriber is logged once"
        );
    });
}

#[test]
fn has_subscribers_for_follows_subscriptions() {
    let bus = Bus::new();
    assert!(!bus.has_subscribers_for("llm.delta"));
    let sub = bus.subscribe(pattern("llm.*"), |_: &Signal| Delivery::Delivered);
    assert!(bus.has_subscribers_for("llm.delta"));
    assert!(!bus.has_subscribers_for("tool.result"));
    assert!(!bus.has_subscribers_for("not a type"));
    drop(sub);
    assert!(!bus.has_subscribers_for("llm.delta"));
}

#[test]
fn a_predicate_narrows_a_subscription_to_the_signals_it_accepts() {
    let bus = Bus::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let urgent = motet_signals::Predicate::new(|s: &Signal| {
        s.data_as::<serde_json::Value>()
            .is_ok_and(|d| d["urgent"] == serde_json::json!(true))
    });
    let _pager = bus.subscribe_when(pattern("task.**"), 10, urgent, recorder(&log, "pager"));
    let _all = bus.subscribe(pattern("task.**"), recorder(&log, "all"));
    let data = |urgent: bool| {
        Signal::builder("task.7.failed", "test")
            .with_json_data(serde_json::json!({ "urgent": urgent }))
            .build()
            .unwrap()
    };
    let outcome = bus.publish(&data(true));
    assert_eq!((outcome.matched, outcome.delivered), (2, 2));
    let outcome = bus.publish(&data(false));
    assert_eq!((outcome.matched, outcome.delivered), (1, 1));
    // The predicate's subscription has the higher priority: it hears an urgent signal first.
    assert_eq!(
        *log.lock().unwrap(),
        [
            "pager:task.7.failed",
            "all:task.7.failed",
            "all:task.7.failed"
        ]
    );
}

#[test]
fn router_predicates_filter_route_signal_but_not_route() {
    let mut router = motet_signals::Router::new();
    let from_billing = motet_signals::Predicate::new(|s: &Signal| s.source() == "billing");
    router.add(&pattern("invoice.*"), 0, "any");
    router.add_when(&pattern("invoice.*"), 5, from_billing, "billing");
    let billing = Signal::builder("invoice.paid", "billing").build().unwrap();
    let other = Signal::builder("invoice.paid", "crm").build().unwrap();
    let found: Vec<&&str> = router.route_signal(&billing).collect();
    assert_eq!(found, [&"billing", &"any"]);
    let found: Vec<&&str> = router.route_signal(&other).collect();
    assert_eq!(found, [&"any"]);
    // By type alone, every candidate.
    assert_eq!(router.route(billing.signal_type()).count(), 2);
}
