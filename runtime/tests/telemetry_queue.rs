//! The batch queue's size reaches the SDK: with room for every span, a burst far larger than
//! the SDK's default queue (2,048) arrives whole at a real receiver.
//!
//! One test per file: the tracer provider is global to the process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::time::Duration;

use motet_runtime::telemetry::Telemetry;
use motet_runtime::testing::otlp::OtlpReceiver;

const BURST: usize = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_with_room_for_the_burst_keeps_every_span() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let endpoint = receiver.grpc_endpoint();
    let (dispatch, guard) = tokio::task::spawn_blocking(move || {
        Telemetry::from_vars(|key| match key {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
            // Far longer than the test: only full batches and the final flush send anything.
            "OTEL_BSP_SCHEDULE_DELAY" => Some("600000".into()),
            _ => None,
        })
        .unwrap()
        .with_max_queue_size(BURST)
        .without_log()
        .into_dispatch()
        .unwrap()
    })
    .await
    .unwrap();
    tracing::dispatcher::with_default(&dispatch, || {
        for n in 0..BURST {
            let span = tracing::info_span!("burst", n);
            drop(span.enter());
        }
    });
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();
    let spans = receiver
        .wait_for(Duration::from_secs(20), |s| s.len() >= BURST)
        .await;
    assert_eq!(spans.len(), BURST);
}
