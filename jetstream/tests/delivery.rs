//! The JetStream bus against a real server (scripts/nats.sh; `skipped:` without one): durable
//! consumers, redelivery and dead letters, replay, duplicates, both CloudEvents content modes,
//! and patterns the server cannot filter alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use common::{bus, next, next_within, signal};
use motet_jetstream::wire::STRUCTURED_CONTENT_TYPE;
use motet_runtime::bus::{ConsumerSpec, LocalBus, Settle, SignalBus, StartAt, settle};
use motet_signals::{Pattern, SignalData};

fn pattern(text: &str) -> Pattern {
    Pattern::new(text).unwrap_or_else(|e| panic!("{e}"))
}

fn ok<T, E: std::fmt::Display>(result: Result<T, E>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

const QUIET: Duration = Duration::from_millis(400);

#[tokio::test]
async fn a_consumer_stopped_while_a_thousand_signals_are_published_gets_all_of_them() {
    let Some(bus) = bus("down").await else { return };
    let spec = ConsumerSpec::new("agent.worker", pattern("work.*"));
    let inbox = ok(bus.consume(&spec).await);
    drop(inbox); // the agent stops
    for n in 0..1000 {
        ok(bus.publish(&signal("work.item", n)).await);
    }
    let mut inbox = ok(bus.consume(&spec).await); // and comes back
    let mut seen = BTreeSet::new();
    while seen.len() < 1000 {
        let delivered = next(&mut inbox).await;
        assert_eq!(delivered.attempt, 1);
        assert!(
            seen.insert(delivered.signal.id().as_str().to_owned()),
            "twice: {delivered:?}"
        );
        ok(delivered.settle(Settle::Ack).await);
    }
    let expected: BTreeSet<String> = (0..1000).map(|n| format!("work.item-{n}")).collect();
    assert_eq!(seen, expected);
    assert!(next_within(&mut inbox, QUIET).await.is_none());
    let state = ok(bus.consumer_state("agent.worker").await);
    assert_eq!((state.pending, state.in_flight), (0, 0), "{state:?}");
}

#[tokio::test]
async fn a_signal_failed_max_deliver_times_goes_to_the_dead_letters() {
    let Some(bus) = bus("dlq").await else { return };
    let spec = ConsumerSpec::new("failing", pattern("job.**"))
        .with_max_deliver(3)
        .with_backoff(vec![Duration::from_millis(20), Duration::from_millis(50)]);
    let mut inbox = ok(bus.consume(&spec).await);
    let published = ok(bus.publish(&signal("job.run", 1)).await);
    for attempt in 1..=3 {
        let delivered = next(&mut inbox).await;
        assert_eq!(
            (delivered.attempt, Some(delivered.sequence)),
            (attempt, published.sequence)
        );
        let decision = settle(Err("boom"), delivered.attempt, &spec);
        assert_eq!(
            matches!(decision, Settle::DeadLetter(_)),
            attempt == 3,
            "{decision:?}"
        );
        ok(delivered.settle(decision).await);
    }
    assert!(
        next_within(&mut inbox, QUIET).await.is_none(),
        "delivered after its dead letter"
    );
    let dead = ok(bus.dead_letters("failing", 10).await);
    assert_eq!(dead.len(), 1, "{dead:?}");
    let letter = &dead[0];
    assert_eq!(Some(letter.sequence), published.sequence);
    assert_eq!(letter.consumer, "failing");
    assert!(
        letter.reason.contains("failed 3 of 3 deliveries: boom"),
        "{}",
        letter.reason
    );
    assert_eq!(
        letter.signal.as_ref().map(|s| s.id().as_str()),
        Some("job.run-1")
    );
    assert!(
        letter.subject.ends_with(".signals.job.run"),
        "{}",
        letter.subject
    );
    assert!(ok(bus.dead_letters("someone-else", 10).await).is_empty());
}

#[tokio::test]
async fn a_new_consumer_replays_from_a_sequence_or_a_time_and_an_old_one_resumes() {
    let Some(bus) = bus("replay").await else {
        return;
    };
    let mut sequences = Vec::new();
    let mut cut = SystemTime::now();
    for n in 0..10 {
        if n == 6 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            cut = SystemTime::now();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let published = ok(bus.publish(&signal("log.line", n)).await);
        sequences.push(published.sequence.unwrap_or_else(|| panic!("no sequence")));
    }
    let from_sequence = StartAt::Sequence(sequences[4]);
    for (name, start, first) in [
        ("by-seq", from_sequence, 4),
        ("by-time", StartAt::Time(cut), 6),
    ] {
        let spec = ConsumerSpec::new(name, pattern("log.line")).starting_at(start);
        let mut inbox = ok(bus.consume(&spec).await);
        for (n, sequence) in sequences.iter().enumerate().skip(first) {
            let delivered = next(&mut inbox).await;
            assert_eq!(
                delivered.signal.id().as_str(),
                format!("log.line-{n}"),
                "{name}"
            );
            assert_eq!(delivered.sequence, *sequence, "{name}");
            ok(delivered.settle(Settle::Ack).await);
        }
        assert!(next_within(&mut inbox, QUIET).await.is_none(), "{name}");
        drop(inbox);
        // Coming back under the same name resumes where it was, whatever `start` says now.
        let again = spec.clone().starting_at(StartAt::All);
        let mut inbox = ok(bus.consume(&again).await);
        assert!(
            next_within(&mut inbox, QUIET).await.is_none(),
            "{name} replayed again"
        );
    }
    let spec = ConsumerSpec::new("everything", pattern("log.*")).starting_at(StartAt::All);
    let mut inbox = ok(bus.consume(&spec).await);
    assert_eq!(next(&mut inbox).await.signal.id().as_str(), "log.line-0");
}

#[tokio::test]
async fn the_same_source_and_id_published_twice_is_delivered_once() {
    let Some(bus) = bus("dup").await else { return };
    let spec = ConsumerSpec::new("once", pattern("pay.*")).starting_at(StartAt::All);
    let first = ok(bus.publish(&signal("pay.sent", 7)).await);
    let second = ok(bus.publish(&signal("pay.sent", 7)).await);
    assert!(!first.duplicate);
    assert!(second.duplicate, "{second:?}");
    assert_eq!(first.sequence, second.sequence);
    let other = ok(bus.publish(&signal("pay.sent", 8)).await);
    assert!(!other.duplicate);
    let mut inbox = ok(bus.consume(&spec).await);
    for n in [7, 8] {
        let delivered = next(&mut inbox).await;
        assert_eq!(delivered.signal.id().as_str(), format!("pay.sent-{n}"));
        ok(delivered.settle(Settle::Ack).await);
    }
    assert!(next_within(&mut inbox, QUIET).await.is_none());
}

#[tokio::test]
async fn binary_mode_ce_headers_are_read_in_any_case() {
    let Some(bus) = bus("binary").await else {
        return;
    };
    let spec = ConsumerSpec::new("reader", pattern("ext.*")).starting_at(StartAt::All);
    let js = async_nats::jetstream::new(bus.client().clone());
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("CE-SpecVersion", "1.0");
    headers.insert("Ce-Id", "raw-1");
    headers.insert("cE-SOURCE", "/elsewhere");
    headers.insert("CE-Type", "ext.event");
    headers.insert("ce-ThreadId", "t-1");
    headers.insert("Content-Type", "application/json");
    let subject = format!("{}.ext.event", bus.config().subject_prefix);
    let payload = bytes::Bytes::from_static(br#"{"hello":"world"}"#);
    ok(ok(js.publish_with_headers(subject, headers, payload).await).await);
    let mut inbox = ok(bus.consume(&spec).await);
    let delivered = next(&mut inbox).await;
    let s = &delivered.signal;
    assert_eq!((s.id().as_str(), s.source()), ("raw-1", "/elsewhere"));
    assert_eq!(s.signal_type().as_str(), "ext.event");
    assert_eq!(s.thread_id(), Some("t-1"));
    assert_eq!(
        s.data(),
        &SignalData::Json(serde_json::json!({"hello": "world"}))
    );
    ok(delivered.settle(Settle::Ack).await);
}

#[tokio::test]
async fn a_message_that_is_not_a_signal_goes_to_the_dead_letters_not_to_the_consumer() {
    let Some(bus) = bus("junk").await else { return };
    let spec = ConsumerSpec::new("strict", pattern("**")).starting_at(StartAt::All);
    let js = async_nats::jetstream::new(bus.client().clone());
    let subject = format!("{}.junk.thing", bus.config().subject_prefix);
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Content-Type", STRUCTURED_CONTENT_TYPE);
    headers.insert("X-Trace", "kept");
    let junk = bytes::Bytes::from_static(b"{\"specversion\":\"1.0\",\"id\":\"x\"}");
    let stored = ok(ok(js
        .publish_with_headers(subject, headers, junk.clone())
        .await)
    .await);
    ok(bus.publish(&signal("real.one", 1)).await);
    let mut inbox = ok(bus.consume(&spec).await);
    let delivered = next(&mut inbox).await;
    assert_eq!(delivered.signal.id().as_str(), "real.one-1");
    ok(delivered.settle(Settle::Ack).await);
    let dead = ok(bus.dead_letters("strict", 10).await);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].sequence, stored.sequence);
    assert_eq!(dead[0].payload, junk);
    assert!(dead[0].signal.is_none());
    assert!(
        dead[0].reason.starts_with("not a signal:"),
        "{}",
        dead[0].reason
    );
    assert!(dead[0].reason.contains("source"), "{}", dead[0].reason);
}

