//! The `serve` scenario's stream lines: many SSE subscribers of native run streams at once.
//!
//! - `sse_streams_1000`: [`STREAMS`] subscribers over loopback HTTP/1, [`PER_RUN`] to each of
//!   [`RUNS`] runs (`GET /api/agents/{agent}/runs/{run}/events`); every run's model waits until
//!   every subscriber is in, then writes [`DELTAS`] fragments [`PACE`] apart, each carrying the
//!   moment it was written. `bytes_per_stream`: the heap this process holds per open stream once
//!   all are in (server and client side, counted by the bench's allocator); `p50_us`/`p99_us`:
//!   from a fragment written to its `delta` event parsed by a subscriber, over every delivery.
//! - `floor_axum_sse_1000`: the same subscribers and the same events (the same `delta` JSON, ids
//!   and names, the same pace) from a bare axum SSE handler fed by a `tokio::sync::broadcast`
//!   channel per run: no runtime, no log, no resume.
//! - `reconnect_storm_1000`: as many subscribers again on fresh runs, each dropping its
//!   connection mid-run after a seeded 1 to [`DELTAS`]/2 events and resuming with
//!   `Last-Event-ID`; every id each one received over both connections is held against the run's
//!   ids `1..=last`: `lost` (never received) and `duplicated` (received twice), summed.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::response::sse::{Event, Sse};
use futures::StreamExt;
use motet_directives::{AssistantMessage, CallId, LlmResponse, Usage};
use motet_providers::{LlmClient, LlmEvent, LlmEvents, ProviderError};
use motet_runtime::agent::{DeltaKind, LlmDelta, ReActAgent, Runtime};
use motet_serve::{Served, Tokens};
use tokio::sync::{broadcast, watch};

use super::percentile_us;
use crate::alloc::{counting, live_bytes};
use crate::report::{Report, round2};

/// Subscribers at once.
const STREAMS: usize = 1_000;
/// Runs they subscribe to.
const RUNS: usize = 50;
/// Subscribers per run.
const PER_RUN: usize = STREAMS / RUNS;
/// Fragments each run's model writes.
const DELTAS: usize = 20;
/// Between two fragments.
const PACE: Duration = Duration::from_millis(10);
/// The agent's name.
const AGENT: &str = "writer";

/// The clock every timestamp is read against.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Microseconds since [`epoch`], as a fragment's text.
fn stamp() -> String {
    format!("{:012}", epoch().elapsed().as_micros())
}

/// A model that waits for its gate to open, then writes [`DELTAS`] stamped fragments
/// [`PACE`] apart and ends its turn.
struct Stamping {
    gate: watch::Receiver<bool>,
}

#[async_trait::async_trait]
impl LlmClient for Stamping {
    async fn stream(&self, _req: motet_directives::LlmRequest) -> Result<LlmEvents, ProviderError> {
        let mut gate = self.gate.clone();
        let _ = gate.wait_for(|open| *open).await;
        let usage = Usage {
            input_tokens: 10,
            output_tokens: DELTAS as u64,
            ..Usage::default()
        };
        let response = LlmResponse::new(AssistantMessage::text(""), usage);
        let mut head = Vec::new();
        let mut tail = Vec::new();
        for event in motet_runtime::testing::events_of(response) {
            match event {
                LlmEvent::Started { .. } => head.push(event),
                LlmEvent::TextDelta { .. } => {}
                other => tail.push(other),
            }
        }
        let head = futures::stream::iter(head);
        let deltas = futures::stream::unfold(0, |n| async move {
            if n == DELTAS {
                return None;
            }
            if n > 0 {
                tokio::time::sleep(PACE).await;
            }
            let delta = LlmEvent::TextDelta {
                delta: stamp(),
                meta: None,
            };
            Some((delta, n + 1))
        });
        let events = head.chain(deltas).chain(futures::stream::iter(tail));
        Ok(Box::pin(events.map(Ok)))
    }
}

