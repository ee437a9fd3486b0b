//! `jetstream`: the durable bus on NATS JetStream beside bare async-nats doing the same work.
//!
//! Needs a server: `bash scripts/nats.sh start` prints the URL to put in MOTET_NATS_URL. The
//! scenario makes streams of its own there (file storage, as the bus's default) and deletes them
//! afterwards. Signals are `bench.item` with a small JSON payload (about 250 bytes on the wire).
//!
//! - `bus_throughput` / `floor_throughput`: `THROUGHPUT` signals published by `LANES`
//!   concurrent publishers, each awaiting its acknowledgement, while one consumer takes them and
//!   settles each with a server-confirmed ack on a task of its own (at most `IN_FLIGHT`
//!   unsettled). Timed from the first publish to the last confirmed ack; `ops_per_sec` is signals
//!   through the whole path per second. The floor publishes the bus's exact bytes and headers
//!   with `jetstream::Context::publish_with_headers` and consumes them from a bare pull consumer
//!   with `double_ack`: no envelope parsing, no pattern, no `Delivered`. `vs_floor` is the bus's
//!   time over the floor's.
//! - `agent_throughput`: the same publishers, consumed by an agent (`AgentSpec::consume`): each
//!   signal delivered to its thread, handled, committed (in-memory store), then acknowledged;
//!   timed until the agent handled every one and the server holds none unacknowledged.
//!   `vs_bus` is its time over `bus_throughput`'s: what the runtime's commit-then-ack costs.
//! - `bus_latency` / `floor_latency`: `LATENCY` signals one at a time: publish, await the
//!   acknowledgement, wait for the consumer to receive it; p50 and p99 of that time in µs (the
//!   ack that follows is not timed).

use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer, pull};
use async_nats::jetstream::{self, stream};
use futures::StreamExt;
use motet_jetstream::{JetStreamBus, JetStreamConfig, subject, wire};
use motet_runtime::bus::{ConsumerSpec, Inbox, Settle, SignalBus, StartAt};
use motet_signals::{Pattern, Signal};
use tokio::task::JoinSet;

use crate::report::{Report, round2};

const THROUGHPUT: usize = 5_000;
const LATENCY: usize = 1_000;
const LANES: usize = 32;
const IN_FLIGHT: usize = 256;

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| eprintln!("jetstream: cannot start a tokio runtime: {e}"))
        .ok()
}

