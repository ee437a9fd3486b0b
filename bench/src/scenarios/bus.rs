//! `bus`: publishes fanned out to 1,000 wildcard subscribers, reported as deliveries per second.
//!
//! Subscribers listen on `bench.t{a}.*`, `bench.*.e{b}`, `bench.**` and a few exact types
//! (seeded `fastrand`); signals are `bench.t{a}.e{b}`, so each publish reaches about 140 of them.
//! Variants: callbacks that count atomically (`subscribers_1000`), bounded std channels drained
//! by another thread (`subscribers_1000_channels`; each delivery clones the signal, one reference count), and the
//! floor: the same callbacks called from a precomputed list, with no routing and no bus.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use motet_signals::{Bus, Delivery, Pattern, Signal, Subscription};

use crate::report::{Report, round2};

const SUBSCRIBERS: usize = 1_000;
const PUBLISHES: u64 = 100_000;
const SEED: u64 = 0xb05;

fn patterns() -> Vec<Pattern> {
    let mut rng = fastrand::Rng::with_seed(SEED);
    (0..SUBSCRIBERS)
        .filter_map(|_| {
            let (a, b) = (rng.u8(..10), rng.u8(..10));
            let text = match rng.u8(..100) {
                0..45 => format!("bench.t{a}.*"),
                45..90 => format!("bench.*.e{b}"),
                90..95 => "bench.**".to_owned(),
                _ => format!("bench.t{a}.e{b}"),
            };
            Pattern::new(text).ok()
        })
        .collect()
}

fn signals() -> Vec<Signal> {
    (0..100)
        .filter_map(|i| {
            Signal::builder(format!("bench.t{}.e{}", i / 10, i % 10), "bench")
                .with_data(i)
                .build()
                .ok()
        })
        .collect()
}

fn counting(
    count: &Arc<AtomicU64>,
) -> impl Fn(&Signal) -> Delivery + Send + Sync + 'static + use<> {
    let count = Arc::clone(count);
    move |_: &Signal| {
        count.fetch_add(1, Ordering::Relaxed);
        Delivery::Delivered
    }
}

fn report(variant: &str, publishes: u64, elapsed: Duration, deliveries: u64) -> Report {
    Report::new("bus", variant, publishes, elapsed)
        .with("subscribers", SUBSCRIBERS)
        .with("deliveries", deliveries)
        .with(
            "deliveries_per_publish",
            round2(deliveries as f64 / publishes as f64),
        )
        .with(
            "deliveries_per_sec",
            (deliveries as f64 / elapsed.as_secs_f64().max(1e-9)).round(),
        )
}

fn callbacks(signals: &[Signal]) -> Report {
    let bus = Bus::new();
    let count = Arc::new(AtomicU64::new(0));
    let _subs: Vec<Subscription> = patterns()
        .into_iter()
        .map(|p| bus.subscribe(p, counting(&count)))
        .collect();
    for signal in signals {
        bus.publish(signal);
    }
    count.store(0, Ordering::Relaxed);
    let start = Instant::now();
    for i in 0..PUBLISHES as usize {
        bus.publish(black_box(&signals[i % signals.len()]));
    }
    let elapsed = start.elapsed();
    report(
        "subscribers_1000",
        PUBLISHES,
        elapsed,
        count.load(Ordering::Relaxed),
    )
}

fn channels(signals: &[Signal]) -> Report {
    let bus = Bus::new();
    let mut receivers = Vec::with_capacity(SUBSCRIBERS);
    let mut subs = Vec::with_capacity(SUBSCRIBERS);
    for pattern in patterns() {
        let (tx, rx) = mpsc::sync_channel::<Signal>(1024);
        subs.push(bus.subscribe(pattern, tx));
        receivers.push(rx);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let drainer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut received = 0u64;
            loop {
                let stopping = stop.load(Ordering::Acquire);
                let mut any = false;
                for rx in &receivers {
                    for signal in rx.try_iter() {
                        black_box(&signal);
                        received += 1;
                        any = true;
                    }
                }
                if stopping && !any {
                    return received;
                }
                if !any {
                    std::thread::yield_now();
                }
            }
        })
    };
    let start = Instant::now();
    for i in 0..PUBLISHES as usize {
        bus.publish(black_box(&signals[i % signals.len()]));
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Release);
    let received = drainer.join().unwrap_or(0);
    let stats = bus.stats();
    report(
        "subscribers_1000_channels",
        PUBLISHES,
        elapsed,
        stats.delivered,
    )
    .with("received", received)
    .with("dropped_full", stats.dropped_full)
}

/// A subscriber callback, as the floor calls it.
type Callback = dyn Fn(&Signal) -> Delivery;

fn floor(signals: &[Signal]) -> Report {
    let count = Arc::new(AtomicU64::new(0));
    let patterns = patterns();
    let targets: Vec<Box<Callback>> = patterns
        .iter()
        .map(|_| Box::new(counting(&count)) as Box<Callback>)
        .collect();
    // Who gets which signal, decided before the clock starts.
    let plan: Vec<Vec<usize>> = signals
        .iter()
        .map(|s| {
            (0..patterns.len())
                .filter(|&i| patterns[i].matches(s.signal_type()))
                .collect()
        })
        .collect();
    let start = Instant::now();
    for i in 0..PUBLISHES as usize {
        let k = i % signals.len();
        let signal = black_box(&signals[k]);
        for &t in &plan[k] {
            black_box(targets[t](signal));
        }
    }
    let elapsed = start.elapsed();
    report(
        "floor_precomputed_calls",
        PUBLISHES,
        elapsed,
        count.load(Ordering::Relaxed),
    )
}

/// Runs the scenario.
pub(crate) fn run() -> Vec<Report> {
    let signals = signals();
    let bus = callbacks(&signals);
    let floor = floor(&signals);
    let ratio = round2(bus.ns_per_op() / floor.ns_per_op().max(f64::MIN_POSITIVE));
    vec![bus.with("ratio_to_floor", ratio), channels(&signals), floor]
}