/// One SSE event as a subscriber reads it.
#[derive(Debug, Default)]
struct Read {
    id: Option<u64>,
    event: String,
    data: String,
}

/// Splits SSE bytes into events, keeping a partial one for the next read.
#[derive(Default)]
struct Parser {
    pending: Vec<u8>,
}

impl Parser {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Read>) {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.pending.drain(..end + 2).collect();
            let mut read = Read::default();
            for line in String::from_utf8_lossy(&block).lines() {
                if let Some(id) = line.strip_prefix("id:") {
                    read.id = id.trim().parse().ok();
                } else if let Some(event) = line.strip_prefix("event:") {
                    event.trim().clone_into(&mut read.event);
                } else if let Some(data) = line.strip_prefix("data:") {
                    read.data.push_str(data.trim_start());
                }
            }
            if read.id.is_some() || !read.event.is_empty() || !read.data.is_empty() {
                out.push(read);
            }
        }
    }
}

/// The latency of a `delta` event whose fragment carries its stamp, read now.
fn latency(read: &Read) -> Option<Duration> {
    if read.event != "delta" {
        return None;
    }
    let delta: LlmDelta = serde_json::from_str(&read.data).ok()?;
    let at = Duration::from_micros(delta.delta.parse().ok()?);
    Some(epoch().elapsed().saturating_sub(at))
}

/// Whether `read` ends a run's stream.
fn ends(read: &Read) -> bool {
    matches!(read.event.as_str(), "answer" | "failed" | "shutdown")
}

/// One open subscription: the response, being read.
struct Subscriber {
    body: futures::stream::BoxStream<'static, reqwest::Result<axum::body::Bytes>>,
    parser: Parser,
    buffered: Vec<Read>,
}

impl Subscriber {
    async fn open(client: &reqwest::Client, url: &str, last: Option<u64>) -> Option<Self> {
        let mut request = client.get(url);
        if let Some(last) = last {
            request = request.header("last-event-id", last.to_string());
        }
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        Some(Self {
            body: response.bytes_stream().boxed(),
            parser: Parser::default(),
            buffered: Vec::new(),
        })
    }

    /// The next event; `None` when the stream ends.
    async fn next(&mut self) -> Option<Read> {
        loop {
            if !self.buffered.is_empty() {
                return Some(self.buffered.remove(0));
            }
            let bytes = self.body.next().await?.ok()?;
            self.parser.feed(&bytes, &mut self.buffered);
        }
    }
}

/// Reads `subscriber` to its end: the latencies of its deltas; `None` unless it saw the end.
async fn read_to_end(mut subscriber: Subscriber) -> Option<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(DELTAS);
    while let Some(read) = subscriber.next().await {
        latencies.extend(latency(&read));
        if ends(&read) {
            return Some(latencies);
        }
    }
    None
}

/// Heap bytes per subscriber held once `STREAMS` subscribers of `urls` are in, and the open
/// subscribers.
async fn open_all(client: &reqwest::Client, urls: &[String]) -> Option<(f64, Vec<Subscriber>)> {
    let before = live_bytes();
    let opened = futures::future::join_all(
        urls.iter()
            .flat_map(|url| std::iter::repeat_n(url, PER_RUN))
            .map(|url| Subscriber::open(client, url, None)),
    )
    .await;
    let subscribers: Vec<Subscriber> = opened.into_iter().collect::<Option<_>>()?;
    // The server's side of each subscription settles (its task waiting on the log).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = live_bytes() - before;
    Some((held as f64 / subscribers.len() as f64, subscribers))
}

/// A served runtime whose agent's model waits on `gate`: its base URL.
async fn served(gate: watch::Receiver<bool>) -> Option<(Runtime, String)> {
    let runtime = Runtime::builder()
        .llm(Arc::new(Stamping { gate }))
        .build()
        .ok()?;
    let agent = runtime
        .spawn(ReActAgent::new(AGENT, "openai:gpt-5.2"))
        .await
        .ok()?;
    let served = Served::new(runtime.clone(), [agent], Tokens::open());
    let base = super::serve(served.router()).await?;
    Some((runtime, base))
}