fn signals(tag: &str, n: usize) -> Result<Vec<Signal>, String> {
    (0..n)
        .map(|i| {
            Signal::builder("bench.item", "/bench/jetstream")
                .with_id(format!("{tag}-{i}"))
                .with_thread_id("bench-thread")
                .with_data(serde_json::json!({ "n": i, "text": "a signal of a realistic size" }))
                .build()
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Each signal as the bus puts it on the wire: subject, headers, payload.
fn wire_forms(
    prefix: &str,
    signals: &[Signal],
) -> Result<Vec<(String, async_nats::HeaderMap, bytes::Bytes)>, String> {
    signals
        .iter()
        .map(|s| {
            let (headers, payload) = wire::encode(s, &subject::message_id(s))?;
            Ok((
                subject::subject_for(prefix, s.signal_type().as_str()),
                headers,
                payload,
            ))
        })
        .collect()
}

/// Percentile `p` (0-100) of sorted `samples`, in µs.
fn percentile(samples: &[Duration], p: usize) -> f64 {
    let Some(last) = samples.len().checked_sub(1) else {
        return 0.0;
    };
    let at = (last * p).div_ceil(100).min(last);
    round2(samples[at].as_secs_f64() * 1e6)
}

fn latency_report(variant: &str, mut samples: Vec<Duration>) -> Report {
    samples.sort();
    let total: Duration = samples.iter().sum();
    Report::new("jetstream", variant, samples.len() as u64, total)
        .with("p50_us", percentile(&samples, 50))
        .with("p99_us", percentile(&samples, 99))
}

async fn consumer(bus: &JetStreamBus, name: &str) -> Result<Box<dyn Inbox>, String> {
    let spec = ConsumerSpec::new(name, Pattern::new("bench.*").map_err(|e| e.to_string())?)
        .starting_at(StartAt::New)
        .with_max_in_flight(IN_FLIGHT);
    bus.consume(&spec).await.map_err(|e| e.to_string())
}

/// `batch` published by `LANES` concurrent publishers, each awaiting its acknowledgement.
fn publish_in_lanes(bus: &JetStreamBus, batch: &[Signal]) -> JoinSet<Result<(), String>> {
    let mut publishers = JoinSet::new();
    for lane in 0..LANES {
        let bus = bus.clone();
        let mine: Vec<Signal> = batch.iter().skip(lane).step_by(LANES).cloned().collect();
        publishers.spawn(async move {
            for s in &mine {
                bus.publish(s).await.map_err(|e| e.to_string())?;
            }
            Ok::<(), String>(())
        });
    }
    publishers
}

async fn bus_throughput(bus: &JetStreamBus) -> Result<Duration, String> {
    let batch = signals("t", THROUGHPUT)?;
    let mut inbox = consumer(bus, "throughput").await?;
    let start = Instant::now();
    let mut publishers = publish_in_lanes(bus, &batch);
    let mut acks = JoinSet::new();
    for _ in 0..THROUGHPUT {
        let delivered = match tokio::time::timeout(Duration::from_secs(30), inbox.next()).await {
            Ok(Some(Ok(delivered))) => delivered,
            Ok(Some(Err(e))) => return Err(e.to_string()),
            Ok(None) | Err(_) => return Err("the bus consumer stalled".into()),
        };
        acks.spawn(delivered.settle(Settle::Ack));
    }
    while let Some(done) = acks.join_next().await {
        done.map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
    }
    let elapsed = start.elapsed();
    while let Some(done) = publishers.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(elapsed)
}

/// Counts the `bench.*` signals it handles (in a counter the bench reads); a pure strategy
/// otherwise: nothing else in its state, no directives.
struct Counter(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl motet_agents::Strategy for Counter {
    type State = u64;

    fn init(&self, _env: &dyn motet_agents::Env) -> u64 {
        0
    }

    fn handle(
        &self,
        seen: &mut u64,
        signal: &Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        if signal.signal_type().as_str() == "bench.item" {
            *seen += 1;
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(Vec::new())
    }
}

/// `THROUGHPUT` signals published as in [`bus_throughput`], consumed by an agent
/// (`AgentSpec::consume`): each delivered to its thread, handled, committed to the in-memory
/// store (its snapshot with the delivery's key), then acknowledged. Timed until the agent has
/// handled every one and the server holds none unacknowledged.
async fn agent_throughput(bus: &JetStreamBus) -> Result<Duration, String> {
    use motet_runtime::agent::{AgentSpec, Runtime};
    let batch = signals("a", THROUGHPUT)?;
    let handled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let runtime = Runtime::builder()
        .llm(std::sync::Arc::new(
            motet_runtime::testing::ScriptedModel::default(),
        ))
        .signal_bus(std::sync::Arc::new(bus.clone()))
        .build()
        .map_err(|e| e.to_string())?;
    let spec = ConsumerSpec::new("agent", Pattern::new("bench.*").map_err(|e| e.to_string())?)
        .with_max_in_flight(IN_FLIGHT);
    runtime
        .spawn(AgentSpec::new("counter", Counter(handled.clone())).consume(spec))
        .await
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut publishers = publish_in_lanes(bus, &batch);
    let deadline = start + Duration::from_secs(60);
    loop {
        if handled.load(std::sync::atomic::Ordering::Relaxed) >= THROUGHPUT {
            let state = bus
                .consumer_state("agent")
                .await
                .map_err(|e| e.to_string())?;
            if state.pending == 0 && state.in_flight == 0 {
                break;
            }
        }
        if Instant::now() > deadline {
            return Err("the agent consumer stalled".into());
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let elapsed = start.elapsed();
    while let Some(done) = publishers.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    runtime.shutdown().await;
    Ok(elapsed)
}

async fn bus_latency(bus: &JetStreamBus) -> Result<Vec<Duration>, String> {
    let batch = signals("l", LATENCY)?;
    let mut inbox = consumer(bus, "latency").await?;
    let mut samples = Vec::with_capacity(LATENCY);
    for s in &batch {
        let start = Instant::now();
        bus.publish(s).await.map_err(|e| e.to_string())?;
        let delivered = match tokio::time::timeout(Duration::from_secs(10), inbox.next()).await {
            Ok(Some(Ok(delivered))) => delivered,
            Ok(Some(Err(e))) => return Err(e.to_string()),
            Ok(None) | Err(_) => return Err("the bus consumer stalled".into()),
        };
        samples.push(start.elapsed());
        delivered
            .settle(Settle::Ack)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(samples)
}

/// The floor's stream and consumer: what the bus sets up, made by hand.
async fn floor_consumer(
    js: &jetstream::Context,
    stream_name: &str,
    prefix: &str,
    name: &str,
) -> Result<async_nats::jetstream::consumer::pull::Stream, String> {
    let stream = js
        .get_stream(stream_name)
        .await
        .map_err(|e| e.to_string())?;
    let consumer: PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some(name.to_owned()),
            filter_subject: format!("{prefix}.bench.*"),
            deliver_policy: DeliverPolicy::New,
            ack_policy: AckPolicy::Explicit,
            max_ack_pending: IN_FLIGHT as i64,
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    consumer
        .stream()
        .max_messages_per_batch(IN_FLIGHT)
        .messages()
        .await
        .map_err(|e| e.to_string())
}

async fn floor_throughput(
    js: &jetstream::Context,
    stream_name: &str,
    prefix: &str,
) -> Result<Duration, String> {
    let batch = wire_forms(prefix, &signals("ft", THROUGHPUT)?)?;
    let mut messages = floor_consumer(js, stream_name, prefix, "throughput").await?;
    let start = Instant::now();
    let mut publishers = JoinSet::new();
    for lane in 0..LANES {
        let js = js.clone();
        let mine: Vec<_> = batch.iter().skip(lane).step_by(LANES).cloned().collect();
        publishers.spawn(async move {
            for (subject, headers, payload) in mine {
                js.publish_with_headers(subject, headers, payload)
                    .await
                    .map_err(|e| e.to_string())?
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok::<(), String>(())
        });
    }
    let mut acks = JoinSet::new();
    for _ in 0..THROUGHPUT {
        let message = match tokio::time::timeout(Duration::from_secs(30), messages.next()).await {
            Ok(Some(Ok(message))) => message,
            Ok(Some(Err(e))) => return Err(e.to_string()),
            Ok(None) | Err(_) => return Err("the floor consumer stalled".into()),
        };
        acks.spawn(async move { message.double_ack().await.map_err(|e| e.to_string()) });
    }
    while let Some(done) = acks.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    let elapsed = start.elapsed();
    while let Some(done) = publishers.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(elapsed)
}

async fn floor_latency(
    js: &jetstream::Context,
    stream_name: &str,
    prefix: &str,
) -> Result<Vec<Duration>, String> {
    let batch = wire_forms(prefix, &signals("fl", LATENCY)?)?;
    let mut messages = floor_consumer(js, stream_name, prefix, "latency").await?;
    let mut samples = Vec::with_capacity(LATENCY);
    for (subject, headers, payload) in batch {
        let start = Instant::now();
        js.publish_with_headers(subject, headers, payload)
            .await
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())?;
        let message = match tokio::time::timeout(Duration::from_secs(10), messages.next()).await {
            Ok(Some(Ok(message))) => message,
            Ok(Some(Err(e))) => return Err(e.to_string()),
            Ok(None) | Err(_) => return Err("the floor consumer stalled".into()),
        };
        samples.push(start.elapsed());
        message.double_ack().await.map_err(|e| e.to_string())?;
    }
    Ok(samples)
}

async fn all(url: &str, tag: &str) -> Result<Vec<Report>, String> {
    let config = JetStreamConfig::named(format!("BENCH_{tag}"), format!("bench{tag}"));
    let bus = JetStreamBus::connect(url, config.clone())
        .await
        .map_err(|e| e.to_string())?;
    let js = jetstream::new(bus.client().clone());
    let floor_stream = format!("BENCHFLOOR_{tag}");
    let floor_prefix = format!("benchfloor{tag}");
    js.create_stream(stream::Config {
        name: floor_stream.clone(),
        subjects: vec![format!("{floor_prefix}.>")],
        storage: stream::StorageType::File,
        duplicate_window: config.duplicate_window,
        ..Default::default()
    })
    .await
    .map_err(|e| e.to_string())?;

    let measured = async {
        // Interleaved, each after the other has warmed the server's store.
        let floor_time = floor_throughput(&js, &floor_stream, &floor_prefix).await?;
        let bus_time = bus_throughput(&bus).await?;
        let agent_time = agent_throughput(&bus).await?;
        let floor_samples = floor_latency(&js, &floor_stream, &floor_prefix).await?;
        let bus_samples = bus_latency(&bus).await?;
        Ok::<_, String>((bus_time, agent_time, floor_time, bus_samples, floor_samples))
    }
    .await;
    for name in [
        floor_stream.as_str(),
        config.stream.as_str(),
        config.dead_letter_stream.as_str(),
    ] {
        if let Err(e) = js.delete_stream(name).await {
            eprintln!("jetstream: cannot delete stream {name}: {e}");
        }
    }
    let (bus_time, agent_time, floor_time, bus_samples, floor_samples) = measured?;
    let ratio = |a: f64, b: f64| if b > 0.0 { round2(a / b) } else { 0.0 };
    let bus_report = Report::new("jetstream", "bus_throughput", THROUGHPUT as u64, bus_time)
        .with("lanes", LANES)
        .with("max_in_flight", IN_FLIGHT);
    let floor_report = Report::new(
        "jetstream",
        "floor_throughput",
        THROUGHPUT as u64,
        floor_time,
    )
    .with("lanes", LANES)
    .with("max_in_flight", IN_FLIGHT);
    let agent_report = Report::new(
        "jetstream",
        "agent_throughput",
        THROUGHPUT as u64,
        agent_time,
    )
    .with("lanes", LANES)
    .with("max_in_flight", IN_FLIGHT);
    let bus_latency = latency_report("bus_latency", bus_samples);
    let floor_latency = latency_report("floor_latency", floor_samples);
    let vs = ratio(bus_report.ns_per_op(), floor_report.ns_per_op());
    let vs_latency = ratio(bus_latency.ns_per_op(), floor_latency.ns_per_op());
    let agent_vs = ratio(agent_report.ns_per_op(), floor_report.ns_per_op());
    let agent_vs_bus = ratio(agent_report.ns_per_op(), bus_report.ns_per_op());
    Ok(vec![
        agent_report
            .with("vs_floor", agent_vs)
            .with("vs_bus", agent_vs_bus),
        bus_report.with("vs_floor", vs),
        floor_report,
        bus_latency.with("vs_floor", vs_latency),
        floor_latency,
    ])
}

/// Every variant; without a server, or on a setup failure, says why and yields no reports.
pub(crate) fn run() -> Vec<Report> {
    let Ok(url) = std::env::var("MOTET_NATS_URL") else {
        eprintln!("jetstream: MOTET_NATS_URL is not set (`bash scripts/nats.sh start` prints it)");
        return Vec::new();
    };
    let Some(rt) = runtime() else {
        return Vec::new();
    };
    let tag = std::process::id().to_string();
    rt.block_on(all(&url, &tag)).unwrap_or_else(|e| {
        eprintln!("jetstream: {e}");
        Vec::new()
    })
}
