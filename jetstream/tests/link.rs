//! Node links on a real NATS server (scripts/nats.sh; `skipped:` without one): two links on two
//! connections, as two nodes would have — frames in order, no listener, a broken call, a
//! callee cut off, a long call kept alive, sizes over the server's limit, concurrent calls,
//! tells.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use common::{nats_url, unique};
use motet_jetstream::NatsLink;
use motet_runtime::cluster::link::{Handler, Link, LinkConfig, LinkError, Replier};
use tokio::sync::mpsc;

/// Fast keep-alives and a short silence limit, so a dead callee shows within a second.
fn quick() -> LinkConfig {
    LinkConfig::new()
        .with_keep_alive(Duration::from_millis(100))
        .with_silence(Duration::from_millis(600))
}

/// A caller and a callee on connections of their own, under a prefix no other test uses; or
/// `None` (skipped) without a server.
async fn pair(config: LinkConfig) -> Option<(NatsLink, NatsLink)> {
    let url = nats_url()?;
    let prefix = format!("t.{}", unique("link"));
    let mut links = Vec::new();
    for _ in 0..2 {
        let link = NatsLink::connect(&url, Duration::from_secs(5))
            .await
            .unwrap_or_else(|e| panic!("MOTET_NATS_URL={url} is set but: {e}"));
        links.push(link.with_config(config).with_prefix(prefix.clone()));
    }
    let callee = links.pop()?;
    let caller = links.pop()?;
    Some((caller, callee))
}

/// What the scripted callee does with a request:
/// - `count <n>`: frames `<0>`..`<n-1>`, then finish;
/// - `drop`: one frame, then drops the replier unfinished;
/// - `hold`: one frame, then holds the replier until the test tells it to go on;
/// - `slow <ms>`: a frame, waits `<ms>`, another frame, finish;
/// - `big <bytes>`: tries a frame of that size, reports the result, finishes.
///
/// Tells and `big` results go to the test through `heard`.
struct Script {
    heard: mpsc::UnboundedSender<String>,
    release: tokio::sync::Notify,
}

#[async_trait]
impl Handler for Script {
    async fn call(&self, request: Bytes, mut replier: Replier) {
        let request = String::from_utf8_lossy(&request).into_owned();
        let (verb, arg) = request.split_once(' ').unwrap_or((&request, "0"));
        let arg: usize = arg.parse().unwrap_or(0);
        match verb {
            "count" => {
                for i in 0..arg {
                    replier.send(format!("{i}")).await.unwrap();
                }
                replier.finish().await.unwrap();
            }
            "drop" => {
                replier.send("one").await.unwrap();
            }
            "hold" => {
                replier.send("one").await.unwrap();
                let _ = self.heard.send("holding".into());
                self.release.notified().await;
                let _ = replier.finish().await;
            }
            "slow" => {
                replier.send("before").await.unwrap();
                tokio::time::sleep(Duration::from_millis(arg as u64)).await;
                replier.send("after").await.unwrap();
                replier.finish().await.unwrap();
            }
            "big" => {
                let sent = replier.send(vec![b'x'; arg]).await;
                let _ = self.heard.send(format!("{sent:?}"));
                replier.send("small").await.unwrap();
                replier.finish().await.unwrap();
            }
            other => panic!("unknown request {other}"),
        }
    }

    async fn tell(&self, message: Bytes) {
        let _ = self
            .heard
            .send(format!("told {}", String::from_utf8_lossy(&message)));
    }
}

fn script() -> (Arc<Script>, mpsc::UnboundedReceiver<String>) {
    let (heard, receiver) = mpsc::unbounded_channel();
    let script = Script {
        heard,
        release: tokio::sync::Notify::new(),
    };
    (Arc::new(script), receiver)
}

async fn within<T>(limit: Duration, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("nothing within {limit:?}"))
}

fn texts(frames: Vec<Bytes>) -> Vec<String> {
    frames
        .into_iter()
        .map(|f| String::from_utf8_lossy(&f).into_owned())
        .collect()
}