/// Starts `RUNS` runs: their event URLs.
async fn start_runs(client: &reqwest::Client, base: &str) -> Option<Vec<String>> {
    let mut urls = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let response = client
            .post(format!("{base}/api/agents/{AGENT}/threads/new/runs"))
            .json(&serde_json::json!({"query": "write"}))
            .send()
            .await
            .ok()?;
        let run: serde_json::Value = response.json().await.ok()?;
        let id = run["id"].as_str()?;
        urls.push(format!("{base}/api/agents/{AGENT}/runs/{id}/events"));
    }
    Some(urls)
}

/// `sse_streams_1000`: bytes per stream and every delivery's latency.
async fn motet_streams(client: &reqwest::Client) -> Option<(f64, Vec<Duration>)> {
    let (open, gate) = watch::channel(false);
    let (runtime, base) = served(gate).await?;
    let urls = start_runs(client, &base).await?;
    let (bytes, subscribers) = open_all(client, &urls).await?;
    open.send_replace(true);
    let read = futures::future::join_all(subscribers.into_iter().map(read_to_end)).await;
    runtime.shutdown().await;
    let latencies: Vec<Vec<Duration>> = read.into_iter().collect::<Option<_>>()?;
    Some((bytes, latencies.concat()))
}

/// The floor's events of one run: what its subscribers are sent, as the native API names them.
#[derive(Clone)]
struct FloorEvent {
    id: u64,
    name: &'static str,
    data: Arc<str>,
}

/// The floor's handler: the run's broadcast, each message an SSE event.
fn floor_router(runs: Arc<Vec<broadcast::Sender<FloorEvent>>>) -> axum::Router {
    axum::Router::new().route(
        "/events/{run}",
        axum::routing::get(
            move |axum::extract::Path(run): axum::extract::Path<usize>| {
                let rx = runs.get(run).map(broadcast::Sender::subscribe);
                async move {
                    let events = futures::stream::unfold(rx, |mut rx| async move {
                        let got = rx.as_mut()?.recv().await.ok()?;
                        let event = Event::default()
                            .id(got.id.to_string())
                            .event(got.name)
                            .data(got.data.as_ref());
                        Some((Ok::<_, std::convert::Infallible>(event), rx))
                    });
                    Sse::new(events)
                }
            },
        ),
    )
}

/// `floor_axum_sse_1000`: bytes per stream and every delivery's latency.
async fn floor_streams(client: &reqwest::Client) -> Option<(f64, Vec<Duration>)> {
    let runs: Vec<broadcast::Sender<FloorEvent>> =
        (0..RUNS).map(|_| broadcast::channel(64).0).collect();
    let runs = Arc::new(runs);
    let base = super::serve(floor_router(Arc::clone(&runs))).await?;
    let urls: Vec<String> = (0..RUNS)
        .map(|run| format!("{base}/events/{run}"))
        .collect();
    let (bytes, subscribers) = open_all(client, &urls).await?;
    let producers = runs.iter().cloned().map(|tx| {
        tokio::spawn(async move {
            for n in 0..DELTAS {
                if n > 0 {
                    tokio::time::sleep(PACE).await;
                }
                let delta = LlmDelta {
                    call_id: CallId::new("call_0355N17i42Rnnuf6IKl7e3"),
                    kind: DeltaKind::Text,
                    delta: stamp(),
                    agent: None,
                };
                let data = serde_json::to_string(&delta).unwrap_or_default();
                let _ = tx.send(FloorEvent {
                    id: n as u64 + 2,
                    name: "delta",
                    data: data.into(),
                });
            }
            let _ = tx.send(FloorEvent {
                id: DELTAS as u64 + 2,
                name: "answer",
                data: r#"{"status":"completed","answer":""}"#.into(),
            });
        })
    });
    let producers: Vec<_> = producers.collect();
    let read = futures::future::join_all(subscribers.into_iter().map(read_to_end)).await;
    for producer in producers {
        let _ = producer.await;
    }
    let latencies: Vec<Vec<Duration>> = read.into_iter().collect::<Option<_>>()?;
    Some((bytes, latencies.concat()))
}