#[tokio::test]
async fn double_stars_anywhere_deliver_exactly_what_the_pattern_matches() {
    let Some(bus) = bus("pattern").await else {
        return;
    };
    let types = [
        "a",
        "a.done",
        "a.x.done",
        "a.x.y.done",
        "a.x.other",
        "b.done",
        "ab.done",
    ];
    let cases = [
        (
            "middle",
            "a.**.done",
            vec!["a.done", "a.x.done", "a.x.y.done"],
        ),
        (
            "trailing",
            "a.**",
            vec!["a", "a.done", "a.x.done", "a.x.y.done", "a.x.other"],
        ),
        (
            "leading",
            "**.done",
            vec!["a.done", "a.x.done", "a.x.y.done", "b.done", "ab.done"],
        ),
        ("one", "a.*", vec!["a.done"]),
    ];
    let mut inboxes = Vec::new();
    for (name, text, _) in &cases {
        let spec = ConsumerSpec::new(*name, pattern(text));
        inboxes.push(ok(bus.consume(&spec).await));
    }
    for (n, ty) in types.iter().enumerate() {
        ok(bus.publish(&signal(ty, n)).await);
    }
    for ((name, text, expected), inbox) in cases.iter().zip(&mut inboxes) {
        let mut got = Vec::new();
        while let Some(delivered) = next_within(inbox, QUIET).await {
            got.push(delivered.signal.signal_type().as_str().to_owned());
            ok(delivered.settle(Settle::Ack).await);
        }
        assert_eq!(&got, expected, "{text}");
        // What the server let through and the pattern did not match was acknowledged.
        let state = ok(bus.consumer_state(name).await);
        assert_eq!(
            (state.pending, state.in_flight),
            (0, 0),
            "{text}: {state:?}"
        );
    }
}

