//! A publisher faster than its consumer (scripts/nats.sh; `skipped:` without a server): the
//! consumer holds at most `max_in_flight` signals while the server keeps the rest, and a full
//! stream refuses a publisher rather than growing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{bus, bus_with, config, next, signal};
use motet_jetstream::StreamLimits;
use motet_runtime::bus::{BusError, ConsumerSpec, Settle, SignalBus, StartAt};
use motet_signals::Pattern;

fn ok<T, E: std::fmt::Display>(result: Result<T, E>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

/// Resident memory of this process in bytes (Linux), for the report; 0 elsewhere.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_holds_at_most_max_in_flight_and_the_server_keeps_the_rest() {
    const TOTAL: usize = 3000;
    const IN_FLIGHT: usize = 16;
    let Some(bus) = bus("slow").await else { return };
    let spec = ConsumerSpec::new(
        "slow",
        Pattern::new("load.*").unwrap_or_else(|e| panic!("{e}")),
    )
    .with_max_in_flight(IN_FLIGHT);
    let mut inbox = ok(bus.consume(&spec).await);
    let rss_before = resident_bytes();

    let published = Arc::new(AtomicUsize::new(0));
    let publisher = tokio::spawn({
        let bus = bus.clone();
        let published = Arc::clone(&published);
        async move {
            // Concurrent publishers: each waits for its acknowledgement, the bus bounds how
            // many wait at once.
            let mut tasks = Vec::new();
            for lane in 0..8 {
                let bus = bus.clone();
                let published = Arc::clone(&published);
                tasks.push(tokio::spawn(async move {
                    for n in (lane..TOTAL).step_by(8) {
                        let payload = signal("load.item", n);
                        ok(bus.publish(&payload).await);
                        published.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
            for task in tasks {
                ok(task.await);
            }
        }
    });

    let mut consumed = 0usize;
    let mut most_in_flight = 0usize;
    let mut most_pending = 0u64;
    // The consumer takes 2 ms per signal: far slower than the publishers.
    while consumed < 300 {
        let delivered = next(&mut inbox).await;
        tokio::time::sleep(Duration::from_millis(2)).await;
        if consumed.is_multiple_of(25) {
            let state = ok(bus.consumer_state("slow").await);
            most_in_flight = most_in_flight.max(state.in_flight);
            most_pending = most_pending.max(state.pending);
        }
        ok(delivered.settle(Settle::Ack).await);
        consumed += 1;
    }
    ok(publisher.await);
    let state = ok(bus.consumer_state("slow").await);
    most_in_flight = most_in_flight.max(state.in_flight);
    let rss_after = resident_bytes();
    println!(
        "published {TOTAL}, consumed {consumed}, most in flight {most_in_flight}, \
         most pending on the server {most_pending}, then pending {} in flight {}, \
         resident {} KiB -> {} KiB",
        state.pending,
        state.in_flight,
        rss_before / 1024,
        rss_after / 1024
    );
    assert!(
        most_in_flight <= IN_FLIGHT,
        "{most_in_flight} > {IN_FLIGHT}"
    );
    // Everything the consumer has not taken waits on the server, not in this process.
    let held_here = TOTAL as u64 - state.pending - consumed as u64;
    assert!(
        held_here <= IN_FLIGHT as u64,
        "{held_here} held client-side: {state:?}"
    );
    assert!(
        state.pending >= (TOTAL - consumed - IN_FLIGHT) as u64,
        "{state:?}"
    );
}

#[tokio::test]
async fn a_full_stream_refuses_the_publisher_instead_of_growing() {
    let limits = StreamLimits {
        max_messages: Some(50),
        ..StreamLimits::default()
    };
    let Some(bus) = bus_with(config("full").with_limits(limits)).await else {
        return;
    };
    for n in 0..50 {
        ok(bus.publish(&signal("fill.item", n)).await);
    }
    let refused = bus.publish(&signal("fill.item", 50)).await;
    assert!(
        matches!(refused, Err(BusError::NotConfirmed { .. })),
        "{refused:?}"
    );
    // A consumer draining it makes no room by itself (the stream keeps what it holds until its
    // limits say otherwise), but the signals are all there.
    let spec = ConsumerSpec::new(
        "drain",
        Pattern::new("fill.*").unwrap_or_else(|e| panic!("{e}")),
    )
    .starting_at(StartAt::All);
    let mut inbox = ok(bus.consume(&spec).await);
    for n in 0..50 {
        let delivered = next(&mut inbox).await;
        assert_eq!(delivered.signal.id().as_str(), format!("fill.item-{n}"));
        ok(delivered.settle(Settle::Ack).await);
    }
}