/// One subscriber of the storm: reads `drop_after` events, drops its connection, resumes
/// after the last id it saw and reads to the end. Every id it received, and the run's last.
async fn drop_and_resume(
    client: reqwest::Client,
    mut subscriber: Subscriber,
    url: String,
    drop_after: usize,
) -> Option<(Vec<u64>, u64)> {
    let mut ids = Vec::with_capacity(DELTAS + 8);
    let mut last = 0;
    for _ in 0..drop_after {
        let read = subscriber.next().await?;
        if let Some(id) = read.id {
            ids.push(id);
            last = id;
        }
        if ends(&read) {
            return Some((ids, last));
        }
    }
    drop(subscriber);
    let mut resumed = Subscriber::open(&client, &url, Some(last)).await?;
    while let Some(read) = resumed.next().await {
        if let Some(id) = read.id {
            ids.push(id);
            last = id;
        }
        if ends(&read) {
            return Some((ids, last));
        }
    }
    None
}

/// `reconnect_storm_1000`: (lost, duplicated, took).
async fn storm(client: &reqwest::Client) -> Option<(u64, u64, Duration)> {
    let (open, gate) = watch::channel(false);
    let (runtime, base) = served(gate).await?;
    let urls = start_runs(client, &base).await?;
    let (_, subscribers) = open_all(client, &urls).await?;
    let mut rng = fastrand::Rng::with_seed(40);
    let start = Instant::now();
    open.send_replace(true);
    let clients = subscribers.into_iter().enumerate().map(|(n, subscriber)| {
        let url = urls.get(n / PER_RUN).cloned().unwrap_or_default();
        let drop_after = rng.usize(1..=DELTAS / 2);
        drop_and_resume(client.clone(), subscriber, url, drop_after)
    });
    let received = futures::future::join_all(clients).await;
    let took = start.elapsed();
    runtime.shutdown().await;
    let (mut lost, mut duplicated) = (0, 0);
    for one in received {
        let (ids, last) = one?;
        let distinct: HashSet<u64> = ids.iter().copied().collect();
        duplicated += (ids.len() - distinct.len()) as u64;
        lost += (1..=last).filter(|id| !distinct.contains(id)).count() as u64;
    }
    Some((lost, duplicated, took))
}

/// The stream lines of the `serve` scenario.
pub(super) async fn measure() -> Option<Vec<Report>> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .ok()?;
    epoch();
    counting(true);
    let motet = motet_streams(&client).await;
    let floor = floor_streams(&client).await;
    counting(false);
    let (motet_bytes, mut motet_lat) = motet?;
    let (floor_bytes, mut floor_lat) = floor?;
    let (lost, duplicated, took) = storm(&client).await?;
    let line = |variant: &str, bytes: f64, latencies: &mut Vec<Duration>| {
        let total = latencies.iter().sum();
        Report::new("serve", variant, latencies.len() as u64, total)
            .with("streams", STREAMS as u64)
            .with("bytes_per_stream", round2(bytes))
            .with("p50_us", round2(percentile_us(latencies, 50)))
            .with("p99_us", round2(percentile_us(latencies, 99)))
    };
    let floor_p99 = percentile_us(&mut floor_lat, 99);
    let motet_p99 = percentile_us(&mut motet_lat, 99);
    Some(vec![
        line("sse_streams_1000", motet_bytes, &mut motet_lat)
            .with("over_floor_bytes", round2(motet_bytes - floor_bytes))
            .with("p99_vs_floor", round2(motet_p99 / floor_p99.max(1.0))),
        line("floor_axum_sse_1000", floor_bytes, &mut floor_lat),
        Report::new("serve", "reconnect_storm_1000", STREAMS as u64, took)
            .with("streams", STREAMS as u64)
            .with("lost", lost)
            .with("duplicated", duplicated),
    ])
}
