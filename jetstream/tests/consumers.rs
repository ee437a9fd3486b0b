//! Consumers of one run and long-lived ones, against the real server from scripts/nats.sh: a
//! consumer given an inactivity threshold carries it on the server (which removes it once idle
//! that long), one without keeps none and stays.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use motet_jetstream::{JetStreamBus, subject};
use motet_runtime::bus::{ConsumerSpec, SignalBus};

/// The consumer config the server holds for consumer `name`.
async fn server_config(bus: &JetStreamBus, name: &str) -> async_nats::jetstream::consumer::Config {
    let js = async_nats::jetstream::new(bus.client().clone());
    let stream = js.get_stream(&bus.config().stream).await.unwrap();
    let durable = subject::durable_name(name).unwrap();
    stream.consumer_info(&durable).await.unwrap().config.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_of_one_run_carries_its_inactivity_threshold_to_the_server() {
    let Some(bus) = common::bus("inactive").await else {
        return;
    };
    let run = common::unique("run");
    let spec = ConsumerSpec::new(&run, "work.*".parse().unwrap())
        .with_inactive_threshold(Duration::from_secs(300));
    let inbox = bus.consume(&spec).await.unwrap();
    assert_eq!(
        server_config(&bus, &run).await.inactive_threshold,
        Duration::from_secs(300)
    );
    drop(inbox);
    // Resumed with another threshold, the consumer takes it.
    let spec = spec.with_inactive_threshold(Duration::from_secs(60));
    let _inbox = bus.consume(&spec).await.unwrap();
    assert_eq!(
        server_config(&bus, &run).await.inactive_threshold,
        Duration::from_secs(60)
    );

    // A long-lived consumer, as the user configured it: none.
    let named = common::unique("ledger");
    let _kept = bus
        .consume(&ConsumerSpec::new(&named, "work.*".parse().unwrap()))
        .await
        .unwrap();
    assert_eq!(
        server_config(&bus, &named).await.inactive_threshold,
        Duration::ZERO
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_removes_a_consumer_of_one_run_once_it_is_idle() {
    let Some(bus) = common::bus("inactivegone").await else {
        return;
    };
    let run = common::unique("run");
    let spec = ConsumerSpec::new(&run, "work.*".parse().unwrap())
        .with_inactive_threshold(Duration::from_secs(1));
    drop(bus.consume(&spec).await.unwrap());
    let js = async_nats::jetstream::new(bus.client().clone());
    let stream = js.get_stream(&bus.config().stream).await.unwrap();
    let durable = subject::durable_name(&run).unwrap();
    // The server sweeps idle consumers every few seconds; give it up to 30.
    for _ in 0..60 {
        if stream.consumer_info(&durable).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("consumer {run} is still on the server 30 s after its run ended");
}
