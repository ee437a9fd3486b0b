//! What the JetStream tests share: the server from scripts/nats.sh (MOTET_NATS_URL), a bus with
//! streams of its own per test, signals, and a bounded wait for the next delivery.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use motet_jetstream::{JetStreamBus, JetStreamConfig};
use motet_runtime::bus::{Delivered, Inbox};
use motet_signals::Signal;

/// The server's URL, or `None` after printing why the test is skipped (under `CI=true` the
/// test fails instead).
pub fn nats_url() -> Option<String> {
    motet_runtime::testing::needs_var("MOTET_NATS_URL", "bash scripts/nats.sh start")
}

/// A name no other test or run uses.
pub fn unique(tag: &str) -> String {
    let id = uuid::Uuid::now_v7().simple().to_string();
    format!("{tag}{}", &id[id.len() - 12..])
}

/// The configuration of a bus whose streams and subjects are this test's alone.
pub fn config(tag: &str) -> JetStreamConfig {
    let name = unique(tag);
    JetStreamConfig::named(name.to_uppercase(), format!("t.{name}"))
}

/// A bus on the test server with streams of its own, or `None` (skipped) without a server.
pub async fn bus(tag: &str) -> Option<JetStreamBus> {
    bus_with(config(tag)).await
}

/// A bus on the test server with `config`, or `None` (skipped) without a server.
pub async fn bus_with(config: JetStreamConfig) -> Option<JetStreamBus> {
    let url = nats_url()?;
    Some(
        JetStreamBus::connect(&url, config)
            .await
            .unwrap_or_else(|e| panic!("MOTET_NATS_URL={url} is set but: {e}")),
    )
}

/// Signal `n` of type `ty`, id `{ty}-{n}`.
pub fn signal(ty: &str, n: usize) -> Signal {
    Signal::builder(ty, "/tests/jetstream")
        .with_id(format!("{ty}-{n}"))
        .with_data(serde_json::json!({ "n": n }))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The next delivery within `wait`, or `None` if none came; a bus error fails the test.
pub async fn next_within(inbox: &mut Box<dyn Inbox>, wait: Duration) -> Option<Delivered> {
    match tokio::time::timeout(wait, inbox.next()).await {
        Err(_) => None,
        Ok(None) => panic!("the inbox ended"),
        Ok(Some(Err(e))) => panic!("delivery failed: {e}"),
        Ok(Some(Ok(delivered))) => Some(delivered),
    }
}

/// The next delivery; fails the test after 10 s.
pub async fn next(inbox: &mut Box<dyn Inbox>) -> Delivered {
    next_within(inbox, Duration::from_secs(10))
        .await
        .unwrap_or_else(|| panic!("no delivery within 10 s"))
}