/// One small scenario, run on any bus: three matching signals and one that does not, the
/// second failing once. What each delivery was, sorted.
async fn scenario(bus: &dyn SignalBus, name: &str) -> Vec<(String, u32)> {
    let spec = ConsumerSpec::new(name, pattern("order.*"))
        .with_max_deliver(2)
        .with_backoff(vec![Duration::from_millis(20)]);
    let mut inbox = ok(bus.consume(&spec).await);
    for (n, ty) in ["order.placed", "order.paid", "audit.note", "order.shipped"]
        .iter()
        .enumerate()
    {
        ok(bus.publish(&signal(ty, n)).await);
    }
    let mut seen = Vec::new();
    while let Some(delivered) = next_within(&mut inbox, QUIET).await {
        let id = delivered.signal.id().as_str().to_owned();
        let outcome = if id == "order.paid-1" && delivered.attempt == 1 {
            Err("flaky")
        } else {
            Ok(())
        };
        seen.push((id, delivered.attempt));
        let decision = settle(outcome, delivered.attempt, &spec);
        ok(delivered.settle(decision).await);
    }
    seen.sort();
    seen
}

#[tokio::test]
async fn local_and_jetstream_buses_deliver_the_same_scenario_alike() {
    let Some(jetstream) = bus("alike").await else {
        return;
    };
    let local = scenario(&LocalBus::default(), "same").await;
    let remote = scenario(&jetstream, "same").await;
    assert_eq!(local, remote);
    assert_eq!(
        remote,
        vec![
            ("order.paid-1".to_owned(), 1),
            ("order.paid-1".to_owned(), 2),
            ("order.placed-0".to_owned(), 1),
            ("order.shipped-3".to_owned(), 1),
        ]
    );
}

