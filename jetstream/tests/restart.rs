//! The NATS server restarted mid-run (scripts/nats.sh restart: same port, same store): nothing
//! whose publish was acknowledged is lost, and the consumer's inbox goes on by itself. Its own
//! test binary, so no other test shares the server while it is down. `skipped:` without a
//! server, or with one this script did not start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use common::{bus, signal};
use motet_runtime::bus::{BusError, ConsumerSpec, Settle, SignalBus, StartAt};
use motet_signals::Pattern;

const TOTAL: usize = 400;

/// `bash scripts/nats.sh restart PORT` for the server at `url`; `Err` with its output.
fn restart_server(url: &str) -> Result<(), String> {
    let port = url
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/');
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/nats.sh");
    let out = Command::new("bash")
        .args([script, "restart", port])
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_mid_run_loses_nothing_that_was_acknowledged() {
    let Some(url) = common::nats_url() else {
        return;
    };
    let Some(bus) = bus("restart").await else {
        return;
    };
    let spec = ConsumerSpec::new(
        "survivor",
        Pattern::new("ev.*").unwrap_or_else(|e| panic!("{e}")),
    )
    .starting_at(StartAt::All)
    .with_ack_wait(Duration::from_secs(2));
    let mut inbox = bus.consume(&spec).await.unwrap_or_else(|e| panic!("{e}"));

    let confirmed = Arc::new(Mutex::new(BTreeSet::new()));
    let publisher = tokio::spawn({
        let bus = bus.clone();
        let confirmed = Arc::clone(&confirmed);
        async move {
            let mut failures = 0usize;
            for n in 0..TOTAL {
                let s = signal("ev.tick", n);
                // Until the server confirms it: the same source + id, so a publish that was
                // stored but whose acknowledgement was lost is not stored twice.
                loop {
                    match bus.publish(&s).await {
                        Ok(_) => break,
                        Err(BusError::NotConfirmed { .. } | BusError::Unavailable { .. }) => {
                            failures += 1;
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                confirmed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(s.id().as_str().to_owned());
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            failures
        }
    });

    let mut received = BTreeSet::new();
    let mut errors = 0usize;
    let mut restarted: Option<Result<(), String>> = None;
    let deadline = Instant::now() + Duration::from_secs(90);
    while received.len() < TOTAL && Instant::now() < deadline {
        if restarted.is_none() && received.len() >= TOTAL / 4 {
            let url = url.clone();
            let outcome = tokio::task::spawn_blocking(move || restart_server(&url))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            if let Err(why) = &outcome {
                motet_runtime::testing::missing(&format!(
                    "scripts/nats.sh could not restart the server: {why}"
                ));
                return;
            }
            restarted = Some(outcome);
        }
        match tokio::time::timeout(Duration::from_secs(5), inbox.next()).await {
            Err(_) => continue,
            Ok(None) => panic!("the inbox ended at the restart"),
            Ok(Some(Err(_))) => errors += 1,
            Ok(Some(Ok(delivered))) => {
                let id = delivered.signal.id().as_str().to_owned();
                // An ack lost in the restart means a redelivery: received once either way.
                if delivered.settle(Settle::Ack).await.is_err() {
                    errors += 1;
                }
                received.insert(id);
            }
        }
    }
    let failures = publisher.await.unwrap_or_else(|e| panic!("{e}"));
    let confirmed = confirmed
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    println!(
        "restart: {:?}; {} confirmed ({failures} publish attempts refused during it), \
         {} received, {errors} inbox or ack errors",
        restarted,
        confirmed.len(),
        received.len()
    );
    assert_eq!(restarted, Some(Ok(())));
    let lost: Vec<_> = confirmed.difference(&received).collect();
    assert!(lost.is_empty(), "confirmed but never delivered: {lost:?}");
    assert_eq!(confirmed.len(), TOTAL);
}
