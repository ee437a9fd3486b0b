//! Routing and pub/sub between in-process subscribers with motet's signal bus.
//!
//! A coordinator follows every `task.**` signal, workers take `task.*.assigned`, an auditor sees
//! everything (`**`), and a slow subscriber with a two-slot queue shows that a full subscriber is
//! skipped and counted, never blocking the publisher. Each signal is caused by the one before, so
//! they share a correlation id.
//!
//! ```text
//! cargo run --release --example signals
//! ```

use std::sync::mpsc;

use motet::signals::{Bus, Delivery, Pattern, Signal, SignalData, SignalError, SignalId};

/// A callback subscriber that prints what it receives under `name`.
fn printer(name: &'static str) -> impl Fn(&Signal) -> Delivery + Send + Sync + 'static {
    move |signal: &Signal| {
        let data = match signal.data() {
            SignalData::Json(value) => value.to_string(),
            SignalData::Binary(bytes) => format!("{} bytes", bytes.len()),
            SignalData::None => "-".to_owned(),
        };
        println!("  {name:<11} <- {:<18} data={data}", signal.signal_type());
        Delivery::Delivered
    }
}

fn main() -> Result<(), SignalError> {
    let bus = Bus::new();

    // Higher priority is served first: the auditor records a signal before anyone acts on it.
    let auditor = bus.subscribe_with_priority(Pattern::new("**")?, 10, printer("auditor"));
    let coordinator = bus.subscribe(Pattern::new("task.**")?, printer("coordinator"));
    let worker = bus.subscribe(Pattern::new("task.*.assigned")?, printer("worker"));
    let (slow_tx, slow_rx) = mpsc::sync_channel::<Signal>(2);
    let slow = bus.subscribe(Pattern::new("task.*.assigned")?, slow_tx);

    let created = Signal::builder("task.1.created", "coordinator")
        .with_thread_id("demo")
        .with_data(serde_json::json!({"title": "summarize the report"}))
        .build()?;
    let mut previous = created.clone();
    let mut steps = vec![created];
    for (ty, data) in [
        ("task.1.assigned", serde_json::json!({"worker": "w1"})),
        ("task.2.assigned", serde_json::json!({"worker": "w2"})),
        ("task.3.assigned", serde_json::json!({"worker": "w1"})),
        ("task.1.done", serde_json::json!({"ok": true})),
        ("llm.result", serde_json::json!({"tokens": 42})),
    ] {
        let next = Signal::builder(ty, "coordinator")
            .with_data(data)
            .caused_by(&previous)
            .build()?;
        previous = next.clone();
        steps.push(next);
    }

    for signal in &steps {
        println!("publish {}", signal.signal_type());
        let outcome = bus.publish(signal);
        if outcome.dropped_full > 0 {
            println!(
                "  ({} subscriber(s) full: skipped and counted)",
                outcome.dropped_full
            );
        }
    }

    println!(
        "\nthe slow subscriber's queue holds {} signal(s)",
        slow_rx.try_iter().count()
    );
    for (name, sub) in [
        ("auditor", &auditor),
        ("coordinator", &coordinator),
        ("worker", &worker),
        ("slow", &slow),
    ] {
        let stats = sub.stats();
        println!(
            "{name:<11} {:<16} delivered={} dropped_full={} dropped_closed={}",
            sub.pattern().as_str(),
            stats.delivered,
            stats.dropped_full,
            stats.dropped_closed
        );
    }
    if let Some(last) = steps.last() {
        println!(
            "last signal {}: correlation id {}, caused by {}",
            last.id(),
            last.correlation_id().unwrap_or("-"),
            last.causation_id().map_or("-", SignalId::as_str)
        );
    }
    println!("bus: {:?}", bus.stats());
    println!("\nas CloudEvents JSON: {}", steps[1].to_json()?);
    Ok(())
}