#[tokio::test]
async fn a_delivery_never_settled_comes_again_after_ack_wait_then_goes_to_the_dead_letters() {
    let Some(bus) = bus("unsettled").await else {
        return;
    };
    let spec = ConsumerSpec::new("crashy", pattern("task.*"))
        .with_max_deliver(2)
        .with_ack_wait(Duration::from_millis(300));
    let mut inbox = ok(bus.consume(&spec).await);
    ok(bus.publish(&signal("task.hard", 1)).await);
    for attempt in 1..=2 {
        // Its holder dies with it: never settled.
        let delivered = next(&mut inbox).await;
        assert_eq!(delivered.attempt, attempt);
        drop(delivered);
    }
    // The third delivery is past max_deliver: the inbox dead-letters it instead of handing it out.
    assert!(
        next_within(&mut inbox, Duration::from_secs(1))
            .await
            .is_none()
    );
    let dead = ok(bus.dead_letters("crashy", 10).await);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(
        dead[0].reason.contains("without being settled"),
        "{}",
        dead[0].reason
    );
    let state = ok(bus.consumer_state("crashy").await);
    assert_eq!((state.pending, state.in_flight), (0, 0), "{state:?}");
}

#[tokio::test]
async fn a_consumer_coming_back_with_another_pattern_keeps_its_place() {
    let Some(bus) = bus("repattern").await else {
        return;
    };
    let first = ConsumerSpec::new("shifting", pattern("a.*")).starting_at(StartAt::All);
    ok(bus.publish(&signal("a.one", 1)).await);
    ok(bus.publish(&signal("b.one", 2)).await);
    let mut inbox = ok(bus.consume(&first).await);
    let delivered = next(&mut inbox).await;
    assert_eq!(delivered.signal.id().as_str(), "a.one-1");
    ok(delivered.settle(Settle::Ack).await);
    drop(inbox);
    // Now it wants everything: what it acknowledged stays acknowledged, and it goes on from its
    // place (whether the b.one it skipped under the old filter comes is the server's business).
    let second = ConsumerSpec::new("shifting", pattern("**"));
    let mut inbox = ok(bus.consume(&second).await);
    ok(bus.publish(&signal("b.two", 3)).await);
    let mut got = Vec::new();
    while let Some(delivered) = next_within(&mut inbox, QUIET).await {
        got.push(delivered.signal.id().as_str().to_owned());
        ok(delivered.settle(Settle::Ack).await);
    }
    assert!(!got.contains(&"a.one-1".to_owned()), "{got:?}");
    assert_eq!(got.last().map(String::as_str), Some("b.two-3"), "{got:?}");
}