#[tokio::test]
async fn a_thousand_frames_arrive_in_order_then_the_call_ends() {
    let Some((caller, callee)) = pair(LinkConfig::default()).await else {
        return;
    };
    let (handler, _heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    let frames = caller
        .call("node-b", Bytes::from("count 1000"))
        .await
        .unwrap();
    let frames = within(Duration::from_secs(10), frames.collect())
        .await
        .unwrap();
    let expected: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    assert_eq!(texts(frames), expected);
}

#[tokio::test]
async fn a_call_nobody_listens_for_fails_fast() {
    let Some((caller, callee)) = pair(LinkConfig::default()).await else {
        return;
    };
    let started = Instant::now();
    let err = caller
        .call("node-x", Bytes::from("count 1"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LinkError::NoListener {
            to: "node-x".into()
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // And once the listener is gone again.
    let (handler, _heard) = script();
    let listening = callee.listen("node-b", handler).await.unwrap();
    assert!(caller.call("node-b", Bytes::from("count 1")).await.is_ok());
    drop(listening);
    let started = Instant::now();
    let err = within(Duration::from_secs(5), async {
        // The unsubscription reaches the server shortly after the drop.
        loop {
            match caller.call("node-b", Bytes::from("count 1")).await {
                Err(e) => break e,
                Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    })
    .await;
    assert_eq!(
        err,
        LinkError::NoListener {
            to: "node-b".into()
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_replier_dropped_unfinished_breaks_the_call() {
    let Some((caller, callee)) = pair(quick()).await else {
        return;
    };
    let (handler, _heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    let mut frames = caller.call("node-b", Bytes::from("drop")).await.unwrap();
    let limit = Duration::from_secs(5);
    assert_eq!(
        within(limit, frames.next()).await,
        Some(Ok(Bytes::from("one")))
    );
    assert_eq!(
        within(limit, frames.next()).await,
        Some(Err(LinkError::Broken {
            to: "node-b".into()
        }))
    );
    assert_eq!(frames.next().await, None);
}

#[tokio::test]
async fn a_listening_dropped_mid_call_breaks_the_call() {
    let Some((caller, callee)) = pair(quick()).await else {
        return;
    };
    let (handler, mut heard) = script();
    let listening = callee.listen("node-b", handler).await.unwrap();
    let mut frames = caller.call("node-b", Bytes::from("hold")).await.unwrap();
    let limit = Duration::from_secs(5);
    assert_eq!(
        within(limit, frames.next()).await,
        Some(Ok(Bytes::from("one")))
    );
    assert_eq!(
        within(limit, heard.recv()).await.as_deref(),
        Some("holding")
    );
    drop(listening);
    assert_eq!(
        within(limit, frames.next()).await,
        Some(Err(LinkError::Broken {
            to: "node-b".into()
        }))
    );
}

#[tokio::test]
async fn a_callee_cut_off_mid_call_is_silent_within_the_limit() {
    let config = quick();
    let Some((caller, callee)) = pair(config).await else {
        return;
    };
    let (handler, mut heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    let mut frames = caller.call("node-b", Bytes::from("hold")).await.unwrap();
    let limit = Duration::from_secs(5);
    assert_eq!(
        within(limit, frames.next()).await,
        Some(Ok(Bytes::from("one")))
    );
    assert_eq!(
        within(limit, heard.recv()).await.as_deref(),
        Some("holding")
    );
    // The callee's node loses its connection while its handler still holds the replier: no
    // frame, no keep-alive, no `broken` can leave it any more.
    callee.get_ref().drain().await.unwrap();
    let cut = Instant::now();
    assert_eq!(
        within(limit, frames.next()).await,
        Some(Err(LinkError::Silent {
            to: "node-b".into(),
            after: config.silence,
        }))
    );
    let waited = cut.elapsed();
    assert!(waited >= config.silence / 2, "silent too early: {waited:?}");
    assert!(waited < config.silence * 2, "silent too late: {waited:?}");
}

#[tokio::test]
async fn a_call_longer_than_the_silence_limit_lives_on_keep_alives() {
    let config = quick();
    let Some((caller, callee)) = pair(config).await else {
        return;
    };
    let (handler, _heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    let pause = config.silence * 3;
    let started = Instant::now();
    let frames = caller
        .call("node-b", Bytes::from(format!("slow {}", pause.as_millis())))
        .await
        .unwrap();
    let frames = within(Duration::from_secs(10), frames.collect())
        .await
        .unwrap();
    assert_eq!(texts(frames), ["before", "after"]);
    assert!(started.elapsed() >= pause, "the handler did not wait");
}

#[tokio::test]
async fn sizes_over_the_servers_max_payload_are_too_large_for_their_sender() {
    let Some((caller, callee)) = pair(quick()).await else {
        return;
    };
    let max = caller.get_ref().max_payload();
    assert!(max > 0);
    let err = caller
        .call("node-b", Bytes::from(vec![0u8; max]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LinkError::TooLarge { size, max: m } if size > max && m == max),
        "{err:?}"
    );
    let err = caller
        .tell("node-b", Bytes::from(vec![0u8; max + 1]))
        .await
        .unwrap_err();
    assert!(matches!(err, LinkError::TooLarge { .. }), "{err:?}");

    let (handler, mut heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    let frames = caller
        .call("node-b", Bytes::from(format!("big {max}")))
        .await
        .unwrap();
    let limit = Duration::from_secs(5);
    let sent = within(limit, heard.recv()).await.unwrap();
    assert!(sent.contains("TooLarge"), "the oversized frame was {sent}");
    // The call goes on: the smaller frame after it arrives, numbered without a gap.
    let frames = within(limit, frames.collect()).await.unwrap();
    assert_eq!(texts(frames), ["small"]);
}

#[tokio::test]
async fn two_hundred_concurrent_calls_each_get_their_own_frames() {
    let Some((caller, callee)) = pair(LinkConfig::default()).await else {
        return;
    };
    let (handler, _heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..200usize {
        let caller = caller.clone();
        calls.spawn(async move {
            let frames = caller
                .call("node-b", Bytes::from(format!("count {}", n % 17)))
                .await?;
            Ok::<_, LinkError>((n, frames.collect().await?))
        });
    }
    let mut done = 0;
    while let Some(joined) = within(Duration::from_secs(20), calls.join_next()).await {
        let (n, frames) = joined.unwrap().unwrap();
        let expected: Vec<String> = (0..n % 17).map(|i| i.to_string()).collect();
        assert_eq!(texts(frames), expected, "call {n}");
        done += 1;
    }
    assert_eq!(done, 200);
}

#[tokio::test]
async fn a_tell_reaches_the_handler_and_needs_no_listener() {
    let Some((caller, callee)) = pair(quick()).await else {
        return;
    };
    assert_eq!(caller.tell("node-x", Bytes::from("nobody")).await, Ok(()));
    let (handler, mut heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    caller
        .tell("node-b", Bytes::from("cancel r1"))
        .await
        .unwrap();
    let told = within(Duration::from_secs(5), heard.recv()).await;
    assert_eq!(told.as_deref(), Some("told cancel r1"));
}

#[tokio::test]
async fn links_are_objects_the_runtime_can_share() {
    let Some((caller, callee)) = pair(quick()).await else {
        return;
    };
    let caller: Arc<dyn Link> = Arc::new(caller);
    let callee: Arc<dyn Link> = Arc::new(callee);
    let (handler, _heard) = script();
    let _listening = callee.listen("node-b", handler).await.unwrap();
    let frames = caller.call("node-b", Bytes::from("count 3")).await.unwrap();
    let frames = within(Duration::from_secs(5), frames.collect())
        .await
        .unwrap();
    assert_eq!(texts(frames), ["0", "1", "2"]);
    assert!(matches!(
        caller.call("bad address", Bytes::new()).await,
        Err(LinkError::BadAddress { .. })
    ));
}
