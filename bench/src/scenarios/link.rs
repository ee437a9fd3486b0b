//! `link`: a node link's call beside a bare async-nats request-reply, on the same server.
//!
//! Needs a server: `bash scripts/nats.sh start` prints the URL to put in MOTET_NATS_URL. The
//! caller and the callee each have a connection of their own, as two nodes would.
//!
//! - `nats_request` (the floor): `client.request` with a 32-byte payload to a subscriber that
//!   answers with the same bytes; `nats_request_p50_us` / `nats_request_p99_us`.
//! - `link_call`: `NatsLink::call` with the same payload to a handler that sends it back as one
//!   frame and finishes, read until the call ends (accept, frame and end: three messages back
//!   where the floor has one); `link_call_p50_us` / `link_call_p99_us`, and `link_vs_nats`, the
//!   ratio of the p50s.
//!
//! `ROUND_TRIPS` sequential round trips each, after `WARM_UP` untimed ones.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use motet_jetstream::NatsLink;
use motet_runtime::cluster::link::{Handler, Link, Replier};

use crate::report::{Report, quantile, round2};

const ROUND_TRIPS: usize = 5_000;
const WARM_UP: usize = 500;
const PAYLOAD: &[u8] = b"a request of thirty-two bytes..!";

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| eprintln!("link: cannot start a tokio runtime: {e}"))
        .ok()
}

async fn client(url: &str) -> Result<async_nats::Client, String> {
    async_nats::connect(url)
        .await
        .map_err(|e| format!("connecting to MOTET_NATS_URL: {e}"))
}

/// Sends each request back as its one frame.
struct Echo;

#[async_trait]
impl Handler for Echo {
    async fn call(&self, request: Bytes, mut replier: Replier) {
        if replier.send(request).await.is_ok() {
            let _ = replier.finish().await;
        }
    }
}

/// The round trips' times in µs, sorted, and their total.
struct Samples {
    micros: Vec<f64>,
    total: Duration,
}

impl Samples {
    fn new(mut times: Vec<Duration>) -> Self {
        let total = times.iter().sum();
        times.sort();
        Self {
            micros: times.iter().map(|t| t.as_secs_f64() * 1e6).collect(),
            total,
        }
    }

    fn p(&self, q: f64) -> f64 {
        round2(quantile(&self.micros, q))
    }
}

async fn nats_requests(url: &str, subject: &str) -> Result<Samples, String> {
    let callee = client(url).await?;
    let mut requests = callee
        .subscribe(subject.to_owned())
        .await
        .map_err(|e| e.to_string())?;
    callee.flush().await.map_err(|e| e.to_string())?;
    let answering = callee.clone();
    let responder = tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            if let Some(reply) = request.reply {
                let _ = answering.publish(reply, request.payload).await;
            }
        }
    });
    let caller = client(url).await?;
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..WARM_UP + ROUND_TRIPS {
        let started = Instant::now();
        let answer = caller
            .request(subject.to_owned(), Bytes::from_static(PAYLOAD))
            .await
            .map_err(|e| format!("nats request: {e}"))?;
        let elapsed = started.elapsed();
        if answer.payload.len() != PAYLOAD.len() {
            return Err("nats request: a wrong answer".into());
        }
        if i >= WARM_UP {
            times.push(elapsed);
        }
    }
    responder.abort();
    Ok(Samples::new(times))
}

async fn link_calls(url: &str, address: &str) -> Result<Samples, String> {
    let callee = NatsLink::new(client(url).await?);
    let _listening = callee
        .listen(address, Arc::new(Echo))
        .await
        .map_err(|e| format!("listen: {e}"))?;
    let caller = NatsLink::new(client(url).await?);
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..WARM_UP + ROUND_TRIPS {
        let started = Instant::now();
        let frames = caller
            .call(address, Bytes::from_static(PAYLOAD))
            .await
            .map_err(|e| format!("link call: {e}"))?
            .collect()
            .await
            .map_err(|e| format!("link call: {e}"))?;
        let elapsed = started.elapsed();
        if frames.len() != 1 || frames[0].len() != PAYLOAD.len() {
            return Err("link call: a wrong answer".into());
        }
        if i >= WARM_UP {
            times.push(elapsed);
        }
    }
    Ok(Samples::new(times))
}

async fn all(url: &str, tag: &str) -> Result<Vec<Report>, String> {
    let floor = nats_requests(url, &format!("bench.link.floor.{tag}")).await?;
    let link = link_calls(url, &format!("bench-{tag}")).await?;
    let (floor_p50, link_p50) = (floor.p(0.5), link.p(0.5));
    let ratio = if floor_p50 > 0.0 {
        round2(link_p50 / floor_p50)
    } else {
        0.0
    };
    Ok(vec![
        Report::new("link", "link_call", ROUND_TRIPS as u64, link.total)
            .with("link_call_p50_us", link_p50)
            .with("link_call_p99_us", link.p(0.99))
            .with("nats_request_p50_us", floor_p50)
            .with("nats_request_p99_us", floor.p(0.99))
            .with("link_vs_nats", ratio),
        Report::new("link", "nats_request", ROUND_TRIPS as u64, floor.total)
            .with("nats_request_p50_us", floor_p50)
            .with("nats_request_p99_us", floor.p(0.99)),
    ])
}

/// Both variants; without a server, or on a setup failure, says why and yields no reports.
pub(crate) fn run() -> Vec<Report> {
    let Ok(url) = std::env::var("MOTET_NATS_URL") else {
        eprintln!("link: MOTET_NATS_URL is not set (`bash scripts/nats.sh start` prints it)");
        return Vec::new();
    };
    let Some(rt) = runtime() else {
        return Vec::new();
    };
    let tag = std::process::id().to_string();
    rt.block_on(all(&url, &tag)).unwrap_or_else(|e| {
        eprintln!("link: {e}");
        Vec::new()
    })
}
